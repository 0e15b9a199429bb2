/* ps_shards.c: exercise ps-shards. From a link's rate, the model's bytes
 * and one worker's compute time, predict where one parameter server stops
 * scaling and how many shards restore it (see exercises.h), in the model
 * chapter 6 holds against its runs on shaped links (make figures-links):
 * a worker pushes, then pulls (2 bytes on its own link, one after the
 * other), while asynchronous workers keep both directions of a ps's link
 * busy at once, so a worker's step takes its compute plus the busier link's,
 *   step(N, M) = compute + max(2 bytes, N * bytes / M) / bandwidth,
 * and N workers make N * batch / step(N, M) images a second.
 *
 * Hints: "stops scaling" and "restores" are defined in exercises.h, and both
 * are found by trying N (or M) = 1, 2, 3, ... in turn.
 *
 * Then predict, before you run the check: chapter 1's 13.1 MB over 1 Gbit/s
 * links (1.25e8 bytes/s) with 85 ms of compute a step. At what N does one
 * ps stop scaling? How many shards do 4 workers need? The check then uses
 * this machine's measured compute (book/figures/ch6-links.csv) and prints
 * your answers beside the measured table.
 *
 * Questions the check cannot ask: (1) the model assumes the shards split the
 * bytes evenly; what does it take for chapter 1's model, whose dense_1
 * kernel holds 98% of them? (2) On 10 Gbit/s links, is this machine's table
 * still limited by the ps's link, or by something else?
 *
 * Check your work: make exercises */
#include "exercises.h"

double my_ps_images_per_sec(int workers, int shards, int batch, double compute_s, double bytes, double bandwidth)
{
    (void)workers, (void)shards, (void)batch, (void)compute_s, (void)bytes, (void)bandwidth;
    return -2; /* TODO: your code here */
}

int my_ps_stops_scaling(double compute_s, double bytes, double bandwidth)
{
    (void)compute_s, (void)bytes, (void)bandwidth;
    return -2; /* TODO: your code here */
}

int my_shards_needed(int workers, double compute_s, double bytes, double bandwidth)
{
    (void)workers, (void)compute_s, (void)bytes, (void)bandwidth;
    return -2; /* TODO: your code here */
}
