/* test_cluster_env.c: the cluster from a launcher's environment
 * (src/cluster/cluster_slurm.c, cluster_mpi_launcher.c, cluster_environment.c):
 * Slurm's step variables, Open MPI's and MPICH's ranks, the ps taken first,
 * ports per node from the base, the order of the sources, and every
 * malformed or contradictory variable refused with a message naming it;
 * FLOWLAB_TASK_DEADLINE's too. */
#include <stdlib.h>

#include "flowlab.h"
#include "runtime.h"
#include "tap.h"

static const char *const launcher_variables[] = {
    "TF_CONFIG", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};

/* Clears every variable a resolver reads, then sets "NAME=value" ones. */
static void set_environment(const char *const *assignments)
{
    for (size_t i = 0; i < sizeof launcher_variables / sizeof *launcher_variables; i++)
        unsetenv(launcher_variables[i]);
    for (; *assignments; assignments++) {
        char name[64];
        const char *eq = strchr(*assignments, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *assignments), *assignments);
        setenv(name, eq + 1, 1);
    }
}

/* The assignments of a case, for its test's name ("nothing" for none). */
static const char *joined(const char *const *assignments, char *buf, size_t len)
{
    snprintf(buf, len, "%s", *assignments ? "" : "nothing");
    for (; *assignments; assignments++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "", *assignments);
    return buf;
}

/* "ps vm:8888 | worker vm:8889 vm:8890 | me worker 1", or the error. */
static const char *describe(fl_cluster *c, char *buf, size_t len)
{
    if (!c) {
        snprintf(buf, len, "error: %s", fl_last_error());
        return buf;
    }
    static const char *const jobs[] = {"ps", "worker"};
    buf[0] = '\0';
    for (int j = 0; j < 2; j++) {
        snprintf(buf + strlen(buf), len - strlen(buf), "%s", jobs[j]);
        for (int t = 0; t < fl_cluster_num_tasks(c, jobs[j]); t++)
            snprintf(buf + strlen(buf), len - strlen(buf), " %s:%d", fl_cluster_task_host(c, jobs[j], t),
                     fl_cluster_task_port(c, jobs[j], t));
        snprintf(buf + strlen(buf), len - strlen(buf), " | ");
    }
    snprintf(buf + strlen(buf), len - strlen(buf), "me %s %d", fl_cluster_job_name(c), fl_cluster_task_index(c));
    fl_cluster_free(c);
    return buf;
}

typedef struct {
    const char *env[10];
    int num_ps, port_base;
    const char *want; /* describe()'s text, or the start of "error: ..." and a part of it after "..." */
} env_case;

static void check_case(const env_case *k, fl_cluster *(*resolve)(int, int), const char *what)
{
    char got[1024];
    set_environment(k->env);
    describe(resolve(k->num_ps, k->port_base), got, sizeof got);
    const char *dots = strstr(k->want, "...");
    if (!dots) {
        is_string(got, k->want, what);
        return;
    }
    bool match = strncmp(got, k->want, (size_t)(dots - k->want)) == 0 && strstr(got, dots + 3);
    ok(match, "%s: %s", what, got);
    if (!match)
        diag("wanted %s", k->want);
}

#define STEP(rank, n, nodes, per_node)                                                                   \
    "SLURM_PROCID=" rank, "SLURM_STEP_NUM_TASKS=" n, "SLURM_STEP_NODELIST=" nodes,                        \
        "SLURM_STEP_TASKS_PER_NODE=" per_node

static void test_slurm(void)
{
    static const env_case cases[] = {
        {{STEP("0", "3", "vm", "3")}, 1, 8888, "ps vm:8888 | worker vm:8889 vm:8890 | me ps 0"},
        {{STEP("2", "3", "vm", "3")}, 1, 8888, "ps vm:8888 | worker vm:8889 vm:8890 | me worker 1"},
        {{STEP("4", "7", "n[1-3,7]", "2(x3),1")}, 2, 2222,
         "ps n1:2222 n1:2223 | worker n2:2222 n2:2223 n3:2222 n3:2223 n7:2222 | me worker 2"},
        {{STEP("0", "4", "gpu[08-09]", "2(x2)")}, 0, 9000,
         "ps | worker gpu08:9000 gpu08:9001 gpu09:9000 gpu09:9001 | me worker 0"},
        {{STEP("1", "3", "a,b", "1,2")}, 1, 8888, "ps a:8888 | worker b:8888 b:8889 | me worker 0"},
        {{STEP("3", "3", "vm", "3")}, 1, 8888, "error: SLURM_PROCID=\"3\": expected a rank from 0 to 2 ..."},
        {{STEP("-1", "3", "vm", "3")}, 1, 8888, "error: SLURM_PROCID=\"-1\"..."},
        {{STEP("0", "x", "vm", "3")}, 1, 8888, "error: SLURM_STEP_NUM_TASKS=\"x\": expected ..."},
        {{STEP("0", "3", "vm", "2(x")}, 1, 8888,
         "error: SLURM_STEP_TASKS_PER_NODE=\"2(x\": \"2(x\" is not a count of tasks such as 2 or 2(x3)..."},
        {{STEP("0", "3", "vm", "2,")}, 1, 8888, "error: SLURM_STEP_TASKS_PER_NODE=\"2,\": \"\" is not a count..."},
        {{STEP("0", "3", "vm", "0(x3)")}, 1, 8888, "error: SLURM_STEP_TASKS_PER_NODE=\"0(x3)\"..."},
        {{STEP("0", "3", "vm", "3(x0)")}, 1, 8888, "error: SLURM_STEP_TASKS_PER_NODE=\"3(x0)\"..."},
        {{STEP("0", "4", "n[1-2]", "2(x2)x")}, 1, 8888, "error: SLURM_STEP_TASKS_PER_NODE=\"2(x2)x\"..."},
        {{STEP("0", "4", "vm", "2(x2)")}, 1, 8888,
         "error: SLURM_STEP_NODELIST=\"vm\" names 1 node but SLURM_STEP_TASKS_PER_NODE=\"2(x2)\" counts tasks "
         "on 2..."},
        {{STEP("0", "3", "n[1-2]", "1(x2)")}, 1, 8888,
         "error: SLURM_STEP_TASKS_PER_NODE=\"1(x2)\" adds up to 2 tasks but SLURM_STEP_NUM_TASKS is 3..."},
        {{STEP("0", "2", "n[1-2", "1(x2)")}, 1, 8888,
         "error: SLURM_STEP_NODELIST: host list \"n[1-2\": a '[' without its ']'..."},
        {{STEP("0", "2", "vm", "2")}, 2, 8888, "error: 2 ps tasks and 2 tasks in all (SLURM_STEP_NUM_TASKS)..."},
        {{STEP("0", "2", "vm", "2")}, -1, 8888, "error: -1 ps tasks: expected 0 or more..."},
        {{STEP("0", "2", "vm", "2")}, 1, 65535, "error: port base 65535: rank 1 would listen on port 65536..."},
        {{STEP("0", "2", "vm", "2")}, 1, 0, "error: port base 0: rank 0 would listen on port 0..."},
        {{"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=1", "SLURM_STEP_TASKS_PER_NODE=1"}, 0, 8888,
         "error: SLURM_STEP_NODELIST is not set: start each task with srun..."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char what[300], env[200];
        snprintf(what, sizeof what, "Slurm %s, %d ps, base %d", joined(cases[i].env, env, sizeof env),
                 cases[i].num_ps, cases[i].port_base);
        check_case(&cases[i], fl_cluster_from_slurm, what);
    }
}

/* A node name of 100 KB in Slurm's list is refused, naming the rank, not
 * cut into another name. */
static void test_long_node_name(void)
{
    size_t len = 100 * 1024;
    char *name = malloc(len + 1);
    memset(name, 'n', len);
    name[len] = '\0';
    const char *const env[] = {"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2", "SLURM_STEP_TASKS_PER_NODE=2", NULL};
    set_environment(env);
    setenv("SLURM_STEP_NODELIST", name, 1);
    fl_cluster *c = fl_cluster_from_slurm(1, 8888);
    ok(!c && strstr(fl_last_error(), "characters long; a host name has at most 253"),
       "a node name of 100 KB is refused: %.120s", fl_last_error());
    fl_cluster_free(c);
    unsetenv("SLURM_STEP_NODELIST");
    free(name);
}

static void test_mpi_launchers(void)
{
    static const env_case cases[] = {
        {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_RANK=1",
          "OMPI_COMM_WORLD_LOCAL_SIZE=3"},
         1, 8888, "ps 127.0.0.1:8888 | worker 127.0.0.1:8889 127.0.0.1:8890 | me worker 0"},
        {{"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=2"}, 0, 7000,
         "ps | worker 127.0.0.1:7000 127.0.0.1:7001 | me worker 0"},
        {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
          "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
         1, 8888, "error: OMPI_COMM_WORLD_LOCAL_SIZE is 2 but OMPI_COMM_WORLD_SIZE is 4: the processes span several "
                  "nodes...launch with srun"},
        {{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=4"}, 1, 8888,
         "error: OMPI_COMM_WORLD_RANK=\"5\": expected a rank from 0 to 3 (OMPI_COMM_WORLD_SIZE is 4)..."},
        {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_SIZE=2"}, 1, 8888,
         "error: OMPI_COMM_WORLD_LOCAL_RANK is not set though OMPI_COMM_WORLD_RANK is..."},
        {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=0",
          "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
         1, 8888, "error: OMPI_COMM_WORLD_LOCAL_RANK=\"0\": expected 1, as OMPI_COMM_WORLD_RANK..."},
        {{"PMI_RANK=0", "PMI_SIZE=2"}, 1, 8888, "error: MPI_LOCALNRANKS is not set though PMI_RANK is: MPICH's..."},
        {{"PMI_RANK=0", "PMI_SIZE=1", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=1"}, 1, 8888,
         "error: 1 ps task and 1 task in all (PMI_SIZE)...at least one worker"},
        {{NULL}, 1, 8888, "error: neither OMPI_COMM_WORLD_RANK (Open MPI's mpirun) nor PMI_RANK..."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char what[300], env[200];
        snprintf(what, sizeof what, "MPI launcher %s, %d ps", joined(cases[i].env, env, sizeof env), cases[i].num_ps);
        check_case(&cases[i], fl_cluster_from_mpi_launcher, what);
    }
}

/* Which source wins, as flowlab_cluster.h orders them. */
static void test_order(void)
{
    static const struct {
        const char *env[10];
        const char *want;
    } cases[] = {
        {{NULL}, "(none)"},
        {{"TF_CONFIG={}", STEP("0", "1", "vm", "1"), "OMPI_COMM_WORLD_RANK=0"}, "TF_CONFIG"},
        {{STEP("1", "3", "vm", "3")}, "Slurm"},
        {{STEP("1", "3", "vm", "3"), "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3"}, "Slurm"},
        {{STEP("1", "3", "vm", "3"), "PMI_RANK=1", "PMI_SIZE=3"}, "Slurm"},
        /* srun -n1 mpirun -np 3: every rank inherits the outer step's rank 0 of 1 */
        {{STEP("0", "1", "vm", "1"), "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3"}, "Open MPI"},
        {{STEP("0", "1", "vm", "1"), "PMI_RANK=1", "PMI_SIZE=3"}, "MPICH"},
        {{"OMPI_COMM_WORLD_RANK=0", "PMI_RANK=1"}, "Open MPI"},
        {{"PMI_RANK=1"}, "MPICH"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        set_environment(cases[i].env);
        const char *got = fl_cluster_environment_source();
        char what[300], env[240];
        snprintf(what, sizeof what, "with %s the source is %s", joined(cases[i].env, env, sizeof env),
                 cases[i].want);
        is_string(got ? got : "(none)", cases[i].want, what);
    }
}

/* fl_cluster_from_environment reads what the order chose. */
static void test_from_environment(void)
{
    static const env_case cases[] = {
        {{STEP("0", "1", "vm", "1"), "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3",
          "OMPI_COMM_WORLD_LOCAL_RANK=2", "OMPI_COMM_WORLD_LOCAL_SIZE=3"},
         1, 8888, "ps 127.0.0.1:8888 | worker 127.0.0.1:8889 127.0.0.1:8890 | me worker 1"},
        {{STEP("2", "3", "vm", "3")}, 1, 8888, "ps vm:8888 | worker vm:8889 vm:8890 | me worker 1"},
        {{"TF_CONFIG={\"cluster\": {\"worker\": [\"h:1\", \"h:2\"]}, \"task\": {\"type\": \"worker\", \"index\": 1}}",
          STEP("0", "3", "vm", "3")},
         1, 8888, "ps | worker h:1 h:2 | me worker 1"},
        {{NULL}, 1, 8888, "error: no cluster in the environment: none of TF_CONFIG, SLURM_PROCID (srun)..."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char what[200];
        snprintf(what, sizeof what, "fl_cluster_from_environment, case %zu", i + 1);
        check_case(&cases[i], fl_cluster_from_environment, what);
    }
}

/* FLOWLAB_TASK_DEADLINE (seconds, 120 by default): a value that is no
 * number of seconds above 0 fails every cluster's making, naming the
 * variable and the value; read later, it falls back to 120 with a WARNING. */
static void test_task_deadline(void)
{
    const char *const bad[] = {"abc", "0", "-5", "30s", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("FLOWLAB_TASK_DEADLINE", bad[i], 1);
        char quoted[32];
        snprintf(quoted, sizeof quoted, "FLOWLAB_TASK_DEADLINE=\"%s\"", bad[i]);
        fl_cluster *c = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
        ok(!c && fl_last_error_code() == FL_INVALID_ARGUMENT && strstr(fl_last_error(), quoted),
           "FLOWLAB_TASK_DEADLINE=\"%s\" fails the cluster, naming it: %s", bad[i], c ? "(made)" : fl_last_error());
        fl_cluster_free(c);
        c = fl_cluster_from_tf_config("{\"cluster\": {\"worker\": [\"127.0.0.1:2\"]}, "
                                      "\"task\": {\"type\": \"worker\", \"index\": 0}}");
        ok(!c && strstr(fl_last_error(), quoted), "and the cluster from TF_CONFIG: %s", fl_last_error());
        fl_cluster_free(c);
        ok(fl_task_deadline_s() == 120, "read anyway, it is the default, 120 s (%g; with a WARNING once)",
           fl_task_deadline_s());
    }
    setenv("FLOWLAB_TASK_DEADLINE", "2.5", 1);
    fl_cluster *c = fl_cluster_from_flags("127.0.0.1:1", "127.0.0.1:2", "worker", 0);
    ok(c && fl_task_deadline_s() == 2.5, "2.5 is taken: 2.5 s (%g)", fl_task_deadline_s());
    fl_cluster_free(c);
    unsetenv("FLOWLAB_TASK_DEADLINE");
    ok(fl_task_deadline_s() == 120, "unset: 120 s (%g)", fl_task_deadline_s());
}

int main(void)
{
    test_task_deadline();
    test_slurm();
    test_long_node_name();
    test_mpi_launchers();
    test_order();
    test_from_environment();
    return done_testing();
}
