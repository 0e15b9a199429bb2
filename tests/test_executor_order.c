/* test_executor_order.c: what the session waits for when a value crosses
 * devices. A value a device has finished is copied while that device goes
 * on with the work queued after it (the towers' gradients reach the
 * controller while the towers still compute), a host op never writes
 * memory that a device has still to copy in, and a value crosses to a
 * device once per run however many nodes there read it, and nodes on one
 * variable keep the order they were made in. One PoCL device, one thread. */
#include "tap.h"
#include "flowlab.h"
#include "session_internal.h" /* the recorded events, to read their times */
#include "one_pocl_device.h"

enum { N = 512, CHAIN = 8, M = 1 << 16 };

/* A slow chain of N x N matmuls on /gpu:0, then its sum. */
static fl_node *slow_chain(fl_graph *g, fl_node **last)
{
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, N, N), fl_constant_initializer(1.0f / N));
    fl_node *h = w;
    for (int i = 0; i < CHAIN; i++)
        h = *last = fl_matmul(g, h, w, false, false, NULL);
    return fl_reduce_sum(g, h, NULL, 0, false, "late_sum");
}

/* A session on g with its variables initialized: NULL when that fails. */
static fl_session *initialized_session(fl_graph *g)
{
    fl_node *init = fl_global_variables_initializer(g);
    fl_session *s = fl_session_new(g, NULL);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0)
        return s;
    diag("initializing: %s", fl_session_error(s));
    fl_session_free(s);
    return NULL;
}

static const fl_trace_event *event_of(const fl_session *s, const fl_node *n, const fl_node *copy_of)
{
    for (int i = s->trace.nevents - 1; i >= 0; i--)
        if (s->trace.events[i].node == n->id && s->trace.events[i].copy_of == (copy_of ? copy_of->id : -1))
            return &s->trace.events[i];
    return NULL;
}

/* /gpu:0 makes `early`, then the slow chain; /cpu:0 doubles `early`. The
 * copy of `early` must not wait for the chain. */
static void early_value_goes_first(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_node *x = fl_get_variable(g, "x", fl_shape_make(1, 8), fl_constant_initializer(0.5f));
    fl_node *early = fl_reduce_sum(g, x, NULL, 0, false, "early");
    fl_node *last = NULL;
    fl_node *late = slow_chain(g, &last);
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *doubled = fl_mul(g, early, fl_scalar(g, 2.0f, NULL), "doubled");
    fl_node *total = fl_add(g, doubled, late, "total");
    fl_device_pop(g);
    fl_session *s = initialized_session(g);
    if (!ok(s != NULL, "the variables of the first graph initialize")) {
        fl_graph_free(g);
        return;
    }
    fl_tensor *out[2] = {NULL, NULL};
    int rc = fl_session_run(s, NULL, 0, (fl_node *[]){doubled, total}, 2, out, NULL, 0); /* warm */
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    fl_session_set_tracing(s, true);
    rc = rc ? rc : fl_session_run(s, NULL, 0, (fl_node *[]){doubled, total}, 2, out, NULL, 0);
    if (!ok(rc == 0, "the traced run succeeds"))
        diag("%s", fl_session_error(s));
    /* w = 1/N everywhere stays 1/N through the chain: the sum is N*N/N. */
    ok(rc == 0 && fl_tensor_floats(out[0])[0] == 8.0f, "doubled = 2 * sum(x) = 8");
    ok(rc == 0 && fabsf(fl_tensor_floats(out[1])[0] - (8.0f + N)) < 1e-2f, "total = 8 + %d", N);
    const fl_trace_event *copy = event_of(s, doubled, early), *chain_end = event_of(s, last, NULL);
    if (ok(copy && chain_end, "the trace has the copy of early and the chain's last matmul")) {
        double copied = copy->start_us + copy->duration_us;
        double finished = chain_end->start_us + chain_end->duration_us;
        if (!ok(copied < finished, "early is on the host before /gpu:0 finishes the chain"))
            diag("copy ended at %.0f us, the last matmul at %.0f us", copied, finished);
    }
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    fl_session_free(s);
    fl_graph_free(g);
}

/* /gpu:0 reads host variable v behind the slow chain; a later host Assign
 * overwrites v. The device must still see v's old value. */
static void host_write_waits_for_copy_in(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/cpu:0");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, M), fl_constant_initializer(1.0f));
    fl_node *zeros = fl_get_variable(g, "zeros", fl_shape_make(1, M), fl_zeros_initializer());
    fl_device_pop(g);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *last = NULL;
    fl_node *late = slow_chain(g, &last);
    fl_node *seen = fl_reduce_sum(g, fl_mul(g, v, fl_scalar(g, 1.0f, NULL), NULL), NULL, 0, false, "seen");
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *overwrite = fl_assign(g, v, zeros, "overwrite");
    fl_device_pop(g);
    fl_session *s = initialized_session(g);
    if (!ok(s != NULL, "the variables of the second graph initialize")) {
        fl_graph_free(g);
        return;
    }
    fl_tensor *out[2] = {NULL, NULL};
    int rc = fl_session_run(s, NULL, 0, (fl_node *[]){seen, late}, 2, out, &overwrite, 1);
    if (!ok(rc == 0, "a run that reads v on /gpu:0 and overwrites it on /cpu:0 succeeds"))
        diag("%s", fl_session_error(s));
    if (!ok(rc == 0 && fl_tensor_floats(out[0])[0] == (float)M, "/gpu:0 saw v before the overwrite"))
        diag("sum seen: %g, want %d", rc == 0 ? (double)fl_tensor_floats(out[0])[0] : -1.0, M);
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    rc = rc ? rc : fl_session_run(s, NULL, 0, &v, 1, out, NULL, 0);
    ok(rc == 0 && fl_tensor_floats(out[0])[M - 1] == 0.0f, "after the run v holds the zeros");
    fl_tensor_free(out[0]);
    fl_session_free(s);
    fl_graph_free(g);
}

/* Two nodes on /gpu:0 read host variable v: one copy of v per run serves
 * both, as TensorFlow sends a tensor once to each device that reads it. */
static void one_copy_per_device(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/cpu:0");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, M), fl_constant_initializer(1.0f));
    fl_device_pop(g);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *twice = fl_mul(g, v, fl_scalar(g, 2.0f, NULL), "twice");
    fl_node *thrice = fl_mul(g, v, fl_scalar(g, 3.0f, NULL), "thrice");
    fl_node *sum = fl_reduce_sum(g, fl_add(g, twice, thrice, NULL), NULL, 0, false, "sum");
    fl_device_pop(g);
    fl_session *s = initialized_session(g);
    if (!ok(s != NULL, "the variables of the third graph initialize")) {
        fl_graph_free(g);
        return;
    }
    fl_tensor *out = NULL;
    fl_session_set_tracing(s, true);
    for (int run = 0; run < 2; run++) {
        int rc = fl_session_run(s, NULL, 0, &sum, 1, &out, NULL, 0);
        ok(rc == 0 && fl_tensor_floats(out)[0] == 5.0f * M, "run %d: sum(2v + 3v) = 5 * %d", run, M);
        fl_tensor_free(out);
    }
    int copies = 0;
    for (int i = 0; i < s->trace.nevents; i++)
        copies += s->trace.events[i].copy_of == v->id;
    ok(copies == 2, "v crossed to /gpu:0 once per run, for both readers: 2 copies in 2 runs (got %d)", copies);
    fl_session_free(s);
    fl_graph_free(g);
}

/* On /cpu:0, `before` reads variable v times `late`, which /gpu:0 finishes
 * only after the slow chain; an Assign made after `before` overwrites v and
 * could start at once. `fill` zeroes u once `late` is there; `after`, made
 * after it, reads u and could start at once. Nodes on one variable keep the
 * order they were made in, as on one in-order device, though the executor
 * lets other nodes pass one that waits: `before` sees v before the Assign,
 * `after` sees u after the fill (chapter 7's pair split on two tasks once
 * updated dense_2's kernel before its backward MatMul had read it). */
static void one_variable_keeps_creation_order(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:0");
    fl_node *last = NULL;
    fl_node *late = slow_chain(g, &last);
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, 8), fl_constant_initializer(1.0f));
    fl_node *u = fl_get_variable(g, "u", fl_shape_make(1, 8), fl_constant_initializer(1.0f));
    fl_node *zeros = fl_get_variable(g, "zeros", fl_shape_make(1, 8), fl_zeros_initializer());
    fl_node *before = fl_mul(g, v, late, "before");
    fl_node *overwrite = fl_assign(g, v, zeros, "overwrite");
    fl_node *fill = fl_assign(g, u, fl_mul(g, zeros, late, NULL), "fill");
    fl_node *after = fl_add(g, u, fl_scalar(g, 2.0f, NULL), "after");
    fl_device_pop(g);
    fl_session *s = initialized_session(g);
    if (!ok(s != NULL, "the variables of the fourth graph initialize")) {
        fl_graph_free(g);
        return;
    }
    fl_tensor *out[2] = {NULL, NULL};
    int rc = fl_session_run(s, NULL, 0, (fl_node *[]){before, after}, 2, out, (fl_node *[]){overwrite, fill}, 2);
    if (!ok(rc == 0, "a run whose updates of v and u could pass their readers succeeds"))
        diag("%s", fl_session_error(s));
    float seen_v = rc == 0 ? fl_tensor_floats(out[0])[7] : -1, seen_u = rc == 0 ? fl_tensor_floats(out[1])[7] : -1;
    if (!ok(seen_v == (float)N, "the reader made before the Assign, waiting for /gpu:0, saw v before it"))
        diag("v * late = %g, want %d (0: the Assign passed it)", (double)seen_v, N);
    if (!ok(seen_u == 2.0f, "the reader made after the fill, which waits for /gpu:0, saw u after it"))
        diag("u + 2 = %g, want 2 (3: it passed the fill)", (double)seen_u);
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    /* The copy path, as a GPU takes it: on PoCL a host op would read the
     * value where it lies (test_lab02 and test_fused_updates check that). */
    setenv("FLOWLAB_OPENCL_HOST_MEMORY", "0", 1);
    need_one_pocl_device();
    early_value_goes_first();
    host_write_waits_for_copy_in();
    one_copy_per_device();
    one_variable_keeps_creation_order();
    return done_testing();
}
