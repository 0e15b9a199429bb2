/* check_schedule_memory.c: checks my_held_bytes (exercise schedule-memory)
 * on the pipeline of the chapter: 2 and 4 stages, M = 1, 4 and 8, GPipe
 * and 1F1B, with and without recomputation. */
#include <math.h>

#include "exercises.h"
#include "../../common/check.h"

static void expect(int stages, int m, int s, bool one_f_one_b, bool recompute, double want)
{
    const double activations = 10e6, input = 1e6;
    double got = my_held_bytes(stages, m, s, activations, input, one_f_one_b, recompute);
    if (got == -1)
        fail("not implemented yet (my_held_bytes returned -1)");
    if (fabs(got - want) > 1)
        fail("%s%s, S = %d, M = %d: stage %d holds %.0f bytes (10 MB of activations a micro-batch, 1 MB of them "
             "its input), not %.0f", one_f_one_b ? "1F1B" : "GPipe", recompute ? " with recomputation" : "",
             stages, m, s, want, got);
}

int main(void)
{
    check_start("schedule-memory", "labs/07-model-parallel/exercises/schedule_memory.c");
    expect(2, 8, 0, false, false, 80e6); /* GPipe: all 8 */
    expect(2, 1, 0, false, false, 10e6);
    expect(2, 8, 0, true, false, 20e6); /* 1F1B: S - s */
    expect(2, 8, 1, true, false, 10e6);
    expect(4, 8, 0, true, false, 40e6);
    expect(4, 8, 2, true, false, 20e6);
    expect(4, 2, 0, true, false, 20e6); /* fewer micro-batches than stages */
    expect(2, 8, 0, false, true, 8e6 + 9e6); /* recomputed: 8 inputs and one micro-batch rebuilt */
    expect(2, 8, 0, true, true, 2e6 + 9e6);
    pass();
}
