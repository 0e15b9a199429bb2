/* test_sync_replicas_optimizer.c: chapter 4's SyncReplicasOptimizer lives in
 * the cluster runtime and marks, in the graph's records for it, every state
 * op the wrapped optimizer builds (the Apply ops, Adam's beta power updates,
 * the global step's increment) with replicas_to_aggregate; the nodes of a
 * plain optimizer, and every other node, carry no mark; the wrapper keeps
 * no pointer to the optimizer it wraps. With FLOWLAB_BETWEEN_GRAPH_PARTITIONS=1
 * it builds TensorFlow's accumulator graph instead: an apply and a take per
 * variable, the wrapped updates of the takes, one wait, no marks. No server
 * needed. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "flowlab_cluster.h"
#include "runtime.h"
#include "distributed_runtime/ps/sync_replicas_optimizer.h"

/* Trains w and b toward a target with opt; counts the marked nodes, the
 * Apply ops among them and the nodes marked with something else than want. */
static void build_and_count(fl_optimizer *opt, int want, int *marked, int *applies, int *wrong)
{
    fl_graph *g = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *b = fl_get_variable(g, "b", fl_shape_make(0), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *d = fl_sub(g, fl_add(g, w, b, NULL), fl_scalar(g, 3, NULL), NULL);
    ok(fl_minimize(opt, g, fl_reduce_mean(g, fl_mul(g, d, d, NULL), NULL, 0, false, NULL), step, NULL) != NULL,
       "the train op builds (%s)", fl_graph_error(g) ? fl_graph_error(g) : "ok");
    *marked = *applies = *wrong = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        fl_node *n = fl_graph_node(g, i);
        int r = fl_sync_replicas_to_aggregate(n);
        *marked += r != 0;
        *wrong += r != 0 && r != want;
        *applies += r != 0 && n->op == FL_OP_APPLY_ADAM;
    }
    fl_graph_free(g);
}

static int count_op(fl_graph *g, fl_op_kind op)
{
    int n = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++)
        n += fl_graph_node(g, i)->op == op;
    return n;
}

static void test_accumulator_graph(const fl_optimizer *adam)
{
    setenv("FLOWLAB_BETWEEN_GRAPH_PARTITIONS", "1", 1);
    fl_optimizer *sync = fl_sync_replicas_optimizer(adam, 2, 3);
    unsetenv("FLOWLAB_BETWEEN_GRAPH_PARTITIONS");
    fl_graph *g = fl_graph_new();
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_node *step = fl_get_or_create_global_step(g);
    fl_node *loss = fl_reduce_sum(g, fl_mul(g, w, w, NULL), NULL, 0, false, NULL);
    ok(fl_minimize(sync, g, loss, NULL, NULL) == NULL && strstr(fl_graph_error(g), "pass the global step"),
       "with the switch on, a train op without the global step is refused: %s", fl_graph_error(g));
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
    int marked = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++)
        marked += fl_sync_replicas_to_aggregate(fl_graph_node(g, i)) != 0;
    ok(marked == 0, "and no mark for the remote devices (%d)", marked);
    fl_graph_free(g);
    fl_optimizer_free(sync);
}

int main(void)
{
    unsetenv("FLOWLAB_BETWEEN_GRAPH_PARTITIONS"); /* the marks are the default path's */
    fl_optimizer *adam = fl_adam_optimizer(0.1f, 0.9f, 0.999f, 1e-8f);
    int marked, applies, wrong;
    build_and_count(adam, 0, &marked, &applies, &wrong);
    ok(marked == 0, "a plain optimizer's updates carry no mark (%d marked)", marked);

    fl_optimizer *sync = fl_sync_replicas_optimizer(adam, 2, 3);
    ok(sync != NULL, "fl_sync_replicas_optimizer wraps Adam: 2 of 3 replicas");
    build_and_count(sync, 2, &marked, &applies, &wrong);
    ok(applies == 2 && wrong == 0, "both ApplyAdam ops are marked with 2 (%d, %d wrong)", applies, wrong);
    ok(marked == 5, "and the two beta power updates and the step's increment: 5 marked (%d)", marked);

    ok(fl_sync_replicas_optimizer(adam, 3, 2) == NULL, "aggregating more replicas than take part is refused");
    ok(strstr(fl_last_error(), "at most total_num_replicas (got 3 of 2)") != NULL, "saying so (%s)",
       fl_last_error());
    fl_optimizer_free(sync);

    /* The header's promise: the wrapper keeps no pointer to the optimizer
     * it wraps, which may be freed at once (ASan would see a later use). */
    fl_optimizer *momentum = fl_momentum_optimizer(0.1f, 0.9f, false);
    fl_optimizer *owned = fl_sync_replicas_optimizer(momentum, 2, 2);
    fl_optimizer_free(momentum);
    build_and_count(owned, 2, &marked, &applies, &wrong);
    ok(marked == 3 && wrong == 0, "a wrapper whose optimizer was freed first still builds its marked updates "
       "(%d marked)", marked);
    fl_optimizer_free(owned);
    test_accumulator_graph(adam);
    fl_optimizer_free(adam);
    return done_testing();
}
