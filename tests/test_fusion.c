/* test_fusion.c: the session's fusion pass (src/session_fusion.c). A small
 * network with every pattern (Conv2D + bias + Relu, MatMul + bias + Relu,
 * MatMul + bias, MaxPoolGrad + ReluGrad) gives the same loss and gradients
 * fused and unfused, on /cpu:0 and on /gpu:0 (PoCL's or CUDA's), and runs six
 * ops fewer, also where the weights lie on /cpu:0 as the towers' do (read
 * where they lie, or copied in) and are trained there; where a pattern's rules fail (an intermediate fetched, read
 * twice or fed, a bias of another shape, an Add of two activations) the
 * step runs every op, and the timeline names a fused op by its own type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowlab.h"
#include "tap.h"

/* Odd sizes and channel counts no vector width divides; the single layer's
 * WIDE filters take the eight-lane path of an epilogue pass. */
enum { BATCH = 3, SIDE = 9, CHANNELS = 3, FILTERS = 5, HIDDEN = 7, CLASSES = 4, WIDE = 16 };

static const fl_session_options unfused = {.disable_fusion = true};

/* A tensor of the shape with values spread over [-1, 1), from salt. */
static fl_tensor *values(fl_shape shape, int salt)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    int64_t n = fl_shape_size(shape);
    for (int64_t i = 0; i < n; i++)
        fl_tensor_floats(t)[i] = (float)((i * 37 + salt * 11) % 41) / 20.5f - 1.0f;
    return t;
}

/* Where the network's weights lie: NULL, beside the ops; "/cpu:0", on the
 * controller as chapter 2's towers keep their variables. */
static const char *weights_device;

static fl_node *constant(fl_graph *g, fl_shape shape, int salt, const char *name)
{
    fl_tensor *t = values(shape, salt);
    if (weights_device)
        fl_device_scope_push(g, weights_device);
    fl_node *c = fl_constant(g, t, name);
    if (weights_device)
        fl_device_pop(g);
    fl_tensor_free(t);
    return c;
}

/* ---- the network: conv, pool, dense with relu, dense without ---- */

typedef struct {
    fl_graph *g;
    fl_node *x, *loss, *conv, *sum, *relu;
    fl_node *fetches[8];
    int nfetches;
} network;

static fl_node *dense(fl_graph *g, fl_node *x, int in, int out, bool relu, const char *name)
{
    fl_node *w = constant(g, fl_shape_make(2, in, out), in + out, name);
    fl_node *b = constant(g, fl_shape_make(1, out), out, "bias");
    fl_node *y = fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
    return relu ? fl_relu(g, y, NULL) : y;
}

static network build(const char *device)
{
    network m = {.g = fl_graph_new()};
    fl_graph *g = m.g;
    fl_device_scope_push(g, device);
    m.x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, BATCH, SIDE, SIDE, CHANNELS), "x");
    fl_node *filter = constant(g, fl_shape_make(4, 3, 3, CHANNELS, FILTERS), 1, "filter");
    fl_node *bias = constant(g, fl_shape_make(1, FILTERS), 2, "conv_bias");
    m.conv = fl_conv2d(g, m.x, filter, 1, 1, FL_SAME, "conv");
    m.sum = fl_add(g, m.conv, bias, "conv_sum");
    m.relu = fl_relu(g, m.sum, "conv_relu");
    fl_node *pool = fl_max_pool2d(g, m.relu, 2, 2, 2, 2, FL_SAME, "pool"); /* 9x9 -> 5x5 */
    fl_node *flat = fl_reshape(g, pool, fl_shape_make(2, BATCH, 25 * FILTERS), "flat");
    fl_node *hidden = dense(g, flat, 25 * FILTERS, HIDDEN, true, "hidden");
    fl_node *logits = dense(g, hidden, HIDDEN, CLASSES, false, "logits");
    m.loss = fl_reduce_sum(g, fl_mul(g, logits, logits, NULL), NULL, 0, false, "loss");
    fl_node *wrt[2] = {m.x, filter};
    fl_node *grads[2];
    fl_gradients(g, m.loss, wrt, 2, grads);
    fl_device_pop(g);
    m.fetches[m.nfetches++] = m.loss;
    m.fetches[m.nfetches++] = grads[0];
    m.fetches[m.nfetches++] = grads[1];
    return m;
}

/* Runs the fetches once in a new session; the ops it ran, or -1. */
static int run(fl_graph *g, const fl_session_options *options, fl_node *x, fl_node *const *fetches, int n,
               fl_tensor **out)
{
    fl_session *s = fl_session_new(g, options);
    fl_tensor *input = values(fl_node_shape(x), 3);
    fl_feed feed = {x, input};
    int rc = fl_session_run(s, &feed, 1, fetches, n, out, NULL, 0);
    if (rc != 0)
        diag("the run failed: %s", fl_session_error(s));
    int ops = rc == 0 ? fl_session_ops_run(s) : -1;
    fl_tensor_free(input);
    fl_session_free(s);
    return ops;
}

/* Every value of a within 1e-5 of b's, relative to the larger magnitude. */
static bool near(const fl_tensor *a, const fl_tensor *b)
{
    if (!a || !b || fl_shape_size(a->shape) != fl_shape_size(b->shape))
        return false;
    for (int64_t i = 0; i < fl_shape_size(a->shape); i++) {
        float x = fl_tensor_floats(a)[i], y = fl_tensor_floats(b)[i];
        if (fabsf(x - y) > 1e-5f * fmaxf(1.0f, fmaxf(fabsf(x), fabsf(y)))) {
            diag("value %lld: %g fused, %g unfused", (long long)i, x, y);
            return false;
        }
    }
    return true;
}

static void free_all(fl_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        fl_tensor_free(t[i]);
}

/* Runs the fetches fused and unfused: the values agree; returns how many
 * ops fusion saved (-1 when a run failed). */
static int ops_saved(fl_graph *g, fl_node *x, fl_node *const *fetches, int n, const char *what)
{
    fl_tensor *fused[8] = {0}, *plain[8] = {0};
    int with = run(g, NULL, x, fetches, n, fused), without = run(g, &unfused, x, fetches, n, plain);
    bool same = with > 0 && without > 0;
    for (int i = 0; same && i < n; i++)
        same = near(fused[i], plain[i]);
    ok(same, "%s: the same values fused and unfused", what);
    free_all(fused, n);
    free_all(plain, n);
    return with > 0 && without > 0 ? without - with : -1;
}

static void test_network(const char *device)
{
    network m = build(device);
    char what[96];
    snprintf(what, sizeof what, "%s: loss and gradients of conv, pool, two dense layers%s", device,
             weights_device ? ", the weights on /cpu:0" : "");
    int saved = ops_saved(m.g, m.x, m.fetches, m.nfetches, what);
    ok(saved == 6, "%s: six ops fewer (conv 2, dense 2 + 1, the pool's ReluGrad 1), saved %d", device, saved);

    fl_tensor *out[6] = {0};
    setenv("FLOWLAB_FUSION", "0", 1);
    int env_off = run(m.g, NULL, m.x, m.fetches, m.nfetches, out);
    unsetenv("FLOWLAB_FUSION");
    int plain = run(m.g, &unfused, m.x, m.fetches, m.nfetches, out + 3);
    ok(env_off > 0 && env_off == plain, "%s: FLOWLAB_FUSION=0 runs every op, as disable_fusion does (%d, %d)",
       device, env_off, plain);
    free_all(out, 6);
    fl_graph_free(m.g);
}

/* ---- where fusion must not happen ---- */

typedef struct {
    fl_graph *g;
    fl_node *x, *conv, *bias, *sum, *relu;
} layer;

/* relu(conv(x) + bias), the bias of the given shape. */
static layer conv_layer(const char *device, fl_shape bias_shape)
{
    layer l = {.g = fl_graph_new()};
    fl_device_scope_push(l.g, device);
    l.x = fl_placeholder(l.g, FL_FLOAT32, fl_shape_make(4, 1, 7, 7, CHANNELS), "x");
    fl_node *filter = constant(l.g, fl_shape_make(4, 5, 5, CHANNELS, WIDE), 4, "filter");
    l.bias = constant(l.g, bias_shape, 5, "bias");
    l.conv = fl_conv2d(l.g, l.x, filter, 2, 2, FL_VALID, "conv");
    l.sum = fl_add(l.g, l.conv, l.bias, "sum");
    l.relu = fl_relu(l.g, l.sum, "relu");
    fl_device_pop(l.g);
    return l;
}

static void expect_unfused(layer *l, fl_node *const *fetches, int n, const char *device, const char *why)
{
    char what[128];
    snprintf(what, sizeof what, "%s: %s", device, why);
    int saved = ops_saved(l->g, l->x, fetches, n, what);
    ok(saved == 0, "%s: nothing fused (saved %d)", what, saved);
    fl_graph_free(l->g);
}

static void test_not_fused(const char *device)
{
    layer l = conv_layer(device, fl_shape_make(1, WIDE));
    int saved = ops_saved(l.g, l.x, &l.relu, 1, "batch 1, stride 2, VALID, 16 filters");
    ok(saved == 2, "%s: conv, bias and relu run as one op (saved %d)", device, saved);
    fl_graph_free(l.g);

    l = conv_layer(device, fl_shape_make(1, WIDE));
    fl_node *both[2] = {l.relu, l.conv};
    expect_unfused(&l, both, 2, device, "the Conv2D's output fetched");

    l = conv_layer(device, fl_shape_make(1, WIDE));
    fl_node *twice[2] = {l.relu, fl_add(l.g, l.conv, l.conv, "conv_twice")};
    expect_unfused(&l, twice, 2, device, "the Conv2D's output read twice");

    l = conv_layer(device, fl_shape_make(0));
    expect_unfused(&l, &l.relu, 1, device, "a scalar bias, not one per channel");

    l = conv_layer(device, fl_shape_make(3, 2, 2, WIDE));
    expect_unfused(&l, &l.relu, 1, device, "an Add of two activations (the other [2,2,16])");
}

/* A fed intermediate is not computed: nothing to fuse it with. */
static void test_fed_add(const char *device)
{
    layer l = conv_layer(device, fl_shape_make(1, WIDE));
    fl_session *s = fl_session_new(l.g, NULL);
    fl_tensor *sum = values(fl_shape_make(4, 1, 2, 2, WIDE), 6), *out = NULL;
    fl_feed feed = {l.sum, sum};
    int rc = fl_session_run(s, &feed, 1, &l.relu, 1, &out, NULL, 0);
    bool right = rc == 0 && out;
    for (int i = 0; right && i < 4 * WIDE; i++)
        right = fl_tensor_floats(out)[i] == fmaxf(0.0f, fl_tensor_floats(sum)[i]);
    ok(right && fl_session_ops_run(s) == 1, "%s: the Add fed: only the Relu runs, on the fed value", device);
    fl_tensor_free(out);
    fl_tensor_free(sum);
    fl_session_free(s);
    fl_graph_free(l.g);
}

/* The timeline shows the fused op under the Relu's name. */
static void test_trace(const char *device)
{
    layer l = conv_layer(device, fl_shape_make(1, WIDE));
    fl_session *s = fl_session_new(l.g, NULL);
    fl_tensor *x = values(fl_shape_make(4, 1, 7, 7, CHANNELS), 7), *out = NULL;
    fl_feed feed = {l.x, x};
    fl_session_set_tracing(s, true);
    int rc = fl_session_run(s, &feed, 1, &l.relu, 1, &out, NULL, 0);
    char path[] = "/tmp/test_fusion_XXXXXX", text[8192] = "";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    FILE *f = fd >= 0 && rc == 0 && fl_session_write_trace(s, path) == 0 ? fopen(path, "r") : NULL;
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    contains(text, "\"name\":\"relu\",\"cat\":\"FusedConv2D\"",
             "the trace names the fused op under the Relu's name");
    ok(f && !strstr(text, "\"cat\":\"Conv2D\""), "%s: and shows no Conv2D of its own", device);
    unlink(path);
    fl_tensor_free(out);
    fl_tensor_free(x);
    fl_session_free(s);
    fl_graph_free(l.g);
}

/* ---- weights on the controller, trained there (chapter 2's towers) ---- */

/* relu(conv(x) + b) -> dense, its variables on /cpu:0 and Adam's update
 * there; the ops on device, their gradients on grads_on (device, as a
 * tower's, or /cpu:0, as a minimize under a /cpu:0 scope builds them). The
 * loss after three steps, or NAN. */
static float trained_loss(const char *device, const char *grads_on, const fl_session_options *options, int *ops)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/cpu:0");
    fl_node *filter = fl_get_variable(g, "filter", fl_shape_make(4, 3, 3, CHANNELS, WIDE),
                                      fl_random_uniform_initializer(-0.5f, 0.5f, 1));
    fl_node *bias = fl_get_variable(g, "bias", fl_shape_make(1, WIDE), fl_constant_initializer(0.1f));
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 16 * WIDE, CLASSES),
                                 fl_random_uniform_initializer(-0.5f, 0.5f, 2));
    fl_device_pop(g);
    fl_device_scope_push(g, device);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, BATCH, 8, 8, CHANNELS), "x");
    fl_node *h = fl_relu(g, fl_add(g, fl_conv2d(g, x, filter, 2, 2, FL_SAME, "conv"), bias, NULL), NULL);
    fl_node *flat = fl_reshape(g, h, fl_shape_make(2, BATCH, 16 * WIDE), "flat");
    fl_node *logits = fl_matmul(g, flat, w, false, false, "logits");
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, logits, logits, NULL), NULL, 0, false, "loss");
    fl_device_pop(g);
    fl_device_scope_push(g, grads_on);
    fl_node *vars[3] = {filter, bias, w}, *grads[3];
    fl_gradients(g, loss, vars, 3, grads);
    fl_device_pop(g);
    fl_device_scope_push(g, "/cpu:0");
    fl_grad_var pairs[3];
    for (int i = 0; i < 3; i++)
        pairs[i] = (fl_grad_var){grads[i], vars[i]};
    fl_optimizer *adam = fl_adam_optimizer(0.01f, 0.9f, 0.999f, 1e-8f);
    fl_node *train = fl_apply_gradients(adam, g, pairs, 3, NULL, "train");
    fl_optimizer_free(adam);
    fl_node *init = fl_global_variables_initializer(g);
    fl_device_pop(g);
    fl_session *s = fl_session_new(g, options);
    fl_tensor *input = values(fl_shape_make(4, BATCH, 8, 8, CHANNELS), 9), *out = NULL;
    fl_feed feed = {x, input};
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    for (int step = 0; rc == 0 && step < 3; step++)
        rc = fl_session_run(s, &feed, 1, NULL, 0, NULL, &train, 1);
    if (rc == 0)
        *ops = fl_session_ops_run(s);
    rc = rc ? rc : fl_session_run(s, &feed, 1, &loss, 1, &out, NULL, 0);
    if (rc != 0)
        diag("the run failed: %s", fl_session_error(s));
    float value = rc == 0 && out ? fl_tensor_floats(out)[0] : NAN;
    fl_tensor_free(out);
    fl_tensor_free(input);
    fl_session_free(s);
    fl_graph_free(g);
    return value;
}

static void test_trained_elsewhere(const char *device, const char *grads_on)
{
    int fused_ops = 0, plain_ops = 0;
    float fused = trained_loss(device, grads_on, NULL, &fused_ops);
    float plain = trained_loss(device, grads_on, &unfused, &plain_ops);
    ok(!isnan(fused) && fabsf(fused - plain) <= 1e-4f * fmaxf(1.0f, fabsf(plain)),
       "%s: weights on /cpu:0 trained by Adam there, gradients on %s: the same loss after 3 steps fused and "
       "unfused (%g, %g)", device, grads_on, fused, plain);
    ok(plain_ops - fused_ops == 2, "%s: and conv, bias and relu ran as one op each step (%d ops fewer)", device,
       plain_ops - fused_ops);
}

static void test_device(const char *device)
{
    test_network(device);
    if (strcmp(device, "/cpu:0") != 0) {
        weights_device = "/cpu:0";
        test_network(device);
        weights_device = NULL;
        test_trained_elsewhere(device, device);
        test_trained_elsewhere(device, "/cpu:0"); /* ReluGrad reads the Relu across devices */
    }
    test_not_fused(device);
    test_fed_add(device);
    test_trace(device);
}

int main(void)
{
    unsetenv("FLOWLAB_FUSION");
    setenv("FLOWLAB_ALLOW_TF32", "0", 1); /* float32's tolerances; test_tf32 checks TF32 */
    test_device("/cpu:0");
    fl_device_info devices[4];
    const char *backend = fl_list_devices(devices, 4) > 1 ? devices[1].backend : "none";
    if (strcmp(backend, "cuda") == 0) {
        /* cuDNN's convolution or cuBLAS's product, then one bias/ReLU kernel. */
        test_device("/gpu:0");
    } else if (strcmp(backend, "opencl") == 0) {
        test_device("/gpu:0");
        /* A GPU-type device's path: CLBlast multiplies, then one epilogue pass. */
        diag("again with FLOWLAB_CL_GEMM=clblast");
        setenv("FLOWLAB_CL_GEMM", "clblast", 1);
        test_network("/gpu:0");
        test_not_fused("/gpu:0");
        unsetenv("FLOWLAB_CL_GEMM");
    } else
        skip("/gpu:0 fusion", "no OpenCL or CUDA /gpu:0 here");
    return done_testing();
}
