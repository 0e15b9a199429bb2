/* launch_epilogue.c: a fused op's epilogue (bias, then ReLU) as a pass of
 * its own over the product, in place (bias_relu_chunks in
 * elementwise_chunks.cl), for products whose kernel cannot apply it as it
 * stores: CLBlast's GEMMs and im2col convolutions on GPU-type devices.
 * One pass where the unfused graph made two. */
#include "launch.h"

int fl_cl_bias_relu(fl_cl_device *d, void *y, int count, int columns, const fl_cl_epilogue *e)
{
    if (count == 0 || columns <= 0)
        return 0;
    if (!e->bias) { /* Relu alone: relu_chunks reads and writes y in place */
        if (!e->relu)
            return 0;
        fl_cl_call c = fl_cl_begin(d, K_RELU_CHUNKS);
        fl_cl_mem(&c, y);
        fl_cl_mem(&c, y);
        fl_cl_int(&c, count);
        fl_cl_int(&c, d->chunk);
        return fl_cl_run_chunks(&c, (size_t)count);
    }
    fl_cl_call c = fl_cl_begin(d, K_BIAS_RELU_CHUNKS);
    fl_cl_mem(&c, y);
    fl_cl_mem(&c, e->bias);
    fl_cl_int(&c, columns);
    fl_cl_int(&c, e->relu);
    fl_cl_int(&c, count);
    fl_cl_int(&c, d->chunk);
    return fl_cl_run_chunks(&c, (size_t)count);
}
