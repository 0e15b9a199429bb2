/* session_fusion.c: the step's fusion pass, as TensorFlow's grappler
 * "remapper" does it: after placement, chains of ops the device can run as
 * one kernel are run as one node, so their intermediate values never make
 * a trip through memory. The user's graph is left as written: the fused
 * node is the session's own, stands under the id (slot, name, trace lane)
 * of the chain's last op, and the ops it absorbed are not run this step.
 *
 * What it matches, where every absorbed op has exactly one reader in this
 * run, is neither fetched nor fed, has no control inputs, is float and sits
 * on the last op's device, whose backend has the fused kernel:
 *   Relu(Add(Conv2D(x, f), bias[C]))  -> FusedConv2D(x, f, bias), relu
 *   Add(Conv2D(x, f), bias[C])        -> FusedConv2D(x, f, bias)
 *   the same with MatMul(a, b)        -> FusedMatMul(a, b, bias)
 *   ReluGrad(MaxPoolGrad(dy, x, y), features) -> MaxPoolReluGrad(dy, x, y)
 *     when features > 0 exactly where x > 0: features is x, or x = Relu(features).
 *   Apply*(..., Div(AddN(g1..gk), d)) -> FusedApply*(..., g1..gk, d), the
 *     towers' mean made in the update's one pass, also for k = 1 (Div(g, d))
 *     and gradients on other devices (issue 42).
 *   ApplyAdam x N on one device and scope, gradients made there, one pair
 *     of beta powers, rate, betas, epsilon and controls -> MultiApplyAdam
 *     (PyTorch's fused Adam: one CUDA launch) under the last member's id,
 *     the others NoOps after it. A member is not fetched, depends on no
 *     grouped update, shares no value with its group where either writes
 *     it; an op between members that would see the delay closes the group.
 *     FLOWLAB_MULTI_ADAM=0 turns this one off alone.
 * A fused node's inputs (x, weights, bias) may lie on other devices: they
 * cross as any node's inputs do (session_copies.c), so towers that read
 * the controller's variables fuse as a single device does.
 * A Relu's gradient reads the Relu's input (the Add); where the Relu's
 * output is in the step too, ReluGrad reads that instead (the same mask:
 * Relu(a) > 0 exactly where a > 0), so the Add keeps a single reader.
 * FLOWLAB_FUSION=0 or fl_session_options.disable_fusion turns it off. */
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

/* A fused product's inputs: x, the filter or weights, the bias. */
#define PRODUCT_INPUTS 3
/* The most inputs a fused node takes: Adam's five, the mean's parts, the divisor. */
#define FUSED_INPUTS (6 + FL_FUSED_MEAN_PARTS)

void fl_session_free_fusion(fl_session *s)
{
    fl_fusion_plan *p = &s->fusion;
    free(p->planned);
    free(p->made);
    free(p->made_inputs);
    free(p->consumers);
    free(p->relu_of);
    free(p->reach);
    free(p->after);
    free(p->groups);
    free(p->group_inputs);
    memset(p, 0, sizeof *p);
}

static void grow(fl_session *s)
{
    fl_fusion_plan *p = &s->fusion;
    if (p->size == s->nslots)
        return;
    fl_session_free_fusion(s);
    size_t n = (size_t)s->nslots;
    p->size = s->nslots;
    p->planned = fl_xcalloc(n, sizeof *p->planned);
    p->made = fl_xcalloc(n, sizeof *p->made);
    p->made_inputs = fl_xcalloc(n * FUSED_INPUTS, sizeof *p->made_inputs);
    p->consumers = fl_xcalloc(n, sizeof *p->consumers);
    p->relu_of = fl_xcalloc(n, sizeof *p->relu_of);
    p->reach = fl_xcalloc(n, sizeof *p->reach);
    p->after = fl_xcalloc(n, sizeof *p->after);
}

fl_node *fl_session_planned(const fl_session *s, int id)
{
    if (id < s->fusion.size && s->fusion.planned[id])
        return s->fusion.planned[id];
    return fl_graph_node(s->graph, id);
}

static bool fusion_wanted(const fl_session *s)
{
    const char *env = getenv("FLOWLAB_FUSION");
    return !s->options.disable_fusion && !(env && strcmp(env, "0") == 0);
}

/* ---- who reads what in this run ---- */

static bool runs_op(const fl_session *s, const fl_node *n)
{
    bool source = n->op == FL_OP_PLACEHOLDER || n->op == FL_OP_VARIABLE || n->op == FL_OP_CONST;
    return s->fusion.needed[n->id] && !fl_session_fed(s, n->id) && !source;
}

/* consumers: each needed op's inputs and control inputs, counted; relu_of:
 * for a value a, a Relu of this run that reads it. */
static void count_consumers(fl_session *s)
{
    fl_fusion_plan *p = &s->fusion;
    memset(p->consumers, 0, (size_t)p->size * sizeof *p->consumers);
    memset(p->relu_of, 0, (size_t)p->size * sizeof *p->relu_of);
    for (int id = 0; id < s->nslots; id++) {
        fl_node *n = fl_graph_node(s->graph, id);
        if (!runs_op(s, n))
            continue;
        for (int i = 0; i < n->ninputs; i++)
            p->consumers[n->inputs[i]->id]++;
        for (int i = 0; i < n->ncontrols; i++)
            p->consumers[n->controls[i]->id]++;
        if (n->op == FL_OP_RELU && !p->relu_of[n->inputs[0]->id])
            p->relu_of[n->inputs[0]->id] = n;
    }
}

static const fl_device *device_of(const fl_session *s, const fl_node *n) { return s->slots[n->id].device; }

/* Whether op i can vanish into a fused node that stands for root. */
static bool absorbable(const fl_session *s, const fl_node *i, const fl_node *root)
{
    const fl_slot *slot = &s->slots[i->id];
    return runs_op(s, i) && s->fusion.consumers[i->id] == 1 && !slot->fetched &&
           i->ncontrols == 0 && i->dtype == FL_FLOAT32 && device_of(s, i) == device_of(s, root) &&
           !s->fusion.planned[i->id];
}

/* Makes (or remakes, in the session's storage) the node that runs under
 * root's id this step: root's name, device and shape, another op. */
static fl_node *make_node(fl_session *s, const fl_node *root, fl_op_kind op, const fl_attrs *attrs,
                          fl_node *const *in, int n)
{
    fl_fusion_plan *p = &s->fusion;
    fl_node *made = &p->made[root->id];
    fl_node **inputs = &p->made_inputs[(size_t)root->id * FUSED_INPUTS];
    *made = *root;
    made->op = op;
    made->attrs = *attrs;
    memcpy(inputs, in, (size_t)n * sizeof *in);
    made->inputs = inputs;
    made->ninputs = n;
    p->planned[root->id] = made;
    return made;
}

static bool backend_fuses(const fl_session *s, const fl_node *root, fl_op_kind op)
{
    return device_of(s, root)->backend->has_kernel(op);
}

/* ---- the patterns ---- */

/* root is Relu(add) (relu) or add itself; add = Add(product, bias). */
// [book:fuse_product]
static void fuse_product(fl_session *s, fl_node *root, fl_node *add, bool relu)
{
    if (add->op != FL_OP_ADD || add->ninputs != 2 || (add != root && !absorbable(s, add, root)))
        return;
    fl_node *product = add->inputs[0], *bias = add->inputs[1];
    bool conv = product->op == FL_OP_CONV2D;
    if ((!conv && product->op != FL_OP_MATMUL) || !absorbable(s, product, root))
        return;
    fl_shape ps = product->shape;
    int64_t columns = ps.rank > 0 ? ps.dims[ps.rank - 1] : -1;
    if (bias->dtype != FL_FLOAT32 || bias->shape.rank != 1 || columns < 0 || bias->shape.dims[0] != columns)
        return;
    fl_op_kind op = conv ? FL_OP_FUSED_CONV2D : FL_OP_FUSED_MATMUL;
    fl_node *in[PRODUCT_INPUTS] = {product->inputs[0], product->inputs[1], bias};
    if (!backend_fuses(s, root, op))
        return;
    fl_attrs attrs = product->attrs;
    attrs.fused_relu = relu;
    make_node(s, root, op, &attrs, in, PRODUCT_INPUTS);
    s->fusion.needed[product->id] = false;
    if (add != root)
        s->fusion.needed[add->id] = false;
}
// [end:fuse_product]

/* Whether features > 0 exactly where MaxPoolGrad's x > 0. */
static bool same_mask(const fl_node *features, const fl_node *x)
{
    return features == x || (x->op == FL_OP_RELU && x->inputs[0] == features);
}

/* g = ReluGrad(MaxPoolGrad(dy, x, y), features) */
static bool fuse_pool_grad(fl_session *s, fl_node *g)
{
    fl_node *pool = g->inputs[0];
    if (pool->op != FL_OP_MAX_POOL_GRAD || !absorbable(s, pool, g) || !same_mask(g->inputs[1], pool->inputs[1]))
        return false;
    if (!backend_fuses(s, g, FL_OP_MAX_POOL_RELU_GRAD))
        return false;
    make_node(s, g, FL_OP_MAX_POOL_RELU_GRAD, &pool->attrs, pool->inputs, 3);
    s->fusion.needed[pool->id] = false;
    s->fusion.consumers[g->inputs[1]->id]--;
    return true;
}

/* g = ReluGrad(dy, a) where r = Relu(a) runs too: g reads r instead, and
 * a (an Add to be fused) keeps its Relu as its one reader. */
static void read_relu_output(fl_session *s, fl_node *g)
{
    fl_node *a = g->inputs[1], *r = s->fusion.relu_of[a->id];
    if (a->op != FL_OP_ADD || !r || fl_session_fed(s, r->id) || r->id > g->id)
        return;
    fl_node *in[2] = {g->inputs[0], r};
    make_node(s, g, FL_OP_RELU_GRAD, &g->attrs, in, 2);
    s->fusion.consumers[a->id]--;
    s->fusion.consumers[r->id]++;
}

/* The fused form of an update, by its op. */
static fl_op_kind fused_update_of(fl_op_kind op)
{
    switch (op) {
    case FL_OP_APPLY_GRADIENT_DESCENT: return FL_OP_FUSED_APPLY_GRADIENT_DESCENT;
    case FL_OP_APPLY_MOMENTUM: return FL_OP_FUSED_APPLY_MOMENTUM;
    default: return FL_OP_FUSED_APPLY_ADAM;
    }
}

/* u = Apply*(..., Div(sum, d)), sum = AddN(g1..gk) or one gradient, d one
 * number: u runs as its fused form, reading g1..gk and d wherever they lie
 * (a tower's gradients are read in place where its memory is the host's). */
// [book:fuse_update]
static void fuse_update(fl_session *s, fl_node *u)
{
    int before = fl_update_inputs_before_gradient(u->op);
    fl_node *div = u->inputs[before];
    if (div->op != FL_OP_DIV || !absorbable(s, div, u) || fl_shape_size(div->inputs[1]->shape) != 1)
        return;
    fl_node *sum = div->inputs[0], *in[FUSED_INPUTS];
    if (!fl_shape_equal(sum->shape, u->inputs[0]->shape) || fl_shape_size(sum->shape) < 0)
        return;
    bool add_n = sum->op == FL_OP_ADD_N && sum->ninputs <= FL_FUSED_MEAN_PARTS && absorbable(s, sum, u);
    int nparts = add_n ? sum->ninputs : 1;
    fl_op_kind op = fused_update_of(u->op);
    if (!backend_fuses(s, u, op))
        return;
    memcpy(in, u->inputs, (size_t)before * sizeof *in);
    memcpy(in + before, add_n ? sum->inputs : &sum, (size_t)nparts * sizeof *in);
    in[before + nparts] = div->inputs[1];
    make_node(s, u, op, &u->attrs, in, before + nparts + 1);
    s->fusion.needed[div->id] = false;
    if (add_n)
        s->fusion.needed[sum->id] = false;
}
// [end:fuse_update]

static void fuse_updates(fl_session *s)
{
    for (int id = 0; id < s->nslots; id++) {
        fl_node *n = fl_graph_node(s->graph, id);
        bool update = n->op == FL_OP_APPLY_GRADIENT_DESCENT || n->op == FL_OP_APPLY_MOMENTUM ||
                      n->op == FL_OP_APPLY_ADAM;
        if (update && runs_op(s, n) && !s->fusion.planned[id])
            fuse_update(s, n);
    }
}

/* ---- multi-tensor Adam: ApplyAdam x N -> MultiApplyAdam ---- */

/* ApplyAdam's inputs: var, m, v (written), beta1_power, beta2_power, grad. */
enum { ADAM_WRITES = 3, ADAM_INPUTS = 6, BETA1_POWER = 3, BETA2_POWER = 4, GRADIENT = 5 };

typedef struct fl_adam_group {
    fl_node *member[FL_MULTI_ADAM_VARIABLES];
    int count;
    bool open; /* it may still take members */
} adam_group;

/* The value x stands for: an alias (Identity, Reshape) is its input's. */
static const fl_node *unaliased(const fl_node *x)
{
    while (fl_op_def_of(x->op)->sig.aliases != FL_ALIAS_NONE && x->ninputs > 0)
        x = x->inputs[0];
    return x;
}

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* An ApplyAdam of this step that may join a group, its gradient too made on
 * its device: one arriving from another device or task (a ps's, chapter 3)
 * keeps its own update, run as soon as it lands while the sender computes. */
static bool candidate(const fl_session *s, const fl_node *n)
{
    if (n->op != FL_OP_APPLY_ADAM || !runs_op(s, n) || s->fusion.planned[n->id] || s->slots[n->id].fetched ||
        n->inputs[GRADIENT]->op == FL_OP_RECV)
        return false;
    const fl_device *d = s->slots[n->id].device;
    for (int i = 0; i < ADAM_INPUTS; i++)
        if (s->slots[n->inputs[i]->id].device != d)
            return false;
    return d->backend->has_kernel(FL_OP_MULTI_APPLY_ADAM);
}

/* Whether a and b lie in one name scope: an update scoped by layer (chapter
 * 7's fl_apply_gradients_scoped) keeps its time in the timeline there. */
static bool same_scope(const fl_node *a, const fl_node *b)
{
    const char *end_a = strrchr(a->name, '/'), *end_b = strrchr(b->name, '/');
    ptrdiff_t len = end_a ? end_a - a->name : -1;
    return len == (end_b ? end_b - b->name : -1) && (len < 0 || strncmp(a->name, b->name, (size_t)len) == 0);
}

/* One device and name scope, one pair of beta powers, one rate, betas and
 * epsilon bit for bit, one list of control inputs. */
static bool same_scalars(const fl_session *s, const fl_node *a, const fl_node *b)
{
    const fl_attrs *x = &a->attrs, *y = &b->attrs;
    bool same = s->slots[a->id].device == s->slots[b->id].device && same_scope(a, b) &&
                a->inputs[BETA1_POWER] == b->inputs[BETA1_POWER] && a->inputs[BETA2_POWER] == b->inputs[BETA2_POWER] &&
                same_float(x->learning_rate, y->learning_rate) && same_float(x->beta1, y->beta1) &&
                same_float(x->beta2, y->beta2) && same_float(x->epsilon, y->epsilon) && a->ncontrols == b->ncontrols;
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

/* Room for a group per candidate and their inputs: made once, then only
 * when a graph's candidates grow. */
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
    p->group_inputs = fl_xcalloc((size_t)(6 * candidates), sizeof *p->group_inputs);
}

/* The step's ApplyAdams in groups, each group as one MultiApplyAdam. */
static void fuse_adam_groups(fl_session *s)
{
    const char *env = getenv("FLOWLAB_MULTI_ADAM");
    if (env && strcmp(env, "0") == 0)
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

/* Gradients first (they change who reads the Adds), then the Relus, then
 * the Adds no Relu took. */
static void fuse_kind(fl_session *s, fl_op_kind kind)
{
    for (int id = 0; id < s->nslots; id++) {
        fl_node *n = fl_graph_node(s->graph, id);
        if (n->op != kind || !runs_op(s, n) || s->fusion.planned[id] || n->dtype != FL_FLOAT32)
            continue;
        if (kind == FL_OP_RELU_GRAD && !fuse_pool_grad(s, n))
            read_relu_output(s, n);
        else if (kind == FL_OP_RELU)
            fuse_product(s, n, n->inputs[0], true);
        else if (kind == FL_OP_ADD)
            fuse_product(s, n, n, false);
    }
}

void fl_session_fuse(fl_session *s, bool *needed)
{
    grow(s);
    memset(s->fusion.planned, 0, (size_t)s->fusion.size * sizeof *s->fusion.planned);
    if (!fusion_wanted(s))
        return;
    s->fusion.needed = needed;
    count_consumers(s);
    fuse_kind(s, FL_OP_RELU_GRAD);
    fuse_kind(s, FL_OP_RELU);
    fuse_kind(s, FL_OP_ADD);
    fuse_updates(s);
    fuse_adam_groups(s);
    s->fusion.needed = NULL;
}
