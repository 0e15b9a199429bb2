#!/bin/sh
# ps_dies.sh: chapter 4's failure drill. Starts one ps and two workers of
# chapter 3's lab on loopback ports, kills the ps (SIGKILL, no goodbye) once
# the chief has logged a global step of at least --kill_at, starts a new,
# empty ps at the same address, and lets the workers recover on their own.
#
#   sh labs/04-synchronous-training/ps_dies.sh [--kill_at STEP] [--make_secret] [--] LAB [LAB FLAGS...]
#
# --make_secret makes a shared secret for the drill (chapter 4's "Securing a
# cluster"): a 0600 file in the drill's own directory, given to every task,
# the restarted ps too, as --cluster_secret_file. LAB FLAGS go to every task,
# so --cluster_secret_file and --tls_* given there work as well.
# Every line a task prints comes out with its name in front, as
# labs/tools/launch_cluster does ("ps0: ", "worker1: "); the drill's own
# lines start with "ps_dies: ". Give the lab --checkpoint_dir and
# --save_every, or the restarted ps has nothing to be restored from.
#
# The workers are paused (SIGSTOP) while the ps dies and resumed once it is
# gone, so that they notice a ps that has vanished, as when its machine
# fails. Without the pause a worker may reconnect in the moment the dying
# process still holds its port, and be turned away.
set -eu

KILL_AT=10
MAKE_SECRET=false
while [ "${1:-}" = "--kill_at" ] || [ "${1:-}" = "--make_secret" ]; do
    if [ "$1" = "--make_secret" ]; then
        MAKE_SECRET=true
        shift
    else
        KILL_AT=$2
        shift 2
    fi
done
[ "${1:-}" = "--" ] && shift
if [ $# -lt 1 ]; then
    echo "usage: ps_dies.sh [--kill_at STEP] [--make_secret] [--] LAB [LAB FLAGS...]" >&2
    exit 2
fi
LAB=$1
shift

BASE=${BASE_PORT:-$((21000 + ($$ % 3000) * 3))}
CLUSTER="--ps_hosts=127.0.0.1:$BASE --worker_hosts=127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"
export POCL_DEVICES=${POCL_DEVICES:-pthread} POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-1}
export FLOWLAB_TASK_DEADLINE=${FLOWLAB_TASK_DEADLINE:-30}
DIR=$(mktemp -d /tmp/ps_dies.XXXXXX)
PIDS=""
cleanup() {
    for pid in $PIDS; do kill -CONT "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT
if $MAKE_SECRET; then # 32 random bytes as hex, readable by this user alone
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$DIR/cluster_secret")
    CLUSTER="$CLUSTER --cluster_secret_file=$DIR/cluster_secret"
    echo "ps_dies: made a shared secret for the drill: $DIR/cluster_secret"
fi

# start NAME JOB INDEX [LAB FLAGS...]: runs one task, its lines prefixed with
# NAME (and kept in $DIR/NAME.log); sets TASK_PID to the task's process id.
start() {
    name=$1 job=$2 index=$3
    shift 3
    rm -f "$DIR/$name.fifo"
    mkfifo "$DIR/$name.fifo"
    sed -u -e "s/^/$name: /" -e "w $DIR/$name.log" < "$DIR/$name.fifo" &
    "$LAB" $CLUSTER --job_name="$job" --task_index="$index" "$@" > "$DIR/$name.fifo" 2>&1 &
    TASK_PID=$!
    PIDS="$PIDS $TASK_PID"
}

# The highest global step the chief has logged in a progress line ("step K,
# global step N") so far, 0 before any. A restore line ("restored ...: global
# step N") does not count: a checkpoint left by an earlier run is not progress.
chief_step() {
    [ -f "$DIR/worker0.log" ] || { echo 0; return; }
    awk 'match($0, /step [0-9]+, global step [0-9]+/) { s = substr($0, RSTART, RLENGTH); sub(/.*global step /, "", s);
             if (s + 0 > max) max = s + 0 }
         END { print max + 0 }' "$DIR/worker0.log"
}

start ps0 ps 0 "$@"
PS=$TASK_PID
start worker0 worker 0 "$@"
W0=$TASK_PID
start worker1 worker 1 "$@"
W1=$TASK_PID
until [ "$(chief_step)" -ge "$KILL_AT" ]; do
    if ! kill -0 "$W0" 2>/dev/null; then
        echo "ps_dies: the chief ended before global step $KILL_AT (did it restore a --checkpoint_dir" \
             "an earlier run left at or past --train_steps? give a fresh one)" >&2
        exit 1
    fi
    sleep 0.05
done

kill -STOP "$W0" "$W1"
kill -KILL "$PS"
wait "$PS" 2>/dev/null || true
echo "ps_dies: killed ps0 after the chief logged global step $(chief_step)"
sleep 1
start ps0 ps 0 "$@"
PS=$TASK_PID
echo "ps_dies: started a new ps0 at the same address"
kill -CONT "$W0" "$W1"

status=0
for pid in $W0 $W1 $PS; do
    wait "$pid" || status=1
done
wait
PIDS=""
echo "ps_dies: every task has exited$([ $status -eq 0 ] && echo ' with status 0' || echo '; one failed')"
exit $status
