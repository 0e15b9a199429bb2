/* node_attrs.c: fl_attrs as a NodeDef's attrs, both ways, from one table of
 * its fields: the GraphDef writer (graph_def.c) adds the fields a node sets,
 * and a task's partition decoder reads them back, each checked against its
 * field's kind. A field left zero is not written: zero is the reader's default. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "graph_def.h"

typedef enum { KIND_BOOL, KIND_INT, KIND_FLOAT, KIND_SEED, KIND_SHAPE, KIND_DTYPE, KIND_PADDING, KIND_AXES, KIND_TEXT } attr_kind;

typedef struct {
    const char *name;
    attr_kind kind;
    size_t offset, size;
} attr_field;

#define FIELD(name, kind, member) {name, kind, offsetof(fl_attrs, member), sizeof(((fl_attrs *)0)->member)}
static const attr_field FIELDS[] = {
    FIELD("transpose_a", KIND_BOOL, transpose_a), FIELD("transpose_b", KIND_BOOL, transpose_b),
    FIELD("axis", KIND_INT, axis), FIELD("begin", KIND_INT, begin), FIELD("size", KIND_INT, size),
    FIELD("part", KIND_INT, part), FIELD("num_parts", KIND_INT, num_parts),
    FIELD("reduce_axis", KIND_AXES, reduce_axis), FIELD("keep_dims", KIND_BOOL, keep_dims),
    FIELD("mean", KIND_BOOL, mean), FIELD("shape", KIND_SHAPE, shape),
    FIELD("stride_h", KIND_INT, stride_h), FIELD("stride_w", KIND_INT, stride_w),
    FIELD("ksize_h", KIND_INT, ksize_h), FIELD("ksize_w", KIND_INT, ksize_w),
    FIELD("padding", KIND_PADDING, padding), FIELD("fill_value", KIND_FLOAT, value),
    FIELD("minval", KIND_FLOAT, minval), FIELD("maxval", KIND_FLOAT, maxval),
    FIELD("mean_value", KIND_FLOAT, mean_value), FIELD("stddev", KIND_FLOAT, stddev),
    FIELD("seed", KIND_SEED, seed), FIELD("DstT", KIND_DTYPE, dtype),
    FIELD("learning_rate", KIND_FLOAT, learning_rate), FIELD("momentum", KIND_FLOAT, momentum),
    FIELD("beta1", KIND_FLOAT, beta1), FIELD("beta2", KIND_FLOAT, beta2), FIELD("epsilon", KIND_FLOAT, epsilon),
    FIELD("use_nesterov", KIND_BOOL, use_nesterov), FIELD("fused_relu", KIND_BOOL, fused_relu),
    FIELD("key", KIND_TEXT, edge_key), FIELD("peer_task", KIND_TEXT, peer_task),
};
#define NFIELDS (sizeof FIELDS / sizeof *FIELDS)

/* Each kind's AttrValue case, and its name in a refusal. */
static const Tensorflow__AttrValue__ValueCase CASE_OF[] = {
    TENSORFLOW__ATTR_VALUE__VALUE_B, TENSORFLOW__ATTR_VALUE__VALUE_I, TENSORFLOW__ATTR_VALUE__VALUE_F,
    TENSORFLOW__ATTR_VALUE__VALUE_I, TENSORFLOW__ATTR_VALUE__VALUE_SHAPE, TENSORFLOW__ATTR_VALUE__VALUE_TYPE,
    TENSORFLOW__ATTR_VALUE__VALUE_S, TENSORFLOW__ATTR_VALUE__VALUE_LIST, TENSORFLOW__ATTR_VALUE__VALUE_S};
static const char *const KIND_NAME[] = {"bool", "int", "float", "int", "shape", "type", "string", "list(bool)", "string"};

Tensorflow__DataType fl_graph_def_dtype(fl_dtype dtype)
{
    return dtype == FL_INT32 ? TENSORFLOW__DATA_TYPE__DT_INT32 : TENSORFLOW__DATA_TYPE__DT_FLOAT;
}

int fl_graph_def_read_dtype(Tensorflow__DataType type, fl_dtype *out)
{
    if (type != TENSORFLOW__DATA_TYPE__DT_FLOAT && type != TENSORFLOW__DATA_TYPE__DT_INT32)
        return -1;
    *out = type == TENSORFLOW__DATA_TYPE__DT_INT32 ? FL_INT32 : FL_FLOAT32;
    return 0;
}

Tensorflow__TensorShapeProto *fl_graph_def_shape(fl_shape shape)
{
    Tensorflow__TensorShapeProto *proto = fl_xmalloc(sizeof *proto);
    tensorflow__tensor_shape_proto__init(proto);
    proto->n_dim = (size_t)shape.rank;
    proto->dim = fl_xcalloc((size_t)shape.rank + 1, sizeof *proto->dim);
    for (int d = 0; d < shape.rank; d++) {
        proto->dim[d] = fl_xmalloc(sizeof *proto->dim[d]);
        tensorflow__tensor_shape_proto__dim__init(proto->dim[d]);
        proto->dim[d]->size = shape.dims[d];
    }
    return proto;
}

int fl_graph_def_read_shape(const Tensorflow__TensorShapeProto *proto, fl_shape *out, fl_status *st)
{
    memset(out, 0, sizeof *out);
    if (proto->n_dim > FL_MAX_RANK)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "rank %zu, over %d", proto->n_dim, FL_MAX_RANK);
    for (size_t d = 0; d < proto->n_dim; d++) {
        int64_t size = proto->dim[d]->size;
        if (size == 0 || size < -1 || size > INT_MAX)
            return fl_status_set(st, FL_INVALID_ARGUMENT, "dimension %lld", (long long)size);
        out->dims[d] = (int)size;
    }
    out->rank = (int)proto->n_dim;
    return 0;
}

static void set_text(Tensorflow__AttrValue *v, const char *text)
{
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
    v->s.len = strlen(text);
    v->s.data = (uint8_t *)fl_xstrdup(text);
}

static void set_axes(Tensorflow__AttrValue *v, const bool *axes)
{
    Tensorflow__AttrValue__ListValue *list = fl_xmalloc(sizeof *list);
    tensorflow__attr_value__list_value__init(list);
    list->n_b = FL_MAX_RANK;
    list->b = fl_xcalloc(FL_MAX_RANK, sizeof *list->b);
    for (int i = 0; i < FL_MAX_RANK; i++)
        list->b[i] = axes[i];
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    v->list = list;
}

static Tensorflow__AttrValue *value_of(const attr_field *f, const void *field)
{
    Tensorflow__AttrValue *v = fl_xmalloc(sizeof *v);
    tensorflow__attr_value__init(v);
    v->value_case = CASE_OF[f->kind];
    switch (f->kind) {
    case KIND_BOOL: v->b = *(const bool *)field; break;
    case KIND_INT: v->i = *(const int *)field; break;
    case KIND_FLOAT: v->f = *(const float *)field; break;
    case KIND_SEED: v->i = (int64_t) * (const uint64_t *)field; break;
    case KIND_SHAPE: v->shape = fl_graph_def_shape(*(const fl_shape *)field); break;
    case KIND_DTYPE: v->type = fl_graph_def_dtype(*(const fl_dtype *)field); break;
    case KIND_PADDING: set_text(v, *(const fl_padding *)field == FL_VALID ? "VALID" : "SAME"); break;
    case KIND_AXES: set_axes(v, field); break;
    case KIND_TEXT: set_text(v, field); break;
    }
    return v;
}

void fl_graph_def_add_attr(Tensorflow__NodeDef *def, const char *key, Tensorflow__AttrValue *value)
{
    Tensorflow__AttrEntry *entry = fl_xmalloc(sizeof *entry);
    tensorflow__attr_entry__init(entry);
    entry->key = fl_xstrdup(key);
    entry->value = value;
    def->attr = fl_xrealloc(def->attr, (def->n_attr + 1) * sizeof *def->attr);
    def->attr[def->n_attr++] = entry;
}

static bool is_zero(const unsigned char *bytes, size_t size)
{
    for (size_t i = 0; i < size; i++)
        if (bytes[i])
            return false;
    return true;
}

void fl_graph_def_write_attrs(const fl_attrs *a, Tensorflow__NodeDef *def)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        const unsigned char *field = (const unsigned char *)a + FIELDS[i].offset;
        if (!is_zero(field, FIELDS[i].kind == KIND_TEXT ? 1 : FIELDS[i].size)) /* text: up to its NUL */
            fl_graph_def_add_attr(def, FIELDS[i].name, value_of(&FIELDS[i], field));
    }
}

/* ---- reading ---- */

/* printable bytes ('!'..'~'), as a name on the wire, into a field of size bytes. */
static int read_text(const attr_field *f, const ProtobufCBinaryData *s, char *out, fl_status *st)
{
    if (s->len >= f->size)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s of %zu bytes, over %zu", f->name, s->len, f->size - 1);
    for (size_t i = 0; i < s->len; i++)
        if (s->data[i] < '!' || s->data[i] > '~')
            return fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s is not printable (byte 0x%02x at offset %zu)",
                                 f->name, s->data[i], i);
    memcpy(out, s->data, s->len);
    out[s->len] = '\0';
    return 0;
}

static int read_padding(const ProtobufCBinaryData *s, fl_padding *out, fl_status *st)
{
    bool valid = s->len == 5 && memcmp(s->data, "VALID", 5) == 0;
    if (!valid && !(s->len == 4 && memcmp(s->data, "SAME", 4) == 0))
        return fl_status_set(st, FL_INVALID_ARGUMENT, "attr padding is neither SAME nor VALID");
    *out = valid ? FL_VALID : FL_SAME;
    return 0;
}

static int read_axes(const Tensorflow__AttrValue__ListValue *list, bool *axes, fl_status *st)
{
    if (list->n_b != FL_MAX_RANK || list->n_i || list->n_shape)
        return fl_status_set(st, FL_INVALID_ARGUMENT, "attr reduce_axis is not a list of %d bools", FL_MAX_RANK);
    for (int i = 0; i < FL_MAX_RANK; i++)
        axes[i] = list->b[i] != 0;
    return 0;
}

static int read_value(const attr_field *f, const Tensorflow__AttrValue *v, void *field, fl_status *st)
{
    switch (f->kind) {
    case KIND_BOOL: *(bool *)field = v->b != 0; return 0;
    case KIND_SEED: *(uint64_t *)field = (uint64_t)v->i; return 0;
    case KIND_INT:
        if (v->i < INT_MIN || v->i > INT_MAX)
            return fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s is %lld, outside an int", f->name, (long long)v->i);
        *(int *)field = (int)v->i;
        return 0;
    case KIND_FLOAT:
        *(float *)field = v->f;
        return isfinite(v->f) ? 0 : fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s is not finite", f->name);
    case KIND_SHAPE:
        return fl_graph_def_read_shape(v->shape, field, st) != 0
                   ? fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s has %s", f->name, st->message)
                   : 0;
    case KIND_DTYPE:
        return fl_graph_def_read_dtype(v->type, field) != 0
                   ? fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s is type %d, neither DT_FLOAT nor DT_INT32", f->name,
                                   (int)v->type)
                   : 0;
    case KIND_PADDING: return read_padding(&v->s, field, st);
    case KIND_AXES: return read_axes(v->list, field, st);
    case KIND_TEXT: return read_text(f, &v->s, field, st);
    }
    return 0;
}

int fl_graph_def_read_attr(const Tensorflow__AttrEntry *entry, fl_attrs *a, fl_status *st)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        const attr_field *f = &FIELDS[i];
        if (strcmp(entry->key, f->name) != 0)
            continue;
        if (!entry->value || entry->value->value_case != CASE_OF[f->kind])
            return fl_status_set(st, FL_INVALID_ARGUMENT, "attr %s is not a %s", f->name, KIND_NAME[f->kind]);
        return read_value(f, entry->value, (unsigned char *)a + f->offset, st) != 0 ? -1 : 1;
    }
    return 0;
}
