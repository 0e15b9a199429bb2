/* test_launch_cluster.c: runs labs/tools/launch_cluster on a fake task program
 * (a shell script that prints its flags and pid, then succeeds, fails, hangs
 * or ignores SIGTERM as asked) and checks what students and the chapter 3
 * tests rely on: the flags, the prefixed lines, the verdicts, the deadlines,
 * and by pid that no task or child of a task is left running. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab_runner.h"
#include "loopback.h"

/* Each run of the launcher must end within this, or the test says so. */
#define RUN_LIMIT_S 10.0

/* lab_runner.h's `lab` is the launcher here, its tmp_dir our scratch. */
static char fake[300], out_path[300];

/* The fake task: MODE, then the launcher's four flags. It prints its flags,
 * its pid ("pid N") and the pid of any child it starts ("bg N"). */
static const char fake_task[] =
    "mode=$1; shift\n"
    "job=${3#--job_name=}; me=$job${4#--task_index=}\n"
    "echo \"args: $*\"\n"
    "echo \"pocl: ${POCL_DEVICES-unset} ${POCL_MAX_PTHREAD_COUNT-unset}\"\n"
    "echo \"pid $$\"\n"
    "case \"${5-}\" in --cluster_secret_file=*) echo \"secret mode $(stat -c %a \"${5#*=}\")\" ;;\n"
    "*) echo 'no secret' ;; esac\n"
    "echo \"to stderr\" >&2\n"
    "case \"$mode:$me\" in\n"
    "ok:*) exit 0 ;;\n"
    "fail:worker1) sleep 0.3; echo 'giving up'; exit 3 ;;\n"
    "fail:worker0) sleep 30 & echo \"bg $!\"; wait; exit 0 ;;\n"
    "killed:worker0) sleep 0.3; kill -9 $$ ;;\n"
    "ps_hangs:ps*) sleep 30 ;;\n"
    "ps_hangs:*) exit 0 ;;\n"
    "deaf:*) trap '' TERM; sleep 30 & echo \"bg $!\"; wait ;;\n"
    "lines:ps*) exit 0 ;;\n"
    "lines:*) long=$(printf '%0900d' 0); i=0\n"
    "  while [ $i -lt 200 ]; do echo \"line $me $i $long end\"; i=$((i + 1)); done\n"
    "  printf 'tail without newline' ;;\n"
    "*) sleep 30 ;;\n"
    "esac\n";

typedef struct {
    int status;     /* exit status, 128 + signal; -1 when it outlived RUN_LIMIT_S */
    char *out;      /* its stdout and stderr together */
    double seconds; /* how long it ran */
} launch_run;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Prints a run's output as TAP comments, one "# " line per line. */
static void diag_output(const char *out)
{
    for (const char *p = out; p && *p;) {
        int len = (int)strcspn(p, "\n");
        diag("  %.*s", len, p);
        p += len + (p[len] == '\n');
    }
}

/* What the launcher wrote; "" when nothing. */
static char *read_output(void)
{
    char *out = read_file(out_path);
    return out ? out : calloc(1, 1);
}

/* Starts "env ENV launcher ARGS > out 2>&1" with PoCL's variables cleared
 * first, so the launcher's defaults show; its pid. */
static pid_t start_launcher(const char *env, const char *args)
{
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "exec env -u POCL_DEVICES -u POCL_MAX_PTHREAD_COUNT %s %s %s > %s 2>&1", env,
             lab, args, out_path);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits for the launcher up to RUN_LIMIT_S; past it, kills it and says so. */
static launch_run wait_launcher(pid_t pid, double started)
{
    launch_run r = {.status = -1};
    int status;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now() - started > RUN_LIMIT_S) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            diag("launch_cluster did not exit within %g s; its last lines say what it waited for:", RUN_LIMIT_S);
            r.out = read_output();
            r.seconds = now() - started;
            diag_output(r.out);
            return r;
        }
        usleep(10000);
    }
    r.status = decode_status(status);
    r.seconds = now() - started;
    r.out = read_output();
    return r;
}

static launch_run run_launcher(const char *env, const char *args)
{
    double started = now();
    return wait_launcher(start_launcher(env, args), started);
}

/* Whether a process runs: it has a /proc entry that is not a zombie. */
static bool is_running(long pid)
{
    char path[64], state = 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return access("/proc/self/stat", R_OK) != 0 && kill((pid_t)pid, 0) == 0;
    if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
        state = 'R';
    fclose(f);
    return state != 'Z' && state != 'X';
}

/* Checks by pid that none of the processes the fake tasks announced ("pid N",
 * "bg N") still runs; at least `want` must have been announced. Any left is
 * killed, so that a failure here leaves nothing behind either. */
static void nothing_left(const launch_run *r, int want, const char *what)
{
    int seen = 0, left = 0;
    static const char *const marks[] = {": pid ", ": bg "};
    for (int k = 0; k < 2; k++)
        for (const char *p = r->out; (p = strstr(p, marks[k])); p++) {
            long pid = strtol(p + strlen(marks[k]), NULL, 10);
            seen++;
            if (pid > 0 && is_running(pid)) {
                diag("process %ld is still running", pid);
                kill((pid_t)pid, SIGKILL);
                left++;
            }
        }
    ok(seen >= want && left == 0, "%s: none of the %d task processes is left running", what, seen);
    if (seen < want) {
        diag("only %d of %d pids announced; output:", seen, want);
        diag_output(r->out);
    }
}

static void free_result(launch_run *r)
{
    free(r->out);
    r->out = NULL;
}

/* The text after "NAME: args: " up to the end of its line. */
static bool args_of(const char *out, const char *name, char *args, size_t size)
{
    char mark[64];
    snprintf(mark, sizeof mark, "%s: args: ", name);
    const char *p = strstr(out, mark);
    if (!p)
        return false;
    p += strlen(mark);
    snprintf(args, size, "%.*s", (int)strcspn(p, "\n"), p);
    return true;
}

/* The ports of "127.0.0.1:p,127.0.0.1:q"; -1 when an entry is not loopback. */
static int parse_hosts(const char *list, int *ports, int max)
{
    int n = 0;
    for (const char *p = list; *p && n < max; n++) {
        if (strncmp(p, "127.0.0.1:", 10) != 0)
            return -1;
        ports[n] = atoi(p + 10);
        p += strcspn(p, ",");
        p += *p == ',';
    }
    return n;
}

static void test_help_and_bad_flags(void)
{
    launch_run r = run_launcher("", "--help");
    ok(r.status == 0 && strstr(r.out, "--ps N") && strstr(r.out, "--deadline S") && strstr(r.out, "--grace S") &&
           strstr(r.out, "POCL_DEVICES=pthread") && strstr(r.out, "Exit status"),
       "--help exits 0 and explains the flags, PoCL's variables and the exit status");
    free_result(&r);
    static const char *const cases[][2] = {
        {"--ps x --workers 1 true", "--ps: 'x' is not valid"},
        {"--ps 1 --workers 0 true", "--workers: '0' is not valid"},
        {"--ps 1 --workers 1 --deadline -2 true", "--deadline: '-2' is not valid"},
        {"--ps 1 --workers 1 --grace=soon true", "--grace: 'soon' is not valid"},
        {"--ps 1 --workers 1 --base_port 70000 true", "--base_port: '70000' is not valid"},
        {"--ps 1 --workers 1 --bogus true", "unknown flag '--bogus'"},
        {"--workers 1 true", "--ps N is required"},
        {"--ps 1 --workers 1", "no PROGRAM to run"},
        {"--ps 1 --workers", "--workers needs a value"},
        {"--ps 1 --workers 1 --no_secret --make_secret true", "--no_secret and --make_secret contradict"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = run_launcher("", cases[i][0]);
        ok(r.status == 2 && strstr(r.out, cases[i][1]), "'%s' exits 2 saying \"%s\"", cases[i][0], cases[i][1]);
        if (r.status != 2 || !strstr(r.out, cases[i][1])) {
            diag("status %d, output:", r.status);
            diag_output(r.out);
        }
        free_result(&r);
    }
}

/* Every task sees its own --job_name and --task_index and the same host
 * lists, of 2 + 2 distinct loopback ports. */
static void test_flags_reach_every_task(void)
{
    char args[600];
    snprintf(args, sizeof args, "--ps 2 --workers 2 -- sh %s ok", fake);
    launch_run r = run_launcher("", args);
    ok(r.status == 0 && strstr(r.out, "launch_cluster: all 4 tasks exited with status 0"),
       "four tasks that exit 0: the launcher exits 0 and says so");
    static const char *const names[] = {"ps0", "ps1", "worker0", "worker1"};
    char first_ps[300] = "", first_workers[300] = "";
    int same = 0;
    for (int i = 0; i < 4; i++) {
        char line[600], ps[300], workers[300], job[32];
        int index = -1;
        if (!args_of(r.out, names[i], line, sizeof line) ||
            sscanf(line, "--ps_hosts=%299s --worker_hosts=%299s --job_name=%31s --task_index=%d", ps, workers, job,
                   &index) != 4) {
            diag("no flags from %s in:", names[i]);
            diag_output(r.out);
            continue;
        }
        char want[32];
        snprintf(want, sizeof want, "%s%d", job, index);
        ok(strcmp(want, names[i]) == 0, "%s gets --job_name=%s --task_index=%d", names[i], job, index);
        if (i == 0)
            snprintf(first_ps, sizeof first_ps, "%s", ps), snprintf(first_workers, sizeof first_workers, "%s", workers);
        same += strcmp(ps, first_ps) == 0 && strcmp(workers, first_workers) == 0;
    }
    ok(same == 4, "every task gets the same --ps_hosts and --worker_hosts");
    int ports[4];
    bool distinct = parse_hosts(first_ps, ports, 2) == 2 && parse_hosts(first_workers, ports + 2, 2) == 2;
    for (int i = 0; i < 4 && distinct; i++)
        for (int k = 0; k < i; k++)
            distinct = distinct && ports[i] != ports[k] && ports[i] > 0;
    ok(distinct, "the host lists name 2 + 2 distinct loopback ports (%s; %s)", first_ps, first_workers);
    ok(strstr(r.out, "worker1: to stderr\n") && strstr(r.out, "ps1: pid "), "stdout and stderr lines carry the task's name");
    contains(r.out, "ps0: pocl: pthread 1\n", "each task gets POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1");
    nothing_left(&r, 4, "four tasks that exit 0");
    free_result(&r);

    snprintf(args, sizeof args, "--ps 1 --workers 1 sh %s ok", fake);
    r = run_launcher("POCL_DEVICES=basic", args);
    contains(r.out, "worker0: pocl: basic unset\n", "a POCL_DEVICES the caller set is left alone");
    free_result(&r);
}

static void test_base_port(void)
{
    int base = loopback_free_ports(3);
    char args[600], want[200];
    snprintf(args, sizeof args, "--ps 1 --workers 2 --base_port %d sh %s ok", base, fake);
    launch_run r = run_launcher("", args);
    snprintf(want, sizeof want, "worker1: args: --ps_hosts=127.0.0.1:%d --worker_hosts=127.0.0.1:%d,127.0.0.1:%d ",
             base, base + 1, base + 2);
    ok(base > 0 && r.status == 0 && strstr(r.out, want), "--base_port %d gives ps0 that port, the workers the next two",
       base);
    if (!strstr(r.out, want)) {
        diag("want a line starting '%s' in:", want);
        diag_output(r.out);
    }
    free_result(&r);

    int busy_port = base + 1, busy = loopback_bind(&busy_port, 1);
    r = run_launcher("", args);
    snprintf(want, sizeof want, "port %d (for worker0) is not free", base + 1);
    ok(busy >= 0 && r.status == 2 && strstr(r.out, want) && !strstr(r.out, ": pid "),
       "a --base_port range with a port in use: exit 2 naming the port and the task, nothing started");
    if (busy >= 0)
        close(busy);
    free_result(&r);
}

/* Two workers print 200 long lines each as fast as they can: each line comes
 * out whole, after its own task's name. */
static void test_lines_stay_whole(void)
{
    char args[600];
    snprintf(args, sizeof args, "--ps 1 --workers 2 sh %s lines", fake);
    launch_run r = run_launcher("", args);
    bool tails = strstr(r.out, "worker0: tail without newline\n") && strstr(r.out, "worker1: tail without newline\n");
    int whole[2] = {0, 0}, broken = 0;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        char name[16], who[16];
        int i;
        if (sscanf(line, "%15[a-z0-9]: line %15s %d ", name, who, &i) == 3) {
            size_t len = strlen(line);
            bool good = strcmp(name, who) == 0 && len > 4 && strcmp(line + len - 4, " end") == 0;
            if (good && (strcmp(name, "worker0") == 0 || strcmp(name, "worker1") == 0))
                whole[name[6] - '0']++;
            broken += !good;
        } else if (!strstr(line, ": ") || (strncmp(line, "ps0: ", 5) && strncmp(line, "worker", 6) &&
                                           strncmp(line, "launch_cluster: ", 16))) {
            broken++;
            diag("a line without a task's name: '%.80s'", line);
        }
    }
    ok(r.status == 0 && whole[0] == 200 && whole[1] == 200 && broken == 0,
       "2 x 200 lines of 930 bytes: all whole and prefixed (%d + %d whole, %d broken)", whole[0], whole[1], broken);
    ok(tails, "a last line without a newline is printed, prefixed, when the task ends");
    free_result(&r);
}

/* A run that must end in exit 1: the launcher's flags and the fake task's
 * mode, what it must say, how long it may take and how many pids the tasks
 * announce. */
typedef struct {
    const char *flags, *mode, *want, *what;
    double min_s, max_s;
    int pids;
} failing_run;

static const failing_run failing_runs[] = {
    {"--ps 1 --workers 2 --stop_grace 2", "fail", "launch_cluster: worker1 failed (it exited with status 3)",
     "a worker exiting 3 stops the others at once", 0, 3, 4},
    {"--ps 1 --workers 2 --stop_grace 2", "killed", "launch_cluster: worker0 failed (it was killed by signal 9",
     "a worker killed by SIGKILL stops the others at once", 0, 3, 3},
    {"--ps 1 --workers 2 --grace 1", "ps_hangs", "ps0 still running 1 s after every worker finished",
     "a ps that does not exit after the workers is stopped after --grace", 1, 4, 3},
    {"--ps 1 --workers 1 --deadline 1", "sleep", "the deadline (1 s) passed while waiting for ps0, worker0",
     "past --deadline everything is stopped, naming what it waited for", 1, 4, 2},
    {"--ps 1 --workers 1 --deadline 0.5 --stop_grace 0.5", "deaf",
     "ps0, worker0 still running 0.5 s after SIGTERM; sending SIGKILL",
     "tasks that ignore SIGTERM get SIGKILL after --stop_grace", 1, 4, 4},
};

/* Runs one failing_run and checks it; the output, for more checks. */
static launch_run check_failing_run(const failing_run *f)
{
    char args[600];
    snprintf(args, sizeof args, "%s sh %s %s", f->flags, fake, f->mode);
    launch_run r = run_launcher("", args);
    bool said = strstr(r.out, f->want) != NULL;
    ok(r.status == 1 && said, "%s: exit 1, saying \"%s\"", f->what, f->want);
    if (r.status != 1 || !said) {
        diag("status %d, output:", r.status);
        diag_output(r.out);
    }
    ok(r.status >= 0 && r.seconds >= f->min_s && r.seconds < f->max_s, "%s: it took %.1f s (want %g to %g)",
       f->what, r.seconds, f->min_s, f->max_s);
    nothing_left(&r, f->pids, f->what);
    return r;
}

static void test_failing_runs(void)
{
    for (size_t i = 0; i < sizeof failing_runs / sizeof failing_runs[0]; i++) {
        launch_run r = check_failing_run(&failing_runs[i]);
        if (i == 0) {
            const char *last = strstr(r.out, "worker1: giving up\n");
            const char *verdict = strstr(r.out, "worker1 failed");
            ok(last && verdict && last < verdict, "the worker's last line comes before the launcher's verdict");
            contains(r.out, "stopping the other tasks: ps0, worker0", "it names the tasks it stops");
        }
        free_result(&r);
    }
}

/* Unless told otherwise, the run gets a secret of its own: every task is
 * given the same 0600 file, which is gone when the launcher ends. */
static void test_secret_by_default(void)
{
    char args[600], line[600], first[600] = "";
    snprintf(args, sizeof args, "--ps 1 --workers 2 sh %s ok", fake);
    launch_run r = run_launcher("", args);
    contains(r.out, "launch_cluster: made a shared secret for this run: ", "by default the launcher makes a secret");
    contains(r.out, "launch_cluster: the tasks get --ps_hosts=127.0.0.1:", "and says which hosts its tasks get");
    static const char *const names[] = {"ps0", "worker0", "worker1"};
    int same = 0;
    for (int i = 0; i < 3; i++) {
        const char *flag = args_of(r.out, names[i], line, sizeof line) ? strstr(line, "--cluster_secret_file=")
                                                                       : NULL;
        if (i == 0 && flag)
            snprintf(first, sizeof first, "%s", flag + strlen("--cluster_secret_file="));
        same += flag && first[0] && strcmp(flag + strlen("--cluster_secret_file="), first) == 0;
    }
    ok(same == 3, "every task gets --cluster_secret_file naming the same file (%s)", first);
    contains(r.out, "worker1: secret mode 600\n", "a file only its owner may read, there while the tasks run");
    ok(first[0] && access(first, F_OK) != 0, "and removed when the run ends");
    free_result(&r);
    snprintf(args, sizeof args, "--ps 1 --workers 1 --no_secret sh %s ok", fake);
    r = run_launcher("", args);
    ok(r.status == 0 && strstr(r.out, "ps0: no secret") && !strstr(r.out, "made a shared secret"),
       "--no_secret: the tasks get no secret");
    free_result(&r);
}

/* Ctrl-C on the launcher once every task has started. */
static void test_interrupted_launcher(void)
{
    char args[600];
    snprintf(args, sizeof args, "--ps 1 --workers 2 sh %s sleep", fake);
    double started = now();
    pid_t pid = start_launcher("", args);
    int announced = 0;
    while (announced < 3 && now() - started < RUN_LIMIT_S / 2) {
        usleep(20000);
        char *out = read_output();
        announced = 0;
        for (const char *p = out; (p = strstr(p, ": pid ")); p++)
            announced++;
        free(out);
    }
    if (announced < 3)
        diag("only %d of 3 tasks said their pid within %g s", announced, RUN_LIMIT_S / 2);
    kill(pid, SIGINT);
    launch_run r = wait_launcher(pid, started);
    ok(r.status == 130 && strstr(r.out, "got signal 2"), "SIGINT to the launcher: it stops and exits 130");
    nothing_left(&r, 3, "SIGINT to the launcher");
    free_result(&r);
}

/* Finds the built launcher (lab_runner.h) and writes the fake task. */
static void setup(const char *argv0)
{
    lab_runner_start(argv0, "test_launch_cluster", "labs/tools/launch_cluster");
    snprintf(fake, sizeof fake, "%s/fake_task.sh", tmp_dir);
    snprintf(out_path, sizeof out_path, "%s/out.txt", tmp_dir);
    FILE *f = fopen(fake, "w");
    if (!f || fputs(fake_task, f) < 0)
        skip_all("cannot write the fake task program");
    fclose(f);
}

int main(int argc, char **argv)
{
    (void)argc;
    setup(argv[0]);
    test_help_and_bad_flags();
    test_flags_reach_every_task();
    test_secret_by_default();
    test_base_port();
    test_lines_stay_whole();
    test_failing_runs();
    test_interrupted_launcher();
    lab_runner_finish();
    return done_testing();
}
