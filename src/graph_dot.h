/* graph_dot.h: what the two DOT writers share (inside the library only):
 * graph_dot.c draws every node, graph_dot_scopes.c one box per name scope,
 * and uses graph_dot.c's colours, escaping, legend and atomic file write. */
#ifndef FLOWLAB_GRAPH_DOT_H
#define FLOWLAB_GRAPH_DOT_H

#include <stdio.h>

#include "runtime.h"
#include "session_access.h"

#define DOT_MAX_COLOURS 64 /* devices in one legend; more share the last colour */

/* Which device a node is coloured by: "" (none asked for), a device name,
 * or NULL when a session never ran the node. */
typedef const char *(*device_of_fn)(const void *ctx, const fl_node *n);

typedef struct dot_writer dot_writer;
struct dot_writer {
    FILE *f;
    const fl_graph *g;
    device_of_fn device_of;
    const void *ctx;
    bool mark_copies; /* a Copy node for each value and device it crosses to */
    void (*put_body)(dot_writer *w); /* the nodes and edges; NULL: every node */
    const void *body_ctx;            /* what put_body needs */
    const char *devices[DOT_MAX_COLOURS];
    int ndevices;
    int *copies_drawn; /* node id * DOT_MAX_COLOURS + colour index of each Copy node */
    int ncopies, copies_cap;
};

void dot_put_escaped_n(FILE *f, const char *text, size_t len);
void dot_put_escaped(FILE *f, const char *text);
/* The legend's label for a device (NULL: "not run") and its colour index,
 * added to the legend on first sight; the fill colour of an index. */
const char *dot_device_label(const char *device);
int dot_colour_index(dot_writer *w, const char *device);
const char *dot_colour_of(int index, const char *label);
const char *dot_shape_of(const fl_node *n); /* cylinder for a variable, ... */
/* The device of a node as fl_graph_write_dot and fl_session_write_dot colour it. */
const char *dot_requested_device(const void *ctx, const fl_node *n);
const char *dot_ran_on(const void *ctx, const fl_node *n);
/* Writes the picture to PATH.tmp.PID and renames it over path. */
int dot_write(dot_writer *w, const char *path);

#endif
