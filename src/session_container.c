/* session_container.c: a session whose host variables live in its task's
 * container (TensorFlow's ResourceMgr, variable_container.h): every
 * partition registered on a task server, whoever registered it, reads and
 * updates the one value of each variable with its ordinary kernels. */
#include "session_internal.h"
#include "variable_container.h"

void fl_session_set_variable_container(fl_session *s, fl_variable_container *c) { s->container = c; }

int fl_session_use_shared_variable(fl_session *s, fl_node *n)
{
    fl_slot *slot = &s->slots[n->id];
    if (!slot->shared) {
        slot->shared = fl_variable_container_find(s->container, n->name, n->dtype, n->attrs.shape);
        if (!slot->shared)
            return fl_session_fail_code(s, fl_last_error_code(), "%s: %s", n->name, fl_last_error());
        fl_session_release_buffer(slot); /* one a restore gave it before: the container's value wins */
    }
    slot->value = fl_shared_variable_value(slot->shared);
    slot->initialized = fl_shared_variable_initialized(s->container, slot->shared);
    if (slot->fetched && !slot->initialized) /* TensorFlow's "Attempting to use uninitialized value" */
        return fl_session_fail_code(s, FL_FAILED_PRECONDITION, "%s: fetched before it is initialized; run "
                                    "fl_global_variables_initializer() first (or restore a checkpoint)", n->name);
    return 0;
}

static bool reads_shared(const fl_session *s, const fl_node *n)
{
    for (int i = 0; i < n->ninputs; i++)
        if (s->slots[n->inputs[i]->id].shared)
            return true;
    return false;
}

bool fl_session_lock_shared(fl_session *s, const fl_node *n)
{
    if (!s->container || !reads_shared(s, n))
        return false;
    fl_variable_container_lock(s->container);
    for (int i = 0; i < n->ninputs; i++) { /* another session may have initialised it since */
        fl_slot *in = &s->slots[n->inputs[i]->id];
        if (in->shared && n->inputs[i]->op == FL_OP_VARIABLE)
            in->initialized = in->initialized || fl_shared_variable_initialized_locked(in->shared);
    }
    return true;
}

void fl_session_unlock_shared(fl_session *s) { fl_variable_container_unlock(s->container); }

void fl_session_note_assigned(fl_session *s, const fl_node *var)
{
    fl_slot *slot = &s->slots[var->id];
    slot->initialized = true;
    if (slot->shared)
        fl_shared_variable_mark_initialized(slot->shared);
}
