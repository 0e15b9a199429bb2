/* bubble.c: a reference solution of exercise bubble. */
#include <string.h>

#include "exercises.h"

double my_bubble(int stages, int micro_batches)
{
    /* each stage works M slots of M + S - 1 and waits S - 1 */
    return (stages - 1.0) / (micro_batches + stages - 1.0);
}

double my_idle_fraction(const op_time *ops, int nops, const char *device)
{
    double first = 0, last = 0, busy = 0;
    for (int i = 0; i < nops; i++) {
        double end = ops[i].start_ms + ops[i].duration_ms;
        first = i == 0 || ops[i].start_ms < first ? ops[i].start_ms : first;
        last = i == 0 || end > last ? end : last;
        if (strcmp(ops[i].device, device) == 0)
            busy += ops[i].duration_ms;
    }
    return last > first ? 1.0 - busy / (last - first) : 0.0;
}
