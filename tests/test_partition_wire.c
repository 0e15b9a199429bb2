/* test_partition_wire.c: the frames of in-graph replication across tasks
 * (REGISTER_PARTITION .. DEREGISTER_PARTITION) and a partition's graph as
 * protobuf message (partition_def), with no sockets: every frame round trips (a lent
 * SEND_TENSOR's head and data make the whole frame's bytes), a partition
 * comes back node for node, and malformed or oversized ones are refused
 * with a message naming the node, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/transport/wire.h"
#include "runtime.h"
#include "tap.h"

static fl_status err = {0};

/* The one frame in buf, decoded; false when it is not exactly one. */
static bool one_frame(const fl_wire_buf *buf, fl_wire_frame *f)
{
    return fl_wire_decode(buf->data, buf->len, f, &err) == FL_WIRE_FRAME && f->frame_len == buf->len;
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
    fl_wire_run_partition r;
    ok(one_frame(&buf, &f) && fl_wire_parse(&f, &m, &err) == 0, "RUN_PARTITION decodes and checks: %s", err.message);
    ok(fl_wire_parse_run_partition(&f, &r, &err) == 0, "RUN_PARTITION parses: %s", err.message);
    ok(r.handle == 42 && r.step_id == 1001 && r.flags == FL_WIRE_RUN_TRACE && r.nfeeds == 1 &&
           strcmp(r.feed_names[0], "x") == 0, "handle, step, the trace flag and feed name round trip");
    float got[6] = {0};
    fl_wire_tensor_read(&r.feed_values[0], got);
    ok(r.feed_values[0].shape.rank == 2 && memcmp(got, v, sizeof v) == 0, "the feed's value round trips");
    bool lists_same = true;
    for (int k = 0; k < 2; k++) {
        lists_same = lists_same && r.lists[k].count == lists[k].count;
        for (int i = 0; lists_same && i < lists[k].count; i++)
            lists_same = strcmp(r.lists[k].names[i], lists[k].names[i]) == 0;
    }
    ok(lists_same, "fetches and targets round trip");
    fl_wire_run_partition_free(&r);
    ok(fl_wire_reply_type(FL_WIRE_RUN_PARTITION) == FL_WIRE_PARTITION_DONE, "RUN_PARTITION is answered by PARTITION_DONE");
    is_string(fl_wire_type_name(FL_WIRE_RUN_PARTITION), "RUN_PARTITION", "its name");
    /* Cut one byte short at every length: always refused, never read past the end. */
    bool all_refused = true;
    for (size_t cut = FL_WIRE_HEADER_BYTES; cut + 1 < buf.len; cut++) {
        f.payload_len = (uint32_t)(cut - FL_WIRE_HEADER_BYTES);
        all_refused = all_refused && fl_wire_parse_run_partition(&f, &r, &err) != 0;
    }
    ok(all_refused, "every truncated RUN_PARTITION is refused (last: %s)", err.message);
    fl_wire_buf_free(&buf);
    fl_tensor_free(x);
}

static void test_hostile_counts(void)
{
    /* handle, step, flags, then a feed count of 4 billion in a 28-byte payload. */
    unsigned char payload[28] = {0};
    memset(payload + 20, 0xff, 4);
    fl_wire_frame f = {.type = FL_WIRE_RUN_PARTITION, .payload = payload, .payload_len = 24};
    fl_wire_run_partition r;
    ok(fl_wire_parse_run_partition(&f, &r, &err) != 0, "a count of 4 billion feeds is refused");
    contains(err.message, "feeds", "the message says which count");
    f.type = FL_WIRE_PARTITION_DONE; /* step length 0, no trace events, 4 billion values */
    f.payload = payload + 8;
    f.payload_len = 16;
    fl_wire_tensor *values;
    int n;
    ok(fl_wire_parse_partition_done(&f, &values, &n, NULL, &err) != 0, "PARTITION_DONE with too many values is refused: %s", err.message);
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
    fl_wire_tensor *got;
    int n;
    ok(one_frame(&buf, &f) && fl_wire_parse_partition_done(&f, &got, &n, NULL, &err) == 0 && n == 2,
       "PARTITION_DONE round trips two values: %s", err.message);
    free(got);
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
    fl_wire_step_trace trace = {.step_ns = 10000, .count = 1, .events = &op};
    fl_wire_buf_free(buf);
    fl_wire_put_partition_done(buf, 5, &trace, 1, values);
}

/* buf's frame parsed after `change` was made to its payload: 0 when taken. */
static int parse_changed(fl_wire_buf *buf, size_t at, const void *change, size_t len)
{
    put_traced_done(buf, 100);
    memcpy(buf->data + FL_WIRE_HEADER_BYTES + at, change, len);
    fl_wire_frame f;
    fl_wire_tensor *values = NULL;
    int n;
    fl_wire_step_trace trace;
    int rc = one_frame(buf, &f) ? fl_wire_parse_partition_done(&f, &values, &n, &trace, &err) : -1;
    if (rc == 0)
        fl_wire_step_trace_free(&trace);
    free(values);
    return rc;
}

static void test_step_trace(void)
{
    fl_wire_buf buf = {0};
    put_traced_done(&buf, 100);
    fl_wire_frame f;
    fl_wire_message m;
    fl_wire_tensor *values = NULL;
    fl_wire_step_trace trace;
    int n;
    ok(one_frame(&buf, &f) && fl_wire_parse(&f, &m, &err) == 0 &&
           fl_wire_parse_partition_done(&f, &values, &n, &trace, &err) == 0 && n == 1,
       "a traced PARTITION_DONE round trips: %s", err.message);
    ok(values && trace.step_ns == 10000 && trace.count == 1 && strcmp(trace.events[0].name, "tower_1/MatMul") == 0 &&
           strcmp(trace.events[0].op, "MatMul") == 0 && strcmp(trace.events[0].device, "/job:worker/task:1/cpu:0") == 0 &&
           trace.events[0].start_ns == 100 && trace.events[0].duration_ns == 2000,
       "its step length, op name, op, device, start and duration come back");
    free(values);
    fl_wire_step_trace_free(&trace);
    bool all_refused = true;
    for (size_t cut = FL_WIRE_HEADER_BYTES; cut + 1 < buf.len; cut++) {
        f.payload_len = (uint32_t)(cut - FL_WIRE_HEADER_BYTES);
        all_refused = all_refused && fl_wire_parse_partition_done(&f, &values, &n, &trace, &err) != 0;
    }
    ok(all_refused, "every truncated traced PARTITION_DONE is refused (last: %s)", err.message);
    put_traced_done(&buf, 9000);
    ok(buf.len == 0 && strstr(buf.error, "outside its step"), "an event past its step's end is not encoded: %s",
       buf.error);
    /* The payload: step u64 at 0, count u32 at 8, the name's length at 12, its bytes from 13. */
    const unsigned char huge[4] = {0xff, 0xff, 0xff, 0xff}, many[4] = {0, 0, 0x03, 0xe8}, space = ' ', empty = 0;
    ok(parse_changed(&buf, 8, huge, 4) != 0 && strstr(err.message, "over the"), "4 billion trace events are "
       "refused: %s", err.message);
    ok(parse_changed(&buf, 8, many, 4) != 0 && strstr(err.message, "cannot fit"), "1000 trace events in a few "
       "bytes are refused: %s", err.message);
    ok(parse_changed(&buf, 13, &space, 1) != 0 && strstr(err.message, "name"), "a name with a space is refused: %s",
       err.message);
    ok(parse_changed(&buf, 12, &empty, 1) != 0, "an empty name is refused: %s", err.message);
    ok(parse_changed(&buf, 0, huge, 4) != 0 && strstr(err.message, "longer than a day"), "a step longer than a day "
       "is refused: %s", err.message);
    const unsigned char late[8] = {0, 0, 0, 0, 0, 0, 0x27, 0x10}; /* the op starts at the step's end, 10000 ns */
    size_t start_at = 13 + strlen("tower_1/MatMul") + 1 + strlen("MatMul") + 1 + strlen("/job:worker/task:1/cpu:0");
    ok(parse_changed(&buf, start_at, late, 8) != 0 && strstr(err.message, "outside its step"), "an op that ends "
       "after its step is refused: %s", err.message);
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
                strcmp(q.job, "worker") == 0;
    for (int i = 0; same && i < n; i++)
        same = same_node(fl_graph_node(p.graph, i), fl_graph_node(q.graph, i));
    ok(same, "node for node the same: names, ops, shapes, devices, inputs, controls, keys and peers, initializers");
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
