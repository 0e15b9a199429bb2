/* host_state.c: host kernels that make values and write variables.
 * Fill, the random initializers, Assign and AssignAdd. Assign's output is
 * the variable itself (the executor aliases it), so the kernels write in[0]. */
#include <string.h>

#include "host_kernels.h"

FL_HOST_KERNEL(fl_host_fill)
{
    (void)in;
    (void)ctx;
    int64_t count = fl_shape_size(out->shape);
    if (out->dtype == FL_INT32) {
        int32_t *o = out->data;
        for (int64_t i = 0; i < count; i++)
            o[i] = (int32_t)n->attrs.value;
        return 0;
    }
    float *o = out->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = n->attrs.value;
    return 0;
}

FL_HOST_KERNEL(fl_host_random_uniform)
{
    (void)in;
    fl_fill_random_uniform(out->data, fl_shape_size(out->shape), n->attrs.minval, n->attrs.maxval,
                           fl_mix_seed(ctx->seed, n->attrs.seed));
    return 0;
}

FL_HOST_KERNEL(fl_host_truncated_normal)
{
    (void)in;
    fl_fill_truncated_normal(out->data, fl_shape_size(out->shape), n->attrs.mean_value,
                             n->attrs.stddev, fl_mix_seed(ctx->seed, n->attrs.seed));
    return 0;
}

FL_HOST_KERNEL(fl_host_assign)
{
    (void)n;
    (void)out;
    (void)ctx;
    memcpy(in[0]->data, in[1]->data, fl_tensor_bytes(in[0]));
    return 0;
}

FL_HOST_KERNEL(fl_host_assign_add)
{
    (void)n;
    (void)out;
    (void)ctx;
    int64_t count = fl_shape_size(in[0]->shape);
    if (in[0]->dtype == FL_INT32) {
        int32_t *v = in[0]->data;
        const int32_t *d = in[1]->data;
        for (int64_t i = 0; i < count; i++)
            v[i] += d[i];
        return 0;
    }
    float *v = in[0]->data;
    const float *d = in[1]->data;
    for (int64_t i = 0; i < count; i++)
        v[i] += d[i];
    return 0;
}
