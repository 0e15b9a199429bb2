#!/bin/sh
# book-outputs.sh: writes book/outputs/*.txt, every program output the book
# shows, from real runs (`make book-outputs` runs it after building the labs).
# Each file starts with the command, as "$ COMMAND", then what it printed
# (stdout and stderr). The runs are small: a few seconds each on two cores.
# Afterwards `make book-sync` copies the files into the chapters' blocks and
# `make book-check` (CI) fails while a block differs from its file.
set -eu
OUT=book/outputs
mkdir -p "$OUT"
L1=build/labs/01-single-device/single_device
L2=build/labs/02-in-graph-towers/in_graph_towers
L3=build/labs/03-between-graph/between_graph
TWO='POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2'
SCRATCH=$(mktemp -d /tmp/book-outputs.XXXXXX)
trap 'rm -rf "$SCRATCH"' EXIT

# show NAME COMMAND: runs COMMAND through the shell and stores "$ COMMAND"
# and its output in book/outputs/NAME.txt. A failing command is shown too
# (some outputs are error messages); its status is not an error here.
show() {
    printf '$ %s\n' "$2" > "$OUT/$1.txt"
    sh -c "$2" >> "$OUT/$1.txt" 2>&1 || true
    echo "book-outputs: $OUT/$1.txt"
}

# Setting up
show setup-devices "$TWO build/labs/tools/flowlab-devices"
show setup-no-gpu "FLOWLAB_BACKEND=host $L1 --max_examples 256 --batch_size 32 --train_steps 4 --log_every 2"

# Chapter 0
show 00-xor "build/labs/00-xor/xor"
show 00-placement "$L1 --device /gpu:7 --max_examples 64 --batch_size 32 --train_steps 1 --log_device_placement 2>&1 | grep -e 'dense_1/MatMul:' -e 'dense_1/kernel:' -e 'no /gpu'"

# Chapter 1
show 01-short-run "$L1 --device /cpu:0 --max_examples 2048 --batch_size 64 --train_steps 60 --log_every 10"
show 01-unbroken "$L1 --device /cpu:0 --max_examples 512 --batch_size 32 --train_steps 20 --log_every 5"
show 01-stopped "$L1 --device /cpu:0 --max_examples 512 --batch_size 32 --train_steps 12 --log_every 5 --save_every 5 --checkpoint_dir $SCRATCH/ckpt"
show 01-resumed "$L1 --device /cpu:0 --max_examples 512 --batch_size 32 --train_steps 20 --log_every 5 --save_every 5 --checkpoint_dir $SCRATCH/ckpt"
sed -i "s#$SCRATCH/ckpt#ckpt#" "$OUT/01-stopped.txt" "$OUT/01-resumed.txt"
show 01-exercise "build/exercises/01-single-device/check_dense_layer"

# Chapter 2
show 02-two-towers "$TWO $L2 --num_gpus 2 --max_examples 512 --batch_size 64 --train_steps 6 --log_every 1"
show 02-one-tower "$TWO $L2 --num_gpus 1 --max_examples 512 --batch_size 64 --train_steps 6 --log_every 1"
show 02-too-many "$TWO $L2 --num_gpus 3"
show 02-placement "$TWO $L2 --num_gpus 2 --max_examples 64 --batch_size 32 --train_steps 1 --log_device_placement 2>&1 | grep -e '^model/dense_1/kernel:' -e '^tower_1/model/dense_1/MatMul:' -e 'towers on'"

# Chapter 3: two workers race, so the order of their lines and the losses
# change from run to run; `make book-sync` after regenerating.
show 03-cluster "build/labs/tools/launch_cluster --ps 1 --workers 2 -- $L3 --max_examples 2048 --batch_size 64 --train_steps 40 --log_every 10"

# Chapter 4: the same lab, synchronous and asynchronous, with a backup
# worker, and the failure drill (a ps killed and restarted). The workers race,
# so the order of lines (and, asynchronously, the losses) change from run to run.
SYNC="--max_examples 2048 --batch_size 64 --train_steps 20 --log_every 5"
show 04-sync "build/labs/tools/launch_cluster --ps 1 --workers 2 -- $L3 $SYNC --sync_replicas true"
show 04-async "build/labs/tools/launch_cluster --ps 1 --workers 2 -- $L3 $SYNC"
show 04-backup "build/labs/tools/launch_cluster --ps 1 --workers 3 -- $L3 --max_examples 2048 --batch_size 32 --train_steps 20 --log_every 10 --sync_replicas true --replicas_to_aggregate 2"
show 04-ps-dies "sh labs/04-synchronous-training/ps_dies.sh --kill_at 15 -- $L3 --max_examples 2048 --batch_size 32 --train_steps 30 --log_every 5 --sync_replicas true --checkpoint_dir $SCRATCH/ckpt4 --save_every 10"
sed -i "s#$SCRATCH/ckpt4#ckpt#g" "$OUT/04-ps-dies.txt"

# Chapter 6: the allreduce lab under mpirun (Open MPI refuses root unless
# told; the book says so, the shown command leaves it out). Three ranks on two
# cores need --oversubscribe; their last lines come in any order.
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
L6=build/labs/06-allreduce/allreduce
if [ -x "$L6" ]; then
    show 06-two-ranks "mpirun -np 2 $L6 --max_examples 2048 --batch_size 128 --train_steps 30 --log_every 10"
    show 06-ring-three "mpirun --oversubscribe -np 3 $L6 --max_examples 2048 --batch_size 96 --train_steps 20 --log_every 10 --allreduce ring"
    show 06-bad-batch "mpirun -np 2 $L6 --batch_size 33"
else
    echo "book-outputs: no $L6 (needs mpicc: apt-get install libopenmpi-dev openmpi-bin); chapter 6's outputs kept"
fi

# Chapter 7: the splits from one seed (their losses equal the reference's),
# a split's idle time and bytes from its trace, two replicas on four devices.
L7=build/labs/07-model-parallel/model_parallel
R7=build/labs/07-model-parallel/trace_report
FOUR='POCL_DEVICES="pthread pthread pthread pthread" POCL_MAX_PTHREAD_COUNT=2'
Q7="--max_examples 256 --batch_size 32 --train_steps 5 --log_every 1"
show 07-none "$TWO $L7 --split none $Q7"
show 07-layers "$TWO $L7 --split layers $Q7"
show 07-pipeline "$TWO $L7 --split layers --micro_batches 4 $Q7"
show 07-replicas "$FOUR $L7 --replicas 2 --micro_batches 2 $Q7"
show 07-idle "$TWO $L7 --split layers $Q7 --trace $SCRATCH/t.json > /dev/null && $R7 $SCRATCH/t.json --micro_batches 1"
show 07-columns "$TWO $L7 --split columns $Q7 --trace $SCRATCH/t.json > /dev/null && $R7 $SCRATCH/t.json | tail -n 1"
show 07-rows "$TWO $L7 --split rows $Q7 --trace $SCRATCH/t.json > /dev/null && $R7 $SCRATCH/t.json | tail -n 1"
sed -i "s#$SCRATCH/t.json#trace.json#g" "$OUT/07-idle.txt" "$OUT/07-columns.txt" "$OUT/07-rows.txt"

# Chapter 5
show 05-gpu "$L1 --device /gpu:0 --max_examples 1024 --batch_size 128 --train_steps 8 --log_every 4"
show 05-cpu "$L1 --device /cpu:0 --max_examples 1024 --batch_size 128 --train_steps 8 --log_every 4"
# the table of the last `make bench` of the last `make bench` (minutes; run it by hand first).
if [ -f build/bench/results.txt ]; then
    { echo '$ make bench'; cat build/bench/results.txt; } > "$OUT/05-bench.txt"
    echo "book-outputs: $OUT/05-bench.txt (from build/bench/results.txt)"
    if grep -q "ch7: pipeline" build/bench/results.txt; then
        { echo '$ make bench | grep -A 1 "ch7: pipeline"'; grep -A 1 "ch7: pipeline" build/bench/results.txt; } > "$OUT/07-bench.txt"
        echo "book-outputs: $OUT/07-bench.txt (from build/bench/results.txt)"
    fi
else
    echo "book-outputs: no build/bench/results.txt: run \`make bench\` to refresh $OUT/05-bench.txt"
fi
