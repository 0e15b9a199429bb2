/* master_sync.c: a between-graph worker's run of a synchronous train op
 * (sync_replicas_graph.c). The chief's run takes the chief's part too,
 * inline (TensorFlow's chief runs it in a queue-runner thread). Before its
 * first such run, and after a failed one (a restarted ps restored), the
 * chief sets every accumulator's step and the token to the global step
 * (TensorFlow's chief_init_op). A worker's local step is the token its
 * last wait returned, fed (TensorFlow assigns it from the dequeued token):
 * read during the step it could follow the variables' reads. Each run
 * counts its applies' "dropped as stale" into the cluster's stale tally
 * (fl_remote_stale_steps). The chief's session end closes the token. */
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

// [book:chief_init]
/* The chief, once the model is prepared (initialized, restored, or found
 * on the ps): an accumulator a restarted ps made anew is at step 0, and
 * would take gradients of any step before the restored one. */
static int begin_training(fl_master *m, const fl_sync_train *t, fl_master_sync_state *s)
{
    if (s->chief_ready || !fl_cluster_is_chief(fl_master_cluster(m)))
        return 0;
    if (fl_master_run(m, NULL, 0, NULL, 0, NULL, &t->chief_init, 1) != 0) {
        fl_prefix_error("setting the accumulators' step to the global step: ");
        return -1;
    }
    s->chief_ready = true;
    return 0;
}
// [end:chief_init]

/* The run's feeds: the caller's, and the local step when a wait gave it. */
static int sync_feeds(const fl_feed *feeds, int nfeeds, const fl_sync_train *t, const fl_master_sync_state *s,
                      fl_feed *all, fl_tensor **token)
{
    if (nfeeds > 0)
        memcpy(all, feeds, (size_t)nfeeds * sizeof *feeds);
    if (!s->has_token)
        return nfeeds;
    *token = fl_tensor_from_ints(fl_shape_make(0), &s->token);
    all[nfeeds] = (fl_feed){t->local_step, *token};
    return nfeeds + 1;
}

/* After the run: the stale flags counted and the next local step kept,
 * or, when it failed, both the token and the chief's start forgotten. */
static void after_run(fl_master *m, fl_master_sync_state *s, int rc, fl_tensor *const *got, int napplies)
{
    s->has_token = rc == 0;
    if (rc != 0) {
        s->chief_ready = false;
        return;
    }
    count_stale(fl_master_cluster(m), got, napplies);
    s->token = *(const int32_t *)got[1 + napplies]->data;
}

int fl_master_run_training(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                           fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    const fl_sync_train *t = train_among(targets, ntargets);
    if (!t)
        return fl_master_run(m, feeds, nfeeds, fetches, nfetches, outputs, targets, ntargets);
    fl_master_sync_state *s = fl_master_sync(m);
    if (s->train != t)
        *s = (fl_master_sync_state){.train = t};
    if (begin_training(m, t, s) != 0) {
        for (int i = 0; i < nfetches; i++)
            outputs[i] = NULL; /* as fl_master_run's on failure */
        return -1;
    }
    int nmore = 2 + t->napplies, nall = nfetches + nmore;
    fl_node **all_fetches = fl_xmalloc((size_t)nall * sizeof *all_fetches);
    fl_node **all_targets = fl_xmalloc((size_t)(ntargets + 1) * sizeof *all_targets);
    fl_tensor **got = fl_xcalloc((size_t)nall, sizeof *got), *token = NULL;
    fl_feed *all_feeds = fl_xmalloc((size_t)(nfeeds + 1) * sizeof *all_feeds);
    memcpy(all_fetches, fetches, (size_t)nfetches * sizeof *fetches);
    all_fetches[nfetches] = t->local_step;
    memcpy(all_fetches + nfetches + 1, t->applies, (size_t)t->napplies * sizeof *t->applies);
    all_fetches[nall - 1] = t->wait;
    memcpy(all_targets, targets, (size_t)ntargets * sizeof *targets);
    int nall_targets = ntargets;
    if (fl_cluster_is_chief(fl_master_cluster(m)))
        all_targets[nall_targets++] = t->chief;
    int nall_feeds = sync_feeds(feeds, nfeeds, t, s, all_feeds, &token);
    int rc = fl_master_run(m, all_feeds, nall_feeds, all_fetches, nall, got, all_targets, nall_targets);
    after_run(m, s, rc, got + nfetches, t->napplies);
    for (int i = 0; i < nall; i++)
        if (i < nfetches)
            outputs[i] = got[i];
        else
            fl_tensor_free(got[i]);
    fl_tensor_free(token);
    free(all_feeds);
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
