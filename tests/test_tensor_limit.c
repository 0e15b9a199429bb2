/* test_tensor_limit.c: a node's output is bounded before it is allocated
 * (issue 35): the MatMul of two legal Fills, [2^24,1] x [1,2^24], asks for
 * 1.1 PB; through the API and through a partition from the wire the run
 * fails with RESOURCE_EXHAUSTED naming the node and the limit, the process
 * goes on, and the next run works. The limit can be set and read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed_runtime/partition/partition_def.h"
#include "distributed_runtime/partition/partition_exec.h"
#include "runtime.h"
#include "tap.h"

#define BIG (1 << 24)

static fl_node *fill(fl_graph *g, const char *name, fl_shape shape)
{
    fl_node_spec spec = {.op = FL_OP_FILL, .name = name, .dtype = FL_FLOAT32, .exact_name = true};
    spec.attrs.shape = shape;
    spec.attrs.value = 1.0f;
    return fl_add_node(g, &spec);
}

/* a [2^24,1], b [1,2^24], mm = a x b (1.1 PB), and small = a summed. */
static fl_node *build_petabyte(fl_graph *g)
{
    fl_node *a = fill(g, "a", fl_shape_make(2, BIG, 1)), *b = fill(g, "b", fl_shape_make(2, 1, BIG));
    fl_reduce_sum(g, a, NULL, 0, false, "small");
    return fl_matmul(g, a, b, false, false, "mm");
}

static void check_refusal(const char *what, const char *limit)
{
    ok(fl_last_error_code() == FL_RESOURCE_EXHAUSTED, "%s: RESOURCE_EXHAUSTED (got code %d)", what,
       (int)fl_last_error_code());
    contains(fl_last_error(), "mm: its output, float32 [16777216,16777216], needs 1125899906842624 bytes", what);
    contains(fl_last_error(), limit, "and it names the limit");
    contains(fl_last_error(), "FLOWLAB_MAX_TENSOR_BYTES", "and how to set it");
}

static void test_through_the_api(void)
{
    fl_graph *g = fl_graph_new();
    fl_node *mm = build_petabyte(g), *small = fl_graph_find(g, "small");
    ok(mm != NULL, "the 1.1 PB MatMul builds: %s", fl_graph_error(g));
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    char limit[64];
    snprintf(limit, sizeof limit, "over the limit of %zu bytes", fl_max_tensor_bytes());
    ok(fl_session_run(s, NULL, 0, &mm, 1, &out, NULL, 0) != 0 && !out, "fetching it fails, and the process goes on");
    check_refusal("through the API", limit);
    ok(fl_session_run(s, NULL, 0, &small, 1, &out, NULL, 0) == 0 && out, "a run after the failure works: %s",
       fl_last_error());
    ok(out && fl_tensor_scalar(out) == (float)BIG, "and computes: the sum of 2^24 ones");
    fl_tensor_free(out);
    fl_session_free(s);
    fl_graph_free(g);
}

static int run_partition(fl_partition_exec *e, const char *fetch, fl_tensor **out)
{
    const char *fetches[] = {fetch};
    fl_wire_run_partition run = {.step_id = 1, .lists = {{1, fetches}}};
    fl_partition_env env = {.task = "/job:worker/task:0"};
    return fl_partition_exec_run(e, &env, &run, out);
}

static void test_through_a_partition(void)
{
    fl_graph_partition p = {.job = "worker"};
    p.graph = fl_graph_new();
    build_petabyte(p.graph);
    fl_wire_buf buf = {0};
    fl_graph_partition q;
    ok(fl_partition_def_encode(&p, &buf) == 0 && fl_partition_def_decode(buf.data, buf.len, &q) == 0,
       "the partition of two legal Fills and their MatMul is accepted from the wire: %s", fl_last_error());
    fl_partition_exec *e = fl_partition_exec_new(&q, NULL, NULL);
    fl_set_max_tensor_bytes(256u << 20);
    fl_tensor *out = NULL;
    ok(run_partition(e, "mm", &out) != 0 && !out, "running it fails on the run's thread, without exit()");
    check_refusal("through a partition", "over the limit of 268435456 bytes");
    contains(fl_last_error(), "/job:worker/task:0", "the partition's error names the task");
    ok(run_partition(e, "small", &out) == 0 && out, "the next step of the partition works: %s", fl_last_error());
    ok(out && fl_tensor_scalar(out) == (float)BIG, "and computes"); /* out is the partition's own */
    fl_set_max_tensor_bytes(0);
    fl_partition_exec_free(e);
    fl_wire_buf_free(&buf);
    fl_graph_partition_free(&p);
}

static void test_setting_the_limit(void)
{
    size_t by_default = fl_max_tensor_bytes();
    ok(by_default >= (64u << 20), "the default is a fraction of physical memory: %zu bytes", by_default);
    fl_set_max_tensor_bytes(1000);
    ok(fl_max_tensor_bytes() == 1000, "fl_set_max_tensor_bytes sets it");
    fl_graph *g = fl_graph_new();
    fl_node *f = fill(g, "f", fl_shape_make(1, 1000)), *tiny = fill(g, "tiny", fl_shape_make(1, 10));
    fl_session *s = fl_session_new(g, NULL);
    fl_tensor *out = NULL;
    ok(fl_session_run(s, NULL, 0, &f, 1, &out, NULL, 0) != 0, "a 4000-byte Fill is over a limit of 1000");
    ok(fl_last_error_code() == FL_RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED");
    contains(fl_last_error(), "f: its output, float32 [1000], needs 4000 bytes, over the limit of 1000 bytes",
             "the error names the node, its size and the limit");
    ok(fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 1000)) == NULL && fl_last_error_code() == FL_RESOURCE_EXHAUSTED,
       "fl_tensor_new over the limit: NULL, RESOURCE_EXHAUSTED");
    ok(fl_session_run(s, NULL, 0, &tiny, 1, &out, NULL, 0) == 0 && out, "a 40-byte Fill runs: %s", fl_last_error());
    fl_tensor_free(out);
    setenv("FLOWLAB_MAX_TENSOR_BYTES", "5000", 1);
    fl_set_max_tensor_bytes(0);
    ok(fl_max_tensor_bytes() == 5000, "0 goes back to the default, FLOWLAB_MAX_TENSOR_BYTES when set");
    ok(fl_session_run(s, NULL, 0, &f, 1, &out, NULL, 0) == 0 && out, "and the Fill runs under 5000: %s",
       fl_last_error());
    fl_tensor_free(out);
    unsetenv("FLOWLAB_MAX_TENSOR_BYTES");
    ok(fl_max_tensor_bytes() == by_default, "without it, the default again");
    fl_session_free(s);
    fl_graph_free(g);
}

int main(void)
{
    test_through_the_api();
    test_through_a_partition();
    test_setting_the_limit();
    done_testing();
}
