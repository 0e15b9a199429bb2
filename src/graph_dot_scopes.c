/* graph_dot_scopes.c: the graph as TensorBoard's graph view draws it
 * (fl_graph_write_dot_with): one box per name scope at a chosen depth, edges
 * between boxes labelled with a shape or a count, copies between devices red. */
#include <stdlib.h>
#include <string.h>

#include "graph_dot.h"

/* A box (a scope's nodes) or a lone node drawn as itself. */
typedef struct {
    const char *key; /* the scope, "tower_0/model", or the lone node's name */
    size_t len;      /* key's length: a scope is a prefix of its nodes' names */
    int first;       /* the id of its first node */
    int nodes;
    bool folded;     /* gradients or an optimizer: what the forward pass feeds */
} scope_group;

/* Every edge between two groups, merged: how many values cross it. */
typedef struct {
    int from, to;
    int tensors, copies; /* distinct values along it, and how many of them are copied */
    int value;           /* the node of the last value counted, for its shape */
    int *seen;           /* node ids of the values counted */
} scope_edge;

typedef struct {
    const fl_graph *g;
    int depth;
    int *group_of; /* node id -> group */
    scope_group *groups;
    int ngroups;
    scope_edge *edges;
    int nedges;
} scope_picture;

/* A gradients scope, or the scope of an optimizer's update ops (Apply*): one box at any depth. */
static bool folded(const fl_graph *g, const char *name, size_t len)
{
    const char *last = name;
    for (size_t i = 0; i < len; i++)
        if (name[i] == '/')
            last = name + i + 1;
    if (strncmp(last, "gradients", strlen("gradients")) == 0)
        return true;
    for (int id = 0; id < fl_graph_node_count(g); id++) {
        const fl_node *n = fl_graph_node(g, id);
        if (strncmp(n->name, name, len) == 0 && n->name[len] == '/' && !strchr(n->name + len + 1, '/') &&
            strncmp(fl_node_op_type(n), "Apply", 5) == 0)
            return true;
    }
    return false;
}

/* How much of a node's name is its group's key: its scopes up to depth
 * (fewer where one is folded), or the whole name for a node in no scope. */
static size_t key_len(const scope_picture *p, const char *name)
{
    size_t len = 0;
    int level = 0;
    for (const char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
        len = (size_t)(slash - name);
        if (++level == p->depth || folded(p->g, name, len))
            return len;
    }
    return len ? len : strlen(name);
}

/* True when key[0..len) is the outer scope of another node's key: that
 * scope is drawn as a frame around boxes, and its own nodes drawn lone. */
static bool is_frame(const size_t *lens, const fl_graph *g, const char *key, size_t len)
{
    for (int id = 0; id < fl_graph_node_count(g); id++) {
        const char *other = fl_graph_node(g, id)->name;
        if (lens[id] > len && other[len] == '/' && strncmp(other, key, len) == 0)
            return true;
    }
    return false;
}

static int group_for(scope_picture *p, const fl_node *n, size_t len)
{
    for (int i = 0; i < p->ngroups; i++)
        if (p->groups[i].len == len && strncmp(p->groups[i].key, n->name, len) == 0)
            return i;
    p->groups[p->ngroups] = (scope_group){.key = n->name, .len = len, .first = n->id};
    return p->ngroups++;
}

static void group_nodes(scope_picture *p)
{
    int count = fl_graph_node_count(p->g);
    size_t *lens = fl_xcalloc((size_t)(count ? count : 1), sizeof *lens);
    for (int id = 0; id < count; id++)
        lens[id] = key_len(p, fl_graph_node(p->g, id)->name);
    p->group_of = fl_xcalloc((size_t)(count ? count : 1), sizeof *p->group_of);
    p->groups = fl_xcalloc((size_t)(count ? count : 1), sizeof *p->groups);
    for (int id = 0; id < count; id++) {
        const fl_node *n = fl_graph_node(p->g, id);
        size_t len = is_frame(lens, p->g, n->name, lens[id]) ? strlen(n->name) : lens[id];
        p->group_of[id] = group_for(p, n, len);
        p->groups[p->group_of[id]].nodes++;
        p->groups[p->group_of[id]].folded = len < strlen(n->name) && folded(p->g, n->name, len);
    }
    free(lens);
}

/* Counts value along the edge from group a to group to. Control edges are
 * not drawn at this level (TensorBoard too draws them aside). */
static void add_edge(scope_picture *p, int a, int to, const fl_node *value, bool copied)
{
    scope_edge *e = NULL;
    for (int i = 0; i < p->nedges && !e; i++)
        if (p->edges[i].from == a && p->edges[i].to == to)
            e = &p->edges[i];
    if (!e) {
        p->edges = fl_xrealloc(p->edges, (size_t)(p->nedges + 1) * sizeof *p->edges);
        e = &p->edges[p->nedges++];
        *e = (scope_edge){.from = a, .to = to, .value = -1};
    }
    for (int i = 0; i < e->tensors; i++)
        if (e->seen[i] == value->id)
            return;
    e->seen = fl_xrealloc(e->seen, (size_t)(e->tensors + 1) * sizeof *e->seen);
    e->seen[e->tensors++] = value->id;
    e->copies += copied;
    e->value = value->id;
}

static void collect_edges(scope_picture *p, const dot_writer *w)
{
    for (int id = 0; id < fl_graph_node_count(p->g); id++) {
        const fl_node *n = fl_graph_node(p->g, id);
        int to = p->group_of[id];
        const char *here = w->device_of(w->ctx, n);
        for (int i = 0; i < n->ninputs; i++) {
            const fl_node *in = n->inputs[i];
            const char *there = w->device_of(w->ctx, in);
            if (p->group_of[in->id] != to)
                add_edge(p, p->group_of[in->id], to, in, w->mark_copies && here && there && strcmp(here, there));
        }
    }
}

/* The group's fill: the colour of the device its nodes ran on, stripes in
 * proportion when they ran on several; nodes that never ran count (and
 * enter the legend) only when none of the group ran. */
static void put_fill(dot_writer *w, const scope_picture *p, int group, bool box)
{
    int counts[DOT_MAX_COLOURS] = {0}, ran = 0, shown = 0;
    for (int id = 0; id < fl_graph_node_count(p->g); id++)
        ran += p->group_of[id] == group && w->device_of(w->ctx, fl_graph_node(p->g, id)) != NULL;
    for (int id = 0; id < fl_graph_node_count(p->g); id++) {
        const char *device = p->group_of[id] == group ? w->device_of(w->ctx, fl_graph_node(p->g, id)) : NULL;
        if (device || (!ran && p->group_of[id] == group))
            shown += counts[dot_colour_index(w, device)]++ == 0;
    }
    if (!ran) {
        fputs(", fillcolor=\"white\", style=\"filled,dashed\"", w->f);
        return;
    }
    fputs(", fillcolor=\"", w->f);
    for (int i = 0, k = 0; i < w->ndevices; i++) {
        if (counts[i] == 0)
            continue;
        fprintf(w->f, k++ ? ":%s" : "%s", dot_colour_of(i, w->devices[i]));
        if (shown > 1)
            fprintf(w->f, ";%.2f", (double)counts[i] / ran);
    }
    fprintf(w->f, "\", style=\"%s\"", shown > 1 && box ? "striped" : box ? "filled,rounded" : "filled");
}

static const char *last_part(const char *key, size_t len)
{
    const char *last = key;
    for (size_t i = 0; i < len; i++)
        if (key[i] == '/')
            last = key + i + 1;
    return last;
}

/* A scope's box says its name and how many ops it holds; a lone node its
 * name and, when the name does not say it, its op. */
static void put_group(dot_writer *w, const scope_picture *p, int i)
{
    const scope_group *s = &p->groups[i];
    const fl_node *n = fl_graph_node(p->g, s->first);
    bool box = s->nodes > 1 || s->len != strlen(n->name);
    const char *last = last_part(s->key, s->len);
    fprintf(w->f, "    g%d [label=\"", i);
    dot_put_escaped_n(w->f, last, s->len - (size_t)(last - s->key));
    if (box)
        fprintf(w->f, "\\n%d op%s\", shape=box, penwidth=2", s->nodes, s->nodes == 1 ? "" : "s");
    else if (strncmp(last, fl_node_op_type(n), strlen(fl_node_op_type(n))) != 0)
        fprintf(w->f, "\\n%s\", shape=%s", fl_node_op_type(n), dot_shape_of(n));
    else
        fprintf(w->f, "\", shape=%s", dot_shape_of(n));
    put_fill(w, p, i, box);
    fputs("];\n", w->f);
}

/* Whether key lies inside the frame prefix[0..len) ("" holds everything). */
static bool inside(const char *key, size_t key_len, const char *prefix, size_t len)
{
    return len == 0 || (key_len > len && key[len] == '/' && strncmp(key, prefix, len) == 0);
}

/* The length of the frame just inside prefix that holds key, 0 when key
 * sits directly in prefix. */
static size_t child_frame(const char *key, size_t key_len, size_t len)
{
    size_t start = len ? len + 1 : 0;
    for (size_t i = start; i < key_len; i++)
        if (key[i] == '/')
            return i;
    return 0;
}

/* The groups directly in frame prefix, then each frame inside it, drawn
 * as a cluster around its own groups, in order of first appearance. */
static void put_frame(dot_writer *w, const scope_picture *p, const char *prefix, size_t len)
{
    for (int i = 0; i < p->ngroups; i++) {
        const scope_group *s = &p->groups[i];
        if (inside(s->key, s->len, prefix, len) && child_frame(s->key, s->len, len) == 0)
            put_group(w, p, i);
    }
    for (int i = 0; i < p->ngroups; i++) {
        const scope_group *s = &p->groups[i];
        size_t frame = inside(s->key, s->len, prefix, len) ? child_frame(s->key, s->len, len) : 0;
        bool drawn = false;
        for (int j = 0; j < i && frame && !drawn; j++) {
            const scope_group *t = &p->groups[j];
            drawn = inside(t->key, t->len, prefix, len) && child_frame(t->key, t->len, len) == frame &&
                    strncmp(t->key, s->key, frame) == 0;
        }
        if (!frame || drawn)
            continue;
        fputs("  subgraph \"cluster_", w->f);
        dot_put_escaped_n(w->f, s->key, frame);
        fputs("\" {\n    label=\"", w->f);
        dot_put_escaped_n(w->f, s->key, frame);
        fputs("\"; style=rounded; color=gray40;\n", w->f);
        put_frame(w, p, s->key, frame);
        fputs("  }\n", w->f);
    }
}

/* A value's shape, "N tensors", and which of them the session copies;
 * edges into the gradients and the optimizer are grey, so the forward pass
 * stands out (and is kept straight). */
static void put_edge(dot_writer *w, const scope_picture *p, const scope_edge *e)
{
    bool backward = p->groups[e->to].folded;
    fprintf(w->f, "  g%d -> g%d", e->from, e->to);
    char what[64], label[96];
    if (e->tensors == 1)
        fl_shape_format(fl_graph_node(p->g, e->value)->shape, what, sizeof what);
    else
        snprintf(what, sizeof what, "%d tensors", e->tensors);
    if (e->copies == 0)
        snprintf(label, sizeof label, "%s", what);
    else if (e->copies < e->tensors)
        snprintf(label, sizeof label, "%s, %d copied", what, e->copies);
    else if (e->tensors == 1)
        snprintf(label, sizeof label, "copy %s", what);
    else
        snprintf(label, sizeof label, "%d copies", e->copies);
    fprintf(w->f, " [label=\"%s\"%s];\n", label,
            e->copies ? ", color=red, fontcolor=red, penwidth=2"
            : backward ? ", color=gray60, fontcolor=gray45"
                       : ", weight=4"); /* the forward pass, kept straight */
}

static void put_scopes(dot_writer *w)
{
    const scope_picture *p = w->body_ctx;
    fputs("  nodesep=0.2; ranksep=0.35;\n", w->f);
    put_frame(w, p, "", 0);
    for (int i = 0; i < p->nedges; i++)
        put_edge(w, p, &p->edges[i]);
}

static int write_scopes(dot_writer *w, const char *path, const fl_dot_options *options, const char *who)
{
    if (options && ((int)options->detail < FL_DOT_SCOPES || options->detail > FL_DOT_NODES ||
                    options->scope_depth < 0)) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s: detail must be FL_DOT_SCOPES or FL_DOT_NODES and scope_depth 0 or more", who);
        return -1;
    }
    scope_picture p = {.g = w->g, .depth = options && options->scope_depth > 0 ? options->scope_depth : 1};
    group_nodes(&p);
    collect_edges(&p, w);
    w->put_body = put_scopes;
    w->body_ctx = &p;
    int rc = dot_write(w, path);
    for (int i = 0; i < p.nedges; i++)
        free(p.edges[i].seen);
    free(p.edges);
    free(p.groups);
    free(p.group_of);
    return rc;
}

int fl_graph_write_dot_with(const fl_graph *g, const char *path, const fl_dot_options *options)
{
    if (!g) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_graph_write_dot_with: no graph");
        return -1;
    }
    if (options && options->detail == FL_DOT_NODES)
        return fl_graph_write_dot(g, path);
    dot_writer w = {.g = g, .device_of = dot_requested_device};
    return write_scopes(&w, path, options, "fl_graph_write_dot_with");
}

int fl_session_write_dot_with(const fl_session *s, const char *path, const fl_dot_options *options)
{
    if (!s) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_write_dot_with: no session");
        return -1;
    }
    if (options && options->detail == FL_DOT_NODES)
        return fl_session_write_dot(s, path);
    dot_writer w = {.g = fl_session_graph(s), .device_of = dot_ran_on, .ctx = s, .mark_copies = true};
    return write_scopes(&w, path, options, "fl_session_write_dot_with");
}
