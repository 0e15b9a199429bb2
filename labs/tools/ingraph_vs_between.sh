#!/bin/sh
# ingraph_vs_between.sh: chapter 3's measurement (make figures-replication).
# For N = 1, 2, 4, 8 worker tasks on this machine it trains the labs' CNN,
# every worker computing on one single-thread PoCL device of the CPU:
#   - between-graph: 1 ps + N synchronous workers (between_graph), each its
#     own client with its own whole graph;
#   - in-graph across tasks: one client (in_graph_towers --ps_hosts
#     --worker_hosts) driving flowlab_server tasks (1 ps + N workers);
#   - in-graph in one process: N towers on N PoCL devices, the reference;
# each with --print_stats, and writes one CSV row per run: the client's graph
# nodes and a worker's (between-graph: its own whole graph; across tasks:
# the nodes placed on worker 0), the seconds to build the graph and from
# then to the second step (session, initialization, partitioning and
# registering, first step), the client's CPU ms and bytes per step (from the
# first run), and the lowest and highest images/sec of REPEATS runs (a
# shared machine's throughput moves from run to run: the book gives ranges).
# usage: ingraph_vs_between.sh BUILD OUT   (STEPS=12 BATCH=16 REPEATS=3 by default)
set -eu
build=$1 out=$2
steps=${STEPS:-12} batch=${BATCH:-16} repeats=${REPEATS:-3}
launcher=$build/labs/tools/launch_cluster
between=$build/labs/03-between-graph/between_graph
towers=$build/labs/02-in-graph-towers/in_graph_towers
server=$build/labs/tools/flowlab_server
common="--train_steps $steps --log_every 1000 --max_examples 1024 --seed 1 --print_stats"
csv=$out/replication.csv
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 # 8 tasks on 2 cores: no task spawns more threads

# stat KEY LINE: the value of KEY=... in a stats: line
stat() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# images LOG: the images/sec of a run, its stats: lines' added up.
images() { grep 'stats:' "$1" | sed 's/.*images_per_sec=//' | awk '{s += $1} END {printf "%.1f", s}'; }

# row MODE N LOG WORKER_NODES_KEY: the CSV row of REPEATS runs, LOG.1 ..
# LOG.REPEATS. The client's line is worker 0's in between-graph (each worker
# is its own client), else the only one; the images/sec of all lines add up.
row() {
    first=$(grep -m1 '^worker0: stats:' "$3.1" || grep -m1 'stats:' "$3.1" || true)
    if [ -z "$first" ]; then
        echo "ingraph_vs_between: $1 with $2 workers printed no stats: line; see $3.1" >&2
        return 1
    fi
    range=$(for r in $(seq "$repeats"); do images "$3.$r"; echo; done |
        awk 'NF { if (n == 0 || $1 < lo) lo = $1; if (n == 0 || $1 > hi) hi = $1; n++ } END {printf "%.1f,%.1f", lo, hi}')
    echo "$1,$2,$(stat graph_nodes "$first"),$(stat "$4" "$first"),$(stat build_s "$first"),$(stat setup_s "$first"),$(stat cpu_ms_per_step "$first"),$(stat bytes_per_step "$first"),$range" >>"$csv"
    printf '%-22s N=%d  %s\n' "$1" "$2" "$(tail -1 "$csv")"
}

# repeated FUNCTION N: FUNCTION's run REPEATS times, the r-th writing its log's .r file.
repeated() {
    for r in $(seq "$repeats"); do "$1" "$2" "$r"; done
}

between_graph() { # N R: 1 ps + N synchronous workers, each with a batch of $batch
    "$launcher" --ps 1 --workers "$1" --deadline 300 -- "$between" --sync_replicas true \
        --batch_size "$batch" $common >"$out/between-$1.log.$2" 2>&1
}

one_process() { # N R: N towers on N single-thread PoCL devices, the same global batch
    devices=$(yes pthread | head -n "$1" | tr '\n' ' ')
    POCL_DEVICES="$devices" POCL_MAX_PTHREAD_COUNT=2 "$towers" --num_gpus "$1" --batch_size $(($1 * batch)) \
        $common >"$out/one-process-$1.log.$2" 2>&1
}

across_tasks() { # N R: flowlab_server tasks (1 ps + N workers) on ports from $port, one in_graph_towers client
    port=${BASE_PORT:-23400}
    workers=$(seq $((port + 1)) $((port + $1)) | sed 's/^/127.0.0.1:/' | paste -sd, -)
    # The servers and their client share a secret of this run's (launch_cluster would make one the client lacks).
    secret=$out/cluster_secret
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$secret")
    "$launcher" --ps 1 --workers "$1" --base_port "$port" --deadline 300 --cluster_secret_file "$secret" \
        -- "$server" >"$out/servers-$1.log" 2>&1 &
    servers=$!
    "$towers" --ps_hosts "127.0.0.1:$port" --worker_hosts "$workers" --batch_size $(($1 * batch)) $common \
        --cluster_secret_file "$secret" >"$out/across-$1.log.$2" 2>&1 || true
    wait "$servers" || true
}

echo "mode,workers,client_graph_nodes,worker_graph_nodes,build_s,setup_s,client_cpu_ms_per_step,client_bytes_per_step,images_per_sec_lowest,images_per_sec_highest" >"$csv"
for n in 1 2 4 8; do
    echo "ingraph_vs_between: N = $n worker tasks ($steps steps of $batch images per worker, $repeats runs each)"
    repeated between_graph "$n"
    row between-graph "$n" "$out/between-$n.log" graph_nodes
    repeated one_process "$n"
    row in-graph-one-process "$n" "$out/one-process-$n.log" graph_nodes
    if [ -x "$server" ]; then
        repeated across_tasks "$n"
        row in-graph-across-tasks "$n" "$out/across-$n.log" worker0_nodes ||
            echo "ingraph_vs_between: in-graph across tasks failed at N = $n; see $out" >&2
    fi
done
echo "ingraph_vs_between: wrote $csv"
