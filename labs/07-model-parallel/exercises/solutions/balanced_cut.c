/* balanced_cut.c: a reference solution of exercise balanced-cut. */
#include <string.h>

#include "exercises.h"

#define MAX_LAYERS 64

int my_balanced_cut(const op_time *ops, int nops, const char *const *layers, int nlayers)
{
    double ms[MAX_LAYERS] = {0}, total = 0;
    for (int i = 0; i < nops; i++)
        for (int l = 0; l < nlayers && l < MAX_LAYERS; l++)
            if (strstr(ops[i].name, layers[l])) {
                ms[l] += ops[i].duration_ms;
                total += ops[i].duration_ms;
                break;
            }
    int best = 1;
    double best_slower = -1, first = 0;
    for (int k = 1; k < nlayers; k++) {
        first += ms[k - 1]; /* layers [0,k) on the first device */
        double slower = first > total - first ? first : total - first;
        if (best_slower < 0 || slower < best_slower) {
            best_slower = slower;
            best = k;
        }
    }
    return best;
}
