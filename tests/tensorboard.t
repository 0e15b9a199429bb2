#!/bin/bash
# tensorboard.t: chapter 1's lab writes --log_dir, and TensorBoard's own
# code reads it: its event loader finds the tags, steps and values the lab
# printed (in a run killed with SIGKILL, every step up to the kill; in
# chapter 3's cluster, the chief's file alone; in the other labs, the
# loss), and a `tensorboard --logdir` on a free loopback port serves the
# loss curve and the graph (tests/tensorboard_check.py). TensorBoard comes
# from PyPI into a virtual environment in build/, made once (about 50 s)
# and kept; skipped, with the reason, when it cannot be. The server and
# the killed lab are killed by their process ids, whatever happens.
set -u
BUILD=${BUILD:-build}
LAB=$BUILD/labs/01-single-device/single_device
CLUSTER_LAB=$BUILD/labs/03-between-graph/between_graph
LAUNCH=$BUILD/labs/tools/launch_cluster
# The plain build's, shared by the sanitized runs: installed once.
VENV=build/tb-venv
DEADLINE=${TENSORBOARD_DEADLINE:-90}
DIR=$(mktemp -d /tmp/flowlab-tensorboard.XXXXXX)
server=""
lab=""
cleanup() {
    [ -n "$server" ] && kill -9 "$server" 2>/dev/null
    [ -n "$lab" ] && kill -9 "$lab" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT
n=0
# Numbers the helper's "ok - ..." lines and passes its diagnostics through
# (fed by < <(...), not a pipe, so that n counts in this shell).
number() {
    while IFS= read -r line; do
        case $line in
            "ok - "* | "not ok - "*) n=$((n + 1)); echo "${line%% - *} $n - ${line#* - }" ;;
            *) echo "$line" ;;
        esac
    done
}

if [ ! -x "$LAB" ]; then
    echo "1..0 # SKIP $LAB is not built (run make)"
    exit 0
fi
if ! "$VENV/bin/python" -c "import tensorboard" 2>/dev/null; then
    echo "# installing tensorboard from PyPI into $VENV (once; about a minute)"
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >"$DIR/pip.log" 2>&1 ||
       ! timeout 600 "$VENV/bin/pip" install -q tensorboard >>"$DIR/pip.log" 2>&1; then
        rm -rf "$VENV"
        echo "1..0 # SKIP cannot install tensorboard into $VENV: $(tail -1 "$DIR/pip.log")"
        exit 0
    fi
fi

# A short run: 12 steps, a progress line every 4, histograms every 5.
"$LAB" --device /cpu:0 --train_steps 12 --max_examples 128 --batch_size 32 --log_every 4 \
    --histogram_every 5 --log_dir "$DIR/run" >"$DIR/lab.out" 2>&1
rc=$?
n=$((n + 1))
if [ $rc = 0 ]; then echo "ok $n - the lab trains with --log_dir"; else
    echo "not ok $n - the lab trains with --log_dir (exit $rc)"; sed 's/^/# /' "$DIR/lab.out"; fi
number < <("$VENV/bin/python" tests/tensorboard_check.py read "$DIR/run" "$DIR/lab.out" 2>"$DIR/read.err")
[ -s "$DIR/read.err" ] && grep -v -i "warn\|tensorflow installation" "$DIR/read.err" | sed 's/^/# /' | head -5

# A run killed with SIGKILL once it has printed step 10, the writer flushing
# every 0.3 s: TensorBoard reads it to its last whole record.
FLOWLAB_SUMMARY_FLUSH_SECS=0.3 "$LAB" --device /cpu:0 --train_steps 100000 --max_examples 128 --batch_size 32 \
    --log_every 5 --histogram_every 0 --log_dir "$DIR/killed" >"$DIR/killed.out" 2>&1 &
lab=$!
for _ in $(seq 1 $((DEADLINE * 2))); do
    grep -q "^Step 10 with" "$DIR/killed.out" && break
    sleep 0.5
done
sleep 0.5 # a flush after step 10
kill -9 "$lab" 2>/dev/null
wait "$lab" 2>/dev/null
lab=""
number < <("$VENV/bin/python" tests/tensorboard_check.py killed "$DIR/killed" "$DIR/killed.out" 2>/dev/null)

# Between graphs (chapter 3's lab: one ps, two workers), the chief writes.
timeout "$DEADLINE" "$LAUNCH" --ps 1 --workers 2 -- "$CLUSTER_LAB" --device /cpu:0 --train_steps 8 \
    --max_examples 128 --batch_size 32 --log_every 2 --log_dir "$DIR/cluster" >"$DIR/cluster.out" 2>&1
rc=$?
n=$((n + 1))
if [ $rc = 0 ]; then echo "ok $n - a ps and two workers train with --log_dir"; else
    echo "not ok $n - a ps and two workers train with --log_dir (exit $rc; 124: past ${DEADLINE}s)"
    tail -20 "$DIR/cluster.out" | sed 's/^/# /'; fi
number < <("$VENV/bin/python" tests/tensorboard_check.py chief "$DIR/cluster" "$DIR/cluster.out" 2>/dev/null)

# The other labs: chapter 0's xor, chapter 2's towers on two PoCL devices,
# chapter 6's allreduce on two MPI ranks (rank 0 writes), where built.
run_lab() { # NAME LOG_DIR COMMAND...: runs it, then checks its printed losses
    local name=$1 dir=$2
    shift 2
    if timeout "$DEADLINE" "$@" --log_dir "$dir" >"$DIR/$name.out" 2>&1; then
        number < <("$VENV/bin/python" tests/tensorboard_check.py losses "$name" "$dir" "$DIR/$name.out" 2>/dev/null)
    else
        n=$((n + 1)); echo "not ok $n - $name trains with --log_dir"; tail -10 "$DIR/$name.out" | sed 's/^/# /'
    fi
}
run_lab xor "$DIR/xor" "$BUILD/labs/00-xor/xor" --steps 100
POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=1 run_lab in_graph_towers "$DIR/towers" \
    "$BUILD/labs/02-in-graph-towers/in_graph_towers" --num_gpus 2 --train_steps 6 --max_examples 128 \
    --batch_size 32 --log_every 2
if [ -x "$BUILD/labs/06-allreduce/allreduce" ] && command -v mpirun >/dev/null; then
    # Root may run it here (CI's container); Open MPI wants that said twice.
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 run_lab allreduce "$DIR/allreduce" mpirun --oversubscribe -np 2 -x ASAN_OPTIONS=detect_leaks=0 \
        "$BUILD/labs/06-allreduce/allreduce" --device /cpu:0 --train_steps 6 --max_examples 128 --batch_size 32 \
        --log_every 2
else
    n=$((n + 1)); echo "ok $n - allreduce writes --log_dir # SKIP no mpirun or no $BUILD/labs/06-allreduce/allreduce"
fi

# The server, on a port the kernel picks free, up to DEADLINE seconds.
port=$("$VENV/bin/python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"$VENV/bin/tensorboard" --logdir "$DIR/run" --host 127.0.0.1 --port "$port" >"$DIR/server.log" 2>&1 &
server=$!
url=http://127.0.0.1:$port
up=0
for _ in $(seq 1 "$DEADLINE"); do
    if "$VENV/bin/python" -c "import urllib.request as u; u.urlopen('$url/data/runs', timeout=5)" 2>/dev/null; then
        up=1; break
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 1
done
n=$((n + 1))
if [ $up = 1 ]; then
    echo "ok $n - tensorboard --logdir answers on $url"
    number < <("$VENV/bin/python" tests/tensorboard_check.py serve "$url" "$DIR/lab.out")
else
    echo "not ok $n - tensorboard --logdir answers on $url within ${DEADLINE}s (waited for GET /data/runs)"
    tail -5 "$DIR/server.log" | sed 's/^/# /'
fi
kill -9 "$server" 2>/dev/null
wait "$server" 2>/dev/null
server=""
echo "1..$n"
