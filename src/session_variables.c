/* session_variables.c: a session's variables, seen from outside the run.
 * Which have no value yet (TensorFlow's report_uninitialized_variables),
 * asking the device that holds each: a variable on a ps task has one once
 * any worker (the chief) gave it one, and this session then counts it as
 * initialised too. A worker that is not the chief waits on this before it
 * trains (training/monitored_session.c). And their values, copied off and
 * onto their devices for the saver (session_access.h). */
#include <stdlib.h>

#include "session_internal.h"

/* 1 when var has a value, 0 when not, -1 on error. A session with a
 * master asks the task that holds var (session_master.c). */
static int has_value(fl_session *s, fl_node *var)
{
    if (fl_session_in_client(s))
        return fl_session_master_variable_has_value(s, var);
    if (fl_session_place(s, var) != 0)
        return -1;
    fl_slot *slot = &s->slots[var->id];
    int has = fl_device_variable_has_value(slot->device, var->name, slot->initialized);
    if (has < 0)
        return fl_session_fail(s, "asking %s whether %s has a value: %s", slot->device->name, var->name,
                               fl_last_error());
    if (has && !slot->initialized) { /* another process initialised it: reads may go ahead */
        if (fl_session_ensure_node_buffer(s, var, slot, var->dtype, var->attrs.shape) != 0)
            return -1;
        slot->value = (fl_tensor){.dtype = var->dtype, .shape = var->attrs.shape, .data = slot->buffer};
        slot->initialized = true;
    }
    return has;
}

int fl_session_uninitialized_variables(fl_session *s, const char **names, int max)
{
    if (!s)
        return -1;
    fl_session_grow(s);
    int nvars = fl_global_variables(s->graph, NULL, 0), missing = 0;
    fl_node **vars = fl_xcalloc((size_t)(nvars ? nvars : 1), sizeof *vars);
    fl_global_variables(s->graph, vars, nvars);
    for (int i = 0; i < nvars && missing >= 0; i++) {
        int has = has_value(s, vars[i]);
        if (has < 0)
            missing = -1;
        else if (!has && missing < max && names)
            names[missing++] = vars[i]->name;
        else if (!has)
            missing++;
    }
    free(vars);
    return missing;
}

/* ---- for the saver ---- */

bool fl_session_variable_initialized(const fl_session *s, const fl_node *var)
{
    return var->id < s->nslots && s->slots[var->id].initialized && s->slots[var->id].device;
}

fl_tensor *fl_session_read_variable(fl_session *s, const fl_node *var)
{
    const fl_slot *slot = &s->slots[var->id];
    fl_device *d = slot->device;
    fl_tensor *t = fl_tensor_new(slot->value.dtype, slot->value.shape);
    fl_clear_error();
    /* A variable another task holds is read there: the session's buffer
     * only mirrors the last value read, and optimizer slots are never read. */
    int rc = fl_device_read_variable(d, var->name, t->data, slot->value.data, fl_tensor_bytes(t));
    if (rc != 0 || d->backend->wait(d->impl) != 0) {
        fl_session_fail(s, "saving %s: copying it from %s failed: %s", var->name, d->name,
                        fl_last_error());
        fl_tensor_free(t);
        return NULL;
    }
    return t;
}

int fl_session_write_variable(fl_session *s, fl_node *var, const fl_tensor *t)
{
    fl_session_grow(s);
    if (fl_session_place(s, var) != 0)
        return -1;
    fl_slot *slot = &s->slots[var->id];
    if (fl_session_ensure_node_buffer(s, var, slot, t->dtype, t->shape) != 0)
        return -1;
    fl_device *d = slot->device;
    fl_clear_error();
    /* wait before returning: the caller frees t once every variable is loaded */
    int rc = fl_device_write_variable(d, var->name, slot->buffer, t);
    if (rc != 0 || d->backend->wait(d->impl) != 0)
        return fl_session_fail(s, "restoring %s: copying it to %s failed: %s", var->name,
                               d->name, fl_last_error());
    slot->value = (fl_tensor){.dtype = var->dtype, .shape = var->attrs.shape, .data = slot->buffer};
    slot->initialized = true;
    return 0;
}
