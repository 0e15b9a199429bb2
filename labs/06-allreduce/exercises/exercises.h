/* exercises.h: the functions chapter 6's exercises ask you to write, the
 * ones that need no MPI (step_time.c, fusion_threshold.c, ps_shards.c); the
 * other, reduce_scatter.c, is declared in ring_exercise.h. Edit the file,
 * then run `make exercises` from the top of the repository. Reference answers are in
 * solutions/, but try first. */
#ifndef LAB06_EXERCISES_H
#define LAB06_EXERCISES_H

#include <stdbool.h>

/* Chapter 1's model: the bytes of its eight gradients, summed every step. */
#define MODEL_GRADIENT_BYTES 13098536.0

/* Exercise step-time: the alpha-beta model of chapter 6. Sending a message of
 * b bytes from one worker to another takes alpha + b / bandwidth seconds;
 * every worker can send and receive at once, at full bandwidth each way. */
typedef struct {
    double compute_s; /* one worker's forward and backward pass on its own batch */
    double bytes;     /* the gradients summed each step */
    double alpha_s;   /* the latency of one message */
    double bandwidth; /* bytes per second of one link, each way */
    bool overlap;     /* true: the sums run during the backward pass (as
                         Horovod's do), so a step is as long as the longer of
                         the two; false: the sums start after it, and add up */
} step_model;

/* Seconds a ring allreduce of `bytes` takes among `workers` workers: 2(N-1)
 * messages one after another, each carrying 1/N of the buffer. 0 for one
 * worker, which has nothing to sum. */
double my_ring_allreduce_seconds(int workers, double bytes, double alpha_s, double bandwidth);

/* Seconds a step's exchange takes through `shards` parameter servers (each
 * holding 1/shards of the variables): every worker pushes its gradients,
 * then pulls the variables (bytes one way, then bytes the other, on its own
 * link) while each ps receives and sends workers * bytes / shards on its
 * link, both ways at once; the slower link decides, plus one message's
 * latency for the push and one for the pull. */
double my_ps_seconds(int workers, int shards, double bytes, double alpha_s, double bandwidth);

/* Seconds one step of synchronous training takes with `workers` workers and
 * the ring (each worker computing on its own batch of the same size). */
double my_step_seconds(const step_model *m, int workers);

/* Exercise fusion-threshold: your measurements of the lab with 2 processes
 * at several --fusion_threshold values. For each threshold, at least 3 runs
 * of the same command, each run's images/sec from the same progress line,
 * and the loss that line printed. */
#define FUSION_MAX_RUNS 8
typedef struct {
    long threshold;                         /* --fusion_threshold, bytes */
    double loss;                            /* the loss on the line you read */
    int runs;                               /* how many runs you made */
    double images_per_sec[FUSION_MAX_RUNS]; /* one per run */
} fusion_measurement;

extern const fusion_measurement my_measurements[];
extern const int my_measurement_count;
/* The threshold your measurements say is fastest, and whether they say it
 * clearly (see fusion_threshold.c for what "clearly" means here). */
extern const long my_best_threshold;
extern const bool my_best_is_clear;

/* Exercise ps-shards: one parameter server's link on slow links. N
 * asynchronous workers, each computing compute_s a step on its own batch,
 * pull and push `bytes` through M ps shards; a link carries `bandwidth`
 * bytes a second each way. */

/* Images a second: N * batch / (compute_s + max(2 bytes, N bytes / M) / bandwidth). */
double my_ps_images_per_sec(int workers, int shards, int batch, double compute_s, double bytes, double bandwidth);

/* The N at which one ps stops scaling: the first N whose next worker adds
 * less than half of what one worker alone makes. */
int my_ps_stops_scaling(double compute_s, double bytes, double bandwidth);

/* The fewest shards with which `workers` workers make at least 90% of the
 * images they would make with a shard each (where no ps link is busier
 * than a worker's). */
int my_shards_needed(int workers, double compute_s, double bytes, double bandwidth);

#endif
