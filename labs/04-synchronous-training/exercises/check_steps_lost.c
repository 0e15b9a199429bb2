/* check_steps_lost.c: checks my_steps_lost (exercise steps-lost): a ps
 * dies between checkpoints, on one, before the first, with no saver, after
 * a restored start; and arguments that make no sense. */
#include "exercises.h"
#include "../../common/check.h"

static const struct {
    long started_at, save_every, died_at;
    long lost, restored_to; /* lost -1: refused */
} cases[] = {
    {0, 10, 15, 5, 10},    /* between two checkpoints */
    {0, 10, 19, 9, 10},    /* just before the next one: the most it can cost */
    {0, 10, 20, 0, 20},    /* on a checkpoint, saved before the ps died */
    {0, 10, 7, 7, 0},      /* before the first: the chief initialises again */
    {0, 0, 25, 25, 0},     /* no saver at all */
    {35, 10, 52, 7, 45},   /* restored at 35: checkpoints at 45, 55, ... */
    {35, 10, 40, 5, 35},   /* back to the checkpoint training started from */
    {35, 0, 50, 15, 35},   /* restored, then never saved again */
    {0, 100, 250, 50, 200},
    {0, 1, 12, 0, 12},     /* every step saved: nothing lost */
    {0, 10, 0, 0, 0},      /* died before the first step */
    {-1, 10, 5, -1, 0},
    {0, -10, 5, -1, 0},
    {20, 10, 5, -1, 0},    /* died before it started */
};

int main(void)
{
    check_start("steps-lost", "labs/04-synchronous-training/exercises/steps_lost.c");
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        long restored = -7;
        long lost = my_steps_lost(cases[i].started_at, cases[i].save_every, cases[i].died_at, &restored);
        if (lost == -2 && i == 0)
            fail("not implemented yet (my_steps_lost returned -2)");
        if (cases[i].lost < 0) {
            if (lost != -1 || restored != -7)
                fail("started at %ld, saving every %ld, died at %ld makes no sense: return -1 and write nothing "
                     "(you returned %ld%s)", cases[i].started_at, cases[i].save_every, cases[i].died_at, lost,
                     restored != -7 ? " and wrote *restored_to" : "");
            continue;
        }
        if (lost != cases[i].lost || restored != cases[i].restored_to)
            fail("started at global step %ld, saving every %ld steps, the ps died at %ld: training goes on from "
                 "%ld and %ld steps are lost; you said from %ld, %ld lost", cases[i].started_at, cases[i].save_every,
                 cases[i].died_at, cases[i].restored_to, cases[i].lost, restored, lost);
    }
    pass();
}
