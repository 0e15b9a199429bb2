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
# registering, first step), the client's CPU ms and bytes per step, and the
# images/sec of the run.
# usage: ingraph_vs_between.sh BUILD OUT   (STEPS=12 BATCH=16 by default)
set -eu
build=$1 out=$2
steps=${STEPS:-12} batch=${BATCH:-16}
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

# row MODE N LOG WORKER_NODES_KEY: the CSV row of a run from its stats:
# lines. The client's line is worker 0's in between-graph (each worker is
# its own client), else the only one; the images/sec of all lines add up.
row() {
    first=$(grep -m1 '^worker0: stats:' "$3" || grep -m1 'stats:' "$3" || true)
    if [ -z "$first" ]; then
        echo "ingraph_vs_between: $1 with $2 workers printed no stats: line; see $3" >&2
        return 1
    fi
    images=$(grep 'stats:' "$3" | sed 's/.*images_per_sec=//' | awk '{s += $1} END {printf "%.1f", s}')
    echo "$1,$2,$(stat graph_nodes "$first"),$(stat "$4" "$first"),$(stat build_s "$first"),$(stat setup_s "$first"),$(stat cpu_ms_per_step "$first"),$(stat bytes_per_step "$first"),$images" >>"$csv"
    printf '%-22s N=%d  %s\n' "$1" "$2" "$(tail -1 "$csv")"
}

between_graph() { # N: 1 ps + N synchronous workers, each with a batch of $batch
    "$launcher" --ps 1 --workers "$1" --deadline 300 -- "$between" --sync_replicas true \
        --batch_size "$batch" $common >"$out/between-$1.log" 2>&1
    row between-graph "$1" "$out/between-$1.log" graph_nodes
}

one_process() { # N towers on N single-thread PoCL devices, the same global batch
    devices=$(yes pthread | head -n "$1" | tr '\n' ' ')
    POCL_DEVICES="$devices" POCL_MAX_PTHREAD_COUNT=2 "$towers" --num_gpus "$1" --batch_size $(($1 * batch)) \
        $common >"$out/one-process-$1.log" 2>&1
    row in-graph-one-process "$1" "$out/one-process-$1.log" graph_nodes
}

across_tasks() { # N: flowlab_server tasks (1 ps + N workers) on ports from $port, one in_graph_towers client
    port=${BASE_PORT:-23400}
    workers=$(seq $((port + 1)) $((port + $1)) | sed 's/^/127.0.0.1:/' | paste -sd, -)
    # The servers and their client share a secret of this run's (launch_cluster would make one the client lacks).
    secret=$out/cluster_secret
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$secret")
    "$launcher" --ps 1 --workers "$1" --base_port "$port" --deadline 300 --cluster_secret_file "$secret" \
        -- "$server" >"$out/servers-$1.log" 2>&1 &
    servers=$!
    "$towers" --ps_hosts "127.0.0.1:$port" --worker_hosts "$workers" --batch_size $(($1 * batch)) $common \
        --cluster_secret_file "$secret" >"$out/across-$1.log" 2>&1 || true
    wait "$servers" || true
    row in-graph-across-tasks "$1" "$out/across-$1.log" worker0_nodes
}

echo "mode,workers,client_graph_nodes,worker_graph_nodes,build_s,setup_s,client_cpu_ms_per_step,client_bytes_per_step,images_per_sec" >"$csv"
for n in 1 2 4 8; do
    echo "ingraph_vs_between: N = $n worker tasks ($steps steps of $batch images per worker)"
    between_graph "$n"
    one_process "$n"
    if [ -x "$server" ]; then
        across_tasks "$n" || echo "ingraph_vs_between: in-graph across tasks failed at N = $n; see $out" >&2
    fi
done
echo "ingraph_vs_between: wrote $csv"
