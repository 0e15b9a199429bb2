/* variables.c: get_variable, initializers, the global step.
 * A variable is a node whose value the session keeps across steps; its
 * initializer is an Assign from a fill or random node placed on the host of
 * the variable's task. get_variable consults the variable scope's reuse. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"

#define FL_NAME_LEN 256

fl_initializer fl_zeros_initializer(void) { return (fl_initializer){.kind = FL_INIT_ZEROS}; }

fl_initializer fl_constant_initializer(float value)
{
    return (fl_initializer){.kind = FL_INIT_CONSTANT, .value = value};
}

fl_initializer fl_random_uniform_initializer(float minval, float maxval, uint64_t seed)
{
    return (fl_initializer){.kind = FL_INIT_RANDOM_UNIFORM, .minval = minval, .maxval = maxval,
                            .seed = seed};
}

fl_initializer fl_truncated_normal_initializer(float mean, float stddev, uint64_t seed)
{
    return (fl_initializer){.kind = FL_INIT_TRUNCATED_NORMAL, .mean = mean, .stddev = stddev,
                            .seed = seed};
}

fl_initializer fl_glorot_uniform_initializer(uint64_t seed)
{
    return (fl_initializer){.kind = FL_INIT_GLOROT_UNIFORM, .seed = seed};
}

/* Glorot & Bengio: limit = sqrt(6 / (fan_in + fan_out)); a conv filter
 * [KH,KW,Cin,Cout] has fan_in = KH*KW*Cin and fan_out = KH*KW*Cout. */
static float glorot_limit(fl_shape shape)
{
    double fan_in = 1, fan_out = 1;
    if (shape.rank == 1) {
        fan_in = fan_out = shape.dims[0];
    } else if (shape.rank >= 2) {
        double receptive = 1;
        for (int i = 0; i < shape.rank - 2; i++)
            receptive *= shape.dims[i];
        fan_in = shape.dims[shape.rank - 2] * receptive;
        fan_out = shape.dims[shape.rank - 1] * receptive;
    }
    return (float)sqrt(6.0 / (fan_in + fan_out > 0 ? fan_in + fan_out : 1));
}

static fl_node *initial_value(fl_graph *g, const char *var_name, fl_dtype dtype, fl_shape shape,
                              fl_initializer init)
{
    char name[FL_NAME_LEN + 32];
    snprintf(name, sizeof name, "%s/Initializer", var_name);
    fl_node_spec spec = {.name = name, .dtype = dtype, .exact_name = true};
    spec.attrs.shape = shape;
    spec.attrs.seed = init.seed ? init.seed : fl_graph_next_op_seed(g);
    switch (init.kind) {
    case FL_INIT_ZEROS:
    case FL_INIT_CONSTANT:
        spec.op = FL_OP_FILL;
        spec.attrs.value = init.kind == FL_INIT_ZEROS ? 0.0f : init.value;
        break;
    case FL_INIT_RANDOM_UNIFORM:
    case FL_INIT_GLOROT_UNIFORM:
        spec.op = FL_OP_RANDOM_UNIFORM;
        spec.attrs.minval = init.kind == FL_INIT_GLOROT_UNIFORM ? -glorot_limit(shape) : init.minval;
        spec.attrs.maxval = init.kind == FL_INIT_GLOROT_UNIFORM ? glorot_limit(shape) : init.maxval;
        break;
    case FL_INIT_TRUNCATED_NORMAL:
        spec.op = FL_OP_TRUNCATED_NORMAL;
        spec.attrs.mean_value = init.mean;
        spec.attrs.stddev = init.stddev;
        break;
    default:
        return fl_graph_fail(g, var_name, "unknown initializer kind %d", (int)init.kind);
    }
    if (dtype == FL_INT32 && spec.op != FL_OP_FILL)
        return fl_graph_fail(g, var_name, "an int32 variable takes a zeros or constant initializer");
    return fl_add_node(g, &spec);
}

/* Initial values are made on a host CPU and copied to the variable's
 * device: random numbers come from one generator. A variable of another
 * task (a ps, chapter 3) gets its value from the process that runs the
 * initializer, on that process's own /cpu:0: a ps holds values, it does not
 * compute them. */
static int push_initializer_device(fl_graph *g, const fl_node *var)
{
    fl_device_name d;
    bool on_a_task = var->device[0] && fl_parse_device(var->device, &d, NULL, 0) == 0 &&
                     (d.job[0] || d.task >= 0);
    return fl_device_scope_push(g, on_a_task || !var->device[0] ? "" : "/cpu:0");
}

fl_node *fl_create_variable(fl_graph *g, const char *full_name, fl_dtype dtype, fl_shape shape,
                            fl_initializer init, bool trainable)
{
    for (int i = 0; i < shape.rank; i++)
        if (shape.dims[i] < 0)
            return fl_graph_fail(g, full_name, "a variable's shape must be fully known");
    fl_node_spec spec = {.op = FL_OP_VARIABLE, .name = full_name, .dtype = dtype, .exact_name = true};
    spec.attrs.shape = shape;
    fl_node *var = fl_add_node(g, &spec);
    if (!var || push_initializer_device(g, var) != 0)
        return NULL;
    fl_node *value = initial_value(g, full_name, dtype, shape, init);
    fl_device_pop(g);
    char assign_name[FL_NAME_LEN + 32];
    snprintf(assign_name, sizeof assign_name, "%s/Assign", full_name);
    fl_node *inputs[2] = {var, value};
    fl_node_spec assign = {.op = FL_OP_ASSIGN, .name = assign_name, .inputs = inputs, .ninputs = 2,
                           .dtype = dtype, .exact_name = true};
    if (fl_device_scope_push_colocated(g, var) != 0)
        return NULL;
    var->initializer = fl_add_node(g, &assign);
    fl_device_pop(g);
    if (!var->initializer)
        return NULL;
    var->trainable = trainable;
    fl_graph_register_variable(g, var);
    return var;
}

static fl_node *reuse_existing(fl_graph *g, fl_node *var, fl_dtype dtype, fl_shape shape)
{
    char want[64], have[64];
    if (var->dtype != dtype || !fl_shape_equal(var->shape, shape))
        return fl_graph_fail(g, var->name, "asked for %s %s but the existing variable is %s %s",
                             fl_dtype_name(dtype), fl_shape_format(shape, want, sizeof want),
                             fl_dtype_name(var->dtype), fl_shape_format(var->shape, have, sizeof have));
    return var;
}

fl_node *fl_get_variable_typed(fl_graph *g, const char *name, fl_dtype dtype, fl_shape shape,
                               fl_initializer init, bool trainable)
{
    if (!g || fl_graph_failed(g))
        return NULL;
    if (!name || !name[0])
        return fl_graph_fail(g, "get_variable", "a variable needs a name");
    char full[FL_NAME_LEN];
    fl_variable_scope_name(g, name, full, sizeof full);
    fl_reuse reuse = fl_variable_scope_reuse(g);
    fl_node *existing = fl_graph_find_variable(g, full);
    if (existing && reuse == FL_REUSE_INHERIT)
        return fl_graph_fail(g, full, "variable already exists; to share it, open its variable scope "
                                      "with FL_REUSE (or FL_AUTO_REUSE)");
    if (existing)
        return reuse_existing(g, existing, dtype, shape);
    if (reuse == FL_REUSE)
        return fl_graph_fail(g, full, "variable does not exist, and the variable scope has FL_REUSE; "
                                      "create it first in a scope without reuse, or use FL_AUTO_REUSE");
    return fl_create_variable(g, full, dtype, shape, init, trainable);
}

fl_node *fl_get_variable(fl_graph *g, const char *name, fl_shape shape, fl_initializer init)
{
    return fl_get_variable_typed(g, name, FL_FLOAT32, shape, init, true);
}

fl_node *fl_get_or_create_global_step(fl_graph *g)
{
    if (!g || fl_graph_failed(g))
        return NULL;
    fl_node *step = fl_graph_find_variable(g, "global_step");
    if (step)
        return step;
    return fl_create_variable(g, "global_step", FL_INT32, fl_shape_make(0), fl_zeros_initializer(), false);
}

static int list_variables(const fl_graph *g, fl_node **out, int max, bool trainable_only)
{
    int count = 0;
    for (int i = 0; i < fl_graph_variable_count(g); i++) {
        fl_node *v = fl_graph_variable(g, i);
        if (trainable_only && !v->trainable)
            continue;
        if (out && count < max)
            out[count] = v;
        count++;
    }
    return count;
}

int fl_trainable_variables(const fl_graph *g, fl_node **out, int max)
{
    return list_variables(g, out, max, true);
}

int fl_global_variables(const fl_graph *g, fl_node **out, int max)
{
    return list_variables(g, out, max, false);
}

fl_node *fl_global_variables_initializer(fl_graph *g)
{
    int n = fl_global_variables(g, NULL, 0);
    fl_node *inits[n ? n : 1];
    for (int i = 0; i < n; i++)
        inits[i] = fl_graph_variable(g, i)->initializer;
    return fl_group(g, inits, n, "init");
}
