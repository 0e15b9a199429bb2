/* bench_replication.h: chapter 3's rows of `make bench`: in-graph
 * replication across tasks against between-graph at N = 2 workers. */
#ifndef FLOWLAB_BENCH_REPLICATION_H
#define FLOWLAB_BENCH_REPLICATION_H

/* Prints the rows and the 0.9x target (issue 36), met or missed; a note instead when
 * the task server (build/labs/tools/flowlab_server) is not built. */
void bench_replication(void);

#endif
