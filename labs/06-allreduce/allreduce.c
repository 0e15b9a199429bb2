/* allreduce.c: chapter 6's lab. Chapter 1's network trained by N processes
 * started with `mpirun -np N`, each with its own device and a full copy of
 * the variables: no parameter server at all. Rank 0 initialises the
 * variables and broadcasts them. Every step each rank computes the gradients
 * of its slice of the global batch, the ranks sum them (MPI_Allreduce, or
 * the ring of ring_allreduce.c with --allreduce ring) and divide by N, and
 * every rank applies the same averaged gradients with Adam, so the copies
 * stay identical: each rank prints a checksum of its variables at the end.
 * As Horovod does, a communication thread sums each gradient while the
 * backward pass computes the next (--overlap), small ones fused into one
 * buffer (--fusion_threshold).
 * The model, flags, data and evaluation are chapter 1's (labs/common/); what
 * is new is the step (allreduce_step), replicas.c and reducer.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "flowlab.h"
#include "../common/data.h"
#include "../common/devices.h"
#include "../common/evaluate.h"
#include "../common/flags.h"
#include "../common/model.h"
#include "../common/train_loop.h"
#include "nccl_allreduce.h"
#include "reducer.h"
#include "replicas.h"

/* This lab's name, which starts its messages. */
static const char program[] = "allreduce";

#define MAX_VARS 16 /* the model has 8 trainable variables */

typedef struct {
    const char *device;          /* each rank's own device: /gpu:0 of its process */
    allreduce_algorithm algorithm;
    bool overlap;                /* reduce during the backward pass, on a thread */
    long fusion_threshold;       /* bytes fused into one collective at most */
} allreduce_flags;

/* HOROVOD_FUSION_THRESHOLD's default until Horovod 0.21, which made it 128 MiB. */
#define DEFAULT_FUSION_THRESHOLD (64L << 20)

/* This process's place in the job. */
typedef struct {
    int rank, size;
} job;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N %s [flags]\n"
            "   or: srun --mpi=pmix -n N %s [flags]   (under Slurm)\n"
            "Trains chapter 1's convolutional network with N processes, each with its own\n"
            "device and copy of the variables; every step the gradients are summed over the\n"
            "processes (allreduce), averaged and applied by each. Rank 0 prints the progress\n"
            "and the test accuracy; every rank prints a checksum of its variables at the end.\n"
            "Each process gets one single-core PoCL device unless POCL_DEVICES is set.\n"
            "  --allreduce mpi|ring|shared|nccl  sum with MPI_Allreduce (default), the ring of\n"
            "                        this lab, the ranks' shared memory (all on one machine), or\n"
            "                        NCCL on each rank's GPU (CUDA builds with NCCL; one GPU per\n"
            "                        rank, e.g. CUDA_VISIBLE_DEVICES set per rank)\n"
            "  --overlap on|off      on (default): a communication thread sums each gradient as\n"
            "                        soon as it is ready, during the backward pass; off: all of\n"
            "                        them after it, on the main thread\n"
            "  --fusion_threshold BYTES  gradients ready together are fused into one collective\n"
            "                        of at most BYTES (default 67108864, 64 MiB, as Horovod\n"
            "                        before 0.21); 0: one collective per gradient\n"
            "  --device D            each process's device (default /gpu:0; falls back to /cpu:0;\n"
            "                        with --allreduce nccl, the GPU NCCL gives the rank)\n"
            "  --batch_size N        examples per step across all processes, the global batch;\n"
            "                        each gets N / processes (default 128)\n"
            TRAINING_FLAGS_HELP, program, program);
}

static void set_allreduce_flag(const char *flag, const char *value, void *options)
{
    allreduce_flags *a = options;
    if (strcmp(flag, "--allreduce") == 0) {
        if (!allreduce_algorithm_parse(value, &a->algorithm))
            bad_flag(program, flag, value, "it must be mpi, ring, shared or nccl");
    } else if (strcmp(flag, "--overlap") == 0) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            bad_flag(program, flag, value, "it must be on or off");
        a->overlap = strcmp(value, "on") == 0;
    } else if (strcmp(flag, "--fusion_threshold") == 0) {
        a->fusion_threshold = parse_count(program, flag, value, 0);
    } else if (strcmp(flag, "--device") == 0) {
        char canonical[64];
        canonical_device(program, flag, value, canonical, sizeof canonical); /* exits 2 if invalid */
        if (strchr(canonical + 1, '/')) /* "/job:worker/task:0/gpu:0" */
            bad_flag(program, flag, value, "give a device of this process, such as /gpu:0");
        a->device = value;
    }
}

/* As labs/tools/launch_cluster does for its tasks: one single-core PoCL
 * device per process, so N ranks on N cores do not fight over threads.
 * Set before anything opens OpenCL; a caller's choice is kept. */
static void one_pocl_device_per_process(void)
{
    if (getenv("POCL_DEVICES"))
        return;
    setenv("POCL_DEVICES", "pthread", 1);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
}

/* Open MPI busy-polls while a collective waits for the other ranks. Here
 * the ranks' devices are CPU threads too, and a communication thread that
 * spins during the backward pass takes a core from them (measured on 2
 * cores: 11% fewer images/sec with --overlap on, 2% once it yields). Set
 * before MPI_Init_thread; a caller's choice is kept; other MPIs ignore it. */
static void yield_while_waiting(void)
{
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

/* Stops the whole job: one rank that gives up would leave the others
 * waiting in the next collective forever. */
static void abort_job(const job *j, const char *what, const char *why)
{
    fprintf(stderr, "%s: rank %d: %s: %s\n", program, j->rank, what, why);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached */
}

/* What build_graph makes. */
typedef struct {
    fl_node *image, *label, *loss, *accuracy, *global_step, *train_op, *init;
    int nvars;
    fl_node *grads[MAX_VARS];    /* this rank's gradients, fetched every step */
    fl_node *reduced[MAX_VARS];  /* placeholders for the gradients reduced over the ranks, fed to train_op */
    variable_io io;
} replica_graph;

/* Chapter 1's model and loss, its fl_minimize split in two, with placeholders
 * between for the gradients' sums over the ranks, divided by `ranks` inside
 * Adam's update (the session fuses the two); with ranks 0, NCCL's means. */
static void build_training(fl_graph *g, fl_optimizer *adam, int ranks, replica_graph *m)
{
    m->image = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image");
    m->label = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "label");
    fl_node *logits = core_model(g, m->image);
    fl_node *per_example = fl_sparse_softmax_cross_entropy_with_logits(g, m->label, logits, NULL);
    m->loss = fl_reduce_mean(g, per_example, NULL, 0, false, "loss");
    m->nvars = fl_trainable_variables(g, NULL, 0);
    if (m->nvars > MAX_VARS)
        return; /* the caller reports it, before pairs[] could overflow */
    // [book:compute_apply]
    fl_grad_var pairs[MAX_VARS];
    m->nvars = fl_compute_gradients(g, m->loss, NULL, 0, pairs);
    if (m->nvars < 0)
        return; /* the caller reports the graph's error */
    fl_name_scope_push(g, "averaged");
    fl_node *n = ranks > 0 ? fl_scalar(g, (float)ranks, "ranks") : NULL;
    for (int v = 0; v < m->nvars; v++) {
        m->grads[v] = pairs[v].grad;
        m->reduced[v] = fl_placeholder(g, FL_FLOAT32, fl_node_shape(pairs[v].var), "gradient");
        pairs[v].grad = n ? fl_div(g, m->reduced[v], n, "mean") : m->reduced[v];
    }
    fl_name_scope_pop(g);
    m->global_step = fl_get_or_create_global_step(g);
    m->train_op = fl_apply_gradients(adam, g, pairs, m->nvars, m->global_step, "train");
    // [end:compute_apply]
    fl_node *correct = fl_equal(g, fl_argmax(g, logits, 1, "prediction"), m->label, "correct");
    m->accuracy = fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false,
                                 "accuracy");
}

/* The whole graph on the rank's device. Ranks other than 0 draw their
 * initial values from another seed on purpose: only the broadcast makes the
 * copies equal, so the checksums would show a broadcast that went wrong. */
static void build_graph(fl_graph *g, fl_optimizer *adam, const training_flags *o,
                        const allreduce_flags *a, const job *j, replica_graph *m)
{
    fl_graph_set_random_seed(g, o->seed + (unsigned long)j->rank);
    fl_device_scope_push(g, a->device);
    build_training(g, adam, a->algorithm == ALLREDUCE_NCCL ? 0 : j->size, m);
    if (m->nvars > MAX_VARS)
        abort_job(j, "building the graph", "the model has more variables than MAX_VARS");
    m->init = fl_global_variables_initializer(g);
    if (variable_io_build(g, &m->io) != 0)
        abort_job(j, "building the graph", replicas_error());
    fl_device_pop(g);
    if (fl_graph_error(g))
        abort_job(j, "building the graph", fl_graph_error(g));
    for (int v = 0; v < m->nvars; v++)
        if (!m->grads[v])
            abort_job(j, "building the graph", "the loss does not depend on every variable");
}

/* Rows [rank*B/N, (rank+1)*B/N) of a global batch: this rank's slice. */
static fl_tensor *my_slice(const fl_tensor *batch, const job *j)
{
    fl_shape shape = batch->shape;
    int rows = shape.dims[0] / j->size;
    size_t row_bytes = (size_t)(fl_shape_size(shape) / shape.dims[0]) * 4; /* 4-byte elements */
    shape.dims[0] = rows;
    fl_tensor *slice = fl_tensor_new(batch->dtype, shape);
    memcpy(slice->data, (const char *)batch->data + (size_t)(j->rank * rows) * row_bytes,
           (size_t)rows * row_bytes);
    return slice;
}

/* fl_run_options' fetch_ready: each gradient goes to the communication
 * thread as soon as the run has it, already in its place in the reducer's
 * buffer (fetch_to): host memory, or with NCCL GPU memory, where it stays. */
static void hand_to_reducer(int index, const fl_tensor *value, void *user)
{
    reducer_tensor_ready(user, index, value);
}

/* Runs this rank's forward and backward pass on its slice, fetching the
 * gradients and the loss into out[0..nvars]: borrowed tensors in their
 * places in the reducer's buffer; with --overlap on, the reducer has each
 * as soon as it is ready, else all at the end. */
static int compute_gradients(fl_session *s, const replica_graph *m, const allreduce_flags *a,
                             reducer *r, const fl_tensor *images, const fl_tensor *labels,
                             const job *j, fl_tensor **out)
{
    fl_tensor *my_images = my_slice(images, j), *my_labels = my_slice(labels, j);
    fl_node *fetches[MAX_VARS + 1];
    memcpy(fetches, m->grads, (size_t)m->nvars * sizeof fetches[0]);
    fetches[m->nvars] = m->loss;
    fl_feed feeds[2] = {{m->image, my_images}, {m->label, my_labels}};
    fl_run_options options = {.fetch_ready = a->overlap ? hand_to_reducer : NULL, .user = r,
                              .fetch_to = reducer_fetch_to(r)};
    int rc = fl_session_run_with_options(s, &options, feeds, 2, fetches, m->nvars + 1, out, NULL,
                                         0);
    for (int i = 0; rc == 0 && !a->overlap && i <= m->nvars; i++)
        reducer_tensor_ready(r, i, out[i]);
    fl_tensor_free(my_images);
    fl_tensor_free(my_labels);
    return rc;
}

// [book:allreduce_step]
/* One synchronous step: gradients of this rank's slice, their mean over
 * the ranks (the loss's too, for the progress line), then the same update
 * applied by every rank. */
static void allreduce_step(fl_session *s, const replica_graph *m, const allreduce_flags *a,
                           reducer *r, const job *j, const fl_tensor *images,
                           const fl_tensor *labels, float *loss)
{
    fl_tensor *values[MAX_VARS + 1] = {0}; /* the gradients, then the loss */
    reducer_begin_step(r);
    if (compute_gradients(s, m, a, r, images, labels, j, values) != 0)
        abort_job(j, "computing the gradients", fl_session_error(s));
    if (reducer_wait(r) != 0)
        abort_job(j, "averaging the gradients", reducer_error(r));
    fl_tensor reduced[MAX_VARS]; /* views of the reducer's buffer (on the GPU with NCCL) */
    fl_feed feeds[MAX_VARS];
    for (int v = 0; v < m->nvars; v++) {
        reduced[v] = reducer_tensor(r, v, values[v]->shape);
        feeds[v] = (fl_feed){m->reduced[v], &reduced[v]};
    }
    if (fl_session_run(s, feeds, m->nvars, NULL, 0, NULL, &m->train_op, 1) != 0)
        abort_job(j, "applying the gradients", fl_session_error(s));
    *loss = reducer_mean_scalar(r, m->nvars);
    for (int v = 0; v <= m->nvars; v++)
        fl_tensor_free(values[v]);
}
// [end:allreduce_step]

/* Every rank reduces the loss first (the forward pass ends with it), then the gradients in
 * reverse variable order, as backpropagation finishes them (PyTorch DDP's buckets do too). */
static reducer *start_reducer(fl_session *s, const replica_graph *m, const allreduce_flags *a,
                              const job *j)
{
    reducer_plan plan = {.count = m->nvars + 1, .fusion_threshold = (size_t)a->fusion_threshold,
                         .algorithm = a->algorithm, .background = a->overlap,
                         .comm = MPI_COMM_WORLD, .trace = s, .device = a->device,
                         .keep_sums = a->algorithm != ALLREDUCE_NCCL}; /* the graph divides */
    plan.elements[m->nvars] = 1;
    plan.order[0] = m->nvars;
    for (int v = 0; v < m->nvars; v++) {
        plan.elements[v] = (size_t)fl_shape_size(fl_node_shape(m->reduced[v]));
        plan.order[1 + v] = m->nvars - 1 - v;
    }
    char why[512];
    reducer *r = reducer_start(&plan, why, sizeof why);
    if (!r)
        abort_job(j, "starting the reducer", why);
    /* --print_stats' bytes_per_step: the ring's and the window's; the libraries'
     * are unknown (reducer_bytes_moved stays -1, so the line says 0) */
    run_stats_count_traffic(reducer_bytes_moved, r);
    return r;
}

/* Every rank initialises, rank 0 restores --checkpoint_dir's latest
 * checkpoint if there is one, and all take rank 0's variables (Adam's
 * slots and the global step with them). Returns the step to resume at. */
static long start_replicas(fl_session *s, const training_flags *o, const replica_graph *m,
                           const job *j)
{
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &m->init, 1) != 0)
        abort_job(j, "initializing", fl_session_error(s));
    long step = 0;
    train_nodes nodes = {m->image, m->label, m->loss, m->train_op, m->global_step, NULL};
    if (restore_latest(s, o, &nodes, &step) != 0) /* said why */
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(&step, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    // [book:broadcast]
    if (broadcast_variables(s, &m->io, 0, MPI_COMM_WORLD) != 0)
        abort_job(j, "broadcasting rank 0's variables", replicas_error());
    // [end:broadcast]
    return step;
}

/* After each step: the trace of steps 2 to 4 and the checkpoints, which
 * only rank 0's flags ask for (the ranks' variables are the same). */
static void after_step(fl_session *s, const training_flags *o, train_progress *p, const job *j)
{
    if (o->trace_path && p->step - p->first_step == 4)
        write_trace(s, o);
    if (o->checkpoint_dir && p->step % o->save_every == 0) {
        if (fl_session_save(s, o->checkpoint_dir, p->step) != 0)
            abort_job(j, "--checkpoint_dir", fl_last_error());
        p->last_saved = p->step;
    }
}

/* Runs steps until total_steps updates have been made in all or the epochs
 * are over. Every rank reads the same shuffled global batches (the same
 * --seed) and trains on its own slice of each; rank 0 prints the progress,
 * with the images per second of the whole job. */
static void train_replicas(fl_session *s, const training_flags *o, const allreduce_flags *a,
                           reducer *r, const replica_graph *m, const job *j, const lab_data *d,
                           long total_steps, long first_step)
{
    fl_dataset *train_set = open_train_set(o, d, true); /* every batch splits evenly */
    if (!train_set)
        MPI_Abort(MPI_COMM_WORLD, 1);
    skip_trained_batches(train_set, first_step);
    train_progress p = {.step = first_step, .first_step = first_step, .last_saved = first_step,
                        .last_log_time = now_seconds()};
    const fl_tensor *images = NULL, *labels = NULL;
    while (p.step < total_steps) {
        int got = fl_dataset_next(train_set, &images, &labels);
        if (got == 0)
            break; /* the epochs are over, on every rank alike */
        if (got < 0)
            abort_job(j, "reading the training data", fl_last_error());
        trace_before_step(s, o, p.step - p.first_step);
        float loss = 0;
        allreduce_step(s, m, a, r, j, images, labels, &loss);
        if (loss_not_finite(program, "", p.step, loss)) /* the same mean loss on every rank */
            abort_job(j, "training", "stopped on a loss that is not a number");
        summarize_step(s, p.step, loss); /* rank 0 alone opened the summaries */
        p.images_since_log += images->shape.dims[0]; /* the global batch: the whole job's */
        if (j->rank == 0 && (p.step % o->log_every == 0 || p.step == p.first_step))
            log_progress(&p, loss);
        p.step++;
        after_step(s, o, &p, j);
    }
    long measured = p.step - p.first_step - 1; /* from the second step on, the whole job's images */
    if (o->print_stats && j->rank == 0)
        print_run_stats(measured, measured * o->batch_size);
    if (finish_training(s, o, &p) != 0) /* said why */
        MPI_Abort(MPI_COMM_WORLD, 1);
    fl_dataset_free(train_set);
}

/* Every rank's checksum, compared by the test: equal checksums, equal copies. */
static void report_checksum(fl_session *s, const replica_graph *m, const job *j)
{
    uint64_t checksum = 0;
    if (variables_checksum(s, &m->io, &checksum) != 0)
        abort_job(j, "reading the variables", replicas_error());
    print_checksums_in_rank_order(checksum, MPI_COMM_WORLD);
}

/* Rank 0's line saying where the ranks train and how they sum. */
static void report_devices(const allreduce_flags *a, const job *j)
{
    char wanted[64];
    canonical_device(program, "--device", a->device, wanted, sizeof wanted);
    fl_device_info devices[16];
    int count = fl_list_devices(devices, 16);
    const fl_device_info *found = NULL;
    for (int i = 0; i < count; i++)
        found = strcmp(devices[i].name, wanted) == 0 ? &devices[i] : found;
    const char *sum = allreduce_algorithm_name(a->algorithm);
    if (found)
        printf("%d process%s, each training on its own %s (%s, %s); gradients summed by %s",
               j->size, j->size == 1 ? "" : "es", wanted, found->description, found->backend, sum);
    else
        printf("%d process%s; no %s here, each training on /cpu:0; gradients summed by %s",
               j->size, j->size == 1 ? "" : "es", wanted, sum);
    printf(" %s, fused up to %ld bytes\n",
           a->overlap ? "during the backward pass" : "after the backward pass", a->fusion_threshold);
}

/* The steps to run, from the data; prints rank 0's first line. Exits 2
 * when the global batch does not split evenly into the ranks. */
static long plan_steps(const training_flags *o, const lab_data *d, const job *j)
{
    if (o->batch_size % j->size != 0) {
        if (j->rank == 0)
            fprintf(stderr, "%s: --batch_size %d does not split evenly into %d processes; use "
                    "a multiple of %d (see --help)\n", program, o->batch_size, j->size, j->size);
        MPI_Finalize();
        exit(2);
    }
    /* Every batch must split evenly, so a short last batch of an epoch is dropped. */
    int train_count = d->train_images->shape.dims[0];
    long total_steps = o->train_steps > 0 ? o->train_steps : o->epochs * (train_count / o->batch_size);
    if (j->rank == 0)
        printf("%d training and %d test examples, batch %d (%d per process): %ld steps\n",
               train_count, d->test_images->shape.dims[0], o->batch_size, o->batch_size / j->size,
               total_steps);
    return total_steps;
}

/* MPI_THREAD_SERIALIZED: the communication thread makes the collectives
 * during a step, the main thread the others between steps, never two at
 * once (Horovod asks no more). Exits 2 when --overlap on cannot have it. */
static job start_mpi(int *argc, char ***argv, const allreduce_flags *a)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    job j;
    MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j.size);
    if (a->overlap && provided < MPI_THREAD_SERIALIZED) {
        if (j.rank == 0)
            fprintf(stderr, "%s: --overlap on needs MPI_THREAD_SERIALIZED, and this MPI grants "
                    "only level %d; use --overlap off\n", program, provided);
        MPI_Finalize();
        exit(2);
    }
    return j;
}

int main(int argc, char **argv)
{
    training_flags o = training_flags_defaults(program);
    allreduce_flags a = {.device = "/gpu:0", .algorithm = ALLREDUCE_MPI, .overlap = true,
                         .fusion_threshold = DEFAULT_FUSION_THRESHOLD};
    static const char *const lab_flag_names[] = {"--allreduce", "--device", "--overlap",
                                                 "--fusion_threshold"};
    lab_flags extra = {lab_flag_names, 4, set_allreduce_flag, &a, NULL};
    one_pocl_device_per_process();
    yield_while_waiting();
    /* Before MPI_Init: --help and a bad flag exit at once, alike on every rank. */
    parse_flags(argc, argv, &o, &extra, usage);
    job j = start_mpi(&argc, &argv, &a);
    /* Rank 0 alone writes the checkpoints, the trace, the graph and the summaries, and logs placement. */
    if (j.rank != 0) {
        o.checkpoint_dir = o.trace_path = o.graph_path = o.log_dir = NULL;
        o.log_device_placement = false;
    }

    lab_data data;
    if (load_data(o.data_dir, o.max_examples, &data) != 0) {
        if (j.rank == 0) /* every rank fails alike */
            fprintf(stderr, "%s: %s\n", program, fl_last_error());
        MPI_Finalize();
        return 1;
    }
    long total_steps = plan_steps(&o, &data, &j);
    char why[256], gpu[16];
    if (a.algorithm == ALLREDUCE_NCCL && nccl_open(MPI_COMM_WORLD, why, sizeof why) != 0) {
        fprintf(stderr, "%s: rank %d: --allreduce nccl: %s\n", program, j.rank, why);
        MPI_Finalize();
        return 2;
    }
    if (a.algorithm == ALLREDUCE_NCCL && nccl_training_device(gpu, sizeof gpu, why, sizeof why) != 0)
        abort_job(&j, "--allreduce nccl", why);
    a.device = a.algorithm == ALLREDUCE_NCCL ? gpu : a.device; /* the gradients stay where NCCL sums */
    fl_graph *g = fl_graph_new();
    fl_optimizer *adam = fl_adam_optimizer(o.learning_rate, 0.9f, 0.999f, 1e-8f);
    replica_graph m = {0};
    run_stats_build_started(); /* --print_stats */
    build_graph(g, adam, &o, &a, &j, &m);
    run_stats_build_done(g);
    fl_session_options config = {.allow_soft_placement = true,
                                 .log_device_placement = o.log_device_placement};
    fl_session *s = fl_session_new(g, &config);
    if (j.rank == 0)
        report_devices(&a, &j);
    open_summaries(program, o.log_dir, o.histogram_every, g); /* rank 0's --log_dir */
    long step = start_replicas(s, &o, &m, &j);
    reducer *r = start_reducer(s, &m, &a, &j);
    train_replicas(s, &o, &a, r, &m, &j, &data, total_steps, step);
    reducer_stop(r);
    report_checksum(s, &m, &j);
    int rc = j.rank == 0 ? report_test_accuracy(s, &o, m.image, m.label, m.accuracy, &data) : 0;
    fl_session_free(s);
    fl_optimizer_free(adam);
    fl_graph_free(g);
    free_data(&data);
    nccl_close();
    MPI_Finalize();
    return rc;
}
