/* test_device_fetch.c: fetches and feeds that stay on a device
 * (fl_run_options.fetch_to, device feeds, fl_device_buffer_*), on /cpu:0
 * and on /gpu:0 when there is one (PoCL here; the CUDA backend on a GPU
 * machine): a value left on its device and fed back gives the host path's
 * numbers, a caller's buffer (host or device) receives the value, and no
 * copy to or from the host is made (counted by wrapping the device's table);
 * a too-small buffer, a wrong device, a device feed on the wrong device and
 * a device that cannot copy within itself fail with errors naming the
 * fetch or feed, and hand back nothing. */
#include <string.h>

#include "tap.h"
#include "flowlab.h"
#include "device.h" /* the device's table, wrapped to count its host copies */

enum { ROWS = 2, IN = 4, OUT = 3 };

/* y = tanh(x w) and, fed from it, q = sum(p * p), all on one device. */
typedef struct {
    fl_graph *g;
    fl_node *x, *y, *p, *q, *init;
} model;

static model build(const char *device)
{
    model m = {.g = fl_graph_new()};
    fl_device_scope_push(m.g, device);
    m.x = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, -1, IN), "x");
    fl_node *w = fl_get_variable(m.g, "w", fl_shape_make(2, IN, OUT), fl_random_uniform_initializer(-1, 1, 7));
    m.y = fl_tanh(m.g, fl_matmul(m.g, m.x, w, false, false, NULL), "y");
    m.p = fl_placeholder(m.g, FL_FLOAT32, fl_shape_make(2, -1, OUT), "p");
    m.q = fl_reduce_sum(m.g, fl_mul(m.g, m.p, m.p, NULL), NULL, 0, false, "q");
    m.init = fl_global_variables_initializer(m.g);
    fl_device_pop(m.g);
    return m;
}

static fl_tensor *input(void)
{
    float v[ROWS * IN];
    for (int i = 0; i < ROWS * IN; i++)
        v[i] = 0.25f * (float)(i % 5) - 0.4f;
    return fl_tensor_from_floats(fl_shape_make(2, ROWS, IN), v);
}

static fl_session *started(const model *m)
{
    fl_session *s = fl_session_new(m->g, NULL);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &m->init, 1) != 0)
        diag("initializing: %s", fl_session_error(s));
    return s;
}

/* The model, a session that has initialized it, and a value for x. */
typedef struct {
    model m;
    fl_session *s;
    fl_tensor *x;
} fixture;

static fixture set_up(const char *device)
{
    fixture f = {.m = build(device)};
    f.s = started(&f.m);
    f.x = input();
    return f;
}

static void tear_down(fixture *f)
{
    fl_tensor_free(f->x);
    fl_session_free(f->s);
    fl_graph_free(f->m.g);
}

/* ---- counting the device's copies to and from host memory ---- */

static const fl_backend *real;
static fl_backend counting;
static int host_copies;

static int count_copy_in(void *impl, void *dst, const void *src, size_t bytes)
{
    host_copies++;
    return real->copy_in(impl, dst, src, bytes);
}

static int count_copy_out(void *impl, void *dst, const void *src, size_t bytes)
{
    host_copies++;
    return real->copy_out(impl, dst, src, bytes);
}

static int count_copy_out_now(void *impl, void *dst, const void *src, size_t bytes)
{
    host_copies++;
    return real->marks.copy_out_now(impl, dst, src, bytes);
}

static fl_device *device_of(const char *name)
{
    return strcmp(name, "/cpu:0") == 0 ? fl_host_device() : fl_accelerator(0);
}

static void start_counting(fl_device *d)
{
    real = d->backend;
    counting = *real;
    counting.copy_in = count_copy_in;
    counting.copy_out = count_copy_out;
    if (real->marks.copy_out_now)
        counting.marks.copy_out_now = count_copy_out_now;
    d->backend = &counting;
    host_copies = 0;
}

static void stop_counting(fl_device *d) { d->backend = real; }

/* ---- the checks ---- */

/* The host path: y fetched to the host, fed back as p. */
static int host_path(fl_session *s, const model *m, const fl_tensor *x, float *y_out, float *q_out)
{
    fl_tensor *y = NULL, *q = NULL;
    fl_feed fx = {m->x, x};
    int rc = fl_session_run(s, &fx, 1, &m->y, 1, &y, NULL, 0);
    fl_feed fp = {m->p, y};
    rc = rc ? rc : fl_session_run(s, &fp, 1, &m->q, 1, &q, NULL, 0);
    if (rc == 0) {
        memcpy(y_out, y->data, sizeof(float) * ROWS * OUT);
        *q_out = fl_tensor_scalar(q);
    }
    fl_tensor_free(y);
    fl_tensor_free(q);
    return rc;
}

/* y left in the session's buffer on its device, fed back as p: the host
 * path's q, with no copy to or from the host once x is on the device. */
static void stays_and_feeds_back(const char *device, fl_session *s, const model *m, const fl_tensor *x,
                                 float want_q)
{
    size_t x_bytes = sizeof(float) * ROWS * IN;
    void *x_buffer = fl_device_buffer_alloc(device, x_bytes);
    ok(x_buffer && fl_device_buffer_write(device, x_buffer, x->data, x_bytes) == 0,
       "%s: a buffer of the program's own holds x", device);
    fl_tensor x_there = {.dtype = FL_FLOAT32, .shape = x->shape, .data = x_buffer, .device = device,
                         .borrowed = true};
    fl_fetch_target stay = {.device = device};
    fl_run_options options = {.fetch_to = &stay};
    fl_tensor *y = NULL, *q = NULL;
    fl_device *d = device_of(device);
    start_counting(d);
    fl_feed fx = {m->x, &x_there};
    int rc = fl_session_run_with_options(s, &options, &fx, 1, &m->y, 1, &y, NULL, 0);
    if (!ok(rc == 0 && y && y->borrowed && y->device && strcmp(y->device, device) == 0,
            "%s: y stays on its device, borrowed", device))
        diag("%s", fl_session_error(s));
    fl_feed fp = {m->p, y};
    rc = rc ? rc : fl_session_run(s, &fp, 1, &m->q, 0, NULL, &m->q, 1);
    int copies = host_copies;
    stop_counting(d);
    ok(rc == 0 && copies == 0, "%s: fed x and y on the device, fetched y there: no host copy (%d)", device,
       copies);
    fl_run_options to_host = {0};
    rc = rc ? rc : fl_session_run_with_options(s, &to_host, &fp, 1, &m->q, 1, &q, NULL, 0);
    ok(rc == 0 && q && fl_tensor_scalar(q) == want_q, "%s: q from y fed back on the device = the host "
       "path's %g (%g)", device, want_q, q ? fl_tensor_scalar(q) : -1.0);
    fl_tensor_free(y); /* the struct only: the buffer is the session's */
    fl_tensor_free(q);
    fl_device_buffer_free(device, x_buffer);
}

static void records_device(int index, const fl_tensor *value, void *user)
{
    (void)index;
    *(const char **)user = value->device;
}

/* The caller's device buffer, then its host memory, receive y. */
static void into_callers_buffers(const char *device, fl_session *s, const model *m, const fl_tensor *x,
                                 const float *want_y)
{
    size_t bytes = sizeof(float) * ROWS * OUT;
    float got[ROWS * OUT] = {0}, host[ROWS * OUT] = {0};
    void *buffer = fl_device_buffer_alloc(device, bytes);
    const char *seen = NULL;
    fl_fetch_target there = {.device = device, .buffer = buffer, .capacity = bytes};
    fl_run_options options = {.fetch_ready = records_device, .user = &seen, .fetch_to = &there};
    fl_tensor *y = NULL;
    fl_feed fx = {m->x, x};
    int rc = fl_session_run_with_options(s, &options, &fx, 1, &m->y, 1, &y, NULL, 0);
    if (!ok(rc == 0 && y && y->data == buffer && y->borrowed && seen && strcmp(seen, device) == 0,
            "%s: y goes into the caller's device buffer; fetch_ready gets the device tensor", device))
        diag("%s", fl_session_error(s));
    ok(rc == 0 && fl_device_buffer_read(device, buffer, got, bytes) == 0 && memcmp(got, want_y, bytes) == 0,
       "%s: the buffer holds the host path's y", device);
    fl_tensor_free(y);
    fl_fetch_target in_host = {.buffer = host, .capacity = bytes};
    options = (fl_run_options){.fetch_to = &in_host};
    rc = fl_session_run_with_options(s, &options, &fx, 1, &m->y, 1, &y, NULL, 0);
    ok(rc == 0 && y && y->data == (void *)host && !y->device && memcmp(host, want_y, bytes) == 0,
       "%s: y goes into the caller's host memory", device);
    fl_tensor_free(y);
    fl_device_buffer_free(device, buffer);
}

/* Each refusal: the run fails with INVALID_ARGUMENT, hands back nothing,
 * and says `what`. */
static void refused(fl_session *s, int rc, fl_tensor *out, const char *device, const char *check,
                    const char *what)
{
    ok(rc == -1 && !out && fl_session_error_code(s) == FL_INVALID_ARGUMENT,
       "%s: %s fails with INVALID_ARGUMENT and no output", device, check);
    contains(fl_session_error(s), what, check);
}

static void refusals(const char *device, const char *other, fl_session *s, const model *m, const fl_tensor *x)
{
    float small[2];
    fl_feed fx = {m->x, x};
    fl_tensor *y = NULL;
    fl_fetch_target too_small = {.buffer = small, .capacity = sizeof small};
    fl_run_options options = {.fetch_to = &too_small};
    int rc = fl_session_run_with_options(s, &options, &fx, 1, &m->y, 1, &y, NULL, 0);
    refused(s, rc, y, device, "a buffer too small", "fetch 0 (y): its value, float32 [2,3], is 24 bytes, "
            "but fetch_to's buffer holds 8");
    fl_fetch_target elsewhere = {.device = other};
    options = (fl_run_options){.fetch_to = &elsewhere};
    rc = fl_session_run_with_options(s, &options, &fx, 1, &m->y, 1, &y, NULL, 0);
    char want[160];
    snprintf(want, sizeof want, "fetch 0 (y): fetch_to asks for it on %s, but it runs on %s", other, device);
    refused(s, rc, y, device, "fetch_to naming another device", want);
    fl_tensor x_elsewhere = *x;
    x_elsewhere.device = other;
    fl_feed wrong = {m->x, &x_elsewhere};
    rc = fl_session_run(s, &wrong, 1, &m->y, 1, &y, NULL, 0);
    snprintf(want, sizeof want, "feed x: its value lies on %s, but the placeholder runs on %s", other, device);
    refused(s, rc, y, device, "a feed on another device", want);
}

static void on_device(const char *device, const char *other)
{
    fixture f = set_up(device);
    float want_y[ROWS * OUT], want_q = 0;
    if (!ok(host_path(f.s, &f.m, f.x, want_y, &want_q) == 0, "%s: the host path runs", device))
        diag("%s", fl_session_error(f.s));
    stays_and_feeds_back(device, f.s, &f.m, f.x, want_q);
    into_callers_buffers(device, f.s, &f.m, f.x, want_y);
    refusals(device, other, f.s, &f.m, f.x);
    tear_down(&f);
}

/* Counting works: the host path copies in and out. */
static void counting_counts(void)
{
    fixture f = set_up("/cpu:0");
    float y[ROWS * OUT], q;
    start_counting(fl_host_device());
    int rc = host_path(f.s, &f.m, f.x, y, &q);
    int copies = host_copies;
    stop_counting(fl_host_device());
    ok(rc == 0 && copies >= 4, "the host path's copies are counted (%d)", copies);
    tear_down(&f);
}

/* A device that cannot copy within itself (a remote task's) keeps nothing
 * for the caller: the host's table without its device_copies stands for one. */
static void device_without_copies(void)
{
    fixture f = set_up("/cpu:0");
    fl_tensor *y = NULL;
    fl_device *host = fl_host_device();
    real = host->backend;
    counting = *real;
    counting.device_copies = (fl_backend_device_copies){NULL, NULL};
    host->backend = &counting;
    fl_fetch_target stay = {.device = "/cpu:0"};
    fl_feed fx = {f.m.x, f.x};
    int rc = fl_session_run_with_options(f.s, &(fl_run_options){.fetch_to = &stay}, &fx, 1, &f.m.y, 1, &y, NULL, 0);
    host->backend = real;
    ok(rc == -1 && !y && fl_session_error_code(f.s) == FL_UNIMPLEMENTED,
       "a device that cannot copy within itself refuses to keep a fetch: UNIMPLEMENTED");
    contains(fl_session_error(f.s), "fetch y: /cpu:0 (host) cannot keep values for the caller", "and says which");
    tear_down(&f);
}

static void buffer_errors(void)
{
    ok(fl_device_buffer_alloc("/gpu:9", 16) == NULL && fl_last_error_code() == FL_NOT_FOUND,
       "a buffer on a device that is not there: NOT_FOUND");
    contains(fl_last_error(), "there is no /gpu:9; the devices are /cpu:0", "the error names the devices");
    ok(fl_device_buffer_alloc("gpu0", 16) == NULL && fl_last_error_code() == FL_INVALID_ARGUMENT,
       "a name that is not a device: INVALID_ARGUMENT");
    fl_tensor kept = {.dtype = FL_FLOAT32, .shape = fl_shape_make(1, 1), .data = NULL, .device = "/gpu:0"};
    ok(fl_tensor_copy(&kept) == NULL && strstr(fl_last_error(), "lies on /gpu:0"),
       "fl_tensor_copy refuses a device tensor");
}

int main(void)
{
    setenv("POCL_DEVICES", "pthread", 0);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
    counting_counts();
    on_device("/cpu:0", "/gpu:3");
    if (fl_accelerator_count() >= 1) {
        on_device("/gpu:0", "/cpu:0");
    } else {
        fl_device_info info[4];
        fl_list_devices(info, 4);
        skip("fetches that stay on /gpu:0", fl_last_error());
    }
    device_without_copies();
    buffer_errors();
    return done_testing();
}
