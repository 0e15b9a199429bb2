#!/bin/sh
# pipeline_speed.sh: chapter 7's speeds, side by side: the whole model on one
# device, the split by layers, and its pipeline of 4 micro-batches, in turn,
# ROUNDS times (default 3), so that a loaded machine slows all three alike.
# Usage: sh labs/07-model-parallel/pipeline_speed.sh [ROUNDS]  (after make labs)
# Each run trains 12 steps of a batch of 128 on two PoCL devices sharing two
# workers; its speed is the median images/sec of steps 2 to 11 (0 and 1 warm
# up). The last lines give each one's range and the pipeline's over the split.
set -eu
ROUNDS=${1:-3}
LAB=build/labs/07-model-parallel/model_parallel
if [ ! -x "$LAB" ]; then
    echo "pipeline_speed.sh: no $LAB; run make labs first" >&2
    exit 2
fi
export POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2 FLOWLAB_BACKEND=opencl
RUN="$LAB --train_steps 12 --log_every 1 --batch_size 128 --max_examples 2048 --seed 1"
RESULTS=$(mktemp /tmp/pipeline_speed.XXXXXX)
trap 'rm -f "$RESULTS"' EXIT

# speed ARGS: the median images/sec of steps 2 to 11 of one run.
speed() {
    $RUN "$@" | sed -n 's/^Step \([0-9]*\) with loss .* (\([0-9.]*\) images\/sec)$/\1 \2/p' |
        awk '$1 >= 2 { print $2 }' | sort -n | awk '{ v[NR] = $1 } END {
            if (NR == 0) { print "nan"; exit }
            printf "%.1f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

round=1
while [ "$round" -le "$ROUNDS" ]; do
    none=$(speed --split none)
    split=$(speed --split layers --micro_batches 1)
    piped=$(speed --split layers --micro_batches 4)
    echo "$round $none $split $piped" >> "$RESULTS"
    printf 'round %d: one device %s, split M=1 %s, pipeline M=4 %s img/s: M=4/M=1 %.2fx\n' \
        "$round" "$none" "$split" "$piped" "$(echo "$piped $split" | awk '{ print $1 / $2 }')"
    round=$((round + 1))
done
awk '{ for (k = 2; k <= 4; k++) { if (NR == 1 || $k < lo[k]) lo[k] = $k; if (NR == 1 || $k > hi[k]) hi[k] = $k }
       r = $4 / $3; if (NR == 1 || r < rlo) rlo = r; if (NR == 1 || r > rhi) rhi = r
       s = $3 / $2; if (NR == 1 || s < slo) slo = s; if (NR == 1 || s > shi) shi = s }
     END { printf "over %d rounds: one device %.0f-%.0f, split M=1 %.0f-%.0f, pipeline M=4 %.0f-%.0f img/s\n",
                  NR, lo[2], hi[2], lo[3], hi[3], lo[4], hi[4]
           printf "pipeline M=4 over the split M=1: %.2f-%.2fx; split M=1 over one device: %.2f-%.2fx\n",
                  rlo, rhi, slo, shi }' "$RESULTS"
