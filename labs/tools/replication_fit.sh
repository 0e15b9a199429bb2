#!/bin/sh
# replication_fit.sh: chapter 3's extrapolation. From the CSV of
# ingraph_vs_between.sh it fits each cost of the in-graph client across
# tasks to a line in N, the number of worker tasks (least squares over the
# measured N), and prints the cost per added worker and the fitted cost at
# 100 and 1,000 workers, beside a between-graph worker's, which does not
# grow with N. With a second argument it also writes the fitted lines as a
# CSV (N, then the four costs) for labs/tools/replication_fit.gp to draw.
# usage: replication_fit.sh REPLICATION.csv [FITTED.csv]
set -eu
csv=$1 fitted=${2:-}
[ -r "$csv" ] || { echo "replication_fit: cannot read $csv (make figures-replication writes it)" >&2; exit 2; }

awk -F, -v fitted="$fitted" '
# Columns of ingraph_vs_between.sh: 2 workers, 3 client graph nodes, 5+6
# build and setup seconds, 7 client CPU ms per step, 8 client bytes per step.
function value(k) { return k == 1 ? $3 : k == 2 ? $5 + $6 : k == 3 ? $7 : $8 / 1e6 }
NR > 1 && $1 == "in-graph-across-tasks" {
    n++; x = $2; sx += x; sxx += x * x
    for (k = 1; k <= 4; k++) { y = value(k); sy[k] += y; sxy[k] += x * y }
}
NR > 1 && $1 == "between-graph" && !($2 in seen) { seen[$2] = 1; m++; for (k = 1; k <= 4; k++) between[k] += value(k) }
END {
    if (n < 2) { print "replication_fit: fewer than two in-graph-across-tasks rows in " FILENAME > "/dev/stderr"; exit 2 }
    name[1] = "client graph (nodes)"; name[2] = "build + setup (s)"
    name[3] = "client CPU per step (ms)"; name[4] = "through the client per step (MB)"
    printf "in-graph across tasks, fitted to a + b*N over %d measured N; a between-graph worker for comparison\n", n
    printf "%-34s %12s %12s %12s %18s\n", "cost of the client", "per worker", "N = 100", "N = 1000", "between-graph"
    for (k = 1; k <= 4; k++) {
        b[k] = (n * sxy[k] - sx * sy[k]) / (n * sxx - sx * sx)
        a[k] = (sy[k] - b[k] * sx) / n
        printf "%-34s %12s %12s %12s %18s\n", name[k], shown(b[k]), shown(a[k] + 100 * b[k]), shown(a[k] + 1000 * b[k]), shown(m ? between[k] / m : 0)
    }
    if (fitted == "") exit 0
    print "workers,client_graph_nodes,setup_s,client_cpu_ms_per_step,client_mb_per_step" > fitted
    for (N = 1; N < 1000; N = (N < 10 ? N + 1 : int(N * 1.25)))
        line(N)
    line(1000)
}
# shown(x): three significant digits, whole numbers from 100 up.
function shown(x) { return x >= 100 ? sprintf("%.0f", x) : sprintf("%.3g", x) }
function line(N) { printf "%d,%.1f,%.3f,%.3f,%.4f\n", N, a[1] + b[1] * N, a[2] + b[2] * N, a[3] + b[3] * N, a[4] + b[4] * N > fitted }' "$csv"
