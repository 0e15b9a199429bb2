/* wire_put_tensors.c: the frames that carry tensors: RUN_PARTITION (feeds),
 * PARTITION_DONE (fetched values, and the step's timings) and SEND_TENSOR
 * (its elements the frame's tail, copied or lent). A message's parts are built
 * in the buffer's scratch arena, kept from frame to frame, so a warm step
 * allocates nothing; a tensor's elements are packed straight from its data. */
#include <stdio.h>
#include <stdlib.h>

#include "wire_internal.h"

typedef struct {
    Tensorflow__TensorProto proto;
    Tensorflow__TensorShapeProto shape;
    Tensorflow__TensorShapeProto__Dim dims[FL_MAX_RANK];
    Tensorflow__TensorShapeProto__Dim *dim_list[FL_MAX_RANK];
} tensor_message;

static int refuse(fl_wire_buf *buf, fl_wire_type type, const char *why)
{
    snprintf(buf->error, sizeof buf->error, "%s: %s", fl_wire_type_name(type), why);
    return -1;
}

static fl_wire_arena *scratch(fl_wire_buf *buf)
{
    if (!buf->scratch)
        buf->scratch = fl_wire_arena_new();
    if (buf->scratch)
        wire_arena_reset(buf->scratch, FL_WIRE_MAX_PAYLOAD);
    return buf->scratch;
}

/* Elements as little-endian words: a memcpy on the hosts people train on. */
static void copy_little_endian(unsigned char *out, const void *src, size_t bytes)
{
    if (wire_host_is_little_endian()) {
        memcpy(out, src, bytes);
        return;
    }
    for (size_t i = 0; i < bytes; i += 4) {
        uint32_t word;
        memcpy(&word, (const unsigned char *)src + i, 4);
        for (int k = 0; k < 4; k++)
            out[i + k] = (unsigned char)(word >> (8 * k));
    }
}

/* t's dtype and shape into m, and its elements unless they go as a tail
 * (*bytes: how many). A bad shape is left for the check to name. */
static int fill_tensor(tensor_message *m, const fl_tensor *t, fl_wire_arena *content, size_t *bytes)
{
    int64_t count = 0;
    fl_status why = {0};
    int rank = t->shape.rank >= 0 && t->shape.rank <= FL_MAX_RANK ? t->shape.rank : 0;
    tensorflow__tensor_proto__init(&m->proto);
    tensorflow__tensor_shape_proto__init(&m->shape);
    m->proto.dtype = t->dtype == FL_FLOAT32 ? TENSORFLOW__DATA_TYPE__DT_FLOAT
                     : t->dtype == FL_INT32 ? TENSORFLOW__DATA_TYPE__DT_INT32
                                            : TENSORFLOW__DATA_TYPE__DT_INVALID;
    for (int i = 0; i < rank; i++) {
        tensorflow__tensor_shape_proto__dim__init(&m->dims[i]);
        m->dims[i].size = t->shape.dims[i];
        m->dim_list[i] = &m->dims[i];
    }
    m->shape.n_dim = (size_t)rank;
    m->shape.dim = m->dim_list;
    m->proto.tensor_shape = &m->shape;
    *bytes = wire_check_shape(t->shape.rank, t->shape.dims, &count, &why) == 0 ? (size_t)count * 4 : 0;
    if (!content)
        return 0;
    uint8_t *data = t->data;
    if (!wire_host_is_little_endian() && !(data = wire_arena_alloc(content, *bytes)))
        return -1;
    if (data != t->data)
        copy_little_endian(data, t->data, *bytes);
    m->proto.tensor_content = (ProtobufCBinaryData){*bytes, data};
    return 0;
}

/* n tensors' messages, and the list of pointers to them, in the scratch arena. */
static int fill_tensors(fl_wire_buf *buf, fl_wire_type type, int n, const fl_tensor *const *values,
                        Tensorflow__TensorProto ***list)
{
    fl_wire_arena *a = scratch(buf);
    tensor_message *m = a ? wire_arena_alloc(a, ((size_t)n + 1) * sizeof *m) : NULL;
    size_t bytes;
    *list = a ? wire_arena_alloc(a, ((size_t)n + 1) * sizeof **list) : NULL;
    if (!m || !*list)
        return refuse(buf, type, "out of memory");
    for (int i = 0; i < n; i++) {
        if (!values[i] || !values[i]->data)
            return refuse(buf, type, "no tensor given");
        if (fill_tensor(&m[i], values[i], a, &bytes) != 0)
            return refuse(buf, type, "out of memory");
        (*list)[i] = &m[i].proto;
    }
    return 0;
}

static bool count_ok(int n)
{
    return n >= 0 && n <= FL_WIRE_MAX_LIST;
}

int fl_wire_put_run_partition(fl_wire_buf *buf, uint32_t id, uint64_t handle, uint64_t step_id, uint32_t flags,
                              int nfeeds, const char *const *feed_names, const fl_tensor *const *feed_values,
                              const fl_wire_name_list lists[2])
{
    const fl_wire_type type = FL_WIRE_RUN_PARTITION;
    Flowlab__RunGraphRequest m = FLOWLAB__RUN_GRAPH_REQUEST__INIT;
    Tensorflow__TensorProto **tensors;
    if (flags & ~FL_WIRE_RUN_TRACE)
        return refuse(buf, type, "flags hold bits other than FL_WIRE_RUN_TRACE");
    if (!count_ok(nfeeds) || !count_ok(lists[0].count) || !count_ok(lists[1].count))
        return refuse(buf, type, "a list of feeds, fetches or targets outside 0..65535");
    if (fill_tensors(buf, type, nfeeds, feed_values, &tensors) != 0)
        return -1;
    Flowlab__NamedTensorProto *feeds = wire_arena_alloc(buf->scratch, ((size_t)nfeeds + 1) * sizeof *feeds);
    Flowlab__NamedTensorProto **feed_list = wire_arena_alloc(buf->scratch, ((size_t)nfeeds + 1) * sizeof *feed_list);
    if (!feeds || !feed_list)
        return refuse(buf, type, "out of memory");
    for (int i = 0; i < nfeeds; i++) {
        flowlab__named_tensor_proto__init(&feeds[i]);
        feeds[i].name = (char *)(feed_names[i] ? feed_names[i] : "");
        feeds[i].tensor = tensors[i];
        feed_list[i] = &feeds[i];
    }
    m.graph_handle = handle;
    m.step_id = step_id;
    m.trace = (flags & FL_WIRE_RUN_TRACE) != 0;
    m.n_send = (size_t)nfeeds;
    m.send = feed_list;
    m.n_recv_key = (size_t)lists[0].count;
    m.recv_key = (char **)lists[0].names;
    m.n_target = (size_t)lists[1].count;
    m.target = (char **)lists[1].names;
    return wire_put_message(buf, type, id, &m.base, 0);
}

/* Each device's peak as TensorFlow's AllocatorMemoryUsed, in the scratch arena. */
static int fill_peaks(fl_wire_buf *buf, const fl_wire_step_trace *t, Flowlab__StepStats *s)
{
    if (t->npeaks < 0 || t->npeaks > FL_WIRE_MAX_PEAKS)
        return refuse(buf, FL_WIRE_PARTITION_DONE, "a count of device peaks outside 0..64");
    Flowlab__AllocatorMemoryUsed *peaks = wire_arena_alloc(buf->scratch, ((size_t)t->npeaks + 1) * sizeof *peaks);
    Flowlab__AllocatorMemoryUsed **list = wire_arena_alloc(buf->scratch, ((size_t)t->npeaks + 1) * sizeof *list);
    if (!peaks || !list)
        return refuse(buf, FL_WIRE_PARTITION_DONE, "out of memory");
    for (int i = 0; i < t->npeaks; i++) {
        flowlab__allocator_memory_used__init(&peaks[i]);
        peaks[i].allocator_name = (char *)(t->peaks[i].device ? t->peaks[i].device : "");
        peaks[i].peak_bytes = t->peaks[i].peak_bytes;
        list[i] = &peaks[i];
    }
    s->n_memory = (size_t)t->npeaks;
    s->memory = list;
    return 0;
}

/* The trace as TensorFlow's StepStats, in the scratch arena. */
static int fill_step_stats(fl_wire_buf *buf, const fl_wire_step_trace *t, Flowlab__StepStats *s)
{
    const fl_wire_type type = FL_WIRE_PARTITION_DONE;
    if (!count_ok(t->count))
        return refuse(buf, type, "a count of trace events outside 0..65535");
    Flowlab__NodeExecStats *events = wire_arena_alloc(buf->scratch, ((size_t)t->count + 1) * sizeof *events);
    Flowlab__NodeExecStats **list = wire_arena_alloc(buf->scratch, ((size_t)t->count + 1) * sizeof *list);
    if (!events || !list)
        return refuse(buf, type, "out of memory");
    for (int i = 0; i < t->count; i++) {
        const fl_wire_trace_event *e = &t->events[i];
        flowlab__node_exec_stats__init(&events[i]);
        events[i].node_name = (char *)(e->name ? e->name : "");
        events[i].op = (char *)(e->op ? e->op : "");
        events[i].device = (char *)(e->device ? e->device : "");
        events[i].start_ns = e->start_ns;
        events[i].duration_ns = e->duration_ns;
        list[i] = &events[i];
    }
    flowlab__step_stats__init(s);
    s->step_ns = t->step_ns;
    s->n_node_stats = (size_t)t->count;
    s->node_stats = list;
    return fill_peaks(buf, t, s);
}

int fl_wire_put_partition_done(fl_wire_buf *buf, uint32_t id, const fl_wire_step_trace *trace, int nvalues,
                               const fl_tensor *const *values)
{
    const fl_wire_type type = FL_WIRE_PARTITION_DONE;
    Flowlab__RunGraphResponse m = FLOWLAB__RUN_GRAPH_RESPONSE__INIT;
    Flowlab__StepStats stats;
    if (!count_ok(nvalues))
        return refuse(buf, type, "a count of values outside 0..65535");
    if (fill_tensors(buf, type, nvalues, values, &m.recv) != 0 || (trace && fill_step_stats(buf, trace, &stats) != 0))
        return -1;
    m.n_recv = (size_t)nvalues;
    m.step_stats = trace ? &stats : NULL;
    return wire_put_message(buf, type, id, &m.base, 0);
}

/* SEND_TENSOR: the value's dtype and shape in the body, its elements the
 * tail, copied after it or lent (buf->lent: nothing may follow in buf). */
static int put_send_tensor(fl_wire_buf *buf, uint32_t id, uint64_t step_id, const char *key, const fl_tensor *value,
                           bool lend)
{
    const fl_wire_type type = FL_WIRE_SEND_TENSOR;
    Flowlab__SendTensorRequest m = FLOWLAB__SEND_TENSOR_REQUEST__INIT;
    tensor_message head;
    size_t bytes, start = buf->len;
    if (!value || !value->data)
        return refuse(buf, type, "no tensor given");
    if (lend && !wire_host_is_little_endian())
        return refuse(buf, type, "this host's byte order is not the wire's; copy the value");
    fill_tensor(&head, value, NULL, &bytes);
    m.step_id = step_id;
    m.key = (char *)(key ? key : "");
    m.head = &head.proto;
    if (wire_put_message(buf, type, id, &m.base, bytes) != 0)
        return -1;
    if (lend) {
        buf->lent = value->data;
        buf->lent_len = bytes;
        return 0;
    }
    unsigned char *out = wire_extend(buf, bytes);
    if (!out) {
        buf->len = start;
        return refuse(buf, type, "out of memory");
    }
    copy_little_endian(out, value->data, bytes);
    return 0;
}

int fl_wire_put_send_tensor(fl_wire_buf *buf, uint32_t id, uint64_t step_id, const char *key,
                            const fl_tensor *value)
{
    return put_send_tensor(buf, id, step_id, key, value, false);
}

int fl_wire_put_send_tensor_head(fl_wire_buf *buf, uint32_t id, uint64_t step_id, const char *key,
                                 const fl_tensor *value)
{
    return put_send_tensor(buf, id, step_id, key, value, true);
}
