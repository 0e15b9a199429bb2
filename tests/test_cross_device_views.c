/* test_cross_device_views.c: ops that only rename their input (Reshape,
 * Identity) may run on another device than the value they read: they read
 * a copy, as chapter 7's pipeline stages do where they meet; an op that
 * writes its input in place (Assign) still must run beside its variable.
 * A traced copy records its size and the device it came from, which
 * chapter 7 counts per step. Needs one accelerator (/gpu:0; skipped without). */
#include <unistd.h>

#include "tools.h"
#include "tap.h"
#include "flowlab.h"

static const float values[6] = {1, 2, 3, 4, 5, 6};

/* x on /gpu:0 (x * 2); its reshape and identity on /cpu:0 read copies. */
static void test_views_read_copies(void)
{
    fl_graph *g = fl_graph_new();
    fl_tensor *x = fl_tensor_from_floats(fl_shape_make(2, 2, 3), values);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *doubled = fl_mul(g, fl_constant(g, x, "x"), fl_scalar(g, 2.0f, NULL), "doubled");
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *fetches[2] = {fl_reshape(g, doubled, fl_shape_make(2, 3, 2), "reshaped"),
                           fl_identity(g, doubled, "same")};
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_session_set_tracing(s, true);
    fl_tensor *out[2] = {NULL, NULL};
    int rc = fl_session_run(s, NULL, 0, fetches, 2, out, NULL, 0);
    ok(rc == 0, "a Reshape and an Identity on /cpu:0 read a value of /gpu:0 (%s)",
       rc ? fl_session_error(s) : "ran");
    bool right = rc == 0 && out[0]->shape.dims[0] == 3 && out[0]->shape.dims[1] == 2;
    for (int i = 0; right && i < 6; i++)
        right = fl_tensor_floats(out[0])[i] == 2 * values[i] && fl_tensor_floats(out[1])[i] == 2 * values[i];
    ok(right, "they give the value, reshaped [3,2] and as it is");
    char path[] = "/tmp/test_cross_device_views.XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    fl_session_set_tracing(s, false);
    char *trace = fd >= 0 && fl_session_write_trace(s, path) == 0 ? read_text(path) : NULL;
    ok(trace && strstr(trace, "\"name\":\"Copy doubled\"") && strstr(trace, "\"bytes\":\"24\"") &&
           strstr(trace, "\"from\":\"/gpu:0\""),
       "the trace's copy of doubled says it moved 24 bytes from /gpu:0");
    free(trace);
    unlink(path);
    for (int i = 0; i < 2; i++)
        fl_tensor_free(out[i]);
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(x);
}

/* An Assign on /gpu:0 of a variable on /cpu:0 would write a copy: refused. */
static void test_writes_stay_beside_their_variable(void)
{
    fl_graph *g = fl_graph_new();
    fl_tensor *ones = fl_tensor_from_floats(fl_shape_make(1, 3), values);
    fl_device_scope_push(g, "/cpu:0");
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, 3), fl_zeros_initializer());
    fl_device_pop(g);
    fl_device_scope_push(g, "/gpu:0");
    fl_node *assign = fl_assign(g, v, fl_constant(g, ones, NULL), "write_v");
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_node *init = fl_global_variables_initializer(g);
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    rc = rc ? rc : fl_session_run(s, NULL, 0, NULL, 0, NULL, &assign, 1);
    ok(rc != 0 && fl_session_error_code(s) == FL_INVALID_ARGUMENT &&
           strstr(fl_session_error(s), "write_v") && strstr(fl_session_error(s), "beside its variable"),
       "an Assign on another device than its variable fails naming it: %s", fl_session_error(s));
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(ones);
}

int main(void)
{
    /* The copy path, as a GPU takes it: on PoCL a host op would read the
     * value where it lies (test_lab02 and test_fused_updates check that). */
    setenv("FLOWLAB_OPENCL_HOST_MEMORY", "0", 1);
    fl_device_info devices[16];
    int count = fl_list_devices(devices, 16);
    bool accelerator = false;
    for (int i = 0; i < count; i++)
        accelerator = accelerator || strcmp(devices[i].name, "/gpu:0") == 0;
    if (!accelerator)
        skip_all("no /gpu:0 (apt-get install pocl-opencl-icd)");
    test_views_read_copies();
    test_writes_stay_beside_their_variable();
    return done_testing();
}
