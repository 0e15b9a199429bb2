/* session_fusion_adam.c: the fusion pass's multi-tensor Adam (issue 41 item 4),
 * as PyTorch's fused Adam: the step's ApplyAdams on one device that read the
 * same beta powers, with the same rate, betas, epsilon and control inputs,
 * run as one MultiApplyAdam (ops_fused.c), up to FL_MULTI_ADAM_VARIABLES a
 * group: on CUDA one launch for them all.
 *
 * The group runs under the id of its last update, created after every
 * member's inputs; each other member runs as a NoOp after it, so whatever
 * waits on a member (the train op, the beta powers' assignments) still
 * does. An update joins only if fusing cannot change a bit or deadlock:
 *   - it is not fetched, its variable, slots and powers are on its device;
 *   - it depends on no grouped update (of any group), so no group waits on
 *     another's NoOp;
 *   - it updates nothing its group reads or writes, and reads nothing its
 *     group writes (no variable updated twice, no update reading another's);
 *   - a member runs later than it would have (at the group's last id), so
 *     an op between members that reads what the group writes, or writes
 *     what it reads, closes the group: nodes on one variable keep creation
 *     order (session_variable_order.c).
 * FLOWLAB_MULTI_ADAM=0 turns this pass off alone; FLOWLAB_FUSION=0 or
 * fl_session_options.disable_fusion turns it off with the others. */
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

/* ApplyAdam's inputs: var, m, v (written), beta1_power, beta2_power, grad. */
enum { ADAM_WRITES = 3, ADAM_INPUTS = 6, BETA1_POWER = 3, BETA2_POWER = 4, GRADIENT = 5 };

struct fl_adam_group {
    fl_node *member[FL_MULTI_ADAM_VARIABLES];
    int count;
    bool open; /* it may still take members */
};

typedef struct fl_adam_group adam_group;

void fl_session_free_adam_groups(fl_fusion_plan *p)
{
    free(p->groups);
    free(p->group_inputs);
}

static bool wanted(void)
{
    const char *env = getenv("FLOWLAB_MULTI_ADAM");
    return !(env && strcmp(env, "0") == 0);
}

/* The value x stands for: an alias (Identity, Reshape) is its input's. */
static const fl_node *unaliased(const fl_node *x)
{
    while (fl_op_def_of(x->op)->sig.aliases != FL_ALIAS_NONE && x->ninputs > 0)
        x = x->inputs[0];
    return x;
}

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* An ApplyAdam of this step that may join a group. */
static bool candidate(const fl_session *s, const fl_node *n)
{
    if (n->op != FL_OP_APPLY_ADAM || !fl_session_fusion_runs_op(s, n) || s->fusion.planned[n->id] ||
        s->slots[n->id].fetched)
        return false;
    const fl_device *d = s->slots[n->id].device;
    for (int i = 0; i < GRADIENT; i++)
        if (s->slots[n->inputs[i]->id].device != d)
            return false;
    return d->backend->has_kernel(FL_OP_MULTI_APPLY_ADAM);
}

/* One device, one pair of beta powers, one rate, betas and epsilon bit for
 * bit, one list of control inputs. */
static bool same_scalars(const fl_session *s, const fl_node *a, const fl_node *b)
{
    const fl_attrs *x = &a->attrs, *y = &b->attrs;
    bool same = s->slots[a->id].device == s->slots[b->id].device && a->inputs[BETA1_POWER] == b->inputs[BETA1_POWER] &&
                a->inputs[BETA2_POWER] == b->inputs[BETA2_POWER] && same_float(x->learning_rate, y->learning_rate) &&
                same_float(x->beta1, y->beta1) && same_float(x->beta2, y->beta2) &&
                same_float(x->epsilon, y->epsilon) && a->ncontrols == b->ncontrols;
    for (int i = 0; same && i < a->ncontrols; i++)
        same = a->controls[i] == b->controls[i];
    return same;
}

/* Whether the group writes x, or (written_only false) reads it at all. */
static bool group_touches(const adam_group *g, const fl_node *x, bool written_only)
{
    int inputs = written_only ? ADAM_WRITES : ADAM_INPUTS;
    for (int k = 0; k < g->count; k++)
        for (int i = 0; i < inputs; i++)
            if (unaliased(g->member[k]->inputs[i]) == x)
                return true;
    return false;
}

/* Whether n and the group touch one value where either writes it. */
static bool clashes(const adam_group *g, const fl_node *n)
{
    int writes = fl_node_writes_inputs(n);
    for (int i = 0; i < n->ninputs; i++)
        if (group_touches(g, unaliased(n->inputs[i]), i >= writes))
            return true;
    return false;
}

/* Whether n reads (or waits on) a grouped update or something made from one. */
static bool depends_on_group(const fl_session *s, const fl_node *n)
{
    const bool *reach = s->fusion.reach;
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i]->id < n->id && reach[n->inputs[i]->id])
            return true;
    for (int i = 0; i < n->ncontrols; i++)
        if (n->controls[i]->id < n->id && reach[n->controls[i]->id])
            return true;
    return false;
}

/* The open group n joins, a new one, or NULL (no room: it stays itself). */
static adam_group *group_for(fl_session *s, fl_node *n, int *ngroups)
{
    fl_fusion_plan *p = &s->fusion;
    for (int k = 0; k < *ngroups; k++) {
        adam_group *g = &p->groups[k];
        if (g->open && same_scalars(s, g->member[0], n) && !clashes(g, n))
            return g;
    }
    if (*ngroups == p->groups_capacity)
        return NULL;
    adam_group *g = &p->groups[(*ngroups)++];
    g->count = 0;
    g->open = true;
    return g;
}

/* One pass in creation order: each candidate joins a group, and every
 * node closes the open groups it clashes with. */
static int gather(fl_session *s)
{
    fl_fusion_plan *p = &s->fusion;
    int ngroups = 0;
    for (int id = 0; id < s->nslots; id++) {
        p->reach[id] = false;
        if (!p->needed[id])
            continue;
        fl_node *n = fl_session_planned(s, id);
        bool depends = depends_on_group(s, n);
        for (int k = 0; k < ngroups; k++)
            p->groups[k].open = p->groups[k].open && !clashes(&p->groups[k], n);
        adam_group *g = !depends && candidate(s, n) ? group_for(s, n, &ngroups) : NULL;
        if (g) {
            g->member[g->count++] = n;
            g->open = g->count < FL_MULTI_ADAM_VARIABLES;
        }
        p->reach[id] = depends || g;
    }
    return ngroups;
}

/* The group's MultiApplyAdam under its last member's id; NoOps after it
 * under the others'. */
static void plan_group(fl_session *s, const adam_group *g, fl_node **inputs)
{
    fl_fusion_plan *p = &s->fusion;
    int count = g->count;
    fl_node *last = g->member[count - 1];
    for (int k = 0; k < count; k++) {
        memcpy(inputs + ADAM_WRITES * k, g->member[k]->inputs, ADAM_WRITES * sizeof *inputs);
        inputs[ADAM_WRITES * count + 2 + k] = g->member[k]->inputs[GRADIENT];
    }
    inputs[ADAM_WRITES * count] = last->inputs[BETA1_POWER];
    inputs[ADAM_WRITES * count + 1] = last->inputs[BETA2_POWER];
    fl_node *multi = &p->made[last->id];
    *multi = *last;
    multi->op = FL_OP_MULTI_APPLY_ADAM;
    multi->inputs = inputs;
    multi->ninputs = 4 * count + 2;
    p->planned[last->id] = multi;
    for (int k = 0; k < count - 1; k++) {
        int id = g->member[k]->id;
        fl_node *after = &p->made[id];
        *after = *g->member[k];
        after->op = FL_OP_NO_OP;
        after->inputs = NULL;
        after->ninputs = 0;
        p->after[id] = last;
        after->controls = &p->after[id];
        after->ncontrols = 1;
        p->planned[id] = after;
    }
}

/* Room for a group per candidate and their inputs (4 per member, 2 per
 * group): made once, then only when a graph's candidates grow. */
static void make_room(fl_session *s)
{
    fl_fusion_plan *p = &s->fusion;
    int candidates = 0;
    for (int id = 0; id < s->nslots; id++)
        candidates += fl_graph_node(s->graph, id)->op == FL_OP_APPLY_ADAM && p->needed[id];
    if (candidates <= p->groups_capacity)
        return;
    free(p->groups);
    free(p->group_inputs);
    p->groups_capacity = candidates;
    p->groups = fl_xcalloc((size_t)candidates, sizeof *p->groups);
    p->group_inputs_capacity = 6 * candidates;
    p->group_inputs = fl_xcalloc((size_t)p->group_inputs_capacity, sizeof *p->group_inputs);
}

void fl_session_fuse_adam_groups(fl_session *s)
{
    if (!wanted())
        return;
    make_room(s);
    int ngroups = gather(s), used = 0;
    for (int k = 0; k < ngroups; k++) {
        const adam_group *g = &s->fusion.groups[k];
        if (g->count < 2)
            continue;
        plan_group(s, g, s->fusion.group_inputs + used);
        used += 4 * g->count + 2;
    }
}
