/* in_graph_towers.c: chapter 2's lab. Chapter 1's network, trained on several
 * devices at once by in-graph replication.
 *
 * One graph holds one copy of the model per device (a *tower*, in name scope
 * tower_i). Every tower reads its slice of the global batch, computes its
 * loss and its gradients on its own device, and reads the one shared set of
 * variables, which lives on the controller device. The controller averages
 * the towers' gradients and applies them once with Adam, so every step is one
 * synchronous update computed from the whole batch.
 *
 * The model, the data, the training loop and the evaluation are chapter 1's,
 * shared through labs/common/; what is new is in this file: the device
 * function that places a tower's nodes (assign_to_device), the loop that
 * builds the towers (create_parallel_optimization) and the averaging of
 * their gradients (average_gradients). With --ps_hosts and --worker_hosts
 * the same graph spans a cluster's tasks (cluster_mode.h).
 *
 * Lines `// [book:NAME]` ... `// [end:NAME]` mark the regions the book quotes;
 * `make book-check` fails when a quoted region and the book disagree. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../common/cluster_traffic.h"
#include "../common/data.h"
#include "../common/devices.h"
#include "../common/evaluate.h"
#include "../common/flags.h"
#include "../common/model.h"
#include "../common/towers.h"
#include "../common/train_loop.h"
#include "cluster_mode.h"

/* This lab's name, which starts its messages. */
static const char program[] = "in_graph_towers";

typedef struct {
    int num_gpus;           /* 0: every accelerator there is */
    const char *controller; /* where the variables live and the update runs */
    const char *ps_hosts, *worker_hosts; /* cluster mode: set */
    fl_cluster_security_flags security;  /* cluster mode: --cluster_secret_file, --tls_* */
} tower_flags;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [flags]\n"
            "Trains chapter 1's convolutional network with one tower per device (in-graph\n"
            "replication), averaging the towers' gradients on a controller device, then\n"
            "prints its accuracy on the test set.\n"
            "  --num_gpus N          towers, one per accelerator /gpu:0 ... /gpu:N-1\n"
            "                        (default: every accelerator; 1 tower on /cpu:0 if none)\n"
            "  --controller D        where the variables live and the gradients are averaged\n"
            "                        and applied: /cpu:0 (default) or an accelerator (/gpu:0)\n"
            "  --batch_size N        examples per step across all towers, the global batch;\n"
            "                        each tower gets N / num_gpus (default 128)\n"
            CLUSTER_MODE_HELP TRAINING_FLAGS_HELP, program);
}

static void set_tower_flag(const char *flag, const char *value, void *options)
{
    tower_flags *t = options;
    if (strcmp(flag, "--num_gpus") == 0) {
        t->num_gpus = (int)parse_count(program, flag, value, 1);
        if (t->num_gpus > MAX_TOWERS) {
            char want[64];
            snprintf(want, sizeof want, "this lab builds at most %d towers", MAX_TOWERS);
            bad_flag(program, flag, value, want);
        }
    } else if (strcmp(flag, "--controller") == 0) {
        char canonical[64];
        canonical_device(program, flag, value, canonical, sizeof canonical); /* exits 2 if invalid */
        t->controller = value;
    } else if (strcmp(flag, "--ps_hosts") == 0) {
        t->ps_hosts = value;
    } else if (strcmp(flag, "--worker_hosts") == 0) {
        t->worker_hosts = value;
    } else {
        fl_cluster_security_flag(&t->security, flag, value);
    }
}

/* --insecure_listen, accepted as every cluster program accepts it (this
 * client starts no server of its own). */
static bool set_tower_switch(const char *arg, void *options)
{
    return fl_cluster_security_switch(&((tower_flags *)options)->security, arg);
}

/* "/cpu:0 and /gpu:0": the names of the devices that exist, for messages. */
static void device_names(char *out, size_t len)
{
    fl_device_info devices[16];
    int count = fl_list_devices(devices, 16);
    out[0] = '\0';
    for (int i = 0; i < count; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s",
                 i == 0 ? "" : i + 1 == count ? " and " : ", ", devices[i].name);
}

/* Checks the tower flags against the devices that exist and fills in the
 * towers' devices; exits 2 with a message naming the flag when they do not fit. */
static int choose_devices(tower_flags *t, int batch_size, char (*devices)[40])
{
    char exist[256];
    device_names(exist, sizeof exist);
    fl_device_info accelerators[16];
    int available = list_accelerators(accelerators, 16);
    if (available == 0 && t->num_gpus == 0) {
        /* list_accelerators left the reason in fl_last_error */
        printf("no accelerator here; building 1 tower on /cpu:0 (%s; see flowlab-devices)\n",
               fl_last_error());
        t->num_gpus = 1;
        snprintf(devices[0], sizeof devices[0], "/cpu:0");
    } else {
        if (t->num_gpus > available) {
            fprintf(stderr, "%s: --num_gpus %d: this machine has %d accelerator%s; the "
                    "devices that exist are %s\n", program, t->num_gpus, available,
                    available == 1 ? "" : "s", exist);
            exit(2);
        }
        if (t->num_gpus == 0)
            t->num_gpus = available < MAX_TOWERS ? available : MAX_TOWERS;
        for (int i = 0; i < t->num_gpus; i++)
            snprintf(devices[i], sizeof devices[i], "%s", accelerators[i].name);
    }
    char controller[64];
    canonical_device(program, "--controller", t->controller, controller, sizeof controller);
    fl_device_info all[16];
    int count = fl_list_devices(all, 16);
    bool found = false;
    for (int i = 0; i < count; i++)
        found = found || strcmp(all[i].name, controller) == 0;
    if (!found) {
        bool cluster = strchr(controller + 1, '/') != NULL; /* "/job:ps/task:0/cpu:0" */
        fprintf(stderr, "%s: --controller %s: %s; the devices that exist are %s\n", program,
                t->controller, cluster ? "a device of a cluster task, which chapter 3 builds"
                                       : "there is no such device here", exist);
        exit(2);
    }
    if (batch_size % t->num_gpus != 0) {
        fprintf(stderr, "%s: --batch_size %d does not split evenly into %d towers; use "
                "a multiple of %d (see --help)\n", program, batch_size, t->num_gpus, t->num_gpus);
        exit(2);
    }
    return t->num_gpus;
}

// [book:assign_to_device]
/* Where one tower's nodes go: its variables on the controller, everything
 * else on the tower's own device. */
typedef struct {
    const char *device;     /* the tower's device: "/gpu:1" */
    const char *controller; /* "/cpu:0" or "/gpu:0" */
} tower_placement;

/* A device function (fl_device_function_push): the graph calls it for every
 * node about to be added, with the node's op type already set. */
static const char *assign_to_device(const fl_node *node, void *user)
{
    const tower_placement *placement = user;
    if (strcmp(fl_node_op_type(node), "VariableV2") == 0)
        return placement->controller;
    return placement->device;
}
// [end:assign_to_device]

/* What create_parallel_optimization builds. */
typedef struct {
    fl_node *image, *label;     /* the global batch, fed on /cpu:0 */
    fl_node *loss;              /* the mean of the towers' losses: the batch's loss */
    fl_node *train_op, *global_step;
    fl_node *accuracy;          /* of one unsplit batch, by an extra copy of the model */
} parallel_model;

static parallel_model create_parallel_optimization(fl_graph *g, fl_optimizer *optimizer,
                                                   char (*devices)[40], int ntowers,
                                                   const char *controller)
{
    parallel_model m = {0};
    // [book:towers]
    /* The batch arrives in host memory: feed it and cut it there, one slice
     * per tower along the batch axis. */
    fl_device_scope_push(g, "/cpu:0");
    m.image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    m.label = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "label");
    fl_node *images[MAX_TOWERS], *labels[MAX_TOWERS];
    fl_split(g, m.image, ntowers, 0, images, "split_image");
    fl_split(g, m.label, ntowers, 0, labels, "split_label");
    fl_device_pop(g);

    fl_grad_var tower_grads[MAX_TOWERS][MAX_VARS];
    fl_node *losses[MAX_TOWERS];
    int nvars = 0;
    for (int t = 0; t < ntowers; t++) {
        tower_placement placement = {devices[t], controller};
        nvars = build_tower(g, t, images[t], labels[t], assign_to_device, &placement, tower_grads[t], &losses[t]);
    }
    // [end:towers]

    // [book:apply]
    fl_device_scope_push(g, controller);
    fl_name_scope_push(g, "average_gradients");
    fl_grad_var averaged[MAX_VARS];
    average_gradients(g, tower_grads, ntowers, nvars, averaged);
    fl_name_scope_pop(g);
    m.global_step = fl_get_or_create_global_step(g);
    m.train_op = fl_apply_gradients(optimizer, g, averaged, nvars, m.global_step, "train");
    m.loss = fl_div(g, fl_add_n(g, losses, ntowers, NULL), fl_scalar(g, (float)ntowers, NULL),
                    "loss");
    fl_device_pop(g);
    // [end:apply]

    /* Evaluation reads whole test batches, whose last one need not split
     * evenly, so it uses one more copy of the model on the first tower's
     * device, fed straight from the unsplit placeholders. */
    tower_placement placement = {devices[0], controller};
    fl_name_scope_push(g, "eval");
    fl_device_function_push(g, assign_to_device, &placement);
    fl_variable_scope_push(g, "model", FL_REUSE);
    fl_node *logits = core_model(g, m.image);
    fl_variable_scope_pop(g);
    fl_node *correct = fl_equal(g, fl_argmax(g, logits, 1, "prediction"), m.label, "correct");
    m.accuracy = fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false,
                                "accuracy");
    fl_device_pop(g);
    fl_name_scope_pop(g);
    return m;
}

/* The towers' devices: on this process's devices, or in cluster mode on the
 * worker tasks, with the controller on the ps (*cluster set). Exits 2 naming
 * the flag when they do not fit. */
static int place_towers(tower_flags *t, training_flags *o, fl_cluster **cluster, char (*devices)[40],
                        char *controller, size_t len)
{
    if (t->ps_hosts && !t->worker_hosts)
        bad_flag(program, "--ps_hosts", t->ps_hosts, "cluster mode needs --worker_hosts too");
    if (!t->worker_hosts)
        return choose_devices(t, o->batch_size, devices);
    cluster_mode_refuse(o);
    int ntowers = cluster_mode_devices(program, t->ps_hosts, t->worker_hosts, t->num_gpus, o->batch_size, cluster,
                                       devices, MAX_TOWERS, controller, len);
    if (fl_cluster_apply_security(*cluster, &t->security) != 0) {
        fprintf(stderr, "%s: %s (see --help)\n", program, fl_last_error());
        exit(2);
    }
    t->controller = controller;
    return ntowers;
}

int main(int argc, char **argv)
{
    training_flags o = training_flags_defaults(program);
    tower_flags towers = {.num_gpus = 0, .controller = "/cpu:0"};
    static const char *const lab_flag_names[] = {"--num_gpus", "--controller", "--ps_hosts", "--worker_hosts",
                                                 FL_CLUSTER_SECURITY_FLAG_NAMES};
    lab_flags extra = {lab_flag_names, 8, set_tower_flag, &towers, set_tower_switch};
    parse_flags(argc, argv, &o, &extra, usage);
    char devices[MAX_TOWERS][40], controller[40];
    fl_cluster *cluster = NULL;
    int ntowers = place_towers(&towers, &o, &cluster, devices, controller, sizeof controller);

    lab_data data;
    if (load_data(o.data_dir, o.max_examples, &data) != 0) {
        fprintf(stderr, "%s: %s\n", program, fl_last_error());
        return 1;
    }
    /* Every batch must split evenly, so a short last batch of an epoch is dropped. */
    int train_count = data.train_images->shape.dims[0];
    long steps_per_epoch = train_count / o.batch_size;
    long total_steps = o.train_steps > 0 ? o.train_steps : o.epochs * steps_per_epoch;
    printf("%d training and %d test examples, batch %d (%d per tower): %ld steps\n", train_count,
           data.test_images->shape.dims[0], o.batch_size, o.batch_size / ntowers, total_steps);

    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, o.seed);
    fl_optimizer *adam = fl_adam_optimizer(o.learning_rate, 0.9f, 0.999f, 1e-8f);
    run_stats_build_started(); /* --print_stats */
    parallel_model m = create_parallel_optimization(g, adam, devices, ntowers, towers.controller);
    fl_node *init = fl_global_variables_initializer(g);
    run_stats_build_done(g);
    if (cluster) /* --print_stats: the bytes through this client */
        run_stats_count_traffic(bytes_moved, cluster);
    if (fl_graph_error(g)) {
        fprintf(stderr, "%s: building the graph: %s\n", program, fl_graph_error(g));
        return 1;
    }

    // [book:session]
    fl_session_options config = {.allow_soft_placement = false,
                                 .log_device_placement = o.log_device_placement,
                                 .cluster = cluster}; /* NULL: one process */
    fl_session *s = fl_session_new(g, &config);
    printf("%d tower%s on", ntowers, ntowers == 1 ? "" : "s");
    for (int t = 0; t < ntowers; t++)
        printf(" %s", devices[t]);
    printf("; variables and updates on %s\n", towers.controller);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0) {
        fprintf(stderr, "%s: initializing: %s\n", program, fl_session_error(s));
        return 1;
    }
    // [end:session]

    open_summaries(program, o.log_dir, o.histogram_every, g); /* --log_dir: TensorBoard's event file */
    train_nodes nodes = {m.image, m.label, m.loss, m.train_op, m.global_step, NULL};
    uint64_t sent0 = 0, received0 = 0;
    if (cluster)
        fl_remote_traffic(cluster, &sent0, &received0);
    int rc = train(s, &o, &nodes, &data, total_steps, true);
    if (cluster && rc == 0)
        cluster_mode_report_traffic(cluster, sent0, received0, total_steps);
    if (rc == 0)
        rc = report_test_accuracy(s, &o, m.image, m.label, m.accuracy, &data);
    /* Freed on the failing paths too: a failed restore or save is an
     * expected outcome, and the sanitized build reports what is not freed. */
    fl_session_free(s); /* in cluster mode, says goodbye to every task */
    fl_cluster_free(cluster);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    free_data(&data);
    return rc;
}
