/* schedule.h: chapter 7's pipeline schedules and what they hold. GPipe runs
 * every micro-batch's forward pass before the backward passes, so a stage
 * holds M micro-batches' activations; 1F1B (PipeDream-Flush) lets stage s
 * start micro-batch m only once m - (S - s) has gone back through it, so it
 * holds at most S - s. Recomputation (GPipe's re-materialization) keeps only
 * a stage's input and runs its forward pass again just before its backward. */
#ifndef LAB07_SCHEDULE_H
#define LAB07_SCHEDULE_H

#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "layers.h"

#define MAX_VARS 24 /* the CNN has 8 trainable variables, the MLP 20 */

typedef enum { SCHEDULE_GPIPE, SCHEDULE_1F1B } schedule_kind;

/* The stage that holds layer l: first_layer[s] <= l < first_layer[s + 1]. */
static int stage_of_layer(const int *first_layer, int stages, int l)
{
    int s = 0;
    while (s + 1 < stages && l >= first_layer[s + 1])
        s++;
    return s;
}

static int stage_of_variable(model_kind kind, const int *first_layer, int stages, const fl_node *var)
{
    int l = layer_in_name(kind, fl_node_name(var));
    return l < 0 ? stages - 1 : stage_of_layer(first_layer, stages, l);
}

// [book:one_f_one_b]
/* 1F1B: stage s of piece m starts (its "enter" Identity runs) only after
 * the gradients of its variables for piece m - (S - s) are issued, which is
 * that piece's backward pass through the stage. A device runs its queue in
 * order, so the earlier piece's activations are free by then. */
static void hold_back_stage(fl_graph *g, model_kind kind, const int *first_layer, int stages, fl_node *enter,
                            int s, const fl_grad_var *earlier, int nvars)
{
    for (int v = 0; v < nvars; v++)
        if (earlier[v].grad && stage_of_variable(kind, first_layer, stages, earlier[v].var) == s)
            fl_add_control_input(g, enter, earlier[v].grad);
}
// [end:one_f_one_b]

// [book:recompute]
/* One piece's gradients with its stages' activations recomputed: the last
 * stage differentiates its loss as usual; every earlier stage s runs its
 * layers again from its input (entry[s]), once the gradient of its output
 * (upstream) exists, and differentiates sum(output * upstream), whose
 * gradient is upstream's chain through the stage: the same values as
 * without recomputing. Its first-run activations die in the forward pass.
 * Writes one pair per trainable variable, in fl_compute_gradients' order. */
static int recompute_gradients(fl_graph *g, model_kind kind, const int *first_layer, int stages, fl_node *loss,
                               fl_node *const *entry, const char *const *devices, fl_grad_var *out)
{
    fl_node *vars[MAX_VARS], *xs[MAX_VARS + 1], *grads[MAX_VARS + 1], *upstream = NULL;
    int nvars = fl_trainable_variables(g, vars, MAX_VARS);
    if (nvars < 0 || nvars > MAX_VARS)
        return -1;
    for (int v = 0; v < nvars; v++)
        out[v] = (fl_grad_var){NULL, vars[v]};
    for (int s = stages - 1; s >= 0; s--) {
        fl_node *y = loss;
        char scope[32];
        snprintf(scope, sizeof scope, "recompute/stage_%d", s);
        fl_name_scope_push(g, scope);
        fl_device_scope_push(g, devices[s]); /* the gradients' ops too, their seed (OnesLike) included */
        if (s < stages - 1) {
            /* upstream comes from the next stage's device: its copy here
             * waits until it is finished, and the stage's layers wait for
             * the copy (a control input on upstream itself would wait only
             * until it was enqueued there) */
            fl_node *arrived = fl_stop_gradient(g, upstream, "upstream");
            fl_variable_scope_push(g, "model", FL_REUSE);
            fl_control_dependencies_push(g, &arrived, 1);
            fl_node *x = fl_identity(g, entry[s], "enter");
            fl_control_dependencies_pop(g);
            x = model_layers(g, kind, first_layer[s], first_layer[s + 1], x);
            fl_variable_scope_pop(g);
            y = fl_mul(g, x, arrived, "chain");
        }
        int n = 0, at[MAX_VARS];
        for (int v = 0; v < nvars; v++)
            if (stage_of_variable(kind, first_layer, stages, vars[v]) == s) {
                at[n] = v;
                xs[n++] = vars[v];
            }
        if (s > 0)
            xs[n] = entry[s];
        int rc = fl_gradients(g, y, xs, n + (s > 0), grads);
        fl_device_pop(g);
        fl_name_scope_pop(g);
        if (rc != 0)
            return -1;
        for (int k = 0; k < n; k++)
            out[at[k]].grad = grads[k];
        upstream = s > 0 ? grads[n] : NULL;
    }
    return nvars;
}
// [end:recompute]

/* After training: the most bytes the last step's values held at once on
 * each device, as the session's pool counts them (fl_session_memory); with
 * --stage_hosts, as each stage task counted its own in the last traced step. */
static void print_memory(const fl_session *s)
{
    fl_device_memory memory[16];
    int n = fl_session_memory(s, memory, 16);
    if (n <= 0) {
        printf("memory: the stage tasks count their values' peaks in a traced step: add --trace FILE.json\n");
        return;
    }
    bool on_tasks = false;
    for (int i = 0; i < n && i < 16; i++)
        on_tasks = on_tasks || strncmp(memory[i].device, "/job:", 5) == 0;
    printf("memory held at once in the last %sstep:", on_tasks ? "traced " : "");
    for (int i = 0; i < n && i < 16; i++)
        printf(" %s %.1f MB%s", memory[i].device, memory[i].peak_bytes / 1e6, i + 1 < n && i + 1 < 16 ? "," : "");
    printf(" (op outputs and copies made there)\n");
}

#endif
