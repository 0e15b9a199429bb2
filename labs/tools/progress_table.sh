#!/bin/sh
# progress_table.sh: turns the output of a chapter 3/4 cluster run (every
# worker's progress lines, as launch_cluster prefixes them) into a table for
# gnuplot, one row per progress line: worker, seconds, global step, loss,
# each worker's rows in a block of their own (gnuplot's `index N`: worker N).
# The lab prints no clock, so a worker's seconds are added up from its own
# lines: each covers its images at its images/sec, so it took images / speed.
#   sh labs/tools/progress_table.sh BATCH < run.log > table.txt
# BATCH is the images a worker trains on per step (--batch_size); run the
# lab with --log_every 1, so that every line covers exactly one step.
set -eu
BATCH=${1:?usage: progress_table.sh BATCH < run.log}
awk -v batch="$BATCH" '
/: step [0-9]+, global step [0-9]+, loss / {
    w = $0; sub(/^worker/, "", w); sub(/:.*/, "", w)
    g = $0; sub(/.*, global step /, "", g); sub(/,.*/, "", g)
    l = $0; sub(/.*, loss /, "", l); sub(/ .*/, "", l)
    s = $0; sub(/.*\(/, "", s); sub(/ images\/sec.*/, "", s)
    if (s + 0 > 0)
        t[w] += batch / s
    printf "%s %.4f %d %s\n", w, t[w], g, l
}' | sort -s -n -k1,1 | awk 'NR > 1 && $1 != last { printf "\n\n" } { print; last = $1 }'
