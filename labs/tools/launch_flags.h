/* launch_flags.h: launch_cluster's flags: the usage text, and parsing them
 * into options, every value checked, a bad one ending the run with exit
 * status 2 and a message naming the flag. */
#ifndef FLOWLAB_LAUNCH_FLAGS_H
#define FLOWLAB_LAUNCH_FLAGS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_links.h"

enum { MAX_PER_JOB = 64, LAUNCH_MAX_TASKS = 2 * MAX_PER_JOB };

static const char usage_text[] =
    "usage: launch_cluster --ps N --workers M [options] [--] PROGRAM [ARGS...]\n"
    "   or: launch_cluster --links RATE[,DELAY] --mpi_ranks N [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Starts a cluster of tasks on this machine, as chapter 3 runs them: N ps tasks and\n"
    "M worker tasks, each its own process running\n"
    "  PROGRAM ARGS... --ps_hosts=HOSTS --worker_hosts=HOSTS --job_name=ps|worker --task_index=I\n"
    "      --cluster_secret_file=F\n"
    "where HOSTS lists 127.0.0.1:PORT addresses, comma-separated, the same for every task,\n"
    "and F is the run's shared secret, made for it unless --no_secret (see below).\n"
    "Every line a task prints comes out with the task's name in front (\"ps0: \",\n"
    "\"worker1: \"): its stdout on stdout, its stderr on stderr, never cut mid-line.\n"
    "The launcher's own lines start with \"launch_cluster: \". Tasks read /dev/null.\n"
    "\n"
    "How a run ends:\n"
    "  - a task that fails (exits non-zero or is killed by a signal) is named with its\n"
    "    status, and every other task is stopped: SIGTERM, then SIGKILL after --stop_grace;\n"
    "  - once every worker has exited 0, each ps task should exit by itself (a ps exits\n"
    "    when every worker has said goodbye); a ps still running --grace seconds later\n"
    "    is stopped and reported, because a ps that never exits is a bug;\n"
    "  - past --deadline everything is stopped, naming the tasks it was waiting for;\n"
    "  - Ctrl-C (SIGINT), SIGTERM or SIGHUP to the launcher stop every task the same way.\n"
    "  A task is stopped with its whole process group, so what it started goes too.\n"
    "\n"
    "Options:\n"
    "  --ps N            how many ps tasks (0 to 64; required)\n"
    "  --workers M       how many worker tasks (1 to 64; required)\n"
    "  --base_port P     use ports P, P+1, ... (ps tasks first, then workers), each checked\n"
    "                    free; default: free ports the system picks\n"
    "  --deadline S      seconds the whole run may take (default 600)\n"
    "  --grace S         seconds the ps tasks get to exit after the last worker (default 30)\n"
    "  --stop_grace S    seconds between SIGTERM and SIGKILL when stopping tasks (default 5)\n"
    "  --cluster_secret_file F  give every task this secret file (mode 0600, yours)\n"
    "  --no_secret       give the tasks no secret: anyone who can reach their ports may join\n"
    "                    (only for programs that do not take --cluster_secret_file)\n"
    "  --make_secret     the default, kept for old scripts: without --cluster_secret_file or\n"
    "                    --no_secret, the launcher makes a fresh shared secret for the run (a 0600\n"
    "                    file in a run directory of its own, removed at the end) and gives every\n"
    "                    task --cluster_secret_file naming it, so only the run's tasks can connect\n"
    "  --links RATE[,DELAY]  real links instead of loopback: each task in a network namespace of\n"
    "                    its own (flowlab-PID-NAME), joined to the others by a bridge, its link\n"
    "                    shaped by tc's token bucket to RATE each way (tc's units: 100mbit, 1gbit,\n"
    "                    10gbit), after DELAY one way if given (100us, 2ms; needs the kernel's netem).\n"
    "                    The tasks listen on 10.233.S.2, .3, ... port 2222, in a subnet no address of\n"
    "                    this machine is in; the bridge (this machine's side) is 10.233.S.1. At the\n"
    "                    end the launcher prints the bytes each task's link carried, then removes\n"
    "                    every namespace and the bridge by name (and those of a launcher that was\n"
    "                    killed). Needs root and iproute2 (ip, tc); refuses, saying why, without them\n"
    "  --mpi_ranks N     with --links, instead of --ps and --workers: run PROGRAM as N MPI ranks\n"
    "                    (1 to 64), each in a namespace of its own, by mpirun -np N with Open MPI's\n"
    "                    TCP transport over the links (shared memory off) and PMIx reaching the\n"
    "                    ranks over the bridge; OMPI_ALLOW_RUN_AS_ROOT is set (--links runs as\n"
    "                    root). The ranks get no cluster flags and no secret\n"
    "  --help            this text\n"
    "Flags take their value as the next argument or after '=': --ps 2, --ps=2; seconds may\n"
    "be fractional. Everything from PROGRAM on (or after --) belongs to the task program.\n"
    "\n"
    "Environment: unless POCL_DEVICES is set already, each task gets POCL_DEVICES=pthread\n"
    "and POCL_MAX_PTHREAD_COUNT=1 (kept if set), so each worker has one single-core PoCL\n"
    "device of its own. A free port is free when chosen: another program could take it\n"
    "before the task binds it (the task then says so); --base_port avoids that race.\n"
    "\n"
    "Exit status: 0 only when every task exited 0; 1 when a task failed, a ps did not exit\n"
    "after the workers or the deadline passed; 2 for a bad flag or a port in use; 128+N when\n"
    "the launcher was stopped by signal N.\n"
    "\n"
    "Example: one ps and two workers of your own trainer, for at most five minutes:\n"
    "  build/labs/tools/launch_cluster --ps 1 --workers 2 --deadline 300 build/labs/03-between-graph/between_graph --train_steps 200\n";

typedef struct {
    int ps, workers, base_port;
    double deadline, grace, stop_grace;
    char **program; /* PROGRAM ARGS..., the NULL-terminated tail of argv */
    bool make_secret;        /* the default; false with --no_secret or --cluster_secret_file */
    bool no_secret;          /* --no_secret */
    const char *secret_file; /* given to every task; NULL: a secret of the run's own, or none */
    links links;             /* --links: its rate and delay, and what the run made */
    int mpi_ranks;           /* --mpi_ranks N; 0: ps and worker tasks */
} options;

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    char text[600];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    fprintf(stderr, "launch_cluster: %s (see --help)\n", text);
    exit(2);
}

/* "--ps" matches "--ps" and "--ps=2", not "--ps_hosts". */
static bool flag_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* The value of flag argv[*i], after its '=' or as the next argument. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc)
        usage_error("%s needs a value", name);
    return argv[++*i];
}

static int parse_whole(const char *flag, const char *value, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno || v < min || v > max)
        usage_error("%s: '%s' is not valid; it must be a whole number from %ld to %ld", flag, value, min, max);
    return (int)v;
}

static double parse_seconds(const char *flag, const char *value)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (!*value || *end || errno || !(v > 0) || v > 1e6)
        usage_error("%s: '%s' is not valid; it must be a number of seconds above 0 (at most 1e6)", flag, value);
    return v;
}

/* Takes the launcher's flag at argv[*i]; false when it is none of them. */
static bool take_flag(options *o, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--ps", "--workers", "--base_port", "--deadline", "--grace", "--stop_grace"};
    int which = -1;
    for (int k = 0; k < 6 && which < 0; k++)
        if (flag_is(argv[*i], names[k]))
            which = k;
    if (which < 0)
        return false;
    const char *value = flag_value(argc, argv, i, names[which]);
    switch (which) {
    case 0: o->ps = parse_whole("--ps", value, 0, MAX_PER_JOB); break;
    case 1: o->workers = parse_whole("--workers", value, 1, MAX_PER_JOB); break;
    case 2: o->base_port = parse_whole("--base_port", value, 1, 65535); break;
    case 3: o->deadline = parse_seconds("--deadline", value); break;
    case 4: o->grace = parse_seconds("--grace", value); break;
    default: o->stop_grace = parse_seconds("--stop_grace", value); break;
    }
    return true;
}

/* --mpi_ranks: the run is one mpirun over the links, with no cluster flags. */
static void take_mpi_ranks(options *o)
{
    if (!o->links.on)
        usage_error("--mpi_ranks needs --links; without it, run mpirun -np %d yourself", o->mpi_ranks);
    if (o->ps >= 0 || o->workers >= 0)
        usage_error("--mpi_ranks runs MPI ranks, not ps and worker tasks: leave out --ps and --workers");
    if (o->secret_file || o->make_secret)
        usage_error("--mpi_ranks gives the ranks no secret: leave out --cluster_secret_file and --make_secret");
    o->ps = 0, o->workers = 1, o->no_secret = true;
}

static void parse_flags(int argc, char **argv, options *o)
{
    *o = (options){.ps = -1, .workers = -1, .deadline = 600, .grace = 30, .stop_grace = 5};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (strcmp(argv[i], "--make_secret") == 0 || strcmp(argv[i], "--no_secret") == 0) {
            o->no_secret = o->no_secret || strcmp(argv[i], "--no_secret") == 0;
            o->make_secret = o->make_secret || strcmp(argv[i], "--make_secret") == 0;
            continue;
        }
        if (flag_is(argv[i], "--links")) {
            char why[200];
            if (!parse_links(flag_value(argc, argv, &i, "--links"), &o->links, why, sizeof why))
                usage_error("--links: %s", why);
            continue;
        }
        if (flag_is(argv[i], "--mpi_ranks")) {
            o->mpi_ranks = parse_whole("--mpi_ranks", flag_value(argc, argv, &i, "--mpi_ranks"), 1, MAX_PER_JOB);
            continue;
        }
        if (flag_is(argv[i], "--cluster_secret_file")) {
            o->secret_file = flag_value(argc, argv, &i, "--cluster_secret_file");
            continue;
        }
        if (!take_flag(o, argc, argv, &i))
            usage_error("unknown flag '%s'; the task program's own flags go after PROGRAM", argv[i]);
    }
    if (o->mpi_ranks > 0)
        take_mpi_ranks(o);
    if (o->ps < 0)
        usage_error("--ps N is required: how many ps tasks to start");
    if (o->workers < 0)
        usage_error("--workers M is required: how many worker tasks to start");
    if (i >= argc)
        usage_error("no PROGRAM to run: name it after the flags");
    if (o->make_secret && o->secret_file)
        usage_error("--make_secret and --cluster_secret_file both give the tasks a secret: choose one");
    if (o->no_secret && (o->make_secret || o->secret_file))
        usage_error("--no_secret and %s contradict each other: choose one",
                    o->secret_file ? "--cluster_secret_file" : "--make_secret");
    o->make_secret = !o->no_secret && !o->secret_file;
    if (o->base_port > 0 && o->base_port + o->ps + o->workers - 1 > 65535)
        usage_error("--base_port %d leaves no room for %d ports", o->base_port, o->ps + o->workers);
    o->program = argv + i;
}

#endif
