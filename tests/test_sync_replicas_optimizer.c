/* test_sync_replicas_optimizer.c: chapter 4's SyncReplicasOptimizer lives in
 * the cluster runtime and marks, in the graph's records for it, every state
 * op the wrapped optimizer builds (the Apply ops, Adam's beta power updates,
 * the global step's increment) with replicas_to_aggregate; the nodes of a
 * plain optimizer, and every other node, carry no mark; the wrapper keeps
 * no pointer to the optimizer it wraps. No server needed. */
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

int main(void)
{
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
    fl_optimizer_free(adam);
    return done_testing();
}
