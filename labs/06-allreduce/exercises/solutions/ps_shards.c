/* solutions/ps_shards.c: a reference answer to exercise ps-shards. */
#include "exercises.h"

double my_ps_images_per_sec(int workers, int shards, int batch, double compute_s, double bytes, double bandwidth)
{
    double per_shard = (double)workers * bytes / shards; /* the busiest shard's share */
    double busiest = per_shard > 2 * bytes ? per_shard : 2 * bytes; /* or a worker's push, then pull */
    return workers * (double)batch / (compute_s + busiest / bandwidth);
}

/* The first N whose next worker adds less than half of one worker's images. */
int my_ps_stops_scaling(double compute_s, double bytes, double bandwidth)
{
    double alone = my_ps_images_per_sec(1, 1, 1, compute_s, bytes, bandwidth);
    int n = 1;
    while (my_ps_images_per_sec(n + 1, 1, 1, compute_s, bytes, bandwidth) -
               my_ps_images_per_sec(n, 1, 1, compute_s, bytes, bandwidth) >= alone / 2)
        n++;
    return n;
}

/* The fewest shards that give 90% of the images with shards to spare. */
int my_shards_needed(int workers, double compute_s, double bytes, double bandwidth)
{
    double unlimited = my_ps_images_per_sec(workers, workers, 1, compute_s, bytes, bandwidth);
    int m = 1;
    while (my_ps_images_per_sec(workers, m, 1, compute_s, bytes, bandwidth) < 0.9 * unlimited)
        m++;
    return m;
}
