/* runtime.h: what the runtime's files share and labs never see.
 * Errors with their codes, the clock, the node structure, the op table (one
 * entry per op: shape inference and a gradient rule) and small helpers. The
 * backend seam is device.h. */
#ifndef FLOWLAB_RUNTIME_H
#define FLOWLAB_RUNTIME_H

#include <time.h>

#include "flowlab.h"
#include "status.h"

#define FL_ERROR_LEN 512
#define FL_DEVICE_LEN 64
#define FL_EDGE_KEY_LEN 256 /* a Send's or Recv's key: the wire's longest name and its NUL */

/* ---- errors.c ---- */
/* fl_set_error: a message with code FL_UNKNOWN; fl_set_error_code: with a
 * code; fl_prefix_error("%s: ", node): puts context before the current
 * message and keeps its code (the message may be passed to none of them). */
void fl_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fl_set_error_code(fl_error_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fl_prefix_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fl_clear_error(void);
/* Hands an internal status (status.h) on as the thread's last error, code
 * and message as they are; returns -1. */
int fl_status_to_last_error(const fl_status *st);
/* The code an errno from a file or socket call stands for (ENOENT: NOT_FOUND). */
fl_error_code fl_errno_code(int err);

/* ---- io/saver.c: the step of DIR's latest checkpoint, -1 when it has none ---- */
long fl_latest_checkpoint_step(const char *dir);

/* ---- clock.c: CLOCK_MONOTONIC in microseconds, the clock of every trace ---- */
double fl_now_us(void);
double fl_now_s(void); /* the same clock in seconds, for waits and rates */
/* The CLOCK_REALTIME time seconds from now, for pthread_cond_timedwait. */
struct timespec fl_wall_after(double seconds);
/* How long to wait for a peer task: FLOWLAB_TASK_DEADLINE, in seconds, 120
 * by default (and, with a WARNING once, when the variable is wrong). */
#define FL_TASK_DEADLINE_DEFAULT_S 120.0
double fl_task_deadline_s(void);
/* 0, or -1 after fl_set_error_code naming the variable and its value when
 * FLOWLAB_TASK_DEADLINE is set to no number of seconds above 0. */
int fl_task_deadline_check(void);

/* ---- tensor.c ---- */
size_t fl_dtype_size(fl_dtype dtype);
size_t fl_tensor_bytes(const fl_tensor *t);
bool fl_shape_known(fl_shape shape);
/* A reshape's target (fl_reshape, fl_tensor_reshape): at most one -1, the
 * dimension inferred. check: 0, or -1 with why in st; format prints -1 as -1;
 * resolve works the -1 out for count elements (-1 when they do not fit). */
int fl_reshape_target_check(fl_shape target, fl_status *st);
const char *fl_reshape_target_format(fl_shape target, char *buf, size_t len);
int fl_reshape_target_resolve(fl_shape target, int64_t count, fl_shape *out);
/* ---- tensor_limit.c: a tensor's bytes against fl_max_tensor_bytes ----
 * check: 0, or -1 with RESOURCE_EXHAUSTED "needs N bytes, over the limit of
 * M ..." (the caller prefixes the node); try_malloc: the same, then malloc,
 * NULL with RESOURCE_EXHAUSTED when either fails. Tensors' memory on any
 * thread goes through these, never through fl_xmalloc. */
int fl_check_tensor_bytes(size_t bytes);
void *fl_try_malloc(size_t bytes);
/* Exit with a message: only for running out of memory, never for user input
 * nor a tensor's size; on a thread other than main it aborts instead, as
 * exit() there would run the exit handlers under the main thread's feet. */
void *fl_xmalloc(size_t bytes);
void *fl_xcalloc(size_t count, size_t size);
void *fl_xrealloc(void *p, size_t bytes);
char *fl_xstrdup(const char *s);

/* ---- the ops ---- */
typedef enum {
    /* sources and state */
    FL_OP_PLACEHOLDER, FL_OP_CONST, FL_OP_VARIABLE, FL_OP_FILL, FL_OP_RANDOM_UNIFORM,
    FL_OP_TRUNCATED_NORMAL, FL_OP_ASSIGN, FL_OP_ASSIGN_ADD, FL_OP_NO_OP,
    /* math */
    FL_OP_MATMUL, FL_OP_ADD, FL_OP_SUB, FL_OP_MUL, FL_OP_DIV, FL_OP_NEG, FL_OP_ADD_N,
    FL_OP_SUM_TO_SHAPE, FL_OP_DIV_GRAD_B,
    /* activations and losses */
    FL_OP_RELU, FL_OP_RELU_GRAD, FL_OP_SIGMOID, FL_OP_SIGMOID_GRAD, FL_OP_TANH,
    FL_OP_TANH_GRAD, FL_OP_SOFTPLUS, FL_OP_SOFTPLUS_GRAD, FL_OP_SOFTMAX, FL_OP_SOFTMAX_GRAD, FL_OP_SPARSE_XENT,
    FL_OP_SPARSE_XENT_GRAD,
    /* reductions */
    FL_OP_REDUCE_SUM, FL_OP_REDUCE_MEAN, FL_OP_REDUCE_GRAD,
    /* arrays */
    FL_OP_RESHAPE, FL_OP_CONCAT, FL_OP_SLICE, FL_OP_SLICE_GRAD, FL_OP_IDENTITY,
    FL_OP_STOP_GRADIENT, FL_OP_CAST, FL_OP_ARGMAX, FL_OP_EQUAL,
    /* convolution and pooling */
    FL_OP_CONV2D, FL_OP_CONV2D_BACKPROP_INPUT, FL_OP_CONV2D_BACKPROP_FILTER, FL_OP_MAX_POOL,
    FL_OP_MAX_POOL_GRAD,
    /* optimizer updates */
    FL_OP_APPLY_GRADIENT_DESCENT, FL_OP_APPLY_MOMENTUM, FL_OP_APPLY_ADAM,
    /* fused by the session for one step (session_fusion.c), never built by a user */
    FL_OP_FUSED_CONV2D, FL_OP_FUSED_MATMUL, FL_OP_MAX_POOL_RELU_GRAD,
    FL_OP_FUSED_APPLY_GRADIENT_DESCENT, FL_OP_FUSED_APPLY_MOMENTUM, FL_OP_FUSED_APPLY_ADAM, FL_OP_MULTI_APPLY_ADAM,
    /* a value crossing tasks, made by the partitioner (TensorFlow's _Send, _Recv) */
    FL_OP_SEND, FL_OP_RECV,
    /* synchronous training's gradient accumulators, in a task's container (TensorFlow's ConditionalAccumulator) */
    FL_OP_ACCUMULATOR_APPLY_GRADIENT, FL_OP_ACCUMULATOR_TAKE_GRADIENT, FL_OP_ACCUMULATOR_SET_GLOBAL_STEP,
    FL_OP_ACCUMULATOR_WAIT_STEP, FL_OP_ACCUMULATOR_CLOSE,
    /* (no Copy op: the session copies values across devices itself) */
    FL_OP_COUNT
} fl_op_kind;

/* Every op's settings in one plain struct; each op reads the fields it needs. */
typedef struct {
    bool transpose_a, transpose_b;        /* MatMul */
    int axis;                             /* Concat, Slice, ArgMax */
    int begin, size;                      /* Slice: a fixed window ... */
    int part, num_parts;                  /* ... or part i of num_parts (Split) */
    bool reduce_axis[FL_MAX_RANK];        /* Reduce*: which axes go */
    bool keep_dims;
    bool mean;                            /* ReduceGrad: of a mean, not a sum */
    fl_shape shape;                       /* Reshape target; Fill / Random shape */
    int stride_h, stride_w, ksize_h, ksize_w;
    fl_padding padding;
    float value;                          /* Fill */
    float minval, maxval;                 /* RandomUniform */
    float mean_value, stddev;             /* TruncatedNormal */
    uint64_t seed;                        /* Random*: the op's seed */
    fl_dtype dtype;                       /* Cast */
    float learning_rate, momentum, beta1, beta2, epsilon;
    bool use_nesterov;
    bool fused_relu;                      /* FusedConv2D, FusedMatMul: max(0, v) after the bias */
    char edge_key[FL_EDGE_KEY_LEN];       /* Send, Recv: the rendezvous key of the value they move;
                                             Accumulator*: the accumulator's name (TensorFlow's shared_name) */
    char peer_task[FL_DEVICE_LEN];        /* Send: the task it goes to; Recv: the task it comes from */
} fl_attrs;

struct fl_node {
    fl_graph *graph;
    int id;               /* index in creation order, which is a topological order */
    char *name;
    fl_op_kind op;
    fl_dtype dtype;
    fl_shape shape;       /* build-time shape; -1 where unknown */
    bool has_output;      /* its op's signature says: false for NoOp and optimizer updates */
    fl_node **inputs;
    int ninputs;
    fl_node **controls;   /* run after these */
    int ncontrols;
    char device[FL_DEVICE_LEN]; /* requested device, canonical form, "" if none */
    fl_attrs attrs;
    fl_tensor *value;     /* Const */
    /* Variables only. */
    bool trainable;
    fl_node *initializer; /* the Assign that gives it its first value */
};

/* How an op's output relates to its input 0. */
typedef enum {
    FL_ALIAS_NONE,           /* a value of its own (or a buffer the session forwards to it) */
    FL_ALIAS_RENAMES_INPUT0, /* input 0's value under another name (Reshape, Identity): a copy elsewhere */
    FL_ALIAS_WRITES_INPUT0,  /* input 0's buffer, updated in place (Assign): it runs where input 0 lives */
} fl_op_alias;

/* A fused update (ops_fused.c) averages at most this many gradients: towers or replicas. */
#define FL_FUSED_MEAN_PARTS 8
/* The inputs an update (ApplyGradientDescent, ApplyMomentum, ApplyAdam, or
 * its fused form) takes before its gradient: the variable, its slots, Adam's
 * beta powers. A fused update's gradients follow, then their divisor. */
int fl_update_inputs_before_gradient(fl_op_kind op);
/* MultiApplyAdam (ops_fused.c) updates at most this many variables in one
 * kernel: CUDA passes their table by value, within a launch's 4 kB. Its
 * inputs: var, m, v of each variable, the two beta powers, each gradient. */
#define FL_MULTI_ADAM_VARIABLES 32
static inline int fl_multi_adam_count(const fl_node *n) { return (n->ninputs - 2) / 4; }
/* How many of n's first inputs n updates in place: its signature's
 * writes_inputs, or three per variable of a MultiApplyAdam. */
int fl_node_writes_inputs(const fl_node *n);
#define FL_OP_INPUT_LIST (-1) /* max_inputs of an op that takes a list of any length (AddN, Concat) */

/* What an op takes and gives, declared once with the op: the session, the
 * placer and the wire's decoder read it, and test_op_checklist holds every
 * op's builders and the wire to it. */
typedef struct {
    int min_inputs, max_inputs; /* max FL_OP_INPUT_LIST: a list */
    bool has_output;            /* false: NoOp and the optimizer updates */
    int writes_inputs;          /* its first N inputs, updated in place, are variables (Assign 1, ApplyAdam 3) */
    bool is_source;             /* the session gives its value (a feed, a constant, a variable's buffer) */
    bool fused;                 /* made by the session's fusion pass for one run: never built nor sent */
    bool between_tasks;         /* Send, Recv: run by a task's rendezvous device only (fl_session_set_rendezvous) */
    bool in_container;          /* Accumulator*: state in the task's container, run on the task's host by its partition */
    fl_op_alias aliases;
} fl_op_signature;

typedef struct {
    const char *type; /* TensorFlow's name for it: "MatMul" */
    fl_op_signature sig;
    /* Output shape from input shapes. Called when a node is built (dims may be
     * -1) and again at run time with real shapes. On a mismatch it writes what
     * is wrong, without the node name, in st (INVALID_ARGUMENT) and returns -1. */
    int (*infer)(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st);
    /* Builds the gradient of each input from dy (the gradient of the output);
     * leaves dx[i] NULL where input i gets none. NULL: not differentiable. */
    int (*gradient)(fl_graph *g, fl_node *n, fl_node *dy, fl_node **dx);
} fl_op_def;

const fl_op_def *fl_op_def_of(fl_op_kind op);
/* Why op has no gradient rule, or why no backend needs a kernel for it (from
 * its signature: a source, or an op with no output that writes nothing);
 * NULL where it has one (op_registry.c, checked by tests/test_op_checklist.c). */
const char *fl_op_why_no_gradient(fl_op_kind op);
const char *fl_op_why_no_kernel(fl_op_kind op);
/* Why a backend may leave op's kernel out (NULL: it may not): a fused op;
 * the session fuses into it only on a device whose backend has the kernel. */
const char *fl_op_why_kernel_optional(fl_op_kind op);
/* Whether n inputs fit op's signature (a list takes at least min_inputs):
 * 0, or -1 with "a MatMul takes 2 inputs, not 3" in st. */
int fl_op_check_input_count(fl_op_kind op, int n, fl_status *st);

/* ---- graph.c: adding nodes ---- */
typedef struct {
    fl_op_kind op;
    const char *name;         /* the user's name, or NULL */
    const char *default_name; /* used when name is NULL */
    fl_node *const *inputs;
    int ninputs;
    fl_dtype dtype;
    fl_attrs attrs;
    bool exact_name; /* use name as given, outside any name scope (variables) */
} fl_node_spec;

/* Checks inputs (NULL -> quietly NULL), picks the name and device, infers the
 * shape; on failure records "name: what is wrong" as the graph's error. */
fl_node *fl_add_node(fl_graph *g, const fl_node_spec *spec);
/* Records "node_name: message" as the graph's first error; returns NULL. */
fl_node *fl_graph_fail(fl_graph *g, const char *node_name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool fl_graph_failed(const fl_graph *g);
uint64_t fl_graph_seed(const fl_graph *g);
uint64_t fl_graph_next_op_seed(fl_graph *g);
/* The open name scopes, "tower_0/dense", or "" (it changes with each push). */
const char *fl_name_scope_current(const fl_graph *g);
/* The current variable scope prefix joined with name: "model/dense/kernel". */
void fl_variable_scope_name(const fl_graph *g, const char *name, char *out, size_t len);
fl_reuse fl_variable_scope_reuse(const fl_graph *g);
/* Variables are also registered by name for get_variable. */
void fl_graph_register_variable(fl_graph *g, fl_node *var);
fl_node *fl_graph_find_variable(const fl_graph *g, const char *name);
int fl_graph_variable_count(const fl_graph *g);
fl_node *fl_graph_variable(const fl_graph *g, int index);
/* Open device scope on name while building nodes colocated with another. */
int fl_device_scope_push_colocated(fl_graph *g, const fl_node *with);
/* What the cluster runtime records about a graph's nodes (which updates are
 * synchronous), kept with the graph and freed with it by free_records; the
 * core never reads it. NULL until set. */
void *fl_graph_runtime_records(const fl_graph *g);
void fl_graph_set_runtime_records(fl_graph *g, void *records, void (*free_records)(void *));

/* ---- optimizers.c ---- */
/* A wrapper's own graph around opt's updates: fl_apply_gradients (in its
 * name scope) calls wrap instead, and wrap builds the wrapped optimizer's
 * updates where it wants them with fl_optimizer_plain_updates (the
 * cluster runtime's SyncReplicasOptimizer: the updates of the averaged
 * gradients). value: the wrapper's own. */
typedef fl_node *(*fl_optimizer_wrap_fn)(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                         fl_node *global_step, const char *scope, int value);
fl_optimizer *fl_optimizer_wrapping(const fl_optimizer *opt, fl_optimizer_wrap_fn wrap, int value);
fl_node *fl_optimizer_plain_updates(fl_optimizer *opt, fl_graph *g, const fl_grad_var *pairs, int n,
                                     fl_node *global_step, const char *scope);

/* ---- device_string.c ---- */
typedef struct {
    char job[32];   /* "" when no job is named */
    int task;       /* -1 when no task is named */
    bool is_gpu;    /* accelerator, else host */
    int index;
} fl_device_name;
/* Parses and writes the canonical form ("/job:ps/task:0/cpu:0", "/gpu:1"). */
int fl_parse_device(const char *text, fl_device_name *out, char *canonical, size_t len);

/* ---- shared shape helpers (ops_shared.c) ---- */
int fl_infer_same_as_input0(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st);
/* Checks a shape rule makes of its inputs: 0, or -1 with what is wrong in
 * st, naming the input. A graph from the wire meets them as the API's does. */
int fl_check_input_dtype(const fl_node *n, int i, fl_dtype want, fl_status *st);
int fl_check_float_inputs(const fl_node *n, fl_status *st);
/* Inputs i and j have one shape (a dimension unknown at build time matches any). */
int fl_check_same_shape(const fl_node *n, const fl_shape *in, int i, int j, fl_status *st);
/* 0 <= axis < rank: builders turn -1 into the last axis; the rule bounds it. */
int fl_check_axis(int axis, int rank, fl_status *st);
/* Input i is a scalar or into's trailing dimensions. */
int fl_check_broadcasts_into(const fl_node *n, const fl_shape *in, int i, fl_shape into, fl_status *st);
int fl_infer_same_float_pair(const fl_node *n, const fl_shape *in, fl_shape *out, fl_status *st);
/* Broadcast of a scalar or of a suffix: out is the larger of a and b. */
int fl_broadcast_shape(fl_shape a, fl_shape b, fl_shape *out, fl_status *st);
fl_node *fl_build_unary(fl_graph *g, fl_op_kind op, fl_node *x, const char *name,
                        const char *default_name);
fl_node *fl_build_binary(fl_graph *g, fl_op_kind op, fl_node *a, fl_node *b, const char *name,
                         const char *default_name);
/* Internal builders shared by gradients. */
fl_node *fl_neg(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_sum_to_shape(fl_graph *g, fl_node *x, fl_node *like, const char *name);
fl_node *fl_reshape_like(fl_graph *g, fl_node *x, fl_node *like, const char *name);
fl_node *fl_split_part(fl_graph *g, fl_node *x, int axis, int part, int num_parts,
                       const char *name);
/* graph_prune.c: marks in needed (by node id; the caller clears it) the
 * roots and all they read, not looking past a node fed(arg, id) says is fed. */
void fl_graph_mark_needed(bool *needed, bool (*fed)(const void *arg, int id), const void *arg,
                          fl_node *const *roots, int nroots);
/* ops_transfer.c: a value leaving for another task (Send, run for its
 * effect) and arriving from one (Recv, a source), keyed by edge_key; the
 * partitioner (graph_partition.c) builds them, a task's rendezvous runs them. */
fl_node *fl_send(fl_graph *g, fl_node *value, const char *key, const char *to_task, const char *name);
fl_node *fl_recv(fl_graph *g, fl_dtype dtype, fl_shape shape, const char *key, const char *from_task,
                 const char *name);
/* The accumulator ops (ops_accumulator.c): name is the accumulator's in the
 * task's container, shape its gradients'. */
fl_node *fl_accumulator_apply_gradient(fl_graph *g, const char *accumulator, fl_node *local_step,
                                       fl_node *gradient, const char *name);
fl_node *fl_accumulator_take_gradient(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *num_required,
                                      const char *name);
fl_node *fl_accumulator_set_global_step(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *step,
                                        const char *name);
/* Waits, as a Recv does, until the accumulator's global step passes
 * local_step; gives that step (int32). A synchronous worker's wait for the
 * chief's update, where TensorFlow's dequeues a token. An apply gives 1
 * when its gradient was stale and dropped, else 0 (int32). */
fl_node *fl_accumulator_wait_step(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *local_step,
                                  const char *name);
/* Ends training at global step `step` (int32): every wait on the
 * accumulator for a later step, now or later, fails OUT_OF_RANGE, as
 * TensorFlow's dequeue of a closed sync token queue does. */
fl_node *fl_accumulator_close(fl_graph *g, const char *accumulator, fl_shape shape, fl_node *step, const char *name);
/* A tensor of ones shaped like x at run time: the seed of a gradient. */
fl_node *fl_ones_like(fl_graph *g, fl_node *x, const char *name);
fl_node *fl_int_scalar(fl_graph *g, int32_t value, const char *name);
/* Builds a variable named exactly full_name (scopes already applied). */
fl_node *fl_create_variable(fl_graph *g, const char *full_name, fl_dtype dtype, fl_shape shape,
                            fl_initializer init, bool trainable);

/* ---- tensor.c: a tensor seen around one axis, as outer x dim x inner ---- */
typedef struct {
    int64_t outer, dim, inner;
} fl_axis_view;
fl_axis_view fl_view_around(fl_shape shape, int axis);

/* ---- ops_array.c: where a Slice's window starts on its axis: attrs.begin,
 * or part * size for part i of num_parts (size: the output's, on that axis) ---- */
int64_t fl_slice_begin(const fl_attrs *a, int64_t size);
/* Whether a copy from `from` into `to` (Identity, Reshape, Copy) moves the
 * same bytes: 0, or -1 after fl_set_error("cannot copy [2,3] into [4]"). */
int fl_check_copy_size(const fl_tensor *from, const fl_tensor *to);

/* ---- ops_math.c: a MatMul's sizes, C[M,N] = op(A)[M,K] x op(B)[K,N], from
 * run-time shapes (a: input 0, out: the result); lda and ldb are A's and
 * B's row lengths as stored, row-major, for a BLAS call ---- */
typedef struct {
    int m, n, k;
    bool transpose_a, transpose_b;
    int lda, ldb;
} fl_matmul_dims;
fl_matmul_dims fl_matmul_dims_of(const fl_node *n, fl_shape a, fl_shape out);

/* ---- random.c: a counter-based generator, the same numbers everywhere ---- */
uint64_t fl_mix_seed(uint64_t a, uint64_t b);
void fl_fill_random_uniform(float *out, int64_t n, float minval, float maxval, uint64_t seed);
void fl_fill_truncated_normal(float *out, int64_t n, float mean, float stddev, uint64_t seed);

#endif
