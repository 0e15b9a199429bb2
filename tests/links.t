#!/bin/bash
# links.t: launch_cluster --links: chapter 3's tasks each in a network
# namespace of its own, on links shaped by tc, so that a step really waits
# for the bytes the ps's link carries; then every namespace and the bridge
# are gone. Also its refusals (no root, a bad rate), the cleanup of what a
# killed launcher left, and --mpi_ranks (chapter 6's allreduce over the same
# links). TAP, run by prove; skipped, with the reason, without root or
# iproute2. Every process it starts is killed by process id.
set -u
BUILD=${BUILD:-build}
LAUNCHER=$BUILD/labs/tools/launch_cluster
LAB03=$BUILD/labs/03-between-graph/between_graph
LAB06=$BUILD/labs/06-allreduce/allreduce
OUT=$(mktemp -d)
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
    rm -rf "$OUT"
}
trap cleanup EXIT

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
show() { sed "s|^|# |" "$1" | tail -${2:-15}; }

if [ ! -x "$LAUNCHER" ] || [ ! -x "$LAB03" ]; then
    echo "1..0 # SKIP $LAUNCHER or $LAB03 is not built (make labs)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "1..0 # SKIP not root: --links makes network namespaces, a bridge and tc rules"
    exit 0
fi
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
    echo "1..0 # SKIP no ip or tc command (Debian's iproute2)"
    exit 0
fi
if ! why=$(ip netns add "flowlab-probe-$$" 2>&1); then
    echo "1..0 # SKIP cannot create a network namespace here: $why"
    exit 0
fi
ip netns del "flowlab-probe-$$"
echo "1..13"

# The launchers run in the background, not under timeout, so that $! is the
# launcher's own process id, which names what it makes; their --deadline
# bounds them.
# What launcher PID made: its namespaces (flowlab-PID-NAME) and its bridge.
left_by() { echo $(($(ip netns list | grep -c "^flowlab-$1-") + $(ip -o link show | grep -c ": flbr$1[:@]"))); }

# ---- refusals ----
if command -v setpriv >/dev/null 2>&1; then
    timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups "$LAUNCHER" --links 1gbit --ps 1 --workers 1 \
        /bin/true >"$OUT/user" 2>&1
    status=$?
    [ $status = 1 ] && grep -q "needs root" "$OUT/user"
    ok $? "as another user --links refuses, saying it needs root (status $status)"
else
    ok 0 "# SKIP no setpriv (util-linux) to run the launcher as another user"
fi
timeout 30 "$LAUNCHER" --links 1gbyte --ps 1 --workers 1 /bin/true >"$OUT/rate" 2>&1
status=$?
[ $status = 2 ] && grep -q -- "--links: '1gbyte' is not a rate" "$OUT/rate"
ok $? "a bad rate is refused with status 2, naming --links and the value (status $status)"

# ---- 1 ps + 2 workers over 100 Mbit/s links ----
RATE_MBIT=100
FLAGS="--device /cpu:0 --train_steps 6 --batch_size 32 --max_examples 64 --log_every 2 --print_stats"
FLOWLAB_BACKEND=host FLOWLAB_TASK_DEADLINE=60 "$LAUNCHER" --links ${RATE_MBIT}mbit --ps 1 --workers 2 \
    --deadline 200 -- "$LAB03" $FLAGS >"$OUT/run" 2>&1 &
launcher=$!
pids+=($launcher)
wait $launcher
status=$?
ok $status "1 ps + 2 workers trained over ${RATE_MBIT}mbit links and every task exited 0 (status $status)"
[ $status = 0 ] || show "$OUT/run" 30
grep -q "^launch_cluster: the tasks get --ps_hosts=10\.233\.[0-9]*\.2:2222 --worker_hosts=10\.233\.[0-9]*\.3:2222,10\.233\.[0-9]*\.4:2222" "$OUT/run"
ok $? "the tasks got addresses of their namespaces, not loopback"
grep -q "^worker1: .*global step" "$OUT/run" && grep -q "^ps0: .*registered partition .* from 10\.233\." "$OUT/run"
ok $? "the workers reached the ps over the bridge"
# An asynchronous global step moves one worker's pull of the variables
# (half its bytes per step) out of the ps's link: at the rate, at least
# that long. Unshaped, a step of this model takes a few tens of ms here.
step_s=$(awk '/stats:/ { for (i = 1; i <= NF; i++) if ($i ~ /^images_per_sec=/) { sub(/.*=/, "", $i); sum += $i } }
              END { if (sum > 0) printf "%.3f", 32 / sum }' "$OUT/run")
bound_s=$(awk -v rate=$RATE_MBIT '/^worker0: stats:/ { for (i = 1; i <= NF; i++) if ($i ~ /^bytes_per_step=/) {
              sub(/.*=/, "", $i); printf "%.3f", $i / 2 * 8 / (rate * 1e6) } }' "$OUT/run")
awk -v s="${step_s:-0}" -v b="${bound_s:-9}" 'BEGIN { exit !(s > 0 && b > 0.3 && s >= 0.9 * b) }'
ok $? "a global step took ${step_s:-?} s, at least the ps link's ${bound_s:-?} s of bytes at ${RATE_MBIT} Mbit/s: the shaping is real"
line=$(grep "^launch_cluster: ps0's link carried" "$OUT/run")
echo "# $line"
awk '{ for (i = 1; i <= NF; i++) { if ($i == "least") low = $(i + 1); if ($i == "of") run = $(i + 1) } }
     END { exit !(low > 1 && run + 0 >= low) }' <<<"$line"
ok $? "the launcher printed the bytes ps0's link carried, and the run lasted at least their time at the rate"
[ "$(left_by $launcher)" = 0 ]
ok $? "every namespace and the bridge of the run are gone ($(left_by $launcher) left)"

# ---- a killed launcher's links are removed by the next one ----
FLOWLAB_BACKEND=host "$LAUNCHER" --links 1gbit --ps 0 --workers 2 --no_secret --deadline 60 -- sh -c "exec sleep 50" task \
    >"$OUT/killed" 2>&1 &
killed=$!
pids+=($killed)
for i in $(seq 100); do grep -q "network namespace of its own" "$OUT/killed" && break; sleep 0.1; done
grep -q "network namespace of its own" "$OUT/killed"
ok $? "a second launcher made its links (waited up to 10 s for it to say so)"
for ns in $(ip netns list | awk -v p="^flowlab-$killed-" '$1 ~ p { print $1 }'); do
    for pid in $(ip netns pids "$ns"); do pids+=($pid); done
done
kill -9 $killed
wait $killed 2>/dev/null
[ "$(left_by $killed)" -ge 2 ]
ok $? "killed with SIGKILL, it left its namespaces behind ($(left_by $killed) things)"
for pid in "${pids[@]}"; do [ "$pid" = "$killed" ] || kill -9 "$pid" 2>/dev/null; done
FLOWLAB_BACKEND=host timeout 60 "$LAUNCHER" --links 1gbit --ps 0 --workers 1 --no_secret -- /bin/true >"$OUT/next" 2>&1
status=$?
[ $status = 0 ] && grep -q "left by launcher $killed, which is gone" "$OUT/next" && [ "$(left_by $killed)" = 0 ]
ok $? "the next launcher removed them by name, saying whose they were (status $status, $(left_by $killed) left)"
[ $status = 0 ] || show "$OUT/next"

# ---- chapter 6's allreduce as 2 MPI ranks over the links ----
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$LAB06" ]; then
    for i in 1 2; do ok 0 "# SKIP no mpirun (Open MPI) or $LAB06 is not built"; done
    exit 0
fi
# LeakSanitizer off for this run alone (under SANITIZE=1; elsewhere it does
# nothing): Open MPI never frees some of its own allocations, as
# tests/test_lab06.c explains, and the ranks inherit the launcher's options.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
FLOWLAB_BACKEND=host "$LAUNCHER" --links 1gbit --mpi_ranks 2 --deadline 100 -- "$LAB06" \
    --device /cpu:0 --max_examples 256 --batch_size 32 --train_steps 4 --log_every 2 >"$OUT/mpi" 2>&1 &
launcher=$!
pids+=($launcher)
wait $launcher
status=$?
sums=$(grep -o "variables checksum [0-9a-f]*" "$OUT/mpi" | sort -u | wc -l)
[ $status = 0 ] && [ "$(grep -c "variables checksum" "$OUT/mpi")" = 2 ] && [ "$sums" = 1 ]
ok $? "--mpi_ranks 2: both ranks trained over the links and ended with the same variables (status $status)"
[ $status = 0 ] || show "$OUT/mpi" 30
# Each step's ring allreduce of 13.1 MB between 2 ranks sends 13.1 MB from each.
sent=$(awk '/rank1.s link carried/ { print $5 }' "$OUT/mpi")
awk -v mb="${sent:-0}" 'BEGIN { exit !(mb >= 4 * 13.1) }' && [ "$(left_by $launcher)" = 0 ]
ok $? "rank 1's link carried ${sent:-?} MB out, at least 4 steps of 13.1 MB, and the links are gone afterwards"
