/* master_sync.c: a between-graph worker's run of a synchronous train op
 * (fl_sync_replicas_optimizer's accumulator graph, sync_replicas_graph.c).
 * The chief's run takes the chief's part too, inline: TensorFlow's chief
 * runs it in a queue-runner thread its session hook starts. Every such run
 * also fetches each apply's "dropped as stale" and counts them into the
 * cluster's stale tally, which fl_remote_stale_steps reads. When the
 * chief's session ends, it closes the token, as TensorFlow's chief closes
 * its sync token queue when its coordinator stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "distributed_runtime/ps/sync_replicas_optimizer.h"
#include "master.h"

static const fl_sync_train *train_among(fl_node *const *targets, int ntargets)
{
    const fl_sync_train *t = NULL;
    for (int i = 0; i < ntargets && !t; i++)
        t = fl_sync_train_of(targets[i]);
    return t;
}

/* The step's gradients that came too late: one stale step, and a variable
 * update for each (fetched: the local step, then each apply's flag). */
static void count_stale(const fl_cluster *c, fl_tensor *const *got, int n)
{
    int32_t step = *(const int32_t *)got[0]->data;
    for (int i = 1; i <= n; i++)
        if (*(const int32_t *)got[i]->data != 0)
            fl_stale_tally_count(&fl_cluster_state_of(c)->stale, (uint64_t)(step < 0 ? 0 : step));
}

int fl_master_run_training(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                           fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    const fl_sync_train *t = train_among(targets, ntargets);
    if (!t)
        return fl_master_run(m, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets);
    const fl_cluster *c = fl_master_cluster(m);
    int nmore = 1 + t->napplies, nall = nfetches + nmore;
    fl_node **all_fetches = fl_xmalloc((size_t)nall * sizeof *all_fetches);
    fl_node **all_targets = fl_xmalloc((size_t)(ntargets + 1) * sizeof *all_targets);
    fl_tensor **got = fl_xcalloc((size_t)nall, sizeof *got);
    memcpy(all_fetches, fetches, (size_t)nfetches * sizeof *fetches);
    all_fetches[nfetches] = t->local_step;
    memcpy(all_fetches + nfetches + 1, t->applies, (size_t)t->napplies * sizeof *t->applies);
    memcpy(all_targets, targets, (size_t)ntargets * sizeof *targets);
    int nall_targets = ntargets;
    if (fl_cluster_is_chief(c))
        all_targets[nall_targets++] = t->chief;
    int rc = fl_master_run(m, feeds, nfeeds, all_fetches, nall, got, all_targets, nall_targets);
    if (rc == 0)
        count_stale(c, got + nfetches, t->napplies);
    for (int i = 0; i < nall; i++)
        if (i < nfetches)
            outputs[i] = got[i];
        else
            fl_tensor_free(got[i]);
    free(got);
    free(all_targets);
    free(all_fetches);
    return rc;
}

// [book:end_training]
/* Whatever ended the chief's training (its last step, an error), a worker
 * still waiting for the token would wait for ever: close it. A chief that
 * was killed never gets here, so a restarted one goes on where it was. */
void fl_master_end_training(fl_master *m)
{
    const fl_cluster *c = fl_master_cluster(m);
    const fl_sync_train *trains = NULL;
    int n = fl_cluster_is_chief(c) ? fl_sync_trains_of(fl_master_graph(m), &trains) : 0;
    for (int i = 0; i < n; i++)
        if (fl_master_run(m, NULL, 0, NULL, 0, NULL, &trains[i].close, 1) != 0)
            fprintf(stderr, "%s: closing the sync token at the end of training: %s (a worker waiting for the "
                    "next step waits until FLOWLAB_TASK_DEADLINE)\n", fl_cluster_state_of(c)->task_name,
                    fl_last_error());
}
// [end:end_training]
