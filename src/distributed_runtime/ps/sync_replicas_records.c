/* sync_replicas_records.c: what the cluster runtime keeps with a graph
 * about chapter 4's SyncReplicasOptimizer (the graph's runtime records):
 * each train op of the accumulator graph, with its chief's part and its applies,
 * for a between-graph worker's master (master_sync.c). */
#include <stdlib.h>

#include "sync_replicas_optimizer.h"

typedef struct {
    fl_sync_train *trains;
    int ntrains;
} sync_records;

static void free_records(void *records)
{
    sync_records *r = records;
    if (!r)
        return;
    for (int i = 0; i < r->ntrains; i++)
        free(r->trains[i].applies);
    free(r->trains);
    free(r);
}

static sync_records *records_of(fl_graph *g)
{
    sync_records *r = fl_graph_runtime_records(g);
    if (!r) {
        r = fl_xcalloc(1, sizeof *r);
        fl_graph_set_runtime_records(g, r, free_records);
    }
    return r;
}

void fl_sync_train_record(fl_graph *g, const fl_sync_train *t)
{
    sync_records *r = records_of(g);
    r->trains = fl_xrealloc(r->trains, (size_t)(r->ntrains + 1) * sizeof *r->trains);
    r->trains[r->ntrains++] = *t;
}

const fl_sync_train *fl_sync_train_of(const fl_node *n)
{
    const sync_records *r = n ? fl_graph_runtime_records(n->graph) : NULL;
    for (int i = 0; r && i < r->ntrains; i++)
        if (r->trains[i].train == n)
            return &r->trains[i];
    return NULL;
}

int fl_sync_trains_of(const fl_graph *g, const fl_sync_train **first)
{
    const sync_records *r = fl_graph_runtime_records(g);
    *first = r ? r->trains : NULL;
    return r ? r->ntrains : 0;
}
