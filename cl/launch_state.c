/* launch_state.c: launchers that make values and write variables: Fill, the
 * random initializers, Assign, AssignAdd and the optimizer updates
 * (optimizers.cl). Random numbers are drawn on the host with src/random.c
 * and copied in, so every device starts from the very same weights. */
#include <stdlib.h>
#include <string.h>

#include "launch.h"

FL_CL_OP(fl_cl_fill)
{
    (void)in;
    (void)ctx;
    uint32_t pattern;
    if (out->dtype == FL_INT32) {
        int32_t v = (int32_t)n->attrs.value;
        memcpy(&pattern, &v, sizeof pattern);
    } else {
        memcpy(&pattern, &n->attrs.value, sizeof pattern);
    }
    return fl_cl_fill_bytes(d, out->data, pattern, fl_tensor_bytes(out));
}

/* A blocking write: the host values are freed as soon as it returns, and
 * initializers run once, so waiting costs nothing that matters. */
static int write_host_values(fl_cl_device *d, fl_tensor *out, float *values)
{
    size_t bytes = fl_tensor_bytes(out);
    cl_int err = bytes ? clEnqueueWriteBuffer(d->queue, fl_cl_buffer(out), CL_TRUE, 0, bytes,
                                              values, 0, NULL, NULL)
                       : CL_SUCCESS;
    free(values);
    return err == CL_SUCCESS ? 0 : fl_cl_fail("clEnqueueWriteBuffer", err);
}

FL_CL_OP(fl_cl_random_uniform)
{
    (void)in;
    int64_t count = fl_shape_size(out->shape);
    float *values = fl_xmalloc((size_t)(count ? count : 1) * sizeof *values);
    fl_fill_random_uniform(values, count, n->attrs.minval, n->attrs.maxval,
                           fl_mix_seed(ctx->seed, n->attrs.seed));
    return write_host_values(d, out, values);
}

FL_CL_OP(fl_cl_truncated_normal)
{
    (void)in;
    int64_t count = fl_shape_size(out->shape);
    float *values = fl_xmalloc((size_t)(count ? count : 1) * sizeof *values);
    fl_fill_truncated_normal(values, count, n->attrs.mean_value, n->attrs.stddev,
                             fl_mix_seed(ctx->seed, n->attrs.seed));
    return write_host_values(d, out, values);
}

/* The output is the variable (in[0]) itself: write it in place. */
FL_CL_OP(fl_cl_assign)
{
    (void)n;
    (void)out;
    (void)ctx;
    return fl_cl_copy(d, in[1]->data, in[0]->data, fl_tensor_bytes(in[0]));
}

FL_CL_OP(fl_cl_assign_add)
{
    (void)n;
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, in[0]->dtype == FL_INT32 ? K_ACCUMULATE_INT : K_ACCUMULATE_FLOAT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_int(&c, count);
    return fl_cl_run(&c, (size_t)count);
}

/* Each work-item of the optimizer kernels updates a run of the device's
 * chunk of elements (cl/optimizers.cl); the kernels take it last. */
static int run_update(fl_cl_call *c, int count)
{
    fl_cl_int(c, c->d->chunk);
    return fl_cl_run_chunks(c, (size_t)count);
}

FL_CL_OP(fl_cl_apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_APPLY_GRADIENT_DESCENT);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    fl_cl_float(&c, n->attrs.learning_rate);
    fl_cl_int(&c, count);
    return run_update(&c, count);
}

/* Inputs: var, accum, grad. */
FL_CL_OP(fl_cl_apply_momentum)
{
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_APPLY_MOMENTUM);
    for (int i = 0; i < 3; i++)
        fl_cl_mem(&c, in[i]->data);
    fl_cl_float(&c, n->attrs.learning_rate);
    fl_cl_float(&c, n->attrs.momentum);
    fl_cl_int(&c, n->attrs.use_nesterov);
    fl_cl_int(&c, count);
    return run_update(&c, count);
}

/* Adam's kernel on one variable: var, m, v, the beta powers, grad. */
static int adam_update(fl_cl_device *d, const fl_node *n, void *const tensors[6], int count)
{
    fl_cl_call c = fl_cl_begin(d, K_APPLY_ADAM);
    for (int i = 0; i < 6; i++)
        fl_cl_mem(&c, tensors[i]);
    fl_cl_float(&c, n->attrs.learning_rate);
    fl_cl_float(&c, n->attrs.beta1);
    fl_cl_float(&c, n->attrs.beta2);
    fl_cl_float(&c, n->attrs.epsilon);
    fl_cl_int(&c, count);
    return run_update(&c, count);
}

/* Inputs: var, m, v, beta1_power, beta2_power, grad. */
FL_CL_OP(fl_cl_apply_adam)
{
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    void *tensors[6];
    for (int i = 0; i < 6; i++)
        tensors[i] = in[i]->data;
    return adam_update(d, n, tensors, count);
}

/* MultiApplyAdam (src/ops_fused.c): var, m, v of each variable, the beta
 * powers, each gradient. A loop of Adam's kernel, one enqueue per variable:
 * an in-order queue runs them back to back, and OpenCL C passes no table of
 * buffers to make them one kernel. */
FL_CL_OP(fl_cl_multi_apply_adam)
{
    (void)out;
    (void)ctx;
    int variables = fl_multi_adam_count(n), powers = 3 * variables;
    for (int k = 0; k < variables; k++) {
        int count = fl_cl_count(in[3 * k]);
        if (count < 0)
            return -1;
        void *tensors[6] = {in[3 * k]->data, in[3 * k + 1]->data, in[3 * k + 2]->data, in[powers]->data,
                            in[powers + 1]->data, in[powers + 2 + k]->data};
        if (adam_update(d, n, tensors, count) != 0)
            return -1;
    }
    return 0;
}

/* ---- the fused updates: an update of the towers' mean (src/ops_fused.c) ---- */

/* The gradient's parts and divisor (cl/optimizers.cl's GRADIENT_PARTS);
 * parts past the last repeat the first, never read. */
static void gradient_parts(fl_cl_call *c, const fl_node *n, fl_tensor *const *in)
{
    int before = fl_update_inputs_before_gradient(n->op), nparts = n->ninputs - before - 1;
    for (int k = 0; k < FL_FUSED_MEAN_PARTS; k++)
        fl_cl_mem(c, in[before + (k < nparts ? k : 0)]->data);
    fl_cl_int(c, nparts);
    fl_cl_mem(c, in[n->ninputs - 1]->data);
}

/* Inputs: var, then the parts and the divisor. */
FL_CL_OP(fl_cl_fused_apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_FUSED_APPLY_GRADIENT_DESCENT);
    fl_cl_mem(&c, in[0]->data);
    gradient_parts(&c, n, in);
    fl_cl_float(&c, n->attrs.learning_rate);
    fl_cl_int(&c, count);
    return run_update(&c, count);
}

/* Inputs: var, accum, then the parts and the divisor. */
FL_CL_OP(fl_cl_fused_apply_momentum)
{
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_FUSED_APPLY_MOMENTUM);
    fl_cl_mem(&c, in[0]->data);
    fl_cl_mem(&c, in[1]->data);
    gradient_parts(&c, n, in);
    fl_cl_float(&c, n->attrs.learning_rate);
    fl_cl_float(&c, n->attrs.momentum);
    fl_cl_int(&c, n->attrs.use_nesterov);
    fl_cl_int(&c, count);
    return run_update(&c, count);
}

/* Inputs: var, m, v, beta1_power, beta2_power, then the parts and the divisor. */
FL_CL_OP(fl_cl_fused_apply_adam)
{
    (void)out;
    (void)ctx;
    int count = fl_cl_count(in[0]);
    if (count < 0)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_FUSED_APPLY_ADAM);
    for (int i = 0; i < 5; i++)
        fl_cl_mem(&c, in[i]->data);
    gradient_parts(&c, n, in);
    fl_cl_float(&c, n->attrs.learning_rate);
    fl_cl_float(&c, n->attrs.beta1);
    fl_cl_float(&c, n->attrs.beta2);
    fl_cl_float(&c, n->attrs.epsilon);
    fl_cl_int(&c, count);
    return run_update(&c, count);
}
