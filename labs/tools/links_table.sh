#!/bin/sh
# links_table.sh: chapter 6's table of the real-links measurement, from the
# CSV of links_sweep.sh (make figures-links): for each rate and N, each
# configuration's images/sec (median of the runs, and their range), its step
# (one step of every worker), the busiest link's MB per step and the time
# they take at the rate (where the link saturates: that time reaches the
# step), worker 0's link, and the cost model's step beside the measured one.
# usage: links_table.sh LINKS.csv
set -eu
csv=$1
[ -r "$csv" ] || { echo "links_table: cannot read $csv (make figures-links writes it)" >&2; exit 2; }
awk -F, '
NR == 1 { next }
$1 != rate { rate = $1
    printf "%s%s links: per step, N workers each with 128 images\n", (NR > 2 ? "\n" : ""), rate
    printf "%-8s %2s %16s %8s %18s %10s %9s %11s\n", "", "N", "images/sec", "step ms", "busiest link MB", "its ms", "worker MB",
           "model ms" }
{ busiest = $9 == "" ? "-" : sprintf("%.1f (%s)", $10, $9)
  printf "%-8s %2d %6.0f %9s %8.0f %18s %10.0f %9.1f %5.0f %+4.0f%%\n", $2, $3, $4, sprintf("(%.0f-%.0f)", $5, $6),
         $7 * 1000, busiest, $11 * 1000, $8, $12 * 1000, $14 }' "$csv"
