/* test_sync_replicas_optimizer.c: chapter 4's SyncReplicasOptimizer lives in
 * the cluster runtime and builds TensorFlow's accumulator graph for the
 * workers that cut their own graphs: an apply and a take per variable, the
 * wrapped optimizer's updates of the takes, one wait, the train op recorded;
 * a train op without the global step refused; the wrapper keeps no pointer
 * to the optimizer it wraps. No server needed. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/ps/sync_replicas_optimizer.h"

static int count_op(fl_graph *g, fl_op_kind op)
{
    int n = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++)
        n += fl_graph_node(g, i)->op == op;
    return n;
}

/* Trains w and b toward a target with opt; counts the accumulator applies,
 * the takes and the updates of kind update among the graph's nodes. */
static void build_and_count(fl_optimizer *opt, fl_op_kind update, int *applies, int *takes, int *updates)
{
    fl_graph *g = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *b = fl_get_variable(g, "b", fl_shape_make(0), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *d = fl_sub(g, fl_add(g, w, b, NULL), fl_scalar(g, 3, NULL), NULL);
    fl_node *train = fl_minimize(opt, g, fl_reduce_mean(g, fl_mul(g, d, d, NULL), NULL, 0, false, NULL), step, NULL);
    ok(train != NULL && fl_sync_train_of(train) != NULL, "the train op builds and is recorded (%s)",
       fl_graph_error(g) ? fl_graph_error(g) : "ok");
    *applies = count_op(g, FL_OP_ACCUMULATOR_APPLY_GRADIENT);
    *takes = count_op(g, FL_OP_ACCUMULATOR_TAKE_GRADIENT);
    *updates = count_op(g, update);
    fl_graph_free(g);
}

static void test_accumulator_graph(const fl_optimizer *adam)
{
    fl_optimizer *sync = fl_sync_replicas_optimizer(adam, 2, 3);
    fl_graph *g = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, w, w, NULL), NULL, 0, false, NULL);
    ok(fl_minimize(sync, g, loss, NULL, NULL) == NULL && strstr(fl_graph_error(g), "pass the global step"),
       "a train op without the global step is refused: %s", fl_graph_error(g));
    fl_graph_free(g);
    g = fl_graph_new();
    w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    step = fl_get_or_create_global_step(g);
    loss = fl_reduce_sum(g, fl_mul(g, w, w, NULL), NULL, 0, false, NULL);
    fl_node *train = fl_minimize(sync, g, loss, step, NULL);
    const fl_sync_train *t = fl_sync_train_of(train);
    ok(t && t->napplies == 1 && t->chief && t->local_step, "it records the train op: one apply, the chief's part");
    ok(t && strcmp(t->applies[0]->attrs.edge_key, "w/grad_accum") == 0, "w's accumulator is w/grad_accum (%s)",
       t ? t->applies[0]->attrs.edge_key : "none");
    ok(count_op(g, FL_OP_ACCUMULATOR_TAKE_GRADIENT) == 1 && count_op(g, FL_OP_APPLY_ADAM) == 1 &&
       count_op(g, FL_OP_ACCUMULATOR_WAIT_STEP) == 1, "a take, the Adam update of its average, a wait");
    ok(t && t->chief_init && t->wait == t->train->controls[0] && count_op(g, FL_OP_ACCUMULATOR_SET_GLOBAL_STEP) == 4,
       "the chief's start sets w's accumulator and the token to the global step, as its update's end does (4 "
       "set-steps); the wait, whose step is the next local step, is recorded");
    fl_graph_free(g);
    fl_optimizer_free(sync);
}

int main(void)
{
    fl_optimizer *adam = fl_adam_optimizer(0.1f, 0.9f, 0.999f, 1e-8f);
    int applies, takes, updates;
    fl_optimizer *sync = fl_sync_replicas_optimizer(adam, 2, 3);
    ok(sync != NULL, "fl_sync_replicas_optimizer wraps Adam: 2 of 3 replicas");
    build_and_count(sync, FL_OP_APPLY_ADAM, &applies, &takes, &updates);
    ok(applies == 2 && takes == 2 && updates == 2, "w and b: two accumulator applies, two takes, two ApplyAdam "
       "(%d, %d, %d)", applies, takes, updates);

    ok(fl_sync_replicas_optimizer(adam, 3, 2) == NULL, "aggregating more replicas than take part is refused");
    ok(strstr(fl_last_error(), "at most total_num_replicas (got 3 of 2)") != NULL, "saying so (%s)",
       fl_last_error());
    fl_optimizer_free(sync);

    /* The header's promise: the wrapper keeps no pointer to the optimizer
     * it wraps, which may be freed at once (ASan would see a later use). */
    fl_optimizer *momentum = fl_momentum_optimizer(0.1f, 0.9f, false);
    fl_optimizer *owned = fl_sync_replicas_optimizer(momentum, 2, 2);
    fl_optimizer_free(momentum);
    build_and_count(owned, FL_OP_APPLY_MOMENTUM, &applies, &takes, &updates);
    ok(applies == 2 && updates == 2, "a wrapper whose optimizer was freed first still builds its updates "
       "(%d applies, %d momentum updates)", applies, updates);
    fl_optimizer_free(owned);
    test_accumulator_graph(adam);
    fl_optimizer_free(adam);
    return done_testing();
}
