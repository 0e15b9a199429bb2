#!/bin/bash
# mpirun.t: chapter 3's lab launched by Open MPI's mpirun on this machine:
# `mpirun -np 3 between_graph --num_ps 1` makes rank 0 the ps and ranks 1
# and 2 the workers, each finding its role in OMPI_COMM_WORLD_* and its
# port from --port_base. TAP, run by prove; skipped, with the reason, where
# mpirun is missing. Whatever the run leaves is killed by process id.
set -u
LAB=${BUILD:-build}/labs/03-between-graph/between_graph
DEADLINE=${MPIRUN_DEADLINE:-120} # seconds for the whole run, on a loaded 2-core machine
STEPS=10
OUT=$(mktemp -d /tmp/flowlab-mpirun.XXXXXX)
PORT_BASE=

# This run's tasks are the only processes that name its port base.
our_tasks() { [ -n "$PORT_BASE" ] && pgrep -f -- "^$LAB .*--port_base $PORT_BASE( |$)"; }
cleanup() {
    for pid in $(our_tasks); do kill -9 "$pid" 2>/dev/null; done
    rm -rf "$OUT"
}
trap cleanup EXIT

n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
# The last lines of the run's output as TAP comments, to say what went wrong.
show_output() { tail -n "${1:-25}" "$OUT/run" | sed 's|^|# |'; }

[ -x "$LAB" ] || skip_all "$LAB is not built (make labs)"
command -v mpirun >/dev/null 2>&1 || skip_all "no mpirun (Debian's openmpi-bin)"
version=$(timeout 10 mpirun --version 2>&1 | head -n 1)
case $version in *"Open MPI"*) ;; *) skip_all "mpirun is not Open MPI's (mpirun --version: ${version:-no answer in 10 s})" ;; esac

# The ranks must see mpirun's variables alone: TF_CONFIG would win over them,
# and a Slurm job's or an outer mpirun's would describe another job.
for v in $(compgen -e | grep -E '^(SLURM_|OMPI_|PMI_|PMIX_|TF_CONFIG$)'); do unset "$v"; done

. "$(dirname "$0")/free_ports.sh"
PORT_BASE=$(free_ports 3) || skip_all "no 3 consecutive free TCP ports in 50 tries"
echo "1..7"

# The host backend and a small run: a few seconds.
export FLOWLAB_BACKEND=host FLOWLAB_TASK_DEADLINE=60
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # as root; ignored otherwise
start=$SECONDS
# --oversubscribe: three ranks on a machine of fewer cores; --tag-output: each
# line says its rank, "[1,2]<stdout>:worker 1: ...".
timeout -k 10 "$DEADLINE" mpirun --oversubscribe --tag-output -np 3 "$LAB" --num_ps 1 --port_base "$PORT_BASE" \
    --train_steps $STEPS --device /cpu:0 --batch_size 32 --max_examples 512 --log_every 1 --seed 3 >"$OUT/run" 2>&1
status=$?
echo "# mpirun ran $((SECONDS - start)) s"
if [ $status = 124 ] || [ $status = 137 ]; then
    ok 1 "mpirun -np 3 between_graph --num_ps 1 exits 0 for every rank: waited $DEADLINE s for the 3 ranks to train to global step $STEPS and exit; they had not (killed)"
else
    # Open MPI's mpirun exits 0 only when every rank did.
    ok $status "mpirun -np 3 between_graph --num_ps 1 exits 0 for every rank (status $status)"
fi
[ $status = 0 ] || show_output

# Rank r's lines without their tag.
rank_lines() { sed -n "s/^\[[0-9]*,$1\]<std\(out\|err\)>://p" "$OUT/run"; }
roles=0
for rank in 0 1 2; do
    case $rank in 0) who="ps 0" ;; *) who="worker $((rank - 1))" ;; esac
    rank_lines $rank | grep -qxF "$who from Open MPI's variables: 1 ps and 2 workers; listening on 127.0.0.1:$((PORT_BASE + rank))" ||
        { roles=1; echo "# rank $rank did not say it was $who from Open MPI's variables on 127.0.0.1:$((PORT_BASE + rank))"; }
done
ok $roles "rank 0 is ps 0, ranks 1 and 2 workers 0 and 1, from Open MPI's variables, on ports $PORT_BASE-$((PORT_BASE + 2))"

# "worker 1: step 3, global step 5, loss 2.082045 (...)": each worker's global steps and losses.
progress() { rank_lines "$1" | sed -n "s/^worker $(($1 - 1)): step [0-9]*, global step \([0-9]*\), loss \([^ ]*\) .*/\1 \2/p"; }
for rank in 1 2; do progress $rank >"$OUT/progress$rank"; done
[ -s "$OUT/progress1" ] && [ -s "$OUT/progress2" ]
ok $? "both workers printed their progress naming the global step ($(wc -l <"$OUT/progress1") and $(wc -l <"$OUT/progress2") lines)"
highest=$(cut -d' ' -f1 "$OUT/progress1" "$OUT/progress2" | sort -n | tail -n 1)
[ "${highest:-0}" -ge $STEPS ]
ok $? "the global step reached --train_steps $STEPS (highest printed: ${highest:-none})"
# printf's %f of a NaN or an infinity is no decimal number.
bad=$(cut -d' ' -f2 "$OUT/progress1" "$OUT/progress2" | grep -cvxE '[0-9]+\.[0-9]+')
[ -s "$OUT/progress1" ] && [ "$bad" = 0 ]
ok $? "every loss printed is a finite number ($bad not)"
rank_lines 0 | grep -q "^ps 0: every worker has finished" &&
    [ "$(rank_lines 1 | grep -c "^worker 0: test accuracy")" = 1 ] &&
    [ "$(rank_lines 2 | grep -c "^worker 1: test accuracy")" = 1 ]
ok $? "both workers reported a test accuracy, and the ps exited once both had finished"
left=$(our_tasks | xargs)
[ -z "$left" ]
ok $? "no rank outlives mpirun${left:+ (left running: $left; killed)}"
