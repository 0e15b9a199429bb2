/* test_reads_in_place.c: a device whose memory is the host's (a PoCL CPU
 * device) reads a /cpu:0 value where it lies, as chapter 2's towers read
 * the controller's variables: no copy is made, and a host op that updates
 * the variable in place waits until the device has run its last reader of
 * the run (session_copies.c's wrap_value and note_pending_read). One PoCL
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
    fl_device_scope_push(g, "/cpu:0");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, M), fl_constant_initializer(1.0f));
    fl_node *one = fl_get_variable(g, "one", fl_shape_make(1, M), fl_constant_initializer(1.0f));
    fl_device_pop(g);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *early = fl_reduce_sum(g, fl_mul(g, v, fl_scalar(g, 1.0f, NULL), NULL), NULL, 0, false, "early");
    fl_node *late = fl_reduce_sum(g, fl_mul(g, v, slow_sum(g), NULL), NULL, 0, false, "late");
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *update = fl_assign_add(g, v, one, "update");
    fl_device_pop(g);
    fl_node *init = fl_global_variables_initializer(g);
    fl_session *s = fl_session_new(g, NULL);
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    fl_tensor *out[2] = {NULL, NULL};
    fl_session_set_tracing(s, true);
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

int main(void)
{
    need_one_pocl_device();
    host_update_waits_for_last_reader();
    return done_testing();
}
