/* gradcheck.h: checks an op's gradient against central finite differences.
 * loss = sum(y * w) with fixed random weights w, so every output element
 * matters; d loss / d x from fl_gradients is compared, element by element,
 * with (loss(x + h) - loss(x - h)) / 2h. One TAP line per float input. */
#ifndef FLOWLAB_GRADCHECK_H
#define FLOWLAB_GRADCHECK_H

#include "flowlab.h"
#include "tap.h"

typedef fl_node *(*gc_build_fn)(fl_graph *g, fl_node **xs, void *user);

/* A tensor of uniform random values in [lo, hi), reproducible from seed. */
static inline fl_tensor *gc_random(fl_shape shape, float lo, float hi, unsigned seed)
{
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, shape);
    float *v = fl_tensor_floats(t);
    for (int64_t i = 0; i < fl_shape_size(shape); i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * (float)(seed >> 8) / 16777216.0f;
    }
    return t;
}

static inline double gc_loss(fl_session *s, fl_node *loss, fl_node **xs, fl_tensor *const *values,
                             int nx)
{
    fl_feed feeds[8];
    for (int i = 0; i < nx; i++)
        feeds[i] = (fl_feed){xs[i], values[i]};
    fl_tensor *out = NULL;
    if (fl_session_run(s, feeds, nx, &loss, 1, &out, NULL, 0) != 0)
        return NAN;
    double v = fl_tensor_scalar(out);
    fl_tensor_free(out);
    return v;
}

static inline bool gradcheck(const char *what, gc_build_fn build, void *user, int nx,
                             fl_tensor *const *x_values, double tol)
{
    fl_graph *g = fl_graph_new();
    fl_node *xs[8];
    for (int i = 0; i < nx; i++)
        xs[i] = fl_placeholder(g, x_values[i]->dtype, x_values[i]->shape, NULL);
    fl_node *y = build(g, xs, user);
    fl_session *s = fl_session_new(g, NULL);
    fl_feed feeds[8];
    for (int i = 0; i < nx; i++)
        feeds[i] = (fl_feed){xs[i], x_values[i]};
    fl_tensor *y_value = NULL;
    if (!y || fl_session_run(s, feeds, nx, &y, 1, &y_value, NULL, 0) != 0) {
        ok(false, "%s: builds and runs", what);
        diag("%s", fl_graph_error(g) ? fl_graph_error(g) : fl_session_error(s));
        fl_session_free(s);
        fl_graph_free(g);
        return false;
    }
    fl_tensor *w = gc_random(y_value->shape, -1.0f, 1.0f, 7);
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, y, fl_constant(g, w, NULL), NULL), NULL, 0, false, NULL);
    fl_node *grads[8] = {0};
    bool all_pass = true;
    bool built = fl_gradients(g, loss, xs, nx, grads) == 0;
    for (int i = 0; i < nx; i++) {
        if (x_values[i]->dtype != FL_FLOAT32)
            continue;
        fl_tensor *analytic = NULL;
        if (!built || !grads[i] || fl_session_run(s, feeds, nx, &grads[i], 1, &analytic, NULL, 0) != 0) {
            all_pass = ok(false, "%s: gradient for input %d", what, i);
            diag("%s", fl_graph_error(g) ? fl_graph_error(g) : fl_session_error(s));
            continue;
        }
        float *x = fl_tensor_floats(x_values[i]);
        double worst = 0.0;
        int64_t worst_at = 0;
        const double h = 1e-2;
        for (int64_t j = 0; j < fl_shape_size(x_values[i]->shape); j++) {
            float saved = x[j];
            x[j] = saved + (float)h;
            double up = gc_loss(s, loss, xs, x_values, nx);
            x[j] = saved - (float)h;
            double down = gc_loss(s, loss, xs, x_values, nx);
            x[j] = saved;
            double numeric = (up - down) / (2 * h);
            double got = fl_tensor_floats(analytic)[j];
            double err = fabs(got - numeric) / (fabs(numeric) > 1.0 ? fabs(numeric) : 1.0);
            if (!(err <= worst)) {
                worst = err;
                worst_at = j;
            }
        }
        bool pass = worst <= tol;
        ok(pass, "%s: gradient for input %d matches finite differences", what, i);
        if (!pass)
            diag("worst relative error %.3g at element %lld (tolerance %.3g)", worst, (long long)worst_at, tol);
        all_pass = all_pass && pass;
        fl_tensor_free(analytic);
    }
    fl_tensor_free(w);
    fl_tensor_free(y_value);
    fl_session_free(s);
    fl_graph_free(g);
    return all_pass;
}

#endif
