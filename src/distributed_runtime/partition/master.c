/* master.c: TensorFlow's master, in the client of a cluster and in each
 * between-graph worker. It cuts the session's graph by task once
 * (graph_partition.c; again when the graph has grown), registers each piece
 * on its task (again on a new connection), plans once per run signature
 * what each task must do (run_plan.c), and runs every step as one request
 * per task (master_step.c). It remembers what the user sees: where each
 * node ran, and the runs and global step a failed step is named by. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "master.h"
#include "master_links.h"
#include "partition_client.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "run_plan.h"

/* One run signature and its plan against the current cut. */
typedef struct {
    fl_node **feeds, **fetches, **targets;
    int nfeeds, nfetches, ntargets;
    int cut_version; /* the cut the plan was made for */
    fl_run_plan plan; /* with what the run needs, by node id */
} run_signature;

struct fl_master {
    const fl_cluster *cluster;
    fl_graph *graph;
    fl_task_ref home;       /* where nodes without a task run: worker 0, or this worker's task */
    bool on_task;           /* a between-graph worker's: its own piece runs in its task's server */
    fl_master_links links;  /* and its connections to the tasks (the client uses the cluster's) */
    fl_partitioned_run cut; /* the whole graph, one partition per task */
    int cut_nodes;          /* the graph's size when it was cut */
    int cut_version;
    fl_task_client **clients; /* by partition: the connection it is registered on */
    uint64_t *handles;
    /* An older cut's partitions, dropped once the new cut is registered on
     * their task: a task's new partition takes its variables' values from
     * the old one, so the old one must still be there when it registers. */
    fl_task_client **retired_clients;
    uint64_t *retired_handles;
    int nretired;
    run_signature *sigs;
    int nsigs;
    uint64_t step_base, steps; /* step ids unique across clients of a task */
    /* For messages: this session's runs, the global step a run last fetched. */
    uint64_t runs;
    int64_t global_step;
    bool has_global_step;
    /* Nodes a run that succeeded needed (by node id), and the devices they
     * were asked to run on, each name kept once (a few: one per task and
     * device), for fl_session_node_device and log_device_placement. */
    bool *ran;
    int nran;
    char **device_names;
    int ndevice_names;
    fl_session *trace; /* where the tasks' timings of a step go; NULL: not traced */
    bool reuse_memory; /* the client session's: the tasks' sessions pool their values too */
    /* Kept, so a warm step allocates nothing: the requests' bookkeeping, the fetches' slots. */
    fl_step_calls *calls;
    fl_tensor **output_slots;
    int output_capacity;
    fl_master_sync_state sync; /* master_sync.c's */
};

fl_master *fl_master_new(const fl_cluster *cluster, fl_graph *g, bool reuse_memory)
{
    fl_master *m = fl_xcalloc(1, sizeof *m);
    m->cluster = cluster;
    m->graph = g;
    m->reuse_memory = reuse_memory;
    m->step_base = ((uint64_t)getpid() << 32) ^ ((uint64_t)fl_now_us() << 8);
    return m;
}

// [book:who_builds]
/* A between-graph worker's master (TensorFlow's: every task runs a server,
 * and a worker's master cuts only its own graph): what has no task runs on
 * this task, whose piece this process's own server runs (task_server.c). */
fl_master *fl_master_new_on_task(const fl_cluster *cluster, fl_graph *g, bool reuse_memory)
{
    fl_master *m = fl_master_new(cluster, g, reuse_memory);
    snprintf(m->home.job, sizeof m->home.job, "%s", fl_cluster_job_name(cluster));
    m->home.task = fl_cluster_task_index(cluster);
    m->on_task = true;
    return m;
}
// [end:who_builds]

const fl_cluster *fl_master_cluster(const fl_master *m) { return m->cluster; }
fl_graph *fl_master_graph(const fl_master *m) { return m->graph; }
fl_master_sync_state *fl_master_sync(fl_master *m) { return &m->sync; }

/* ---- the cut and its partitions on their tasks ---- */

/* The cut's registered partitions are retired, to be dropped later. */
static void forget_cut(fl_master *m)
{
    for (int p = 0; p < m->cut.nparts; p++) {
        if (!m->clients[p] || !m->handles[p])
            continue;
        m->retired_clients = fl_xrealloc(m->retired_clients, (size_t)(m->nretired + 1) * sizeof *m->retired_clients);
        m->retired_handles = fl_xrealloc(m->retired_handles, (size_t)(m->nretired + 1) * sizeof *m->retired_handles);
        m->retired_clients[m->nretired] = m->clients[p];
        m->retired_handles[m->nretired++] = m->handles[p];
    }
    fl_partitioned_run_free(&m->cut);
    free(m->clients);
    free(m->handles);
    m->clients = NULL;
    m->handles = NULL;
}

/* A node placed on a task the cluster spec lacks is refused here, naming
 * it, rather than waited for at an address nobody has. */
static int check_tasks_exist(const fl_master *m)
{
    for (int p = 0; p < m->cut.nparts; p++) {
        const fl_graph_partition *part = &m->cut.parts[p];
        if (fl_cluster_task_host(m->cluster, part->job, part->task))
            continue;
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s is placed on /job:%s/task:%d, which the cluster does not have "
                          "(%s); place it on one of the tasks of --ps_hosts or --worker_hosts",
                          fl_node_name(fl_graph_node(part->graph, 0)), part->job, part->task, fl_last_error());
        return -1;
    }
    return 0;
}

/* Every node is a root: the one cut serves every run. */
static int cut_graph(fl_master *m)
{
    int n = fl_graph_node_count(m->graph);
    fl_node **all = fl_xmalloc((size_t)(n ? n : 1) * sizeof *all);
    for (int id = 0; id < n; id++)
        all[id] = fl_graph_node(m->graph, id);
    fl_partition_request everything = {.targets = all, .ntargets = n, .home = m->home, .reuse_memory = m->reuse_memory};
    int rc = fl_partition_graph(m->graph, &everything, &m->cut);
    free(all);
    if (rc != 0 || check_tasks_exist(m) != 0) {
        fl_partitioned_run_free(&m->cut);
        return -1;
    }
    m->cut_nodes = n;
    m->cut_version++;
    m->clients = fl_xcalloc((size_t)m->cut.nparts + 1, sizeof *m->clients);
    m->handles = fl_xcalloc((size_t)m->cut.nparts + 1, sizeof *m->handles);
    return 0;
}

/* A connection closed: what was registered on it is gone with it. */
static void forget_client(fl_master *m, const fl_task_client *gone)
{
    for (int p = 0; p < m->cut.nparts; p++)
        if (m->clients[p] == gone) {
            m->clients[p] = NULL;
            m->handles[p] = 0;
        }
    int kept = 0;
    for (int i = 0; i < m->nretired; i++)
        if (m->retired_clients[i] != gone) {
            m->retired_clients[kept] = m->retired_clients[i];
            m->retired_handles[kept++] = m->retired_handles[i];
        }
    m->nretired = kept;
}

/* The connection to the task (made on first use): the cluster's in a
 * client, the master's own in a between-graph worker. */
static fl_task_client *client_to(fl_master *m, const char *job, int task)
{
    if (!m->on_task)
        return fl_cluster_client(m->cluster, job, task);
    fl_task_client *replaced = NULL;
    fl_task_client *client = fl_master_link_to(&m->links, m->cluster, job, task, &replaced);
    if (replaced)
        forget_client(m, replaced);
    return client;
}

static fl_task_client *client_of(fl_master *m, const fl_graph_partition *p) { return client_to(m, p->job, p->task); }

/* TensorFlow's report_uninitialized_variables, asked of the task that holds
 * var (IS_INITIALIZED; a variable placed nowhere is on the master's own
 * task): 1, 0, or -1 after fl_set_error. */
int fl_master_variable_has_value(fl_master *m, const fl_node *var)
{
    fl_device_name d = {.task = -1};
    if (var->device[0] && fl_parse_device(var->device, &d, NULL, 0) != 0)
        return -1;
    const char *job = d.job[0] ? d.job : fl_cluster_job_name(m->cluster);
    int task = d.task >= 0 ? d.task : fl_cluster_task_index(m->cluster);
    fl_task_client *c = client_to(m, job, task);
    bool has = false;
    uint32_t id = c ? fl_task_client_is_initialized(c, var->name, &has) : 0;
    return !id || fl_task_client_wait(c, id) != 0 ? -1 : has;
}

/* Drops the retired partitions on client (all of them when client is
 * NULL); one on a lost connection went with it. */
static void drop_retired(fl_master *m, const fl_task_client *client)
{
    int kept = 0;
    for (int i = 0; i < m->nretired; i++) {
        fl_task_client *c = m->retired_clients[i];
        if (client && c != client) {
            m->retired_clients[kept] = c;
            m->retired_handles[kept++] = m->retired_handles[i];
        } else if (!fl_task_client_broken(c)) {
            fl_partition_deregister(c, m->retired_handles[i]);
        }
    }
    m->nretired = kept;
}

/* Registers partition p where it is not registered on its task's current
 * connection (its first run, or after a reconnection). Only the tasks a
 * run needs: a lost task does not stop runs that do without it. */
static int ensure_registered(fl_master *m, int p)
{
    const fl_graph_partition *part = &m->cut.parts[p];
    fl_task_client *client = client_of(m, part);
    if (!client)
        return -1;
    if (client == m->clients[p] && m->handles[p])
        return 0;
    m->clients[p] = client;
    if (fl_partition_register(client, part, &m->handles[p]) != 0) {
        m->handles[p] = 0;
        return -1;
    }
    drop_retired(m, client);
    return 0;
}

static int prepare_cut(fl_master *m)
{
    if (m->cut.parts && m->cut_nodes != fl_graph_node_count(m->graph))
        forget_cut(m); /* the graph has grown since: cut it again */
    return !m->cut.parts ? cut_graph(m) : 0;
}

/* ---- signatures ---- */

static fl_node **copy_nodes(fl_node *const *nodes, int n)
{
    fl_node **out = fl_xmalloc((size_t)(n ? n : 1) * sizeof *out);
    if (n)
        memcpy(out, nodes, (size_t)n * sizeof *out);
    return out;
}

static bool same_nodes(fl_node *const *a, int na, fl_node *const *b, int nb)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static bool same_feeds(const run_signature *sig, const fl_feed *feeds, int nfeeds)
{
    if (sig->nfeeds != nfeeds)
        return false;
    for (int i = 0; i < nfeeds; i++)
        if (sig->feeds[i] != feeds[i].node)
            return false;
    return true;
}

static run_signature *find_signature(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                                     int nfetches, fl_node *const *targets, int ntargets)
{
    for (int i = 0; i < m->nsigs; i++) {
        run_signature *sig = &m->sigs[i];
        if (same_feeds(sig, feeds, nfeeds) && same_nodes(sig->fetches, sig->nfetches, fetches, nfetches) &&
            same_nodes(sig->targets, sig->ntargets, targets, ntargets))
            return sig;
    }
    m->sigs = fl_xrealloc(m->sigs, (size_t)(m->nsigs + 1) * sizeof *m->sigs);
    run_signature *sig = &m->sigs[m->nsigs++];
    *sig = (run_signature){.nfeeds = nfeeds, .nfetches = nfetches, .ntargets = ntargets};
    sig->feeds = fl_xmalloc((size_t)(nfeeds ? nfeeds : 1) * sizeof *sig->feeds);
    for (int i = 0; i < nfeeds; i++)
        sig->feeds[i] = feeds[i].node;
    sig->fetches = copy_nodes(fetches, nfetches);
    sig->targets = copy_nodes(targets, ntargets);
    return sig;
}

static int check_roots(const fl_master *m, fl_node *const *nodes, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!nodes[i] || nodes[i]->graph != m->graph) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s %d is NULL or from another graph", what, i);
            return -1;
        }
    return 0;
}

static run_signature *prepare(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                              int nfetches, fl_node *const *targets, int ntargets)
{
    if (check_roots(m, fetches, nfetches, "fetch") || check_roots(m, targets, ntargets, "target") ||
        prepare_cut(m) != 0)
        return NULL;
    run_signature *sig = find_signature(m, feeds, nfeeds, fetches, nfetches, targets, ntargets);
    if (sig->cut_version == m->cut_version)
        return sig;
    fl_run_plan_free(&sig->plan);
    fl_partition_request req = {sig->feeds, sig->nfeeds, sig->fetches, sig->nfetches, sig->targets, sig->ntargets,
                                m->home, m->reuse_memory};
    if (fl_run_plan_make(m->graph, &m->cut, &req, &sig->plan) != 0)
        return NULL;
    sig->cut_version = m->cut_version;
    return sig;
}

/* A between-graph worker's link that closed under registered pieces (the
 * task was killed or restarted): they are forgotten, to be registered again
 * by the next run, and the loss counted for fl_cluster_reconnect, which
 * the monitored session's recovery asks. */
static bool lost_link(fl_master *m, int p)
{
    fl_task_client *c = m->clients[p];
    if (!m->on_task || !c || !m->handles[p] || !fl_task_client_broken(c))
        return false;
    forget_client(m, c);
    fl_cluster_note_task_lost(m->cluster);
    return true;
}

/* A task lost since the last run fails this one, as TensorFlow's would
 * (UNAVAILABLE: a monitored session recovers), rather than run on pieces
 * registered anew, against a ps that lost its variables. */
static int register_plan(fl_master *m, const fl_run_plan *plan)
{
    for (int t = 0; t < plan->ntasks; t++) {
        const fl_graph_partition *part = &m->cut.parts[plan->tasks[t].part];
        if (lost_link(m, plan->tasks[t].part)) {
            fl_set_error_code(FL_UNAVAILABLE, "run %llu of this session: lost /job:%s/task:%d since the last run "
                              "(its connection closed: the task was killed or restarted), and the pieces registered "
                              "there with it; connect again and prepare the model, as a monitored session does",
                              (unsigned long long)m->runs, part->job, part->task);
            return -1;
        }
        if (ensure_registered(m, plan->tasks[t].part) != 0)
            return -1;
    }
    return 0;
}

/* ---- a step ---- */

/* "run 222 of this session (global step 221 when last fetched)": a
 * failed step named as the user counts, not by its internal id. */
static void describe_run(const fl_master *m, char *out, size_t len)
{
    int n = snprintf(out, len, "run %llu of this session", (unsigned long long)m->runs);
    if (m->has_global_step && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, " (global step %lld when last fetched)", (long long)m->global_step);
}

/* Keeps the value of the graph's global step when the run fetched it. */
static void note_global_step(fl_master *m, fl_node *const *fetches, int nfetches, fl_tensor *const *outputs)
{
    for (int i = 0; i < nfetches; i++) {
        const fl_tensor *v = outputs[i];
        if (strcmp(fl_node_name(fetches[i]), "global_step") != 0 || !v || v->dtype != FL_INT32 ||
            fl_shape_size(v->shape) != 1)
            continue;
        m->global_step = *(const int32_t *)v->data;
        m->has_global_step = true;
    }
}

/* Room for every task's fetches of plan, one slot each and one spare a task. */
static fl_tensor **output_slots(fl_master *m, const fl_run_plan *plan)
{
    int needed = 0;
    for (int t = 0; t < plan->ntasks; t++)
        needed += plan->tasks[t].run.nfetches + 1;
    if (needed > m->output_capacity) {
        free(m->output_slots);
        m->output_slots = fl_xmalloc((size_t)needed * sizeof *m->output_slots);
        m->output_capacity = needed;
    }
    memset(m->output_slots, 0, (size_t)needed * sizeof *m->output_slots);
    return m->output_slots;
}

static int step(fl_master *m, run_signature *sig, const fl_feed *feeds, fl_tensor **out)
{
    fl_run_plan *plan = &sig->plan;
    int n = plan->ntasks;
    fl_tensor **slot = output_slots(m, plan);
    fl_partition_run runs[n ? n : 1];
    fl_tensor **outputs[n ? n : 1];
    fl_task_client *clients[n ? n : 1];
    uint64_t handles[n ? n : 1];
    fl_graph_partition parts[n ? n : 1]; /* for error messages: job and task */
    uint64_t step_id = m->step_base + ++m->steps;
    for (int t = 0; t < n; t++) {
        fl_task_plan *task = &plan->tasks[t];
        for (int k = 0; k < task->run.nfeeds; k++)
            task->run.feed_values[k] = feeds[task->feed_index[k]].value;
        task->run.step_id = step_id;
        runs[t] = task->run;
        outputs[t] = slot;
        slot += task->run.nfetches + 1;
        clients[t] = m->clients[task->part];
        handles[t] = m->handles[task->part];
        parts[t] = m->cut.parts[task->part];
    }
    char which[96];
    describe_run(m, which, sizeof which);
    int rc = fl_master_step(&m->calls, n, clients, handles, runs, outputs, parts, which, m->trace);
    for (int t = 0; rc != 0 && t < n; t++) /* the loss is said by this run's error */
        lost_link(m, plan->tasks[t].part);
    for (int i = 0; rc == 0 && i < sig->nfetches; i++)
        out[i] = outputs[plan->fetch_task[i]][plan->fetch_slot[i]];
    for (int t = 0; rc != 0 && t < n; t++)
        for (int i = 0; i < runs[t].nfetches; i++)
            fl_tensor_free(outputs[t][i]);
    return rc;
}

static void note_ran(fl_master *m, const fl_run_plan *plan)
{
    if (m->nran < plan->nnodes) {
        m->ran = fl_xrealloc(m->ran, (size_t)plan->nnodes * sizeof *m->ran);
        memset(m->ran + m->nran, 0, (size_t)(plan->nnodes - m->nran) * sizeof *m->ran);
        m->nran = plan->nnodes;
    }
    for (int id = 0; id < plan->nnodes; id++)
        m->ran[id] |= plan->needed[id];
}

// [book:master_run]
int fl_master_run(fl_master *m, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                  fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    for (int i = 0; i < nfetches; i++)
        outputs[i] = NULL;
    for (int i = 0; i < nfeeds; i++)
        if (!feeds[i].node || !feeds[i].value || feeds[i].node->graph != m->graph) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "feed %d has a NULL node or value, or a node of another graph", i);
            return -1;
        }
    m->runs++;
    run_signature *sig = prepare(m, feeds, nfeeds, fetches, nfetches, targets, ntargets);
    if (!sig || register_plan(m, &sig->plan) != 0 || step(m, sig, feeds, outputs) != 0)
        return -1;
    note_ran(m, &sig->plan);
    note_global_step(m, fetches, nfetches, outputs);
    return 0;
}
// [end:master_run]

void fl_master_trace_into(fl_master *m, fl_session *trace) { m->trace = trace; }

/* The device n was asked to run on, once a run that needed it succeeded. */
const char *fl_master_node_device(fl_master *m, const fl_node *n)
{
    char device[FL_DEVICE_LEN];
    if (!n || n->graph != m->graph || n->id >= m->nran || !m->ran[n->id] ||
        fl_partition_node_device(&m->cut, n, device, sizeof device) != 0)
        return NULL;
    for (int i = 0; i < m->ndevice_names; i++)
        if (strcmp(m->device_names[i], device) == 0)
            return m->device_names[i];
    m->device_names = fl_xrealloc(m->device_names, (size_t)(m->ndevice_names + 1) * sizeof *m->device_names);
    return m->device_names[m->ndevice_names++] = fl_xstrdup(device);
}

void fl_master_free(fl_master *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nsigs; i++) {
        fl_run_plan_free(&m->sigs[i].plan);
        free(m->sigs[i].feeds);
        free(m->sigs[i].fetches);
        free(m->sigs[i].targets);
    }
    free(m->ran);
    fl_step_calls_free(m->calls);
    free(m->output_slots);
    for (int i = 0; i < m->ndevice_names; i++)
        free(m->device_names[i]);
    free(m->device_names);
    free(m->sigs);
    forget_cut(m);
    drop_retired(m, NULL);
    free(m->retired_clients);
    free(m->retired_handles);
    if (!m->on_task) /* a worker's goodbye is its program's (its monitored session's), once */
        fl_cluster_say_goodbye(m->cluster);
    fl_master_links_close(&m->links);
    free(m);
}
