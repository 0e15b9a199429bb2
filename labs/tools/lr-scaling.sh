#!/bin/sh
# lr-scaling.sh: chapter 2's learning-rate experiment (make figures-lr): the
# same 2 epochs of chapter 1's lab at batch 64, then at batch 512 with the
# same rate, 8x the rate, and 8x the rate with a linear warm-up (Goyal et al.
# 2017). Writes each run's log and a loss table (epochs seen, loss) to OUT.
# usage: lr-scaling.sh LAB OUT
set -eu
lab=$1 out=$2
mkdir -p "$out"
common="--device /cpu:0 --max_examples 8192 --epochs 2 --seed 1"
run() { # name batch log_every flags...
    name=$1 batch=$2 every=$3
    shift 3
    "$lab" $common --batch_size "$batch" --log_every "$every" "$@" >"$out/$name.log"
    awk -v b="$batch" '/^Step /{print $2 * b / 8192, $5}' "$out/$name.log" >"$out/$name.txt"
    printf '%-22s %s\n' "$name" "$(grep 'Test accuracy' "$out/$name.log")"
}
run batch64-lr0.001 64 16 --learning_rate 0.001
run batch512-lr0.001 512 2 --learning_rate 0.001
run batch512-lr0.008 512 2 --learning_rate 0.008
run batch512-lr0.008-warmup 512 2 --learning_rate 0.008 --warmup_steps 8
