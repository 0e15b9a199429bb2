#!/bin/sh
# links_sweep.sh: chapter 6's measurement on real links (make figures-links).
# For each link rate (RATES) and N = 1, 2, 4 workers (WORKERS) it trains the
# labs' CNN, 128 images per worker per step, every task in a network
# namespace of its own on a link shaped to the rate (launch_cluster --links):
#   ps1      1 ps + N asynchronous workers (between_graph, chapter 3's way);
#   ps2      2 ps + N asynchronous workers, dense_1's kernel in 2 parts
#            (--partitions 2) spread by the greedy setter;
#   ring     N MPI ranks summing with the lab's ring (allreduce --allreduce ring);
#   ingraph  one in_graph_towers client driving flowlab_server tasks (1 ps + N
#            workers); the client runs on this machine's side of the bridge.
# Each point runs RUNS times with STEPS steps and once with SHORT steps: the
# images/sec are the runs' stats: lines (from the second step on), added
# up; the bytes per step of the busiest link and of worker 0's (rank 0's)
# are the difference of the launcher's counts (the larger direction) between
# a long run and the short one, over the steps between, so that the setup
# and the test pass drop out. Beside each point, cost_model's prediction
# from one worker's compute (ring at N = 1, which talks to no one), the
# rate, ALPHA_US and this machine's CORES; in-graph's with --ps_sync, its
# pull waiting for every push.
# Needs root and iproute2 (launch_cluster --links), Open MPI for ring.
# usage: links_sweep.sh BUILD OUT   (RATES="1gbit 10gbit" WORKERS="1 2 4"
#   RUNS=3 STEPS=12 SHORT=4 ALPHA_US=50 CORES=nproc by default)
set -eu
build=$1 out=$2
rates=${RATES:-1gbit 10gbit} workers_list=${WORKERS:-1 2 4} runs=${RUNS:-3}
steps=${STEPS:-12} short=${SHORT:-4} alpha_us=${ALPHA_US:-50} cores=${CORES:-$(nproc)}
batch=128
launcher=$build/labs/tools/launch_cluster
between=$build/labs/03-between-graph/between_graph
ring=$build/labs/06-allreduce/allreduce
towers=$build/labs/02-in-graph-towers/in_graph_towers
server=$build/labs/tools/flowlab_server
model=$build/labs/tools/cost_model
common="--log_every 1000 --max_examples 512 --seed 1 --print_stats"
csv=$out/links.csv
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
for program in "$launcher" "$between" "$ring" "$towers" "$server" "$model"; do
    [ -x "$program" ] || { echo "links_sweep: $program is not built (make labs)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "links_sweep: needs root, for launch_cluster --links (try sudo)" >&2; exit 2; }

# run CONFIG RATE N STEPS LOG: one training run, its output in LOG.
run() {
    case $1 in
    ps1 | ps2)
        shards=${1#ps}
        "$launcher" --links "$2" --ps "$shards" --workers "$3" --deadline 300 -- "$between" \
            --ps_strategy greedy --partitions "$shards" --batch_size $batch --train_steps "$4" $common >"$5" 2>&1 ;;
    ring)
        "$launcher" --links "$2" --mpi_ranks "$3" --deadline 300 -- "$ring" --allreduce ring \
            --batch_size $(($3 * batch)) --train_steps "$4" $common >"$5" 2>&1 ;;
    ingraph)
        secret=$out/cluster_secret
        (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$secret")
        "$launcher" --links "$2" --ps 1 --workers "$3" --deadline 300 --cluster_secret_file "$secret" \
            -- "$server" >"$5.servers" 2>&1 &
        servers=$!
        hosts=""
        for i in $(seq 300); do # up to 30 s for the launcher to say the tasks' addresses
            hosts=$(sed -n 's/^launch_cluster: the tasks get //p' "$5.servers")
            [ -n "$hosts" ] && break
            kill -0 $servers 2>/dev/null || break
            sleep 0.1
        done
        [ -n "$hosts" ] || { echo "links_sweep: the servers never said their addresses; see $5.servers" >&2; return 1; }
        # shellcheck disable=SC2086 # two flags, split on purpose
        # A client that fails says no goodbye: its servers are stopped, not left to their deadline.
        POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 "$towers" $hosts --cluster_secret_file "$secret" \
            --batch_size $(($3 * batch)) --train_steps "$4" $common >"$5" 2>&1 || kill $servers
        wait $servers || true
        cat "$5.servers" >>"$5" ;;
    esac
}

# images LOG: the images/sec of a run, its stats: lines added up.
images() { grep 'stats:' "$1" | sed 's/.*images_per_sec=//' | awk '{s += $1} END {printf "%.1f", s}'; }

# link LOG [NAME]: "MB name" of task NAME's link, the larger direction, or
# of the link that carried the most when no NAME is given.
link() {
    awk -v want="${2:-}" '/^launch_cluster: .* link carried/ { name = $2; sub(/.s$/, "", name)
         m = $5 > $9 ? $5 : $9; if ((want == "" || name == want) && m > best) { best = m; who = name } }
         END { printf "%.2f %s\n", best, who }' "$1"
}

# per_step BASE [NAME]: the MB per step of that link, long runs' median less the short run's.
per_step() {
    long=$(for r in $(seq "$runs"); do link "$1.$r" "${2:-}" | cut -d' ' -f1; done | median_low_high | cut -d' ' -f1)
    awk -v l="$long" -v s="$(link "$1.short" "${2:-}" | cut -d' ' -f1)" -v d=$((steps - short)) \
        'BEGIN {printf "%.2f", (l - s) / d}'
}

# median_low_high: "median low high" of the numbers on stdin.
median_low_high() { sort -g | awk 'NF {v[++n] = $1} END {printf "%.1f %.1f %.1f", v[int((n + 1) / 2)], v[1], v[n]}'; }

# predict CONFIG RATE N COMPUTE_MS: cost_model's step seconds at N.
predict() {
    shards=1 column=5 sync="" # the CSV's ps_step_ms
    [ "$1" = ps2 ] && shards=2
    [ "$1" = ring ] && column=2
    [ "$1" = ingraph ] && sync=--ps_sync
    "$model" --compute_ms "$4" --bandwidth_gbit "$(gbit "$2")" --alpha_us "$alpha_us" --ps_shards $shards \
        --cores "$cores" --max_workers 4 --csv "$out/model.csv" $sync >/dev/null
    awk -F, -v n="$3" -v c=$column 'NR > 1 && $1 == n {printf "%.3f", $c / 1000}' "$out/model.csv"
}
gbit() { echo "$1" | sed 's/gbit$//; s/mbit$/e-3/'; }

echo "rate,config,workers,images_per_sec,images_low,images_high,step_s,worker_link_mb_per_step,busiest_link,busiest_mb_per_step,link_s_per_step,predicted_step_s,predicted_images_per_sec,error_percent" >"$csv"
for rate in $rates; do
    for n in $workers_list; do
        for config in ring ps1 ps2 ingraph; do
            echo "links_sweep: $config, N = $n, $rate links: $runs runs of $steps steps and one of $short" >&2
            base=$out/$config-$rate-$n
            for r in $(seq "$runs"); do run $config "$rate" "$n" "$steps" "$base.$r" || true; done
            run $config "$rate" "$n" "$short" "$base.short" || true
            set -- $(for r in $(seq "$runs"); do images "$base.$r"; echo; done | median_low_high)
            median=$1 low=$2 high=$3
            if [ "$(echo "$median" | cut -d. -f1)" = 0 ]; then
                echo "links_sweep: $config at N = $n on $rate printed no stats: line; see $base.1" >&2
                continue
            fi
            step_s=$(awk -v i="$median" -v n="$n" -v b=$batch 'BEGIN {printf "%.4f", n * b / i}')
            # A step is one of every worker's: asynchronous workers share the global
            # steps, so N of them make one. A worker's link each way: its lab's count of
            # what it moved (both ways) halved; in-graph's client counts its own, so
            # worker 0's link is read instead.
            rounds=1
            case $config in ps*) rounds=$n ;; esac
            worker_mb=$(grep -m1 "^[a-z0-9]*: stats:\|^mpirun: stats:" "$base.1" | sed 's/.*bytes_per_step=\([0-9]*\).*/\1/' |
                        awk '{printf "%.2f", $1 / 2e6}')
            [ "$config" = ingraph ] && worker_mb=$(per_step "$base" worker0)
            link=$(link "$base.1" | cut -d' ' -f2)
            per_step=$(per_step "$base" | awk -v k=$rounds '{printf "%.2f", $1 * k}')
            link_s=$(awk -v mb="$per_step" -v g="$(gbit "$rate")" 'BEGIN {printf "%.4f", mb * 8e6 / (g * 1e9)}')
            [ "$config" = ring ] && [ "$n" = 1 ] && compute_ms=$(awk -v s="$step_s" 'BEGIN {printf "%.2f", s * 1000}')
            predicted=$(predict $config "$rate" "$n" "${compute_ms:-100}")
            awk -v r="$rate" -v c=$config -v n="$n" -v m="$median" -v lo="$low" -v hi="$high" -v s="$step_s" \
                -v w="$worker_mb" -v l="$link" -v p="$per_step" -v ls="$link_s" -v q="$predicted" -v b=$batch \
                'BEGIN {printf "%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,%.1f\n", r, c, n, m, lo, hi, s, w, l, p, ls, q,
                        n * b / q, 100 * (q - s) / s}' >>"$csv"
            tail -1 "$csv" >&2
        done
    done
done
echo "links_sweep: wrote $csv" >&2
