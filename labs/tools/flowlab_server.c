/* flowlab_server.c: one task of a cluster, as TensorFlow's
 * tf.train.Server(cluster, job_name, task_index).join(): it offers its
 * task's devices to a client that runs a graph across tasks (in-graph
 * replication, chapter 3), serves chapter 3's ps requests too, and exits
 * once its client has said goodbye, unless --keep_running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowlab.h"
#include "flowlab_cluster.h"

static const char *program = "flowlab_server";

typedef struct {
    const char *ps_hosts, *worker_hosts, *job_name;
    long task_index;
    long num_ps, port_base; /* a launcher's tasks: how many are ps, their first port */
    bool keep_running;
    fl_cluster_security_flags security; /* --cluster_secret_file, --tls_*: chapter 4's securing a cluster */
    fl_server_options limits;           /* --hello_timeout_s, --max_*: what a stranger or client may hold */
} server_flags;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --ps_hosts H:P,... --worker_hosts H:P,... --job_name ps|worker --task_index N\n"
            "   or: %s with TF_CONFIG set, or started by srun/mpirun [--num_ps M] [--port_base P]\n"
            "A task server (TensorFlow's tf.train.Server plus join()): it listens at its task's address,\n"
            "offers this machine's devices (/cpu:0 and each /gpu:N) to one client that runs a graph across\n"
            "the tasks (in_graph_towers --ps_hosts ... --worker_hosts ...), sends the values its partition\n"
            "computes straight to the tasks that need them, and serves chapter 3's ps requests as well.\n"
            "It exits (status 0) once its client has said goodbye.\n"
            "  --ps_hosts H:P,...      the ps tasks' addresses (may be empty)\n"
            "  --worker_hosts H:P,...  the worker tasks' addresses\n"
            "  --job_name ps|worker    this task's job; without the cluster flags, TF_CONFIG is read, else the\n"
            "                          variables of the launcher that started it (Slurm, Open MPI, MPICH)\n"
            "  --task_index N          this task's index in its job (default 0)\n"
            "  --num_ps N              with a launcher: its first N ranks are ps tasks (default 1)\n"
            "  --port_base P           with a launcher: the first port on each node (default 8888)\n"
            "  --keep_running          serve client after client; never exit by itself\n"
            FL_CLUSTER_SECURITY_HELP
            FL_SERVER_OPTIONS_HELP
            "Waits for other tasks up to FLOWLAB_TASK_DEADLINE seconds (default 120).\n"
            "Example: one ps and two workers on this machine, then their client:\n"
            "  build/labs/tools/flowlab_server --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 --job_name=ps &\n"
            "  (the same with --job_name=worker --task_index=0, and --task_index=1)\n"
            "  build/labs/02-in-graph-towers/in_graph_towers --ps_hosts=localhost:2222 \\\n"
            "      --worker_hosts=localhost:2223,localhost:2224\n"
            "or start all three with build/labs/tools/launch_cluster --ps 1 --workers 2 --base_port 2222 \\\n"
            "      --cluster_secret_file S build/labs/tools/flowlab_server\n"
            "and give the client the same --cluster_secret_file S (S: a 0600 file of 16 to 1024 bytes).\n",
            program, program);
}

static long parse_number(const char *flag, const char *value, long min, long max)
{
    char *end;
    long n = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || n < min || n > max) {
        fprintf(stderr, "%s: %s %s: want a whole number from %ld to %ld (see --help)\n", program, flag, value, min,
                max);
        exit(2);
    }
    return n;
}

/* A limit of the task server's (--max_partitions ...); false when flag is none. */
static bool limit_flag(fl_server_options *limits, const char *flag, const char *value)
{
    int rc = fl_server_option_flag(limits, flag, value);
    if (rc < 0) {
        fprintf(stderr, "%s: %s (see --help)\n", program, fl_last_error());
        exit(2);
    }
    return rc > 0;
}

/* One flag with its value (--flag=value or --flag value); false when unknown. */
static bool set_flag(server_flags *f, const char *flag, const char *value)
{
    if (strcmp(flag, "--ps_hosts") == 0)
        f->ps_hosts = value;
    else if (strcmp(flag, "--worker_hosts") == 0)
        f->worker_hosts = value;
    else if (strcmp(flag, "--job_name") == 0)
        f->job_name = value;
    else if (strcmp(flag, "--task_index") == 0)
        f->task_index = parse_number(flag, value, 0, 65535);
    else if (strcmp(flag, "--num_ps") == 0)
        f->num_ps = parse_number(flag, value, 0, 65535);
    else if (strcmp(flag, "--port_base") == 0)
        f->port_base = parse_number(flag, value, 1, 65535);
    else if (!fl_cluster_security_flag(&f->security, flag, value) && !limit_flag(&f->limits, flag, value))
        return false;
    return true;
}

/* The cluster flags, in one place: programs that open connections share
 * their flags' meaning (the secret and TLS flags join them here). */
static server_flags parse_server_flags(int argc, char **argv)
{
    server_flags f = {.num_ps = 1, .port_base = 8888};
    for (int i = 1; i < argc; i++) {
        char flag[64];
        const char *eq = strchr(argv[i], '=');
        size_t len = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        snprintf(flag, sizeof flag, "%.*s", (int)len, argv[i]);
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(flag, "--keep_running") == 0) {
            f.keep_running = !eq || strcmp(eq + 1, "false") != 0;
            continue;
        }
        if (fl_cluster_security_switch(&f.security, argv[i]))
            continue;
        const char *value = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
        if (!set_flag(&f, flag, value ? value : "")) {
            fprintf(stderr, "%s: unknown flag %s (see --help)\n", program, flag);
            exit(2);
        }
        if (!value) {
            fprintf(stderr, "%s: %s needs a value (see --help)\n", program, flag);
            exit(2);
        }
        i += eq ? 0 : 1;
    }
    return f;
}

static fl_cluster *read_cluster(const server_flags *f)
{
    bool any = f->ps_hosts || f->worker_hosts || f->job_name;
    const char *source = any ? "flags" : fl_cluster_environment_source();
    if (!source) {
        fprintf(stderr, "%s: no cluster: give --ps_hosts, --worker_hosts and --job_name, or TF_CONFIG (see --help)\n",
                program);
        exit(2);
    }
    fl_cluster *cluster = any ? fl_cluster_from_flags(f->ps_hosts, f->worker_hosts, f->job_name, (int)f->task_index)
                              : fl_cluster_from_environment((int)f->num_ps, (int)f->port_base);
    if (!cluster || fl_cluster_apply_security(cluster, &f->security) != 0) {
        fprintf(stderr, "%s: %s (see --help)\n", program, fl_last_error());
        exit(2);
    }
    return cluster;
}

/* "/job:worker/task:1 at 127.0.0.1:2223 offers /cpu:0, /gpu:0 (opencl)" */
static void say_what_it_offers(const fl_cluster *c, bool keep_running)
{
    const char *job = fl_cluster_job_name(c);
    int task = fl_cluster_task_index(c);
    fl_device_info devices[32];
    int n = fl_list_devices(devices, 32);
    printf("%s: /job:%s/task:%d at %s:%d offers", program, job, task, fl_cluster_task_host(c, job, task),
           fl_cluster_task_port(c, job, task));
    for (int i = 0; i < n; i++)
        printf("%s %s (%s)", i ? "," : "", devices[i].name, devices[i].backend);
    printf("\n%s: serving partitions and ps requests; %s\n", program,
           keep_running ? "--keep_running: stop it with a signal" : "exits once its client says goodbye");
    fflush(stdout);
}

/* What crossed tasks here: "ran 30 steps; 0.41 MB per step from other tasks, 0.40 MB to them". */
static void say_what_crossed(fl_server *server, const fl_cluster *cluster)
{
    fl_server_stats stats;
    uint64_t sent, received;
    fl_server_get_stats(server, &stats);
    fl_remote_traffic(cluster, &sent, &received);
    if (stats.partition_steps == 0)
        return;
    double steps = (double)stats.partition_steps;
    printf("%s: ran %llu steps of partitions; per step, %.3f MB of values came from other tasks and %.3f MB went "
           "to them\n",
           program, (unsigned long long)stats.partition_steps, (double)stats.value_bytes_received / steps / 1e6,
           (double)sent / steps / 1e6);
}

int main(int argc, char **argv)
{
    server_flags f = parse_server_flags(argc, argv);
    fl_cluster *cluster = read_cluster(&f);
    fl_server *server = fl_server_start(cluster, &f.limits);
    if (!server) {
        fprintf(stderr, "%s: %s\n", program, fl_last_error());
        fl_cluster_free(cluster);
        return 1;
    }
    say_what_it_offers(cluster, f.keep_running);
    int rc = fl_server_join(server, 0);
    while (f.keep_running) /* a client's goodbye does not end it: stopped by a signal */
        pause();
    say_what_crossed(server, cluster);
    if (rc == 0)
        printf("%s: its work is done (its client, or every worker of chapter 3, said goodbye or is gone, as "
               "the log says); exiting\n", program);
    else
        fprintf(stderr, "%s: the server stopped: %s\n", program, fl_last_error());
    fl_server_stop(server);
    fl_cluster_free(cluster);
    return rc == 0 ? 0 : 1;
}
