/* cluster_mode.h: chapter 2's lab across tasks, as TensorFlow first did
 * in-graph replication across machines. One client process (this one, no
 * task of the cluster) builds the one graph: tower i on worker task i, the
 * variables, the averaging and the update on ps task 0. Its session is the
 * master (its cluster is a client's): each step is one request per task, and
 * a tower's gradients go from its worker to the ps, never through here. */
#ifndef LABS_02_CLUSTER_MODE_H
#define LABS_02_CLUSTER_MODE_H

#include <stdio.h>
#include <stdlib.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../common/devices.h"
#include "../common/flags.h"

#define CLUSTER_MODE_HELP                                                                       \
    "Cluster mode (in-graph replication across tasks; one client drives every task):\n"         \
    "  --ps_hosts H:P        the ps task; its /cpu:0 holds the variables, averages the\n"     \
    "                        towers' gradients and applies them\n"                             \
    "  --worker_hosts H:P,.. the worker tasks: tower i runs on worker i, one tower each\n"      \
    "                        (so --num_gpus is the number of workers), on its /gpu:0 when\n"  \
    "                        this client's machine has an accelerator, else on its /cpu:0\n"  \
    "                        (the tasks are taken to be alike; a client cannot list\n"          \
    "                        another task's devices). Start each task with\n"                 \
    "                        build/labs/tools/flowlab_server and TensorFlow's flags; they\n"  \
    "                        exit when this client has finished.\n"                          \
    FL_CLUSTER_SECURITY_HELP

/* The cluster of a client, its towers' devices and its controller; exits 2
 * naming the flag when the flags do not fit. Returns the number of towers. */
static inline int cluster_mode_devices(const char *program, const char *ps_hosts, const char *worker_hosts,
                                       int num_gpus, int batch_size, fl_cluster **cluster, char (*devices)[40],
                                       int max_towers, char *controller, size_t len)
{
    if (!ps_hosts || !*ps_hosts)
        bad_flag(program, "--ps_hosts", ps_hosts ? ps_hosts : "", "cluster mode needs a ps task for the variables");
    *cluster = fl_cluster_client_from_flags(ps_hosts, worker_hosts);
    if (!*cluster) {
        fprintf(stderr, "%s: %s (see --help)\n", program, fl_last_error());
        exit(2);
    }
    int workers = fl_cluster_num_tasks(*cluster, "worker");
    if (workers > max_towers || (num_gpus && num_gpus != workers)) {
        fprintf(stderr, "%s: --worker_hosts lists %d workers: cluster mode builds one tower per worker, at "
                "most %d%s (see --help)\n", program, workers, max_towers, num_gpus ? "; leave out --num_gpus" : "");
        exit(2);
    }
    if (batch_size % workers != 0) {
        fprintf(stderr, "%s: --batch_size %d does not split evenly into %d towers; use a multiple of %d "
                "(see --help)\n", program, batch_size, workers, workers);
        exit(2);
    }
    // [book:cluster_devices]
    fl_device_info accelerators[1];
    const char *kind = list_accelerators(accelerators, 1) > 0 ? "gpu" : "cpu";
    for (int i = 0; i < workers; i++)
        snprintf(devices[i], 40, "/job:worker/task:%d/%s:0", i, kind);
    snprintf(controller, len, "/job:ps/task:0/cpu:0");
    // [end:cluster_devices]
    return workers;
}

/* What a cluster-mode run cannot do yet: the client holds no variable, so
 * it has nothing to checkpoint. (--trace works: each task reports its ops.) */
static inline void cluster_mode_refuse(const training_flags *o)
{
    if (!o->checkpoint_dir)
        return;
    fprintf(stderr, "%s: --checkpoint_dir: not in cluster mode (the variables live on the ps task, the ops on "
            "the workers); run without --ps_hosts/--worker_hosts for it\n", o->program);
    exit(2);
}

/* Bytes through the client per training step, from fl_remote_traffic's
 * counts before (sent0, received0) and after the steps: the batch out, the
 * loss back, the frames around them (and, once, each worker's partition,
 * registered by its first step). The weights and gradients are not here:
 * they go task to task. */
static inline void cluster_mode_report_traffic(const fl_cluster *cluster, uint64_t sent0, uint64_t received0,
                                               long steps)
{
    uint64_t sent, received;
    fl_remote_traffic(cluster, &sent, &received);
    double per_step = steps > 0 ? 1.0 / (double)steps : 0.0;
    printf("Through the client per step: %.1f KB sent, %.1f KB received\n",
           (double)(sent - sent0) * per_step / 1e3, (double)(received - received0) * per_step / 1e3);
}

#endif
