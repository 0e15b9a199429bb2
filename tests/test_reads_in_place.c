/* test_reads_in_place.c: a device whose memory is the host's (a PoCL CPU
 * device) reads a /cpu:0 value where it lies, as chapter 2's towers read
 * the controller's variables: no copy is made, and a host op that updates
 * the variable in place waits until the device has run its last reader of
 * the run (session_copies.c's wrap_value and note_pending_read), without
 * holding up other host work meanwhile; a fed value is read where the
 * caller keeps it, never written over, and read anew each run; a fetched
 * one is written where fetch_to asks, unless an op of the run reads it. One PoCL
 * device, one thread; test_executor_order checks the copy path a GPU takes. */
#include "tap.h"
#include "flowlab.h"
#include "session_internal.h" /* the recorded events, to count the copies */
#include "one_pocl_device.h"

enum { N = 512, CHAIN = 8, M = 1 << 16 };

/* /gpu:0 is busy for a while: a chain of N x N products; its sum is N. */
static fl_node *slow_sum(fl_graph *g)
{
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, N, N), fl_constant_initializer(1.0f / N));
    fl_node *h = w;
    for (int i = 0; i < CHAIN; i++)
        h = fl_matmul(g, h, w, false, false, NULL);
    return fl_reduce_sum(g, h, NULL, 0, false, "late_sum");
}

/* v and one, ones on /cpu:0. */
static fl_node *host_variables(fl_graph *g, fl_node **one)
{
    fl_device_scope_push(g, "/cpu:0");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, M), fl_constant_initializer(1.0f));
    *one = fl_get_variable(g, "one", fl_shape_make(1, M), fl_constant_initializer(1.0f));
    fl_device_pop(g);
    return v;
}

/* A session over g with its variables initialized, tracing from now. */
static int start_traced(fl_graph *g, fl_session **s)
{
    fl_node *init = fl_global_variables_initializer(g);
    *s = fl_session_new(g, NULL);
    int rc = fl_session_run(*s, NULL, 0, NULL, 0, NULL, &init, 1);
    fl_session_set_tracing(*s, true);
    return rc;
}

static int copies_in_trace(const fl_session *s)
{
    int copies = 0;
    for (int i = 0; i < s->trace.nevents; i++)
        copies += s->trace.events[i].copy_of >= 0;
    return copies;
}

/* v (ones, on /cpu:0) is read on /gpu:0 twice: before the slow sum and
 * after it, as a tower reads a kernel forward and again backward. A host
 * AssignAdd made after both readers adds one to v in place; it must not
 * land before the late reader has run. */
static void host_update_waits_for_last_reader(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *one, *v = host_variables(g, &one);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *early = fl_reduce_sum(g, fl_mul(g, v, fl_scalar(g, 1.0f, NULL), NULL), NULL, 0, false, "early");
    fl_node *late = fl_reduce_sum(g, fl_mul(g, v, slow_sum(g), NULL), NULL, 0, false, "late");
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *update = fl_assign_add(g, v, one, "update");
    fl_device_pop(g);
    fl_session *s;
    int rc = start_traced(g, &s);
    fl_tensor *out[2] = {NULL, NULL};
    rc = rc ? rc : fl_session_run(s, NULL, 0, (fl_node *[]){early, late}, 2, out, &update, 1);
    if (!ok(rc == 0, "a run that reads v on /gpu:0 and updates it in place on /cpu:0 succeeds"))
        diag("%s", fl_session_error(s));
    float seen_early = rc == 0 ? fl_tensor_floats(out[0])[0] : -1, seen_late = rc == 0 ? fl_tensor_floats(out[1])[0] : -1;
    ok(seen_early == (float)M, "the early reader saw v before the update (%g, want %d)", (double)seen_early, M);
    if (!ok(seen_late == (float)M * N, "the reader behind the slow chain saw v before the update too"))
        diag("sum(v * %d) = %g, want %g (twice that: the update passed it)", N, (double)seen_late, (double)M * N);
    ok(rc == 0 && copies_in_trace(s) == 0, "/gpu:0 read v where it lies: %d copies in the run's trace",
       copies_in_trace(s));
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    rc = rc ? rc : fl_session_run(s, NULL, 0, &v, 1, out, NULL, 0);
    ok(rc == 0 && fl_tensor_floats(out[0])[M - 1] == 2.0f, "after the run v holds ones plus one");
    fl_tensor_free(out[0]);
    /* A second run reads the same bytes through the buffer the first made. */
    rc = rc ? rc : fl_session_run(s, NULL, 0, &early, 1, out, NULL, 0);
    ok(rc == 0 && fl_tensor_floats(out[0])[0] == 2.0f * M, "the next run's reader sees the update (%g)",
       rc == 0 ? (double)fl_tensor_floats(out[0])[0] : -1.0);
    fl_tensor_free(out[0]);
    fl_session_free(s);
    fl_graph_free(g);
}

static const fl_trace_event *event_of(const fl_session *s, const fl_node *n)
{
    for (int i = 0; i < s->trace.nevents; i++)
        if (s->trace.events[i].node == n->id && s->trace.events[i].copy_of < 0)
            return &s->trace.events[i];
    return NULL;
}

/* When /gpu:0 last ends its work: the update's wait. */
static double device_end(const fl_session *s)
{
    double end = 0;
    for (int i = 0; i < s->trace.nevents; i++) {
        const fl_trace_event *e = &s->trace.events[i];
        if (!e->device->is_host && e->start_us + e->duration_us > end)
            end = e->start_us + e->duration_us;
    }
    return end;
}

/* The update that waits for /gpu:0's reader does not hold up host work
 * that is ready: an Add made after it, on values no device reads, runs
 * while /gpu:0 still computes (the executor defers the update, as it
 * defers an op whose input is unfinished: session.c's would_wait_for). */
static void waiting_update_blocks_nothing(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *one, *v = host_variables(g, &one);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *late = fl_reduce_sum(g, fl_mul(g, v, slow_sum(g), NULL), NULL, 0, false, "late");
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *update = fl_assign_add(g, v, one, "update");
    fl_node *other = fl_add(g, one, one, "other");
    fl_device_pop(g);
    fl_session *s;
    int rc = start_traced(g, &s);
    fl_tensor *out[2] = {NULL, NULL};
    rc = rc ? rc : fl_session_run(s, NULL, 0, (fl_node *[]){late, other}, 2, out, &update, 1);
    if (!ok(rc == 0, "a run with a waiting update and other host work succeeds"))
        diag("%s", fl_session_error(s));
    const fl_trace_event *e_other = event_of(s, other), *e_update = event_of(s, update);
    double end = device_end(s), slack = 1000; /* microseconds: the clocks agree to a wake-up */
    ok(e_other && e_other->start_us < end - slack,
       "the Add made after the update ran while /gpu:0 computed (%.1f ms before its end)",
       e_other ? (end - e_other->start_us) / 1e3 : -1.0);
    ok(e_update && e_update->start_us >= end - slack, "the update waited for /gpu:0's reader (%.1f ms after its end)",
       e_update ? (e_update->start_us - end) / 1e3 : -1.0);
    ok(rc == 0 && fl_tensor_floats(out[0])[0] == (float)M * N, "and the reader saw v before the update");
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    fl_session_free(s);
    fl_graph_free(g);
}

/* The device reads a fed value in the caller's bytes: no copy in. */
static bool read_where_fed(const fl_session *s, const fl_node *x, const fl_tensor *fed)
{
    const fl_slot *slot = &s->slots[x->id];
    return fl_device_host_memory(slot->device, slot->value.data) == fed->data;
}

static void feeds_read_in_place(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, M), "x");
    fl_node *y = fl_relu(g, x, "y"); /* one reader: it could have written over x, were x its own */
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *fed = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, M)), *other = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, M));
    for (int i = 0; i < M; i++)
        fl_tensor_floats(fed)[i] = i % 2 ? -1.0f : 3.0f, fl_tensor_floats(other)[i] = 5.0f;
    fl_feed feed = {x, fed};
    fl_tensor *out = NULL;
    int rc = fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0);
    ok(rc == 0 && fl_tensor_floats(out)[0] == 3.0f && fl_tensor_floats(out)[1] == 0.0f, "a fed x's Relu on /gpu:0");
    ok(rc == 0 && read_where_fed(s, x, fed), "/gpu:0 read x in the caller's bytes (no copy in)");
    ok(fl_tensor_floats(fed)[1] == -1.0f, "and left them as they were");
    fl_tensor_free(out);
    fl_tensor_floats(fed)[0] = 7.0f; /* the same bytes, changed between runs */
    rc = fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0);
    ok(rc == 0 && fl_tensor_floats(out)[0] == 7.0f, "the next run reads the bytes anew (%g)",
       rc == 0 ? (double)fl_tensor_floats(out)[0] : -1.0);
    fl_tensor_free(out);
    feed.value = other; /* other bytes */
    rc = fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0);
    ok(rc == 0 && fl_tensor_floats(out)[M - 1] == 5.0f && read_where_fed(s, x, other),
       "another tensor fed: read where it lies");
    fl_tensor_free(out);
    /* 4-byte aligned only, as chapter 6's averages in their buckets: read in
     * place run after run, never a copy PoCL made once */
    float *block = calloc(M + 1, sizeof *block);
    fl_tensor odd = {.dtype = FL_FLOAT32, .shape = fl_shape_make(1, M), .data = block + 1, .borrowed = true};
    feed.value = &odd;
    bool fresh = true;
    for (int run = 1; fresh && run <= 3; run++) {
        block[M] = (float)run;
        rc = fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0);
        fresh = rc == 0 && fl_tensor_floats(out)[M - 1] == (float)run && read_where_fed(s, x, &odd);
        fl_tensor_free(out);
    }
    ok(fresh, "a fed view at an odd address is read in place, anew each run");
    /* a ring of three batches, as a dataset's prefetch hands them: copied
     * once they keep moving, not a new buffer over them every run */
    fl_tensor *ring[3];
    for (int k = 0; k < 3; k++) {
        ring[k] = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, M));
        for (int i = 0; i < M; i++)
            fl_tensor_floats(ring[k])[i] = (float)(k + 1);
    }
    bool right = true;
    for (int run = 0; right && run < 6; run++) {
        feed.value = ring[run % 3];
        rc = fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0);
        right = rc == 0 && fl_tensor_floats(out)[M - 1] == (float)(run % 3 + 1);
        fl_tensor_free(out);
    }
    ok(right && !read_where_fed(s, x, ring[2]), "a ring of fed batches is copied once its bytes keep moving");
    for (int k = 0; k < 3; k++)
        fl_tensor_free(ring[k]);
    free(block);
    fl_tensor_free(fed);
    fl_tensor_free(other);
    fl_session_free(s);
    fl_graph_free(g);
}

/* fetch_ready: the caller scribbles over a value once it is handed over,
 * as chapter 6 averages its gradients in place. */
static void scribble(int index, const fl_tensor *value, void *user)
{
    (void)user;
    if (index == 0)
        fl_tensor_floats((fl_tensor *)value)[0] = -100.0f;
}

static void fetches_written_in_place(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, M), "x");
    fl_node *y = fl_relu(g, x, "y"), *z = fl_mul(g, y, y, "z"), *alone = fl_neg(g, x, "alone");
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *fed = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, M)), *out[2] = {0};
    for (int i = 0; i < M; i++)
        fl_tensor_floats(fed)[i] = 3.0f;
    float *block = calloc(M + 1, sizeof *block), *mine = block + 1; /* 4-byte aligned only, as a bucket's place */
    fl_feed feed = {x, fed};
    fl_fetch_target to[2] = {{.buffer = mine, .capacity = M * sizeof *mine}, {0}};
    fl_run_options options = {.fetch_to = to};
    fl_node *fetch_alone[2] = {alone, z};
    int rc = fl_session_run_with_options(s, &options, &feed, 1, fetch_alone, 2, out, NULL, 0);
    const fl_slot *slot = &s->slots[alone->id];
    ok(rc == 0 && mine[M - 1] == -3.0f && out[0]->data == (void *)mine, "a fetch_to value lands in the caller's buffer");
    ok(rc == 0 && fl_device_host_memory(slot->device, slot->value.data) == mine,
       "which the op on /gpu:0 wrote itself (no copy out)");
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    options = (fl_run_options){.fetch_to = to, .fetch_ready = scribble};
    fl_node *fetch_read[2] = {y, z}; /* z reads y */
    rc = fl_session_run_with_options(s, &options, &feed, 1, fetch_read, 2, out, NULL, 0);
    slot = &s->slots[y->id];
    ok(rc == 0 && fl_device_host_memory(slot->device, slot->value.data) != mine && mine[1] == 3.0f &&
       fl_tensor_floats(out[1])[0] == 9.0f,
       "a fetched value another op reads is copied out, so the caller's change reaches no reader (z %g)",
       rc == 0 ? (double)fl_tensor_floats(out[1])[0] : -1.0);
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    free(block);
    fl_tensor_free(fed);
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    need_one_pocl_device();
    host_update_waits_for_last_reader();
    waiting_update_blocks_nothing();
    feeds_read_in_place();
    fetches_written_in_place();
    return done_testing();
}
