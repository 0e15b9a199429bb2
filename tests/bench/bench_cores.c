/* bench_cores.c: the scaling rows' configurations get the same two cores
 * (bench_cores.h): the bench's own CPU affinity, inherited by each command,
 * and one OpenBLAS or OpenMP thread per process. */
#define _GNU_SOURCE /* sched_setaffinity and the CPU_* macros */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_cores.h"

static char chosen[32] = "all";
static char one_core[48] = ""; /* "taskset -c 0": the first of the two */

const char *bench_cores(void) { return chosen; }

const char *bench_one_core(void) { return one_core; }

const char *bench_same_cores(void)
{
    cpu_set_t allowed, two;
    CPU_ZERO(&two);
    int found[2], n = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
            if (CPU_ISSET(cpu, &allowed)) {
                CPU_SET(cpu, &two);
                found[n++] = cpu;
            }
    /* every process of every configuration: one BLAS thread, no pool that spins on the other core */
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("OMP_NUM_THREADS", "1", 1);
    if (n < 2 || sched_setaffinity(0, sizeof two, &two) != 0) {
        printf("  note: fewer than two CPUs to pin to: the scaling rows run on all CPUs, unpinned\n");
        return chosen;
    }
    snprintf(chosen, sizeof chosen, "%d,%d", found[0], found[1]);
    snprintf(one_core, sizeof one_core, "taskset -c %d", found[0]);
    printf("cores: every scaling row runs on CPUs %s (the bench's affinity, which each command inherits: as "
           "taskset -c %s), with OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 in every process\n",
           chosen, chosen);
    return chosen;
}
