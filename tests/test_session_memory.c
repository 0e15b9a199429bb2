/* test_session_memory.c: what a run's values hold (src/session_memory.c).
 * With reuse_memory a value's buffer goes back to its device's pool once its
 * last reader is issued: a chain of matrix products then holds two values
 * at once, not all of them, and computes what a session without the pool
 * does; a fetched value, a value read twice and an alias keep theirs until
 * their last reader; a warm run takes nothing new from the device. */
#include <math.h>
#include <string.h>

#include "flowlab.h"
#include "tap.h"

static const fl_session_options unfused = {.disable_fusion = true};
static const fl_session_options pooled = {.disable_fusion = true, .reuse_memory = true};

enum { N = 64, CHAIN = 6 };
#define VALUE_BYTES ((size_t)N * N * sizeof(float))

typedef struct {
    fl_graph *g;
    fl_node *x, *first, *last, *branches;
} chain_graph;

/* x w, (x w) w, ... CHAIN products of N x N matrices; then the first
 * product reshaped and read twice more (branches = r w + r w'). */
static chain_graph build(const char *device)
{
    chain_graph c = {.g = fl_graph_new()};
    float w[N * N], v[N * N];
    for (int i = 0; i < N * N; i++) {
        w[i] = (float)((i * 7) % 11 - 5) / 64.0f;
        v[i] = (float)((i * 5) % 13 - 6) / 64.0f;
    }
    fl_tensor *wt = fl_tensor_from_floats(fl_shape_make(2, N, N), w);
    fl_tensor *vt = fl_tensor_from_floats(fl_shape_make(2, N, N), v);
    fl_device_scope_push(c.g, device);
    c.x = fl_placeholder(c.g, FL_FLOAT32, fl_shape_make(2, N, N), "x");
    fl_node *wn = fl_constant(c.g, wt, "w"), *vn = fl_constant(c.g, vt, "v");
    fl_node *y = c.first = fl_matmul(c.g, c.x, wn, false, false, "product_1");
    for (int k = 2; k <= CHAIN; k++)
        y = fl_matmul(c.g, y, wn, false, false, NULL);
    c.last = y;
    fl_node *r = fl_reshape(c.g, c.first, fl_shape_make(2, N, N), "alias");
    c.branches = fl_add(c.g, fl_matmul(c.g, r, wn, false, false, NULL), fl_matmul(c.g, r, vn, false, false, NULL),
                        "branches");
    fl_device_pop(c.g);
    fl_tensor_free(wt);
    fl_tensor_free(vt);
    return c;
}

static fl_tensor *input(void)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, fl_shape_make(2, N, N));
    for (int i = 0; i < N * N; i++)
        fl_tensor_floats(t)[i] = (float)(i % 9) * 0.125f;
    return t;
}

static bool same_values(const fl_tensor *a, const fl_tensor *b)
{
    if (!a || !b)
        return false;
    return memcmp(fl_tensor_floats(a), fl_tensor_floats(b), VALUE_BYTES) == 0;
}

static size_t memory_of(const fl_session *s, const char *device, size_t *reserved)
{
    fl_device_memory m[8];
    int n = fl_session_memory(s, m, 8);
    for (int i = 0; i < n && i < 8; i++)
        if (strcmp(m[i].device, device) == 0) {
            *reserved = m[i].reserved_bytes;
            return m[i].peak_bytes;
        }
    *reserved = 0;
    return 0;
}

/* Runs fetches of c's graph with options; out gets them (freed by the caller). */
static int run(fl_session *s, const chain_graph *c, fl_node *const *fetches, int n, fl_tensor **out)
{
    fl_tensor *x = input();
    fl_feed feed = {c->x, x};
    int rc = fl_session_run(s, &feed, 1, fetches, n, out, NULL, 0);
    fl_tensor_free(x);
    return rc;
}

static void test_chain(const char *device)
{
    chain_graph c = build(device);
    fl_session *plain = fl_session_new(c.g, &unfused), *reuse = fl_session_new(c.g, &pooled);
    fl_node *last = c.last;
    fl_tensor *want = NULL, *got = NULL;
    ok(run(plain, &c, &last, 1, &want) == 0 && run(reuse, &c, &last, 1, &got) == 0, "%s: the chain runs with and "
       "without the pool: %s", device, fl_last_error());
    ok(same_values(want, got), "%s: with the pool, the chain's product is the same to every bit", device);
    size_t reserved, plain_peak = memory_of(plain, device, &reserved);
    size_t peak = memory_of(reuse, device, &reserved);
    ok(plain_peak == CHAIN * VALUE_BYTES, "%s: without the pool the run holds all %d products at once (%zu bytes, "
       "want %zu)", device, CHAIN, plain_peak, CHAIN * VALUE_BYTES);
    ok(peak == 2 * VALUE_BYTES && reserved == 2 * VALUE_BYTES, "%s: with it, two at once, in two buffers "
       "(peak %zu, reserved %zu; want %zu)", device, peak, reserved, 2 * VALUE_BYTES);
    fl_tensor_free(got);
    got = NULL;
    ok(run(reuse, &c, &last, 1, &got) == 0 && same_values(want, got) && memory_of(reuse, device, &reserved) == peak &&
       reserved == 2 * VALUE_BYTES, "%s: a warm run computes the same, holding the same, from the same buffers "
       "(reserved %zu)", device, reserved);
    fl_tensor_free(want);
    fl_tensor_free(got);
    fl_session_free(plain);
    fl_session_free(reuse);
    fl_graph_free(c.g);
}

/* The first product is fetched and read through an alias by two products:
 * its buffer stays until the run hands it over, whatever reused the others. */
static void test_kept_values(const char *device)
{
    chain_graph c = build(device);
    fl_session *plain = fl_session_new(c.g, &unfused), *reuse = fl_session_new(c.g, &pooled);
    fl_node *fetches[3] = {c.first, c.last, c.branches};
    fl_tensor *want[3] = {0}, *got[3] = {0};
    ok(run(plain, &c, fetches, 3, want) == 0 && run(reuse, &c, fetches, 3, got) == 0, "%s: the graph with "
       "branches runs with and without the pool: %s", device, fl_last_error());
    bool same = true;
    for (int i = 0; i < 3; i++)
        same = same && same_values(want[i], got[i]);
    ok(same, "%s: a fetched value, the chain's end and the two readers of an alias are the same with the pool",
       device);
    fl_tensor *alone = NULL; /* the first product not fetched: only the alias's readers keep it */
    ok(run(reuse, &c, &c.branches, 1, &alone) == 0 && same_values(want[2], alone), "%s: the alias's two readers "
       "read the first product, not a buffer reused meanwhile, when it is not fetched", device);
    fl_tensor_free(alone);
    for (int i = 0; i < 3; i++) {
        fl_tensor_free(want[i]);
        fl_tensor_free(got[i]);
    }
    fl_session_free(plain);
    fl_session_free(reuse);
    fl_graph_free(c.g);
}

int main(void)
{
    test_chain("/cpu:0");
    test_kept_values("/cpu:0");
    fl_device_info devices[4];
    int n = fl_list_devices(devices, 4);
    if (n > 1 && strcmp(devices[1].backend, "opencl") == 0) {
        test_chain("/gpu:0");
        test_kept_values("/gpu:0");
    } else {
        skip("/gpu:0's pool", "no OpenCL /gpu:0 here");
    }
    ok(fl_session_memory(NULL, NULL, 0) == -1, "fl_session_memory of no session says -1");
    return done_testing();
}
