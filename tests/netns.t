#!/bin/bash
# netns.t: chapter 3's lab across machines, as far as one machine can show
# it: the ps task and the two workers run in two network namespaces this
# test creates, joined by a veth pair with addresses of a private test
# subnet that only those namespaces hold, so nothing relies on loopback; off
# loopback, the tasks share a secret (a ps without one refuses to start).
# TAP, run by prove; skipped, with the reason, where namespaces cannot be
# made (not root, no iproute2). Everything it starts is killed by process id
# and the namespaces are removed, whatever happens.
set -u
LAB=${BUILD:-build}/labs/03-between-graph/between_graph
DEADLINE=${NETNS_DEADLINE:-240}
ID=$$
PS_NS=flowlab-ps-$ID
WORKER_NS=flowlab-worker-$ID
NET=10.231.$((ID % 200 + 20))
OUT=$(mktemp -d)
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$PS_NS" 2>/dev/null
    ip netns del "$WORKER_NS" 2>/dev/null
    rm -rf "$OUT"
}
trap cleanup EXIT

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

if [ ! -x "$LAB" ]; then
    echo "1..0 # SKIP $LAB is not built (make labs)"
    exit 0
fi
if ! command -v ip >/dev/null 2>&1; then
    echo "1..0 # SKIP no ip command (Debian's iproute2) to make network namespaces"
    exit 0
fi
if ! why=$(ip netns add "$PS_NS" 2>&1); then
    echo "1..0 # SKIP cannot create a network namespace here: $why"
    exit 0
fi
ip netns add "$WORKER_NS"
ip link add "fl-ps-$ID" netns "$PS_NS" type veth peer name "fl-w-$ID" netns "$WORKER_NS"
ip -n "$PS_NS" addr add "$NET.1/24" dev "fl-ps-$ID"
ip -n "$WORKER_NS" addr add "$NET.2/24" dev "fl-w-$ID"
for ns in "$PS_NS" "$WORKER_NS"; do
    ip -n "$ns" link set lo up
done
ip -n "$PS_NS" link set "fl-ps-$ID" up
ip -n "$WORKER_NS" link set "fl-w-$ID" up
echo "1..7"

# Off loopback a task refuses to listen without a secret (or --insecure_listen),
# so the cluster shares one, as a class's would.
CLUSTER="--ps_hosts=$NET.1:2222 --worker_hosts=$NET.2:2223,$NET.2:2224"
FLAGS="--device /cpu:0 --train_steps 30 --batch_size 32 --max_examples 1024 --log_every 10"
export FLOWLAB_BACKEND=host FLOWLAB_TASK_DEADLINE=60
timeout 60 ip netns exec "$PS_NS" "$LAB" $CLUSTER --job_name=ps --task_index=0 >"$OUT/open" 2>&1
status=$?
[ $status = 1 ] && grep -q -- "--cluster_secret_file" "$OUT/open" && grep -q -- "--insecure_listen" "$OUT/open"
ok $? "without a secret the ps refuses to listen on $NET.1, naming --cluster_secret_file and --insecure_listen (status $status)"
[ $status = 1 ] || sed "s|^|# |" "$OUT/open"
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$OUT/secret")
[ "$(stat -c %a "$OUT/secret")" = 600 ]
ok $? "a shared secret for the cluster, mode 600"
CLUSTER="$CLUSTER --cluster_secret_file=$OUT/secret"
timeout "$DEADLINE" ip netns exec "$PS_NS" "$LAB" $CLUSTER --job_name=ps --task_index=0 >"$OUT/ps" 2>&1 &
pids+=($!)
ps_pid=$!
for task in 0 1; do
    timeout "$DEADLINE" ip netns exec "$WORKER_NS" "$LAB" $CLUSTER --job_name=worker --task_index=$task $FLAGS \
        >"$OUT/worker$task" 2>&1 &
    pids+=($!)
    worker_pid[$task]=$!
done

status=0
for task in 0 1; do
    wait "${worker_pid[$task]}" || status=$?
done
ok $status "both workers, in $WORKER_NS, trained against the ps in $PS_NS and exited 0"
grep -q "global step" "$OUT/worker0" && grep -q "global step" "$OUT/worker1"
ok $? "each printed progress with the global step"
grep -q "test accuracy" "$OUT/worker0"
ok $? "worker 0 reported a test accuracy"
for i in $(seq 40); do kill -0 "$ps_pid" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$ps_pid" 2>/dev/null; then
    ok 1 "the ps exited by itself once both workers had finished (still running 20 s later)"
else
    wait "$ps_pid"
    ok $? "the ps exited by itself, with status 0, once both workers had finished"
fi
grep -q "every worker has finished" "$OUT/ps"
ok $? "the ps said why it exited"
if [ $status != 0 ]; then
    for f in "$OUT"/*; do sed "s|^|# $(basename "$f"): |" "$f" | tail -15; done
fi
