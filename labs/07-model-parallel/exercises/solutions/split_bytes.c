/* split_bytes.c: a reference solution of exercise split-bytes. */
#include "exercises.h"

/* Forward: x [batch,in] to the second device, its half of y [batch,out/2]
 * back. Backward: the gradient of that half of y out, the gradient of x back. */
long my_column_split_bytes(int batch, int in, int out)
{
    return 2L * 4 * batch * (in + out / 2);
}

/* Forward: half of x [batch,in/2] out, the partial product [batch,out]
 * back. Backward: the gradient of the product out, of half of x back. */
long my_row_split_bytes(int batch, int in, int out)
{
    return 2L * 4 * batch * (in / 2 + out);
}

/* Forward: x to the second device, its partial product [batch,out] back;
 * its half of the hidden layer never leaves it. Backward: the same sizes. */
long my_pair_split_bytes(int batch, int in, int hidden, int out)
{
    (void)hidden;
    return 2L * 4 * batch * (in + out);
}

/* The first layer by columns, then the second by rows, each on its own. */
long my_separate_split_bytes(int batch, int in, int hidden, int out)
{
    return my_column_split_bytes(batch, in, hidden) + my_row_split_bytes(batch, hidden, out);
}
