/* check_balanced_cut.c: checks my_balanced_cut (exercise balanced-cut) on
 * per-op times like those trace_report prints for the lab's layers, where
 * one layer holds several ops and the ops come in no particular order. */
#include "exercises.h"
#include "../../common/check.h"

static const char *const layers[] = {"conv_1", "conv_2", "dense_1", "dense_2"};

static void expect(const op_time *ops, int nops, int want, const char *what)
{
    int got = my_balanced_cut(ops, nops, layers, 4);
    if (got == 0)
        fail("not implemented yet (my_balanced_cut returned 0)");
    if (got != want)
        fail("%s: the cut after %d layer%s leaves the slower stage slower than the cut after %d",
             what, got, got == 1 ? "" : "s", want);
}

int main(void)
{
    check_start("balanced-cut", "labs/07-model-parallel/exercises/balanced_cut.c");
    /* The lab's trace on two single-core devices: conv_2 dominates. */
    const op_time measured[] = {
        {"/gpu:0", "micro_batch_0/model/stage_0/conv_1/Conv2D", 0, 9.0},
        {"/gpu:0", "micro_batch_0/gradients/model/stage_0/conv_1/Conv2D_grad/Conv2DBackpropFilter", 80, 4.6},
        {"/gpu:0", "micro_batch_0/model/stage_0/conv_2/Conv2D", 9, 20.5},
        {"/gpu:0", "micro_batch_0/gradients/model/stage_0/conv_2/Conv2D_grad/Conv2DBackpropInput", 60, 28.0},
        {"/gpu:1", "micro_batch_0/model/stage_1/dense_1/MatMul", 30, 9.0},
        {"/gpu:1", "micro_batch_0/gradients/model/stage_1/dense_1/MatMul_grad/MatMul", 45, 17.3},
        {"/gpu:1", "micro_batch_0/model/stage_1/dense_2/MatMul", 40, 0.1},
    };
    expect(measured, 7, 2, "conv_1 13.6 ms, conv_2 48.5 ms, dense_1 26.3 ms, dense_2 0.1 ms");
    const op_time heavy_head[] = {
        {"/gpu:0", "dense_2/MatMul", 0, 1}, {"/gpu:0", "conv_1/Conv2D", 0, 50},
        {"/gpu:0", "dense_1/MatMul", 0, 20}, {"/gpu:0", "conv_2/Conv2D", 0, 20},
    };
    expect(heavy_head, 4, 1, "conv_1 50 ms, the rest 41 ms");
    const op_time heavy_tail[] = {
        {"/gpu:0", "conv_1/a", 0, 10}, {"/gpu:0", "conv_2/a", 0, 10}, {"/gpu:0", "dense_1/a", 0, 10},
        {"/gpu:0", "dense_2/a", 0, 25}, {"/gpu:0", "dense_2/b", 0, 25},
    };
    expect(heavy_tail, 5, 3, "dense_2 50 ms in two ops, the rest 30 ms");
    pass();
}
