#!/bin/sh
# gpu_checks.sh: every GPU claim of the book and the README checked in one go,
# on a machine with an NVIDIA GPU, after `make all tests`: the CUDA tests, the
# cuDNN plans each convolution kept, a traced step, alternated rounds of
# chapter 1's lab against PyTorch's whole step as one CUDA graph, and `make
# bench`'s chapter 1 table (every PyTorch mode, each run anew in each of
# three rounds: over 5 minutes on an H200, where its rounds took 110 s each).
# usage: sh labs/tools/gpu_checks.sh [OUT]   (run from the repository root)
set -u
out=${1:-build/gpu_checks}
lab=build/labs/01-single-device/single_device
mkdir -p "$out"
[ -x "$lab" ] || { echo "gpu_checks.sh: $lab is missing: run make all tests first" >&2; exit 2; }

echo "== the CUDA tests (TF32 off, as make test runs them; two turn it on themselves)"
failed=0
for t in cuda_convolutions multi_adam tf32 cuda fusion device_fetch deterministic conformance; do
    FLOWLAB_ALLOW_TF32=0 timeout 300 "build/tests/test_$t" > "$out/test_$t.log" 2>&1
    rc=$?
    echo "test_$t: exit $rc, $(grep -c '^ok' "$out/test_$t.log") ok, $(grep -c '^not ok' "$out/test_$t.log") not ok" \
         "$(grep -m1 'SKIP' "$out/test_$t.log")"
    [ $rc = 0 ] || failed=1
done

if ! build/labs/tools/flowlab-devices 2>/dev/null | grep -q '^/gpu:0 *cuda'; then
    echo "gpu_checks.sh: /gpu:0 is not a CUDA device here (build/labs/tools/flowlab-devices says why);" \
         "the tests above skipped with their reasons, and the rest needs a GPU" >&2
    exit 2
fi

echo "== the plan each convolution kept (FLOWLAB_CUDNN_ENGINES=verbose)"
FLOWLAB_CUDNN_ENGINES=verbose timeout 120 $lab --train_steps 3 --log_every 1 2>&1 | grep kept

echo "== a traced step: $out/trace.json (steps 2 to 4)"
timeout 120 $lab --train_steps 6 --log_every 1 --trace "$out/trace.json" | tail -1

# The median step's images/sec of a run that prints one per step.
median() { grep -o '([0-9.]* images/sec' | tr -d '(' | awk '{print $1}' | sort -n |
           awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "none"}'; }
echo "== chapter 1's step against PyTorch's whole step as one CUDA graph, 5 alternated rounds of 502 steps"
echo "   (the lab's step graph as one chain in issue order, FLOWLAB_CUDA_GRAPH=serial, and with the step's dependencies as its edges)"
for r in 1 2 3 4 5; do
    chain=$(FLOWLAB_CUDA_GRAPH=serial timeout 300 $lab --train_steps 502 --log_every 1 --batch_size 128 --seed 1 2>&1 | median)
    ours=$(timeout 300 $lab --train_steps 502 --log_every 1 --batch_size 128 --seed 1 2>&1 | median)
    theirs=$(timeout 300 python3 tests/bench/pytorch_cnn.py --steps 502 --device cuda --mode cuda-graph 2>&1 |
             awk '/images_per_second/ {print $2}')
    echo "round $r: flowlab ${ours:-failed} images/sec (one chain ${chain:-failed}), PyTorch cuda-graph ${theirs:-failed}"
done

echo "== make bench's chapter 1 table (bench --training: every PyTorch mode; over 5 minutes)"
build/bench/bench --training
exit $failed
