/* fuzz_graph_run.c: a libFuzzer target that decodes a partition's graph
 * (REGISTER_PARTITION's payload), registers it as a task server does
 * (fl_partition_exec_new) and RUNS it on the host device (`make fuzz`):
 * its initializers first, then every node alone, each placeholder fed a
 * small tensor of its shape. Any run may fail with a message; ASan and
 * UBSan catch a read or write out of bounds, abort() a broken promise.
 * An input that starts with 'G' is a program instead (graph_program.h):
 * nodes of any op, inputs and attrs, built as the decoder builds them,
 * so the fuzzer reaches the shape rules and kernels without first
 * having to find the wire format's every field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/partition/partition_exec.h"
#include "graph_program.h"
#include "runtime.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define MAX_FEED 4096 /* elements a fed placeholder may have */
#define MAX_NODES 256

static unsigned char feed_words[MAX_FEED * 4]; /* small numbers: 0, 1, 2 as int32 or float32 */

static void check(bool promise, const char *what)
{
    if (!promise) {
        fprintf(stderr, "fuzz_graph_run: broken promise: %s\n", what);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("FLOWLAB_BACKEND", "host", 1);
    fl_set_max_tensor_bytes(4u << 20); /* a node over 4 MB is refused: runs stay quick */
    for (int i = 0; i < MAX_FEED; i++) {
        int32_t v = i % 3;
        memcpy(&feed_words[4 * i], &v, 4);
    }
    return 0;
}

typedef struct {
    const char *names[MAX_NODES];
    fl_wire_tensor values[MAX_NODES];
    int count;
} feeds;

/* Every placeholder with a small shape (-1 read as 2) is fed. */
static void make_feeds(const fl_graph *g, feeds *f)
{
    f->count = 0;
    for (int i = 0; i < fl_graph_node_count(g) && f->count < MAX_NODES; i++) {
        const fl_node *n = fl_graph_node(g, i);
        if (n->op != FL_OP_PLACEHOLDER)
            continue;
        fl_shape shape = n->attrs.shape;
        int64_t count = 1;
        for (int d = 0; d < shape.rank; d++) {
            shape.dims[d] = shape.dims[d] < 0 ? 2 : shape.dims[d];
            count *= shape.dims[d] <= MAX_FEED ? shape.dims[d] : MAX_FEED + 1;
            count = count <= MAX_FEED ? count : MAX_FEED + 1;
        }
        if (count > MAX_FEED)
            continue;
        f->names[f->count] = n->name;
        f->values[f->count++] = (fl_wire_tensor){.dtype = n->dtype, .shape = shape, .count = count,
                                                 .data = feed_words, .bytes = (size_t)count * 4};
    }
}

/* One step: the named nodes fetched (with a value) or run (without). */
static int run_step(fl_partition_exec *e, feeds *f, const char **names, int n, bool as_targets)
{
    fl_wire_run_partition run = {.step_id = 1, .nfeeds = f->count, .feed_names = f->names, .feed_values = f->values};
    run.lists[as_targets ? 1 : 0] = (fl_wire_name_list){n, names};
    fl_partition_env env = {.task = "/job:worker/task:0"};
    fl_tensor *out[MAX_NODES] = {0};
    int rc = fl_partition_exec_run(e, &env, &run, out);
    if (rc != 0)
        check(fl_last_error()[0] != '\0', "a failed step says why");
    if (getenv("FUZZ_GRAPH_RUN_VERBOSE")) /* to see what a seed reaches */
        fprintf(stderr, "%s %s: %s\n", as_targets ? "run" : "fetch", names[0], rc ? fl_last_error() : "ok");
    for (int i = 0; i < n && !as_targets; i++) /* the outputs are the partition's own */
        check((rc == 0) == (out[i] != NULL), "a step's outputs are all there or all NULL");
    return rc;
}

static void run_partition(fl_partition_exec *e, const fl_graph *g, feeds *f)
{
    const char *inits[MAX_NODES];
    int ninits = 0;
    for (int i = 0; i < fl_graph_node_count(g) && ninits < MAX_NODES; i++) {
        const fl_node *n = fl_graph_node(g, i);
        if (n->op == FL_OP_VARIABLE && n->initializer)
            inits[ninits++] = n->initializer->name;
    }
    if (ninits)
        run_step(e, f, inits, ninits, true);
    for (int i = 0; i < fl_graph_node_count(g) && i < MAX_NODES; i++) {
        const fl_node *n = fl_graph_node(g, i);
        const char *name = n->name;
        run_step(e, f, &name, 1, !n->has_output);
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fl_graph_partition p;
    fl_wire_buf program = {0};
    if (size > 0 && data[0] == 'G') { /* a program: its graph's bytes from the encoder */
        if (fl_graph_program_encode(data + 1, size - 1, &program) != 0)
            return 0;
        data = program.data;
        size = program.len;
    }
    int decoded = fl_partition_def_decode(data, size, &p);
    fl_wire_buf_free(&program);
    if (decoded != 0) {
        check(fl_last_error_code() == FL_INVALID_ARGUMENT, "a refusal is INVALID_ARGUMENT");
        check(p.graph == NULL, "a refused partition leaves nothing behind");
        return 0;
    }
    feeds *f = calloc(1, sizeof *f);
    const fl_graph *g = p.graph; /* the exec takes p's contents: the graph lives on in it */
    make_feeds(g, f);
    fl_partition_exec *e = fl_partition_exec_new(&p, NULL, NULL);
    check(e != NULL, "an accepted partition registers");
    run_partition(e, g, f);
    fl_partition_exec_free(e);
    free(f);
    return 0;
}
