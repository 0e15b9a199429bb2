#!/bin/sh
# ingraph_vs_between.sh: chapter 3's measurement (make figures-replication).
# For N = 1, 2, 4, 8 worker tasks on this machine it trains the labs' CNN,
# every worker computing on one single-thread PoCL device of the CPU:
#   - between-graph: 1 ps + N synchronous workers (between_graph), each its
#     own client with its own whole graph;
#   - in-graph across tasks: one client (in_graph_towers --ps_hosts
#     --worker_hosts) driving flowlab_server tasks (1 ps + N workers);
#   - in-graph in one process: N towers on N PoCL devices, the reference;
# each with --print_stats, and writes one CSV row per mode and N: the
# client's graph nodes and a worker's (between-graph: its own whole graph;
# across tasks: the nodes placed on worker 0), the seconds to build the
# graph and from then to the second step (session, initialization,
# partitioning and registering, first step), the client's CPU ms and bytes
# per step (from the first round), the lowest and highest images/sec of
# ROUNDS rounds of STEPS steps each (the first step, the warm-up, not
# counted), and the lowest and highest of the per-round ratios to
# between-graph. Each round runs the three modes back to back, so a ratio
# compares runs that shared the machine's load (a shared machine's
# throughput moves from run to run: the book gives ranges).
# The same cores for every mode: every process runs on CPUs CORES (0,1 by
# default; taskset -c), with one OpenBLAS and OpenMP thread; a cluster's
# task and the across-tasks client get a PoCL pool of 1 thread
# (launch_cluster's POCL_MAX_PTHREAD_COUNT=1), the one-process towers one
# pool of 2 threads for their N devices.
# usage: ingraph_vs_between.sh BUILD OUT
#   (STEPS=40 BATCH=16 ROUNDS=3 WORKERS="1 2 4 8" CORES=0,1 by default;
#   REPEATS is the old name of ROUNDS)
set -eu
build=$1 out=$2
steps=${STEPS:-40} batch=${BATCH:-16} rounds=${ROUNDS:-${REPEATS:-3}} workers_list=${WORKERS:-1 2 4 8}
cores=${CORES:-0,1}
launcher=$build/labs/tools/launch_cluster
between=$build/labs/03-between-graph/between_graph
towers=$build/labs/02-in-graph-towers/in_graph_towers
server=$build/labs/tools/flowlab_server
common="--train_steps $((steps + 1)) --log_every 1000 --max_examples 1024 --seed 1 --print_stats"
csv=$out/replication.csv
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 # 8 tasks on 2 cores: no task spawns more threads
pin=""
if command -v taskset >/dev/null 2>&1 && taskset -c "$cores" true 2>/dev/null; then
    pin="taskset -c $cores"
else
    echo "ingraph_vs_between: cannot pin to CPUs $cores (taskset missing or CPUs absent): runs are unpinned" >&2
fi

# stat KEY LINE: the value of KEY=... in a stats: line
stat() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# images LOG: the images/sec of a run, its stats: lines' added up.
images() { grep 'stats:' "$1" | sed 's/.*images_per_sec=//' | awk '{s += $1} END {printf "%.1f", s}'; }

# rates LOG: the images/sec of each round, one a line, LOG.1 .. LOG.ROUNDS.
rates() { for r in $(seq "$rounds"); do images "$1.$r"; echo; done; }

# lowest_highest: "lo,hi" of the numbers on stdin, one a line.
lowest_highest() {
    awk 'NF { if (n == 0 || $1 < lo) lo = $1; if (n == 0 || $1 > hi) hi = $1; n++ } END {printf "%.2f,%.2f", lo, hi}'
}

# row MODE N LOG WORKER_NODES_KEY: the CSV row of ROUNDS rounds, LOG.1 ..
# LOG.ROUNDS. The client's line is worker 0's in between-graph (each worker
# is its own client), else the only one; the images/sec of all lines add up.
# The ratio columns divide each round's images/sec by that round's
# between-graph run (empty for between-graph itself).
row() {
    first=$(grep -m1 '^worker0: stats:' "$3.1" || grep -m1 'stats:' "$3.1" || true)
    if [ -z "$first" ]; then
        echo "ingraph_vs_between: $1 with $2 workers printed no stats: line; see $3.1" >&2
        return 1
    fi
    range=$(rates "$3" | lowest_highest | awk -F, '{printf "%.1f,%.1f", $1, $2}')
    ratios=","
    if [ "$1" != between-graph ]; then
        ratios=$(rates "$3" | paste -d' ' - "$out/between-rates-$2" | awk '$2 > 0 {print $1 / $2}' | lowest_highest)
    fi
    echo "$1,$2,$(stat graph_nodes "$first"),$(stat "$4" "$first"),$(stat build_s "$first"),$(stat setup_s "$first"),$(stat cpu_ms_per_step "$first"),$(stat bytes_per_step "$first"),$range,$ratios" >>"$csv"
    printf '%-22s N=%d  %s\n' "$1" "$2" "$(tail -1 "$csv")"
}

between_graph() { # N R: 1 ps + N synchronous workers, each with a batch of $batch
    $pin "$launcher" --ps 1 --workers "$1" --deadline 300 -- "$between" --sync_replicas true \
        --batch_size "$batch" $common >"$out/between-$1.log.$2" 2>&1
}

one_process() { # N R: N towers on N PoCL devices sharing a pool of 2 threads, the same global batch
    devices=$(yes pthread | head -n "$1" | tr '\n' ' ')
    POCL_DEVICES="$devices" POCL_MAX_PTHREAD_COUNT=2 $pin "$towers" --num_gpus "$1" --batch_size $(($1 * batch)) \
        $common >"$out/one-process-$1.log.$2" 2>&1
}

across_tasks() { # N R: flowlab_server tasks (1 ps + N workers) on ports from $port, one in_graph_towers client
    port=${BASE_PORT:-23400}
    workers=$(seq $((port + 1)) $((port + $1)) | sed 's/^/127.0.0.1:/' | paste -sd, -)
    # The servers and their client share a secret of this run's (launch_cluster would make one the client lacks).
    secret=$out/cluster_secret
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$secret")
    $pin "$launcher" --ps 1 --workers "$1" --base_port "$port" --deadline 300 --cluster_secret_file "$secret" \
        -- "$server" >"$out/servers-$1.log" 2>&1 &
    servers=$!
    POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 $pin "$towers" --ps_hosts "127.0.0.1:$port" \
        --worker_hosts "$workers" --batch_size $(($1 * batch)) $common \
        --cluster_secret_file "$secret" >"$out/across-$1.log.$2" 2>&1 || true
    wait "$servers" || true
}

# round N R: the three modes back to back (across tasks only where the server is built).
round() {
    between_graph "$1" "$2"
    one_process "$1" "$2"
    if [ -x "$server" ]; then across_tasks "$1" "$2"; fi
}

echo "mode,workers,client_graph_nodes,worker_graph_nodes,build_s,setup_s,client_cpu_ms_per_step,client_bytes_per_step,images_per_sec_lowest,images_per_sec_highest,ratio_to_between_lowest,ratio_to_between_highest" >"$csv"
for n in $workers_list; do
    echo "ingraph_vs_between: N = $n worker tasks ($rounds rounds of $steps steps of $batch images per worker, the modes back to back, CPUs $cores)"
    for r in $(seq "$rounds"); do round "$n" "$r"; done
    rates "$out/between-$n.log" >"$out/between-rates-$n"
    row between-graph "$n" "$out/between-$n.log" graph_nodes
    row in-graph-one-process "$n" "$out/one-process-$n.log" graph_nodes
    if [ -x "$server" ]; then
        row in-graph-across-tasks "$n" "$out/across-$n.log" worker0_nodes ||
            echo "ingraph_vs_between: in-graph across tasks failed at N = $n; see $out" >&2
    fi
done
echo "ingraph_vs_between: wrote $csv"
