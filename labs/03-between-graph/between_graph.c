/* between_graph.c: chapter 3's lab. Between-graph replication: one process
 * per task of a cluster. A ps task only serves the variables (and Adam's
 * slots) and needs no model; each worker builds its own copy of chapter 1's
 * graph, with the variables placed on the ps tasks by the replica device
 * setter and everything else on its own device, and trains asynchronously:
 * its session cuts its graph by task; each step receives the variables, computes
 * a gradient on its batch and sends it to the ps's piece, which applies it at once. The global step lives on a ps.
 *
 * Start one process per task, with the flags TensorFlow's distributed
 * examples use (or let labs/tools/launch_cluster do it):
 *   between_graph --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 \
 *                 --job_name=worker --task_index=0
 * or give the cluster in TF_CONFIG instead of the four flags, or let a
 * cluster's launcher start the tasks (chapter 6): under `srun -n 3` or
 * `mpirun -np 3` the first --num_ps ranks become the ps tasks and the rest
 * workers, on ports from --port_base, as TensorFlow's SlurmClusterResolver
 * does.
 *
 * Lines `// [book:NAME]` ... `// [end:NAME]` mark the regions the book quotes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../common/cluster_traffic.h"
#include "../common/data.h"
#include "../common/evaluate.h"
#include "../common/flags.h"
#include "../common/timing.h"
#include "../common/train_loop.h" /* --trace: trace_before_step, write_trace */
#include "cluster_graph.h"           /* --cluster_graph */
#include "worker_towers.h"           /* --num_gpus: the hybrid */

static const char program[] = "between_graph";

#include "cluster_flags.h" /* the cluster's flags, read after `program` is named */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --ps_hosts H:P,... --worker_hosts H:P,... --job_name ps|worker --task_index N [flags]\n"
            "   or: srun -n N %s [--num_ps M] [flags]   (or mpirun -np N, or TF_CONFIG set)\n"
            "Chapter 3: trains chapter 1's network by between-graph replication. Run one process per\n"
            "task (labs/tools/launch_cluster starts them all); the ps tasks hold the variables, the\n"
            "workers train asynchronously and print their progress with the global step.\n"
            "  --ps_hosts H:P,...    the ps tasks' addresses (may be empty: no ps)\n"
            "  --worker_hosts H:P,...  the worker tasks' addresses\n"
            "  --job_name ps|worker  this task's job; without the cluster flags, TF_CONFIG is read, else the\n"
            "                        launcher's variables: Slurm's srun (SLURM_PROCID, SLURM_STEP_NODELIST, ...),\n"
            "                        Open MPI's mpirun (OMPI_COMM_WORLD_RANK, ...) or MPICH's (PMI_RANK, ...)\n"
            "  --task_index N        this task's index in its job (default 0)\n"
            "  --num_ps N            with a launcher: its first N ranks are the ps tasks, the rest workers\n"
            "                        (default 1)\n"
            "  --port_base P         with a launcher: the tasks on one node listen on P, P+1, ... (default 8888,\n"
            "                        as TensorFlow's SlurmClusterResolver)\n"
            "  --device D            a worker's device for the model (default /gpu:0; falls back to /cpu:0)\n"
            "  --num_gpus K          the hybrid: each worker builds K towers on its /gpu:0 ... /gpu:K-1 (chapter 2),\n"
            "                        averages their gradients and sends them once; --batch_size splits K ways\n"
            "  --ps_strategy S       round_robin (default) or greedy: how variables are spread on the ps tasks;\n"
            "                        every worker must use the same one\n"
            "  --partitions K        dense_1's kernel (98%% of the bytes) as K variables of its rows, placed\n"
            "                        like any other (TensorFlow's fixed_size_partitioner), so that K ps tasks\n"
            "                        share its traffic; every worker must use the same K (default 1)\n"
            "  --cluster_graph F.dot the chief (worker 0) writes the tasks and the bytes it moved per step\n"
            "                        (the chief also writes --trace and --graph)\n"
            "  --sync_replicas B     true: synchronous updates (chapter 4): the ps averages the gradients of\n"
            "                        --replicas_to_aggregate workers per step and drops stale ones (default false);\n"
            "                        each worker then trains on its slice of one shared global batch\n"
            "  --replicas_to_aggregate N  gradients averaged per step (default: the number of workers)\n"
            "  --total_num_replicas N     workers taking part (default: the number of workers); more than\n"
            "                        --replicas_to_aggregate makes the rest backups\n"
            "  With --checkpoint_dir the chief restores the latest checkpoint (or initializes) and saves one\n"
            "  every --save_every global steps; the other workers wait for the model to be ready.\n"
            "  --batch_size N        examples per step on each worker (default 128)\n"
            FL_CLUSTER_SECURITY_HELP
            FL_SERVER_OPTIONS_HELP
            TRAINING_FLAGS_HELP
            "Tasks wait for each other (FLOWLAB_TASK_DEADLINE seconds, default 120) and say so every 5 s.\n",
            program, program);
}

// [book:ps]
/* A ps task: serve the variables until every worker has said goodbye. */
static int run_ps(const fl_cluster *cluster, const fl_server_options *limits)
{
    fl_server *server = fl_server_start(cluster, limits);
    if (!server) {
        fprintf(stderr, "%s: %s\n", program, fl_last_error());
        return 1;
    }
    int workers = fl_cluster_num_tasks(cluster, "worker") + fl_cluster_num_tasks(cluster, "chief");
    printf("ps %d: serving variables; waiting for %d worker%s to finish\n", fl_cluster_task_index(cluster),
           workers, workers == 1 ? "" : "s");
    fflush(stdout);
    fl_server_join(server, 0);
    fl_server_stats st;
    fl_server_get_stats(server, &st);
    printf("ps %d: held %d variables (%.1f MB); %llu requests; exiting\n",
           fl_cluster_task_index(cluster), st.variables, (double)st.variable_bytes / 1e6,
           (unsigned long long)st.frames);
    fl_server_stop(server);
    return 0;
}
// [end:ps]

/* The graph of one worker: chapter 1's model, its loss and Adam, with the
 * variables on the ps tasks. */
typedef struct {
    fl_graph *g;
    fl_optimizer *adam;
    fl_replica_device_setter *setter; /* kept: it knows what each ps holds */
    fl_node *image, *label, *loss, *train_op, *global_step, *accuracy;
} worker_graph;

static fl_node *accuracy_of(fl_graph *g, fl_node *logits, fl_node *label)
{
    fl_node *correct = fl_equal(g, fl_argmax(g, logits, 1, "prediction"), label, "correct");
    return fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false, "accuracy");
}

// [book:build]
static worker_graph build_worker_graph(const fl_cluster *cluster, const training_flags *o, const cluster_flags *c,
                                       fl_ps_strategy strategy)
{
    const char *device = c->device;
    worker_graph w = {.g = fl_graph_new()};
    fl_graph_set_random_seed(w.g, o->seed); /* every worker makes the same first values */
    w.setter = fl_replica_device_setter_new(cluster, device, strategy);
    fl_replica_device_setter_push(w.g, w.setter);
    w.image = fl_placeholder(w.g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    w.label = fl_placeholder(w.g, FL_INT32, fl_shape_make(1, -1), "label");
    worker_model model = c->num_gpus > 0 ? build_worker_towers(w.g, cluster, (int)c->num_gpus, w.image, w.label)
                                         : build_single_model(w.g, w.image, w.label);
    w.loss = model.loss;
    w.global_step = fl_get_or_create_global_step(w.g);
    w.adam = fl_adam_optimizer(o->learning_rate, 0.9f, 0.999f, 1e-8f);
    if (c->sync_replicas) { /* the same Adam, its updates counted and averaged on the ps */
        fl_optimizer *adam = w.adam;
        w.adam = fl_sync_replicas_optimizer(adam, (int)c->replicas_to_aggregate, (int)c->total_num_replicas);
        fl_optimizer_free(adam);
    }
    w.train_op = fl_apply_gradients(w.adam, w.g, model.grads, model.nvars, w.global_step, "train");
    w.accuracy = accuracy_of(w.g, model.logits, w.label);
    fl_device_pop(w.g);
    return w;
}
// [end:build]

/* "worker 1: step 40, global step 83, loss 0.52 (310 images/sec, 2.9 MB moved per step)" */
static void log_worker_progress(const fl_cluster *cluster, long local_steps, long global_step, float loss,
                                long images, double seconds, double bytes_per_step, bool sync)
{
    printf("worker %d: step %ld, global step %ld, loss %.6f (%.1f images/sec, %.1f MB moved per step",
           fl_cluster_task_index(cluster), local_steps, global_step, loss, (double)images / seconds,
           bytes_per_step / 1e6);
    summarize_rates(global_step, (double)images / seconds); /* the chief's, where --log_dir is kept */
    if (sync)
        printf(", %llu stale steps dropped (%llu variable updates)", (unsigned long long)fl_remote_stale_steps(cluster),
               (unsigned long long)fl_remote_stale_variable_updates(cluster));
    printf(")\n");
    fflush(stdout);
}

/* With --sync_replicas every worker reads the same global batch (same seed)
 * and trains on its slice, as chapter 2's towers do: worker k takes rows
 * [k*B, (k+1)*B). */
static fl_tensor slice_of(const fl_tensor *batch, int part, int parts)
{
    fl_tensor t = *batch;
    int rows = batch->shape.dims[0] / parts;
    size_t row_bytes = 4; /* float32 and int32 elements */
    for (int d = 1; d < batch->shape.rank; d++)
        row_bytes *= (size_t)batch->shape.dims[d];
    t.shape.dims[0] = rows;
    t.data = (char *)batch->data + (size_t)part * (size_t)rows * row_bytes;
    return t;
}

typedef struct {
    const fl_cluster *cluster;
    const training_flags *o;
    const worker_graph *w;
    int part, parts; /* this worker's slice of each batch (parts 1: the whole batch) */
    bool sync;
    char who[32]; /* "worker 1: global ", before "step N" in a message */
} worker_loop;

/* Each worker steps at its own pace (asynchronous) or in step with the
 * others (synchronous: its train op ends when the step is over) until the
 * global step, kept on a ps, reaches the stop-at-step hook's last step. */
static int train_steps(fl_monitored_session *ms, const worker_loop *L, fl_dataset *batches, long *steps_done)
{
    const fl_tensor *images, *labels;
    long local_steps = 0, images_seen = 0, last_logged = 0;
    double last_time = now_seconds(), last_bytes = bytes_moved(L->cluster);
    while (!fl_monitored_session_should_stop(ms) && fl_dataset_next(batches, &images, &labels) == 1) {
        trace_before_step(fl_monitored_session_session(ms), L->o, local_steps);
        fl_tensor my_images = slice_of(images, L->part, L->parts), my_labels = slice_of(labels, L->part, L->parts);
        fl_feed feeds[2] = {{L->w->image, &my_images}, {L->w->label, &my_labels}};
        fl_tensor *loss = NULL;
        if (fl_monitored_session_run(ms, feeds, 2, &L->w->loss, 1, &loss, &L->w->train_op, 1) != 0) {
            if (fl_monitored_session_should_stop(ms))
                break; /* the chief ended training while this step waited: the session said so */
            fprintf(stderr, "%s: worker %d: step %ld: %s\n", program, fl_cluster_task_index(L->cluster), local_steps,
                    fl_monitored_session_error(ms));
            return 1;
        }
        *steps_done = ++local_steps;
        float value = fl_tensor_scalar(loss);
        fl_tensor_free(loss);
        if (loss_not_finite(program, L->who, fl_monitored_session_global_step(ms), value))
            return 1;
        summarize_step(fl_monitored_session_session(ms), fl_monitored_session_global_step(ms), value);
        if (L->o->trace_path && local_steps == 4)
            write_trace(fl_monitored_session_session(ms), L->o);
        images_seen += my_images.shape.dims[0];
        if (local_steps % L->o->log_every == 0 || local_steps == 1) {
            double now = now_seconds(), bytes = bytes_moved(L->cluster);
            log_worker_progress(L->cluster, local_steps, fl_monitored_session_global_step(ms),
                                value, images_seen, now - last_time,
                                (bytes - last_bytes) / (double)(local_steps - last_logged), L->sync);
            last_logged = local_steps;
            last_time = now;
            last_bytes = bytes;
            images_seen = 0;
        }
    }
    if (L->o->trace_path && local_steps > 1 && local_steps < 4) /* too short for steps 2 to 4: what there was */
        write_trace(fl_monitored_session_session(ms), L->o);
    return 0;
}

/* The dataset: each worker its own order (seed + task), or with
 * --sync_replicas one shared order of global batches to slice. */
static fl_dataset *worker_batches(const training_flags *o, const lab_data *data, int task, int parts)
{
    fl_dataset_options order = {.batch_size = o->batch_size * parts, .epochs = 0, .shuffle = true,
                                .seed = parts > 1 ? o->seed : o->seed + (unsigned long)task, .prefetch = 2,
                                .drop_remainder = parts > 1};
    return fl_dataset_new(data->train_images, data->train_labels, &order);
}

/* Where no monitored session was opened to say it at close: a ps waits
 * for every worker's goodbye. */
static void say_goodbye(const fl_cluster *cluster)
{
    if (fl_cluster_say_goodbye(cluster) != 0)
        fprintf(stderr, "%s: saying goodbye: %s\n", program, fl_last_error());
}

// [book:monitored]
/* The chief initializes or restores the model and saves checkpoints; the
 * others wait for it; all stop when the global step reaches total_steps. */
static fl_monitored_session *open_session(const fl_cluster *cluster, const training_flags *o, const worker_graph *w,
                                          fl_session_hook *stop)
{
    fl_session_options config = {.allow_soft_placement = true, .cluster = cluster,
                                 .log_device_placement = o->log_device_placement};
    fl_monitored_session_options m = {.checkpoint_dir = o->checkpoint_dir, .save_checkpoint_steps = o->save_every,
                                      .max_checkpoints_to_keep = FL_DEFAULT_MAX_TO_KEEP, /* 0 would keep all */
                                      .log_step_count_steps = -1, .hooks = &stop, .nhooks = 1, .config = &config};
    return fl_monitored_training_session(w->g, w->global_step, &m);
}
// [end:monitored]

/* Trains, then reports this worker's test accuracy with the final variables. */
static int train_worker(const fl_cluster *cluster, const training_flags *o, const cluster_flags *c,
                        const worker_graph *w, const lab_data *data)
{
    int task = fl_cluster_task_index(cluster);
    int train_count = data->train_images->shape.dims[0];
    long total_steps = o->train_steps > 0 ? o->train_steps
                                          : o->epochs * ((train_count + o->batch_size - 1) / o->batch_size);
    fl_session_hook *stop = fl_stop_at_step_hook(total_steps);
    fl_monitored_session *ms = open_session(cluster, o, w, stop);
    if (!ms) {
        fprintf(stderr, "%s: worker %d: %s\n", program, task, fl_last_error());
        fl_session_hook_free(stop);
        say_goodbye(cluster);
        return 1;
    }
    worker_loop L = {cluster, o, w, c->sync_replicas ? task : 0,
                     c->sync_replicas ? fl_cluster_num_tasks(cluster, "worker") : 1, c->sync_replicas, ""};
    snprintf(L.who, sizeof L.who, "worker %d: global ", task);
    printf("worker %d: training until the global step reaches %ld (batch %d%s)\n", task, total_steps, o->batch_size,
           c->sync_replicas ? ", synchronous" : "");
    fl_dataset *batches = worker_batches(o, data, task, L.parts);
    long steps = 0;
    uint64_t sent[MAX_PS] = {0}, received[MAX_PS] = {0};
    traffic_by_ps(cluster, sent, received);
    run_stats_count_traffic(bytes_moved, cluster); /* --print_stats */
    int rc = batches ? train_steps(ms, &L, batches, &steps) : 1;
    if (rc == 0 && o->print_stats) /* measured from the second step on */
        print_run_stats(steps - 1, (steps - 1) * o->batch_size);
    if (!batches)
        fprintf(stderr, "%s: worker %d: %s\n", program, task, fl_last_error());
    if (rc == 0 && c->cluster_graph && fl_cluster_is_chief(cluster) && steps > 0 &&
        write_cluster_graph(c->cluster_graph, cluster, w->setter, steps, sent, received) != 0)
        fprintf(stderr, "%s: --cluster_graph %s: cannot write it\n", program, c->cluster_graph);
    fl_dataset_free(batches);
    fl_session *s = fl_monitored_session_session(ms);
    double accuracy = 0;
    if (rc == 0 && evaluate(s, w->image, w->label, w->accuracy, data->test_images, data->test_labels,
                            o->batch_size, &accuracy) != 0) {
        fprintf(stderr, "%s: worker %d: evaluating: %s\n", program, task, fl_session_error(s));
        rc = 1;
    }
    if (rc == 0)
        printf("worker %d: test accuracy %.4f\n", task, accuracy);
    summarize_accuracy(accuracy);
    /* --graph: the session's picture, nodes coloured by the task that holds
     * or runs them; one worker (the chief) draws it. */
    if (rc == 0 && o->graph_path && fl_session_write_dot_with(s, o->graph_path, &o->graph) != 0)
        fprintf(stderr, "%s: --graph: %s\n", program, fl_last_error());
    if (fl_monitored_session_close(ms) != 0 && rc == 0) {
        fprintf(stderr, "%s: worker %d: %s\n", program, task, fl_last_error());
        rc = 1;
    }
    fl_session_hook_free(stop);
    return rc;
}

static int run_worker(const fl_cluster *cluster, const training_flags *o, const cluster_flags *c,
                      const lab_data *data)
{
    fl_server *server = fl_server_start(cluster, &c->server); /* every task runs one */
    if (!server) {
        fprintf(stderr, "%s: %s\n", program, fl_last_error());
        return 1;
    }
    fl_ps_strategy strategy = strcmp(c->ps_strategy, "greedy") == 0 ? FL_PS_GREEDY_BY_BYTES : FL_PS_ROUND_ROBIN;
    training_flags mine = *o;
    if (!fl_cluster_is_chief(cluster)) /* one file per run: the chief writes --trace, --graph, --log_dir */
        mine.trace_path = mine.graph_path = mine.log_dir = NULL;
    o = &mine;
    run_stats_build_started(); /* --print_stats */
    worker_graph w = build_worker_graph(cluster, o, c, strategy);
    run_stats_build_done(w.g);
    int rc = 1;
    if (fl_graph_error(w.g)) {
        fprintf(stderr, "%s: building the graph: %s\n", program, fl_graph_error(w.g));
        say_goodbye(cluster);
    } else {
        open_summaries(program, o->log_dir, o->histogram_every, w.g); /* the chief's --log_dir */
        rc = train_worker(cluster, o, c, &w, data); /* closing its monitored session says goodbye */
    }
    fl_server_stop(server);
    fl_optimizer_free(w.adam);
    fl_replica_device_setter_free(w.setter);
    fl_graph_free(w.g);
    return rc;
}

/* The defaults are the number of workers; aggregating more than take part waits forever. */
static void check_replicas(const fl_cluster *cluster, cluster_flags *c)
{
    int workers = fl_cluster_num_tasks(cluster, "worker");
    if (c->total_num_replicas == 0)
        c->total_num_replicas = workers;
    if (c->replicas_to_aggregate == 0)
        c->replicas_to_aggregate = c->total_num_replicas;
    if (c->sync_replicas && c->replicas_to_aggregate > c->total_num_replicas) {
        fprintf(stderr, "%s: --replicas_to_aggregate %ld is more than --total_num_replicas %ld: a step would "
                "wait for gradients nobody sends\n", program, c->replicas_to_aggregate, c->total_num_replicas);
        exit(2);
    }
}

/* --num_gpus K: the worker's batch must split K ways, and a worker needs K
 * accelerators. Every task checks the batch, so a bad one stops the ps too. */
static void check_towers(const fl_cluster *cluster, const training_flags *o, const cluster_flags *c)
{
    if (c->num_gpus > 0 && o->batch_size % c->num_gpus != 0) {
        fprintf(stderr, "%s: --batch_size %d does not split evenly into --num_gpus %ld towers; use a multiple "
                "of %ld\n", program, o->batch_size, c->num_gpus, c->num_gpus);
        exit(2);
    }
    bool worker = strcmp(fl_cluster_job_name(cluster), "ps") != 0;
    if (worker && c->num_gpus > 0 && check_tower_devices(program, fl_cluster_task_index(cluster), (int)c->num_gpus))
        exit(2);
}

int main(int argc, char **argv)
{
    training_flags o = training_flags_defaults(program);
    cluster_flags c = {.device = "/gpu:0", .ps_strategy = "round_robin", .num_ps = 1, .port_base = 8888};
    static const char *const names[] = {"--ps_hosts", "--worker_hosts", "--job_name", "--task_index", "--device",
                                        "--ps_strategy", "--cluster_graph", "--sync_replicas",
                                        "--replicas_to_aggregate", "--total_num_replicas", "--num_ps",
                                        "--port_base", "--num_gpus", "--partitions", FL_CLUSTER_SECURITY_FLAG_NAMES, FL_SERVER_OPTION_NAMES};
    lab_flags extra = {names, sizeof names / sizeof *names, set_cluster_flag, &c, set_cluster_switch};
    parse_flags(argc, argv, &o, &extra, usage);
    fl_cluster *cluster = read_cluster(&c);
    check_replicas(cluster, &c);
    check_towers(cluster, &o, &c);
    int rc;
    if (strcmp(fl_cluster_job_name(cluster), "ps") == 0) {
        rc = run_ps(cluster, &c.server);
    } else {
        lab_data data;
        if (load_data(o.data_dir, o.max_examples, &data) != 0) {
            fprintf(stderr, "%s: %s\n", program, fl_last_error());
            fl_cluster_free(cluster);
            return 1;
        }
        rc = run_worker(cluster, &o, &c, &data);
        free_data(&data);
    }
    fl_cluster_free(cluster);
    return rc;
}
