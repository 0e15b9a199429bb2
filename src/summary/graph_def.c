/* graph_def.c: the graph as a GraphDef, TensorFlow's serialized graph, which
 * TensorBoard's graph dashboard draws: a NodeDef per node with its op, its
 * inputs ("^name" for a control input), its requested device, its dtype and
 * its build-time shape (the "_output_shapes" the dashboard labels edges
 * with). The dashboard folds the nodes into name scopes by their names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summary_internal.h"

/* A node's attributes: its dtype and its output's shape; the storage lives
 * beside the NodeDef that points into it. */
typedef struct {
    Tensorflow__NodeDef def;
    char **inputs;
    Tensorflow__AttrEntry dtype_entry, shapes_entry;
    Tensorflow__AttrEntry *entries[2];
    Tensorflow__AttrValue dtype, shapes;
    Tensorflow__AttrValue__ListValue shape_list;
    Tensorflow__TensorShapeProto shape, *shape_ptr;
    Tensorflow__TensorShapeProto__Dim dims[FL_MAX_RANK], *dim_ptrs[FL_MAX_RANK];
} node_storage;

static void describe_shape(node_storage *s, fl_shape shape)
{
    tensorflow__tensor_shape_proto__init(&s->shape);
    for (int d = 0; d < shape.rank; d++) {
        tensorflow__tensor_shape_proto__dim__init(&s->dims[d]);
        s->dims[d].size = shape.dims[d];
        s->dim_ptrs[d] = &s->dims[d];
    }
    s->shape.n_dim = (size_t)shape.rank;
    s->shape.dim = s->dim_ptrs;
    s->shape_ptr = &s->shape;
    tensorflow__attr_value__list_value__init(&s->shape_list);
    s->shape_list.n_shape = 1;
    s->shape_list.shape = &s->shape_ptr;
    tensorflow__attr_value__init(&s->shapes);
    s->shapes.value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    s->shapes.list = &s->shape_list;
    tensorflow__attr_entry__init(&s->shapes_entry);
    s->shapes_entry.key = "_output_shapes";
    s->shapes_entry.value = &s->shapes;
}

static void describe_dtype(node_storage *s, fl_dtype dtype)
{
    tensorflow__attr_value__init(&s->dtype);
    s->dtype.value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
    s->dtype.type = dtype == FL_INT32 ? TENSORFLOW__DATA_TYPE__DT_INT32 : TENSORFLOW__DATA_TYPE__DT_FLOAT;
    tensorflow__attr_entry__init(&s->dtype_entry);
    s->dtype_entry.key = "dtype";
    s->dtype_entry.value = &s->dtype;
}

static void describe_node(node_storage *s, const fl_node *n)
{
    tensorflow__node_def__init(&s->def);
    s->def.name = n->name;
    s->def.op = (char *)fl_node_op_type(n);
    s->def.device = (char *)n->device;
    s->inputs = fl_xcalloc((size_t)(n->ninputs + n->ncontrols + 1), sizeof *s->inputs);
    for (int i = 0; i < n->ninputs; i++)
        s->inputs[i] = fl_xstrdup(n->inputs[i]->name);
    for (int i = 0; i < n->ncontrols; i++) {
        size_t len = strlen(n->controls[i]->name) + 2;
        s->inputs[n->ninputs + i] = fl_xmalloc(len);
        snprintf(s->inputs[n->ninputs + i], len, "^%s", n->controls[i]->name);
    }
    s->def.n_input = (size_t)(n->ninputs + n->ncontrols);
    s->def.input = s->inputs;
    describe_dtype(s, n->dtype);
    s->entries[0] = &s->dtype_entry;
    s->def.n_attr = 1;
    if (n->has_output) { /* NoOp and the optimizer's updates have no value to draw */
        describe_shape(s, n->shape);
        s->entries[s->def.n_attr++] = &s->shapes_entry;
    }
    s->def.attr = s->entries;
}

/* The graph encoded; *len its size. The caller frees it. */
static unsigned char *encode_graph(const fl_graph *g, size_t *len)
{
    int count = fl_graph_node_count(g);
    node_storage *nodes = fl_xcalloc((size_t)(count ? count : 1), sizeof *nodes);
    Tensorflow__NodeDef **defs = fl_xcalloc((size_t)(count ? count : 1), sizeof *defs);
    for (int id = 0; id < count; id++) {
        describe_node(&nodes[id], fl_graph_node(g, id));
        defs[id] = &nodes[id].def;
    }
    Tensorflow__VersionDef versions = TENSORFLOW__VERSION_DEF__INIT;
    versions.producer = 22; /* a GraphDef version TensorBoard's importer knows */
    Tensorflow__GraphDef graph = TENSORFLOW__GRAPH_DEF__INIT;
    graph.n_node = (size_t)count;
    graph.node = defs;
    graph.versions = &versions;
    *len = tensorflow__graph_def__get_packed_size(&graph);
    unsigned char *bytes = fl_xmalloc(*len ? *len : 1);
    tensorflow__graph_def__pack(&graph, bytes);
    for (int id = 0; id < count; id++) {
        for (size_t i = 0; i < nodes[id].def.n_input; i++)
            free(nodes[id].inputs[i]);
        free(nodes[id].inputs);
    }
    free(defs);
    free(nodes);
    return bytes;
}

int fl_summary_add_graph(fl_summary_file_writer *w, const fl_graph *g)
{
    if (!w || !g) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_summary_add_graph: no %s", w ? "graph" : "writer");
        return -1;
    }
    Tensorflow__Event event = TENSORFLOW__EVENT__INIT;
    event.what_case = TENSORFLOW__EVENT__WHAT_GRAPH_DEF;
    event.graph_def.data = encode_graph(g, &event.graph_def.len);
    int rc = fl_summary_write_event(w, &event);
    free(event.graph_def.data);
    return rc;
}
