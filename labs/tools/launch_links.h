/* launch_links.h: launch_cluster --links RATE[,DELAY]: each task in a network
 * namespace of its own, joined to the others by a bridge, its link shaped by
 * tc in both directions, so a cluster on one machine meets the limits of a
 * real network. Made with iproute2's ip and tc; removed by name at the end. */
#ifndef FLOWLAB_LAUNCH_LINKS_H
#define FLOWLAB_LAUNCH_LINKS_H

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch_output.h"

enum { LINKS_MAX = 128, LINKS_PORT = 2222 };

typedef struct {
    bool on;
    double rate_bits; /* bits per second, each direction */
    double delay_s;   /* added one way, 0: none */
    char rate_text[24], delay_text[24];
    int subnet;       /* the third byte of 10.233.S.0/24 */
    int ntasks;       /* namespaces made (each with its veth) */
    bool bridge_made;
    char names[LINKS_MAX][24]; /* the tasks' names: ps0, worker1, rank0 */
} links;

/* "100mbit", "1gbit": tc's units (decimal); bits per second, or 0 when bad. */
static double parse_rate(const char *text)
{
    static const struct { const char *unit; double bits; } units[] = {
        {"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}};
    char *end = NULL;
    double v = strtod(text, &end);
    for (size_t k = 0; end != text && k < sizeof units / sizeof units[0]; k++)
        if (strcmp(end, units[k].unit) == 0)
            return v * units[k].bits >= 8e3 && v * units[k].bits <= 1e12 ? v * units[k].bits : 0;
    return 0;
}

/* "100us", "2ms", "0.1s": seconds, or -1 when bad. */
static double parse_delay(const char *text)
{
    static const struct { const char *unit; double seconds; } units[] = {{"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
    char *end = NULL;
    double v = strtod(text, &end);
    for (size_t k = 0; end != text && k < 3; k++)
        if (strcmp(end, units[k].unit) == 0)
            return v >= 0 && v * units[k].seconds <= 10 ? v * units[k].seconds : -1;
    return -1;
}

/* --links' value into l; false (with why) when it is not RATE[,DELAY]. */
static bool parse_links(const char *value, links *l, char *why, size_t size)
{
    const char *comma = strchr(value, ',');
    size_t n = comma ? (size_t)(comma - value) : strlen(value);
    snprintf(l->rate_text, sizeof l->rate_text, "%.*s", (int)(n < 23 ? n : 23), value);
    snprintf(l->delay_text, sizeof l->delay_text, "%s", comma ? comma + 1 : "");
    l->rate_bits = n < 23 ? parse_rate(l->rate_text) : 0;
    l->delay_s = comma ? parse_delay(l->delay_text) : 0;
    if (l->rate_bits <= 0)
        snprintf(why, size, "'%s' is not a rate: a number and one of bit, kbit, mbit, gbit, tbit, from "
                 "8kbit to 1tbit (e.g. 1gbit)", l->rate_text);
    else if (l->delay_s < 0)
        snprintf(why, size, "'%s' is not a delay: a number and us, ms or s, at most 10 s (e.g. 100us)",
                 l->delay_text);
    l->on = l->rate_bits > 0 && l->delay_s >= 0;
    return l->on;
}

/* Runs a tool (ip, tc): argv, NULL-terminated, and waits; 0 when it exits
 * 0, else -1 with its own words (or why it could not run) in why. */
static int tool_argv(const char *const *argv, char *why, size_t size)
{
    int out[2];
    if (pipe(out) != 0)
        return snprintf(why, size, "cannot make a pipe: %s", strerror(errno)), -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(out[1], 2);
        close(out[0]);
        execvp(argv[0], (char *const *)argv);
        printf("cannot run %s (Debian's iproute2 has it): %s", argv[0], strerror(errno));
        fflush(stdout);
        _exit(127);
    }
    close(out[1]);
    char words[400] = "";
    size_t at = 0;
    for (ssize_t got; at < sizeof words - 1 && (got = read(out[0], words + at, sizeof words - 1 - at)) > 0;)
        at += (size_t)got;
    words[at] = '\0';
    close(out[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return snprintf(why, size, "cannot start %s: %s", argv[0], strerror(errno)), -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    words[strcspn(words, "\n")] = '\0';
    snprintf(why, size, "'%s %s %s ...' failed: %s", argv[0], argv[1], argv[1] && argv[2] ? argv[2] : "", words);
    return -1;
}

/* tool_argv with the arguments after size, NULL-terminated. */
static int tool(char *why, size_t size, ...)
{
    const char *argv[24];
    va_list args;
    va_start(args, size);
    int n = 0;
    while (n < 23 && (argv[n] = va_arg(args, const char *)) != NULL)
        n++;
    va_end(args);
    argv[n] = NULL;
    return tool_argv(argv, why, size);
}

/* The names every run's things get, from the launcher's process id. */
static void namespace_name(int i, const links *l, char *out, size_t size)
{
    snprintf(out, size, "flowlab-%ld-%s", (long)getpid(), l->names[i]);
}

static void bridge_name(long pid, char *out, size_t size)
{
    snprintf(out, size, "flbr%ld", pid);
}

static void veth_name(int i, char *out, size_t size)
{
    snprintf(out, size, "fl%ldv%d", (long)getpid(), i);
}

/* "10.233.S.(i+2)": task i's address; the bridge is .1. */
static void links_address(const links *l, int i, char *out, size_t size)
{
    snprintf(out, size, "10.233.%d.%d", l->subnet, i + 2);
}

/* Removes what an earlier launcher that is gone left behind (killed with
 * SIGKILL, it could not clean up): its namespaces and bridge, by name. */
static void remove_stale_links(void)
{
    DIR *d = opendir("/var/run/netns");
    struct dirent *e;
    char why[480], bridge[32];
    while (d && (e = readdir(d)) != NULL) {
        long pid = 0;
        if (sscanf(e->d_name, "flowlab-%ld-", &pid) != 1 || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        say("removing network namespace %s, left by launcher %ld, which is gone", e->d_name, pid);
        tool(why, sizeof why, "ip", "netns", "del", e->d_name, NULL);
        bridge_name(pid, bridge, sizeof bridge);
        tool(why, sizeof why, "ip", "link", "del", bridge, NULL);
    }
    if (d)
        closedir(d);
}

/* A /24 of 10.233.0.0/16 that no address of this machine is in yet. */
static int free_subnet(void)
{
    bool used[256] = {false};
    FILE *p = popen("ip -o -4 addr show", "r"); /* this machine's addresses, read once */
    if (!p)
        return -1;
    char line[512];
    for (const char *at; fgets(line, sizeof line, p);) {
        int third;
        if ((at = strstr(line, " 10.233.")) && sscanf(at, " 10.233.%d.", &third) == 1 && third >= 0 && third < 256)
            used[third] = true;
    }
    if (pclose(p) != 0)
        return -1;
    for (int k = 0; k < 250; k++) {
        int s = (int)((getpid() + k) % 250) + 1;
        if (!used[s])
            return s;
    }
    return -1;
}

/* tc qdisc add dev DEV, in namespace ns (NULL: this one), then words. */
static int add_qdisc(const char *ns, const char *dev, const char *const *words, char *why, size_t size)
{
    const char *argv[24] = {"tc"};
    int n = 1;
    if (ns) {
        argv[n++] = "-n";
        argv[n++] = ns;
    }
    argv[n++] = "qdisc", argv[n++] = "add", argv[n++] = "dev", argv[n++] = dev;
    for (int k = 0; words[k] && n < 23; k++)
        argv[n++] = words[k];
    argv[n] = NULL;
    return tool_argv(argv, why, size);
}

/* Shapes one direction of a link: the egress of dev (in namespace ns, or
 * this one when ns is NULL) to the rate, after netem's delay if any. The
 * token bucket holds 4 ms of the rate, at least 64 KiB (a kernel tick). */
static int shape(const links *l, const char *ns, const char *dev, char *why, size_t size)
{
    char rate[32], burst[32], delay[32];
    snprintf(rate, sizeof rate, "%.0fbit", l->rate_bits);
    double burst_bytes = l->rate_bits / 8 * 0.004;
    snprintf(burst, sizeof burst, "%.0f", burst_bytes > 65536 ? burst_bytes : 65536);
    snprintf(delay, sizeof delay, "%.0fus", l->delay_s * 1e6);
    const char *bucket[] = {"root", "tbf", "rate", rate, "burst", burst, "latency", "100ms", NULL};
    if (l->delay_s <= 0)
        return add_qdisc(ns, dev, bucket, why, size);
    const char *netem[] = {"root", "handle", "1:", "netem", "delay", delay, NULL};
    if (add_qdisc(ns, dev, netem, why, size) != 0) {
        size_t at = strlen(why);
        snprintf(why + at, size - at, " (a delay needs the kernel's netem qdisc; --links %s alone works)",
                 l->rate_text);
        return -1;
    }
    const char *after_delay[] = {"parent", "1:", "handle", "10:", "tbf", "rate", rate, "burst", burst,
                                 "latency", "100ms", NULL};
    return add_qdisc(ns, dev, after_delay, why, size);
}

/* Task i's namespace, its veth pair (eth0 inside, on the bridge outside),
 * its address and both directions shaped. */
static int link_task(links *l, int i, const char *bridge, char *why, size_t size)
{
    char ns[64], veth[32], address[40];
    namespace_name(i, l, ns, sizeof ns);
    veth_name(i, veth, sizeof veth);
    links_address(l, i, address, sizeof address);
    strcat(address, "/24");
    if (tool(why, size, "ip", "netns", "add", ns, NULL) != 0)
        return -1;
    l->ntasks = i + 1;
    if (tool(why, size, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns, NULL) ||
        tool(why, size, "ip", "link", "set", veth, "master", bridge, "up", NULL) ||
        tool(why, size, "ip", "-n", ns, "addr", "add", address, "dev", "eth0", NULL) ||
        tool(why, size, "ip", "-n", ns, "link", "set", "eth0", "up", NULL) ||
        tool(why, size, "ip", "-n", ns, "link", "set", "lo", "up", NULL))
        return -1;
    return shape(l, ns, "eth0", why, size) || shape(l, NULL, veth, why, size) ? -1 : 0;
}

/* Removes every namespace and the bridge this run made (a namespace takes
 * its veth pair with it). */
static void links_down(links *l)
{
    char why[480], name[64];
    for (int i = 0; i < l->ntasks; i++) {
        namespace_name(i, l, name, sizeof name);
        if (tool(why, sizeof why, "ip", "netns", "del", name, NULL) != 0)
            say("could not remove network namespace %s: %s", name, why);
    }
    l->ntasks = 0;
    bridge_name((long)getpid(), name, sizeof name);
    if (l->bridge_made && tool(why, sizeof why, "ip", "link", "del", name, NULL) != 0)
        say("could not remove bridge %s: %s", name, why);
    l->bridge_made = false;
}

/* Makes the bridge and a shaped link per task; -1 (said why, and what was
 * made removed) when it cannot. */
static int links_up(links *l, int ntasks)
{
    char why[480] = "", bridge[32], address[40];
    if (geteuid() != 0) {
        say("--links needs root: it makes network namespaces, a bridge and tc rules (try sudo)");
        return -1;
    }
    remove_stale_links();
    l->subnet = free_subnet();
    if (l->subnet < 0) {
        say("--links: every 10.233.S.0/24 subnet is in use on this machine (or ip cannot list addresses)");
        return -1;
    }
    bridge_name((long)getpid(), bridge, sizeof bridge);
    snprintf(address, sizeof address, "10.233.%d.1/24", l->subnet);
    int rc = tool(why, sizeof why, "ip", "link", "add", bridge, "type", "bridge", NULL);
    l->bridge_made = rc == 0;
    if (rc == 0)
        rc = tool(why, sizeof why, "ip", "addr", "add", address, "dev", bridge, NULL) ||
             tool(why, sizeof why, "ip", "link", "set", bridge, "up", NULL);
    for (int i = 0; i < ntasks && rc == 0; i++)
        rc = link_task(l, i, bridge, why, sizeof why);
    if (rc != 0) {
        say("--links: cannot make the links: %s", why);
        links_down(l);
        return -1;
    }
    say("each task has a network namespace of its own (flowlab-%ld-NAME) on bridge %s, 10.233.%d.0/24; "
        "every link is shaped to %s%s%s each way",
        (long)getpid(), bridge, l->subnet, l->rate_text, l->delay_s > 0 ? " with a delay of " : "", l->delay_text);
    return 0;
}

/* argv for --mpi_ranks: mpirun starts each rank through sh, which enters
 * the rank's namespace by its OMPI_COMM_WORLD_RANK; Open MPI's TCP transport
 * only (shared memory would bypass the links). PMIx, by which a rank finds
 * mpirun, must accept connections over the bridge, as from another host. */
static char **links_mpirun_argv(const links *l, char **program, char *ranks, char *subnet, char *enter)
{
    int n = 0;
    while (program[n])
        n++;
    char **argv = calloc((size_t)n + 16, sizeof *argv);
    if (!argv)
        return NULL;
    snprintf(subnet, 24, "10.233.%d.0/24", l->subnet);
    snprintf(enter, 96, "exec ip netns exec flowlab-%ld-rank$OMPI_COMM_WORLD_RANK \"$@\"", (long)getpid());
    setenv("PMIX_MCA_ptl_tcp_remote_connections", "1", 1);
    setenv("PMIX_MCA_ptl_tcp_if_include", subnet, 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    const char *head[] = {"mpirun", "--oversubscribe", "-np", ranks, "--mca", "btl", "tcp,self", "--mca",
                          "btl_tcp_if_include", subnet, "sh", "-c", enter, "launch_cluster"};
    memcpy(argv, head, sizeof head);
    memcpy(argv + 14, program, (size_t)n * sizeof *argv);
    return argv;
}

/* A counter of task i's link, read on the bridge's side: what the task
 * received is what the bridge sent it. */
static double link_bytes(int i, const char *counter)
{
    char veth[32], path[128];
    veth_name(i, veth, sizeof veth);
    snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", veth, counter);
    FILE *f = fopen(path, "r");
    double bytes = -1;
    if (f && fscanf(f, "%lf", &bytes) != 1)
        bytes = -1;
    if (f)
        fclose(f);
    return bytes;
}

/* Prints the bytes each task's link carried, and how long they take at
 * the rate: a lower bound on the run that the shaping makes real. */
static void links_report(const links *l, double seconds)
{
    for (int i = 0; i < l->ntasks; i++) {
        double out = link_bytes(i, "rx_bytes"), in = link_bytes(i, "tx_bytes");
        double busiest = out > in ? out : in;
        say("%s's link carried %.1f MB out and %.1f MB in, at least %.2f s at %s, in a run of %.2f s",
            l->names[i], out / 1e6, in / 1e6, busiest * 8 / l->rate_bits, l->rate_text, seconds);
    }
}

#endif
