/* cluster_graph.h: chapter 3's --cluster_graph, a Graphviz picture of the
 * cluster: the tasks, what each ps holds, and the bytes this worker moved to
 * and from each ps per step, measured. Included by between_graph.c. */
#ifndef LABS_BETWEEN_GRAPH_CLUSTER_GRAPH_H
#define LABS_BETWEEN_GRAPH_CLUSTER_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "flowlab.h"
#include "flowlab_cluster.h"

#define MAX_PS 64

/* What this process has moved to and from each ps task so far. */
static void traffic_by_ps(const fl_cluster *cluster, uint64_t *sent, uint64_t *received)
{
    for (int k = 0; k < fl_cluster_num_tasks(cluster, "ps") && k < MAX_PS; k++) {
        char task[64];
        snprintf(task, sizeof task, "/job:ps/task:%d", k);
        fl_remote_task_traffic(cluster, task, &sent[k], &received[k]);
    }
}

/* The bytes moved per step during training: since *before (taken when
 * training started, after the initial values went out). */
static int write_cluster_graph(const char *path, const fl_cluster *cluster, const fl_replica_device_setter *setter,
                               long steps, const uint64_t *sent_before, const uint64_t *received_before)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int me = fl_cluster_task_index(cluster), workers = fl_cluster_num_tasks(cluster, "worker");
    fprintf(f, "digraph cluster {\n  rankdir=LR; ranksep=1.2; nodesep=0.5;\n"
               "  node [shape=box, style=\"rounded,filled\", fontname=Helvetica];\n"
               "  edge [fontname=Helvetica, fontsize=10];\n");
    for (int k = 0; k < workers; k++)
        fprintf(f, "  \"/job:worker/task:%d\" [label=\"worker %d%s\", fillcolor=\"%s\"];\n", k, k,
                k == me ? "\\n(measured here)" : "", k == me ? "#9ecae1" : "#deebf7");
    uint64_t sent_now[MAX_PS] = {0}, received_now[MAX_PS] = {0};
    traffic_by_ps(cluster, sent_now, received_now);
    for (int k = 0; k < fl_cluster_num_tasks(cluster, "ps") && k < MAX_PS; k++) {
        char task[64];
        int64_t bytes = 0;
        int variables = 0;
        uint64_t sent = sent_now[k] - sent_before[k], received = received_now[k] - received_before[k];
        snprintf(task, sizeof task, "/job:ps/task:%d", k);
        fl_replica_device_setter_ps_bytes(setter, k, &bytes, &variables);
        fprintf(f, "  \"%s\" [label=\"ps %d\\n%d variables, %.1f MB\\n(and their Adam slots)\", fillcolor=\"#fdd0a2\"];\n",
                task, k, variables, (double)bytes / 1e6);
        /* One edge each way in one: two labelled edges per pair collided with the others. */
        fprintf(f, "  \"/job:worker/task:%d\" -> \"%s\" [dir=both, label=\"sends %.1f MB/step\\nreceives %.1f MB/step\"];\n",
                me, task, (double)sent / (double)steps / 1e6, (double)received / (double)steps / 1e6);
        for (int other = 0; other < workers; other++)
            if (other != me)
                fprintf(f, "  \"/job:worker/task:%d\" -> \"%s\" [dir=both, style=dashed, color=gray];\n", other, task);
    }
    fprintf(f, "}\n");
    return fclose(f);
}

#endif
