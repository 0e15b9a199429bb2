/* session_uninitialized.c: TensorFlow's report_uninitialized_variables. Which of the
 * graph's variables have no value yet, asking the device that holds each:
 * a variable on a ps task has one once any worker (the chief) gave it one,
 * and this session then counts it as initialised too. A worker that is not
 * the chief waits on this before it trains (training/monitored_session.c). */
#include <stdlib.h>

#include "session_internal.h"

/* 1 when var has a value, 0 when not, -1 on error. */
static int has_value(fl_session *s, fl_node *var)
{
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
