/* graph_dot.c: the graph as a Graphviz DOT picture (dot -Tsvg g.dot), every
 * node drawn. Nodes are coloured by device (requested, or where they ran in
 * a session), boxed by top-level name scope so replication towers stand apart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_dot.h"

#define MAX_COLOURS DOT_MAX_COLOURS
#define NOT_RUN "not run"

/* ColorBrewer Set3: pastel enough that black labels stay readable. */
static const char *const PALETTE[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                      "#fdb462", "#b3de69", "#fccde5", "#bc80bd", "#ccebc5"};
#define PALETTE_SIZE (int)(sizeof PALETTE / sizeof PALETTE[0])

/* Writes len bytes of text inside a DOT double-quoted string. */
void dot_put_escaped_n(FILE *f, const char *text, size_t len)
{
    for (size_t i = 0; i < len && text[i]; i++) {
        if (text[i] == '"' || text[i] == '\\')
            fputc('\\', f);
        if (text[i] == '\n')
            fputs("\\n", f);
        else
            fputc(text[i], f);
    }
}

void dot_put_escaped(FILE *f, const char *text) { dot_put_escaped_n(f, text, strlen(text)); }

/* The legend's label for a device string. */
const char *dot_device_label(const char *device)
{
    if (!device)
        return NOT_RUN;
    return device[0] ? device : "(no device: /cpu:0)";
}

/* Colour index of a device, adding it to the legend on first sight. */
int dot_colour_index(dot_writer *w, const char *device)
{
    const char *label = dot_device_label(device);
    for (int i = 0; i < w->ndevices; i++)
        if (strcmp(w->devices[i], label) == 0)
            return i;
    if (w->ndevices == MAX_COLOURS)
        return MAX_COLOURS - 1;
    w->devices[w->ndevices] = label;
    return w->ndevices++;
}

const char *dot_colour_of(int index, const char *label)
{
    if (strcmp(label, NOT_RUN) == 0)
        return "white";
    return PALETTE[index % PALETTE_SIZE];
}

const char *dot_shape_of(const fl_node *n)
{
    switch (n->op) {
    case FL_OP_VARIABLE: return "cylinder";
    case FL_OP_PLACEHOLDER: return "invhouse";
    case FL_OP_CONST: return "box";
    default: return n->has_output ? "ellipse" : "octagon"; /* octagon: updates, groups */
    }
}

static void put_node(dot_writer *w, const fl_node *n)
{
    const char *device = w->device_of(w->ctx, n);
    int index = dot_colour_index(w, device);
    char shape[64];
    fprintf(w->f, "    n%d [label=\"", n->id);
    dot_put_escaped(w->f, n->name);
    fprintf(w->f, "\\n%s", fl_node_op_type(n));
    if (n->has_output)
        fprintf(w->f, " %s %s", fl_dtype_name(n->dtype), fl_shape_format(n->shape, shape, sizeof shape));
    fprintf(w->f, "\", shape=%s, fillcolor=\"%s\"%s, tooltip=\"", dot_shape_of(n),
            dot_colour_of(index, dot_device_label(device)), device ? "" : ", style=\"filled,dashed\"");
    dot_put_escaped(w->f, dot_device_label(device));
    fputs("\"];\n", w->f);
}

/* Length of a node's top-level name scope ("tower_0" of "tower_0/MatMul"),
 * 0 for a node outside any scope. */
static size_t scope_len(const fl_node *n)
{
    const char *slash = strchr(n->name, '/');
    return slash ? (size_t)(slash - n->name) : 0;
}

/* Same top-level scope; a node named just "w" joins its "w/..." nodes, so a
 * variable sits in one box with its Initializer and Assign. */
static bool same_scope(const fl_node *a, const fl_node *b)
{
    size_t len = scope_len(a);
    size_t blen = scope_len(b) ? scope_len(b) : strlen(b->name);
    return len == blen && strncmp(a->name, b->name, len) == 0;
}

/* One cluster per top-level scope, in order of first appearance; done[]
 * marks nodes already written. */
static void put_cluster(dot_writer *w, const fl_node *first, bool *done)
{
    size_t len = scope_len(first);
    fputs("  subgraph \"cluster_", w->f);
    dot_put_escaped_n(w->f, first->name, len);
    fputs("\" {\n    label=\"", w->f);
    dot_put_escaped_n(w->f, first->name, len);
    fputs("\"; style=rounded; color=gray40;\n", w->f);
    for (int id = 0; id < fl_graph_node_count(w->g); id++) {
        const fl_node *n = fl_graph_node(w->g, id);
        if (!done[id] && same_scope(first, n)) {
            put_node(w, n);
            done[id] = true;
        }
    }
    fputs("  }\n", w->f);
}

static void put_nodes(dot_writer *w)
{
    int count = fl_graph_node_count(w->g);
    bool *done = fl_xcalloc((size_t)(count ? count : 1), sizeof *done);
    for (int id = 0; id < count; id++) {
        const fl_node *n = fl_graph_node(w->g, id);
        if (done[id] || scope_len(n) == 0)
            continue;
        put_cluster(w, n, done);
    }
    for (int id = 0; id < count; id++)
        if (!done[id])
            put_node(w, fl_graph_node(w->g, id));
    free(done);
}

/* True when both ends ran, on different devices: the session copied the tensor. */
static bool crosses_devices(const dot_writer *w, const fl_node *from, const fl_node *to)
{
    if (!w->mark_copies)
        return false;
    const char *a = w->device_of(w->ctx, from), *b = w->device_of(w->ctx, to);
    return a && b && strcmp(a, b) != 0;
}

/* Whether the Copy node of `key` is drawn already; records it if not. */
static bool copy_drawn(dot_writer *w, int key)
{
    for (int i = 0; i < w->ncopies; i++)
        if (w->copies_drawn[i] == key)
            return true;
    if (w->ncopies == w->copies_cap) {
        w->copies_cap = w->copies_cap ? 2 * w->copies_cap : 32;
        w->copies_drawn = fl_xrealloc(w->copies_drawn, (size_t)w->copies_cap * sizeof *w->copies_drawn);
    }
    w->copies_drawn[w->ncopies++] = key;
    return false;
}

/* The session copies a value once to each other device that reads it, and
 * the readers there share the copy: drawn as one node per value and device,
 * coloured like the device it copies to, as TensorFlow draws its
 * _Send/_Recv pairs. */
static void put_copy(dot_writer *w, const fl_node *from, const fl_node *to)
{
    const char *src = w->device_of(w->ctx, from), *dst = w->device_of(w->ctx, to);
    int index = dot_colour_index(w, dst);
    if (!copy_drawn(w, from->id * MAX_COLOURS + index)) {
        fprintf(w->f, "  c%d_%d [label=\"Copy\\n", from->id, index);
        dot_put_escaped(w->f, dot_device_label(src));
        fputs(" -> ", w->f);
        dot_put_escaped(w->f, dot_device_label(dst));
        fprintf(w->f, "\", shape=box, style=\"filled,bold\", color=red, fillcolor=\"%s\"];\n",
                dot_colour_of(index, dot_device_label(dst)));
        fprintf(w->f, "  n%d -> c%d_%d [color=red, penwidth=2];\n", from->id, from->id, index);
    }
    fprintf(w->f, "  c%d_%d -> n%d [color=red, penwidth=2];\n", from->id, index, to->id);
}

static void put_edges(dot_writer *w)
{
    for (int id = 0; id < fl_graph_node_count(w->g); id++) {
        const fl_node *n = fl_graph_node(w->g, id);
        for (int i = 0; i < n->ninputs; i++) {
            if (crosses_devices(w, n->inputs[i], n))
                put_copy(w, n->inputs[i], n);
            else
                fprintf(w->f, "  n%d -> n%d;\n", n->inputs[i]->id, n->id);
        }
        for (int i = 0; i < n->ncontrols; i++)
            fprintf(w->f, "  n%d -> n%d [style=dashed, color=gray40];\n", n->controls[i]->id, n->id);
    }
}

static void put_legend(dot_writer *w)
{
    fputs("  subgraph cluster_legend {\n    label=\"devices\"; style=rounded; color=gray40;\n", w->f);
    for (int i = 0; i < w->ndevices; i++) {
        fprintf(w->f, "    legend_%d [label=\"", i);
        dot_put_escaped(w->f, w->devices[i]);
        fprintf(w->f, "\", shape=box, fillcolor=\"%s\"%s];\n", dot_colour_of(i, w->devices[i]),
                strcmp(w->devices[i], NOT_RUN) == 0 ? ", style=\"filled,dashed\"" : "");
    }
    fputs("  }\n", w->f);
}

/* Every node and every edge: the picture when no put_body is given. */
static void put_every_node(dot_writer *w)
{
    put_nodes(w);
    put_edges(w);
}

static void put_graph(dot_writer *w)
{
    fputs("digraph flowlab {\n  rankdir=TB;\n", w->f);
    fputs("  node [style=filled, fontname=\"Helvetica\", fontsize=10];\n", w->f);
    fputs("  edge [fontname=\"Helvetica\", fontsize=9];\n", w->f);
    (w->put_body ? w->put_body : put_every_node)(w);
    put_legend(w);
    fputs("}\n", w->f);
}

/* Writes to PATH.tmp.PID and renames it over path, so a viewer never sees
 * half a picture. */
int dot_write(dot_writer *w, const char *path)
{
    if (!path || !path[0]) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "writing the graph as DOT: no path given");
        return -1;
    }
    size_t len = strlen(path) + 32;
    char *temp = fl_xmalloc(len);
    snprintf(temp, len, "%s.tmp.%ld", path, (long)getpid());
    w->f = fopen(temp, "w");
    int err = w->f ? 0 : errno;
    if (w->f) {
        put_graph(w);
        if (fflush(w->f) != 0 || ferror(w->f))
            err = EIO;
        if (fclose(w->f) != 0 && !err)
            err = errno;
    }
    free(w->copies_drawn);
    w->copies_drawn = NULL;
    if (!err && rename(temp, path) != 0)
        err = errno;
    if (err) {
        unlink(temp);
        fl_set_error_code(fl_errno_code(err), "%s: cannot write the DOT file: %s", path, strerror(err));
    }
    free(temp);
    return err ? -1 : 0;
}

const char *dot_requested_device(const void *ctx, const fl_node *n)
{
    (void)ctx;
    return n->device;
}

int fl_graph_write_dot(const fl_graph *g, const char *path)
{
    if (!g) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_graph_write_dot: no graph");
        return -1;
    }
    dot_writer w = {.g = g, .device_of = dot_requested_device};
    return dot_write(&w, path);
}

const char *dot_ran_on(const void *ctx, const fl_node *n) { return fl_session_node_device(ctx, n); }

int fl_session_write_dot(const fl_session *s, const char *path)
{
    if (!s) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_session_write_dot: no session");
        return -1;
    }
    dot_writer w = {.g = fl_session_graph(s), .device_of = dot_ran_on, .ctx = s, .mark_copies = true};
    return dot_write(&w, path);
}
