#!/bin/sh
# stage_bubble.sh: GPipe's bubble where each stage has a task of its own:
# the MLP (--model mlp) cut into S even stages, one flowlab_server task each
# (a single-core PoCL device), at M = 1, 2, 4, 8 micro-batches of a batch
# of 512; each run's trace of steps 2 to 4 gives every stage's idle
# fraction, printed beside (S-1)/(M+S-1).
# Usage: sh labs/07-model-parallel/stage_bubble.sh [S ...]  (default: 2 4; after make labs)
set -eu
LAB=build/labs/07-model-parallel/model_parallel
REPORT=build/labs/07-model-parallel/trace_report
LAUNCH=build/labs/tools/launch_cluster
SERVER=build/labs/tools/flowlab_server
for program in "$LAB" "$REPORT" "$LAUNCH" "$SERVER"; do
    if [ ! -x "$program" ]; then
        echo "stage_bubble.sh: no $program; run make labs first" >&2
        exit 2
    fi
done
export POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 FLOWLAB_BACKEND=opencl
SCRATCH=$(mktemp -d /tmp/stage_bubble.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

# run S M: one traced run on S tasks; prints "S M formula mean idle0 idle1 ...".
run() {
    # a port below the ephemeral range, different for each run; the launcher
    # checks that its S ports are free
    port=$(( 20000 + ($$ * 7 + $1 * 131 + $2 * 17) % 10000 ))
    hosts=$(awk -v p="$port" -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s127.0.0.1:%d", i ? "," : "", p + i }')
    "$LAUNCH" --ps 0 --workers "$1" --base_port "$port" --no_secret --deadline 300 -- "$SERVER" \
        > "$SCRATCH/tasks.log" 2>&1 &
    tasks=$!
    if ! "$LAB" --model mlp --stages "$1" --micro_batches "$2" --batch_size 512 --max_examples 4096 \
        --train_steps 5 --log_every 1 --seed 1 --stage_hosts "$hosts" --trace "$SCRATCH/trace.json" \
        > "$SCRATCH/lab.log" 2>&1; then
        kill "$tasks" 2> /dev/null || true
        wait "$tasks" 2> /dev/null || true
        echo "stage_bubble.sh: S = $1, M = $2 failed:" >&2
        cat "$SCRATCH/lab.log" "$SCRATCH/tasks.log" >&2
        exit 1
    fi
    wait "$tasks"
    "$REPORT" "$SCRATCH/trace.json" --micro_batches "$2" --stages "$1" --csv |
        awk -F, -v s="$1" '{ printf "%d %d %.1f%% %.1f%%", s, $1, 100 * $2, 100 * $NF
                             for (k = 3; k < NF; k++) printf " %.1f%%", 100 * $k
                             printf "\n" }'
}

echo "S M (S-1)/(M+S-1) mean-idle idle-of-each-stage..."
for stages in ${*:-2 4}; do
    for micro_batches in 1 2 4 8; do
        run "$stages" "$micro_batches"
    done
done
