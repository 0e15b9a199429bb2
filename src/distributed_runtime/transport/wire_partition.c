/* wire_partition.c: the frames of in-graph replication across tasks
 * (chapter 3): registering a partition, running it for a step, a value sent
 * from task to task, a step given up. Encoders check what parsers check; a
 * RUN_PARTITION's names are copied into one block the size of the payload,
 * so a hostile count can never ask for more memory than the frame brought. */
#include <stdlib.h>
#include <string.h>

#include "wire_internal.h"

/* ---- encoding ---- */

int fl_wire_put_register_partition(fl_wire_buf *buf, uint32_t id, const void *graph, size_t len)
{
    long start = wire_begin(buf, FL_WIRE_REGISTER_PARTITION, id);
    if (start < 0)
        return -1;
    if (!graph || len == 0)
        return wire_abort(buf, start, "REGISTER_PARTITION: no partition given");
    if (wire_append(buf, graph, len) != 0)
        return wire_abort(buf, start, "REGISTER_PARTITION: out of memory");
    return wire_end(buf, start);
}

/* A frame whose payload is one u64: a handle or a step id. */
int fl_wire_put_number(fl_wire_buf *buf, fl_wire_type type, uint32_t id, uint64_t number)
{
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (type != FL_WIRE_PARTITION_REGISTERED && type != FL_WIRE_ABORT_STEP && type != FL_WIRE_DEREGISTER_PARTITION)
        return wire_abort(buf, start, "%s does not carry one number", fl_wire_type_name(type));
    if (wire_put_u64(buf, number) != 0)
        return wire_abort(buf, start, "%s: out of memory", fl_wire_type_name(type));
    return wire_end(buf, start);
}

int fl_wire_put_partition_registered(fl_wire_buf *buf, uint32_t id, uint64_t handle)
{
    return fl_wire_put_number(buf, FL_WIRE_PARTITION_REGISTERED, id, handle);
}

static int put_count(fl_wire_buf *buf, long start, fl_wire_type type, const char *what, int count)
{
    if (count < 0 || count > FL_WIRE_MAX_LIST)
        return wire_abort(buf, start, "%s: %d %s, outside 0..%d", fl_wire_type_name(type), count, what,
                          FL_WIRE_MAX_LIST);
    if (wire_put_u32(buf, (uint32_t)count) != 0)
        return wire_abort(buf, start, "%s: out of memory", fl_wire_type_name(type));
    return 0;
}

static const char *const LIST_WHAT[2] = {"fetch", "target"};

static int put_list(fl_wire_buf *buf, long start, int which, const fl_wire_name_list *list)
{
    if (put_count(buf, start, FL_WIRE_RUN_PARTITION, LIST_WHAT[which], list->count) != 0)
        return -1;
    for (int i = 0; i < list->count; i++)
        if (wire_put_name(buf, start, FL_WIRE_RUN_PARTITION, LIST_WHAT[which], list->names[i]) != 0)
            return -1;
    return 0;
}

/* handle u64, step u64, flags u32, feeds (u32 count, then name and tensor
 * each), then two lists of names (u32 count, then the names): fetches and
 * targets, among them the Sends the step needs. */
int fl_wire_put_run_partition(fl_wire_buf *buf, uint32_t id, uint64_t handle, uint64_t step_id, uint32_t flags,
                              int nfeeds, const char *const *feed_names, const fl_tensor *const *feed_values,
                              const fl_wire_name_list lists[2])
{
    const fl_wire_type type = FL_WIRE_RUN_PARTITION;
    long start = wire_begin(buf, type, id);
    if (start < 0)
        return -1;
    if (flags & ~FL_WIRE_RUN_TRACE)
        return wire_abort(buf, start, "RUN_PARTITION: flags 0x%x hold bits other than FL_WIRE_RUN_TRACE", flags);
    if (wire_put_u64(buf, handle) != 0 || wire_put_u64(buf, step_id) != 0 || wire_put_u32(buf, flags) != 0)
        return wire_abort(buf, start, "RUN_PARTITION: out of memory");
    if (put_count(buf, start, type, "feeds", nfeeds) != 0)
        return -1;
    for (int i = 0; i < nfeeds; i++)
        if (wire_put_name(buf, start, type, "feed", feed_names[i]) != 0 ||
            wire_put_tensor(buf, start, type, feed_values[i]) != 0)
            return -1;
    for (int k = 0; k < 2; k++)
        if (put_list(buf, start, k, &lists[k]) != 0)
            return -1;
    return wire_end(buf, start);
}

/* The trace field (wire_step_trace.c), then the values. */
int fl_wire_put_partition_done(fl_wire_buf *buf, uint32_t id, const fl_wire_step_trace *trace, int nvalues,
                               const fl_tensor *const *values)
{
    long start = wire_begin(buf, FL_WIRE_PARTITION_DONE, id);
    if (start < 0)
        return -1;
    if (wire_put_step_trace(buf, start, trace) != 0)
        return -1;
    if (put_count(buf, start, FL_WIRE_PARTITION_DONE, "values", nvalues) != 0)
        return -1;
    for (int i = 0; i < nvalues; i++)
        if (wire_put_tensor(buf, start, FL_WIRE_PARTITION_DONE, values[i]) != 0)
            return -1;
    return wire_end(buf, start);
}

/* SEND_TENSOR whole, or with its data lent. */
static int put_send_tensor(fl_wire_buf *buf, uint32_t id, uint64_t step_id, const char *key, const fl_tensor *value,
                           bool lend)
{
    long start = wire_begin(buf, FL_WIRE_SEND_TENSOR, id);
    size_t lent = 0;
    if (start < 0)
        return -1;
    if (wire_put_u64(buf, step_id) != 0)
        return wire_abort(buf, start, "SEND_TENSOR: out of memory");
    if (wire_put_name(buf, start, FL_WIRE_SEND_TENSOR, "key", key) != 0)
        return -1;
    int rc = lend ? wire_put_tensor_head(buf, start, FL_WIRE_SEND_TENSOR, value, &lent)
                  : wire_put_tensor(buf, start, FL_WIRE_SEND_TENSOR, value);
    if (rc != 0 || wire_end_before(buf, start, lent) != 0)
        return -1;
    if (lend) { /* the frame's end: nothing may follow it in buf */
        buf->lent = value->data;
        buf->lent_len = lent;
    }
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

/* ---- parsing ---- */

/* A count, checked against the bytes left: each entry takes at least
 * min_bytes, so a count the payload cannot hold is refused before use. */
static int get_count(wire_cursor *c, const char *what, size_t min_bytes, int *count)
{
    uint32_t n;
    if (wire_get_u32(c, what, &n) != 0)
        return -1;
    if (n > FL_WIRE_MAX_LIST)
        return wire_fail(c, "%u %s, over the %d limit", (unsigned)n, what, FL_WIRE_MAX_LIST);
    if ((uint64_t)n * min_bytes > c->left)
        return wire_fail(c, "%u %s cannot fit in the %zu bytes left", (unsigned)n, what, c->left);
    *count = (int)n;
    return 0;
}

/* The pointer arrays and the names share one block: the arrays first
 * (counts are known before the names: each list is counted, then walked). */
typedef struct {
    char *pool;
    const char **slots;
    int used, cap;
} run_storage;

static int get_list(wire_cursor *c, run_storage *st, int which, fl_wire_name_list *list)
{
    int n;
    if (get_count(c, LIST_WHAT[which], 2, &n) != 0)
        return -1;
    if (st->used + n > st->cap)
        return wire_fail(c, "more names than the payload can hold");
    const char **names = st->slots + st->used;
    st->used += n;
    for (int i = 0; i < n; i++)
        if (wire_get_pooled_name(c, LIST_WHAT[which], &st->pool, &names[i]) != 0)
            return -1;
    list->count = n;
    list->names = names;
    return 0;
}

static int get_feeds(wire_cursor *c, run_storage *st, fl_wire_run_partition *out)
{
    if (get_count(c, "feeds", 2 + 6, &out->nfeeds) != 0)
        return -1;
    if (st->used + out->nfeeds > st->cap)
        return wire_fail(c, "more names than the payload can hold");
    out->feed_names = st->slots + st->used;
    st->used += out->nfeeds;
    out->feed_values = calloc((size_t)out->nfeeds + 1, sizeof *out->feed_values);
    if (!out->feed_values)
        return wire_fail(c, "out of memory");
    for (int i = 0; i < out->nfeeds; i++)
        if (wire_get_pooled_name(c, "feed", &st->pool, &out->feed_names[i]) != 0 ||
            wire_get_tensor(c, &out->feed_values[i]) != 0)
            return -1;
    return 0;
}

void fl_wire_run_partition_free(fl_wire_run_partition *r)
{
    free(r->storage);
    free(r->feed_values);
    memset(r, 0, sizeof *r);
}

int fl_wire_parse_run_partition(const fl_wire_frame *f, fl_wire_run_partition *out, fl_status *st)
{
    wire_cursor c;
    memset(out, 0, sizeof *out);
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_RUN_PARTITION, "RUN_PARTITION", st) != 0)
        return -1;
    /* Every name takes at least 2 payload bytes: payload/2 slots, payload bytes of text. */
    size_t cap = f->payload_len / 2 + 1;
    out->storage = malloc(cap * sizeof(char *) + f->payload_len + 1);
    if (!out->storage)
        return wire_fail(&c, "out of memory");
    run_storage room = {(char *)out->storage + cap * sizeof(char *), out->storage, 0, (int)cap};
    int rc = wire_get_u64(&c, "handle", &out->handle) != 0 || wire_get_u64(&c, "step", &out->step_id) != 0 ||
                     wire_get_u32(&c, "flags", &out->flags) != 0 || get_feeds(&c, &room, out) != 0
                 ? -1
                 : 0;
    if (rc == 0 && (out->flags & ~FL_WIRE_RUN_TRACE))
        rc = wire_fail(&c, "flags 0x%x hold bits other than FL_WIRE_RUN_TRACE (1)", (unsigned)out->flags);
    for (int k = 0; k < 2 && rc == 0; k++)
        rc = get_list(&c, &room, k, &out->lists[k]);
    if (rc == 0)
        rc = wire_finish(&c);
    if (rc != 0)
        fl_wire_run_partition_free(out);
    return rc;
}

static int get_values(wire_cursor *c, fl_wire_tensor **values, int *count)
{
    int n;
    if (get_count(c, "values", 6, &n) != 0)
        return -1;
    fl_wire_tensor *out = calloc((size_t)n + 1, sizeof *out);
    if (!out)
        return wire_fail(c, "out of memory");
    for (int i = 0; i < n; i++)
        if (wire_get_tensor(c, &out[i]) != 0) {
            free(out);
            return -1;
        }
    *values = out;
    *count = n;
    return 0;
}

int fl_wire_parse_partition_done(const fl_wire_frame *f, fl_wire_tensor **values, int *count,
                                 fl_wire_step_trace *trace, fl_status *st)
{
    wire_cursor c;
    fl_wire_step_trace got = {0};
    *values = NULL;
    *count = 0;
    if (trace)
        memset(trace, 0, sizeof *trace);
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_PARTITION_DONE, "PARTITION_DONE", st) != 0)
        return -1;
    if (wire_get_step_trace(&c, &got) != 0)
        return -1;
    if (get_values(&c, values, count) != 0 || wire_finish(&c) != 0) {
        free(*values);
        *values = NULL;
        *count = 0;
        fl_wire_step_trace_free(&got);
        return -1;
    }
    if (trace)
        *trace = got;
    else
        fl_wire_step_trace_free(&got);
    return 0;
}

int fl_wire_parse_send_tensor(const fl_wire_frame *f, fl_wire_send_tensor *out, fl_status *st)
{
    wire_cursor c;
    if (wire_cursor_open(&c, f, f->type == FL_WIRE_SEND_TENSOR, "SEND_TENSOR", st) != 0)
        return -1;
    if (wire_get_u64(&c, "step", &out->step_id) != 0 || wire_get_name(&c, "key", out->key) != 0 ||
        wire_get_tensor(&c, &out->value) != 0)
        return -1;
    return wire_finish(&c);
}

int fl_wire_parse_number(const fl_wire_frame *f, uint64_t *number, fl_status *st)
{
    wire_cursor c;
    bool type_ok = f->type == FL_WIRE_PARTITION_REGISTERED || f->type == FL_WIRE_ABORT_STEP ||
                   f->type == FL_WIRE_DEREGISTER_PARTITION;
    if (wire_cursor_open(&c, f, type_ok, "one-number", st) != 0)
        return -1;
    if (wire_get_u64(&c, "number", number) != 0)
        return -1;
    return wire_finish(&c);
}

bool wire_is_partition_frame(fl_wire_type type)
{
    return type >= FL_WIRE_REGISTER_PARTITION && type <= FL_WIRE_DEREGISTER_PARTITION;
}

/* fl_wire_parse's part: lists are checked here and parsed again by whoever
 * serves them; a partition's graph is partition_def.c's to check. */
int wire_parse_partition_frame(const fl_wire_frame *f, fl_wire_message *out, fl_status *st)
{
    out->u.body = (fl_wire_bytes){f->payload, f->payload_len};
    if (f->type == FL_WIRE_SEND_TENSOR)
        return fl_wire_parse_send_tensor(f, &out->u.send, st);
    if (f->type == FL_WIRE_RUN_PARTITION) {
        fl_wire_run_partition run;
        int rc = fl_wire_parse_run_partition(f, &run, st);
        fl_wire_run_partition_free(&run);
        return rc;
    }
    if (f->type == FL_WIRE_PARTITION_DONE) {
        fl_wire_tensor *values;
        int n;
        int rc = fl_wire_parse_partition_done(f, &values, &n, NULL, st);
        free(values);
        return rc;
    }
    if (f->type == FL_WIRE_REGISTER_PARTITION) {
        wire_cursor c;
        if (wire_cursor_open(&c, f, true, "REGISTER_PARTITION", st) != 0)
            return -1;
        if (f->payload_len == 0)
            return wire_fail(&c, "the payload is empty");
        return 0;
    }
    return fl_wire_parse_number(f, &out->u.number, st);
}
