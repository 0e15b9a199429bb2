#!/bin/sh
# schedule_memory.sh: what GPipe, 1F1B and recomputation hold and cost. The
# CNN split by layers on two PoCL devices, M = 8 micro-batches of 64, in
# rounds of the four ways in turn (so whatever else the machine runs slows
# them alike); each run's memory line (the session pool's peak per device)
# and its median images/sec over steps 2 to 7; then each way's ranges.
# Usage: sh labs/07-model-parallel/schedule_memory.sh [ROUNDS]  (default 3; after make labs)
set -eu
LAB=build/labs/07-model-parallel/model_parallel
if [ ! -x "$LAB" ]; then
    echo "schedule_memory.sh: no $LAB; run make labs first" >&2
    exit 2
fi
ROUNDS=${1:-3}
export POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2
OUT=$(mktemp /tmp/schedule_memory.XXXXXX)
trap 'rm -f "$OUT"' EXIT

# run NAME FLAGS...: one run; appends "NAME gpu0_MB gpu1_MB images/sec" to $OUT.
run() {
    name=$1
    shift
    "$LAB" --split layers --micro_batches 8 --batch_size 512 --max_examples 4096 --train_steps 8 --log_every 1 \
        --seed 1 "$@" | awk -v name="$name" '
        /^Step [0-9]+ with loss/ { n++; if (n > 2) { gsub(/\(/, "", $6); speed[++k] = $6 } }
        /^memory held at once/ { for (i = 1; i <= NF; i++) { if ($i == "/gpu:0") g0 = $(i + 1); if ($i == "/gpu:1") g1 = $(i + 1) } }
        END {
            for (i = 2; i <= k; i++) for (j = i; j > 1 && speed[j - 1] + 0 > speed[j] + 0; j--) {
                t = speed[j]; speed[j] = speed[j - 1]; speed[j - 1] = t }
            printf "%s %s %s %.1f\n", name, g0, g1, k ? speed[int((k + 1) / 2)] : 0 }' >> "$OUT"
}

for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    run gpipe
    run 1f1b --schedule 1f1b
    run recompute --recompute
    run 1f1b+recompute --schedule 1f1b --recompute
done
echo "way               stage 0 (/gpu:0) MB   stage 1 (/gpu:1) MB   images/sec ($ROUNDS rounds)"
for way in gpipe 1f1b recompute 1f1b+recompute; do
    awk -v way="$way" '$1 == way {
        if (!n || $2 < a0) a0 = $2; if (!n || $2 > b0) b0 = $2
        if (!n || $3 < a1) a1 = $3; if (!n || $3 > b1) b1 = $3
        if (!n || $4 < s0) s0 = $4; if (!n || $4 > s1) s1 = $4; n++ }
        END { printf "%-17s %-21s %-21s %s\n", way, a0 == b0 ? a0 : a0 "-" b0, a1 == b1 ? a1 : a1 "-" b1, s0 "-" s1 }' "$OUT"
done
