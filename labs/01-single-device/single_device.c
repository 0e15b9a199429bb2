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
 * The model, the flags both training labs share, the data loading and the
 * evaluation are in labs/common/ (model.h, flags.h, data.h, evaluate.h), so
 * that the next chapter's lab trains exactly this network.
 *
 * Lines `// [book:NAME]` ... `// [end:NAME]` mark the regions the book quotes;
 * `make book-check` fails when a quoted region and the book disagree. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"
#include "../common/data.h"
#include "../common/devices.h"
#include "../common/evaluate.h"
#include "../common/flags.h"
#include "../common/model.h"
#include "../common/train_loop.h"

/* This lab's name, which starts its messages. */
static const char program[] = "single_device";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [flags]\n"
            "Trains a small convolutional network on MNIST-format images on one device,\n"
            "then prints its accuracy on the test set.\n"
            "  --device D            where the model runs (default /gpu:0; falls back to /cpu:0)\n"
            "  --batch_size N        examples per step (default 128)\n"
            TRAINING_FLAGS_HELP, program);
}

/* --device, the one flag of this lab that the next one does not have. */
static void set_device(const char *flag, const char *value, void *device)
{
    char canonical[64];
    canonical_device(program, flag, value, canonical, sizeof canonical); /* exits 2 if invalid */
    *(const char **)device = value;
}

/* Says once where the model really runs, and why not where it was asked to.
 * A device of a cluster task ("/job:worker/task:0/gpu:0") waits for chapter 3. */
static void report_device(const char *requested)
{
    // [book:device]
    char wanted[64];
    canonical_device(program, "--device", requested, wanted, sizeof wanted);
    if (strchr(wanted + 1, '/')) { /* "/job:worker/task:0/gpu:0" */
        fprintf(stderr, "%s: --device %s names a cluster task, which chapter 3 builds; "
                "drop the /job: and /task: parts\n", program, requested);
        exit(2);
    }
    fl_device_info devices[16];
    int count = fl_list_devices(devices, 16);
    for (int i = 0; i < count; i++)
        if (strcmp(devices[i].name, wanted) == 0) {
            printf("Training on %s (%s, %s)\n", wanted, devices[i].description, devices[i].backend);
            return;
        }
    if (strncmp(wanted, "/gpu:", 5) != 0)
        printf("no %s here; running on /cpu:0\n", wanted);
    else if (count == 1) /* no accelerator at all: fl_list_devices said why */
        printf("no %s here; running on /cpu:0 (%s)\n", wanted, fl_last_error());
    else if (count == 2)
        printf("no %s here, there is %s only; running on /cpu:0\n", wanted, devices[1].name);
    else
        printf("no %s here, there are %s to %s; running on /cpu:0\n", wanted, devices[1].name,
               devices[count - 1].name);
    // [end:device]
}

int main(int argc, char **argv)
{
    training_flags o = training_flags_defaults(program);
    o.offers_warmup = true; /* train() gets the optimizer (train_nodes) */
    const char *device = "/gpu:0";
    static const char *const lab_flag_names[] = {"--device"};
    lab_flags extra = {lab_flag_names, 1, set_device, &device, NULL};
    parse_flags(argc, argv, &o, &extra, usage);

    /* Data first: a missing data set is the most likely first error. */
    lab_data data;
    if (load_data(o.data_dir, o.max_examples, &data) != 0) {
        fprintf(stderr, "%s: %s\n", program, fl_last_error());
        return 1;
    }
    // [book:steps]
    int train_count = data.train_images->shape.dims[0];
    long steps_per_epoch = (train_count + o.batch_size - 1) / o.batch_size;
    long total_steps = o.train_steps > 0 ? o.train_steps : o.epochs * steps_per_epoch;
    // [end:steps]
    printf("%d training and %d test examples, batch %d: %ld steps\n", train_count,
           data.test_images->shape.dims[0], o.batch_size, total_steps);

    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, o.seed);
    fl_device_scope_push(g, device); /* every node below asks for --device */
    if (fl_graph_error(g)) {
        fprintf(stderr, "%s: --device: %s\n", program, fl_graph_error(g));
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
        fprintf(stderr, "%s: building the graph: %s\n", program, fl_graph_error(g));
        return 1;
    }

    // [book:session]
    fl_session_options config = {.allow_soft_placement = true,
                                 .log_device_placement = o.log_device_placement};
    fl_session *s = fl_session_new(g, &config);
    report_device(device);
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0) {
        fprintf(stderr, "%s: initializing: %s\n", program, fl_session_error(s));
        return 1;
    }
    // [end:session]

    open_summaries(program, o.log_dir, o.histogram_every, g); /* --log_dir: TensorBoard's event file */
    train_nodes nodes = {image, label, loss, train_op, global_step, adam};
    int rc = train(s, &o, &nodes, &data, total_steps, false);
    if (rc == 0)
        rc = report_test_accuracy(s, &o, image, label, accuracy, &data);
    /* Freed on the failing paths too: a failed restore or save is an
     * expected outcome, and the sanitized build reports what is not freed. */
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    free_data(&data);
    return rc;
}
