/* test_op_checklist.c: the add-an-op checklist of README's map, checked for
 * every op kind: a definition with a signature and a shape rule, a gradient
 * rule or a stated reason for none, a kernel or a stated reason in every
 * backend this build found (host, OpenCL, the CUDA module), and the wire
 * taking what the signature declares: a node with its inputs goes over the
 * partition encoder and decoder and comes back as it went. */
#include <stdlib.h>
#include <string.h>

#include "backend_entry.h"
#include "distributed_runtime/partition/partition_def.h"
#include "tap.h"

/* The one place this test reads a backend's table. */
static bool backend_has_kernel(const fl_backend *b, fl_op_kind op) { return b->has_kernel(op); }

static const char *type_of(fl_op_kind op)
{
    const fl_op_def *def = fl_op_def_of(op);
    return def && def->type ? def->type : "(no definition)";
}

/* A rule or a reason, never both: a reason beside a rule is out of date. */
static void check_gradient(fl_op_kind op)
{
    const fl_op_def *def = fl_op_def_of(op);
    const char *why = fl_op_why_no_gradient(op);
    bool has_rule = def && def->gradient;
    if (!ok(has_rule != (why != NULL), "%s: a gradient rule or a stated reason for none", type_of(op)))
        diag(has_rule ? "it has a rule: remove its line from why_no_gradient in src/op_registry.c"
                      : "write its gradient rule beside its definition, or say why it has none "
                        "in why_no_gradient in src/op_registry.c");
}

static void check_kernel(const char *backend_name, const fl_backend *b, fl_op_kind op)
{
    const char *why = fl_op_why_no_kernel(op);
    if (fl_op_why_kernel_optional(op)) { /* a fused op: the session fuses only where it may */
        ok(why == NULL, "%s: optional in the %s backend (%s), %s", type_of(op), backend_name,
           fl_op_why_kernel_optional(op), backend_has_kernel(b, op) ? "which has it" : "which fuses none");
        return;
    }
    bool has = backend_has_kernel(b, op);
    if (!ok(has != (why != NULL), "%s: a kernel in the %s backend or a stated reason for none", type_of(op),
            backend_name))
        diag(has ? "it has a kernel: remove its line from why_no_kernel in src/op_registry.c"
                 : "add the kernel to the backend's table, or say why none is needed in "
                   "why_no_kernel in src/op_registry.c");
}

/* Each backend the build found: a linked table as it is, a module's opened
 * here without asking for a driver (loading CUDA's libraries needs no GPU). */
static const fl_backend *backends[8];
static int nbackends;

static void find_backends(void)
{
    backends[nbackends++] = &fl_host_backend;
    for (int i = 0; fl_backend_entries[i] && nbackends < 8; i++) {
        const fl_backend_entry *e = fl_backend_entries[i];
        fl_status why = {0};
        const fl_backend *b = e->linked ? e->linked : fl_backend_module_open(e, &why);
        if (!ok(b != NULL, "the %s backend's table is there to check", e->name))
            diag("%s", why.message);
        if (b)
            backends[nbackends++] = b;
    }
}

/* A signature that says one thing: a count range, a source with no inputs,
 * written inputs among its own, an alias only of a value it has. */
static void check_signature(fl_op_kind op)
{
    const fl_op_signature *sig = &fl_op_def_of(op)->sig;
    bool range = sig->min_inputs >= 0 && (sig->max_inputs == FL_OP_INPUT_LIST || sig->max_inputs >= sig->min_inputs);
    bool source = !sig->is_source || (sig->max_inputs == 0 && sig->has_output && sig->writes_inputs == 0);
    bool writes = sig->writes_inputs >= 0 && sig->writes_inputs <= sig->min_inputs &&
                  (sig->aliases != FL_ALIAS_WRITES_INPUT0 || sig->writes_inputs > 0);
    bool alias = sig->aliases == FL_ALIAS_NONE || (sig->has_output && sig->min_inputs >= 1);
    if (!ok(range && source && writes && alias, "%s: a signature that holds together", type_of(op)))
        diag("inputs %d to %d, has_output %d, writes %d, source %d, aliases %d: see fl_op_signature in src/runtime.h",
             sig->min_inputs, sig->max_inputs, sig->has_output, sig->writes_inputs, sig->is_source, (int)sig->aliases);
}

static void check_op(fl_op_kind op)
{
    const fl_op_def *def = fl_op_def_of(op);
    if (!ok(def && def->type && def->type[0], "op %d has a definition with a type name", (int)op)) {
        diag("add its fl_def_* to op_table in src/op_registry.c");
        return;
    }
    check_signature(op);
    ok(def->infer, "%s: a shape rule", type_of(op));
    check_gradient(op);
    for (int i = 0; i < nbackends; i++)
        check_kernel(backends[i]->name, backends[i], op);
}

/* ---- the wire takes what the signature declares ---- */

/* Inputs that some op's shape rule takes, tried in turn: plain matrices;
 * 1x1 images and filters (convolution, pooling); labels and logits; Adam's
 * variable, slots, beta powers and gradient. */
typedef struct {
    fl_dtype dtype;
    int rank, dims[4];
} input_like;

static const input_like CANDIDATES[][6] = {
    {{0, 2, {2, 2}}, {0, 2, {2, 2}}, {0, 2, {2, 2}}, {0, 2, {2, 2}}, {0, 2, {2, 2}}, {0, 2, {2, 2}}},
    {{0, 4, {1, 1, 1, 1}}, {0, 4, {1, 1, 1, 1}}, {0, 4, {1, 1, 1, 1}}},
    {{FL_INT32, 1, {2}}, {0, 2, {2, 3}}},
    {{0, 1, {2}}, {FL_INT32, 1, {2}}, {0, 2, {2, 3}}},
    {{0, 2, {2, 2}}, {0, 2, {2, 2}}, {0, 2, {2, 2}}, {0, 0, {0}}, {0, 0, {0}}, {0, 2, {2, 2}}},
    {{FL_INT32, 0, {0}}, {0, 2, {2, 2}}}, /* an accumulator's step or count, and a gradient */
};
#define NCANDIDATES ((int)(sizeof CANDIDATES / sizeof *CANDIDATES))

static fl_attrs example_attrs(void)
{
    fl_attrs a = {.shape = fl_shape_make(2, 2, 2), .stride_h = 1, .stride_w = 1, .ksize_h = 1, .ksize_w = 1,
                  .size = 1, .maxval = 1, .stddev = 1, .learning_rate = 0.1f, .momentum = 0.9f, .beta1 = 0.9f,
                  .beta2 = 0.999f, .epsilon = 1e-7f, .edge_key = "op:/job:worker/task:0->/job:worker/task:1",
                  .peer_task = "/job:worker/task:1"};
    return a;
}

/* A node of op with n inputs shaped like candidate c (the written ones
 * variables, the others placeholders) in a graph of its own, or NULL. */
static fl_node *example_node(fl_graph *g, fl_op_kind op, int n, int c)
{
    fl_node *inputs[6];
    for (int i = 0; i < n; i++) {
        const input_like *like = &CANDIDATES[c][i < 6 ? i : 0];
        fl_shape shape = {.rank = like->rank};
        memcpy(shape.dims, like->dims, sizeof like->dims);
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        fl_attrs attrs = {.shape = shape};
        fl_node_spec spec = {.op = i < fl_op_def_of(op)->sig.writes_inputs ? FL_OP_VARIABLE : FL_OP_PLACEHOLDER,
                             .name = name, .dtype = like->dtype, .attrs = attrs, .exact_name = true};
        inputs[i] = fl_add_node(g, &spec);
    }
    if (op == FL_OP_CONST)
        return fl_scalar(g, 2.0f, "op");
    fl_node_spec spec = {.op = op, .name = "op", .inputs = inputs, .ninputs = n, .dtype = FL_FLOAT32,
                         .attrs = example_attrs(), .exact_name = true};
    return fl_add_node(g, &spec);
}

/* Encodes g as a partition, decodes it, and finds its node "op" again. */
static bool round_trips(fl_graph *g, fl_op_kind op, int n)
{
    fl_graph_partition sent = {.job = "worker", .graph = g}, got = {0};
    fl_wire_buf buf = {0};
    bool back = fl_partition_def_encode(&sent, &buf) == 0 && fl_partition_def_decode(buf.data, buf.len, &got) == 0;
    if (!back)
        diag("%s", fl_last_error());
    fl_node *node = back ? fl_graph_find(got.graph, "op") : NULL;
    bool same = node && node->op == op && node->ninputs == n &&
                node->has_output == fl_op_def_of(op)->sig.has_output;
    fl_wire_buf_free(&buf);
    fl_graph_partition_free(&got);
    return same;
}

static void check_wire(fl_op_kind op)
{
    const fl_op_signature *sig = &fl_op_def_of(op)->sig;
    if (sig->fused) {
        fl_status why = {0};
        ok(fl_partition_def_check_inputs(op, NULL, sig->min_inputs, &why) != 0,
           "%s: the wire refuses it (%s)", type_of(op), why.message);
        return;
    }
    int n = sig->min_inputs, built = -1;
    fl_graph *g = NULL;
    for (int c = 0; c < NCANDIDATES && built < 0; c++) {
        fl_graph_free(g);
        g = fl_graph_new();
        built = example_node(g, op, n, c) ? c : -1;
    }
    if (!ok(built >= 0, "%s: a node with %d inputs builds", type_of(op), n))
        diag("%s; give tests/test_op_checklist.c's CANDIDATES inputs its shape rule takes", fl_graph_error(g));
    else if (!ok(round_trips(g, op, n), "%s: with %d inputs it comes back from the wire as it went", type_of(op), n))
        diag("the wire's decoder checks inputs by the op's signature (src/distributed_runtime/partition/partition_def_nodes.c)");
    fl_graph_free(g);
}

/* The decoder's arity is the signature's range, a list bounded by the wire. */
static void check_wire_arity(fl_op_kind op)
{
    const fl_op_signature *sig = &fl_op_def_of(op)->sig;
    if (sig->fused)
        return;
    fl_graph *g = fl_graph_new();
    fl_node_spec spec = {.op = FL_OP_VARIABLE, .name = "v", .attrs = {.shape = fl_shape_make(1, 2)}};
    fl_node *v = fl_add_node(g, &spec), **vars = malloc((FL_WIRE_MAX_LIST + 1) * sizeof *vars);
    for (int i = 0; i <= FL_WIRE_MAX_LIST; i++) /* one variable, as many times as a count needs */
        vars[i] = v;
    int max = sig->max_inputs == FL_OP_INPUT_LIST ? FL_WIRE_MAX_LIST : sig->max_inputs;
    bool takes = true, refuses = true;
    fl_status why = {0};
    for (int k = sig->min_inputs; k <= max && k <= 8; k++)
        takes = takes && fl_partition_def_check_inputs(op, vars, k, &why) == 0;
    takes = takes && fl_partition_def_check_inputs(op, vars, max, &why) == 0;
    refuses = fl_partition_def_check_inputs(op, vars, max + 1, &why) != 0 &&
              (sig->min_inputs == 0 || fl_partition_def_check_inputs(op, vars, sig->min_inputs - 1, &why) != 0);
    ok(takes && refuses, "%s: the wire takes %d to %d inputs, as declared, and no other count", type_of(op),
       sig->min_inputs, max);
    free(vars);
    fl_graph_free(g);
}

int main(void)
{
    find_backends();
    for (int op = 0; op < FL_OP_COUNT; op++)
        check_op((fl_op_kind)op);
    for (int op = 0; op < FL_OP_COUNT; op++) {
        check_wire_arity((fl_op_kind)op);
        check_wire((fl_op_kind)op);
    }
    /* A backend that is not built has no table to check: say which were. */
    diag("backends built: %d besides the host (src/backends.mk)", nbackends - 1);
    return done_testing();
}
