/* bench_cluster.h: chapters 3, 4 and 6's clusters beside chapter 2's towers
 * in `make bench` (1 ps + 2 workers async, sync and over TLS; 2 allreduce
 * processes), measured in rounds on the same two CPUs. */
#ifndef FLOWLAB_BENCH_CLUSTER_H
#define FLOWLAB_BENCH_CLUSTER_H

/* Prints the rows (ranges over bench_rounds() rounds of bench_steps()
 * steps), the 0.9x targets and the MB a worker moves per step. */
void bench_between_graph(void);

#endif
