/* model_parallel.c: chapter 7's lab. Chapter 1's network, one copy of it
 * split across devices (model parallelism), where chapters 2 to 6 put a
 * whole copy on every device (data parallelism).
 *
 *   --split layers       the convolutions on /gpu:0, the dense layers on
 *                        /gpu:1 (a vertical split, by layers); with
 *                        --micro_batches M, GPipe's pipeline over the two
 *                        stages (pipeline.h); with --replicas 2, two such
 *                        pipelines on four devices, data parallel
 *   --split columns|rows dense_1's matrix multiply cut across /gpu:0 and
 *                        /gpu:1 (a horizontal split; tensor_split.h)
 *   --split none         the whole model on /gpu:0: the reference
 *
 * The model, the data, the training loop and the evaluation are chapter 1's
 * (labs/common/). Lines `// [book:NAME]` ... `// [end:NAME]` mark the
 * regions the book quotes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "flowlab_cluster.h"
#include "../common/data.h"
#include "../common/devices.h"
#include "../common/evaluate.h"
#include "../common/flags.h"
#include "../common/model.h"
#include "../common/train_loop.h"
#include "../common/cluster_traffic.h"
#include "pipeline.h"
#include "tensor_split.h"

static const char program[] = "model_parallel";

typedef enum { MODE_NONE, MODE_LAYERS, MODE_COLUMNS, MODE_ROWS, MODE_PAIR } split_mode;
static const char *const mode_names[] = {"none", "layers", "columns", "rows", "pair"};

typedef struct {
    split_mode mode;
    int micro_batches, replicas;
    const char *stage_hosts;            /* --stage_hosts: each device a task of its own */
    fl_cluster_security_flags security; /* their --cluster_secret_file, --tls_* */
    fl_cluster *cluster;                /* made from stage_hosts; NULL: this process's devices */
} split_flags;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [flags]\n"
            "Trains chapter 1's convolutional network split across devices (model\n"
            "parallelism), then prints its accuracy on the test set.\n"
            "  --split S             layers (default): the convolutions on /gpu:0, the dense\n"
            "                        layers on /gpu:1; columns or rows: dense_1's matrix\n"
            "                        multiply cut across /gpu:0 and /gpu:1; pair: dense_1 by\n"
            "                        columns and dense_2 by rows (Megatron-LM), one sum of the\n"
            "                        partial logits; none: all on /gpu:0\n"
            "  --micro_batches M     with layers: cut each batch into M micro-batches that\n"
            "                        flow through the two stages (GPipe; default 1)\n"
            "  --replicas R          with layers: R pipelines (1 or 2) on 2R devices, each\n"
            "                        with 1/R of the batch, gradients averaged (default 1)\n"
            "  --batch_size N        examples per step in all (default 128); it must split\n"
            "                        into R x M equal pieces\n"
            "  --stage_hosts H:P,... each device a task of its own, started with\n"
            "                        build/labs/tools/flowlab_server (as worker tasks, in order:\n"
            "                        stage 0, stage 1, then the second replica's): so each stage\n"
            "                        has its own process and core; activations and their\n"
            "                        gradients cross as every cross-task value does\n"
            FL_CLUSTER_SECURITY_HELP TRAINING_FLAGS_HELP, program);
}

static void set_split_flag(const char *flag, const char *value, void *options)
{
    split_flags *f = options;
    if (strcmp(flag, "--split") == 0) {
        for (int m = 0; m <= MODE_PAIR; m++)
            if (strcmp(value, mode_names[m]) == 0) {
                f->mode = (split_mode)m;
                return;
            }
        bad_flag(program, flag, value, "it must be layers, columns, rows, pair or none");
    } else if (strcmp(flag, "--micro_batches") == 0) {
        f->micro_batches = (int)parse_count(program, flag, value, 1);
        if (f->micro_batches > MAX_PIECES)
            bad_flag(program, flag, value, "this lab cuts a batch into at most 64 pieces");
    } else if (strcmp(flag, "--stage_hosts") == 0) {
        f->stage_hosts = value;
    } else if (fl_cluster_security_flag(&f->security, flag, value)) {
        return;
    } else if (strcmp(flag, "--replicas") == 0) {
        f->replicas = (int)parse_count(program, flag, value, 1);
        if (f->replicas > MAX_REPLICAS)
            bad_flag(program, flag, value, "this lab builds 1 or 2 replicas");
    }
}

/* --insecure_listen, accepted as every cluster program accepts it. */
static bool set_stage_switch(const char *arg, void *options)
{
    return fl_cluster_security_switch(&((split_flags *)options)->security, arg);
}

/* Exits 2 naming the flag when the flags do not fit together or the batch. */
static void check_flags(const split_flags *f, int batch_size)
{
    if (f->mode != MODE_LAYERS && (f->micro_batches > 1 || f->replicas > 1)) {
        fprintf(stderr, "%s: --micro_batches and --replicas go with --split layers, "
                "not --split %s (see --help)\n", program, mode_names[f->mode]);
        exit(2);
    }
    int pieces = f->micro_batches * f->replicas;
    if (pieces > MAX_PIECES || batch_size % pieces != 0) {
        fprintf(stderr, "%s: --batch_size %d does not split into %d replica%s x %d "
                "micro-batches; use a multiple of %d (see --help)\n", program, batch_size,
                f->replicas, f->replicas == 1 ? "" : "s", f->micro_batches, pieces);
        exit(2);
    }
}

/* --stage_hosts: the devices are the worker tasks' (each started with
 * flowlab_server), one device per task, this process their client, as
 * chapter 2's in-graph replication across tasks; exits 2 naming the flag. */
static void choose_stage_tasks(split_flags *f, pipeline_plan *plan, int need)
{
    f->cluster = fl_cluster_client_from_flags("", f->stage_hosts);
    if (!f->cluster || fl_cluster_apply_security(f->cluster, &f->security) != 0)
        bad_flag(program, "--stage_hosts", f->stage_hosts, fl_last_error());
    int tasks = fl_cluster_num_tasks(f->cluster, "worker");
    if (tasks != need) {
        fprintf(stderr, "%s: --stage_hosts lists %d task%s; --split %s%s needs %d, one per device (see --help)\n",
                program, tasks, tasks == 1 ? "" : "s", mode_names[f->mode], f->replicas > 1 ? " --replicas 2" : "",
                need);
        exit(2);
    }
    fl_device_info accelerators[1];
    const char *kind = list_accelerators(accelerators, 1) > 0 ? "gpu" : "cpu"; /* the tasks are alike */
    *plan = (pipeline_plan){.replicas = f->replicas, .micro_batches = f->micro_batches};
    for (int r = 0; r < f->replicas; r++)
        for (int s = 0; s < NUM_STAGES; s++)
            snprintf(plan->devices[r][s], sizeof plan->devices[r][s], "/job:worker/task:%d/%s:0",
                     need == 1 ? 0 : r * NUM_STAGES + s, kind);
}

/* Fills plan->devices from the accelerators (or the stage tasks); exits 2
 * when there are too few. */
static void choose_devices(split_flags *f, pipeline_plan *plan)
{
    fl_device_info accelerators[16];
    int stages = f->mode == MODE_NONE ? 1 : NUM_STAGES, need = stages * f->replicas;
    if (f->stage_hosts) {
        choose_stage_tasks(f, plan, need);
        return;
    }
    int available = list_accelerators(accelerators, 16);
    if (available < need) {
        fprintf(stderr, "%s: --split %s%s needs %d accelerator%s, and this machine has %d%s%s; "
                "with PoCL, POCL_DEVICES=\"%s\" gives %d (see flowlab-devices)\n", program,
                mode_names[f->mode], f->replicas > 1 ? " --replicas 2" : "", need,
                need == 1 ? "" : "s", available, available ? "" : ": ", available ? "" : fl_last_error(),
                need == 4 ? "pthread pthread pthread pthread" : "pthread pthread", need);
        exit(2);
    }
    *plan = (pipeline_plan){.replicas = f->replicas, .micro_batches = f->micro_batches};
    for (int r = 0; r < f->replicas; r++)
        for (int s = 0; s < NUM_STAGES; s++)
            snprintf(plan->devices[r][s], sizeof plan->devices[r][s], "%s",
                     accelerators[stages == 1 ? 0 : r * NUM_STAGES + s].name);
}

/* The training graph's nodes, for the loop, the evaluation and main. */
typedef struct {
    fl_node *image, *label, *loss, *train_op, *global_step, *accuracy;
    fl_node *load; /* the tensor split's load_shards; NULL otherwise */
} lab_model;

static fl_node *accuracy_of(fl_graph *g, fl_node *logits, fl_node *label)
{
    fl_device_scope_push(g, "/cpu:0");
    fl_node *correct = fl_equal(g, fl_argmax(g, logits, 1, "prediction"), label, "correct");
    fl_node *accuracy = fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false,
                                       "accuracy");
    fl_device_pop(g);
    return accuracy;
}

/* --split none: chapter 1's model, whole, on one device: the reference. */
static fl_node *whole_model(fl_graph *g, fl_node *image, const char *device, bool reuse)
{
    fl_variable_scope_push(g, "model", reuse ? FL_REUSE : FL_REUSE_INHERIT);
    fl_device_scope_push(g, device);
    fl_node *logits = core_model(g, image);
    fl_device_pop(g);
    fl_variable_scope_pop(g);
    return logits;
}

static pipeline_out build_one_device(fl_graph *g, const char *device, fl_node *image, fl_node *label)
{
    pipeline_out out = {0};
    fl_device_scope_push(g, device);
    out.loss = mean_loss(g, whole_model(g, image, device, false), label);
    out.nvars = fl_compute_gradients(g, out.loss, NULL, 0, out.grads);
    fl_device_pop(g);
    return out;
}

/* Chapter 1's layers, as trace_report names them; a variable of none of
 * them (there is none today) is updated in a scope of its own, "other". */
static const char *const layer_names[] = {"conv_1", "conv_2", "dense_1", "dense_2", "other"};
enum { NUM_GROUPS = sizeof layer_names / sizeof layer_names[0] };

static const char *layer_of(const fl_node *var)
{
    for (int l = 0; l < NUM_GROUPS - 1; l++)
        if (strstr(fl_node_name(var), layer_names[l]))
            return layer_names[l];
    return layer_names[NUM_GROUPS - 1];
}

/* Adam's updates, each in its layer's name scope ("train/dense_1/ApplyAdam"),
 * so that a trace says which layer each update serves and trace_report
 * counts it with the layer; one pair of beta powers and one step count, as
 * one fl_apply_gradients over all variables builds them. */
static fl_node *apply_by_layer(fl_graph *g, fl_optimizer *optimizer, const pipeline_out *out,
                               fl_node *global_step)
{
    const char *scopes[MAX_VARS];
    for (int v = 0; v < out->nvars; v++)
        scopes[v] = layer_of(out->grads[v].var);
    return fl_apply_gradients_scoped(optimizer, g, out->grads, out->nvars, scopes, global_step, "train");
}

static lab_model build_model(fl_graph *g, const split_flags *f, pipeline_plan *plan,
                             fl_optimizer *optimizer)
{
    lab_model m = {0};
    fl_device_scope_push(g, "/cpu:0");
    m.image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    m.label = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "label");
    fl_device_pop(g);
    bool tensor = f->mode == MODE_COLUMNS || f->mode == MODE_ROWS || f->mode == MODE_PAIR;
    tensor_split split = f->mode == MODE_COLUMNS ? SPLIT_COLUMNS : f->mode == MODE_ROWS ? SPLIT_ROWS : SPLIT_PAIR;
    pipeline_out out = tensor ? build_tensor_split(g, split, plan->devices[0], m.image, m.label, &m.load)
                       : f->mode == MODE_NONE ? build_one_device(g, plan->devices[0][0], m.image, m.label)
                                              : build_pipeline(g, plan, m.image, m.label);
    if (out.nvars > MAX_VARS) {
        fprintf(stderr, "%s: the model has %d variables; raise MAX_VARS\n", program, out.nvars);
        exit(1);
    }
    fl_device_scope_push(g, "/cpu:0");
    m.global_step = fl_get_or_create_global_step(g);
    fl_device_pop(g);
    m.train_op = apply_by_layer(g, optimizer, &out, m.global_step);
    m.loss = out.loss;
    /* The test set's batches need not split: one more, unpiped copy of the
     * model, on the first replica's devices, with the same variables. */
    fl_name_scope_push(g, "eval");
    sharded_kernel shards[2];
    fl_node *logits = tensor ? split_model(g, m.image, split, plan->devices[0], true, shards)
                      : f->mode == MODE_NONE ? whole_model(g, m.image, plan->devices[0][0], true)
                                             : build_stages(g, m.image, plan->devices[0], true);
    m.accuracy = accuracy_of(g, logits, m.label);
    fl_name_scope_pop(g);
    return m;
}

/* "2 stages: conv layers on /gpu:0, dense layers on /gpu:1; 4 micro-batches of 32" */
static void describe(const split_flags *f, const pipeline_plan *plan, int batch_size)
{
    if (f->mode == MODE_NONE) {
        printf("the whole model on %s\n", plan->devices[0][0]);
        return;
    }
    if (f->mode == MODE_COLUMNS || f->mode == MODE_ROWS) {
        printf("dense_1 split by %s: half of its kernel on %s, half on %s; the rest on %s\n",
               mode_names[f->mode], plan->devices[0][0], plan->devices[0][1], plan->devices[0][0]);
        return;
    }
    if (f->mode == MODE_PAIR) {
        printf("dense_1 split by columns and dense_2 by rows: half of each on %s, half on %s, one sum of the "
               "logits; the rest on %s\n", plan->devices[0][0], plan->devices[0][1], plan->devices[0][0]);
        return;
    }
    for (int r = 0; r < plan->replicas; r++)
        printf("%sconv layers on %s, dense layers on %s; %d micro-batch%s of %d\n",
               plan->replicas > 1 ? (r == 0 ? "replica 0: " : "replica 1: ") : "",
               plan->devices[r][0], plan->devices[r][1], plan->micro_batches,
               plan->micro_batches == 1 ? "" : "es", batch_size / plan->replicas / plan->micro_batches);
}

/* Initializes the variables, then (tensor split) the shards from the
 * host's kernel, unless a checkpoint will restore them. */
static int initialize(fl_session *s, fl_graph *g, const lab_model *m)
{
    fl_node *init = fl_global_variables_initializer(g);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0)
        return -1;
    if (m->load && fl_session_run(s, NULL, 0, NULL, 0, NULL, &m->load, 1) != 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    training_flags o = training_flags_defaults(program);
    split_flags f = {.mode = MODE_LAYERS, .micro_batches = 1, .replicas = 1};
    static const char *const names[] = {"--split", "--micro_batches", "--replicas", "--stage_hosts",
                                        FL_CLUSTER_SECURITY_FLAG_NAMES};
    lab_flags extra = {names, sizeof names / sizeof *names, set_split_flag, &f, set_stage_switch};
    parse_flags(argc, argv, &o, &extra, usage);
    check_flags(&f, o.batch_size);
    pipeline_plan plan;
    choose_devices(&f, &plan);

    lab_data data;
    if (load_data(o.data_dir, o.max_examples, &data) != 0) {
        fprintf(stderr, "%s: %s\n", program, fl_last_error());
        return 1;
    }
    int train_count = data.train_images->shape.dims[0];
    long total_steps = o.train_steps > 0 ? o.train_steps : o.epochs * (train_count / o.batch_size);
    printf("%d training and %d test examples, batch %d: %ld steps\n", train_count,
           data.test_images->shape.dims[0], o.batch_size, total_steps);
    describe(&f, &plan, o.batch_size);

    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, o.seed);
    fl_optimizer *adam = fl_adam_optimizer(o.learning_rate, 0.9f, 0.999f, 1e-8f);
    run_stats_build_started(); /* --print_stats */
    lab_model m = build_model(g, &f, &plan, adam);
    run_stats_build_done(g);
    if (f.cluster) /* --print_stats: the bytes through this client */
        run_stats_count_traffic(bytes_moved, f.cluster);
    fl_session *s = NULL;
    int rc = 1;
    if (fl_graph_error(g)) {
        fprintf(stderr, "%s: building the graph: %s\n", program, fl_graph_error(g));
        goto out;
    }
    fl_session_options config = {.log_device_placement = o.log_device_placement, .cluster = f.cluster};
    s = fl_session_new(g, &config);
    if (initialize(s, g, &m) != 0) {
        fprintf(stderr, "%s: initializing: %s\n", program, fl_session_error(s));
        goto out;
    }
    open_summaries(program, o.log_dir, o.histogram_every, g); /* --log_dir: TensorBoard's event file */
    train_nodes nodes = {m.image, m.label, m.loss, m.train_op, m.global_step, NULL};
    rc = train(s, &o, &nodes, &data, total_steps, true);
    if (rc == 0)
        rc = report_test_accuracy(s, &o, m.image, m.label, m.accuracy, &data);
out:
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    free_data(&data);
    return rc;
}
