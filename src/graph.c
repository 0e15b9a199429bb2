/* graph.c: the graph and how nodes join it.
 * A node gets a unique name under the open name scopes, a device from the
 * innermost device scope or device function, control inputs from the open
 * control scopes, and a shape checked by its op's inference rule. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "name_table.h"
#include "runtime.h"

#define FL_NAME_LEN 256

typedef struct {
    bool is_function;
    char device[FL_DEVICE_LEN]; /* fixed scope */
    fl_device_fn fn;
    void *user;
} device_entry;

typedef struct {
    char name[FL_NAME_LEN]; /* full prefix, "model/dense" */
    fl_reuse reuse;         /* effective, after inheritance */
} variable_scope;

typedef struct {
    fl_node **nodes;
    int n;
} control_entry;

struct fl_graph {
    fl_node **nodes;
    int nnodes, cap;
    fl_name_table by_name;
    fl_node **variables;
    int nvariables;
    fl_name_table variables_by_name;
    char name_scope[FL_NAME_LEN]; /* "tower_0/dense" or "" */
    int name_scope_len[64];       /* prefix lengths to pop back to */
    int name_depth;
    variable_scope var_scopes[64];
    int var_depth;
    device_entry devices[64];
    int device_depth;
    control_entry controls[64];
    int control_depth;
    char error[FL_ERROR_LEN];
    uint64_t seed;
    uint64_t op_seed_counter;
    void *runtime_records; /* the cluster runtime's, freed by its own function */
    void (*free_runtime_records)(void *);
};

fl_graph *fl_graph_new(void)
{
    fl_graph *g = fl_xcalloc(1, sizeof *g);
    fl_name_table_init(&g->by_name);
    fl_name_table_init(&g->variables_by_name);
    return g;
}

static void node_free(fl_node *n)
{
    free(n->name);
    free(n->inputs);
    free(n->controls);
    fl_tensor_free(n->value);
    free(n);
}

void fl_graph_free(fl_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nnodes; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    free(g->variables);
    for (int i = 0; i < g->control_depth; i++)
        free(g->controls[i].nodes);
    fl_name_table_free(&g->by_name);
    fl_name_table_free(&g->variables_by_name);
    if (g->free_runtime_records)
        g->free_runtime_records(g->runtime_records);
    free(g);
}

void *fl_graph_runtime_records(const fl_graph *g) { return g->runtime_records; }

void fl_graph_set_runtime_records(fl_graph *g, void *records, void (*free_records)(void *))
{
    g->runtime_records = records;
    g->free_runtime_records = free_records;
}

/* ---- errors ---- */

/* A NULL graph given to a public call is the caller's mistake: said, never
 * read through. Graph builders already return NULL for it. */
static bool no_graph(const fl_graph *g, const char *caller)
{
    if (!g)
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the graph is NULL", caller);
    return !g;
}

const char *fl_graph_error(const fl_graph *g) { return !g ? "the graph is NULL" : g->error[0] ? g->error : NULL; }
bool fl_graph_failed(const fl_graph *g) { return g->error[0] != '\0'; }
void fl_graph_clear_error(fl_graph *g) { if (g) g->error[0] = '\0'; }

fl_node *fl_graph_fail(fl_graph *g, const char *node_name, const char *fmt, ...)
{
    if (g->error[0]) /* keep the first error: later ones are usually its echoes */
        return NULL;
    char what[FL_ERROR_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    if (node_name && node_name[0])
        snprintf(g->error, sizeof g->error, "%s: %s", node_name, what);
    else
        snprintf(g->error, sizeof g->error, "%s", what);
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s", g->error);
    return NULL;
}

/* ---- seeds ---- */

void fl_graph_set_random_seed(fl_graph *g, uint64_t seed)
{
    if (!no_graph(g, "fl_graph_set_random_seed"))
        g->seed = seed;
}
uint64_t fl_graph_seed(const fl_graph *g) { return g->seed; }
uint64_t fl_graph_next_op_seed(fl_graph *g) { return ++g->op_seed_counter; }

/* ---- lookup ---- */

int fl_graph_node_count(const fl_graph *g) { return g ? g->nnodes : 0; }

fl_node *fl_graph_node(const fl_graph *g, int index)
{
    return g && index >= 0 && index < g->nnodes ? g->nodes[index] : NULL;
}

fl_node *fl_graph_find(const fl_graph *g, const char *name)
{
    return g && name ? fl_name_table_get(&g->by_name, name) : NULL;
}

/* ---- name scopes ---- */

static bool valid_name(const char *name)
{
    if (!name || !name[0] || strlen(name) >= FL_NAME_LEN / 2)
        return false;
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.' || *c == '/'))
            return false;
    return name[0] != '/';
}

int fl_name_scope_push(fl_graph *g, const char *name)
{
    if (no_graph(g, "fl_name_scope_push"))
        return -1;
    if (g->name_depth >= 64) {
        fl_graph_fail(g, name, "name scopes nested deeper than 64");
        return -1;
    }
    if (!valid_name(name)) {
        fl_graph_fail(g, name ? name : "(null)",
                      "a scope name uses letters, digits, '_', '-', '.' and '/' and does not start with '/'");
        return -1;
    }
    size_t len = strlen(g->name_scope);
    g->name_scope_len[g->name_depth++] = (int)len;
    char joined[FL_NAME_LEN * 2];
    snprintf(joined, sizeof joined, "%s%s%s", g->name_scope, len ? "/" : "", name);
    snprintf(g->name_scope, sizeof g->name_scope, "%s", joined);
    return 0;
}

void fl_name_scope_pop(fl_graph *g)
{
    if (g && g->name_depth > 0)
        g->name_scope[g->name_scope_len[--g->name_depth]] = '\0';
}

const char *fl_name_scope_current(const fl_graph *g) { return g->name_scope; }

/* "scope/base", then "scope/base_1", "scope/base_2", ... until unused. */
static char *unique_name(fl_graph *g, const char *base)
{
    char full[FL_NAME_LEN * 2];
    const char *scope = g->name_scope;
    snprintf(full, sizeof full, "%s%s%s", scope, scope[0] ? "/" : "", base);
    if (!fl_graph_find(g, full))
        return fl_xstrdup(full);
    char candidate[FL_NAME_LEN * 2 + 16];
    for (int i = 1;; i++) {
        snprintf(candidate, sizeof candidate, "%s_%d", full, i);
        if (!fl_graph_find(g, candidate))
            return fl_xstrdup(candidate);
    }
}

/* ---- variable scopes ---- */

int fl_variable_scope_push(fl_graph *g, const char *name, fl_reuse reuse)
{
    if (no_graph(g, "fl_variable_scope_push"))
        return -1;
    if (g->var_depth >= 64) {
        fl_graph_fail(g, name, "variable scopes nested deeper than 64");
        return -1;
    }
    if (fl_name_scope_push(g, name) != 0)
        return -1;
    const variable_scope *outer = g->var_depth ? &g->var_scopes[g->var_depth - 1] : NULL;
    variable_scope *scope = &g->var_scopes[g->var_depth++];
    char joined[FL_NAME_LEN * 2];
    snprintf(joined, sizeof joined, "%s%s%s", outer ? outer->name : "", outer ? "/" : "", name);
    snprintf(scope->name, sizeof scope->name, "%s", joined);
    fl_reuse inherited = outer ? outer->reuse : FL_REUSE_INHERIT;
    scope->reuse = reuse > inherited ? reuse : inherited;
    if (inherited == FL_REUSE && reuse == FL_AUTO_REUSE)
        scope->reuse = FL_REUSE;
    return 0;
}

void fl_variable_scope_pop(fl_graph *g)
{
    if (!g || g->var_depth == 0)
        return;
    g->var_depth--;
    fl_name_scope_pop(g);
}

void fl_variable_scope_name(const fl_graph *g, const char *name, char *out, size_t len)
{
    const char *prefix = g->var_depth ? g->var_scopes[g->var_depth - 1].name : "";
    snprintf(out, len, "%s%s%s", prefix, prefix[0] ? "/" : "", name);
}

fl_reuse fl_variable_scope_reuse(const fl_graph *g)
{
    return g->var_depth ? g->var_scopes[g->var_depth - 1].reuse : FL_REUSE_INHERIT;
}

void fl_graph_register_variable(fl_graph *g, fl_node *var)
{
    g->variables = fl_xrealloc(g->variables, (size_t)(g->nvariables + 1) * sizeof *g->variables);
    g->variables[g->nvariables++] = var;
    fl_name_table_put(&g->variables_by_name, var->name, var);
}

fl_node *fl_graph_find_variable(const fl_graph *g, const char *name)
{
    return fl_name_table_get(&g->variables_by_name, name);
}

int fl_graph_variable_count(const fl_graph *g) { return g ? g->nvariables : 0; }

fl_node *fl_graph_variable(const fl_graph *g, int index)
{
    return index >= 0 && index < g->nvariables ? g->variables[index] : NULL;
}

/* ---- device scopes and device functions ---- */

static device_entry *push_device_entry(fl_graph *g)
{
    if (g->device_depth >= 64) {
        fl_graph_fail(g, "", "device scopes nested deeper than 64");
        return NULL;
    }
    device_entry *e = &g->devices[g->device_depth++];
    memset(e, 0, sizeof *e);
    return e;
}

int fl_device_scope_push(fl_graph *g, const char *device)
{
    if (no_graph(g, "fl_device_scope_push"))
        return -1;
    char canonical[FL_DEVICE_LEN] = "";
    if (device && device[0] && fl_parse_device(device, NULL, canonical, sizeof canonical) != 0) {
        fl_graph_fail(g, "", "%s", fl_last_error());
        return -1;
    }
    device_entry *e = push_device_entry(g);
    if (!e)
        return -1;
    snprintf(e->device, sizeof e->device, "%s", canonical);
    return 0;
}

int fl_device_scope_push_colocated(fl_graph *g, const fl_node *with)
{
    if (no_graph(g, "fl_device_scope_push_colocated"))
        return -1;
    if (!with) {
        fl_graph_fail(g, "", "fl_device_scope_push_colocated: the node is NULL");
        return -1;
    }
    device_entry *e = push_device_entry(g);
    if (!e)
        return -1;
    snprintf(e->device, sizeof e->device, "%s", with->device);
    return 0;
}

int fl_device_function_push(fl_graph *g, fl_device_fn fn, void *user)
{
    if (no_graph(g, "fl_device_function_push"))
        return -1;
    if (!fn) {
        fl_graph_fail(g, "", "fl_device_function_push: the device function is NULL");
        return -1;
    }
    device_entry *e = push_device_entry(g);
    if (!e)
        return -1;
    e->is_function = true;
    e->fn = fn;
    e->user = user;
    return 0;
}

void fl_device_pop(fl_graph *g)
{
    if (g && g->device_depth > 0)
        g->device_depth--;
}

/* The innermost scope decides; a device function returning NULL defers to
 * the scopes outside it. */
static int pick_device(fl_graph *g, fl_node *n)
{
    for (int i = g->device_depth - 1; i >= 0; i--) {
        const device_entry *e = &g->devices[i];
        if (!e->is_function) {
            snprintf(n->device, sizeof n->device, "%s", e->device);
            return 0;
        }
        const char *chosen = e->fn(n, e->user);
        if (!chosen)
            continue;
        if (chosen[0] && fl_parse_device(chosen, NULL, n->device, sizeof n->device) != 0) {
            fl_graph_fail(g, n->name, "the device function chose %s", fl_last_error());
            return -1;
        }
        if (!chosen[0])
            n->device[0] = '\0';
        return 0;
    }
    n->device[0] = '\0';
    return 0;
}

/* ---- control dependencies ---- */

int fl_control_dependencies_push(fl_graph *g, fl_node *const *nodes, int n)
{
    if (no_graph(g, "fl_control_dependencies_push"))
        return -1;
    if (n < 0 || (n > 0 && !nodes)) {
        fl_graph_fail(g, "", "fl_control_dependencies_push: %d nodes%s", n, n > 0 ? " but the array is NULL" : "");
        return -1;
    }
    if (g->control_depth >= 64) {
        fl_graph_fail(g, "", "control dependency scopes nested deeper than 64");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!nodes[i]) {
            fl_graph_fail(g, "", "fl_control_dependencies_push: node %d is NULL", i);
            return -1;
        }
    control_entry *e = &g->controls[g->control_depth++];
    e->n = n;
    e->nodes = fl_xmalloc((size_t)(n ? n : 1) * sizeof *e->nodes);
    if (n)
        memcpy(e->nodes, nodes, (size_t)n * sizeof *nodes);
    return 0;
}

void fl_control_dependencies_pop(fl_graph *g)
{
    if (!g || g->control_depth == 0)
        return;
    control_entry *e = &g->controls[--g->control_depth];
    free(e->nodes);
    e->nodes = NULL;
}

int fl_add_control_input(fl_graph *g, fl_node *node, fl_node *before)
{
    if (no_graph(g, "fl_add_control_input"))
        return -1;
    if (!node || !before) {
        fl_graph_fail(g, "", "fl_add_control_input: a node is NULL");
        return -1;
    }
    if (before->id >= node->id) {
        /* Creation order is the executor's topological order; keep it true. */
        fl_graph_fail(g, node->name, "a control input must be built before the node (%s is newer)",
                      before->name);
        return -1;
    }
    node->controls = fl_xrealloc(node->controls, (size_t)(node->ncontrols + 1) * sizeof *node->controls);
    node->controls[node->ncontrols++] = before;
    return 0;
}

static void attach_controls(fl_graph *g, fl_node *n)
{
    for (int i = 0; i < g->control_depth; i++)
        for (int j = 0; j < g->controls[i].n; j++)
            fl_add_control_input(g, n, g->controls[i].nodes[j]);
}

/* ---- adding a node ---- */

static bool inputs_present(const fl_node_spec *spec)
{
    for (int i = 0; i < spec->ninputs; i++)
        if (!spec->inputs[i])
            return false;
    return true;
}

static int check_same_graph(fl_graph *g, const fl_node_spec *spec, const char *name)
{
    for (int i = 0; i < spec->ninputs; i++)
        if (spec->inputs[i]->graph != g) {
            fl_graph_fail(g, name, "input %s belongs to another graph", spec->inputs[i]->name);
            return -1;
        }
    return 0;
}

static void append_node(fl_graph *g, fl_node *n)
{
    if (g->nnodes == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 256;
        g->nodes = fl_xrealloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
    }
    n->id = g->nnodes;
    g->nodes[g->nnodes++] = n;
    fl_name_table_put(&g->by_name, n->name, n);
}

fl_node *fl_add_node(fl_graph *g, const fl_node_spec *spec)
{
    if (!g)
        return NULL;
    if (!inputs_present(spec)) /* an earlier builder failed and said why */
        return fl_graph_failed(g) ? NULL : fl_graph_fail(g, spec->name ? spec->name : spec->default_name,
                                                          "an input is NULL");
    const char *base = spec->name ? spec->name : spec->default_name;
    fl_status st = {0};
    if (spec->exact_name && fl_graph_find(g, base))
        return fl_graph_fail(g, base, "the name is already taken by another node");
    if (!valid_name(base))
        return fl_graph_fail(g, base ? base : "(null)",
                             "a node name uses letters, digits, '_', '-', '.' and '/'");
    if (fl_op_check_input_count(spec->op, spec->ninputs, &st) != 0) /* its signature's */
        return fl_graph_fail(g, base, "%s", st.message);
    fl_node *n = fl_xcalloc(1, sizeof *n);
    n->graph = g;
    n->name = spec->exact_name ? fl_xstrdup(base) : unique_name(g, base);
    n->op = spec->op;
    n->dtype = spec->dtype;
    n->has_output = fl_op_def_of(spec->op)->sig.has_output;
    n->attrs = spec->attrs;
    n->ninputs = spec->ninputs;
    n->inputs = fl_xmalloc((size_t)(spec->ninputs ? spec->ninputs : 1) * sizeof *n->inputs);
    if (spec->ninputs)
        memcpy(n->inputs, spec->inputs, (size_t)spec->ninputs * sizeof *spec->inputs);
    if (check_same_graph(g, spec, n->name) != 0 || pick_device(g, n) != 0) {
        node_free(n);
        return NULL;
    }
    fl_shape in[spec->ninputs ? spec->ninputs : 1];
    for (int i = 0; i < spec->ninputs; i++)
        in[i] = spec->inputs[i]->shape;
    if (fl_op_def_of(n->op)->infer(n, in, &n->shape, &st) != 0) {
        fl_graph_fail(g, n->name, "%s", st.message);
        node_free(n);
        return NULL;
    }
    append_node(g, n);
    attach_controls(g, n);
    return n;
}
