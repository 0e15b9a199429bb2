/* bench_replication.c: chapter 3's rows of `make bench`. The CNN at N = 2
 * workers, two ways on the same two CPUs (bench_cores.h): in-graph
 * replication across tasks (one in_graph_towers client driving
 * flowlab_server tasks: 1 ps, 2 workers) against between-graph replication
 * (1 ps + 2 synchronous workers), the same 128 images per worker per step,
 * one single-thread PoCL device per task and client. Both runs print
 * --print_stats lines, measured from the second step; their images/sec add
 * up. Each round runs both back to back; the rows print ranges. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../loopback.h" /* free ports: other benches and tests may share this machine */
#include "bench_cores.h"
#include "bench_replication.h"
#include "bench_table.h"

#define SERVER "build/labs/tools/flowlab_server"
#define STATS "--log_every 100 --max_examples 2048 --seed 1 --print_stats"

/* The sum of the images_per_sec of every stats: line command prints; NaN
 * when it fails or prints none. */
static double stats_images_per_second(const char *command)
{
    char line[512];
    FILE *p = popen(command, "r");
    if (!p)
        return NAN;
    double total = 0;
    int lines = 0;
    while (fgets(line, sizeof line, p)) {
        const char *at = strstr(line, "stats: ") ? strstr(line, "images_per_sec=") : NULL;
        if (at) {
            total += atof(at + strlen("images_per_sec="));
            lines++;
        }
    }
    int status = pclose(p);
    return status == 0 && lines > 0 ? total : NAN;
}

/* The servers on ports from `port` in the background, then the client;
 * the servers exit once the client has said goodbye. The servers and their
 * client share a secret of this run's (launch_cluster would otherwise make
 * one the client lacks, and the client would be refused). */
static double in_graph_across_tasks(int port, int steps)
{
    char command[1400];
    snprintf(command, sizeof command,
             "secret=build/bench/ch3-cluster-secret; (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' "
             ">$secret); " ON_POCL_ONE "build/labs/tools/launch_cluster --ps 1 --workers 2 --base_port %d "
             "--deadline 300 --cluster_secret_file $secret -- " SERVER " >/dev/null 2>&1 & servers=$!; "
             ON_POCL_ONE "build/labs/02-in-graph-towers/in_graph_towers --ps_hosts 127.0.0.1:%d "
             "--worker_hosts 127.0.0.1:%d,127.0.0.1:%d --cluster_secret_file $secret --batch_size 256 "
             "--train_steps %d " STATS " 2>&1; rc=$?; wait $servers; exit $rc",
             port, port, port + 1, port + 2, steps + 1);
    double images = stats_images_per_second(command);
    if (isnan(images))
        note("%s", "a ch3 in-graph-across-tasks round failed: run its command by hand (tests/bench/bench_replication.c)");
    return images;
}

static double between_graph(int steps)
{
    char command[512];
    snprintf(command, sizeof command, ON_POCL_ONE "build/labs/tools/launch_cluster --ps 1 --workers 2 --deadline 300 "
             "-- build/labs/03-between-graph/between_graph --sync_replicas true --batch_size 128 --train_steps %d "
             STATS " 2>&1", steps + 1);
    return stats_images_per_second(command);
}

void bench_replication(void)
{
    if (access(SERVER, X_OK) != 0) {
        note("%s", "no " SERVER ": the ch3 in-graph-across-tasks rows are skipped");
        return;
    }
    int rounds = bench_rounds(), steps = bench_steps();
    double across_r[BENCH_MAX_ROUNDS], between_r[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        int port = loopback_free_ports(3);
        across_r[r] = in_graph_across_tasks(port ? port : 23700 + 10 * r, steps);
        between_r[r] = between_graph(steps);
    }
    printf("  ch3 in-graph rows: %d rounds of %d steps after 1 of warm-up, both back to back in each; cores: CPUs %s "
           "for both; across tasks: 4 processes (client, ps, 2 workers), between-graph: 3 (ps, 2 workers), 1 PoCL "
           "thread each\n", rounds, steps, bench_cores());
    row_rounds("scaling", "ch3: in-graph across 2 tasks vs 2 sync workers", "ch3 in-graph across 2 tasks", "img/s",
               across_r, between_r, rounds, "between");
    target_line("ch3 target: in-graph across tasks at least 0.9x between-graph at N = 2", across_r, between_r, rounds,
                0.9);
}
