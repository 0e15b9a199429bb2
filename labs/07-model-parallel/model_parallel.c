/* model_parallel.c: chapter 7's lab. Chapter 1's network, one copy of it
 * split across devices (model parallelism), where chapters 2 to 6 put a
 * whole copy on every device (data parallelism).
 *
 *   --split layers       the convolutions on /gpu:0, the dense layers on
 *                        /gpu:1 (a vertical split, by layers); with
 *                        --micro_batches M, GPipe's pipeline over the
 *                        stages (pipeline.h); with --replicas 2, two such
 *                        pipelines, data parallel; --stages and --cut
 *                        choose the stages (stage_cut.h), --model mlp a
 *                        model whose stages can be even (layers.h)
 *   --split columns|rows dense_1's matrix multiply cut across /gpu:0 and
 *                        /gpu:1 (a horizontal split; tensor_split.h)
 *                        --schedule 1f1b and --recompute bound what
 *                        a stage holds (schedule.h)
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
#include "stage_cut.h"
#include "tensor_split.h"

static const char program[] = "model_parallel";

typedef enum { MODE_NONE, MODE_LAYERS, MODE_COLUMNS, MODE_ROWS, MODE_PAIR } split_mode;
static const char *const mode_names[] = {"none", "layers", "columns", "rows", "pair"};

typedef struct {
    split_mode mode;
    model_kind model;                   /* --model */
    int micro_batches, replicas, stages;
    schedule_kind schedule;             /* --schedule */
    bool recompute;                     /* --recompute */
    const char *cut;                    /* --cut: layer names, or "balanced"; NULL: even */
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
            "  --replicas R          with layers: R pipelines (1 or 2) on R x S devices, each\n"
            "                        with 1/R of the batch, gradients averaged (default 1)\n"
            "  --model M             cnn (default): chapter 1's network, layers conv_1,\n"
            "                        conv_2, dense_1, dense_2; mlp: ten dense layers,\n"
            "                        dense_1 to dense_10, eight of them alike (1024 x 1024)\n"
            "  --stages S            with layers: S stages (2 to 4; default 2) on S devices\n"
            "  --schedule K          with layers: gpipe (default): every micro-batch forward,\n"
            "                        then backward; 1f1b: stage s starts micro-batch m once\n"
            "                        m - (S - s) has gone back through it (PipeDream-Flush)\n"
            "  --recompute           with layers: keep only each stage's input and run its\n"
            "                        forward pass again before its backward pass\n"
            "  --cut L1,...          with layers: the layers that begin stages 1 to S-1\n"
            "                        (--cut dense_1 is the default for the CNN's 2 stages);\n"
            "                        balanced: time every layer on one device first and\n"
            "                        cut where the slowest stage is fastest; default: equal\n"
            "                        numbers of layers\n"
            "  --batch_size N        examples per step in all (default 128); it must split\n"
            "                        into R x M equal pieces\n"
            "  --stage_hosts H:P,... each device a task of its own, started with\n"
            "                        build/labs/tools/flowlab_server (as worker tasks, in order:\n"
            "                        stage 0, stage 1, then the second replica's): so each stage\n"
            "                        has its own process and core; activations and their\n"
            "                        gradients cross as every cross-task value does; with\n"
            "                        --trace, the memory line lists each task's own peaks\n"
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
    } else if (strcmp(flag, "--model") == 0) {
        if (strcmp(value, "cnn") != 0 && strcmp(value, "mlp") != 0)
            bad_flag(program, flag, value, "it must be cnn or mlp");
        f->model = strcmp(value, "mlp") == 0 ? MODEL_MLP : MODEL_CNN;
    } else if (strcmp(flag, "--stages") == 0) {
        f->stages = (int)parse_count(program, flag, value, 2);
        if (f->stages > MAX_STAGES)
            bad_flag(program, flag, value, "this lab builds 2 to 4 stages");
    } else if (strcmp(flag, "--cut") == 0) {
        f->cut = value;
    } else if (strcmp(flag, "--schedule") == 0) {
        if (strcmp(value, "gpipe") != 0 && strcmp(value, "1f1b") != 0)
            bad_flag(program, flag, value, "it must be gpipe or 1f1b");
        f->schedule = strcmp(value, "1f1b") == 0 ? SCHEDULE_1F1B : SCHEDULE_GPIPE;
    } else if (fl_cluster_security_flag(&f->security, flag, value)) {
        return;
    } else if (strcmp(flag, "--replicas") == 0) {
        f->replicas = (int)parse_count(program, flag, value, 1);
        if (f->replicas > MAX_REPLICAS)
            bad_flag(program, flag, value, "this lab builds 1 or 2 replicas");
    }
}

/* --recompute; --insecure_listen, accepted as every cluster program accepts it. */
static bool set_stage_switch(const char *arg, void *options)
{
    split_flags *f = options;
    if (strcmp(arg, "--recompute") == 0)
        return f->recompute = true;
    return fl_cluster_security_switch(&f->security, arg);
}

/* Exits 2 naming the flag when the flags do not fit together or the batch. */
static void check_flags(const split_flags *f, int batch_size)
{
    if (f->mode != MODE_LAYERS && (f->micro_batches > 1 || f->replicas > 1 || f->stages != 2 || f->cut ||
                                   f->schedule != SCHEDULE_GPIPE || f->recompute)) {
        fprintf(stderr, "%s: --micro_batches, --replicas, --stages, --cut, --schedule and --recompute go with "
                "--split layers, not --split %s (see --help)\n", program, mode_names[f->mode]);
        exit(2);
    }
    if (f->model == MODEL_MLP && f->mode != MODE_LAYERS && f->mode != MODE_NONE) {
        fprintf(stderr, "%s: --split %s cuts the CNN's dense_1; with --model mlp, use --split layers or none "
                "(see --help)\n", program, mode_names[f->mode]);
        exit(2);
    }
    int first_layer[MAX_STAGES + 1];
    char why[256];
    if (f->cut && strcmp(f->cut, "balanced") != 0 &&
        cut_from_names(f->cut, f->model, f->stages, first_layer, why, sizeof why) != 0)
        bad_flag(program, "--cut", f->cut, why);
    if (f->stages > model_num_layers(f->model)) {
        fprintf(stderr, "%s: --stages %d: the %s has only %d layers (see --help)\n", program, f->stages,
                f->model == MODEL_CNN ? "CNN" : "MLP", model_num_layers(f->model));
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
static void choose_stage_tasks(split_flags *f, pipeline_plan *plan, int stages, int need)
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
    for (int r = 0; r < f->replicas; r++)
        for (int s = 0; s < stages; s++)
            snprintf(plan->devices[r][s], sizeof plan->devices[r][s], "/job:worker/task:%d/%s:0", r * stages + s,
                     kind);
}

/* Fills plan->devices from the accelerators (or the stage tasks); exits 2
 * when there are too few. */
static void choose_devices(split_flags *f, pipeline_plan *plan)
{
    fl_device_info accelerators[16];
    int stages = f->mode == MODE_NONE ? 1 : f->mode == MODE_LAYERS ? f->stages : 2, need = stages * f->replicas;
    *plan = (pipeline_plan){.model = f->model, .replicas = f->replicas, .micro_batches = f->micro_batches,
                            .stages = stages, .schedule = f->schedule, .recompute = f->recompute};
    if (f->stage_hosts) {
        choose_stage_tasks(f, plan, stages, need);
        return;
    }
    int available = list_accelerators(accelerators, 16);
    if (available < need) {
        fprintf(stderr, "%s: --split %s%s needs %d accelerator%s, and this machine has %d%s%s; "
                "with PoCL, POCL_DEVICES=\"%.*s\" gives %d (see flowlab-devices)\n", program,
                mode_names[f->mode], f->replicas > 1 ? " --replicas 2" : "", need,
                need == 1 ? "" : "s", available, available ? "" : ": ", available ? "" : fl_last_error(),
                8 * need - 1, "pthread pthread pthread pthread pthread pthread pthread pthread", need);
        exit(2);
    }
    for (int r = 0; r < f->replicas; r++)
        for (int s = 0; s < stages; s++)
            snprintf(plan->devices[r][s], sizeof plan->devices[r][s], "%s", accelerators[r * stages + s].name);
}

/* Fills plan->first_layer: one stage of every layer, --cut's names, --cut
 * balanced's measurement, or equal numbers of layers; exits 2 naming --cut. */
static void choose_cut(const split_flags *f, pipeline_plan *plan, int batch_size)
{
    int nlayers = model_num_layers(plan->model);
    char why[256] = "";
    if (plan->stages == 1 || !f->cut) {
        even_cut(nlayers, plan->stages, plan->first_layer);
        return;
    }
    if (strcmp(f->cut, "balanced") != 0) { /* check_flags has checked the names */
        cut_from_names(f->cut, plan->model, plan->stages, plan->first_layer, why, sizeof why);
        return;
    }
    /* The stage tasks are alike: this process's first accelerator stands for them. */
    fl_device_info local[1];
    const char *device = f->stage_hosts ? (list_accelerators(local, 1) > 0 ? local[0].name : "/cpu:0")
                                        : plan->devices[0][0];
    double layer_ms[MAX_LAYERS] = {0}, best_ms = 1e300;
    printf("--cut balanced: timing each layer over 3 steps of %d on %s\n", batch_size, device);
    fflush(stdout);
    if (measure_layer_times(plan->model, device, batch_size, layer_ms, why, sizeof why) != 0)
        bad_flag(program, "--cut", f->cut, why);
    int cut[MAX_STAGES + 1] = {0};
    cut[plan->stages] = nlayers;
    try_cuts(layer_ms, plan->stages, 1, cut, &best_ms, plan->first_layer);
    printf("per step:");
    for (int l = 0; l < nlayers; l++)
        printf(" %s %.1f ms%s", model_layer_name(plan->model, l), layer_ms[l], l + 1 < nlayers ? "," : "");
    printf("; the slowest stage %.1f ms\n", best_ms);
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

/* --split none: the model, whole, on one device: the reference. */
static fl_node *whole_model(fl_graph *g, model_kind kind, fl_node *image, const char *device, bool reuse)
{
    fl_variable_scope_push(g, "model", reuse ? FL_REUSE : FL_REUSE_INHERIT);
    fl_device_scope_push(g, device);
    fl_node *logits = kind == MODEL_CNN ? core_model(g, image) : model_layers(g, kind, 0, MAX_LAYERS, image);
    fl_device_pop(g);
    fl_variable_scope_pop(g);
    return logits;
}

static pipeline_out build_one_device(fl_graph *g, model_kind kind, const char *device, fl_node *image,
                                     fl_node *label)
{
    pipeline_out out = {0};
    fl_device_scope_push(g, device);
    out.loss = mean_loss(g, whole_model(g, kind, image, device, false), label);
    out.nvars = fl_compute_gradients(g, out.loss, NULL, 0, out.grads);
    fl_device_pop(g);
    return out;
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
                       : f->mode == MODE_NONE ? build_one_device(g, plan->model, plan->devices[0][0], m.image, m.label)
                                              : build_pipeline(g, plan, m.image, m.label);
    if (out.nvars > MAX_VARS) {
        fprintf(stderr, "%s: the model has %d variables; raise MAX_VARS\n", program, out.nvars);
        exit(1);
    }
    fl_device_scope_push(g, "/cpu:0");
    m.global_step = fl_get_or_create_global_step(g);
    fl_device_pop(g);
    m.train_op = apply_by_layer(g, optimizer, plan->model, out.grads, out.nvars, m.global_step);
    m.loss = out.loss;
    /* The test set's batches need not split: one more, unpiped copy of the
     * model, on the first replica's devices, with the same variables. */
    fl_name_scope_push(g, "eval");
    sharded_kernel shards[2];
    fl_node *logits = tensor ? split_model(g, m.image, split, plan->devices[0], true, shards)
                      : f->mode == MODE_NONE ? whole_model(g, plan->model, m.image, plan->devices[0][0], true)
                                             : build_stages(g, plan, m.image, plan->devices[0], true, NULL);
    m.accuracy = accuracy_of(g, logits, m.label);
    fl_name_scope_pop(g);
    return m;
}

/* "conv layers on /gpu:0, dense layers on /gpu:1; 4 micro-batches of 32" */
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
    for (int r = 0; r < plan->replicas; r++) {
        printf("%s", plan->replicas > 1 ? (r == 0 ? "replica 0: " : "replica 1: ") : "");
        for (int s = 0; s < plan->stages; s++) {
            char layers[64];
            printf("%s on %s%s", stage_layers_text(plan, s, layers, sizeof layers), plan->devices[r][s],
                   s + 1 < plan->stages ? ", " : "; ");
        }
        printf("%d micro-batch%s of %d\n", plan->micro_batches, plan->micro_batches == 1 ? "" : "es",
               batch_size / plan->replicas / plan->micro_batches);
    }
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
    split_flags f = {.mode = MODE_LAYERS, .micro_batches = 1, .replicas = 1, .stages = 2};
    static const char *const names[] = {"--split", "--micro_batches", "--replicas", "--stage_hosts", "--model",
                                        "--stages", "--cut", "--schedule", FL_CLUSTER_SECURITY_FLAG_NAMES};
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
    choose_cut(&f, &plan, o.batch_size);
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
    fl_session_options config = {.log_device_placement = o.log_device_placement, .cluster = f.cluster,
                                 .reuse_memory = true}; /* what a schedule holds, counted (schedule.h) */
    s = fl_session_new(g, &config);
    if (initialize(s, g, &m) != 0) {
        fprintf(stderr, "%s: initializing: %s\n", program, fl_session_error(s));
        goto out;
    }
    open_summaries(program, o.log_dir, o.histogram_every, g); /* --log_dir: TensorBoard's event file */
    train_nodes nodes = {m.image, m.label, m.loss, m.train_op, m.global_step, NULL};
    rc = train(s, &o, &nodes, &data, total_steps, true);
    if (rc == 0 && f.mode == MODE_LAYERS)
        print_memory(s);
    if (rc == 0)
        rc = report_test_accuracy(s, &o, m.image, m.label, m.accuracy, &data);
out:
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    free_data(&data);
    return rc;
}
