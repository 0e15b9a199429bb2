/* ps_sync.c: one accumulator per variable, keyed by its name. It holds the
 * step its contributions are for, how many came, and their sum (gradients)
 * or the last one (values, deltas). A variable that has run step s accepts
 * nothing older than s + 1, which is how a slow worker's gradient is known
 * to be stale without the ps knowing anything about workers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name_table.h"
#include "ps_sync.h"

typedef struct {
    uint64_t step;      /* the step the held contributions are for */
    uint64_t next_step; /* the oldest step still accepted, once one has run */
    bool has_run;
    int count;
    fl_tensor *held;    /* the gradients' sum, or the last value or delta */
} accumulator;

struct fl_ps_sync {
    fl_ps_store *store;
    fl_name_table by_name; /* variable name -> accumulator */
    accumulator **all;
    int count, capacity;
    uint64_t last_step;
};

fl_ps_sync *fl_ps_sync_new(fl_ps_store *store)
{
    fl_ps_sync *s = fl_xcalloc(1, sizeof *s);
    s->store = store;
    fl_name_table_init(&s->by_name);
    return s;
}

void fl_ps_sync_free(fl_ps_sync *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->count; i++) {
        fl_tensor_free(s->all[i]->held);
        free(s->all[i]);
    }
    free(s->all);
    fl_name_table_free(&s->by_name);
    free(s);
}

uint64_t fl_ps_sync_last_step(const fl_ps_sync *s) { return s->last_step; }

void fl_ps_sync_reset(fl_ps_sync *s, const char *name)
{
    accumulator *a = fl_name_table_get(&s->by_name, name);
    if (a)
        a->count = 0, a->has_run = false;
}

/* The step an update from a worker that does not know it yet counts toward. */
static uint64_t step_now(const accumulator *a, const fl_tensor *var)
{
    if (var->dtype == FL_INT32 && fl_shape_size(var->shape) == 1) {
        int32_t v = *(const int32_t *)var->data;
        return v < 0 ? 0 : (uint64_t)v;
    }
    return a->count > 0 ? a->step : a->has_run ? a->next_step : 0;
}

static accumulator *accumulator_for(fl_ps_sync *s, const char *name, const fl_tensor *like)
{
    accumulator *a = fl_name_table_get(&s->by_name, name);
    if (a)
        return a;
    a = fl_xcalloc(1, sizeof *a);
    a->held = fl_tensor_new(like->dtype, like->shape);
    if (s->count == s->capacity) {
        s->capacity = s->capacity ? 2 * s->capacity : 16;
        s->all = fl_xrealloc(s->all, (size_t)s->capacity * sizeof *s->all);
    }
    s->all[s->count++] = a;
    fl_name_table_put(&s->by_name, name, a);
    return a;
}

/* Whether an update for `step` comes too late. Contributions held for an
 * older step that never completed (their workers died or moved on) give
 * way to the newer step. */
static bool is_stale(accumulator *a, uint64_t step)
{
    if (a->has_run && step < a->next_step)
        return true;
    if (a->count > 0 && step < a->step)
        return true;
    if (a->count > 0 && step > a->step)
        a->count = 0;
    return false;
}

static void hold(accumulator *a, fl_op_kind op, const fl_tensor *arg)
{
    size_t bytes = fl_tensor_bytes(arg);
    bool is_gradient = op != FL_OP_ASSIGN && op != FL_OP_ASSIGN_ADD;
    if (!is_gradient || a->count == 0) {
        memcpy(a->held->data, arg->data, bytes);
        return;
    }
    float *sum = a->held->data;
    const float *g = arg->data;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        sum[i] += g[i];
}

/* Runs the update with what is held: the mean gradient, or the last value. */
static int run_held(fl_ps_sync *s, accumulator *a, fl_op_kind op, const fl_attrs *attrs, const char *const *vars,
                    int nvars, fl_status *st)
{
    if (op != FL_OP_ASSIGN && op != FL_OP_ASSIGN_ADD) {
        float *mean = a->held->data;
        size_t n = fl_tensor_bytes(a->held) / sizeof(float);
        for (size_t i = 0; i < n; i++)
            mean[i] /= (float)a->count;
    }
    int rc = fl_ps_store_run(s->store, op, attrs, vars, nvars, a->held, st);
    a->next_step = a->step + 1;
    a->has_run = true;
    a->count = 0;
    return rc;
}

int fl_ps_sync_update(fl_ps_sync *s, fl_op_kind op, const fl_attrs *attrs, const char *const *vars, int nvars,
                      const fl_tensor *arg, const fl_wire_sync *sync, fl_wire_sync_outcome *outcome, fl_status *st)
{
    const fl_tensor *var = fl_ps_store_get(s->store, vars[0]);
    if (!var) {
        fl_status_set(st, FL_FAILED_PRECONDITION,
                      "variable %s has no value on this ps yet (the chief initialises variables)", vars[0]);
        return -1;
    }
    if (var->dtype != arg->dtype || !fl_shape_equal(var->shape, arg->shape)) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "%s: the value sent for %s does not match the variable's dtype or shape",
                      fl_op_def_of(op)->type, vars[0]);
        return -1;
    }
    accumulator *a = accumulator_for(s, vars[0], var);
    uint64_t step = sync->step == FL_WIRE_STEP_UNKNOWN ? step_now(a, var) : sync->step;
    s->last_step = step;
    if (is_stale(a, step)) {
        *outcome = FL_WIRE_SYNC_DROPPED;
        return 0;
    }
    hold(a, op, arg);
    if (a->count++ == 0)
        a->step = step;
    if (a->count < (int)sync->replicas) {
        *outcome = FL_WIRE_SYNC_ACCUMULATED;
        return 0;
    }
    *outcome = FL_WIRE_SYNC_APPLIED;
    return run_held(s, a, op, attrs, vars, nvars, st);
}
