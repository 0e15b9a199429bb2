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
    /* The lab's trace at a batch of 128 (make figures-07, M = 1), each
     * layer's update included: the convolutions' stage is the slower. */
    const op_time measured[] = {
        {"/gpu:0", "micro_batch_0/model/stage_0/conv_1/Conv2D", 0, 20.0},
        {"/gpu:0", "micro_batch_0/gradients/model/stage_0/conv_1/Conv2D_grad/Conv2DBackpropFilter", 300, 36.4},
        {"/gpu:0", "micro_batch_0/model/stage_0/conv_2/Conv2D", 20, 52.0},
        {"/gpu:0", "micro_batch_0/gradients/model/stage_0/conv_2/Conv2D_grad/Conv2DBackpropInput", 210, 45.1},
        {"/gpu:0", "micro_batch_0/gradients/model/stage_0/conv_2/Conv2D_grad/Conv2DBackpropFilter", 255, 42.0},
        {"/gpu:1", "micro_batch_0/model/stage_1/dense_1/MatMul", 75, 30.0},
        {"/gpu:1", "micro_batch_0/gradients/model/stage_1/dense_1/MatMul_grad/MatMul", 110, 26.5},
        {"/gpu:1", "micro_batch_0/gradients/model/stage_1/dense_1/MatMul_grad/MatMul_1", 137, 27.0},
        {"/gpu:1", "train/dense_1/ApplyAdam", 165, 40.6},
        {"/gpu:1", "micro_batch_0/model/stage_1/dense_2/MatMul", 105, 0.5},
        {"/gpu:1", "train/dense_2/ApplyAdam", 206, 7.6},
    };
    expect(measured, 11, 2, "conv_1 56.4 ms, conv_2 139.1 ms, dense_1 124.1 ms, dense_2 8.1 ms");
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
