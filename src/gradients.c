/* gradients.c: reverse-mode automatic differentiation.
 * Walk the nodes between xs and ys from the newest to the oldest; each op's
 * gradient rule turns the gradient of its output into gradients of its
 * inputs, built as new graph nodes. Several contributions are summed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

typedef struct {
    fl_node **items;
    int n;
} contributions;

static void add_contribution(contributions *c, fl_node *grad)
{
    c->items = fl_xrealloc(c->items, (size_t)(c->n + 1) * sizeof *c->items);
    c->items[c->n++] = grad;
}

/* on_path[id]: the node depends on some x and y depends on it. */
static bool *nodes_on_path(fl_graph *g, fl_node *y, fl_node *const *xs, int n)
{
    int count = fl_graph_node_count(g);
    bool *from_x = fl_xcalloc((size_t)count, 1), *to_y = fl_xcalloc((size_t)count, 1);
    for (int i = 0; i < n; i++)
        from_x[xs[i]->id] = true;
    for (int id = 0; id <= y->id; id++) {
        fl_node *node = fl_graph_node(g, id);
        for (int i = 0; i < node->ninputs && !from_x[id]; i++)
            from_x[id] = from_x[node->inputs[i]->id];
    }
    to_y[y->id] = true;
    for (int id = y->id; id >= 0; id--) {
        fl_node *node = fl_graph_node(g, id);
        if (!to_y[id])
            continue;
        for (int i = 0; i < node->ninputs; i++)
            to_y[node->inputs[i]->id] = true;
    }
    for (int id = 0; id < count; id++)
        from_x[id] = from_x[id] && to_y[id];
    free(to_y);
    return from_x;
}

static fl_node *sum_contributions(fl_graph *g, contributions *c)
{
    if (c->n == 0)
        return NULL;
    if (c->n == 1)
        return c->items[0];
    return fl_add_n(g, c->items, c->n, NULL);
}

/* The name a node's gradient scope is made from: the node's own, less the
 * name scope fl_gradients was called in, which the gradients' names carry
 * already ("tower_0/gradients/loss_grad", not ".../gradients/tower_0/loss_grad"). */
static const char *name_below(const fl_node *node, const char *outer_scope)
{
    size_t len = strlen(outer_scope);
    if (len && strncmp(node->name, outer_scope, len) == 0 && node->name[len] == '/')
        return node->name + len + 1;
    return node->name;
}

static int backprop_node(fl_graph *g, fl_node *node, fl_node *dy, const bool *on_path,
                         contributions *acc, const char *outer_scope)
{
    const fl_op_def *def = fl_op_def_of(node->op);
    if (!def->gradient) {
        fl_graph_fail(g, node->name, "no gradient is defined for %s (the loss depends on it through "
                                     "an input that is being differentiated)", def->type);
        return -1;
    }
    fl_node *dx[node->ninputs ? node->ninputs : 1];
    memset(dx, 0, sizeof dx);
    char scope[300];
    snprintf(scope, sizeof scope, "%s_grad", name_below(node, outer_scope));
    if (fl_name_scope_push(g, scope) != 0)
        return -1;
    int rc = def->gradient(g, node, dy, dx);
    fl_name_scope_pop(g);
    if (rc != 0 || fl_graph_failed(g))
        return -1;
    for (int i = 0; i < node->ninputs; i++)
        if (dx[i] && on_path[node->inputs[i]->id])
            add_contribution(&acc[node->inputs[i]->id], dx[i]);
    return 0;
}

static int check_args(fl_graph *g, fl_node *ys, fl_node *const *xs, int n)
{
    if (!ys)
        return -1; /* its builder already said why */
    if (ys->dtype != FL_FLOAT32 || !ys->has_output) {
        fl_graph_fail(g, ys->name, "gradients need a float32 value to differentiate, got a %s",
                      fl_node_op_type(ys));
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!xs[i]) {
            fl_graph_fail(g, ys->name, "gradients: xs[%d] is NULL", i);
            return -1;
        }
    return 0;
}

int fl_gradients(fl_graph *g, fl_node *ys, fl_node *const *xs, int n, fl_node **grads)
{
    if (!g || fl_graph_failed(g) || check_args(g, ys, xs, n) != 0)
        return -1;
    bool *on_path = nodes_on_path(g, ys, xs, n);
    int count = fl_graph_node_count(g);
    contributions *acc = fl_xcalloc((size_t)count, sizeof *acc);
    char *outer_scope = fl_xstrdup(fl_name_scope_current(g));
    int rc = fl_name_scope_push(g, "gradients");
    bool pushed = rc == 0;
    fl_node *seed = rc == 0 ? fl_ones_like(g, ys, NULL) : NULL;
    if (seed)
        add_contribution(&acc[ys->id], seed);
    for (int id = ys->id; rc == 0 && seed && id >= 0; id--) {
        fl_node *node = fl_graph_node(g, id);
        if (!on_path[id] || acc[id].n == 0 || node->ninputs == 0)
            continue;
        bool is_x = false;
        for (int i = 0; i < n; i++)
            is_x = is_x || xs[i] == node;
        if (is_x && !fl_op_def_of(node->op)->gradient)
            continue; /* gradients stop at the xs themselves */
        fl_node *dy = sum_contributions(g, &acc[id]);
        acc[id].n = 0;
        add_contribution(&acc[id], dy);
        rc = backprop_node(g, node, dy, on_path, acc, outer_scope);
    }
    for (int i = 0; rc == 0 && i < n; i++)
        grads[i] = sum_contributions(g, &acc[xs[i]->id]);
    if (pushed)
        fl_name_scope_pop(g);
    for (int id = 0; id < count; id++)
        free(acc[id].items);
    free(acc);
    free(on_path);
    free(outer_scope);
    return rc == 0 && seed && !fl_graph_failed(g) ? 0 : -1;
}

int fl_compute_gradients(fl_graph *g, fl_node *loss, fl_node *const *vars, int nvars,
                         fl_grad_var *out)
{
    if (!g || fl_graph_failed(g))
        return -1;
    if (!out || nvars < 0) {
        fl_graph_fail(g, "", "fl_compute_gradients: %s", out ? "a negative nvars" : "out is NULL");
        return -1;
    }
    int n = vars ? nvars : fl_trainable_variables(g, NULL, 0);
    if (!vars && nvars > 0 && n > nvars) { /* NULL, N: N is out's room */
        fl_graph_fail(g, "", "fl_compute_gradients: out holds %d pairs but the graph has %d trainable variables",
                      nvars, n);
        return -1;
    }
    fl_node **xs = fl_xmalloc((size_t)(n ? n : 1) * sizeof *xs);
    fl_node **grads = fl_xcalloc((size_t)(n ? n : 1), sizeof *grads);
    if (vars)
        memcpy(xs, vars, (size_t)n * sizeof *xs);
    else
        fl_trainable_variables(g, xs, n);
    int rc = fl_gradients(g, loss, xs, n, grads);
    for (int i = 0; rc == 0 && i < n; i++)
        out[i] = (fl_grad_var){grads[i], xs[i]};
    free(xs);
    free(grads);
    return rc == 0 ? n : -1;
}
