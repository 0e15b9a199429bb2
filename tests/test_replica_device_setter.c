/* test_replica_device_setter.c: chapter 3's replica device setter places the
 * chapter 1 model and its Adam optimizer: each Variable on the ps task its
 * strategy picks (round-robin, greedy by bytes), slots and beta powers
 * beside their variable, everything else on the worker device; with no ps
 * tasks all on the worker; inner scopes win; the ps loads it reports. */
#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"

/* The model's own variables in creation order, with their bytes
 * (elements x 4) worked out by hand: the test does not trust the setter's
 * arithmetic. */
static const struct {
    const char *name;
    int64_t bytes;
} model_vars[] = {
    {"conv1/kernel", 5 * 5 * 1 * 32 * 4},     /* 3,200 */
    {"conv1/bias", 32 * 4},                   /* 128 */
    {"conv2/kernel", 5 * 5 * 32 * 64 * 4},    /* 204,800 */
    {"conv2/bias", 64 * 4},                   /* 256 */
    {"dense/kernel", 3136 * 1024 * 4},        /* 12,845,056 */
    {"dense/bias", 1024 * 4},                 /* 4,096 */
    {"logits/kernel", 1024 * 10 * 4},         /* 40,960 */
    {"logits/bias", 10 * 4},                  /* 40 */
    {"global_step", 4},                       /* int32 scalar */
};
#define NVARS ((int)(sizeof model_vars / sizeof model_vars[0]))
#define WORKER "/job:worker/task:1/cpu:0"

static fl_node *dense_layer(fl_graph *g, const char *scope, fl_node *x, int in, int out)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(2, in, out), fl_zeros_initializer());
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, out), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    return fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
}

static fl_node *conv_layer(fl_graph *g, const char *scope, fl_node *x, int in, int out)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *w = fl_get_variable(g, "kernel", fl_shape_make(4, 5, 5, in, out), fl_zeros_initializer());
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, out), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    fl_node *h = fl_relu(g, fl_add(g, fl_conv2d(g, x, w, 1, 1, FL_SAME, NULL), b, NULL), NULL);
    return fl_max_pool2d(g, h, 2, 2, 2, 2, FL_SAME, NULL);
}

/* Chapter 1's model, its global step and Adam's train op, all built under
 * the setter; NULL (with a diagnostic) when the graph fails. */
static fl_graph *build_model(fl_replica_device_setter *setter)
{
    fl_graph *g = fl_graph_new();
    if (fl_replica_device_setter_push(g, setter) != 0)
        return g;
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, 2, 28, 28, 1), "images");
    fl_node *labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, 2), "labels");
    fl_node *h = conv_layer(g, "conv1", x, 1, 32);
    h = conv_layer(g, "conv2", h, 32, 64);
    h = fl_relu(g, dense_layer(g, "dense", fl_reshape(g, h, fl_shape_make(2, -1, 3136), NULL), 3136, 1024), NULL);
    fl_node *logits = dense_layer(g, "logits", h, 1024, 10);
    fl_node *loss = fl_reduce_mean(g, fl_sparse_softmax_cross_entropy_with_logits(g, labels, logits, NULL),
                                   NULL, 0, false, "loss");
    fl_node *step = fl_get_or_create_global_step(g);
    fl_optimizer *adam = fl_adam_optimizer(1e-3f, 0.9f, 0.999f, 1e-8f);
    fl_minimize(adam, g, loss, step, "Adam");
    fl_optimizer_free(adam);
    fl_device_pop(g);
    return g;
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* The variable whose name is the longest "<name>/" prefix of node's name
 * ("conv1/kernel/Adam/Assign" belongs to the slot "conv1/kernel/Adam"). */
static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static fl_node *owning_variable(fl_graph *g, const fl_node *node)
{
    fl_node *vars[64];
    int n = fl_global_variables(g, vars, 64);
    fl_node *best = NULL;
    for (int i = 0; i < n; i++) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/", fl_node_name(vars[i]));
        if (starts_with(fl_node_name(node), prefix) &&
            (!best || strlen(fl_node_name(vars[i])) > strlen(fl_node_name(best))))
            best = vars[i];
    }
    return best;
}

static const char *device_of(fl_graph *g, const char *name)
{
    fl_node *n = fl_graph_find(g, name);
    return n ? fl_node_device(n) : "(no such node)";
}

/* The model's variables sit where expected[i] says, and each one's Adam
 * slots (the global step has none) and the beta powers follow. */
static void check_variables(fl_graph *g, const int *expected, const char *what)
{
    int wrong = 0, slots_astray = 0;
    for (int i = 0; i < NVARS; i++) {
        char want[64], slot[300];
        snprintf(want, sizeof want, "/job:ps/task:%d/cpu:0", expected[i]);
        const char *got = device_of(g, model_vars[i].name);
        if (strcmp(got, want) != 0 && ++wrong)
            diag("%s: %s is on %s, want %s", what, model_vars[i].name, got, want);
        for (int k = 0; k < 2 && i < NVARS - 1; k++) {
            snprintf(slot, sizeof slot, "%s/%s", model_vars[i].name, k ? "Adam_1" : "Adam");
            if (strcmp(device_of(g, slot), got) != 0 && ++slots_astray)
                diag("%s: slot %s is on %s, its variable on %s", what, slot, device_of(g, slot), got);
        }
    }
    ok(wrong == 0, "%s: each variable on its ps task", what);
    ok(slots_astray == 0, "%s: Adam's m and v slots sit with their variable", what);
    ok(strcmp(device_of(g, "Adam/beta1_power"), device_of(g, "conv1/kernel")) == 0 &&
           strcmp(device_of(g, "Adam/beta2_power"), device_of(g, "conv1/kernel")) == 0,
       "%s: the first pair of beta powers sits with the first variable, conv1/kernel", what);
    int far = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        fl_node *n = fl_graph_node(g, i);
        if (strcmp(fl_node_op_type(n), "ApplyAdam") != 0)
            continue;
        for (int k = 3; k <= 4; k++)
            if (strcmp(fl_node_device(fl_node_input(n, k)), fl_node_device(fl_node_input(n, 0))) != 0 && ++far)
                diag("%s: %s reads %s from another device", what, fl_node_name(n), fl_node_name(fl_node_input(n, k)));
    }
    ok(far == 0, "%s: every ApplyAdam reads beta powers held on its own variable's ps task", what);
}

/* Everything else: a variable's initializer and Assign on its device, the
 * updates on their variable's, and the model, the loss and the gradients
 * on the worker. */
static void check_other_nodes(fl_graph *g, const char *what)
{
    int on_worker = 0, astray = 0;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        fl_node *n = fl_graph_node(g, i);
        if (strcmp(fl_node_op_type(n), "VariableV2") == 0)
            continue;
        const fl_node *owner = owning_variable(g, n);
        bool optimizer_state = starts_with(fl_node_name(n), "Adam/") && strcmp(fl_node_name(n), "Adam/update") != 0;
        const char *op = fl_node_op_type(n);
        bool writes = strcmp(op, "ApplyAdam") == 0 || strcmp(op, "Assign") == 0 || strcmp(op, "AssignAdd") == 0;
        const char *want = owner ? fl_node_device(owner) : WORKER;
        if (optimizer_state) /* an update with its variable; the beta powers' products and constants computed on the worker */
            want = writes ? fl_node_device(fl_node_input(n, 0)) : WORKER;
        if (ends_with(fl_node_name(n), "/Initializer"))
            want = ""; /* computed by whoever runs the initializer, on its own host: a ps holds values only */
        if (strcmp(fl_node_device(n), want) != 0 && ++astray)
            diag("%s: %s (%s) is on %s, want %s", what, fl_node_name(n), fl_node_op_type(n), fl_node_device(n),
                 want);
        on_worker += strcmp(want, WORKER) == 0;
    }
    ok(astray == 0, "%s: initializers, updates and the model's ops where they belong", what);
    ok(on_worker >= 35, "%s: the model, loss and gradients are many nodes on the worker (%d)", what, on_worker);
    is_string(device_of(g, "gradients/MatMul_grad/MatMul"), WORKER,
              "a gradient op by name is on the worker");
}

/* Each ps task's load as the setter reports it against want_bytes and
 * want_vars; and the totals add up to the model's. */
static void check_loads(const fl_replica_device_setter *s, int num_ps, const int64_t *want_bytes,
                        const int *want_vars, const char *what)
{
    int wrong = 0;
    for (int k = 0; k < num_ps; k++) {
        int64_t bytes = -1;
        int vars = -1;
        if (fl_replica_device_setter_ps_bytes(s, k, &bytes, &vars) != 0 || bytes != want_bytes[k] ||
            vars != want_vars[k]) {
            diag("%s: ps %d holds %lld bytes in %d variables, want %lld in %d", what, k, (long long)bytes,
                 vars, (long long)want_bytes[k], want_vars[k]);
            wrong++;
        }
    }
    ok(wrong == 0, "%s: each ps task's bytes and variable count (slots not counted)", what);
    ok(fl_replica_device_setter_ps_bytes(s, num_ps, NULL, NULL) == -1, "%s: there is no ps task %d", what,
       num_ps);
}

static fl_cluster *cluster_with(int num_ps)
{
    const char *ps[] = {"", "ps0:2222", "ps0:2222,ps1:2222", "ps0:2222,ps1:2222,ps2:2222"};
    return fl_cluster_from_flags(ps[num_ps], "w0:2222,w1:2222", "worker", 1);
}

/* Builds the model under a setter of this strategy and checks it against
 * the expected ps task of each variable. */
static void check_placement(int num_ps, fl_ps_strategy strategy, const int *expected, const char *what)
{
    fl_cluster *c = cluster_with(num_ps);
    fl_replica_device_setter *s = fl_replica_device_setter_new(c, NULL, strategy);
    fl_cluster_free(c); /* the setter keeps what it needs */
    fl_graph *g = s ? build_model(s) : NULL;
    if (!ok(g && !fl_graph_error(g), "%s: the model builds under the setter", what)) {
        diag("%s", g ? fl_graph_error(g) : fl_last_error());
        fl_graph_free(g);
        fl_replica_device_setter_free(s);
        return;
    }
    ok(fl_replica_device_setter_num_ps(s) == num_ps, "%s: %d ps tasks", what, num_ps);
    check_variables(g, expected, what);
    check_other_nodes(g, what);
    int64_t bytes[3] = {0, 0, 0};
    int vars[3] = {0, 0, 0};
    for (int i = 0; i < NVARS; i++) {
        bytes[expected[i]] += model_vars[i].bytes;
        vars[expected[i]]++;
    }
    check_loads(s, num_ps, bytes, vars, what);
    fl_graph_free(g);
    fl_replica_device_setter_free(s);
}

static void test_round_robin(void)
{
    for (int num_ps = 1; num_ps <= 3; num_ps++) {
        int expected[NVARS];
        for (int i = 0; i < NVARS; i++)
            expected[i] = i % num_ps; /* the i-th variable to task i mod num_ps */
        char what[64];
        snprintf(what, sizeof what, "round-robin, %d ps", num_ps);
        check_placement(num_ps, FL_PS_ROUND_ROBIN, expected, what);
    }
}

/* Greedy by bytes, worked by hand: each variable to the task holding the
 * fewest bytes so far, the lower index on a tie. With two tasks:
 *   conv1/kernel 3,200 -> 0 (tie); conv1/bias 128 -> 1; conv2/kernel -> 1
 *   (128 < 3,200); conv2/bias -> 0; dense/kernel 12.8 MB -> 0 (3,456 <
 *   204,928); then everything else -> 1, which never catches up.
 * With three: conv1/kernel -> 0, conv1/bias -> 1, conv2/kernel -> 2,
 *   conv2/bias -> 1 (128), dense/kernel -> 1 (384), the rest -> 0. */
static void test_greedy(void)
{
    static const int one[NVARS] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const int two[NVARS] = {0, 1, 1, 0, 0, 1, 1, 1, 1};
    static const int three[NVARS] = {0, 1, 2, 1, 1, 0, 0, 0, 0};
    check_placement(1, FL_PS_GREEDY_BY_BYTES, one, "greedy, 1 ps");
    check_placement(2, FL_PS_GREEDY_BY_BYTES, two, "greedy, 2 ps");
    check_placement(3, FL_PS_GREEDY_BY_BYTES, three, "greedy, 3 ps");

    /* The point of the strategy: the dense kernel outweighs all else, so
     * greedy keeps the other task's load small where round-robin does not. */
    fl_cluster *c = cluster_with(2);
    fl_replica_device_setter *s = fl_replica_device_setter_new(c, NULL, FL_PS_GREEDY_BY_BYTES);
    fl_graph *g = build_model(s);
    int64_t b0 = 0, b1 = 0;
    fl_replica_device_setter_ps_bytes(s, 0, &b0, NULL);
    fl_replica_device_setter_ps_bytes(s, 1, &b1, NULL);
    ok(b0 == 12848512 && b1 == 250028, "greedy, 2 ps: 12,848,512 bytes on ps 0 and 250,028 on ps 1 (%lld, %lld)",
       (long long)b0, (long long)b1);
    fl_graph_free(g);
    fl_replica_device_setter_free(s);
    fl_cluster_free(c);
}

/* No ps tasks: every node, variables and slots too, on the worker device. */
static void test_no_ps(void)
{
    fl_cluster *c = cluster_with(0);
    fl_replica_device_setter *s = fl_replica_device_setter_new(c, NULL, FL_PS_GREEDY_BY_BYTES);
    fl_graph *g = s ? build_model(s) : NULL;
    ok(g && !fl_graph_error(g), "no ps: the model builds");
    int astray = 0, nodes = g ? fl_graph_node_count(g) : 0;
    for (int i = 0; i < nodes; i++)
        if (strcmp(fl_node_device(fl_graph_node(g, i)), ends_with(fl_node_name(fl_graph_node(g, i)), "/Initializer") ? "" : WORKER) != 0 && ++astray)
            diag("%s is on %s", fl_node_name(fl_graph_node(g, i)), fl_node_device(fl_graph_node(g, i)));
    ok(nodes > 100 && astray == 0, "no ps: all %d nodes on the worker device (initial values on the host)", nodes);
    ok(fl_replica_device_setter_num_ps(s) == 0, "no ps: the setter counts none");
    ok(fl_replica_device_setter_ps_bytes(s, 0, NULL, NULL) == -1, "no ps: there is no ps task 0 to ask about");
    is_string(fl_last_error(), "fl_replica_device_setter_ps_bytes: no ps task 0; the cluster has 0",
              "and the error says how many there are");
    fl_graph_free(g);
    fl_replica_device_setter_free(s);
    fl_cluster_free(c);
}

/* The worker device is completed with the local task's job and index. */
static void worker_device_is(const fl_cluster *c, const char *given, const char *want)
{
    fl_replica_device_setter *s = fl_replica_device_setter_new(c, given, FL_PS_ROUND_ROBIN);
    fl_graph *g = fl_graph_new();
    fl_replica_device_setter_push(g, s);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 3), "x");
    fl_device_pop(g);
    char what[128];
    snprintf(what, sizeof what, "worker device %s is %s", given ? given : "NULL", want);
    is_string(s ? fl_replica_device_setter_worker_device(s) : fl_last_error(), want, what);
    is_string(x ? fl_node_device(x) : fl_graph_error(g), want, "and a placeholder is put there");
    fl_graph_free(g);
    fl_replica_device_setter_free(s);
}

static void refused(const fl_cluster *c, const char *worker_device, fl_ps_strategy strategy, const char *message)
{
    fl_replica_device_setter *s = fl_replica_device_setter_new(c, worker_device, strategy);
    is_string(s ? "(accepted)" : fl_last_error(), message, message);
    fl_replica_device_setter_free(s);
}

static void test_worker_device(void)
{
    fl_cluster *c = cluster_with(2);
    worker_device_is(c, NULL, "/job:worker/task:1/cpu:0");
    worker_device_is(c, "", "/job:worker/task:1/cpu:0");
    worker_device_is(c, "/gpu:0", "/job:worker/task:1/gpu:0");
    worker_device_is(c, "/job:worker/task:0/device:GPU:1", "/job:worker/task:0/gpu:1");
    refused(NULL, NULL, FL_PS_ROUND_ROBIN, "fl_replica_device_setter_new: the cluster is NULL");
    refused(c, NULL, (fl_ps_strategy)7,
            "fl_replica_device_setter_new: strategy 7 is neither FL_PS_ROUND_ROBIN (0) nor "
            "FL_PS_GREEDY_BY_BYTES (1)");
    refused(c, "/tpu:0", FL_PS_ROUND_ROBIN,
            "device string '/tpu:0' does not parse; expected /cpu:N or /gpu:N, optionally after /job:NAME/task:N");
    refused(c, "/job:worker/task:2", FL_PS_ROUND_ROBIN,
            "device \"/job:worker/task:2\": no worker task 2; job worker has 2 tasks (0 and 1)");
    fl_cluster_free(c);

    fl_graph *g = fl_graph_new();
    ok(fl_replica_device_setter_push(g, NULL) == -1, "pushing a NULL setter fails");
    is_string(fl_graph_error(g), "fl_replica_device_setter_push: the setter is NULL", "and says so");
    fl_graph_free(g);
    ok(fl_replica_device_setter_push(NULL, NULL) == -1, "pushing on a NULL graph fails");
    is_string(fl_last_error(), "fl_replica_device_setter_push: the graph is NULL", "and says so");
}

static const char *no_opinion(const fl_node *node, void *user)
{
    (void)node;
    (*(int *)user)++;
    return NULL;
}

/* The innermost scope decides: a device scope inside the setter keeps its
 * device (and the setter neither sees nor counts that variable); a device
 * function inside that returns NULL leaves the choice to the setter; a
 * scope outside the setter has no say while the setter is pushed. */
static void test_inner_scopes(void)
{
    fl_cluster *c = cluster_with(2);
    fl_replica_device_setter *s = fl_replica_device_setter_new(c, NULL, FL_PS_ROUND_ROBIN);
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, "/job:worker/task:0/gpu:3");
    fl_replica_device_setter_push(g, s);
    fl_node *a = fl_get_variable(g, "a", fl_shape_make(1, 4), fl_zeros_initializer());
    fl_device_scope_push(g, "/gpu:1");
    fl_node *pinned = fl_get_variable(g, "pinned", fl_shape_make(1, 100), fl_zeros_initializer());
    fl_node *sum = fl_add(g, a, a, NULL);
    fl_device_pop(g);
    int asked = 0;
    fl_device_function_push(g, no_opinion, &asked);
    fl_node *b = fl_get_variable(g, "b", fl_shape_make(1, 4), fl_zeros_initializer());
    fl_node *twice = fl_add(g, b, b, NULL);
    fl_device_pop(g);
    fl_device_pop(g); /* the setter */
    fl_node *after = fl_add(g, a, b, NULL);
    is_string(fl_node_device(a), "/job:ps/task:0/cpu:0", "the first variable to ps 0, not the outer scope's gpu:3");
    is_string(fl_node_device(pinned), "/gpu:1", "a variable under an inner device scope keeps it");
    is_string(fl_node_device(sum), "/gpu:1", "and so does any op there");
    is_string(fl_node_device(b), "/job:ps/task:1/cpu:0",
              "a NULL from an inner device function leaves the variable to the setter: ps 1, next in turn");
    is_string(fl_node_device(twice), WORKER, "and an op to the worker");
    ok(asked == 2, "the inner device function was asked first, for both nodes (%d)", asked);
    is_string(fl_node_device(after), "/job:worker/task:0/gpu:3", "once popped, the outer scope decides again");
    int v0 = 0, v1 = 0;
    int64_t b0 = 0;
    fl_replica_device_setter_ps_bytes(s, 0, &b0, &v0);
    fl_replica_device_setter_ps_bytes(s, 1, NULL, &v1);
    ok(v0 == 1 && v1 == 1 && b0 == 16, "the pinned variable counts on no ps task (%d, %d variables)", v0, v1);
    ok(!fl_graph_error(g), "no graph error");
    fl_graph_free(g);
    fl_replica_device_setter_free(s);
    fl_cluster_free(c);
}

int main(void)
{
    test_round_robin();
    test_greedy();
    test_no_ps();
    test_worker_device();
    test_inner_scopes();
    return done_testing();
}
