/* single_device.c: chapter 1's lab. A small convolutional network learns to
 * classify MNIST-format images (Fashion-MNIST by default) on one device.
 *
 * It is the whole single-device recipe in one file: flags, a data pipeline
 * (fl_mnist_load + fl_dataset), a model built in variable scopes, a loss,
 * fl_minimize with Adam, a session with soft placement, checkpoints that let
 * a killed run resume, a training loop that reports loss and speed, and an
 * evaluation of test-set accuracy. It is not a benchmark and not a model zoo:
 * the network is the one from the multi-GPU tutorial the next chapters
 * replicate, so that you can compare the three chapters step for step.
 *
 * Shapes (N = batch size):
 *   image [N,28,28,1] -> conv 5x5x32 + relu [N,28,28,32] -> max-pool [N,14,14,32]
 *   -> conv 5x5x64 + relu [N,14,14,64] -> max-pool [N,7,7,64] -> reshape [N,3136]
 *   -> dense 1024 + relu [N,1024] -> dense 10 [N,10] (the logits)
 *
 * Lines `// [book:NAME]` ... `// [end:NAME]` mark the regions the book quotes;
 * `make book-check` fails when a quoted region and the book disagree. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flowlab.h"

#define PROGRAM "single_device"

typedef struct {
    const char *device;
    int epochs;
    long train_steps; /* > 0: overrides epochs */
    int batch_size;
    float learning_rate;
    const char *data_dir;
    unsigned long seed;
    const char *checkpoint_dir; /* NULL: no checkpoints */
    int save_every;
    const char *graph_path;  /* NULL: no DOT file */
    const char *trace_path;  /* NULL: no trace */
    int log_every;
    int max_examples;        /* > 0: use only the first N examples of each split */
    bool log_device_placement;
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROGRAM " [flags]\n"
            "Trains a small convolutional network on MNIST-format images on one device,\n"
            "then prints its accuracy on the test set.\n"
            "  --device D            where the model runs (default /gpu:0; falls back to /cpu:0)\n"
            "  --epochs N            passes over the training set (default 2)\n"
            "  --train_steps N       train for N steps in all instead (overrides --epochs)\n"
            "  --batch_size N        examples per step (default 128)\n"
            "  --learning_rate LR    Adam's learning rate (default 0.001)\n"
            "  --data_dir DIR        MNIST-format files (default " FL_DEFAULT_DATA_DIR ")\n"
            "  --seed S              seed for the initial weights and the shuffle (default 1)\n"
            "  --checkpoint_dir DIR  resume from DIR's latest checkpoint; save into DIR\n"
            "  --save_every N        steps between checkpoints (default 100)\n"
            "  --graph FILE.dot      write the graph, coloured by device, after training\n"
            "  --trace FILE.json     write a Chrome trace of steps 2 to 4 of this run\n"
            "  --log_every N         steps between progress lines (default 100)\n"
            "  --max_examples N      use only the first N training and N test examples\n"
            "                        (for quick runs and tests; default: all)\n"
            "  --log_device_placement  print the device of every node when it first runs\n"
            "  --help                this text\n"
            "Flags take their value as the next argument or after '=': --seed 7, --seed=7.\n");
}

/* ---- flags: every bad value is an error that names its flag, exit 2 ---- */

static void bad_flag(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, PROGRAM ": %s: '%s' is not valid; %s (see --help)\n", flag, value, want);
    exit(2);
}

static long parse_count(const char *flag, const char *value, long min)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno || v < min || v > INT_MAX) {
        char want[64];
        snprintf(want, sizeof want, "it must be a whole number of at least %ld", min);
        bad_flag(flag, value, want);
    }
    return v;
}

static void canonical_device(const char *device, char *out, size_t len);

static void parse_flags(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *arg = argv[i], *value = NULL, *eq = strchr(arg, '=');
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, PROGRAM ": unexpected argument '%s'; flags start with -- (see --help)\n",
                    arg);
            exit(2);
        }
        snprintf(flag, sizeof flag, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        if (strcmp(flag, "--log_device_placement") == 0 && !eq) {
            o->log_device_placement = true;
            continue;
        }
        static const char *const known[] = {
            "--device", "--epochs", "--train_steps", "--batch_size", "--learning_rate",
            "--data_dir", "--seed", "--checkpoint_dir", "--save_every", "--graph",
            "--trace", "--log_every", "--max_examples"};
        bool is_known = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            is_known = is_known || strcmp(flag, known[k]) == 0;
        if (!is_known) {
            fprintf(stderr, PROGRAM ": unknown flag %s (see --help)\n", flag);
            exit(2);
        }
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            fprintf(stderr, PROGRAM ": %s needs a value (see --help)\n", flag);
            exit(2);
        }

        if (strcmp(flag, "--device") == 0) {
            char canonical[64];
            canonical_device(value, canonical, sizeof canonical); /* exits 2 if invalid */
            o->device = value;
        } else if (strcmp(flag, "--epochs") == 0) {
            o->epochs = (int)parse_count(flag, value, 1);
        } else if (strcmp(flag, "--train_steps") == 0) {
            o->train_steps = parse_count(flag, value, 1);
        } else if (strcmp(flag, "--batch_size") == 0) {
            o->batch_size = (int)parse_count(flag, value, 1);
        } else if (strcmp(flag, "--learning_rate") == 0) {
            char *end = NULL;
            o->learning_rate = strtof(value, &end);
            if (!*value || *end || !(o->learning_rate > 0) || o->learning_rate > 1e3f)
                bad_flag(flag, value, "it must be a positive number such as 0.001");
        } else if (strcmp(flag, "--data_dir") == 0) {
            if (!*value)
                bad_flag(flag, value, "give a directory");
            o->data_dir = value;
        } else if (strcmp(flag, "--seed") == 0) {
            char *end = NULL;
            errno = 0;
            o->seed = strtoul(value, &end, 10);
            if (!*value || *end || errno || value[0] == '-')
                bad_flag(flag, value, "it must be a whole number of at least 0");
        } else if (strcmp(flag, "--checkpoint_dir") == 0) {
            if (!*value)
                bad_flag(flag, value, "give a directory");
            o->checkpoint_dir = value;
        } else if (strcmp(flag, "--save_every") == 0) {
            o->save_every = (int)parse_count(flag, value, 1);
        } else if (strcmp(flag, "--graph") == 0) {
            if (!*value)
                bad_flag(flag, value, "give a file name such as model.dot");
            o->graph_path = value;
        } else if (strcmp(flag, "--trace") == 0) {
            if (!*value)
                bad_flag(flag, value, "give a file name such as trace.json");
            o->trace_path = value;
        } else if (strcmp(flag, "--log_every") == 0) {
            o->log_every = (int)parse_count(flag, value, 1);
        } else if (strcmp(flag, "--max_examples") == 0) {
            o->max_examples = (int)parse_count(flag, value, 1);
        }
    }
}

/* The canonical spelling of a device string ("/device:GPU:0" -> "/gpu:0"), as
 * the graph records it; exits 2 when the string is not a device. */
static void canonical_device(const char *device, char *out, size_t len)
{
    fl_graph *scratch = fl_graph_new();
    fl_device_scope_push(scratch, device);
    fl_node *probe = fl_scalar(scratch, 0.0f, "probe");
    if (fl_graph_error(scratch) || !probe) {
        fprintf(stderr, PROGRAM ": --device: '%s' is not valid: %s (see --help)\n", device,
                fl_graph_error(scratch) ? fl_graph_error(scratch) : "unknown error");
        fl_graph_free(scratch);
        exit(2);
    }
    snprintf(out, len, "%s", fl_node_device(probe));
    fl_graph_free(scratch);
}

/* Says once where the model really runs. A device string may carry a job and
 * task ("/job:worker/task:0/gpu:0"); only its last part names a local device. */
static void report_device(const char *requested)
{
    // [book:device]
    char wanted[64];
    canonical_device(requested, wanted, sizeof wanted);
    const char *local = strrchr(wanted, '/'); /* "/gpu:0" of "/job:w/task:0/gpu:0" */
    local = local ? local : "/cpu:0";

    fl_device_info devices[16];
    int count = fl_list_devices(devices, 16);
    for (int i = 0; i < count; i++)
        if (strcmp(devices[i].name, local) == 0) {
            printf("Training on %s (%s, %s)\n", local, devices[i].description, devices[i].backend);
            return;
        }
    if (strncmp(local, "/gpu:", 5) == 0)
        printf("no %s here; running on /cpu:0 (install pocl-opencl-icd for PoCL)\n", local);
    else
        printf("no %s here; running on /cpu:0\n", local);
    // [end:device]
}

/* The first n examples of a split (or all of it): a new tensor. */
static fl_tensor *first_examples(const fl_tensor *t, int n)
{
    fl_shape shape = t->shape;
    if (n > 0 && n < shape.dims[0])
        shape.dims[0] = n;
    fl_tensor *out = fl_tensor_new(t->dtype, shape);
    memcpy(out->data, t->data, (size_t)fl_shape_size(shape) * 4); /* float32 and int32: 4 bytes */
    return out;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// [book:layers]
/* conv2d(x) = relu(x * K + b), K [5,5,in,filters], "same" padding, stride 1 */
static fl_node *conv_relu(fl_graph *g, fl_node *x, int in, int filters, const char *scope)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *k = fl_get_variable(g, "kernel", fl_shape_make(4, 5, 5, in, filters),
                                 fl_glorot_uniform_initializer(0));
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, filters), fl_zeros_initializer());
    fl_node *y = fl_relu(g, fl_add(g, fl_conv2d(g, x, k, 1, 1, FL_SAME, NULL), b, NULL), NULL);
    fl_variable_scope_pop(g);
    return y;
}

/* dense(x) = x W + b, W [in,units]; relu on request */
static fl_node *dense(fl_graph *g, fl_node *x, int in, int units, bool relu, const char *scope)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, in, units),
                                 fl_glorot_uniform_initializer(0));
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, units), fl_zeros_initializer());
    fl_node *y = fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
    fl_variable_scope_pop(g);
    return relu ? fl_relu(g, y, NULL) : y;
}
// [end:layers]

// [book:model]
/* The tutorial's MNIST classifier: image [N,28,28,1] -> logits [N,10]. */
static fl_node *core_model(fl_graph *g, fl_node *image)
{
    fl_node *net = conv_relu(g, image, 1, 32, "conv_1");
    net = fl_max_pool2d(g, net, 2, 2, 2, 2, FL_VALID, NULL);   /* [N,14,14,32] */
    net = conv_relu(g, net, 32, 64, "conv_2");
    net = fl_max_pool2d(g, net, 2, 2, 2, 2, FL_VALID, NULL);   /* [N,7,7,64] */
    net = fl_reshape(g, net, fl_shape_make(2, -1, 7 * 7 * 64), NULL);
    net = dense(g, net, 7 * 7 * 64, 1024, true, "dense_1");
    return dense(g, net, 1024, 10, false, "dense_2");           /* the logits */
}
// [end:model]

int main(int argc, char **argv)
{
    options o = {.device = "/gpu:0", .epochs = 2, .batch_size = 128, .learning_rate = 1e-3f,
                 .data_dir = FL_DEFAULT_DATA_DIR, .seed = 1, .save_every = 100, .log_every = 100};
    parse_flags(argc, argv, &o);

    /* Data first: a missing data set is the most likely first error. */
    // [book:data]
    fl_tensor *train_images_all = NULL, *train_labels_all = NULL;
    fl_tensor *test_images_all = NULL, *test_labels_all = NULL;
    if (fl_mnist_load(o.data_dir, "train", &train_images_all, &train_labels_all) != 0 ||
        fl_mnist_load(o.data_dir, "t10k", &test_images_all, &test_labels_all) != 0) {
        fprintf(stderr, PROGRAM ": %s\n", fl_last_error());
        return 1;
    }
    fl_tensor *train_images = first_examples(train_images_all, o.max_examples);
    fl_tensor *train_labels = first_examples(train_labels_all, o.max_examples);
    fl_tensor *test_images = first_examples(test_images_all, o.max_examples);
    fl_tensor *test_labels = first_examples(test_labels_all, o.max_examples);
    int train_count = train_images->shape.dims[0];
    long steps_per_epoch = (train_count + o.batch_size - 1) / o.batch_size;
    long total_steps = o.train_steps > 0 ? o.train_steps : o.epochs * steps_per_epoch;
    // [end:data]
    fl_tensor_free(train_images_all);
    fl_tensor_free(train_labels_all);
    fl_tensor_free(test_images_all);
    fl_tensor_free(test_labels_all);
    printf("%d training and %d test examples, batch %d: %ld steps\n", train_count,
           test_images->shape.dims[0], o.batch_size, total_steps);

    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, o.seed);
    fl_device_scope_push(g, o.device); /* every node below asks for --device */
    if (fl_graph_error(g)) {
        fprintf(stderr, PROGRAM ": --device: %s\n", fl_graph_error(g));
        return 2;
    }
    fl_node *image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    fl_node *label = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "label");
    fl_node *logits = core_model(g, image);

    // [book:loss]
    fl_node *per_example = fl_sparse_softmax_cross_entropy_with_logits(g, label, logits, NULL);
    fl_node *loss = fl_reduce_mean(g, per_example, NULL, 0, false, "loss");
    // [end:loss]

    // [book:train_op]
    fl_optimizer *adam = fl_adam_optimizer(o.learning_rate, 0.9f, 0.999f, 1e-8f);
    fl_node *global_step = fl_get_or_create_global_step(g);
    fl_node *train_op = fl_minimize(adam, g, loss, global_step, "train");
    // [end:train_op]

    // [book:accuracy]
    fl_node *prediction = fl_argmax(g, logits, 1, "prediction");            /* int32 [N] */
    fl_node *correct = fl_equal(g, prediction, label, "correct");           /* 1 or 0 */
    fl_node *accuracy = fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false,
                                       "accuracy");
    // [end:accuracy]
    fl_node *init = fl_global_variables_initializer(g);
    fl_device_pop(g);
    if (fl_graph_error(g)) {
        fprintf(stderr, PROGRAM ": building the graph: %s\n", fl_graph_error(g));
        return 1;
    }

    // [book:session]
    fl_session_options config = {.allow_soft_placement = true,
                                 .log_device_placement = o.log_device_placement};
    fl_session *s = fl_session_new(g, &config);
    report_device(o.device);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0) {
        fprintf(stderr, PROGRAM ": initializing: %s\n", fl_session_error(s));
        return 1;
    }
    // [end:session]

    // [book:restore]
    long step = 0; /* the global step: updates made so far, across restarts */
    if (o.checkpoint_dir) {
        int restored = fl_session_restore_latest(s, o.checkpoint_dir);
        if (restored < 0) {
            fprintf(stderr, PROGRAM ": --checkpoint_dir %s: %s\n", o.checkpoint_dir,
                    fl_last_error());
            return 1;
        }
        fl_tensor *value = NULL;
        if (restored == 1 && fl_session_run(s, NULL, 0, &global_step, 1, &value, NULL, 0) == 0) {
            step = (long)fl_tensor_scalar(value);
            printf("Restored from model.ckpt-%ld, resuming at step %ld\n", step, step);
        }
        fl_tensor_free(value);
    }
    // [end:restore]

    // [book:dataset]
    fl_dataset_options train_options = {.batch_size = o.batch_size,
                                        .epochs = o.train_steps > 0 ? 0 : o.epochs,
                                        .shuffle = true, .seed = o.seed, .prefetch = 2};
    fl_dataset *train_set = fl_dataset_new(train_images, train_labels, &train_options);
    if (!train_set) {
        fprintf(stderr, PROGRAM ": %s\n", fl_last_error());
        return 1;
    }
    // [end:dataset]
    /* After a restart, skip the batches the earlier run already trained on, so
     * a resumed run sees the same data in the same order as an unbroken one. */
    const fl_tensor *batch_images = NULL, *batch_labels = NULL;
    for (long skipped = 0; skipped < step; skipped++)
        if (fl_dataset_next(train_set, &batch_images, &batch_labels) != 1)
            break;

    // [book:loop]
    int rc = 0;
    long first_step = step, last_logged = step, last_saved = step;
    double last_time = now_seconds();
    while (rc == 0 && step < total_steps) {
        int got = fl_dataset_next(train_set, &batch_images, &batch_labels);
        if (got != 1) {
            rc = got; /* 0: the epochs are over; -1: an error */
            break;
        }
        if (o.trace_path && step - first_step == 1)
            fl_session_set_tracing(s, true); /* trace steps 2 to 4 of this run */
        fl_feed feeds[2] = {{image, batch_images}, {label, batch_labels}};
        fl_tensor *loss_value = NULL;
        rc = fl_session_run(s, feeds, 2, &loss, 1, &loss_value, &train_op, 1);
        if (rc != 0)
            break;
        if (step % o.log_every == 0 || step == first_step) {
            double t = now_seconds();
            long images = (step + 1 - last_logged) * (long)o.batch_size;
            printf("Step %ld with loss %.6f (%.1f images/sec)\n", step,
                   fl_tensor_scalar(loss_value), (double)images / (t - last_time));
            fflush(stdout);
            last_time = t;
            last_logged = step + 1;
        }
        fl_tensor_free(loss_value);
        step++;
        if (o.trace_path && step - first_step == 4) {
            fl_session_set_tracing(s, false);
            if (fl_session_write_trace(s, o.trace_path) != 0)
                fprintf(stderr, PROGRAM ": --trace: %s\n", fl_last_error());
        }
        if (o.checkpoint_dir && step % o.save_every == 0) {
            rc = fl_session_save(s, o.checkpoint_dir, step);
            last_saved = step;
        }
    }
    // [end:loop]
    if (rc < 0) {
        fprintf(stderr, PROGRAM ": step %ld: %s\n", step,
                fl_session_error(s)[0] ? fl_session_error(s) : fl_last_error());
        return 1;
    }
    if (o.checkpoint_dir && step != last_saved && fl_session_save(s, o.checkpoint_dir, step) != 0) {
        fprintf(stderr, PROGRAM ": saving: %s\n", fl_last_error());
        return 1;
    }
    if (o.trace_path && step - first_step > 0 && step - first_step < 4) {
        fl_session_set_tracing(s, false); /* a run shorter than 4 steps */
        if (fl_session_write_trace(s, o.trace_path) != 0)
            fprintf(stderr, PROGRAM ": --trace: %s\n", fl_last_error());
    }
    fl_dataset_free(train_set);

    // [book:evaluate]
    fl_dataset_options test_options = {.batch_size = o.batch_size, .epochs = 1, .prefetch = 2};
    fl_dataset *test_set = fl_dataset_new(test_images, test_labels, &test_options);
    double correct_total = 0;
    long seen = 0;
    while (test_set && fl_dataset_next(test_set, &batch_images, &batch_labels) == 1) {
        fl_feed feeds[2] = {{image, batch_images}, {label, batch_labels}};
        fl_tensor *value = NULL;
        if (fl_session_run(s, feeds, 2, &accuracy, 1, &value, NULL, 0) != 0) {
            fprintf(stderr, PROGRAM ": evaluating: %s\n", fl_session_error(s));
            return 1;
        }
        int n = batch_labels->shape.dims[0]; /* the last batch may be smaller */
        correct_total += (double)fl_tensor_scalar(value) * n;
        seen += n;
        fl_tensor_free(value);
    }
    printf("Test accuracy: %.4f\n", seen ? correct_total / (double)seen : 0.0);
    // [end:evaluate]
    fl_dataset_free(test_set);

    if (o.graph_path && fl_session_write_dot(s, o.graph_path) != 0) {
        fprintf(stderr, PROGRAM ": --graph: %s\n", fl_last_error());
        return 1;
    }
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    fl_tensor_free(train_images);
    fl_tensor_free(train_labels);
    fl_tensor_free(test_images);
    fl_tensor_free(test_labels);
    return 0;
}
