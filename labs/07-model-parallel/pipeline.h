/* pipeline.h: chapter 7's vertical split. A model (layers.h) cut between
 * its layers into stages, each on its own device, and GPipe's pipeline over
 * them: the batch is cut into micro-batches that flow through the stages,
 * and their gradients are accumulated and applied once. Replicas of the
 * pipeline compose the two kinds of parallelism: each replica has its own
 * devices and its share of the batch, and the gradients are averaged over
 * every replica's micro-batches. */
#ifndef LAB07_PIPELINE_H
#define LAB07_PIPELINE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "layers.h"
#include "schedule.h"

#define MAX_REPLICAS 2
#define MAX_STAGES 4
#define MAX_PIECES 64 /* replicas x micro-batches */
#define DEVICE_NAME_BYTES 40
typedef char device_name[DEVICE_NAME_BYTES]; /* "/gpu:1", or "/job:worker/task:3/gpu:0" with --stage_hosts */

/* The model, where it is cut, and where each stage of each replica runs:
 * devices[r][s]. Stage s holds layers [first_layer[s], first_layer[s+1]).
 * With the model on one device, one stage holds every layer. */
typedef struct {
    model_kind model;
    int replicas, micro_batches, stages;
    schedule_kind schedule; /* schedule.h */
    bool recompute;
    int first_layer[MAX_STAGES + 1];
    char devices[MAX_REPLICAS][MAX_STAGES][DEVICE_NAME_BYTES];
} pipeline_plan;

/* One replica's stages, for place_by_stage. */
typedef struct {
    int stages;
    device_name *devices; /* devices[stages] */
} replica_stages;

// [book:stages]
/* Every stage of one piece of the batch, each in its name scope ("stage_1")
 * and on its device: stage s is the model's layers [first_layer[s],
 * first_layer[s+1]), and its output is the next stage's input. The
 * variables are made by the first piece and shared by the rest. With entry,
 * each stage begins with an Identity ("enter", entry[s]) that a schedule
 * can hold back and recomputation can start from (schedule.h). */
static fl_node *build_stages(fl_graph *g, const pipeline_plan *plan, fl_node *image, device_name *devices,
                             bool reuse, fl_node **entry)
{
    fl_variable_scope_push(g, "model", reuse ? FL_REUSE : FL_REUSE_INHERIT);
    fl_node *x = image;
    for (int s = 0; s < plan->stages; s++) {
        char scope[16];
        snprintf(scope, sizeof scope, "stage_%d", s);
        fl_name_scope_push(g, scope);
        fl_device_scope_push(g, devices[s]);
        if (entry)
            x = entry[s] = fl_identity(g, x, "enter");
        x = model_layers(g, plan->model, plan->first_layer[s], plan->first_layer[s + 1], x);
        fl_device_pop(g);
        fl_name_scope_pop(g);
    }
    fl_variable_scope_pop(g);
    return x;
}
// [end:stages]

// [book:place_by_stage]
/* A device function for the backward pass: a gradient op is named after
 * the forward op it differentiates ("micro_batch_1/gradients/stage_0/
 * conv_1/Conv2D_grad/..."), so the stage in its name says where it runs,
 * beside the activations it reads. Anything else (the loss's gradient
 * seed) runs on the last stage. TensorFlow's colocate_gradients_with_ops. */
static const char *place_by_stage(const fl_node *node, void *user)
{
    const replica_stages *replica = user;
    const char *at = strstr(fl_node_name(node), "stage_");
    int s = at ? atoi(at + 6) : replica->stages - 1;
    return replica->devices[s >= 0 && s < replica->stages ? s : replica->stages - 1];
}
// [end:place_by_stage]

static fl_node *mean_loss(fl_graph *g, fl_node *logits, fl_node *label)
{
    fl_node *per_example = fl_sparse_softmax_cross_entropy_with_logits(g, label, logits, NULL);
    return fl_reduce_mean(g, per_example, NULL, 0, false, "loss");
}

/* Adam's updates, each in its layer's name scope ("train/dense_1/ApplyAdam"),
 * so that a trace says which layer each update serves and trace_report
 * counts it with the layer; one pair of beta powers and one step count, as
 * one fl_apply_gradients over all variables builds them. */
static fl_node *apply_by_layer(fl_graph *g, fl_optimizer *optimizer, model_kind kind, const fl_grad_var *grads,
                               int nvars, fl_node *global_step)
{
    const char *scopes[MAX_VARS];
    for (int v = 0; v < nvars; v++)
        scopes[v] = layer_of_variable(kind, grads[v].var);
    return fl_apply_gradients_scoped(optimizer, g, grads, nvars, scopes, global_step, "train");
}

/* What build_pipeline gives the training loop. */
typedef struct {
    fl_node *loss;                 /* the mean of the pieces' losses: the batch's */
    fl_grad_var grads[MAX_VARS];   /* accumulated over every piece */
    int nvars;
} pipeline_out;

// [book:accumulate]
/* grads[p][v] is piece p's gradient of variable v. Each variable's mean
 * over the pieces is summed on the variable's own device, so a stage's
 * gradients never leave it; they are applied once, after the last piece.
 * The sum runs as the pieces come, one Add each, which the session does in
 * place (its buffer forwarded), so a stage holds one sum, not M gradients.
 * One piece (M = 1, one replica) has nothing to add: its gradients go to
 * the optimizer as they are, not copied twice more by an Add and a Mul. */
static void accumulate_gradients(fl_graph *g, fl_grad_var grads[][MAX_VARS], int npieces,
                                 int nvars, fl_grad_var *out)
{
    if (npieces == 1) {
        memcpy(out, grads[0], (size_t)nvars * sizeof *out);
        return;
    }
    for (int v = 0; v < nvars; v++) {
        fl_node *var = grads[0][v].var, *sum = NULL;
        /* "accumulate/model/dense_1/kernel/sum_3": named after the variable,
         * so that a trace (and trace_report) tells which layer it serves */
        char name[256];
        fl_device_scope_push(g, fl_node_device(var));
        for (int p = 0; p < npieces; p++) {
            snprintf(name, sizeof name, "accumulate/%s/sum_%d", fl_node_name(var), p);
            if (grads[p][v].grad)
                sum = sum ? fl_add(g, sum, grads[p][v].grad, name) : grads[p][v].grad;
        }
        snprintf(name, sizeof name, "accumulate/%s/mean", fl_node_name(var));
        fl_node *mean = sum ? fl_mul(g, sum, fl_scalar(g, 1.0f / (float)npieces, NULL), name) : NULL;
        fl_device_pop(g);
        out[v] = (fl_grad_var){mean, var};
    }
}
// [end:accumulate]

// [book:pipeline]
/* Piece p's gradients, by fl_compute_gradients or with its activations
 * recomputed; and under 1F1B, each of its stages held back until an earlier
 * piece of its replica has gone back through that stage. */
static int piece_gradients(fl_graph *g, const pipeline_plan *plan, const replica_stages *replica, fl_node *loss,
                           fl_node *const *entry, fl_grad_var grads[][MAX_VARS], int p)
{
    const char *devices[MAX_STAGES];
    for (int s = 0; s < plan->stages; s++)
        devices[s] = replica->devices[s];
    int nvars = plan->recompute ? recompute_gradients(g, plan->model, plan->first_layer, plan->stages, loss, entry,
                                                      devices, grads[p])
                                : fl_compute_gradients(g, loss, NULL, 0, grads[p]);
    return nvars;
}

/* Cuts the batch into replicas x micro_batches pieces (on the host, where it
 * is fed), runs the stages and the backward pass of each piece on its
 * replica's devices, and accumulates the gradients. Piece p belongs to
 * replica p / micro_batches. */
static pipeline_out build_pipeline(fl_graph *g, const pipeline_plan *plan, fl_node *image,
                                   fl_node *label)
{
    pipeline_out out = {0};
    int npieces = plan->replicas * plan->micro_batches;
    fl_node *images[MAX_PIECES], *labels[MAX_PIECES], *losses[MAX_PIECES], *entry[MAX_STAGES];
    fl_grad_var grads[MAX_PIECES][MAX_VARS];
    bool entries = plan->schedule == SCHEDULE_1F1B || plan->recompute;
    fl_device_scope_push(g, "/cpu:0");
    fl_split(g, image, npieces, 0, images, "split_image");
    fl_split(g, label, npieces, 0, labels, "split_label");
    fl_device_pop(g);
    for (int p = 0; p < npieces; p++) {
        int r = p / plan->micro_batches, m = p % plan->micro_batches;
        char scope[48];
        snprintf(scope, sizeof scope, "replica_%d/micro_batch_%d", r, m);
        fl_name_scope_push(g, plan->replicas > 1 ? scope : strchr(scope, '/') + 1);
        replica_stages replica = {plan->stages, (device_name *)plan->devices[r]};
        fl_device_function_push(g, place_by_stage, &replica);
        fl_node *logits = build_stages(g, plan, images[p], replica.devices, p > 0, entries ? entry : NULL);
        for (int s = 0; plan->schedule == SCHEDULE_1F1B && s < plan->stages; s++)
            if (m >= plan->stages - s)
                hold_back_stage(g, plan->model, plan->first_layer, plan->stages, entry[s], s,
                                grads[p - (plan->stages - s)], out.nvars);
        losses[p] = mean_loss(g, logits, labels[p]);
        out.nvars = piece_gradients(g, plan, &replica, losses[p], entry, grads, p);
        fl_device_pop(g);
        fl_name_scope_pop(g);
        if (out.nvars < 0 || out.nvars > MAX_VARS)
            return out; /* the graph's error says why (or main: too many variables) */
    }
    accumulate_gradients(g, grads, npieces, out.nvars, out.grads);
    if (npieces == 1) {
        out.loss = losses[0];
        return out;
    }
    fl_device_scope_push(g, "/cpu:0");
    out.loss = fl_mul(g, fl_add_n(g, losses, npieces, NULL), fl_scalar(g, 1.0f / (float)npieces, NULL),
                      "loss");
    fl_device_pop(g);
    return out;
}
// [end:pipeline]

#endif
