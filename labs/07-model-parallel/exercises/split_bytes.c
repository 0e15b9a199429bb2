/* split_bytes.c: exercise split-bytes. Write my_column_split_bytes and
 * my_row_split_bytes, then my_pair_split_bytes and my_separate_split_bytes
 * (see exercises.h).
 *
 * Hints: a float32 is 4 bytes. Draw the two devices and the tensors that
 * cross between them in the forward pass; the backward pass sends each
 * one's gradient back.
 *
 * Check your work: make exercises */
#include "exercises.h"

long my_column_split_bytes(int batch, int in, int out)
{
    (void)batch, (void)in, (void)out;
    return 0; /* TODO: your code here */
}

long my_row_split_bytes(int batch, int in, int out)
{
    (void)batch, (void)in, (void)out;
    return 0; /* TODO: your code here */
}

long my_pair_split_bytes(int batch, int in, int hidden, int out)
{
    (void)batch, (void)in, (void)hidden, (void)out;
    return 0; /* TODO: your code here */
}

long my_separate_split_bytes(int batch, int in, int hidden, int out)
{
    (void)batch, (void)in, (void)hidden, (void)out;
    return 0; /* TODO: your code here */
}
