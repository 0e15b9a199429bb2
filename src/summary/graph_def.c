/* graph_def.c: the graph as a GraphDef, TensorFlow's serialized graph: the
 * one writer, for TensorBoard's graph dashboard (which folds the nodes into
 * name scopes by their names and labels edges with "_output_shapes") and
 * for a partition a task receives (the distributed runtime's
 * partition_def.c), whose extra attrs the dashboard shows and ignores. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_def.h"
#include "summary_internal.h"

static Tensorflow__AttrValue *new_value(Tensorflow__AttrValue__ValueCase which)
{
    Tensorflow__AttrValue *v = fl_xmalloc(sizeof *v);
    tensorflow__attr_value__init(v);
    v->value_case = which;
    return v;
}

/* "_output_shapes": a list of one shape, the node's build-time one. */
static void add_output_shape(Tensorflow__NodeDef *def, fl_shape shape)
{
    Tensorflow__AttrValue *v = new_value(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
    v->list = fl_xmalloc(sizeof *v->list);
    tensorflow__attr_value__list_value__init(v->list);
    v->list->n_shape = 1;
    v->list->shape = fl_xmalloc(sizeof *v->list->shape);
    v->list->shape[0] = fl_graph_def_shape(shape);
    fl_graph_def_add_attr(def, "_output_shapes", v);
}

/* A Const's value as a TensorProto: its elements little-endian. */
static void add_value(Tensorflow__NodeDef *def, const fl_tensor *t)
{
    Tensorflow__TensorProto *proto = fl_xmalloc(sizeof *proto);
    tensorflow__tensor_proto__init(proto);
    proto->dtype = fl_graph_def_dtype(t->dtype);
    proto->tensor_shape = fl_graph_def_shape(t->shape);
    size_t count = (size_t)fl_shape_size(t->shape);
    proto->tensor_content.len = count * 4;
    proto->tensor_content.data = fl_xmalloc(count * 4 + 1);
    const uint32_t *words = t->data;
    for (size_t i = 0; i < count; i++)
        for (int b = 0; b < 4; b++)
            proto->tensor_content.data[i * 4 + (size_t)b] = (uint8_t)(words[i] >> (8 * b));
    Tensorflow__AttrValue *v = new_value(TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
    v->tensor = proto;
    fl_graph_def_add_attr(def, "value", v);
}

static void add_variable_attrs(Tensorflow__NodeDef *def, const fl_node *n)
{
    Tensorflow__AttrValue *trainable = new_value(TENSORFLOW__ATTR_VALUE__VALUE_B);
    trainable->b = n->trainable;
    fl_graph_def_add_attr(def, "_trainable", trainable);
    if (!n->initializer)
        return;
    Tensorflow__AttrValue *init = new_value(TENSORFLOW__ATTR_VALUE__VALUE_S);
    init->s.data = (uint8_t *)fl_xstrdup(n->initializer->name);
    init->s.len = strlen(n->initializer->name);
    fl_graph_def_add_attr(def, "_initializer", init);
}

static char **input_names(const fl_node *n)
{
    char **inputs = fl_xcalloc((size_t)(n->ninputs + n->ncontrols + 1), sizeof *inputs);
    for (int i = 0; i < n->ninputs; i++)
        inputs[i] = fl_xstrdup(n->inputs[i]->name);
    for (int i = 0; i < n->ncontrols; i++) {
        size_t len = strlen(n->controls[i]->name) + 2;
        inputs[n->ninputs + i] = fl_xmalloc(len);
        snprintf(inputs[n->ninputs + i], len, "^%s", n->controls[i]->name);
    }
    return inputs;
}

static Tensorflow__NodeDef *describe_node(const fl_node *n, bool with_values)
{
    Tensorflow__NodeDef *def = fl_xmalloc(sizeof *def);
    tensorflow__node_def__init(def);
    def->name = fl_xstrdup(n->name);
    def->op = fl_xstrdup(fl_node_op_type(n));
    def->device = fl_xstrdup(n->device);
    def->input = input_names(n);
    def->n_input = (size_t)(n->ninputs + n->ncontrols);
    Tensorflow__AttrValue *dtype = new_value(TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
    dtype->type = fl_graph_def_dtype(n->dtype);
    fl_graph_def_add_attr(def, "dtype", dtype);
    if (n->has_output) /* NoOp and the optimizer's updates have no value to draw */
        add_output_shape(def, n->shape);
    fl_graph_def_write_attrs(&n->attrs, def);
    if (with_values && n->value)
        add_value(def, n->value);
    if (n->op == FL_OP_VARIABLE)
        add_variable_attrs(def, n);
    return def;
}

Tensorflow__GraphDef *fl_graph_def_new(const fl_graph *g, bool with_values)
{
    int count = fl_graph_node_count(g);
    Tensorflow__GraphDef *graph = fl_xmalloc(sizeof *graph);
    tensorflow__graph_def__init(graph);
    graph->node = fl_xcalloc((size_t)count + 1, sizeof *graph->node);
    for (int id = 0; id < count; id++)
        graph->node[graph->n_node++] = describe_node(fl_graph_node(g, id), with_values);
    graph->versions = fl_xmalloc(sizeof *graph->versions);
    tensorflow__version_def__init(graph->versions);
    graph->versions->producer = 22; /* a GraphDef version TensorBoard's importer knows */
    return graph;
}

/* Every part is malloc'd, as protobuf-c's unpack leaves a message. */
void fl_graph_def_free(Tensorflow__GraphDef *def)
{
    if (def)
        tensorflow__graph_def__free_unpacked(def, NULL);
}

int fl_summary_add_graph(fl_summary_file_writer *w, const fl_graph *g)
{
    if (!w || !g) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_summary_add_graph: no %s", w ? "graph" : "writer");
        return -1;
    }
    Tensorflow__GraphDef *graph = fl_graph_def_new(g, false);
    Tensorflow__Event event = TENSORFLOW__EVENT__INIT;
    event.what_case = TENSORFLOW__EVENT__WHAT_GRAPH_DEF;
    event.graph_def.len = tensorflow__graph_def__get_packed_size(graph);
    event.graph_def.data = fl_xmalloc(event.graph_def.len + 1);
    tensorflow__graph_def__pack(graph, event.graph_def.data);
    fl_graph_def_free(graph);
    int rc = fl_summary_write_event(w, &event);
    free(event.graph_def.data);
    return rc;
}
