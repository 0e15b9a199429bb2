/* test_opencl.c: the OpenCL backend with two PoCL devices
 * (POCL_DEVICES="pthread pthread", set before flowlab first looks): both
 * compute correctly in one graph with edges between them and the host, a
 * warm step allocates nothing, a missing /gpu:3 is named with the devices
 * that exist, and the program cache makes a second process start faster. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device.h" /* fl_accelerator, fl_device->allocations */
#include "tap.h"
#include "../cl/backend_opencl.h"
#include "../cl/opencl_program.h"

/* ---- one graph over /cpu:0, /gpu:0 and /gpu:1 ---- */

typedef struct {
    fl_graph *g;
    fl_node *x, *out, *grad, *train;
} model;

/* out = sum(tanh(relu(x W0) W1) + x W0[:, :3]); on devices[0..2], layer by layer. */
static model build_model(const char *const devices[3])
{
    model m = {.g = fl_graph_new()};
    fl_graph *g = m.g;
    fl_device_scope_push(g, devices[0]);
    m.x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 6), "x");
    fl_node *w0 = fl_get_variable(g, "w0", fl_shape_make(2, 6, 5), fl_glorot_uniform_initializer(1));
    fl_node *h = fl_relu(g, fl_matmul(g, m.x, w0, false, false, NULL), NULL);
    fl_device_pop(g);
    fl_device_scope_push(g, devices[1]);
    fl_node *w1 = fl_get_variable(g, "w1", fl_shape_make(2, 5, 3), fl_glorot_uniform_initializer(2));
    fl_node *t = fl_tanh(g, fl_matmul(g, h, w1, false, false, NULL), NULL);
    fl_device_pop(g);
    fl_device_scope_push(g, devices[2]);
    fl_node *skip = fl_slice(g, h, 1, 0, 3, NULL);
    m.out = fl_reduce_mean(g, fl_add(g, t, skip, NULL), NULL, 0, false, "loss");
    fl_node *grads[1];
    fl_gradients(g, m.out, &w0, 1, grads);
    m.grad = grads[0];
    fl_device_pop(g);
    fl_optimizer *opt = fl_gradient_descent_optimizer(0.1f);
    m.train = fl_minimize(opt, g, m.out, NULL, NULL);
    fl_optimizer_free(opt);
    return m;
}

static fl_tensor *inputs(int rows)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, rows, 6));
    for (int i = 0; i < rows * 6; i++)
        fl_tensor_floats(t)[i] = (float)((i * 37) % 11) / 5.0f - 1.0f;
    return t;
}

/* Initializes, trains 3 steps, fetches loss and gradient; 0 on success. */
static int train_and_fetch(model *m, fl_session *s, fl_tensor *x, fl_tensor **out)
{
    fl_node *init = fl_global_variables_initializer(m->g);
    fl_feed feed = {m->x, x};
    fl_node *fetches[2] = {m->out, m->grad};
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (fl_session_run(s, &feed, 1, NULL, 0, NULL, &m->train, 1) != 0)
            return -1;
    return fl_session_run(s, &feed, 1, fetches, 2, out, NULL, 0);
}

static double max_difference(const fl_tensor *a, const fl_tensor *b)
{
    if (!a || !b || !fl_shape_equal(a->shape, b->shape))
        return 1e30;
    double worst = 0;
    for (int64_t i = 0; i < fl_shape_size(a->shape); i++)
        worst = fmax(worst, fabs(fl_tensor_floats(a)[i] - fl_tensor_floats(b)[i]));
    return worst;
}

static void check_cross_device(void)
{
    const char *host[3] = {"/cpu:0", "/cpu:0", "/cpu:0"};
    const char *split[3] = {"/gpu:0", "/gpu:1", "/cpu:0"};
    const char *swapped[3] = {"/gpu:1", "/cpu:0", "/gpu:0"};
    const char *const *layouts[3] = {host, split, swapped};
    fl_tensor *results[3][2] = {{0}};
    fl_tensor *x = inputs(8);
    for (int l = 0; l < 3; l++) {
        model m = build_model(layouts[l]);
        fl_session *s = fl_session_new(m.g, NULL);
        if (fl_graph_error(m.g) || train_and_fetch(&m, s, x, results[l]) != 0)
            diag("%s", fl_graph_error(m.g) ? fl_graph_error(m.g) : fl_session_error(s));
        fl_session_free(s);
        fl_graph_free(m.g);
    }
    for (int l = 1; l < 3; l++) {
        double diff = fmax(max_difference(results[l][0], results[0][0]),
                           max_difference(results[l][1], results[0][1]));
        ok(diff < 1e-5, "layers on %s, %s, %s: after 3 steps, loss and gradient as on /cpu:0 "
           "(max difference %.2g, tolerance 1e-5)", layouts[l][0], layouts[l][1], layouts[l][2], diff);
    }
    for (int l = 0; l < 3; l++) {
        fl_tensor_free(results[l][0]);
        fl_tensor_free(results[l][1]);
    }
    fl_tensor_free(x);
}

/* ---- a warm step allocates nothing ---- */

static uint64_t device_allocations(void)
{
    return fl_accelerator(0)->allocations + fl_accelerator(1)->allocations;
}

static uint64_t buffers_created(void)
{
    return fl_opencl_pool_stats_of(0).buffers_created + fl_opencl_pool_stats_of(1).buffers_created;
}

static void check_warm_steps(void)
{
    const char *split[3] = {"/gpu:0", "/gpu:1", "/cpu:0"};
    model m = build_model(split);
    fl_tensor *x = inputs(16), *out[2] = {0};
    fl_feed feed = {m.x, x};
    fl_session *first = fl_session_new(m.g, NULL);
    ok(train_and_fetch(&m, first, x, out) == 0, "a first session trains on /gpu:0 and /gpu:1");
    fl_session_free(first);
    uint64_t created = buffers_created();
    fl_session *second = fl_session_new(m.g, NULL);
    fl_node *init = fl_global_variables_initializer(m.g);
    int rc = fl_session_run(second, NULL, 0, NULL, 0, NULL, &init, 1);
    rc = rc ? rc : fl_session_run(second, &feed, 1, NULL, 0, NULL, &m.train, 1);
    uint64_t after_first_step = device_allocations();
    for (int i = 0; i < 5 && rc == 0; i++)
        rc = fl_session_run(second, &feed, 1, NULL, 0, NULL, &m.train, 1);
    ok(rc == 0, "a second session runs 6 steps");
    ok(device_allocations() == after_first_step,
       "its warm steps allocate no device memory (%llu allocations before and after)",
       (unsigned long long)after_first_step);
    ok(buffers_created() == created, "its first step took every buffer from the pools "
       "(%llu OpenCL buffers created in all)", (unsigned long long)created);
    fl_session_free(second);
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    fl_tensor_free(x);
    fl_graph_free(m.g);
}

static void check_missing_device(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/gpu:3");
    fl_node *c = fl_scalar(g, 1.0f, "c");
    fl_node *y = fl_neg(g, c, "y");
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &y, 1, &out, NULL, 0) != 0, "a node on /gpu:3 fails to run");
    contains(fl_session_error(s), "/cpu:0, /gpu:0, /gpu:1", "... and the error lists the devices");
    fl_session_free(s);
    fl_graph_free(g);
}

/* The session says where each node really ran: its own device when it
 * exists, /cpu:0 where soft placement moved it. */
static void check_placed_devices(void)
{
    fl_graph *g = fl_graph_new();
    const char *asked[3] = {"/gpu:0", "/gpu:1", "/gpu:3"};
    const char *ran[3] = {"/gpu:0", "/gpu:1", "/cpu:0"};
    fl_node *nodes[3], *last = fl_scalar(g, 1.0f, "c");
    for (int i = 0; i < 3; i++) {
        fl_device_scope_push(g, asked[i]);
        last = nodes[i] = fl_neg(g, last, NULL);
        fl_device_pop(g);
    }
    fl_session_options opts = {.allow_soft_placement = true};
    fl_session *s = fl_session_new(g, &opts);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &last, 1, &out, NULL, 0) == 0 && fl_tensor_scalar(out) == -1.0f,
       "a chain over /gpu:0, /gpu:1 and /gpu:3 runs with soft placement");
    for (int i = 0; i < 3; i++)
        is_string(fl_session_node_device(s, nodes[i]), ran[i],
                  i < 2 ? "a node asking for an existing accelerator runs there"
                        : "a node asking for /gpu:3 ran on /cpu:0");
    fl_tensor_free(out);
    fl_session_free(s);
    fl_graph_free(g);
}

/* ---- the program cache: this process builds, a second one loads ---- */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double open_seconds(void)
{
    double start = now_seconds();
    fl_device *d = fl_accelerator(0);
    return d ? now_seconds() - start : -1;
}

/* Run as `test_opencl --second-start`: opens /gpu:0 and reports. */
static int second_start(void)
{
    double seconds = open_seconds();
    fl_cl_cache_stats st = fl_cl_program_cache_stats();
    printf("seconds=%f hits=%llu misses=%llu\n", seconds, (unsigned long long)st.cache_hits,
           (unsigned long long)st.cache_misses);
    return seconds < 0;
}

static int count_cache_files(const char *dir)
{
    char command[600];
    snprintf(command, sizeof command, "ls %s/*.clbin 2>/dev/null | wc -l", dir);
    FILE *p = popen(command, "r");
    int n = 0;
    if (p && fscanf(p, "%d", &n) != 1)
        n = 0;
    if (p)
        pclose(p);
    return n;
}

static void check_cache(const char *self, const char *dir, double first)
{
    fl_cl_cache_stats st = fl_cl_program_cache_stats();
    ok(st.cache_misses >= 2 && st.cache_writes >= 2,
       "the first start builds from source and writes the cache (%llu builds, %llu files written)",
       (unsigned long long)st.cache_misses, (unsigned long long)st.cache_writes);
    ok(count_cache_files(dir) >= 2, "the cache directory holds the program binaries");
    char command[800], line[256] = "";
    snprintf(command, sizeof command, "'%s' --second-start", self);
    FILE *p = popen(command, "r");
    if (p && !fgets(line, sizeof line, p))
        line[0] = '\0';
    if (p)
        pclose(p);
    double second = -1;
    unsigned long long hits = 0, misses = 99;
    sscanf(line, "seconds=%lf hits=%llu misses=%llu", &second, &hits, &misses);
    ok(second >= 0 && hits >= 2 && misses == 0,
       "a second process loads both programs from the cache (%llu hits, %llu builds)", hits, misses);
    diag("opening /gpu:0: first start %.3f s (build from source), second start %.3f s (cache)",
         first, second);
}

int main(int argc, char **argv)
{
    /* Before the first flowlab call: the device list is fixed at first use. */
    setenv("POCL_DEVICES", "pthread pthread", 1);
    setenv("FLOWLAB_BACKEND", "opencl", 1);
    if (argc > 1 && strcmp(argv[1], "--second-start") == 0)
        return second_start();
    char dir[] = "/tmp/flowlab-cache-XXXXXX";
    if (!mkdtemp(dir))
        skip_all("cannot make a temporary cache directory");
    setenv("FLOWLAB_CACHE_DIR", dir, 1);
    setenv("POCL_CACHE_DIR", dir, 1); /* PoCL's own kernel cache starts cold too */
    if (fl_accelerator_count() < 2) {
        char why[600];
        snprintf(why, sizeof why, "two OpenCL devices are needed, found %d (%s)",
                 fl_accelerator_count(), fl_opencl_backend.why_unavailable());
        rmdir(dir);
        skip_all(why);
    }
    double first = open_seconds();
    ok(first >= 0 && fl_accelerator(1) != NULL, "/gpu:0 and /gpu:1 open");
    check_cache(argv[0], dir, first);
    check_cross_device();
    check_warm_steps();
    check_missing_device();
    check_placed_devices();
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
