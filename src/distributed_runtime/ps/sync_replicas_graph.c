/* sync_replicas_graph.c: chapter 4's SyncReplicasOptimizer as TensorFlow
 * builds it, for a between-graph worker whose session cuts its own graph:
 * one accumulator per variable on the variable's ps, each worker's
 * gradients applied to them tagged with its local step, the chief's part
 * (take the average of replicas_to_aggregate, update, advance the global
 * step, set the token) and its start (the steps and the token set to the
 * global step it restored or initialized), every worker's wait for the
 * token, and the chief's close of the token when its session ends
 * (master_sync.c). */
#include <stdio.h>
#include <stdlib.h>

#include "sync_replicas_optimizer.h"

#define NAME_LEN 300

/* TensorFlow's shared_name for a variable's accumulator. */
static void accumulator_name(char *out, const fl_node *var) { snprintf(out, NAME_LEN, "%s/grad_accum", var->name); }

/* The token: an accumulator no gradient goes into, whose global step the
 * chief sets once its update is done (TensorFlow's sync_token_q). */
static void token_name(char *out, const fl_node *global_step)
{
    snprintf(out, NAME_LEN, "%s/sync_token", global_step->name);
}

/* Each gradient into its variable's accumulator, beside the variable,
 * tagged with local_step; t->applies gets them. */
static int build_applies(fl_graph *g, const fl_grad_var *pairs, int n, fl_sync_train *t)
{
    for (int i = 0; i < n; i++) {
        if (!pairs[i].grad)
            continue;
        if (!pairs[i].var || pairs[i].var->op != FL_OP_VARIABLE) {
            fl_graph_fail(g, "SyncReplicasOptimizer", "pair %d: the second element is not a variable", i);
            return -1;
        }
        char name[NAME_LEN];
        accumulator_name(name, pairs[i].var);
        if (fl_device_scope_push_colocated(g, pairs[i].var) != 0)
            return -1;
        fl_node *apply = fl_accumulator_apply_gradient(g, name, t->local_step, pairs[i].grad, NULL);
        fl_device_pop(g);
        if (!apply)
            return -1;
        t->applies[t->napplies++] = apply;
    }
    return 0;
}

/* The global step read after the update (which advanced it), beside it. */
static fl_node *step_after(fl_graph *g, fl_node *global_step, fl_node *update)
{
    if (fl_control_dependencies_push(g, &update, 1) != 0)
        return NULL;
    fl_device_scope_push_colocated(g, global_step);
    fl_node *new_step = fl_identity(g, global_step, "new_global_step");
    fl_device_pop(g);
    fl_control_dependencies_pop(g);
    return new_step;
}

/* Every accumulator's global step and then the token's set to new_step:
 * after the update, so a gradient of an older step is stale and a waiting
 * worker reads the updated variables; and at the chief's start, after it
 * restored or initialized the model (TensorFlow's chief_init_op and
 * sync_init_op). sets: n + 1 slots. */
static fl_node *set_steps(fl_graph *g, const fl_grad_var *averaged, int n, fl_node *global_step, fl_node *new_step,
                          fl_node **sets, const char *token_op)
{
    char name[NAME_LEN];
    for (int i = 0; i < n && new_step; i++) {
        accumulator_name(name, averaged[i].var);
        fl_device_scope_push_colocated(g, averaged[i].var);
        sets[i] = fl_accumulator_set_global_step(g, name, averaged[i].var->shape, new_step, NULL);
        fl_device_pop(g);
    }
    if (!new_step || fl_control_dependencies_push(g, sets, n) != 0)
        return NULL;
    token_name(name, global_step);
    fl_device_scope_push_colocated(g, global_step);
    fl_node *token = fl_accumulator_set_global_step(g, name, fl_shape_make(0), new_step, token_op);
    fl_device_pop(g);
    fl_control_dependencies_pop(g);
    return token;
}

/* The chief's start: the steps and the token set to the global step as it
 * is, so a gradient of a step before a restored one is stale. */
static fl_node *build_chief_init(fl_graph *g, const fl_grad_var *averaged, int n, fl_node *global_step,
                                 fl_node **sets)
{
    fl_device_scope_push_colocated(g, global_step);
    fl_node *step = fl_identity(g, global_step, "sync_init_step");
    fl_device_pop(g);
    return set_steps(g, averaged, n, global_step, step, sets, "sync_init_token");
}

/* The chief's part: each variable's average of at least
 * replicas_to_aggregate gradients, applied by the wrapped optimizer, which
 * also advances the global step; then the steps and the token. */
static fl_node *build_chief(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n, fl_node *global_step,
                            const char *scope, int replicas, fl_sync_train *t)
{
    fl_grad_var *averaged = fl_xcalloc((size_t)(n ? n : 1), sizeof *averaged);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!pairs[i].grad)
            continue;
        char name[NAME_LEN];
        accumulator_name(name, pairs[i].var);
        fl_device_scope_push_colocated(g, pairs[i].var);
        fl_node *num_required = fl_int_scalar(g, replicas, NULL);
        averaged[m].grad = fl_accumulator_take_gradient(g, name, pairs[i].var->shape, num_required, NULL);
        averaged[m++].var = pairs[i].var;
        fl_device_pop(g);
    }
    fl_node *update = fl_optimizer_plain_updates(opt, g, averaged, m, global_step, scope);
    fl_node **sets = fl_xcalloc((size_t)m + 1, sizeof *sets);
    fl_node *token = update ? set_steps(g, averaged, m, global_step, step_after(g, global_step, update), sets,
                                        "set_sync_token") : NULL;
    t->chief_init = token ? build_chief_init(g, averaged, m, global_step, sets) : NULL;
    free(sets);
    free(averaged);
    return t->chief_init ? token : NULL;
}

/* What every worker runs: its applies, then a wait, beside the global
 * step, until the token passes its local step (the chief's update is done);
 * TensorFlow's workers dequeue a token from a queue there instead. */
static fl_node *build_train(fl_graph *g, fl_sync_train *t, fl_node *global_step)
{
    char name[NAME_LEN];
    token_name(name, global_step);
    if (fl_control_dependencies_push(g, t->applies, t->napplies) != 0)
        return NULL;
    fl_device_scope_push_colocated(g, global_step);
    t->wait = fl_accumulator_wait_step(g, name, fl_shape_make(0), t->local_step, "wait_for_next_step");
    fl_device_pop(g);
    fl_control_dependencies_pop(g);
    return t->wait ? fl_group(g, &t->wait, 1, "update") : NULL;
}

/* The chief's end of training: the token closed at the global step, so a
 * worker waiting for a later step ends (TensorFlow's chief closes the
 * sync token queue when its coordinator stops). */
static fl_node *build_close(fl_graph *g, fl_node *global_step)
{
    char name[NAME_LEN];
    token_name(name, global_step);
    fl_device_scope_push_colocated(g, global_step);
    fl_node *close = fl_accumulator_close(g, name, fl_shape_make(0), global_step, "close_sync_token");
    fl_device_pop(g);
    return close;
}

fl_node *fl_sync_replicas_graph(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                fl_node *global_step, const char *scope, int replicas_to_aggregate)
{
    if (!global_step)
        return fl_graph_fail(g, scope, "synchronous training counts its steps: pass the global step to "
                                       "apply_gradients or minimize (fl_get_or_create_global_step)");
    fl_sync_train t = {.applies = fl_xcalloc((size_t)(n ? n : 1), sizeof *t.applies)};
    t.local_step = fl_identity(g, global_step, "local_step");
    if (!t.local_step || build_applies(g, pairs, n, &t) != 0 ||
        !(t.chief = build_chief(opt, g, pairs, n, global_step, scope, replicas_to_aggregate, &t)) ||
        !(t.train = build_train(g, &t, global_step)) || !(t.close = build_close(g, global_step))) {
        free(t.applies);
        return NULL;
    }
    fl_sync_train_record(g, &t);
    return t.train;
}
