/* partition_exec.c: one step of a registered partition on its task. The
 * waves run in order, each one fl_session_run: its feeds are the client's,
 * the values received for this wave (waited for in the rendezvous) and the
 * values kept from earlier waves; its fetches are this wave's sends, the
 * client's fetches and what later waves need. A send leaves as soon as its
 * value is ready (fetch_ready), straight to the task that needs it. A value
 * is computed once: a later wave is fed it, and variables, never fed, are
 * read where they live, in this partition's session. */
#include <stdlib.h>
#include <string.h>

#include "flowlab_cluster.h"
#include "partition_client.h"
#include "partition_exec.h"
#include "remote_device.h"

struct fl_partition_exec {
    fl_graph_partition p;
    fl_session *session; /* made by the first step, on its thread */
    int nnodes;
    int *earlier_start, *earlier; /* per node: its control inputs from earlier waves */
};

/* Moves each control input from an earlier wave aside: kept in the graph,
 * the session would run it again in the later wave. */
static void set_aside_earlier_controls(fl_partition_exec *e)
{
    int total = 0;
    for (int id = 0; id < e->nnodes; id++)
        total += fl_graph_node(e->p.graph, id)->ncontrols;
    e->earlier_start = fl_xcalloc((size_t)e->nnodes + 1, sizeof *e->earlier_start);
    e->earlier = fl_xcalloc((size_t)total + 1, sizeof *e->earlier);
    int used = 0;
    for (int id = 0; id < e->nnodes; id++) {
        fl_node *n = fl_graph_node(e->p.graph, id);
        int kept = 0;
        e->earlier_start[id] = used;
        for (int i = 0; i < n->ncontrols; i++) {
            if (e->p.wave[n->controls[i]->id] < e->p.wave[id])
                e->earlier[used++] = n->controls[i]->id;
            else
                n->controls[kept++] = n->controls[i];
        }
        n->ncontrols = kept;
    }
    e->earlier_start[e->nnodes] = used;
}

fl_partition_exec *fl_partition_exec_new(fl_graph_partition *p)
{
    fl_partition_exec *e = fl_xcalloc(1, sizeof *e);
    e->p = *p;
    memset(p, 0, sizeof *p);
    e->nnodes = fl_graph_node_count(e->p.graph);
    set_aside_earlier_controls(e);
    return e;
}

fl_session *fl_partition_exec_session(fl_partition_exec *e) { return e->session; }

void fl_partition_exec_free(fl_partition_exec *e)
{
    if (!e)
        return;
    fl_session_free(e->session);
    fl_graph_partition_free(&e->p);
    free(e->earlier_start);
    free(e->earlier);
    free(e);
}

/* ---- one step ---- */

typedef struct {
    fl_ps_client *client;
    uint32_t last_id;
} peer_sent;

typedef struct {
    fl_partition_exec *e;
    const fl_partition_env *env;
    const fl_wire_run_partition *run;
    fl_node **fetches, **targets;
    fl_feed *feeds;               /* the client's, then the wave's */
    fl_tensor **feed_values;      /* the client's, in host order */
    const fl_partition_edge **sends, **recvs;
    bool *needed, *fed, *keep_later, *run_later;
    fl_tensor **kept;             /* per node: received, or computed by an earlier wave */
    fl_node **wave_fetches;       /* this wave's */
    fl_tensor **outputs;
    peer_sent peers[FL_MAX_REMOTE_TASKS];
    int npeers;
    char send_error[FL_ERROR_LEN];
    fl_error_code send_code;
} step;

static fl_node *node_named(step *s, const char *name, const char *what)
{
    fl_node *n = fl_graph_find(s->e->p.graph, name);
    if (!n)
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the run's %s %s is no node of its partition", s->env->task, what,
                          name);
    return n;
}

static const fl_partition_edge *edge_keyed(step *s, const fl_partition_edge *edges, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(edges[i].key, key) == 0)
            return &edges[i];
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the run's edge %s is not one of its partition", s->env->task, key);
    return NULL;
}

/* Names into nodes and edges; the client's feeds into host tensors. */
static int resolve(step *s)
{
    const fl_wire_run_partition *r = s->run;
    const fl_graph_partition *p = &s->e->p;
    for (int i = 0; i < r->nfeeds; i++) {
        if (!(s->feeds[i].node = node_named(s, r->feed_names[i], "feed")))
            return -1;
        s->feed_values[i] = fl_tensor_new(r->feed_values[i].dtype, r->feed_values[i].shape);
        if (!s->feed_values[i]) { /* over the tensor limit: RESOURCE_EXHAUSTED */
            fl_prefix_error("%s: feed %s: ", s->env->task, r->feed_names[i]);
            return -1;
        }
        fl_wire_tensor_read(&r->feed_values[i], s->feed_values[i]->data);
        s->feeds[i].value = s->feed_values[i];
        s->fed[s->feeds[i].node->id] = true;
    }
    for (int i = 0; i < r->lists[0].count; i++)
        if (!(s->fetches[i] = node_named(s, r->lists[0].names[i], "fetch")))
            return -1;
    for (int i = 0; i < r->lists[1].count; i++)
        if (!(s->targets[i] = node_named(s, r->lists[1].names[i], "target")))
            return -1;
    for (int i = 0; i < r->lists[2].count; i++)
        if (!(s->sends[i] = edge_keyed(s, p->sends, p->nsends, r->lists[2].names[i])))
            return -1;
    for (int i = 0; i < r->lists[3].count; i++)
        if (!(s->recvs[i] = edge_keyed(s, p->recvs, p->nrecvs, r->lists[3].names[i])))
            return -1;
    return 0;
}

/* What the step needs, from its roots back (ids are a topological order);
 * then which values and runs later waves need from earlier ones. */
static void mark_needed(step *s)
{
    const fl_partition_exec *e = s->e;
    const fl_wire_run_partition *r = s->run;
    for (int i = 0; i < r->lists[0].count; i++)
        s->needed[s->fetches[i]->id] = true;
    for (int i = 0; i < r->lists[1].count; i++)
        s->needed[s->targets[i]->id] = true;
    for (int i = 0; i < r->lists[2].count; i++)
        s->needed[fl_graph_find(e->p.graph, s->sends[i]->node)->id] = true;
    for (int id = e->nnodes - 1; id >= 0; id--) {
        const fl_node *n = fl_graph_node(e->p.graph, id);
        if (!s->needed[id] || s->fed[id])
            continue;
        for (int i = 0; i < n->ninputs; i++)
            s->needed[n->inputs[i]->id] = true;
        for (int i = 0; i < n->ncontrols; i++)
            s->needed[n->controls[i]->id] = true;
        for (int i = e->earlier_start[id]; i < e->earlier_start[id + 1]; i++)
            s->needed[e->earlier[i]] = s->run_later[e->earlier[i]] = true;
        for (int i = 0; i < n->ninputs; i++)
            if (e->p.wave[n->inputs[i]->id] < e->p.wave[id])
                s->keep_later[n->inputs[i]->id] = true;
    }
}

/* ---- sends ---- */

static void note_send_error(step *s)
{
    if (s->send_error[0])
        return;
    s->send_code = fl_last_error_code();
    snprintf(s->send_error, sizeof s->send_error, "%s", fl_last_error());
}

/* Before the step: connections lost in an earlier one (the peer was
 * restarted) are made again, so a server outlives its peers. Never inside
 * a step: one whose sends were lost must fail. */
static int reconnect_lost_peers(step *s)
{
    for (int i = 0; i < s->run->lists[2].count; i++) {
        const fl_partition_edge *edge = s->sends[i];
        fl_device *d = fl_remote_device(s->env->cluster, edge->peer_job, edge->peer_task);
        if (!d)
            return -1;
        if (fl_ps_client_broken(fl_remote_client(d->impl)))
            return fl_cluster_reconnect(s->env->cluster) < 0 ? -1 : 0;
    }
    return 0;
}

static void send_value(step *s, const fl_partition_edge *edge, const fl_tensor *value)
{
    fl_device *d = fl_remote_device(s->env->cluster, edge->peer_job, edge->peer_task);
    fl_ps_client *c = d ? fl_remote_client(d->impl) : NULL;
    uint32_t id = c ? fl_partition_send_tensor(c, s->run->step_id, edge->key, value) : 0;
    if (id == 0)
        return note_send_error(s);
    int i = 0;
    while (i < s->npeers && s->peers[i].client != c)
        i++;
    if (i == s->npeers)
        s->npeers++;
    s->peers[i] = (peer_sent){c, id};
}

/* fetch_ready: a value this wave computed, sent at once to each task that needs it. */
static void on_value_ready(int index, const fl_tensor *value, void *user)
{
    step *s = user;
    const char *node = s->wave_fetches[index]->name;
    for (int i = 0; i < s->run->lists[2].count; i++)
        if (strcmp(s->sends[i]->node, node) == 0)
            send_value(s, s->sends[i], value);
}

/* Every send of the step answered: a lost peer fails the step, naming it. */
static int await_sends(step *s)
{
    for (int i = 0; i < s->npeers; i++)
        if (fl_ps_client_wait(s->peers[i].client, s->peers[i].last_id) != 0)
            note_send_error(s);
    if (!s->send_error[0])
        return 0;
    fl_set_error_code(s->send_code == FL_OK ? FL_UNAVAILABLE : s->send_code, "%s: sending a value: %s", s->env->task,
                      s->send_error);
    return -1;
}

/* ---- the waves ---- */

/* This wave's values from other tasks, waited for in the rendezvous. */
static int receive_wave(step *s, int wave)
{
    const fl_partition_env *env = s->env;
    for (int i = 0; i < s->run->lists[3].count; i++) {
        const fl_partition_edge *edge = s->recvs[i];
        int id = fl_graph_find(s->e->p.graph, edge->node)->id;
        if (s->e->p.wave[id] != wave || !s->needed[id] || s->kept[id])
            continue;
        char from[64];
        snprintf(from, sizeof from, "/job:%s/task:%d", edge->peer_job, edge->peer_task);
        fl_rendezvous_wait_options o = {from, fl_task_deadline_s(), env->log, env->log_prefix};
        if (fl_rendezvous_take(env->rendezvous, s->run->step_id, edge->key, &o, &s->kept[id]) != 0) {
            fl_prefix_error("%s: ", env->task);
            return -1;
        }
    }
    return 0;
}

static bool is_root(fl_node *const *roots, int n, const fl_node *node)
{
    for (int i = 0; i < n; i++)
        if (roots[i] == node)
            return true;
    return false;
}

static bool is_sent(const step *s, const fl_node *node)
{
    for (int i = 0; i < s->run->lists[2].count; i++)
        if (strcmp(s->sends[i]->node, node->name) == 0)
            return true;
    return false;
}

/* The wave's fetches (into s->wave_fetches) and targets. */
static void plan_wave(step *s, int wave, fl_node **targets, int *nfetches, int *ntargets)
{
    const fl_wire_run_partition *r = s->run;
    *nfetches = *ntargets = 0;
    for (int id = 0; id < s->e->nnodes; id++) {
        fl_node *n = fl_graph_node(s->e->p.graph, id);
        if (s->e->p.wave[id] != wave || !s->needed[id])
            continue;
        bool keep = s->keep_later[id] && n->op != FL_OP_VARIABLE && !s->kept[id] && !s->fed[id];
        if (keep || is_root(s->fetches, r->lists[0].count, n) || is_sent(s, n))
            s->wave_fetches[(*nfetches)++] = n;
        if (s->run_later[id] || is_root(s->targets, r->lists[1].count, n))
            targets[(*ntargets)++] = n;
    }
}

/* The client's feeds, then every value received or kept so far. */
static int feed_wave(step *s)
{
    int n = s->run->nfeeds;
    for (int id = 0; id < s->e->nnodes; id++)
        if (s->kept[id])
            s->feeds[n++] = (fl_feed){fl_graph_node(s->e->p.graph, id), s->kept[id]};
    return n;
}

/* What the wave computed: kept for later waves, copied out for the client;
 * a copy over the tensor limit fails the step (RESOURCE_EXHAUSTED). */
static int keep_results(step *s, int nfetches, fl_tensor **values)
{
    int rc = 0;
    for (int k = 0; k < nfetches; k++) {
        const fl_node *n = s->wave_fetches[k];
        if (rc == 0 && s->keep_later[n->id] && !s->kept[n->id])
            rc = (s->kept[n->id] = fl_tensor_copy(values[k])) ? 0 : -1;
        for (int j = 0; rc == 0 && j < s->run->lists[0].count; j++)
            if (s->fetches[j] == n && !s->outputs[j])
                rc = (s->outputs[j] = fl_tensor_copy(values[k])) ? 0 : -1;
        fl_tensor_free(values[k]);
    }
    if (rc != 0)
        fl_prefix_error("%s: keeping a wave's value: ", s->env->task);
    return rc;
}

/* Asked by the session before each op: the run's client has gone. */
static bool client_gone(void *arg)
{
    const step *s = arg;
    return s->env->cancelled && atomic_load(s->env->cancelled);
}

static int run_wave(step *s, int wave, fl_node **targets)
{
    int nfetches, ntargets;
    if (receive_wave(s, wave) != 0)
        return -1;
    plan_wave(s, wave, targets, &nfetches, &ntargets);
    if (nfetches + ntargets == 0)
        return 0;
    int nfeeds = feed_wave(s);
    fl_tensor **values = fl_xcalloc((size_t)nfetches + 1, sizeof *values);
    fl_run_options options = {.fetch_ready = on_value_ready, .user = s, .should_stop = client_gone};
    fl_session *session = s->e->session;
    int rc = fl_session_run_with_options(session, &options, s->feeds, nfeeds, s->wave_fetches, nfetches, values,
                                         targets, ntargets);
    if (rc != 0)
        fl_set_error_code(fl_session_error_code(session), "%s: %s", s->env->task, fl_session_error(session));
    else
        rc = keep_results(s, nfetches, values);
    free(values);
    return rc;
}

static void step_alloc(step *s, int n, int nfeeds)
{
    const fl_wire_run_partition *r = s->run;
    s->fetches = fl_xcalloc((size_t)r->lists[0].count + 1, sizeof *s->fetches);
    s->targets = fl_xcalloc((size_t)r->lists[1].count + 1, sizeof *s->targets);
    s->sends = fl_xcalloc((size_t)r->lists[2].count + 1, sizeof *s->sends);
    s->recvs = fl_xcalloc((size_t)r->lists[3].count + 1, sizeof *s->recvs);
    s->feeds = fl_xcalloc((size_t)(nfeeds + n) + 1, sizeof *s->feeds);
    s->feed_values = fl_xcalloc((size_t)nfeeds + 1, sizeof *s->feed_values);
    s->needed = fl_xcalloc((size_t)n + 1, sizeof *s->needed);
    s->fed = fl_xcalloc((size_t)n + 1, sizeof *s->fed);
    s->keep_later = fl_xcalloc((size_t)n + 1, sizeof *s->keep_later);
    s->run_later = fl_xcalloc((size_t)n + 1, sizeof *s->run_later);
    s->kept = fl_xcalloc((size_t)n + 1, sizeof *s->kept);
    s->wave_fetches = fl_xcalloc((size_t)n + 1, sizeof *s->wave_fetches);
}

static void step_free(step *s, int n)
{
    for (int i = 0; i < s->run->nfeeds; i++)
        fl_tensor_free(s->feed_values[i]);
    for (int id = 0; id < n; id++)
        fl_tensor_free(s->kept[id]);
    void *arrays[] = {s->fetches, s->targets, s->sends, s->recvs, s->feeds, s->feed_values, s->needed,
                      s->fed, s->keep_later, s->run_later, s->kept, s->wave_fetches};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
        free(arrays[i]);
}

static int make_session(fl_partition_exec *e, const fl_partition_env *env)
{
    if (e->session)
        return 0;
    /* A node on /gpu:0 of a task without one runs on its /cpu:0. */
    fl_session_options o = {.allow_soft_placement = true};
    e->session = fl_session_new(e->p.graph, &o);
    if (!e->session)
        fl_prefix_error("%s: ", env->task);
    return e->session ? 0 : -1;
}

/* One variable's value from older's session into e's, through its own
 * initializer with the value fed where the initial value would come from. */
static bool carry_variable(fl_partition_exec *e, fl_partition_exec *older, fl_node *var)
{
    fl_node *was = fl_graph_find_variable(older->p.graph, var->name);
    if (!was || was->dtype != var->dtype || !fl_shape_equal(was->shape, var->shape) || !var->initializer)
        return false;
    fl_tensor *value = NULL;
    if (fl_session_run(older->session, NULL, 0, &was, 1, &value, NULL, 0) != 0) /* never initialized there */
        return false;
    fl_feed feed = {var->initializer->inputs[1], value};
    bool carried = fl_session_run(e->session, &feed, 1, NULL, 0, NULL, &var->initializer, 1) == 0;
    fl_tensor_free(value);
    return carried;
}

int fl_partition_exec_inherit(fl_partition_exec *e, fl_partition_exec *older, const char *task)
{
    fl_partition_env env = {.task = task};
    if (!older->session || make_session(e, &env) != 0)
        return 0;
    int carried = 0;
    for (int i = 0; i < fl_graph_variable_count(e->p.graph); i++)
        carried += carry_variable(e, older, fl_graph_variable(e->p.graph, i));
    return carried;
}

/* The client has gone: no wave after this one starts. */
static bool was_cancelled(const fl_partition_env *env, int wave)
{
    if (!env->cancelled || !atomic_load(env->cancelled))
        return false;
    fl_set_error_code(FL_ABORTED, "%s: the run was cancelled before wave %d: its client has gone", env->task, wave);
    return true;
}

int fl_partition_exec_run(fl_partition_exec *e, const fl_partition_env *env, const fl_wire_run_partition *run,
                          fl_tensor **outputs)
{
    int nfetches = run->lists[0].count;
    memset(outputs, 0, (size_t)nfetches * sizeof *outputs);
    if (make_session(e, env) != 0)
        return -1;
    step s = {.e = e, .env = env, .run = run, .outputs = outputs};
    step_alloc(&s, e->nnodes, run->nfeeds);
    fl_node **targets = fl_xcalloc((size_t)e->nnodes + 1, sizeof *targets);
    int rc = resolve(&s) != 0 || reconnect_lost_peers(&s) != 0 ? -1 : 0;
    if (rc == 0)
        mark_needed(&s);
    for (int wave = 0; wave < e->p.nwaves && rc == 0; wave++)
        rc = was_cancelled(env, wave) ? -1 : run_wave(&s, wave, targets);
    if (await_sends(&s) != 0)
        rc = -1;
    free(targets);
    step_free(&s, e->nnodes);
    if (rc != 0)
        for (int i = 0; i < nfetches; i++) {
            fl_tensor_free(outputs[i]);
            outputs[i] = NULL;
        }
    return rc;
}
