/* bench_pipeline.h: chapter 7's row of `make bench`: GPipe's pipeline of 4
 * micro-batches against the unpipelined split by layers, on two
 * single-core PoCL devices, with the bubble formula's prediction beside it. */
#ifndef FLOWLAB_BENCH_PIPELINE_H
#define FLOWLAB_BENCH_PIPELINE_H

/* Prints the row and the target line (met or MISSED); bench.c calls it
 * where two PoCL devices exist. */
void bench_pipeline(void);

#endif
