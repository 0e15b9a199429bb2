#!/bin/sh
# in_graph_trace.sh: chapter 3's trace of an in-graph step across tasks (make
# figures-03): flowlab_server tasks (1 ps + 2 workers, through launch_cluster,
# with a secret of this run's) and one in_graph_towers client that trains
# --train_steps 2 with --trace, so the trace holds its second step only.
# usage: in_graph_trace.sh BUILD TRACE.json   (BASE_PORT=23600 by default)
set -eu
build=$1 trace=$2
port=${BASE_PORT:-23600}
dir=$(mktemp -d /tmp/in_graph_trace.XXXXXX)
trap 'rm -rf "$dir"' EXIT
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$dir/secret")
"$build/labs/tools/launch_cluster" --ps 1 --workers 2 --base_port "$port" --deadline 120 \
    --cluster_secret_file "$dir/secret" -- "$build/labs/tools/flowlab_server" >"$dir/servers.log" 2>&1 &
servers=$!
status=0
"$build/labs/02-in-graph-towers/in_graph_towers" --ps_hosts "127.0.0.1:$port" \
    --worker_hosts "127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))" --cluster_secret_file "$dir/secret" \
    --train_steps 2 --batch_size 128 --max_examples 1024 --trace "$trace" || status=$?
wait "$servers" || status=$?
[ "$status" = 0 ] || { echo "in_graph_trace: the run failed (status $status); the servers said:" >&2; cat "$dir/servers.log" >&2; }
exit "$status"
