/* test_forwarding.c: buffer forwarding (src/session_forward.c). An Add,
 * Relu or ReluGrad whose first input nothing else in the run reads writes
 * over that input's buffer, on /cpu:0 and on /gpu:0 where PoCL is; when the
 * input is fetched, read twice or read by another op, it keeps its value. */
#include <math.h>
#include <string.h>

#include "flowlab.h"
#include "session_internal.h" /* the slots, to see whose buffer a value is in */
#include "tap.h"

/* Forwarding is what is tested: the session runs the ops as written, not
 * fused into one kernel (session_fusion.c), whose intermediates have no buffer. */
static const fl_session_options unfused = {.disable_fusion = true};

enum { ROWS = 64, COLS = 40 };

typedef struct {
    fl_graph *g;
    fl_node *x, *product, *sum, *relu;
} small_graph;

/* relu(x w + b) on device, with x fed; w is all 0.5 and b is -1, so the
 * relu cuts some values and keeps others. */
static small_graph build(const char *device)
{
    small_graph m = {.g = fl_graph_new()};
    fl_device_scope_push(m.g, device);
    m.x = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, ROWS, 4), "x");
    float w[4 * COLS], b[COLS];
    for (int i = 0; i < 4 * COLS; i++)
        w[i] = 0.5f;
    for (int i = 0; i < COLS; i++)
        b[i] = -1.0f;
    fl_tensor *wt = fl_tensor_from_floats(fl_shape_make(2, 4, COLS), w);
    fl_tensor *bt = fl_tensor_from_floats(fl_shape_make(1, COLS), b);
    m.product = fl_matmul(m.g, m.x, fl_constant(m.g, wt, "w"), false, false, "product");
    m.sum = fl_add(m.g, m.product, fl_constant(m.g, bt, "b"), "sum");
    m.relu = fl_relu(m.g, m.sum, "relu");
    fl_device_pop(m.g);
    fl_tensor_free(wt);
    fl_tensor_free(bt);
    return m;
}

static fl_tensor *input(void)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, ROWS, 4));
    for (int i = 0; i < ROWS * 4; i++)
        fl_tensor_floats(t)[i] = (float)(i % 7) * 0.25f;
    return t;
}

/* Row r of x w is 0.5 times the sum of x's row r, the same in every column. */
static float product_of_row(const fl_tensor *x, int r)
{
    float sum = 0;
    for (int k = 0; k < 4; k++)
        sum += fl_tensor_floats(x)[r * 4 + k];
    return 0.5f * sum;
}

static bool values_right(const fl_tensor *x, const fl_tensor *got, bool relu)
{
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            float want = product_of_row(x, r) - (relu ? 1.0f : 0.0f);
            want = relu && want < 0 ? 0.0f : want;
            if (fabsf(fl_tensor_floats(got)[r * COLS + c] - want) > 1e-5f)
                return false;
        }
    return true;
}

static void test_device(const char *device)
{
    small_graph m = build(device);
    fl_session *s = fl_session_new(m.g, &unfused);
    fl_tensor *x = input(), *out[2] = {NULL, NULL};
    fl_feed feed = {m.x, x};
    int rc = fl_session_run(s, &feed, 1, &m.relu, 1, out, NULL, 0);
    ok(rc == 0 && values_right(x, out[0], true), "%s: relu(x w + b) is right with forwarding", device);
    ok(s->slots[m.sum->id].value.data == s->slots[m.product->id].buffer,
       "%s: the Add wrote over the product's buffer (read by nothing else)", device);
    ok(s->slots[m.relu->id].value.data != s->slots[m.sum->id].value.data,
       "%s: the Relu did not write over the Add's value: it lies in another node's buffer (no chains)", device);
    fl_tensor_free(out[0]);

    fl_node *both[2] = {m.product, m.relu};
    rc = fl_session_run(s, &feed, 1, both, 2, out, NULL, 0);
    ok(rc == 0 && values_right(x, out[0], false) && values_right(x, out[1], true),
       "%s: a fetched product keeps its value, and the relu is still right", device);
    ok(s->slots[m.sum->id].value.data != s->slots[m.product->id].buffer,
       "%s: the Add has a buffer of its own when the product is fetched", device);
    fl_tensor_free(out[0]);
    fl_tensor_free(out[1]);
    fl_tensor_free(x);
    fl_session_free(s);
    fl_graph_free(m.g);
}

/* Add(p, p): p read twice by one op is not forwarded; p with a second
 * reader (a Relu of it) is not either. */
static void test_two_readers(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 8), "x");
    fl_node *p = fl_relu(g, x, "p");
    fl_node *doubled = fl_add(g, p, p, "doubled");
    fl_node *other = fl_relu(g, p, "other");
    fl_node *total = fl_add(g, doubled, other, "total");
    float v[8] = {-2, -1, 0, 1, 2, 3, 4, 5};
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(1, 8), v), *out = NULL;
    fl_session *s = fl_session_new(g, &unfused);
    fl_feed feed = {x, xt};
    int rc = fl_session_run(s, &feed, 1, &total, 1, &out, NULL, 0);
    bool right = rc == 0;
    for (int i = 0; right && i < 8; i++)
        right = fl_tensor_floats(out)[i] == 3.0f * (v[i] > 0 ? v[i] : 0.0f);
    ok(right, "p + p + relu(p) is 3 relu(x): p, read three times, was not overwritten");
    ok(s->slots[doubled->id].value.data != s->slots[p->id].buffer, "Add(p, p) did not write over p");
    ok(s->slots[total->id].value.data == s->slots[doubled->id].buffer,
       "the last Add wrote over its first input, read by nothing else");
    fl_tensor_free(out);
    fl_tensor_free(xt);
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    test_device("/cpu:0");
    fl_device_info devices[4];
    int n = fl_list_devices(devices, 4);
    if (n > 1 && strcmp(devices[1].backend, "opencl") == 0)
        test_device("/gpu:0");
    else
        skip("/gpu:0 forwarding", "no OpenCL /gpu:0 here");
    test_two_readers();
    return done_testing();
}
