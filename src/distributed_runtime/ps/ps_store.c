/* ps_store.c: a parameter server's variables and the state ops that change
 * them. A variable is a host tensor under its full name; an update runs the
 * host backend's kernel on a node made for the occasion, so the formulas
 * are the very ones /cpu:0 uses (and the accelerators are tested against).
 * A value lent to a reply on its way out is copied before it is changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "name_table.h"
#include "ps_store.h"

/* One buffer of a variable's value, and the replies still sending it. */
struct fl_ps_loan {
    fl_tensor *tensor;
    int loans;
    bool replaced; /* no longer the variable's value: freed with its last loan */
};

typedef struct {
    fl_ps_loan *now; /* the value */
} ps_variable;

struct fl_ps_store {
    fl_name_table by_name;  /* name -> ps_variable * */
    ps_variable **values;   /* every variable, for freeing and counting */
    int count, capacity;
    size_t bytes;
};

static fl_ps_loan *new_value(fl_tensor *tensor)
{
    fl_ps_loan *v = fl_xcalloc(1, sizeof *v);
    v->tensor = tensor;
    return v;
}

/* A value nobody sends is freed now; one still lent, with its last loan. */
static void drop_value(fl_ps_loan *v)
{
    if (v->loans > 0) {
        v->replaced = true;
        return;
    }
    fl_tensor_free(v->tensor);
    free(v);
}

fl_ps_store *fl_ps_store_new(void)
{
    fl_ps_store *s = fl_xcalloc(1, sizeof *s);
    fl_name_table_init(&s->by_name);
    return s;
}

void fl_ps_store_free(fl_ps_store *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->count; i++) {
        drop_value(s->values[i]->now);
        free(s->values[i]);
    }
    free(s->values);
    fl_name_table_free(&s->by_name);
    free(s);
}

const fl_tensor *fl_ps_store_get(const fl_ps_store *s, const char *name)
{
    const ps_variable *v = fl_name_table_get(&s->by_name, name);
    return v ? v->now->tensor : NULL;
}

fl_ps_loan *fl_ps_store_lend(fl_ps_store *s, const char *name, const fl_tensor **value)
{
    ps_variable *v = fl_name_table_get(&s->by_name, name);
    if (!v)
        return NULL;
    v->now->loans++;
    *value = v->now->tensor;
    return v->now;
}

void fl_ps_store_give_back(fl_ps_loan *loan)
{
    if (--loan->loans == 0 && loan->replaced)
        drop_value(loan);
}

/* The variable's value, ready to be changed in place: a copy when the
 * value is lent to a reply still on its way. */
static fl_tensor *value_to_change(ps_variable *v)
{
    if (v->now->loans == 0)
        return v->now->tensor;
    const fl_tensor *lent = v->now->tensor;
    fl_tensor *copy = fl_tensor_new(lent->dtype, lent->shape);
    memcpy(copy->data, lent->data, fl_tensor_bytes(lent));
    drop_value(v->now);
    v->now = new_value(copy);
    return copy;
}

int fl_ps_store_count(const fl_ps_store *s) { return s->count; }
size_t fl_ps_store_bytes(const fl_ps_store *s) { return s->bytes; }

/* Whether value fits variable `name`: same dtype and shape. */
static int check_fits(const char *name, const fl_tensor *have, const fl_tensor *value, fl_status *st)
{
    if (have->dtype == value->dtype && fl_shape_equal(have->shape, value->shape))
        return 0;
    char want_shape[64], got_shape[64];
    fl_status_set(st, FL_INVALID_ARGUMENT, "variable %s is %s %s; the value sent is %s %s", name,
                  fl_dtype_name(have->dtype), fl_shape_format(have->shape, want_shape, sizeof want_shape),
                  fl_dtype_name(value->dtype), fl_shape_format(value->shape, got_shape, sizeof got_shape));
    return -1;
}

int fl_ps_store_init(fl_ps_store *s, const char *name, const fl_tensor *value, fl_status *st)
{
    const fl_tensor *have = fl_ps_store_get(s, name);
    if (have)
        return check_fits(name, have, value, st) ? -1 : 0;
    fl_tensor *copy = fl_tensor_new(value->dtype, value->shape);
    memcpy(copy->data, value->data, fl_tensor_bytes(value));
    if (s->count == s->capacity) {
        s->capacity = s->capacity ? 2 * s->capacity : 16;
        s->values = fl_xrealloc(s->values, (size_t)s->capacity * sizeof *s->values);
    }
    ps_variable *v = fl_xcalloc(1, sizeof *v);
    v->now = new_value(copy);
    s->values[s->count++] = v;
    s->bytes += fl_tensor_bytes(copy);
    fl_name_table_put(&s->by_name, name, v);
    return 1;
}

/* The number of variable inputs each state op the store runs takes. */
static int variable_inputs(fl_op_kind op)
{
    switch (op) {
    case FL_OP_ASSIGN:
    case FL_OP_ASSIGN_ADD:
    case FL_OP_APPLY_GRADIENT_DESCENT:
        return 1;
    case FL_OP_APPLY_MOMENTUM:
        return 2;
    case FL_OP_APPLY_ADAM:
        return 5;
    default:
        return -1;
    }
}

/* A kernel trusts its inputs' sizes: slots must be shaped like their
 * variable, and Adam's beta powers must be float scalars. */
static int check_slots(fl_op_kind op, fl_tensor *const *in, const char *const *vars, int nvars, fl_status *st)
{
    int slots = op == FL_OP_APPLY_ADAM ? 2 : nvars - 1;
    for (int i = 1; i <= slots; i++)
        if (check_fits(vars[i], in[i], in[0], st))
            return -1;
    for (int i = slots + 1; i < nvars; i++) {
        if (in[i]->dtype != FL_FLOAT32 || fl_shape_size(in[i]->shape) != 1) {
            fl_status_set(st, FL_INVALID_ARGUMENT, "%s: %s must be a float32 scalar", fl_op_def_of(op)->type, vars[i]);
            return -1;
        }
    }
    return 0;
}

int fl_ps_store_run(fl_ps_store *s, fl_op_kind op, const fl_attrs *attrs, const char *const *vars,
                    int nvars, const fl_tensor *arg, fl_status *st)
{
    int want = variable_inputs(op);
    if (want < 0 || nvars != want) {
        fl_status_set(st, FL_INVALID_ARGUMENT, "%s is not a state op a parameter server runs with %d variables",
                      fl_op_def_of(op)->type, nvars);
        return -1;
    }
    fl_tensor *in[6];
    ps_variable *v[5];
    for (int i = 0; i < nvars; i++) {
        v[i] = fl_name_table_get(&s->by_name, vars[i]);
        in[i] = v[i] ? v[i]->now->tensor : NULL;
        if (!in[i]) {
            fl_status_set(st, FL_FAILED_PRECONDITION, "%s: variable %s has no value on this ps yet (the chief "
                          "initialises variables; is it running?)", fl_op_def_of(op)->type, vars[i]);
            return -1;
        }
    }
    if (check_slots(op, in, vars, nvars, st) || check_fits(vars[0], in[0], arg, st))
        return -1;
    for (int i = 0; i < nvars; i++)
        in[i] = value_to_change(v[i]);
    in[nvars] = (fl_tensor *)arg; /* kernels only read their last input */
    fl_node node = {.op = op, .name = (char *)vars[0], .dtype = in[0]->dtype, .shape = in[0]->shape,
                    .attrs = *attrs, .ninputs = nvars + 1};
    fl_kernel_ctx ctx = {0};
    if (fl_host_backend.run(NULL, &node, in, in[0], &ctx) != 0) {
        fl_status_set(st, fl_last_error_code(), "%s on %s: %s", fl_op_def_of(op)->type, vars[0], fl_last_error());
        return -1;
    }
    return 0;
}
