/* test_partition_wire.c: the frames of in-graph replication across tasks
 * (REGISTER_PARTITION .. DEREGISTER_PARTITION) and a partition's graph as
 * protobuf message (partition_def), with no sockets: every frame round trips (a lent
 * SEND_TENSOR's head and data make the whole frame's bytes), a partition
 * comes back node for node, and malformed or oversized ones are refused
 * with a message naming the node, never a crash. Hostile bodies are packed
 * with protobuf-c alone (wire.proto's messages), which checks nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/transport/wire.h"
#include "runtime.h"
#include "tap.h"
#include "wire.pb-c.h" /* build/gen/distributed_runtime/ */

static fl_status err = {0};

/* The one frame in buf, decoded; false when it is not exactly one. */
static bool one_frame(const fl_wire_buf *buf, fl_wire_frame *f)
{
    return fl_wire_decode(buf->data, buf->len, f, &err) == FL_WIRE_FRAME && f->frame_len == buf->len;
}

/* A header by hand (version 2, request 1, no tail), then the body. */
static unsigned char *framed(fl_wire_type type, const void *body, size_t n, fl_wire_frame *f)
{
    unsigned char *out = malloc(FL_WIRE_HEADER_BYTES + n + 1);
    const unsigned char head[FL_WIRE_HEADER_BYTES] = {'F', 'L', 'W', 'P', 2, (unsigned char)type, 0, 0, 0, 0, 0, 1,
                                                      (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                                      (unsigned char)(n >> 8), (unsigned char)n, 0, 0, 0, 0};
    memcpy(out, head, sizeof head);
    memcpy(out + sizeof head, body, n);
    fl_wire_decode(out, sizeof head + n, f, &err);
    return out;
}

static void test_run_partition(void)
{
    float v[6] = {1, 2, 3, 4, 5, 6};
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 2, 3), v);
    const char *feeds[] = {"x"};
    const fl_tensor *values[] = {x};
    const char *fetches[] = {"loss", "tower_0/logits"}, *targets[] = {"train"};
    fl_wire_name_list lists[2] = {{2, fetches}, {1, targets}};
    fl_wire_buf buf = {0};
    ok(fl_wire_put_run_partition(&buf, 7, 42, 1001, FL_WIRE_RUN_TRACE, 1, feeds, values, lists) == 0,
       "RUN_PARTITION encodes: %s", buf.error);
    fl_wire_frame f;
    fl_wire_message m;
    fl_wire_arena *arena = fl_wire_arena_new();
    ok(one_frame(&buf, &f) && fl_wire_parse(&f, &m, &err) == 0 && m.u.body.len == f.body_len,
       "RUN_PARTITION decodes and checks without an arena, its body left whole: %s", err.message);
    ok(fl_wire_parse_in(&f, arena, &m, &err) == 0, "RUN_PARTITION parses into an arena: %s", err.message);
    const fl_wire_run_partition *r = &m.u.run;
    ok(r->handle == 42 && r->step_id == 1001 && r->flags == FL_WIRE_RUN_TRACE && r->nfeeds == 1 &&
           strcmp(r->feed_names[0], "x") == 0, "handle, step, the trace flag and feed name round trip");
    float got[6] = {0};
    fl_wire_tensor_read(&r->feed_values[0], got);
    ok(r->feed_values[0].shape.rank == 2 && memcmp(got, v, sizeof v) == 0, "the feed's value round trips");
    bool lists_same = true;
    for (int k = 0; k < 2; k++) {
        lists_same = lists_same && r->lists[k].count == lists[k].count;
        for (int i = 0; lists_same && i < lists[k].count; i++)
            lists_same = strcmp(r->lists[k].names[i], lists[k].names[i]) == 0;
    }
    ok(lists_same, "fetches and targets round trip");
    ok(fl_wire_reply_type(FL_WIRE_RUN_PARTITION) == FL_WIRE_PARTITION_DONE, "RUN_PARTITION is answered by PARTITION_DONE");
    is_string(fl_wire_type_name(FL_WIRE_RUN_PARTITION), "RUN_PARTITION", "its name");
    /* Cut at every length, from an exact copy: a prefix of a frame waits; a body
     * cut short (a header that lies) is refused or, cut between two fields, is
     * a smaller request; never a read past the end (ASan). */
    bool all_wait = true;
    int refused = 0;
    for (size_t cut = 0; cut < buf.len; cut++) {
        fl_wire_frame part;
        unsigned char *copy = malloc(cut + 1);
        memcpy(copy, buf.data, cut);
        all_wait = all_wait && fl_wire_decode(copy, cut, &part, &err) == FL_WIRE_NEED_MORE;
        if (cut >= FL_WIRE_HEADER_BYTES) {
            fl_wire_frame g = f;
            g.body = copy + FL_WIRE_HEADER_BYTES;
            g.body_len = (uint32_t)(cut - FL_WIRE_HEADER_BYTES);
            refused += fl_wire_parse_in(&g, arena, &m, &err) != 0;
        }
        free(copy);
    }
    ok(all_wait, "every prefix of a RUN_PARTITION frame waits for more bytes");
    ok(refused > 0, "bodies cut short: %d refused, none read past its end (last: %s)", refused, err.message);
    fl_wire_arena_free(arena);
    fl_wire_buf_free(&buf);
    fl_tensor_free(x);
}

/* n copies of a 2-byte field: an empty string or an empty message. */
static unsigned char *repeated(unsigned char tag, size_t n)
{
    unsigned char *body = malloc(2 * n);
    for (size_t i = 0; i < n; i++) {
        body[2 * i] = tag;
        body[2 * i + 1] = 0;
    }
    return body;
}

static void test_hostile_counts(void)
{
    fl_wire_frame f;
    fl_wire_message m;
    fl_wire_arena *arena = fl_wire_arena_new();
    unsigned char *body = repeated(5 << 3 | 2, 70000); /* recv_key, field 5 */
    unsigned char *frame = framed(FL_WIRE_RUN_PARTITION, body, 140000, &f);
    ok(fl_wire_parse_in(&f, arena, &m, &err) != 0, "70000 fetches are refused");
    is_string(err.message, "RUN_PARTITION: 70000 fetches, over the 65535 limit", "the message says which list");
    free(frame);
    free(body);
    body = repeated(1 << 3 | 2, 70000); /* recv, field 1: empty TensorProtos */
    frame = framed(FL_WIRE_PARTITION_DONE, body, 140000, &f);
    ok(fl_wire_parse_in(&f, arena, &m, &err) != 0, "PARTITION_DONE with too many values is refused: %s", err.message);
    free(frame);
    free(body);
    fl_wire_arena_free(arena);
    fl_wire_buf buf = {0};
    ok(fl_wire_put_register_partition(&buf, 1, NULL, 0) != 0, "an empty REGISTER_PARTITION is not encoded");
    fl_wire_buf_free(&buf);
}

static void test_small_frames(void)
{
    fl_wire_buf buf = {0};
    fl_wire_frame f;
    fl_wire_message m;
    float one = 3.5f;
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = {0, {0}}, .data = &one};
    fl_wire_put_send_tensor(&buf, 3, 99, "a:/job:ps/task:0->/job:worker/task:1", &t);
    ok(one_frame(&buf, &f) && fl_wire_parse(&f, &m, &err) == 0 && m.u.send.step_id == 99 &&
           strcmp(m.u.send.key, "a:/job:ps/task:0->/job:worker/task:1") == 0 && m.u.send.value.count == 1,
       "SEND_TENSOR round trips: %s", err.message);
    const fl_wire_type numbers[] = {FL_WIRE_PARTITION_REGISTERED, FL_WIRE_ABORT_STEP, FL_WIRE_DEREGISTER_PARTITION};
    for (int i = 0; i < 3; i++) {
        fl_wire_buf_free(&buf);
        fl_wire_put_number(&buf, numbers[i], 4, UINT64_C(0x123456789a));
        ok(one_frame(&buf, &f) && fl_wire_parse(&f, &m, &err) == 0 && m.u.number == UINT64_C(0x123456789a),
           "%s round trips its number", fl_wire_type_name(numbers[i]));
    }
    fl_wire_buf_free(&buf);
    const fl_tensor *values[] = {&t, &t};
    fl_wire_put_partition_done(&buf, 5, NULL, 2, values);
    fl_wire_arena *arena = fl_wire_arena_new();
    ok(one_frame(&buf, &f) && fl_wire_parse_in(&f, arena, &m, &err) == 0 && m.u.done.count == 2 &&
           m.u.done.trace.count == 0,
       "PARTITION_DONE round trips two values, untraced: %s", err.message);
    fl_wire_arena_free(arena);
    fl_wire_buf_free(&buf);
    ok(fl_wire_put_number(&buf, FL_WIRE_OK, 1, 1) != 0 && buf.len == 0, "an OK carries no number: %s", buf.error);
    fl_wire_buf_free(&buf);
}

/* ---- PARTITION_DONE's trace field: a task's timings of a traced step ---- */

/* A PARTITION_DONE with one traced op and one value, into buf. */
static void put_traced_done(fl_wire_buf *buf, uint64_t start_ns)
{
    float one = 3.5f;
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = {0, {0}}, .data = &one};
    const fl_tensor *values[] = {&t};
    fl_wire_trace_event op = {"tower_1/MatMul", "MatMul", "/job:worker/task:1/cpu:0", start_ns, 2000};
    fl_wire_device_peak peaks[2] = {{"/job:worker/task:1/cpu:0", 4096}, {"/job:worker/task:1/gpu:0", 1u << 30}};
    fl_wire_step_trace trace = {.step_ns = 10000, .count = 1, .events = &op, .npeaks = 2, .peaks = peaks};
    fl_wire_buf_free(buf);
    fl_wire_put_partition_done(buf, 5, &trace, 1, values);
}

/* A PARTITION_DONE whose trace no encoder would write, packed by protobuf-c
 * alone: n events of the op given, and npeaks device peaks on device. 0
 * when the parser takes it. */
static int parse_trace_with(uint64_t step_ns, size_t n, char *name, uint64_t start_ns, size_t npeaks, char *device)
{
    Flowlab__NodeExecStats *events = calloc(n + 1, sizeof *events), **list = calloc(n + 1, sizeof *list);
    for (size_t i = 0; i < n; i++) {
        flowlab__node_exec_stats__init(&events[i]);
        events[i] = (Flowlab__NodeExecStats){events[i].base, name, "MatMul", "/cpu:0", start_ns, 2000};
        list[i] = &events[i];
    }
    Flowlab__AllocatorMemoryUsed *peaks = calloc(npeaks + 1, sizeof *peaks), **peak_list = calloc(npeaks + 1, sizeof *peak_list);
    for (size_t i = 0; i < npeaks; i++) {
        flowlab__allocator_memory_used__init(&peaks[i]);
        peaks[i].allocator_name = device;
        peaks[i].peak_bytes = 4096;
        peak_list[i] = &peaks[i];
    }
    Flowlab__StepStats stats = FLOWLAB__STEP_STATS__INIT;
    Flowlab__RunGraphResponse done = FLOWLAB__RUN_GRAPH_RESPONSE__INIT;
    stats.step_ns = step_ns;
    stats.n_node_stats = n;
    stats.node_stats = list;
    stats.n_memory = npeaks;
    stats.memory = peak_list;
    done.step_stats = &stats;
    size_t len = flowlab__run_graph_response__get_packed_size(&done);
    unsigned char *body = malloc(len);
    flowlab__run_graph_response__pack(&done, body);
    fl_wire_frame f;
    fl_wire_message m;
    fl_wire_arena *arena = fl_wire_arena_new();
    unsigned char *frame = framed(FL_WIRE_PARTITION_DONE, body, len, &f);
    int rc = fl_wire_parse_in(&f, arena, &m, &err);
    fl_wire_arena_free(arena);
    free(frame);
    free(body);
    free(list);
    free(events);
    free(peak_list);
    free(peaks);
    return rc;
}

static int parse_trace(uint64_t step_ns, size_t n, char *name, uint64_t start_ns)
{
    return parse_trace_with(step_ns, n, name, start_ns, 0, NULL);
}

static void test_step_trace(void)
{
    fl_wire_buf buf = {0};
    put_traced_done(&buf, 100);
    fl_wire_frame f;
    fl_wire_message m;
    fl_wire_arena *arena = fl_wire_arena_new();
    ok(one_frame(&buf, &f) && fl_wire_parse(&f, &m, &err) == 0 && fl_wire_parse_in(&f, arena, &m, &err) == 0 &&
           m.u.done.count == 1,
       "a traced PARTITION_DONE round trips: %s", err.message);
    fl_wire_step_trace trace;
    fl_wire_step_trace_copy(&m.u.done.trace, &trace);
    fl_wire_arena_free(arena); /* the copy outlives the reply's message */
    ok(trace.step_ns == 10000 && trace.count == 1 && strcmp(trace.events[0].name, "tower_1/MatMul") == 0 &&
           strcmp(trace.events[0].op, "MatMul") == 0 && strcmp(trace.events[0].device, "/job:worker/task:1/cpu:0") == 0 &&
           trace.events[0].start_ns == 100 && trace.events[0].duration_ns == 2000,
       "its step length, op name, op, device, start and duration come back, and a copy keeps them");
    ok(trace.npeaks == 2 && strcmp(trace.peaks[0].device, "/job:worker/task:1/cpu:0") == 0 &&
           trace.peaks[0].peak_bytes == 4096 && strcmp(trace.peaks[1].device, "/job:worker/task:1/gpu:0") == 0 &&
           trace.peaks[1].peak_bytes == 1u << 30,
       "and each device's peak bytes (TensorFlow's AllocatorMemoryUsed), in the copy too");
    fl_wire_step_trace_free(&trace);
    put_traced_done(&buf, 9000);
    ok(buf.len == 0 && strstr(buf.error, "outside its step"), "an event past its step's end is not encoded: %s",
       buf.error);
    ok(parse_trace(10000, 65536, "op", 0) != 0 && strstr(err.message, "65536 trace events, over the 65535 limit"),
       "65536 trace events are refused: %s", err.message);
    ok(parse_trace(10000, 1, "a b", 0) != 0 && strstr(err.message, "name is not printable"),
       "a name with a space is refused: %s", err.message);
    ok(parse_trace(10000, 1, "", 0) != 0 && strstr(err.message, "name is empty"), "an empty name is refused: %s",
       err.message);
    ok(parse_trace(UINT64_C(86400000000001), 1, "op", 0) != 0 && strstr(err.message, "longer than a day"),
       "a step longer than a day is refused: %s", err.message);
    ok(parse_trace(10000, 1, "op", 9000) != 0 && strstr(err.message, "outside its step"),
       "an op that ends after its step is refused: %s", err.message);
    ok(parse_trace(10000, 1, "op", 8000) == 0, "one that ends with it is taken: %s", err.message);
    ok(parse_trace_with(10000, 1, "op", 0, 65, "/cpu:0") != 0 && strstr(err.message, "65 device peaks"),
       "65 device peaks are refused: %s", err.message);
    ok(parse_trace_with(10000, 1, "op", 0, 1, "") != 0 && strstr(err.message, "device peak's device"),
       "a peak without its device is refused: %s", err.message);
    ok(parse_trace_with(10000, 0, "op", 0, 64, "/cpu:0") == 0, "64 peaks and no events are taken: %s", err.message);
    fl_wire_buf_free(&buf);
    const fl_wire_name_list none[4] = {{0, NULL}, {0, NULL}, {0, NULL}, {0, NULL}};
    ok(fl_wire_put_run_partition(&buf, 1, 1, 1, 2, 0, NULL, NULL, none) != 0 && strstr(buf.error, "flags"),
       "RUN_PARTITION with an unknown flag is not encoded: %s", buf.error);
    fl_wire_buf_free(&buf);
}

/* ---- a partition by hand: x (fed) and w on /cpu:0, y = x w, a NoOp after y ---- */

static void make_partition(fl_graph_partition *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "worker");
    p->task = 1;
    p->reuse_memory = true;
    fl_graph *g = p->graph = fl_graph_new();
    fl_device_scope_push(g, "/cpu:0");
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 3, 2), fl_constant_initializer(0.5f));
    fl_node *y = fl_matmul(g, x, w, false, false, "y");
    fl_node *recv = fl_recv(g, FL_FLOAT32, fl_shape_make(0), "b:/job:ps/task:0->/job:worker/task:1", "/job:ps/task:0",
                            "recv/b");
    fl_node *out = fl_add(g, fl_add(g, y, recv, "sum"), fl_scalar(g, 2.0f, "two"), "out");
    fl_send(g, out, "out:/job:worker/task:1->/job:ps/task:0", "/job:ps/task:0", "_send/out/to/ps/0");
    fl_group(g, &out, 1, "after");
    fl_device_pop(g);
}

static bool same_node(const fl_node *a, const fl_node *b)
{
    bool same = strcmp(a->name, b->name) == 0 && a->op == b->op && fl_shape_equal(a->shape, b->shape) &&
                strcmp(a->device, b->device) == 0 && a->ninputs == b->ninputs && a->ncontrols == b->ncontrols &&
                strcmp(a->attrs.edge_key, b->attrs.edge_key) == 0 && strcmp(a->attrs.peer_task, b->attrs.peer_task) == 0;
    for (int i = 0; same && i < a->ninputs; i++)
        same = a->inputs[i]->id == b->inputs[i]->id;
    for (int i = 0; same && i < a->ncontrols; i++)
        same = a->controls[i]->id == b->controls[i]->id;
    return same && (a->initializer ? b->initializer && a->initializer->id == b->initializer->id : !b->initializer);
}

static void test_graph_round_trip(void)
{
    fl_graph_partition p, q;
    make_partition(&p);
    fl_wire_buf bytes = {0};
    int rc = fl_partition_def_encode(&p, &bytes);
    ok(rc == 0, "a partition encodes (%zu bytes)", bytes.len);
    ok(fl_partition_def_decode(bytes.data, bytes.len, &q) == 0, "and decodes: %s", fl_last_error());
    int n = fl_graph_node_count(p.graph);
    bool same = q.graph && fl_graph_node_count(q.graph) == n && q.task == 1 &&
                strcmp(q.job, "worker") == 0 && q.reuse_memory;
    for (int i = 0; same && i < n; i++)
        same = same_node(fl_graph_node(p.graph, i), fl_graph_node(q.graph, i));
    ok(same, "node for node the same: names, ops, shapes, devices, inputs, controls, keys and peers, initializers; "
       "and the client's reuse_memory");
    const fl_node *c = NULL;
    for (int i = 0; q.graph && i < n && !c; i++)
        if (fl_graph_node(q.graph, i)->op == FL_OP_CONST)
            c = fl_graph_node(q.graph, i);
    ok(c && c->value && c->value->shape.rank == 0 && fl_tensor_scalar(c->value) == 2.0f, "a Const comes with its value");
    ok(q.graph && fl_graph_find_variable(q.graph, "w") != NULL, "a variable is registered as one");
    const fl_node *send = q.graph ? fl_graph_find(q.graph, "_send/out/to/ps/0") : NULL;
    const fl_node *recv = q.graph ? fl_graph_find(q.graph, "recv/b") : NULL;
    ok(send && send->op == FL_OP_SEND && recv && recv->op == FL_OP_RECV &&
           strcmp(recv->attrs.peer_task, "/job:ps/task:0") == 0,
       "a Send and a Recv round trip as ops");
    fl_graph_partition_free(&q);
    /* Every byte flipped in turn: each decode fails cleanly or builds a graph, never crashes. */
    int refused = 0;
    for (size_t i = 0; i < bytes.len; i++) {
        bytes.data[i] ^= 0xa5;
        fl_graph_partition r;
        if (fl_partition_def_decode(bytes.data, bytes.len, &r) != 0)
            refused += fl_last_error_code() == FL_INVALID_ARGUMENT;
        else
            fl_graph_partition_free(&r);
        bytes.data[i] ^= 0xa5;
    }
    ok(refused > 0, "flipping bytes one at a time: %d of %zu refused with INVALID_ARGUMENT, no crash", refused, bytes.len);
    bool all_refused = true;
    for (size_t cut = 0; cut < bytes.len; cut += 7)
        all_refused = all_refused && fl_partition_def_decode(bytes.data, cut, &q) != 0;
    ok(all_refused, "every truncated partition is refused");
    fl_wire_buf_free(&bytes);
    fl_graph_partition_free(&p);
}

/* Encodes p, decodes it, and expects a refusal that names `node`. */
static void expect_refused(fl_graph_partition *p, const char *node, const char *what)
{
    fl_wire_buf bytes = {0};
    fl_graph_partition q;
    int rc = fl_partition_def_encode(p, &bytes) == 0 ? fl_partition_def_decode(bytes.data, bytes.len, &q) : 0;
    ok(rc != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT, "%s is refused (INVALID_ARGUMENT)", what);
    char want[300];
    snprintf(want, sizeof want, "node %s", node);
    contains(fl_last_error(), want, "the message names the node");
    fl_wire_buf_free(&bytes);
}

static void test_graph_refusals(void)
{
    fl_graph_partition p;
    make_partition(&p);
    snprintf(fl_graph_find(p.graph, "_send/out/to/ps/0")->attrs.peer_task, FL_DEVICE_LEN, "/cpu:0");
    expect_refused(&p, "_send/out/to/ps/0", "a Send to no task");
    fl_graph_partition_free(&p);

    make_partition(&p);
    fl_graph_find(p.graph, "recv/b")->attrs.edge_key[0] = '\0';
    expect_refused(&p, "recv/b", "a Recv without its key");
    fl_graph_partition_free(&p);

    make_partition(&p);
    fl_graph_find(p.graph, "w")->attrs.shape = fl_shape_make(2, 100000, 100000);
    expect_refused(&p, "w", "an oversized variable (10^10 floats)");
    fl_graph_partition_free(&p);

    make_partition(&p);
    fl_node *y = fl_graph_find(p.graph, "y");
    y->op = FL_OP_ADD_N; /* its shape function would read an input that is not there */
    y->ninputs = 0;
    expect_refused(&p, "y", "an AddN of no inputs");
    y->op = FL_OP_ASSIGN;
    y->ninputs = 2;
    expect_refused(&p, "y", "an Assign into a Placeholder");
    fl_graph_partition_free(&p);

    make_partition(&p);
    snprintf(fl_graph_find(p.graph, "y")->device, FL_DEVICE_LEN, "/job:ps/task:0/cpu:0");
    expect_refused(&p, "y", "a device of another task");
    fl_graph_partition_free(&p);

    /* A message of 100001 empty NodeDefs: more nodes than a partition may have. */
    size_t nodes = FL_PARTITION_MAX_NODES + 1, graph_len = 2 * nodes;
    unsigned char head[] = {0x08, FL_PARTITION_FORMAT, 0x12, 6, 'w', 'o', 'r', 'k', 'e', 'r', 0x22,
                            (unsigned char)(0x80 | (graph_len & 0x7f)), (unsigned char)(0x80 | ((graph_len >> 7) & 0x7f)),
                            (unsigned char)(graph_len >> 14)};
    unsigned char *many = calloc(sizeof head + graph_len, 1);
    memcpy(many, head, sizeof head);
    for (size_t i = 0; i < nodes; i++)
        many[sizeof head + 2 * i] = 0x0a; /* field 1 (node), length 0 */
    fl_graph_partition q;
    ok(fl_partition_def_decode(many, sizeof head + graph_len, &q) != 0, "a partition of 100001 nodes is refused");
    contains(fl_last_error(), "partition for /job:worker/task:0 refused: (message): 100001 nodes",
             "the message says whose partition and how many nodes");
    many[1] = 5; /* a newer client's */
    ok(fl_partition_def_decode(many, sizeof head + graph_len, &q) != 0, "a partition of format 5 is refused");
    contains(fl_last_error(), "partition format 5; this task reads format 4 only", "saying which format it reads");
    many[0] = 3; /* format 3's first byte: its version; a byte layout of our own, not protobuf */
    ok(fl_partition_def_decode(many, sizeof head + graph_len, &q) != 0, "a partition of format 3 is refused");
    contains(fl_last_error(), "partition format 3; this task reads format 4 only", "naming both formats");
    free(many);
}

static unsigned char *find_bytes(fl_wire_buf *b, const unsigned char *what, size_t len)
{
    for (size_t i = 0; i + len <= b->len; i++)
        if (memcmp(b->data + i, what, len) == 0)
            return b->data + i;
    return NULL;
}

/* What protobuf-c would take but this task does not know: a field of a
 * NodeDef's that graph.proto lacks, an attr no op has, an attr of the
 * wrong kind. Each refused naming the node and the field or attr. */
static void test_graph_unknowns(void)
{
    fl_graph_partition p, q;
    make_partition(&p);
    fl_wire_buf bytes = {0};
    fl_partition_def_encode(&p, &bytes);
    /* The message again, with "y"'s name followed by field 9 (NodeDef's experimental_debug_info in TensorFlow). */
    const unsigned char name[] = {0x0a, 1, 'y'};
    unsigned char *at = find_bytes(&bytes, name, sizeof name);
    ok(at != NULL, "node y's name is in the message");
    if (at) {
        at[0] = 0x4a; /* field 9, length-delimited, 1 byte: "y" as an unknown field; the node has no name */
        ok(fl_partition_def_decode(bytes.data, bytes.len, &q) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
           "a NodeDef with a field this task does not know is refused");
        contains(fl_last_error(), "field 9 is not one this task knows", "the message names the field");
        contains(fl_last_error(), "node #", "and the node by its place, as it has no name");
        at[0] = 0x0a;
    }
    unsigned char *dtype = find_bytes(&bytes, (const unsigned char *)"\x0a\x05" "dtype", 7);
    ok(dtype != NULL, "a dtype attr is in the message");
    if (dtype) {
        memcpy(dtype + 2, "dtypo", 5);
        ok(fl_partition_def_decode(bytes.data, bytes.len, &q) != 0, "an attr no op has is refused");
        contains(fl_last_error(), "node x: attr dtypo is not one a partition carries", "naming the node and the attr");
        memcpy(dtype + 2, "shape", 5); /* a shape attr whose value is a type */
        ok(fl_partition_def_decode(bytes.data, bytes.len, &q) != 0, "an attr of the wrong kind is refused");
        contains(fl_last_error(), "attr shape is not a shape", "naming the attr and its kind");
    }
    unsigned char junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(0x08 + i * 37);
    ok(fl_partition_def_decode(junk, sizeof junk, &q) != 0 && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "bytes that are no message are refused: %s", fl_last_error());
    fl_wire_buf_free(&bytes);
    fl_graph_partition_free(&p);
}

/* A SEND_TENSOR whose data is lent: its head, then the data where it lies,
 * make the bytes of the whole frame. */
static void test_lent_send(void)
{
    float values[300];
    for (int i = 0; i < 300; i++)
        values[i] = (float)i / 7.0f;
    fl_tensor t = {.dtype = FL_FLOAT32, .shape = fl_shape_make(2, 3, 100), .data = values};
    fl_wire_buf whole = {0}, head = {0};
    const char *key = "g:/job:worker/task:0->/job:ps/task:0";
    int rc = fl_wire_put_send_tensor(&whole, 7, 42, key, &t) | fl_wire_put_send_tensor_head(&head, 7, 42, key, &t);
    ok(rc == 0 && whole.lent == NULL && head.lent == values && head.lent_len == sizeof values,
       "the head lends the value's data (%zu bytes), the whole frame lends nothing", head.lent_len);
    ok(head.len + head.lent_len == whole.len && memcmp(head.data, whole.data, head.len) == 0 &&
           memcmp(whole.data + head.len, values, sizeof values) == 0,
       "head and lent data are the whole frame's bytes (%zu + %zu of %zu)", head.len, head.lent_len, whole.len);
    fl_wire_buf_free(&whole);
    fl_wire_buf_free(&head);
}

int main(void)
{
    test_run_partition();
    test_hostile_counts();
    test_small_frames();
    test_lent_send();
    test_step_trace();
    test_graph_round_trip();
    test_graph_refusals();
    test_graph_unknowns();
    return done_testing();
}
