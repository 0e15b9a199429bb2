/* stage_cut.h: where a pipeline's stages begin. --cut names the layers that
 * start stages 1, 2, ...; without it each stage gets an equal number of
 * layers; --cut balanced times every layer on one device first and takes
 * the cut whose slowest stage is fastest (exercise balanced-cut, made real). */
#ifndef LAB07_STAGE_CUT_H
#define LAB07_STAGE_CUT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_pictures.h"
#include "pipeline.h"

/* Equal numbers of layers; where they do not divide, the first and last
 * stages take one more first (then the second and the last but one...),
 * since a model's lightest layers are often at its ends (the MLP's dense_1
 * and dense_10). The CNN's 4 layers in 2 stages are its convolutions, then
 * its dense layers; the MLP's 10 in 4 are 3, 2, 2 and 3 layers. */
static void even_cut(int nlayers, int stages, int *first_layer)
{
    int extra = nlayers % stages, size[MAX_STAGES];
    for (int s = 0; s < stages; s++) {
        int from_end = s < stages - 1 - s ? s : stages - 1 - s, rank = 2 * from_end + (s > stages - 1 - s);
        size[s] = nlayers / stages + (rank < extra);
    }
    first_layer[0] = 0;
    for (int s = 0; s < stages; s++)
        first_layer[s + 1] = first_layer[s] + size[s];
}

/* --cut dense_5 or --cut conv_2,dense_1,dense_2: the layers that begin
 * stages 1 to S-1, in order. 0, or -1 with why filled. */
static int cut_from_names(const char *cut, model_kind kind, int stages, int *first_layer, char *why, size_t n)
{
    int nlayers = model_num_layers(kind), s = 1;
    first_layer[0] = 0;
    for (const char *at = cut; s < stages; s++) {
        size_t len = strcspn(at, ",");
        int found = -1;
        for (int l = 1; l < nlayers && found < 0; l++)
            if (strlen(model_layer_name(kind, l)) == len && strncmp(at, model_layer_name(kind, l), len) == 0)
                found = l;
        if (found <= first_layer[s - 1]) {
            snprintf(why, n, "'%.*s' is not a layer after %s; a stage begins at one of %s to %s, in order",
                     (int)len, at, model_layer_name(kind, first_layer[s - 1]), model_layer_name(kind, 1),
                     model_layer_name(kind, nlayers - 1));
            return -1;
        }
        first_layer[s] = found;
        at += len;
        bool more = *at == ',';
        at += more;
        if (!more && s + 1 < stages) {
            snprintf(why, n, "it names %d layer%s; %d stages need %d, the first layer of each stage after the first",
                     s, s == 1 ? "" : "s", stages, stages - 1);
            return -1;
        }
        if (s + 1 == stages && (*at || more)) {
            snprintf(why, n, "it names more than %d layer%s, one for each stage after the first", stages - 1,
                     stages == 2 ? "" : "s");
            return -1;
        }
    }
    first_layer[stages] = nlayers;
    return 0;
}

// [book:balanced_cut]
/* Tries every cut of the layers into stages (cut[s] the first layer of
 * stage s, cut[stages] = nlayers) and keeps in best the one whose slowest
 * stage is fastest; a stage's time is the sum of its layers'. */
static void try_cuts(const double *layer_ms, int stages, int s, int *cut, double *best_ms, int *best)
{
    if (s == stages) {
        double slowest = 0;
        for (int k = 0; k < stages; k++) {
            double t = 0;
            for (int l = cut[k]; l < cut[k + 1]; l++)
                t += layer_ms[l];
            slowest = t > slowest ? t : slowest;
        }
        if (slowest < *best_ms) {
            *best_ms = slowest;
            memcpy(best, cut, (size_t)(stages + 1) * sizeof *cut);
        }
        return;
    }
    for (int l = cut[s - 1] + 1; l <= cut[stages] - (stages - s); l++) {
        cut[s] = l;
        try_cuts(layer_ms, stages, s + 1, cut, best_ms, best);
    }
}
// [end:balanced_cut]

/* Each layer's time per step, its forward and backward ops and its Adam
 * update, from the executor's events ("gradients/model/dense_3/MatMul_grad/
 * MatMul", "train/dense_3/ApplyAdam"). */
static void layer_times(const fl_step_event *events, int n, model_kind kind, int steps, double *layer_ms)
{
    for (int i = 0; i < n; i++) {
        int l = strcmp(events[i].op, "Copy") != 0 ? layer_in_name(kind, events[i].name) : -1;
        if (l >= 0)
            layer_ms[l] += events[i].duration_us / 1000.0 / steps;
    }
}

/* What stage s holds, for the lab's first lines: "conv layers" and "dense
 * layers" (the CNN's two kinds), else "conv_2" or "dense_1 to dense_4". */
static const char *stage_layers_text(const pipeline_plan *plan, int s, char *text, size_t n)
{
    int from = plan->first_layer[s], to = plan->first_layer[s + 1];
    if (plan->model == MODEL_CNN && from == 0 && to == 2)
        return "conv layers";
    if (plan->model == MODEL_CNN && from == 2 && to == 4)
        return "dense layers";
    if (to - from == 1)
        snprintf(text, n, "%s", model_layer_name(plan->model, from));
    else
        snprintf(text, n, "%s to %s", model_layer_name(plan->model, from), model_layer_name(plan->model, to - 1));
    return text;
}

/* The model's training step on one device: forward, backward and Adam. */
static fl_node *one_device_step(fl_graph *g, model_kind kind, const char *device, int batch, fl_optimizer *adam,
                                fl_node **image, fl_node **label)
{
    fl_device_scope_push(g, "/cpu:0");
    *image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, batch, 28, 28, 1), "image");
    *label = fl_placeholder(g, FL_INT32, fl_shape_make(1, batch), "label");
    fl_device_pop(g);
    fl_device_scope_push(g, device);
    fl_variable_scope_push(g, "model", FL_REUSE_INHERIT);
    fl_node *logits = model_layers(g, kind, 0, model_num_layers(kind), *image);
    fl_variable_scope_pop(g);
    fl_grad_var grads[MAX_VARS];
    int nvars = fl_compute_gradients(g, mean_loss(g, logits, *label), NULL, 0, grads);
    fl_device_pop(g);
    return nvars < 0 || nvars > MAX_VARS ? NULL : apply_by_layer(g, adam, kind, grads, nvars, NULL);
}

/* --cut balanced's measurement: each layer's time per step (layer_ms) over
 * 3 traced steps of a batch of zeros on device, after one untraced (the
 * first builds the kernels). 0, or -1 with why filled. */
static int measure_layer_times(model_kind kind, const char *device, int batch, double *layer_ms, char *why,
                               size_t why_len)
{
    fl_graph *g = fl_graph_new();
    fl_optimizer *adam = fl_adam_optimizer(1e-4f, 0.9f, 0.999f, 1e-8f);
    fl_node *image, *label, *train = one_device_step(g, kind, device, batch, adam, &image, &label);
    fl_node *init = fl_global_variables_initializer(g);
    fl_session *s = train && !fl_graph_error(g) ? fl_session_new(g, NULL) : NULL;
    fl_tensor *x = fl_tensor_new(FL_FLOAT32, fl_shape_make(4, batch, 28, 28, 1));
    fl_tensor *y = fl_tensor_new(FL_INT32, fl_shape_make(1, batch));
    fl_feed feeds[] = {{image, x}, {label, y}};
    int rc = s && fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) == 0 ? 0 : -1;
    for (int step = 0; step < 4 && rc == 0; step++) {
        fl_session_set_tracing(s, step >= 1);
        rc = fl_session_run(s, feeds, 2, NULL, 0, NULL, &train, 1);
    }
    int n = rc == 0 ? fl_session_step_events(s, NULL, 0) : 0;
    fl_step_event *events = calloc((size_t)n + 1, sizeof *events);
    if (rc == 0 && events) {
        fl_session_step_events(s, events, n);
        memset(layer_ms, 0, (size_t)model_num_layers(kind) * sizeof *layer_ms);
        layer_times(events, n, kind, 3, layer_ms);
    } else {
        snprintf(why, why_len, "%s", s ? fl_session_error(s) : fl_graph_error(g) ? fl_graph_error(g) : fl_last_error());
    }
    free(events);
    fl_tensor_free(x);
    fl_tensor_free(y);
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    return rc == 0 && events ? 0 : -1;
}

#endif
