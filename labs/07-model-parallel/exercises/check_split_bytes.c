/* check_split_bytes.c: checks my_column_split_bytes and my_row_split_bytes
 * (exercise split-bytes) against the bytes the lab's trace measured for
 * dense_1 (x [N,3136] times W [3136,1024]) and against a small layer; then
 * Megatron's pair (--split pair, measured too) against the two layers split
 * alone. */
#include "exercises.h"
#include "../../common/check.h"

static void expect(const char *split, long got, long want, int batch, int in, int out)
{
    if (got == 0)
        fail("not implemented yet (my_%s_split_bytes returned 0)", split);
    if (got != want)
        fail("a %s split of [%d,%d] x [%d,%d] moves %ld bytes per step (measured), not %ld", split,
             batch, in, in, out, want, got);
}

int main(void)
{
    check_start("split-bytes", "labs/07-model-parallel/exercises/split_bytes.c");
    /* trace_report on `model_parallel --split columns|rows --batch_size 32` */
    expect("column", my_column_split_bytes(32, 3136, 1024), 933888, 32, 3136, 1024);
    expect("row", my_row_split_bytes(32, 3136, 1024), 663552, 32, 3136, 1024);
    /* at batch 128: 3.74 MB and 2.65 MB */
    expect("column", my_column_split_bytes(128, 3136, 1024), 3735552, 128, 3136, 1024);
    expect("row", my_row_split_bytes(128, 3136, 1024), 2654208, 128, 3136, 1024);
    /* a wide layer: the row split moves more */
    expect("column", my_column_split_bytes(8, 100, 4000), 134400, 8, 100, 4000);
    expect("row", my_row_split_bytes(8, 100, 4000), 259200, 8, 100, 4000);
    /* trace_report on `model_parallel --split pair --batch_size 32`: dense_1 by columns, dense_2 by rows */
    long pair = my_pair_split_bytes(32, 3136, 1024, 10);
    if (pair == 0)
        fail("not implemented yet (my_pair_split_bytes returned 0)");
    if (pair != 805376)
        fail("Megatron's pair of [32,3136] x [3136,1024] and [1024,10] moves 805376 bytes per step (measured), "
             "not %ld", pair);
    long separate = my_separate_split_bytes(32, 3136, 1024, 10);
    if (separate != 933888 + 2L * 4 * 32 * (512 + 10))
        fail("the same two layers split alone (dense_1 by columns, then dense_2 by rows) move %ld bytes per "
             "step, not %ld: the hidden layer's halves meet, then part again", 933888 + 2L * 4 * 32 * (512 + 10),
             separate);
    if (my_pair_split_bytes(8, 100, 4000, 50) != 2L * 4 * 8 * 150 || my_separate_split_bytes(8, 100, 4000, 50) !=
        2L * 4 * 8 * (100 + 2000 + 2000 + 50))
        fail("a pair of [8,100] x [100,4000] and [4000,50] moves %ld bytes, each layer alone %ld", 2L * 4 * 8 * 150,
             2L * 4 * 8 * (100 + 4000 + 50));
    pass();
}
