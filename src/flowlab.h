/* flowlab.h: the core's public header (libflowlab.a, pkg-config flowlab).
 * Graphs, sessions, automatic differentiation, optimizers, devices, data and
 * checkpoints, named after TensorFlow 1.x where users already know the names.
 * A program of a cluster (chapter 3 on) includes flowlab_cluster.h too. */
#ifndef FLOWLAB_H
#define FLOWLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Errors.
 * Graph building records the first error in the graph (fl_graph_error) and
 * every later builder given a NULL input returns NULL quietly, so a lab can
 * build a whole model and check once. Everything else returns -1 or NULL and
 * leaves a message for fl_last_error() (per thread) or fl_session_error().
 * ------------------------------------------------------------------------ */
const char *fl_last_error(void);

/* Beside each message, a code (TensorFlow's canonical codes, tf_status.h) to
 * branch on, never the text: set with the message and kept when a caller
 * adds context to it; fl_session_error_code gives the one that failed a
 * session's last run. FL_UNKNOWN where none fits, FL_OK when no error was
 * recorded. The monitored session tries again after FL_UNAVAILABLE and
 * FL_ABORTED only. */
typedef enum {
    FL_OK = 0,
    FL_CANCELLED = 1,
    FL_UNKNOWN = 2,
    FL_INVALID_ARGUMENT = 3,   /* a bad argument, shape, dtype, feed or flag */
    FL_DEADLINE_EXCEEDED = 4,  /* waited past a deadline (FLOWLAB_TASK_DEADLINE) */
    FL_NOT_FOUND = 5,          /* no such file, node, variable, checkpoint or device */
    FL_ALREADY_EXISTS = 6,
    FL_PERMISSION_DENIED = 7,
    FL_RESOURCE_EXHAUSTED = 8, /* a fixed table or a device's memory is full */
    FL_FAILED_PRECONDITION = 9, /* e.g. a variable read before it is initialized */
    FL_ABORTED = 10,           /* a synchronous step abandoned: try it again */
    FL_OUT_OF_RANGE = 11,
    FL_UNIMPLEMENTED = 12,     /* e.g. no kernel for an op on a device */
    FL_INTERNAL = 13,
    FL_UNAVAILABLE = 14,       /* a task did not answer or the connection was lost */
    FL_DATA_LOSS = 15,         /* a corrupted checkpoint or frame */
    FL_UNAUTHENTICATED = 16,   /* a peer without the cluster secret, or a refusal by one that has it */
} fl_error_code;
fl_error_code fl_last_error_code(void);
const char *fl_error_code_name(fl_error_code code); /* "UNAVAILABLE" */
/* Untrusted bytes (a name from a checkpoint or a peer, TF_CONFIG) made fit
 * for a log line: bytes outside ' '..'~' become \xNN and a backslash \\.
 * Writes at most outlen bytes with the '\0' (4*len + 1 holds any input; a
 * shorter out is cut between escapes) and returns the length. */
size_t fl_escape_untrusted(const char *in, size_t len, char *out, size_t outlen);

/* ------------------------------------------------------------------------
 * Tensors: float32 or int32, rank 0 to 4, row-major; images are NHWC.
 * ------------------------------------------------------------------------ */
#define FL_MAX_RANK 4

typedef enum { FL_FLOAT32 = 0, FL_INT32 = 1, FL_UINT8 = 2 /* host data only: image bytes for fl_dataset */ } fl_dtype;

/* A dimension of -1 means "not known until run time" (TensorFlow's None). */
typedef struct {
    int rank;
    int dims[FL_MAX_RANK];
} fl_shape;

typedef struct fl_tensor {
    fl_dtype dtype;
    fl_shape shape;
    void *data;         /* shape_size(shape) elements, in host memory unless device is set */
    const char *device; /* NULL: host memory; "/gpu:0": that device's (a CUDA pointer, an
                         * OpenCL cl_mem), read with fl_device_buffer_read; "/cpu:0": host */
    bool borrowed;      /* data is someone else's: fl_tensor_free frees only the struct */
} fl_tensor;

fl_shape fl_shape_make(int rank, ...); /* fl_shape_make(2, 128, 784) */
int64_t fl_shape_size(fl_shape shape); /* number of elements; -1 if unknown */
bool fl_shape_equal(fl_shape a, fl_shape b);
/* "[128,3136]", "[?,784]", "[]" for a scalar; returns buf. */
const char *fl_shape_format(fl_shape shape, char *buf, size_t len);
const char *fl_dtype_name(fl_dtype dtype); /* "float32", "int32" */

fl_tensor *fl_tensor_new(fl_dtype dtype, fl_shape shape); /* zero-filled; NULL past fl_max_tensor_bytes */
fl_tensor *fl_tensor_from_floats(fl_shape shape, const float *values);
fl_tensor *fl_tensor_from_ints(fl_shape shape, const int32_t *values);
fl_tensor *fl_tensor_copy(const fl_tensor *t); /* host tensors only */
size_t fl_max_tensor_bytes(void); /* a node's output past it fails the run, RESOURCE_EXHAUSTED naming it */
void fl_set_max_tensor_bytes(size_t bytes); /* 0: the default, FLOWLAB_MAX_TENSOR_BYTES or half of RAM */
void fl_tensor_free(fl_tensor *t); /* data too, unless borrowed or on a device */
float *fl_tensor_floats(const fl_tensor *t);   /* NULL unless float32 */
int32_t *fl_tensor_ints(const fl_tensor *t);   /* NULL unless int32 */
float fl_tensor_scalar(const fl_tensor *t);    /* element 0 as a float; 0 for NULL or empty, NaN on an
                                                * accelerator (fl_device_buffer_read reads it) */
/* Gives t a new shape of as many elements, in place, its data as it is (row-major); one dimension
 * may be -1, worked out: fl_tensor_reshape(images, fl_shape_make(2, -1, 784)) flattens fl_mnist_load's
 * [N,28,28,1]. 0, or -1 (t unchanged) and fl_last_error() names both shapes. */
int fl_tensor_reshape(fl_tensor *t, fl_shape shape);

/* ------------------------------------------------------------------------
 * Graphs and nodes.  A node is one operation with one output tensor.
 * ------------------------------------------------------------------------ */
typedef struct fl_graph fl_graph;
typedef struct fl_node fl_node;

fl_graph *fl_graph_new(void);
void fl_graph_free(fl_graph *g);
const char *fl_graph_error(const fl_graph *g); /* NULL while all is well */
void fl_graph_clear_error(fl_graph *g);
void fl_graph_set_random_seed(fl_graph *g, uint64_t seed);
int fl_graph_node_count(const fl_graph *g);
fl_node *fl_graph_node(const fl_graph *g, int index); /* creation order */
fl_node *fl_graph_find(const fl_graph *g, const char *name);

/* Asked about a NULL node (a builder's refusal), these answer NULL, 0 or an
 * unknown shape (rank -1); graph calls given a NULL graph refuse it. */
const char *fl_node_name(const fl_node *n);      /* "tower_0/dense/MatMul" */
const char *fl_node_op_type(const fl_node *n);   /* "MatMul" */
fl_dtype fl_node_dtype(const fl_node *n);
fl_shape fl_node_shape(const fl_node *n);        /* as inferred at build time */
const char *fl_node_device(const fl_node *n);    /* requested device, "" if none */
int fl_node_input_count(const fl_node *n);
fl_node *fl_node_input(const fl_node *n, int index);

/* Name scopes prefix node names: "tower_0/" + "MatMul". Unique names get a
 * suffix: a second "MatMul" in the same scope becomes "MatMul_1". */
int fl_name_scope_push(fl_graph *g, const char *name);
void fl_name_scope_pop(fl_graph *g);

/* Variable scopes prefix variable names and decide what get_variable does
 * when the variable exists. Reuse is inherited by inner scopes. */
typedef enum {
    FL_REUSE_INHERIT = 0, /* whatever the enclosing scope says (top: no reuse) */
    FL_REUSE = 1,         /* get_variable returns the existing variable */
    FL_AUTO_REUSE = 2,    /* create if missing, return if present */
} fl_reuse;
int fl_variable_scope_push(fl_graph *g, const char *name, fl_reuse reuse);
void fl_variable_scope_pop(fl_graph *g);

/* Device scopes and device functions share one stack; the innermost wins.
 * Device strings: "/cpu:0", "/gpu:1", "/device:GPU:1",
 * "/job:worker/task:0/gpu:0" (parsed, but a session refuses to place a node
 * on a cluster task until chapter 3); "" places nothing. A device function returns
 * the device for a node about to be added (it may read its op type, inputs
 * and name) or NULL to leave the choice to outer scopes. */
typedef const char *(*fl_device_fn)(const fl_node *node, void *user);
int fl_device_scope_push(fl_graph *g, const char *device);
int fl_device_function_push(fl_graph *g, fl_device_fn fn, void *user);
void fl_device_pop(fl_graph *g);

/* Nodes built while a control scope is open run after the given nodes. */
int fl_control_dependencies_push(fl_graph *g, fl_node *const *nodes, int n);
void fl_control_dependencies_pop(fl_graph *g);
int fl_add_control_input(fl_graph *g, fl_node *node, fl_node *before);

/* ------------------------------------------------------------------------
 * Sources: placeholders, constants, variables.
 * Every builder takes an optional name (NULL: the op's own name).
 * ------------------------------------------------------------------------ */
fl_node *fl_placeholder(fl_graph *g, fl_dtype dtype, fl_shape shape, const char *name);
fl_node *fl_constant(fl_graph *g, const fl_tensor *value, const char *name);
fl_node *fl_scalar(fl_graph *g, float value, const char *name);

typedef enum {
    FL_INIT_ZEROS,
    FL_INIT_CONSTANT,
    FL_INIT_RANDOM_UNIFORM,
    FL_INIT_TRUNCATED_NORMAL,
    FL_INIT_GLOROT_UNIFORM,
} fl_init_kind;

typedef struct {
    fl_init_kind kind;
    float value;          /* constant */
    float minval, maxval; /* random uniform */
    float mean, stddev;   /* truncated normal (redrawn beyond 2 stddev) */
    uint64_t seed;        /* op seed; 0 picks one from the graph's counter */
} fl_initializer;

fl_initializer fl_zeros_initializer(void);
fl_initializer fl_constant_initializer(float value);
fl_initializer fl_random_uniform_initializer(float minval, float maxval, uint64_t seed);
fl_initializer fl_truncated_normal_initializer(float mean, float stddev, uint64_t seed);
fl_initializer fl_glorot_uniform_initializer(uint64_t seed);

/* Where the initial value is computed: not beside the variable, as
 * TensorFlow colocates it, but on a host CPU. The initializer's value op
 * ("w/Initializer": the zeros, the random numbers) gets no device, so it
 * runs on /cpu:0 of whichever process runs it; only the Assign is colocated
 * with the variable and takes the value across. A variable on a GPU gets it
 * copied from the host. A variable on a ps task (chapter 3) gets it from
 * the worker that runs the initializer (the chief under a monitored
 * session), computed there: a ps holds values and computes none. In the
 * client of a cluster (in-graph across tasks) the value op runs on
 * /job:worker/task:0/cpu:0 and the value goes from worker 0 to the variable's
 * task. */
/* A trainable float32 variable named by the variable scope: "dense/kernel". */
fl_node *fl_get_variable(fl_graph *g, const char *name, fl_shape shape, fl_initializer init);
fl_node *fl_get_variable_typed(fl_graph *g, const char *name, fl_dtype dtype, fl_shape shape,
                               fl_initializer init, bool trainable);
/* The int32 scalar "global_step", not trainable; created once. */
fl_node *fl_get_or_create_global_step(fl_graph *g);
int fl_trainable_variables(const fl_graph *g, fl_node **out, int max); /* returns count */
int fl_global_variables(const fl_graph *g, fl_node **out, int max);    /* slots too */
fl_node *fl_global_variables_initializer(fl_graph *g);

/* ------------------------------------------------------------------------
 * Operations. Shapes are checked when a node is built and again at run time.
 * Binary element-wise ops broadcast a scalar, or a tensor whose shape is a
 * suffix of the other's (a bias [C] against [N,C] or [N,H,W,C]).
 * ------------------------------------------------------------------------ */
fl_node *fl_matmul(fl_graph *g, fl_node *a, fl_node *b, bool transpose_a, bool transpose_b, const char *name);
fl_node *fl_add(fl_graph *g, fl_node *a, fl_node *b, const char *name);
fl_node *fl_sub(fl_graph *g, fl_node *a, fl_node *b, const char *name);
fl_node *fl_mul(fl_graph *g, fl_node *a, fl_node *b, const char *name);
fl_node *fl_div(fl_graph *g, fl_node *a, fl_node *b, const char *name);
fl_node *fl_add_n(fl_graph *g, fl_node *const *inputs, int n, const char *name);
fl_node *fl_relu(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_sigmoid(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_tanh(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_softplus(fl_graph *g, fl_node *x, const char *name); /* log(1 + e^x) */
fl_node *fl_softmax(fl_graph *g, fl_node *logits, const char *name); /* last axis */
/* labels int32 [N], logits float32 [N,C] -> per-example loss [N]. */
fl_node *fl_sparse_softmax_cross_entropy_with_logits(fl_graph *g, fl_node *labels,
                                                     fl_node *logits, const char *name);
/* axes NULL or naxes 0: reduce over every axis. */
fl_node *fl_reduce_sum(fl_graph *g, fl_node *x, const int *axes, int naxes, bool keep_dims,
                       const char *name);
fl_node *fl_reduce_mean(fl_graph *g, fl_node *x, const int *axes, int naxes, bool keep_dims,
                        const char *name);
fl_node *fl_reshape(fl_graph *g, fl_node *x, fl_shape shape, const char *name); /* one -1 allowed */
fl_node *fl_concat(fl_graph *g, fl_node *const *inputs, int n, int axis, const char *name);
/* Splits x into num equal parts along axis; writes num nodes to out. */
int fl_split(fl_graph *g, fl_node *x, int num, int axis, fl_node **out, const char *name);
fl_node *fl_slice(fl_graph *g, fl_node *x, int axis, int begin, int size, const char *name);

typedef enum { FL_SAME = 0, FL_VALID = 1 } fl_padding;
/* input [N,H,W,Cin], filter [KH,KW,Cin,Cout] -> [N,OH,OW,Cout]. */
fl_node *fl_conv2d(fl_graph *g, fl_node *input, fl_node *filter, int stride_h, int stride_w,
                   fl_padding padding, const char *name);
fl_node *fl_max_pool2d(fl_graph *g, fl_node *input, int ksize_h, int ksize_w, int stride_h,
                       int stride_w, fl_padding padding, const char *name);

fl_node *fl_argmax(fl_graph *g, fl_node *x, int axis, const char *name); /* int32 */
fl_node *fl_equal(fl_graph *g, fl_node *a, fl_node *b, const char *name); /* int32 0/1 */
fl_node *fl_cast(fl_graph *g, fl_node *x, fl_dtype dtype, const char *name);
fl_node *fl_identity(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_stop_gradient(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_assign(fl_graph *g, fl_node *variable, fl_node *value, const char *name);
fl_node *fl_assign_add(fl_graph *g, fl_node *variable, fl_node *value, const char *name);
/* A node with no output that runs after all of nodes: a train op, an init op. */
fl_node *fl_group(fl_graph *g, fl_node *const *nodes, int n, const char *name);

/* ------------------------------------------------------------------------
 * Gradients and optimizers.
 * compute_gradients and apply_gradients are separate steps so that towers
 * can compute on their devices and one controller can average and apply.
 * ------------------------------------------------------------------------ */
typedef struct {
    fl_node *grad; /* NULL when the loss does not depend on var */
    fl_node *var;
} fl_grad_var;

/* d(ys)/d(xs) summed over ys' elements; grads[i] NULL where xs[i] is unused. */
int fl_gradients(fl_graph *g, fl_node *ys, fl_node *const *xs, int n, fl_node **grads);
/* vars NULL: every trainable variable (nvars 0, or out's room, checked).
 * Writes one pair per variable to out; returns the count, or -1. */
int fl_compute_gradients(fl_graph *g, fl_node *loss, fl_node *const *vars, int nvars,
                         fl_grad_var *out);

typedef struct fl_optimizer fl_optimizer;
fl_optimizer *fl_gradient_descent_optimizer(float learning_rate);
fl_optimizer *fl_momentum_optimizer(float learning_rate, float momentum, bool use_nesterov);
fl_optimizer *fl_adam_optimizer(float learning_rate, float beta1, float beta2, float epsilon);
void fl_optimizer_free(fl_optimizer *opt);
/* Sets the rate of every update op opt has built, for the next session run
 * (a warm-up or decay schedule); in-process devices only. */
void fl_optimizer_set_learning_rate(fl_optimizer *opt, float learning_rate);
/* Builds the update ops (slot variables sit beside their variable) and, when
 * global_step is given, increments it after every update. Pairs with a NULL
 * grad are skipped. Returns the train op. */
fl_node *fl_apply_gradients(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                            fl_node *global_step, const char *name);
/* The same, with pairs[i]'s update op in the name scope scopes[i] within
 * name's (NULL: none), so that a trace names what each update serves
 * ("train/dense_1/ApplyAdam"); Adam's beta powers and the step's increment
 * are built once for all the pairs, as by fl_apply_gradients. */
fl_node *fl_apply_gradients_scoped(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                   const char *const *scopes, fl_node *global_step, const char *name);
fl_node *fl_minimize(fl_optimizer *opt, fl_graph *g, fl_node *loss, fl_node *global_step,
                     const char *name);

/* ------------------------------------------------------------------------
 * Devices.
 * ------------------------------------------------------------------------ */
typedef struct {
    char name[32];         /* "/cpu:0", "/gpu:1" */
    char description[128]; /* the driver's name for it */
    char backend[16];      /* "host", "opencl", "cuda" */
    uint64_t memory_bytes;
    int compute_units;
} fl_device_info;

/* Lists /cpu:0 and each /gpu:N of the active backend; returns the count
 * (<= max; out NULL: how many there are). When there is no accelerator,
 * fl_last_error() says why. */
int fl_list_devices(fl_device_info *out, int max);
/* A program's own buffer on a device ("/gpu:0", "/cpu:0"), for fetch_to and
 * device feeds without CUDA or OpenCL code of its own. Read and write block. */
void *fl_device_buffer_alloc(const char *device, size_t bytes); /* NULL: fl_last_error says why */
void fl_device_buffer_free(const char *device, void *buffer);
int fl_device_buffer_read(const char *device, const void *buffer, void *host, size_t bytes);
int fl_device_buffer_write(const char *device, void *buffer, const void *host, size_t bytes);

/* Each accelerator backend this flowlab was built with, in the order the
 * automatic choice tries them: how many devices it has on this machine and,
 * when none, why ("no NVIDIA driver: libcuda.so.1 not found ..."). A backend
 * kept in a module (CUDA) is opened only when its driver answers. Returns
 * the count (<= max; out NULL: how many were built in). */
typedef struct {
    char name[16];             /* "cuda", "opencl" */
    int devices;               /* 0: unavailable here */
    bool active;               /* the backend behind /gpu:N */
    char why_unavailable[256]; /* "" when it has devices */
} fl_backend_info;
int fl_list_backends(fl_backend_info *out, int max);

/* ------------------------------------------------------------------------
 * Sessions.
 * ------------------------------------------------------------------------ */
typedef struct fl_cluster fl_cluster; /* chapter 3: flowlab_cluster.h (libflowlab_cluster.a) */
typedef struct fl_device fl_device;   /* a device behind the backend seam (src/device.h) */
typedef struct fl_feed {
    fl_node *node;
    const fl_tensor *value; /* read in place where the device's memory is the host's; device set: copied there */
} fl_feed;

typedef struct {
    bool log_device_placement; /* print each node's device on first use */
    bool allow_soft_placement; /* fall back to /cpu:0 when a device or kernel is missing */
    uint64_t seed;             /* nonzero: overrides the graph's random seed */
    /* The cluster itself (flowlab_cluster.h), which the session uses but
     * does not own: free it after the sessions that use it. A task's (fl_cluster_from_flags,
     * TF_CONFIG, a launcher's): between-graph replication, a worker's
     * session cuts its graph by task: a node on "/job:ps/task:0/cpu:0" runs
     * on that task, one on the local task's devices runs here.
     * A client's (fl_cluster_client_from_flags): in-graph replication across
     * tasks, every run goes to the tasks. NULL: devices that name a task are
     * refused. A pointer to something else (cast to fl_cluster), or to a
     * cluster already freed whose memory was not reused, makes
     * fl_session_new fail with a message instead of a crash. */
    const fl_cluster *cluster;
    /* Run every op as the graph has it: no Conv2D/MatMul + bias + Relu, or
     * MaxPoolGrad + ReluGrad, as one kernel (FLOWLAB_FUSION=0 does the same). */
    bool disable_fusion;
    /* A value's buffer goes back to its device's pool once its last reader
     * is issued, as TensorFlow's allocator frees a tensor at its last
     * reference; off, each op keeps its own buffer between runs. */
    bool reuse_memory;
} fl_session_options;

typedef struct fl_session fl_session;

fl_session *fl_session_new(fl_graph *g, const fl_session_options *options); /* NULL: defaults */
void fl_session_free(fl_session *s);
const char *fl_session_error(const fl_session *s);
fl_error_code fl_session_error_code(const fl_session *s); /* FL_OK after a run that succeeded */
/* Runs what the fetches and targets need, feeding feeds. outputs[i] receives
 * a new host tensor for fetches[i] (free it with fl_tensor_free); when the
 * run fails (-1, fl_session_error says why) every outputs[i] is NULL.
 * Order: each node runs after its inputs and control inputs. Nodes are handed
 * to their devices in creation order, but one whose input is still being
 * computed on another device waits while later nodes go ahead; so, as in
 * TensorFlow, two nodes that do not depend on each other have no promised
 * order (add a control dependency when it matters). One promise holds: a
 * /cpu:0 op never overwrites a variable another device has yet to copy in. */
int fl_session_run(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                   int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets);
/* TensorFlow's RunOptions, for what flowlab has: a run that hands each
 * fetched value over as soon as its device has finished it, while the run
 * goes on (Horovod's and PyTorch DDP's hook). fetch_ready(index, value, user)
 * is called once per fetch, inside the run, on the caller's thread; value is
 * outputs[index] with its final value: read or copy it, do not free it (the
 * run frees it if the run then fails). A /cpu:0 value goes right after its
 * op, an OpenCL or CUDA one when the executor sees its mark passed, else at
 * the end. A run that fails before any node runs calls nothing. The
 * callback must not use the session (no nested run). */
typedef void (*fl_fetch_ready_fn)(int index, const fl_tensor *value, void *user);
/* Where a fetched value goes (fetch_to: one per fetch). All zero: a new host
 * tensor, as fl_session_run. buffer alone: into the caller's host memory (the
 * op writes it there where its device's memory is the host's and no op of the
 * run reads it, else it is copied). device (the fetched node's, "/gpu:0"): the value
 * stays there, in the session's own buffer (read-only, valid until the next
 * run) or, with buffer, copied into the caller's buffer on that device (an
 * OpenCL cl_mem: at its start). Such an outputs[i] is borrowed, its device
 * set; the caller's buffer holds the value once fetch_ready or the run has it. */
typedef struct {
    const char *device;
    void *buffer;
    size_t capacity; /* buffer's bytes: a smaller value fails the run, FL_INVALID_ARGUMENT */
} fl_fetch_target;
typedef struct {
    fl_fetch_ready_fn fetch_ready; /* NULL: none, as fl_session_run */
    void *user;                    /* passed to fetch_ready */
    const fl_fetch_target *fetch_to; /* NULL: every fetch a new host tensor */
    bool (*should_stop)(void *user); /* asked before each op: true ends the run there, ABORTED (NULL: never) */
} fl_run_options;
/* fl_session_run with options (NULL: none). */
int fl_session_run_with_options(fl_session *s, const fl_run_options *options, const fl_feed *feeds,
                                int nfeeds, fl_node *const *fetches, int nfetches,
                                fl_tensor **outputs, fl_node *const *targets, int ntargets);
/* The device n really runs on in s ("/cpu:0", "/gpu:1"): the requested one, or
 * /cpu:0 where soft placement moved it (fl_node_device gives the request); in the
 * client of a cluster, the task and device asked of it ("/job:worker/task:1/cpu:0").
 * NULL until a run of s has needed n, or when n is not of s's graph. */
const char *fl_session_node_device(const fl_session *s, const fl_node *n);
/* How many ops the latest run of s ran (sources and fed nodes not counted):
 * fewer than the graph's when the session fused some (session_fusion.c). */
int fl_session_ops_run(const fl_session *s);
/* What the latest run's values held on each device, by device name: the
 * most bytes at once (op outputs and the copies made there; not variables,
 * constants or fed values) and what the pool keeps there (reuse_memory); in
 * a cluster's client, each task device's peak of the latest traced step
 * ("/job:worker/task:1/gpu:0"). Fills out[0..max); returns the count, -1 when s is NULL. */
typedef struct {
    char device[64];
    size_t peak_bytes, reserved_bytes;
} fl_device_memory;
int fl_session_memory(const fl_session *s, fl_device_memory *out, int max);

/* ------------------------------------------------------------------------
 * Checkpoints: named tensors with shapes and a CRC-32 each, written to a
 * temporary file, flushed and renamed, so no crash leaves half a file.
 * ------------------------------------------------------------------------ */
typedef struct {
    char *name;
    fl_tensor *tensor;
} fl_named_tensor;

int fl_checkpoint_write(const char *path, const fl_named_tensor *tensors, int n);
/* Allocates *out (free with fl_checkpoint_free); refuses a file whose CRC fails. */
int fl_checkpoint_read(const char *path, fl_named_tensor **out, int *n);
void fl_checkpoint_free(fl_named_tensor *tensors, int n);

/* Saves every global variable to DIR/model.ckpt-STEP and records it in
 * DIR/checkpoint; restore_latest returns 1 when it restored, 0 when DIR has
 * no checkpoint yet, -1 on error. A save keeps the newest max_to_keep
 * checkpoints and deletes older ones (TensorFlow's Saver max_to_keep; 0
 * keeps every file); fl_session_save keeps FL_DEFAULT_MAX_TO_KEEP. */
#define FL_DEFAULT_MAX_TO_KEEP 5
int fl_session_save(fl_session *s, const char *dir, int64_t step);
int fl_session_save_keeping(fl_session *s, const char *dir, int64_t step, int max_to_keep);
int fl_session_restore_latest(fl_session *s, const char *dir);

/* Which global variables have no value yet (TensorFlow's
 * report_uninitialized_variables), asking the task that holds each; up to
 * max of their names go into names (may be NULL). The count, or -1. */
int fl_session_uninitialized_variables(fl_session *s, const char **names, int max);

/* ------------------------------------------------------------------------
 * Data: MNIST-format (IDX) files, plain or gzip-compressed, and a pipeline
 * that shuffles with a seed, batches, repeats and prefetches on a thread.
 * ------------------------------------------------------------------------ */
#define FL_DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

/* Reads an IDX file of unsigned bytes: rank-1 (labels) or rank-3 (images). */
int fl_idx_read(const char *path, fl_shape *shape, uint8_t **bytes);
/* split: "train" or "t10k". images float32 [N,28,28,1] in [0,1]; labels int32 [N]. */
int fl_mnist_load(const char *data_dir, const char *split, fl_tensor **images, fl_tensor **labels);
/* Images kept as bytes, uint8 [N,28,28,1]; only the first max_examples (0: all) are read. */
int fl_mnist_load_bytes(const char *data_dir, const char *split, int max_examples, fl_tensor **images, fl_tensor **labels);

typedef struct fl_dataset fl_dataset;
typedef struct {
    int batch_size;
    int epochs;          /* passes over the data; 0 or less: repeat forever */
    bool shuffle;        /* reshuffled every epoch */
    uint64_t seed;
    bool drop_remainder; /* drop a last partial batch */
    int prefetch;        /* batches made ahead on a thread; 0: none */
} fl_dataset_options;

/* Borrows images and labels (first axis is the example); they must outlive it. uint8 images: batches of byte/255. */
fl_dataset *fl_dataset_new(const fl_tensor *images, const fl_tensor *labels, const fl_dataset_options *options);
/* 1: a batch (owned by the dataset, valid until the next call); 0: done; -1: error. */
int fl_dataset_next(fl_dataset *ds, const fl_tensor **images, const fl_tensor **labels);
void fl_dataset_free(fl_dataset *ds);

#include "flowlab_monitored.h" /* monitored training (chapter 4) */
#include "flowlab_summary.h"   /* event files for TensorBoard */
#include "flowlab_pictures.h"  /* the graph as DOT, a run as a Chrome trace */

#ifdef __cplusplus
}
#endif

#endif
