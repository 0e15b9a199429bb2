/* bench_cluster.c: chapters 3, 4 and 6 beside chapter 2 in `make bench`, on
 * the same two CPUs (bench_cores.h): 1 ps + 2 workers (async, sync, and
 * over TLS) and 2 allreduce processes (summing through their shared memory,
 * and with MPI_Allreduce), one single-thread PoCL device per worker or
 * process, against two towers sharing a pool of two threads; the same 128
 * images per worker, process or tower per step. Each round alternates the
 * ranks and the towers, then runs the clusters; rows print ranges over rounds. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench_allreduce.h"
#include "bench_cluster.h"
#include "bench_cores.h"
#include "bench_csv.h"
#include "bench_table.h"
#include "bench_tls.h"

#define LAB03 "build/labs/03-between-graph/between_graph"
#define LAUNCHER "build/labs/tools/launch_cluster"

/* A cluster of chapter 3 through the launcher: the sum over workers of each
 * one's median images/sec (its first two progress lines skipped: warm-up),
 * and the median MB a worker moved per step. The launcher's own lines are
 * read too, so they stay out of the table; a failure's is printed as a note. */
static double run_workers_images_per_second(const char *command, int workers, double *mb_per_step)
{
    char with_launcher[1024], failure[512] = "";
    snprintf(with_launcher, sizeof with_launcher, "%s 2>&1", command);
    FILE *p = popen(with_launcher, "r");
    if (!p)
        return NAN;
    enum { MAX_LINES = 256 };
    static double v[8][MAX_LINES], mb[8 * MAX_LINES];
    int n[8] = {0}, seen[8] = {0}, nmb = 0;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        int task;
        long step, global;
        double loss, ips, moved;
        if (strncmp(line, "launch_cluster: ", 16) == 0 && strstr(line, "failed") && !failure[0])
            snprintf(failure, sizeof failure, "%.*s", (int)strcspn(line, "\n"), line);
        const char *at = strstr(line, "worker ");
        if (at && sscanf(at, "worker %d: step %ld, global step %ld, loss %lf (%lf images/sec, %lf MB", &task, &step,
                         &global, &loss, &ips, &moved) == 6 && task >= 0 && task < workers && seen[task]++ >= 2 &&
            n[task] < MAX_LINES) {
            v[task][n[task]++] = ips;
            mb[nmb++] = moved;
        }
    }
    int status = pclose(p);
    double total = 0;
    for (int k = 0; k < workers; k++)
        total += n[k] ? median(v[k], n[k]) : NAN;
    *mb_per_step = nmb ? median(mb, nmb) : NAN;
    if (status != 0)
        note("a chapter 3 cluster failed: %s", failure[0] ? failure : "the launcher exited non-zero");
    return status == 0 ? total : NAN;
}

/* Every configuration's figure, round by round. */
typedef struct {
    double towers[BENCH_MAX_ROUNDS], ps[BENCH_MAX_ROUNDS], tls[BENCH_MAX_ROUNDS], sync[BENCH_MAX_ROUNDS];
    double allreduce[BENCH_MAX_ROUNDS], allreduce_mpi[BENCH_MAX_ROUNDS], mb[BENCH_MAX_ROUNDS];
    double plain_cpu[BENCH_MAX_ROUNDS], tls_cpu[BENCH_MAX_ROUNDS]; /* CPU seconds of every task of one run */
} cluster_rounds;

/* The commands, for `steps` measured steps of a tower, worker or process
 * after two of warm-up. Async workers share the global step, so the cluster
 * runs twice as many global steps: about steps + 2 each. */
typedef struct {
    char cluster[512], sync_cluster[512], allreduce[512], allreduce_mpi[512];
    const char *tls; /* NULL: no certificates, no TLS row */
} cluster_commands;

static void make_commands(cluster_commands *c, int steps)
{
    const char *cluster = ON_POCL_ONE LAUNCHER " --ps 1 --workers 2 --grace 30 --deadline 300 -- " LAB03
                          " --log_every 1 --batch_size 128 --seed 1";
    snprintf(c->cluster, sizeof c->cluster, "%s --train_steps %d", cluster, 2 * (steps + 2));
    snprintf(c->sync_cluster, sizeof c->sync_cluster, "%s --train_steps %d --sync_replicas true", cluster, steps + 2);
    /* one machine's strongest: the ranks sum where their buffers lie; MPI_Allreduce beside it */
    snprintf(c->allreduce, sizeof c->allreduce, ALLREDUCE_TWO_PROCESSES " --allreduce shared");
    snprintf(c->allreduce_mpi, sizeof c->allreduce_mpi, ALLREDUCE_TWO_PROCESSES);
    c->tls = bench_tls_command(c->cluster); /* chapter 4's securing a cluster */
}

/* Chapter 6's ranks (on MPI_Allreduce, then on their shared memory) and
 * the towers run alternated (run_alternated), so the ratio the ch6 target
 * judges has its sides side by side; chapter 3's clusters run just after. */
static void measure_round(const cluster_commands *c, bool allreduce, int steps, cluster_rounds *m, int r)
{
    double sync_mb, tls_mb, figures[3];
    const char *sides[3] = {c->allreduce_mpi, c->allreduce, TWO_TOWERS};
    if (allreduce) {
        run_alternated(sides, 3, steps, figures);
    } else {
        run_alternated(&sides[2], 1, steps, &figures[2]);
        figures[0] = figures[1] = NAN;
    }
    m->allreduce_mpi[r] = figures[0];
    m->allreduce[r] = figures[1];
    m->towers[r] = figures[2];
    double cpu_before = bench_children_cpu_seconds();
    m->ps[r] = run_workers_images_per_second(c->cluster, 2, &m->mb[r]);
    double cpu_between = bench_children_cpu_seconds();
    m->tls[r] = c->tls ? run_workers_images_per_second(c->tls, 2, &tls_mb) : NAN;
    m->plain_cpu[r] = cpu_between - cpu_before;
    m->tls_cpu[r] = bench_children_cpu_seconds() - cpu_between;
    m->sync[r] = run_workers_images_per_second(c->sync_cluster, 2, &sync_mb);
}

static void print_rows(const cluster_rounds *m, int rounds, bool tls, bool allreduce)
{
    row_rounds("scaling", "ch3: 1 ps + 2 workers vs ch2's 2 towers", "ch3 1 ps + 2 workers", "img/s", m->ps,
               m->towers, rounds, "2 towers");
    target_line("ch3 target: 1 ps + 2 workers at least 0.9x in-graph", m->ps, m->towers, rounds, 0.9);
    if (tls) {
        row_rounds("scaling", "ch4: 1 ps + 2 workers, secret + TLS 1.3 vs plain", "ch4 1 ps + 2 workers over TLS",
                   "img/s", m->tls, m->ps, rounds, "plain TCP");
        bench_tls_note(m->tls, m->ps, m->tls_cpu, m->plain_cpu, rounds);
    }
    row_rounds("scaling", "ch4: 1 ps + 2 sync workers vs ch2's 2 towers", "ch4 2 sync workers", "img/s", m->sync,
               m->towers, rounds, "2 towers");
    row_rounds("scaling", "ch4: 2 sync workers vs 2 async workers", "ch4 2 sync workers", "img/s", m->sync, m->ps,
               rounds, "async");
    if (allreduce) {
        row_rounds("scaling", "ch6: allreduce, 2 processes vs ch2's towers", "ch6 allreduce 2 processes", "img/s",
                   m->allreduce, m->towers, rounds, "2 towers");
        row_rounds("scaling", "ch6: allreduce, 2 processes vs ch3's 1 ps + 2", "ch6 allreduce 2 processes", "img/s",
                   m->allreduce, m->ps, rounds, "1 ps + 2");
        row_rounds("scaling", "ch6: shared memory vs MPI_Allreduce, 2 processes", "ch6 allreduce 2 processes", "img/s",
                   m->allreduce, m->allreduce_mpi, rounds, "MPI_Allreduce");
        target_line("ch6 target: allreduce at least 0.95x in-graph", m->allreduce, m->towers, rounds, 0.95);
    } else {
        note("%s", "no mpirun or no chapter 6 lab (apt-get install libopenmpi-dev openmpi-bin): ch6 rows skipped");
    }
}

void bench_between_graph(void)
{
    int rounds = bench_rounds(), steps = bench_steps();
    bool allreduce = allreduce_bench_ready();
    cluster_commands c;
    make_commands(&c, steps);
    cluster_rounds m;
    for (int r = 0; r < rounds; r++)
        measure_round(&c, allreduce, steps, &m, r);
    printf("  ch3/ch4/ch6 rows: %d rounds, each running allreduce on MPI_Allreduce, allreduce on shared memory and 2 "
           "towers alternated (%d runs each of %d steps after 2 of warm-up), then the clusters for %d steps (async "
           "workers: about that many each); cores: CPUs %s for every side; 2 towers: 1 process, one PoCL pool of 2 threads for both "
           "devices; 1 ps + 2 workers: 3 processes, 1 PoCL thread each; allreduce: 2 processes, 1 PoCL thread each, "
           "summing through their shared memory (--allreduce shared) unless the row says MPI_Allreduce\n", rounds,
           bench_alternations(), steps / bench_alternations(), steps, bench_cores());
    print_rows(&m, rounds, c.tls != NULL, allreduce);
    double mb_copy[BENCH_MAX_ROUNDS];
    memcpy(mb_copy, m.mb, sizeof mb_copy);
    double mb = median(mb_copy, rounds);
    printf("  ch3: each worker moves %.1f MB per step (receives the variables, sends the gradients)\n", mb);
    bench_csv_row(bench_results, "scaling", "ch3 bytes moved per worker step", "ch3 MB per step", "MB", mb, NULL, NAN);
}
