/* flags.h: the command-line flags every training lab shares (--epochs,
 * --batch_size, --seed, ...) and the helpers that parse them. A lab adds its
 * own flags through a callback; every bad value exits 2 naming its flag, and
 * every message starts with the lab's name (training_flags.program). */
#ifndef LABS_COMMON_FLAGS_H
#define LABS_COMMON_FLAGS_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowlab.h"
#include "checkpoint_dir.h"

/* The flags of the training recipe; a lab's own flags live in its own struct. */
typedef struct {
    const char *program; /* the lab's name, which starts every message */
    int epochs;
    long train_steps; /* > 0: overrides epochs */
    int batch_size;
    float learning_rate;
    long warmup_steps; /* > 0: the rate rises linearly to learning_rate over these steps */
    bool offers_warmup; /* set by a lab whose training loop gets its optimizer (train_nodes) */
    const char *data_dir;
    unsigned long seed;
    const char *checkpoint_dir; /* NULL: no checkpoints */
    int save_every;
    const char *graph_path;  /* NULL: no DOT file */
    fl_dot_options graph;    /* --graph_detail, --graph_depth: scopes one level deep by default */
    const char *trace_path;  /* NULL: no trace */
    int log_every;
    int max_examples;        /* > 0: use only the first N examples of each split */
    bool log_device_placement;
    const char *log_dir;     /* NULL: no summaries for TensorBoard (labs/common/summaries.h) */
    int histogram_every;     /* steps between the variables' histograms; 0: none */
    bool print_stats;        /* print run_stats.h's stats: line after training */
} training_flags;

/* The defaults, for the lab called program. */
static inline training_flags training_flags_defaults(const char *program)
{
    return (training_flags){.program = program, .epochs = 2, .batch_size = 128,
                            .learning_rate = 1e-3f, .data_dir = FL_DEFAULT_DATA_DIR, .seed = 1,
                            .save_every = 100, .log_every = 100, .histogram_every = 100};
}

/* The --help lines of training_flags, for a lab's usage text. */
#define TRAINING_FLAGS_HELP                                                                     \
    "  --epochs N            passes over the training set (default 2)\n"                        \
    "  --train_steps N       train for N steps in all instead (overrides --epochs; between\n"   \
    "                        graphs, until the global step reaches N)\n"                       \
    "  --learning_rate LR    Adam's learning rate (default 0.001)\n"                            \
    "  --warmup_steps N      raise the rate linearly from LR/N to LR over the first N steps\n" \
    "                        (Goyal et al. 2017; chapter 1's lab only; default 0: none)\n"  \
    "  --data_dir DIR        MNIST-format files (default " FL_DEFAULT_DATA_DIR ")\n"            \
    "  --seed S              seed for the initial weights and the shuffle (default 1)\n"        \
    "  --checkpoint_dir DIR  resume from DIR's latest checkpoint; save into DIR\n"              \
    "  --save_every N        steps between checkpoints (default 100)\n"                         \
    "  --graph FILE.dot      write the graph, coloured by device, after training\n"             \
    "  --graph_detail D      scopes (one box per name scope, the default) or nodes (every node)\n" \
    "  --graph_depth N       with scopes: a box per scope N levels deep (default 1)\n"          \
    "  --trace FILE.json     write a Chrome trace of steps 2 to 4 of this run\n"                \
    "  --log_every N         steps between progress lines (default 100)\n"                      \
    "  --max_examples N      use only the first N training and N test examples\n"               \
    "                        (for quick runs and tests; default: all)\n"                        \
    "  --log_device_placement  print the device of every node when it first runs\n"             \
    "  --log_dir DIR         write summaries for TensorBoard into DIR (tensorboard --logdir DIR)\n" \
    "  --histogram_every N   steps between histograms of the variables in --log_dir (default\n" \
    "                        100; 0: none)\n"                                                    \
    "  --print_stats         after training, print a stats: line (graph size, build time, CPU ms,\n" \
    "                        bytes moved and images/sec per step)\n"                           \
    "  --help                this text\n"                                                       \
    "Flags take their value as the next argument or after '=': --seed 7, --seed=7.\n"

static inline void bad_flag(const char *program, const char *flag, const char *value,
                            const char *want)
{
    fprintf(stderr, "%s: %s: '%s' is not valid; %s (see --help)\n", program, flag, value, want);
    exit(2);
}

static inline long parse_count(const char *program, const char *flag, const char *value, long min)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno || v < min || v > INT_MAX) {
        char want[64];
        snprintf(want, sizeof want, "it must be a whole number of at least %ld", min);
        bad_flag(program, flag, value, want);
    }
    return v;
}

/* Sets the training flag `flag` from value; false when flag is not one of them. */
static inline bool parse_training_flag(const char *flag, const char *value, training_flags *o)
{
    if (strcmp(flag, "--epochs") == 0) {
        o->epochs = (int)parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--train_steps") == 0) {
        o->train_steps = parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--batch_size") == 0) {
        o->batch_size = (int)parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--learning_rate") == 0) {
        char *end = NULL;
        o->learning_rate = strtof(value, &end);
        if (!*value || *end || !(o->learning_rate > 0) || o->learning_rate > 1e3f)
            bad_flag(o->program, flag, value, "it must be a positive number such as 0.001");
    } else if (strcmp(flag, "--warmup_steps") == 0) {
        if (!o->offers_warmup)
            bad_flag(o->program, flag, value, "this lab has no learning-rate schedule; "
                     "chapter 1's single_device has");
        o->warmup_steps = parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--data_dir") == 0) {
        if (!*value)
            bad_flag(o->program, flag, value, "give a directory");
        o->data_dir = value;
    } else if (strcmp(flag, "--seed") == 0) {
        char *end = NULL;
        errno = 0;
        o->seed = strtoul(value, &end, 10);
        if (!*value || *end || errno || value[0] == '-')
            bad_flag(o->program, flag, value, "it must be a whole number of at least 0");
    } else if (strcmp(flag, "--checkpoint_dir") == 0) {
        if (!*value)
            bad_flag(o->program, flag, value, "give a directory");
        o->checkpoint_dir = value;
    } else if (strcmp(flag, "--save_every") == 0) {
        o->save_every = (int)parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--graph") == 0) {
        if (!*value)
            bad_flag(o->program, flag, value, "give a file name such as model.dot");
        o->graph_path = value;
    } else if (strcmp(flag, "--graph_detail") == 0) {
        if (strcmp(value, "scopes") != 0 && strcmp(value, "nodes") != 0)
            bad_flag(o->program, flag, value, "it must be scopes or nodes");
        o->graph.detail = strcmp(value, "nodes") == 0 ? FL_DOT_NODES : FL_DOT_SCOPES;
    } else if (strcmp(flag, "--graph_depth") == 0) {
        o->graph.scope_depth = (int)parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--trace") == 0) {
        if (!*value)
            bad_flag(o->program, flag, value, "give a file name such as trace.json");
        o->trace_path = value;
    } else if (strcmp(flag, "--log_every") == 0) {
        o->log_every = (int)parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--max_examples") == 0) {
        o->max_examples = (int)parse_count(o->program, flag, value, 1);
    } else if (strcmp(flag, "--log_dir") == 0) {
        if (!*value)
            bad_flag(o->program, flag, value, "give a directory");
        o->log_dir = value;
    } else if (strcmp(flag, "--histogram_every") == 0) {
        o->histogram_every = (int)parse_count(o->program, flag, value, 0);
    } else {
        return false;
    }
    return true;
}

/* A lab's own flags: names (each taking a value) and a function that sets
 * one; and, optionally, switches (flags without a value): set_switch takes
 * the whole argument and says whether it was one. */
typedef struct {
    const char *const *names;
    int count;
    void (*set)(const char *flag, const char *value, void *lab_options);
    void *lab_options;
    bool (*set_switch)(const char *arg, void *lab_options);
} lab_flags;

/* --checkpoint_dir is created now, before the data is read and the model
 * trained, so that a path that cannot be created is an error of its flag
 * (TensorFlow's MonitoredTrainingSession also makes it at the start). */
static inline void require_checkpoint_dir(const training_flags *o)
{
    char why[512];
    if (!o->checkpoint_dir || make_checkpoint_dir(o->checkpoint_dir, why, sizeof why) == 0)
        return;
    fprintf(stderr, "%s: --checkpoint_dir %s: %s; give a directory you can write to (see --help)\n",
            o->program, o->checkpoint_dir, why);
    exit(2);
}

/* --graph and --trace are written after training: a file whose directory
 * cannot be written to is an error of its flag now, not after minutes of
 * training. */
static inline void require_writable_file(const char *program, const char *flag, const char *path)
{
    if (!path)
        return;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        errno = ENOTDIR;
    else if (access(dir, W_OK) == 0)
        return;
    fprintf(stderr, "%s: %s %s: cannot write into %s: %s; give a file in a directory you can write to (see --help)\n",
            program, flag, path, dir, strerror(errno));
    exit(2);
}

/* Parses argv into o and, through extra, the lab's own options. --help
 * prints usage and exits 0; anything wrong exits 2 with a message. */
static inline void parse_flags(int argc, char **argv, training_flags *o, const lab_flags *extra,
                        void (*usage)(FILE *out))
{
    static const char *const training[] = {
        "--epochs", "--train_steps", "--batch_size", "--learning_rate", "--warmup_steps", "--data_dir", "--seed",
        "--checkpoint_dir", "--save_every", "--graph", "--graph_detail", "--graph_depth", "--trace",
        "--log_every", "--max_examples", "--log_dir", "--histogram_every"};
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *arg = argv[i], *value = NULL, *eq = strchr(arg, '=');
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "%s: unexpected argument '%s'; flags start with -- (see --help)\n",
                    o->program, arg);
            exit(2);
        }
        snprintf(flag, sizeof flag, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        if (strcmp(flag, "--log_device_placement") == 0 && !eq) {
            o->log_device_placement = true;
            continue;
        }
        if (strcmp(flag, "--print_stats") == 0 && !eq) {
            o->print_stats = true;
            continue;
        }
        if (extra && extra->set_switch && extra->set_switch(arg, extra->lab_options))
            continue;
        bool is_training = false, is_extra = false;
        for (size_t k = 0; k < sizeof training / sizeof training[0]; k++)
            is_training = is_training || strcmp(flag, training[k]) == 0;
        for (int k = 0; extra && k < extra->count; k++)
            is_extra = is_extra || strcmp(flag, extra->names[k]) == 0;
        if (!is_training && !is_extra) {
            fprintf(stderr, "%s: unknown flag %s (see --help)\n", o->program, flag);
            exit(2);
        }
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            fprintf(stderr, "%s: %s needs a value (see --help)\n", o->program, flag);
            exit(2);
        }
        if (is_extra)
            extra->set(flag, value, extra->lab_options);
        else
            parse_training_flag(flag, value, o);
    }
    require_checkpoint_dir(o);
    require_writable_file(o->program, "--graph", o->graph_path);
    require_writable_file(o->program, "--trace", o->trace_path);
}

#endif
