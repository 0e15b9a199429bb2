/* check_fusion_threshold.c: checks exercise fusion-threshold, your table of
 * measured speeds at several --fusion_threshold values, with the rules of
 * fusion_judge.h: the table could be real, and your conclusion follows
 * from it. Whether the numbers were measured, it cannot know. */
#include "exercises.h"
#include "fusion_judge.h"
#include "../../common/check.h"

int main(void)
{
    check_start("fusion-threshold", "labs/06-allreduce/exercises/fusion_threshold.c");
    if (my_measurement_count == 0)
        fail("not implemented yet (my_measurement_count is 0)");
    char why[512];
    if (judge_fusion(my_measurements, my_measurement_count, my_best_threshold, my_best_is_clear, why,
                     sizeof why) != 0)
        fail("%s", why);
    pass();
}
