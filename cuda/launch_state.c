/* launch_state.c: CUDA launchers for values, variables and optimizer
 * updates: Fill, the random initializers (made on the host), Assign,
 * AssignAdd and the Apply* rules of optimizers.cu, in place (MultiApplyAdam's
 * variables in one launch). */
#include "launch.h"

static int64_t count_of(const fl_tensor *t) { return fl_shape_size(t->shape); }

/* ---- making values and writing variables ---- */

FL_CUDA_OP(fl_cuda_fill)
{
    (void)in;
    (void)ctx;
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    if (out->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_fill_i32(out->data, count, (int32_t)n->attrs.value, d->stream));
    return fl_cuda_launched(fl_cu_fill_f32(out->data, count, n->attrs.value, d->stream));
}

/* Random initializers are made on the host by src/random.c, so /gpu:0 gets
 * the very numbers /cpu:0 would (truncated normal redraws sequentially and
 * does not split across threads). They run once, at initialization. The
 * host buffer must outlive the asynchronous copy: it is freed at wait(). */
static int random_values(fl_cuda_device *d, const fl_node *n, fl_tensor *out, const fl_kernel_ctx *ctx)
{
    int64_t count = count_of(out);
    if (count == 0)
        return 0;
    float *host = fl_xmalloc((size_t)count * sizeof *host);
    uint64_t seed = fl_mix_seed(ctx->seed, n->attrs.seed);
    if (n->op == FL_OP_RANDOM_UNIFORM)
        fl_fill_random_uniform(host, count, n->attrs.minval, n->attrs.maxval, seed);
    else
        fl_fill_truncated_normal(host, count, n->attrs.mean_value, n->attrs.stddev, seed);
    fl_cuda_free_after_wait(d, host);
    return fl_cuda_check(cudaMemcpyAsync(out->data, host, (size_t)count * sizeof *host,
                                         cudaMemcpyHostToDevice, d->stream), "cudaMemcpyAsync");
}

FL_CUDA_OP(fl_cuda_random_uniform) { (void)in; return random_values(d, n, out, ctx); }
FL_CUDA_OP(fl_cuda_truncated_normal) { (void)in; return random_values(d, n, out, ctx); }

/* Assign's output is the variable itself (the executor aliases it). */
FL_CUDA_OP(fl_cuda_assign)
{
    (void)n;
    (void)out;
    (void)ctx;
    return fl_cuda_copy(d, in[0]->data, in[1]->data, fl_tensor_bytes(in[0]));
}

FL_CUDA_OP(fl_cuda_assign_add)
{
    (void)n;
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    if (in[0]->dtype == FL_INT32)
        return fl_cuda_launched(fl_cu_accumulate_i32(in[0]->data, in[1]->data, count, d->stream));
    return fl_cuda_launched(fl_cu_accumulate_f32(in[0]->data, in[1]->data, count, d->stream));
}

/* ---- optimizer updates, in place on the variable and its slots ---- */

FL_CUDA_OP(fl_cuda_apply_gradient_descent)
{
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_apply_gradient_descent(in[0]->data, in[1]->data,
                                                         n->attrs.learning_rate, count, d->stream));
}

FL_CUDA_OP(fl_cuda_apply_momentum)
{
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    return fl_cuda_launched(fl_cu_apply_momentum(in[0]->data, in[1]->data, in[2]->data,
                                                 n->attrs.learning_rate, n->attrs.momentum,
                                                 n->attrs.use_nesterov, count, d->stream));
}

/* Inputs: var, m, v, beta1_power, beta2_power, grad. */
FL_CUDA_OP(fl_cuda_apply_adam)
{
    (void)out;
    (void)ctx;
    int64_t count = count_of(in[0]);
    if (count == 0)
        return 0;
    const fl_attrs *a = &n->attrs;
    return fl_cuda_launched(fl_cu_apply_adam(in[0]->data, in[1]->data, in[2]->data, in[3]->data,
                                             in[4]->data, in[5]->data, a->learning_rate, a->beta1,
                                             a->beta2, a->epsilon, count, d->stream));
}

_Static_assert(FL_CU_ADAM_TABLE == FL_MULTI_ADAM_VARIABLES, "a group of the fusion pass fits one table");

/* MultiApplyAdam (src/ops_fused.c): var, m, v of each variable, the beta
 * powers, each gradient; one launch for them all, its table by value. */
FL_CUDA_OP(fl_cuda_multi_apply_adam)
{
    (void)out;
    (void)ctx;
    int variables = fl_multi_adam_count(n), powers = 3 * variables;
    fl_cu_adam_table t = {.count = 0};
    for (int k = 0; k < variables && k < FL_CU_ADAM_TABLE; k++) {
        int64_t count = count_of(in[3 * k]);
        if (count == 0)
            continue;
        t.tensor[t.count] = (fl_cu_adam_tensor){in[3 * k]->data, in[3 * k + 1]->data, in[3 * k + 2]->data,
                                                in[powers + 2 + k]->data};
        t.start[t.count++] = t.total;
        t.total += count;
    }
    if (t.total == 0)
        return 0;
    const fl_attrs *a = &n->attrs;
    return fl_cuda_launched(fl_cu_multi_apply_adam(&t, in[powers]->data, in[powers + 1]->data, a->learning_rate,
                                                   a->beta1, a->beta2, a->epsilon, d->stream));
}
