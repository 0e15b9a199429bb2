/* balanced_cut.c: exercise balanced-cut. Write my_balanced_cut (see
 * exercises.h).
 *
 * Hints: strstr(ops[i].name, layers[l]) finds an op's layer. Try every cut
 * and keep the one whose slower stage takes the least time.
 *
 * Questions the check cannot ask: (1) For the first table of
 * check_balanced_cut.c (this machine's trace), which cut does your code
 * choose, and what are the two stages' times? (2) With stage times
 * T0 >= T1, a pipeline's step takes at least T0 + T1/M: what speedup over
 * the unpipelined split does this cut allow at any M, and how does that
 * compare with the (S-1)/(M+S-1) formula's, which assumes equal stages?
 * (3) No cut between whole layers does better here. What would a finer cut,
 * inside conv_2, need the lab to do?
 *
 * Check your work: make exercises */
#include "exercises.h"

int my_balanced_cut(const op_time *ops, int nops, const char *const *layers, int nlayers)
{
    (void)ops, (void)nops, (void)layers, (void)nlayers;
    return 0; /* TODO: your code here */
}
