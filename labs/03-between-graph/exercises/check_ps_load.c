/* check_ps_load.c: checks my_ps_load (exercise ps-load) on the chapter 1
 * model's variables: against loads worked out by hand for 2 and 3 ps tasks,
 * then against what the library's replica device setter decides. */
#include "exercises.h"
#include "../../common/check.h"
#include "../../common/model.h"

#define NVARS 8
#define MAX_PS 4

/* conv_1, conv_2, dense_1, dense_2: kernel then bias, as core_model creates them. */
static fl_shape model_shapes[NVARS];

static const struct {
    fl_ps_strategy strategy;
    int num_ps;
    int64_t bytes[MAX_PS];
    const char *why;
} by_hand[] = {
    {FL_PS_ROUND_ROBIN, 2, {13094016, 4520}, "kernels on task 0, biases on task 1"},
    {FL_PS_ROUND_ROBIN, 3, {44416, 12845224, 208896}, "variables 0,3,6 / 1,4,7 / 2,5"},
    {FL_PS_GREEDY_BY_BYTES, 2, {12848512, 250024}, "after dense_1's kernel all goes to task 1"},
    {FL_PS_GREEDY_BY_BYTES, 3, {48296, 12845440, 204800}, "after dense_1's kernel nothing joins task 1"},
};

static const char *strategy_name(fl_ps_strategy s)
{
    return s == FL_PS_ROUND_ROBIN ? "round-robin" : "greedy-by-bytes";
}

static void compare(const char *what, fl_ps_strategy strategy, int num_ps, const int64_t *want)
{
    int64_t bytes[MAX_PS];
    for (int k = 0; k < MAX_PS; k++)
        bytes[k] = -7;
    int rc = my_ps_load(model_shapes, NVARS, num_ps, strategy, bytes);
    if (rc == -1 && bytes[0] == -7)
        fail("not implemented yet (my_ps_load returned -1 for %d ps tasks, %s)", num_ps, strategy_name(strategy));
    if (rc != 0)
        fail("my_ps_load returned %d for %d ps tasks, %s; expected 0", rc, num_ps, strategy_name(strategy));
    for (int k = 0; k < num_ps; k++)
        if (bytes[k] != want[k])
            fail("%s, %d ps tasks: task %d holds %lld bytes, not %lld (%s)", strategy_name(strategy), num_ps, k,
                 (long long)bytes[k], (long long)want[k], what);
}

/* What the library's setter puts on each task for the same model. */
static void compare_with_setter(fl_ps_strategy strategy, int num_ps)
{
    char ps_hosts[128] = "";
    for (int k = 0; k < num_ps; k++)
        snprintf(ps_hosts + strlen(ps_hosts), sizeof ps_hosts - strlen(ps_hosts), "%s127.0.0.1:%d",
                 k ? "," : "", 2222 + k);
    fl_cluster *cluster = fl_cluster_from_flags(ps_hosts, "127.0.0.1:2230", "worker", 0);
    fl_replica_device_setter *setter = cluster ? fl_replica_device_setter_new(cluster, "", strategy) : NULL;
    if (!setter)
        fail("the check's cluster or setter: %s", fl_last_error());
    fl_graph *g = fl_graph_new();
    fl_replica_device_setter_push(g, setter);
    core_model(g, fl_placeholder(g, FL_FLOAT32, fl_shape_make(4, -1, 28, 28, 1), "image"));
    fl_device_pop(g);
    check_graph(g);
    int64_t want[MAX_PS];
    for (int k = 0; k < num_ps; k++)
        fl_replica_device_setter_ps_bytes(setter, k, &want[k], NULL);
    compare("what fl_replica_device_setter decides", strategy, num_ps, want);
    fl_graph_free(g);
    fl_replica_device_setter_free(setter);
    fl_cluster_free(cluster);
}

static void check_edges(void)
{
    int64_t bytes[2] = {-7, -7};
    fl_shape twins[2] = {fl_shape_make(1, 10), fl_shape_make(1, 10)};
    if (my_ps_load(twins, 2, 2, FL_PS_GREEDY_BY_BYTES, bytes) != 0 || bytes[0] != 40 || bytes[1] != 40)
        fail("greedy, two [10] variables on 2 tasks: %lld and %lld bytes, not 40 and 40 (a tie goes to the "
             "lowest index, and an empty task is the least loaded)", (long long)bytes[0], (long long)bytes[1]);
    if (my_ps_load(twins, 2, 0, FL_PS_ROUND_ROBIN, bytes) != -1)
        fail("0 ps tasks should return -1");
    if (my_ps_load(twins, 2, 2, (fl_ps_strategy)7, bytes) != -1)
        fail("strategy 7 should return -1");
}

int main(void)
{
    check_start("ps-load", "labs/03-between-graph/exercises/ps_load.c");
    model_shapes[0] = fl_shape_make(4, 5, 5, 1, 32), model_shapes[1] = fl_shape_make(1, 32);
    model_shapes[2] = fl_shape_make(4, 5, 5, 32, 64), model_shapes[3] = fl_shape_make(1, 64);
    model_shapes[4] = fl_shape_make(2, 3136, 1024), model_shapes[5] = fl_shape_make(1, 1024);
    model_shapes[6] = fl_shape_make(2, 1024, 10), model_shapes[7] = fl_shape_make(1, 10);
    for (size_t i = 0; i < sizeof by_hand / sizeof by_hand[0]; i++)
        compare(by_hand[i].why, by_hand[i].strategy, by_hand[i].num_ps, by_hand[i].bytes);
    for (int num_ps = 1; num_ps <= MAX_PS; num_ps++) {
        compare_with_setter(FL_PS_ROUND_ROBIN, num_ps);
        compare_with_setter(FL_PS_GREEDY_BY_BYTES, num_ps);
    }
    check_edges();
    pass();
}
