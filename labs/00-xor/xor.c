/* xor.c: chapter 0's lab, the smallest complete flowlab program. A two-layer
 * network learns XOR on /cpu:0: placeholders, variables in variable scopes,
 * a loss, fl_minimize with Adam, and a session that runs the train op.
 * Lines `// [book:NAME]` ... `// [end:NAME]` mark the regions the book quotes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h" /* the only header: this file builds outside the tree with pkg-config alone */

typedef struct {
    int steps;
    float learning_rate;
    unsigned long seed;
    const char *log_dir; /* NULL: no summaries for TensorBoard */
    int histogram_every;
} options;

static void usage(FILE *out)
{
    fprintf(out, "usage: xor [--steps N] [--learning_rate LR] [--seed S] [--log_dir DIR] [--histogram_every N]\n"
                 "Trains a 2-8-2 tanh network on the four XOR cases and prints its loss.\n"
                 "  --steps N           training steps (default 400)\n"
                 "  --learning_rate LR  Adam's learning rate (default 0.05)\n"
                 "  --seed S            random seed for the initial weights (default 1)\n"
                 "  --log_dir DIR       write summaries for TensorBoard into DIR, made if its parent exists\n"
                 "                      (tensorboard --logdir DIR)\n"
                 "  --histogram_every N steps between histograms of the variables (default 100; 0: none)\n");
}

static int parse_flags(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        bool known = strcmp(flag, "--steps") == 0 || strcmp(flag, "--learning_rate") == 0 ||
                     strcmp(flag, "--seed") == 0 || strcmp(flag, "--log_dir") == 0 ||
                     strcmp(flag, "--histogram_every") == 0;
        if (!known) {
            fprintf(stderr, "xor: unknown flag %s (see --help)\n", flag);
            return -1;
        }
        if (!value) {
            fprintf(stderr, "xor: %s needs a value (see --help)\n", flag);
            return -1;
        }
        if (strcmp(flag, "--steps") == 0)
            o->steps = (int)strtol(value, &end, 10);
        else if (strcmp(flag, "--learning_rate") == 0)
            o->learning_rate = strtof(value, &end);
        else if (strcmp(flag, "--histogram_every") == 0)
            o->histogram_every = (int)strtol(value, &end, 10);
        else if (strcmp(flag, "--log_dir") == 0) {
            o->log_dir = value; /* any name: open_log_dir says when it cannot be made */
            end = (char *)value + strlen(value);
        } else
            o->seed = strtoul(value, &end, 10);
        if (!end || *end || o->steps < 1 || o->learning_rate <= 0 || o->histogram_every < 0) {
            fprintf(stderr, "xor: %s %s is not a valid value (see --help)\n", flag, value);
            return -1;
        }
        i++;
    }
    return 0;
}

/* dense(x) = x W + b, with W and b in their own variable scope */
static fl_node *dense(fl_graph *g, fl_node *x, int in, int out, const char *scope)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, in, out), fl_glorot_uniform_initializer(0));
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, out), fl_zeros_initializer());
    fl_node *y = fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
    fl_variable_scope_pop(g);
    return y;
}

/* --log_dir: TensorBoard's event file in DIR, with the graph; NULL without
 * --log_dir. Exits 2 when it cannot be written. */
static fl_summary_file_writer *open_log_dir(const char *log_dir, const fl_graph *g)
{
    if (!log_dir)
        return NULL;
    fl_summary_file_writer *w = fl_summary_file_writer_new(log_dir);
    if (!w || fl_summary_add_graph(w, g) != 0) {
        fprintf(stderr, "xor: --log_dir %s: %s; give a directory you can write to (see --help)\n", log_dir,
                fl_last_error());
        fl_summary_file_writer_close(w);
        exit(2);
    }
    printf("Summaries for TensorBoard in %s (tensorboard --logdir %s)\n", log_dir, log_dir);
    return w;
}

/* The step's loss, and at step 1 and every histogram_every steps each
 * variable's values. A write that fails says so and stops the summaries
 * (*w becomes NULL); training goes on. */
static void write_summaries(fl_summary_file_writer **w, fl_session *s, const fl_graph *g, int step, float loss,
                            int histogram_every)
{
    if (!*w)
        return;
    int rc = fl_summary_add_scalar(*w, "loss", loss, step);
    if (rc == 0 && histogram_every > 0 && (step == 1 || step % histogram_every == 0)) {
        fl_node *variables[8];
        fl_tensor *values[8] = {0};
        int n = fl_trainable_variables(g, variables, 8);
        rc = fl_session_run(s, NULL, 0, variables, n, values, NULL, 0);
        for (int i = 0; i < n; i++) {
            if (rc == 0)
                rc = fl_summary_add_histogram(*w, fl_node_name(variables[i]), values[i], step);
            fl_tensor_free(values[i]);
        }
    }
    if (rc != 0) {
        fprintf(stderr, "xor: --log_dir: %s; no more summaries are written\n", fl_last_error());
        fl_summary_file_writer_close(*w);
        *w = NULL;
    }
}

int main(int argc, char **argv)
{
    options o = {.steps = 400, .learning_rate = 0.05f, .seed = 1, .histogram_every = 100};
    if (parse_flags(argc, argv, &o) != 0)
        return 2;
    // [book:xor_graph]
    fl_graph *g = fl_graph_new();
    fl_graph_set_random_seed(g, o.seed);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 2), "x");
    fl_node *y = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "y");
    fl_node *hidden = fl_tanh(g, dense(g, x, 2, 8, "hidden"), NULL);
    fl_node *logits = dense(g, hidden, 8, 2, "logits");
    fl_node *loss = fl_reduce_mean(g, fl_sparse_softmax_cross_entropy_with_logits(g, y, logits, NULL),
                                   NULL, 0, false, "loss");
    fl_optimizer *adam = fl_adam_optimizer(o.learning_rate, 0.9f, 0.999f, 1e-8f);
    fl_node *train = fl_minimize(adam, g, loss, fl_get_or_create_global_step(g), "Adam");
    fl_node *init = fl_global_variables_initializer(g);
    if (fl_graph_error(g)) {
        fprintf(stderr, "xor: %s\n", fl_graph_error(g));
        return 1;
    }
    // [end:xor_graph]

    const float inputs[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    const int32_t targets[4] = {0, 1, 1, 0};
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, 4, 2), inputs);
    fl_tensor *yt = fl_tensor_from_ints(fl_shape_make(1, 4), targets);
    // [book:xor_run]
    fl_feed feeds[2] = {{x, xt}, {y, yt}};
    fl_session *s = fl_session_new(g, NULL);
    fl_summary_file_writer *summaries = open_log_dir(o.log_dir, g); /* NULL without --log_dir */
    int rc = fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1);
    for (int step = 1; rc == 0 && step <= o.steps; step++) {
        fl_tensor *value = NULL;
        rc = fl_session_run(s, feeds, 2, &loss, 1, &value, &train, 1);
        if (rc == 0)
            write_summaries(&summaries, s, g, step, fl_tensor_scalar(value), o.histogram_every);
        if (rc == 0 && (step % 50 == 0 || step == 1))
            printf("Step %d with loss %.6f\n", step, fl_tensor_scalar(value));
        fl_tensor_free(value);
    }
    // [end:xor_run]
    if (rc != 0)
        fprintf(stderr, "xor: %s\n", fl_session_error(s));
    if (fl_summary_file_writer_close(summaries) != 0)
        fprintf(stderr, "xor: --log_dir: %s\n", fl_last_error());
    fl_tensor_free(xt);
    fl_tensor_free(yt);
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    return rc == 0 ? 0 : 1;
}
