#!/bin/bash
# slurm.t: chapter 3's and chapter 6's labs launched the way clusters launch
# jobs. The test makes a one-node Slurm cluster of its own (a munge key and
# socket, a generated slurm.conf, slurmctld and slurmd, all in a temporary
# directory, on ports nobody else uses), runs between_graph as 1 ps + 2
# workers with `srun -n 3` (the tasks find their roles in SLURM_* variables)
# and the allreduce lab with `srun --mpi=pmix -n 2` and inside a step with
# `srun -n 1 mpirun -np 2`, then cancels its jobs, stops every daemon by
# process id, checks that no step daemon of its own is left, and removes its
# files. TAP, run by prove; skipped, with the reason, where Slurm or
# munge is missing or cannot start (not root, no such daemons).
set -u
BUILD=${BUILD:-build}
LAB03=$BUILD/labs/03-between-graph/between_graph
LAB06=$BUILD/labs/06-allreduce/allreduce
START_DEADLINE=${SLURM_START_DEADLINE:-30} # seconds for munged and the node to come up
RUN_DEADLINE=${SLURM_RUN_DEADLINE:-90}     # seconds for each srun
STOP_DEADLINE=${SLURM_STOP_DEADLINE:-120}  # seconds for the daemons to exit after SIGTERM
NODE=$(hostname -s)
DIR=$(mktemp -d /tmp/flowlab-slurm.XXXXXX)
pids=()

# The job steps go first: a slurmstepd outlives its slurmd, so the test
# cancels its jobs and waits (bounded) until squeue lists none.
stop_job_steps() {
    [ -n "${SLURM_CONF:-}" ] || return 0
    scancel --quiet --partition=flowlab 2>/dev/null
    for _ in $(seq 240); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 0.25
    done
    echo "# jobs still listed 60 s after scancel: $(squeue -h -o '%i %T' 2>/dev/null | xargs)"
}
# This cluster's processes: the daemons name $DIR on their command lines, and
# its slurmstepd processes inherit slurmd's SLURM_CONF.
our_processes() {
    pgrep -f "$DIR"
    for pid in $(pgrep -x slurmstepd); do
        tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$DIR/slurm.conf" && echo "$pid"
    done
}
# Stops every daemon by its process id, SIGTERM, and waits on each one's own
# exit (wait, not a fixed pause). slurmctld saves its state on the way out,
# which takes seconds on a busy machine: a watchdog kills what is left after
# STOP_DEADLINE s and says whom. 0 when every daemon exited by itself.
stop_daemons() {
    [ ${#pids[@]} -gt 0 ] || return 0
    stop_job_steps
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    (
        trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
        for _ in $(seq $((STOP_DEADLINE / 10))); do
            sleep 10 &
            sleeper=$!
            wait "$sleeper"
            echo "# waiting for the daemons to exit: $(ps -o comm= -p "$(IFS=,; echo "${pids[*]}")" | xargs)"
        done
        touch "$DIR/daemons-killed"
        echo "# killed after $STOP_DEADLINE s, not exited after SIGTERM: $(ps -o comm= -p "$(IFS=,; echo "${pids[*]}")" | xargs)"
        kill -9 "${pids[@]}" 2>/dev/null
    ) &
    local watchdog=$!
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    kill "$watchdog" 2>/dev/null
    wait "$watchdog" 2>/dev/null
    pids=()
    [ ! -e "$DIR/daemons-killed" ]
}
# Runs however the test ends.
cleanup() {
    stop_daemons
    for pid in $(our_processes); do kill -9 "$pid" 2>/dev/null; done
    rm -rf "$DIR"
}
trap cleanup EXIT

skip_all() { echo "1..0 # SKIP $1"; exit 0; }
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
# The last lines of a file as TAP comments, to say what went wrong.
show() { tail -n "${2:-15}" "$1" 2>/dev/null | sed "s|^|# $(basename "$1"): |"; }

[ -x "$LAB03" ] || skip_all "$LAB03 is not built (make labs)"
[ "$(id -u)" = 0 ] || skip_all "not root: slurmd must run as root to start tasks"
for cmd in munged slurmctld slurmd srun sinfo; do
    command -v $cmd >/dev/null 2>&1 ||
        skip_all "no $cmd: Slurm and munge are not installed (Debian's slurm-wlm and munge; labs/install-deps.sh)"
done
getent hosts "$NODE" >/dev/null || skip_all "this host's name $NODE does not resolve; the tasks listen on it"

# A Slurm step's tasks must not see the variables of a job this test runs in.
for v in $(compgen -e | grep -E '^(SLURM_|OMPI_|PMI_|PMIX_|TF_CONFIG$)'); do unset "$v"; done

. "$(dirname "$0")/free_ports.sh"
SLURM_PORT=$(free_ports 2) || skip_all "no two free TCP ports for slurmctld and slurmd"

# munge: its own key and socket, so that no system munged is needed or touched.
chmod 711 "$DIR" # the socket's directory must be searchable by all, as munged checks
dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$DIR/munge.key"
munged -F -f --key-file="$DIR/munge.key" --socket="$DIR/munge.sock" --pid-file="$DIR/munged.pid" \
    --seed-file="$DIR/munged.seed" --log-file="$DIR/munged.log" >"$DIR/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq $((START_DEADLINE * 4))); do [ -S "$DIR/munge.sock" ] && break; sleep 0.25; done
[ -S "$DIR/munge.sock" ] ||
    skip_all "munged did not make its socket $DIR/munge.sock in $START_DEADLINE s: $(tail -n 1 "$DIR/munged.out")"

# The smallest slurm.conf for one node: no systemd (linuxproc tracks the
# processes), no cgroups (task/none), CPUs as consumable resources.
mkdir -p "$DIR/state" "$DIR/spool"
cat >"$DIR/slurm.conf" <<EOF
ClusterName=flowlab
SlurmctldHost=$NODE
SlurmctldPort=$SLURM_PORT
SlurmdPort=$((SLURM_PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$NODE CPUs=$(nproc) State=UNKNOWN
PartitionName=flowlab Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$DIR/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$DIR/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$NODE" -f "$SLURM_CONF" >"$DIR/slurmd.out" 2>&1 &
pids+=($!)
state=
for _ in $(seq $((START_DEADLINE * 4))); do
    state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.25
done
if [ "$state" != idle ]; then
    show "$DIR/slurmctld.log" 5
    show "$DIR/slurmd.log" 5
    skip_all "waited $START_DEADLINE s for node $NODE to be idle in sinfo; it was '${state:-no answer}'"
fi
echo "1..13"

# --- chapter 3: 1 ps + 2 workers, their roles from SLURM_PROCID ----------------
export FLOWLAB_BACKEND=host FLOWLAB_TASK_DEADLINE=60
QUICK="--device /cpu:0 --batch_size 32 --max_examples 512 --log_every 5 --seed 3"
PORT_BASE=$(free_ports 3) || PORT_BASE=28888
# The tasks listen on the node's name, which may not be loopback: they share a secret.
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$DIR/cluster_secret")
# -O: three tasks on a node of fewer CPUs would otherwise wait forever.
timeout "$RUN_DEADLINE" srun -O -n 3 -l "$LAB03" --num_ps 1 --port_base "$PORT_BASE" --train_steps 20 \
    --cluster_secret_file "$DIR/cluster_secret" $QUICK >"$DIR/lab03.out" 2>&1
status=$?
ok $status "srun -n 3 between_graph --num_ps 1 exits 0 for every task (status $status)"
[ $status = 0 ] || show "$DIR/lab03.out" 25
grep -q "^0: ps 0 from Slurm's variables: 1 ps and 2 workers; listening on $NODE:$PORT_BASE" "$DIR/lab03.out" &&
    grep -q "^2: worker 1 from Slurm's variables: .* listening on $NODE:$((PORT_BASE + 2))" "$DIR/lab03.out"
ok $? "rank 0 is the ps, rank 2 worker 1, on consecutive ports of $NODE from --port_base"
# The workers are asynchronous: on a loaded machine one may take most of
# the 20 global steps and the other log a single line. So the run's loss
# must fall from its first logged global step to its last, whichever worker
# logged them, and each worker must have logged a loss.
# "global_step loss" from "global step 9, loss 1.23 (" lines of both workers.
grep -E "^[12]: worker .* global step [0-9]+, loss " "$DIR/lab03.out" |
    sed 's/.* global step \([0-9]*\), loss \([0-9.]*\).*/\1 \2/' | sort -n >"$DIR/losses03"
first=$(head -n 1 "$DIR/losses03" | cut -d' ' -f2)
last=$(tail -n 1 "$DIR/losses03" | cut -d' ' -f2)
echo "# loss $first at the first logged global step, $last at the last"
fell=0
awk -v a="${first:-0}" -v b="${last:-0}" 'BEGIN { exit !(b > 0 && b < a) }' || fell=1
for rank in 1 2; do
    grep -q "^$rank: worker .* loss " "$DIR/lab03.out" || fell=1
done
ok $fell "the workers' loss fell over the run's global steps, and each worker logged one"
[ "$(grep -c ': worker [01]: test accuracy' "$DIR/lab03.out")" = 2 ]
ok $? "both workers printed a test accuracy"
grep -q "^0: ps 0: every worker has finished" "$DIR/lab03.out"
ok $? "the ps exited once both workers had finished"

# --- chapter 6: MPI ranks started by srun itself (PMIx) and by mpirun in a step ----
allreduce_checks() { # $1: output file, $2: how it was launched
    grep "Step .* with loss" "$1" | sed 's/.* with loss \([0-9.]*\).*/\1/' | sed -n '1p;$p' | xargs >"$DIR/losses"
    read -r first last <"$DIR/losses"
    echo "# $2: loss $first at step 0, $last at the last logged step"
    awk -v a="${first:-0}" -v b="${last:-0}" 'BEGIN { exit !(b > 0 && b < a) }' && grep -q "Test accuracy" "$1"
    ok $? "$2: the loss fell and rank 0 printed the test accuracy"
    sums=$(grep -o "variables checksum [0-9a-f]*" "$1" | sort -u | wc -l)
    [ "$(grep -c "variables checksum" "$1")" = 2 ] && [ "$sums" = 1 ]
    ok $? "$2: both ranks ended with the same variables (one checksum)"
}
# LeakSanitizer off for the MPI ranks alone (under SANITIZE=1; elsewhere it
# does nothing): Open MPI never frees some of its own allocations, as
# tests/test_lab06.c explains.
export ASAN_OPTIONS=detect_leaks=0
FLAGS06="--device /cpu:0 --batch_size 32 --max_examples 256 --log_every 2 --seed 5 --train_steps 8"
# Runs the allreduce lab with the launch command "$2..." and checks it; $1 names it.
run_allreduce() {
    local name=$1 out="$DIR/lab06-$n.out" status
    shift
    timeout "$RUN_DEADLINE" "$@" >"$out" 2>&1
    status=$?
    ok $status "$name allreduce exits 0 (status $status)"
    [ $status = 0 ] || show "$out" 20
    allreduce_checks "$out" "$name"
}
if [ ! -x "$LAB06" ]; then
    for _ in 1 2 3 4 5 6; do skip "$LAB06 is not built (Open MPI's mpicc is missing)"; done
else
    # srun starts the ranks itself; they find each other through Slurm's PMIx plugin.
    if srun --mpi=list 2>&1 | grep -q pmix; then
        run_allreduce "srun --mpi=pmix -n 2" srun -O --mpi=pmix -n 2 "$LAB06" $FLAGS06
    else
        for _ in 1 2 3; do skip "this Slurm has no PMIx plugin (srun --mpi=list)"; done
    fi
    # mpirun inside a one-task step sees that step's one CPU: --oversubscribe for two ranks.
    if command -v mpirun >/dev/null 2>&1; then
        run_allreduce "srun -n 1 mpirun -np 2" srun -n 1 env OMPI_ALLOW_RUN_AS_ROOT=1 \
            OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 "$LAB06" $FLAGS06
    else
        for _ in 1 2 3; do skip "no mpirun (Debian's openmpi-bin)"; done
    fi
fi

stop_daemons
ok $? "after its jobs were cancelled, munged, slurmctld and slurmd exited by themselves after SIGTERM (waited on by process id)"
# A step daemon finishes its job's last words after the job has left squeue: up to 30 s.
for _ in $(seq 120); do
    left=$(our_processes | sort -u | xargs)
    [ -z "$left" ] && break
    sleep 0.25
done
[ -z "$left" ]
ok $? "no process of this cluster (daemon or step) is left running${left:+ (left: $(ps -o comm= -p "${left// /,}" | xargs), killed)}"

