/* partition_exec.c: one step of a registered partition on its task, as ONE
 * executor run. Its Recv and Send nodes (the partitioner's, TensorFlow's
 * _Recv and _Send) run on the task's rendezvous (backend_rendezvous.c): a
 * Recv's readers start when its value arrives, a Send leaves as soon as its
 * input is ready; the Sends a step needs are among its targets. The arrays
 * a run signature needs are made once and reused while the signature stays. */
#include <stdlib.h>
#include <string.h>

#include "flowlab_cluster.h"
#include "partition_client.h"
#include "partition_exec.h"
#include "distributed_runtime/ps/cluster_state.h"
#include "rendezvous_device.h"
#include "session_access.h"

typedef struct {
    fl_task_client *client;
    uint32_t last_id;
} peer_sent;

/* What one run signature resolves to: made when it changes, else reused. */
typedef struct {
    fl_feed *feeds;
    fl_tensor **feed_values; /* host tensors, reused while their shape stays */
    int nfeeds;
    fl_node **fetches;
    int nfetches;
    fl_node **targets;       /* the client's, with the Sends the run needs */
    int ntargets;
} signature;

struct fl_partition_exec {
    fl_graph_partition p;
    fl_session *session;     /* made by the first step, on its thread */
    fl_variable_container *variables; /* the task's: NULL outside a server */
    fl_rendezvous_device *rendezvous;
    signature sig;
    int signatures_made;     /* for tests: a warm step makes none */
    const fl_partition_env *env; /* the step's, while it runs */
    uint64_t step_id;
    peer_sent peers[FL_MAX_REMOTE_TASKS];
    int npeers;
    char send_error[FL_ERROR_LEN];
    fl_error_code send_code;
};

fl_partition_exec *fl_partition_exec_new(fl_graph_partition *p, fl_rendezvous *r, fl_variable_container *variables)
{
    fl_partition_exec *e = fl_xcalloc(1, sizeof *e);
    e->variables = variables;
    e->rendezvous = r ? fl_rendezvous_device_new(r) : NULL;
    if (e->rendezvous)
        fl_rendezvous_device_set_container(e->rendezvous, variables);
    e->p = *p;
    memset(p, 0, sizeof *p);
    return e;
}

fl_session *fl_partition_exec_session(fl_partition_exec *e) { return e->session; }

static void forget_signature(signature *sig)
{
    for (int i = 0; i < sig->nfeeds; i++)
        fl_tensor_free(sig->feed_values[i]);
    free(sig->feeds);
    free(sig->feed_values);
    free(sig->fetches);
    free(sig->targets);
    memset(sig, 0, sizeof *sig);
}

void fl_partition_exec_free(fl_partition_exec *e)
{
    if (!e)
        return;
    fl_session_free(e->session);
    fl_rendezvous_device_free(e->rendezvous);
    forget_signature(&e->sig);
    fl_graph_partition_free(&e->p);
    free(e);
}

int fl_partition_exec_signatures_made(const fl_partition_exec *e) { return e->signatures_made; }

/* ---- the run signature: names into nodes, once ---- */

static fl_node *node_named(const fl_partition_exec *e, const char *task, const char *name, const char *what)
{
    fl_node *n = fl_graph_find(e->p.graph, name);
    if (!n)
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: the run's %s %s is no node of its partition", task, what, name);
    return n;
}

/* Whether the run names what the signature resolved, in the same order. */
static bool same_signature(const signature *sig, const fl_wire_run_partition *r)
{
    if (sig->nfeeds != r->nfeeds || sig->nfetches != r->lists[0].count || sig->ntargets != r->lists[1].count)
        return false;
    for (int i = 0; i < sig->nfeeds; i++)
        if (strcmp(sig->feeds[i].node->name, r->feed_names[i]) != 0)
            return false;
    for (int i = 0; i < sig->nfetches; i++)
        if (strcmp(sig->fetches[i]->name, r->lists[0].names[i]) != 0)
            return false;
    for (int i = 0; i < r->lists[1].count; i++)
        if (strcmp(sig->targets[i]->name, r->lists[1].names[i]) != 0)
            return false;
    return true;
}

static int resolve_signature(fl_partition_exec *e, const char *task, const fl_wire_run_partition *r)
{
    signature *sig = &e->sig;
    int ntargets = r->lists[1].count;
    forget_signature(sig);
    e->signatures_made++;
    sig->feeds = fl_xcalloc((size_t)r->nfeeds + 1, sizeof *sig->feeds);
    sig->feed_values = fl_xcalloc((size_t)r->nfeeds + 1, sizeof *sig->feed_values);
    sig->fetches = fl_xcalloc((size_t)r->lists[0].count + 1, sizeof *sig->fetches);
    sig->targets = fl_xcalloc((size_t)ntargets + 1, sizeof *sig->targets);
    int rc = 0;
    for (int i = 0; i < r->nfeeds && rc == 0; i++, sig->nfeeds++)
        rc = (sig->feeds[i].node = node_named(e, task, r->feed_names[i], "feed")) ? 0 : -1;
    for (int i = 0; i < r->lists[0].count && rc == 0; i++, sig->nfetches++)
        rc = (sig->fetches[i] = node_named(e, task, r->lists[0].names[i], "fetch")) ? 0 : -1;
    for (int i = 0; i < ntargets && rc == 0; i++, sig->ntargets++)
        rc = (sig->targets[i] = node_named(e, task, r->lists[1].names[i], "target")) ? 0 : -1;
    if (rc != 0)
        forget_signature(sig);
    return rc;
}

/* The client's feeds into host tensors, kept from step to step while their
 * dtype and shape stay; one over the tensor limit is RESOURCE_EXHAUSTED. */
static int take_feeds(fl_partition_exec *e, const char *task, const fl_wire_run_partition *r)
{
    signature *sig = &e->sig;
    for (int i = 0; i < r->nfeeds; i++) {
        const fl_wire_tensor *w = &r->feed_values[i];
        fl_tensor *t = sig->feed_values[i];
        if (!t || t->dtype != w->dtype || !fl_shape_equal(t->shape, w->shape)) {
            fl_tensor_free(t);
            t = sig->feed_values[i] = fl_tensor_new(w->dtype, w->shape);
        }
        if (!t) {
            fl_prefix_error("%s: feed %s: ", task, r->feed_names[i]);
            return -1;
        }
        fl_wire_tensor_read(w, t->data);
        sig->feeds[i].value = t;
    }
    return 0;
}

/* ---- sends: straight to the task that needs the value ---- */

static void note_send_error(fl_partition_exec *e)
{
    if (e->send_error[0])
        return;
    e->send_code = fl_last_error_code();
    snprintf(e->send_error, sizeof e->send_error, "%s", fl_last_error());
}

static fl_task_client *peer_client(const fl_partition_env *env, const char *to_task)
{
    fl_device_name d = {.task = -1};
    if (fl_parse_device(to_task, &d, NULL, 0) != 0)
        return NULL;
    return fl_cluster_client(env->cluster, d.job, d.task);
}

/* A Send's run (fl_send_fn): the value leaves on the peer's connection at
 * once; its answer is awaited at the end of the step. */
static int send_to_peer(void *user, const char *to_task, uint64_t step, const char *key, const fl_tensor *value)
{
    fl_partition_exec *e = user;
    fl_task_client *c = peer_client(e->env, to_task);
    uint32_t id = c ? fl_partition_send_tensor(c, step, key, value) : 0;
    if (id == 0) {
        note_send_error(e);
        return -1;
    }
    int i = 0;
    while (i < e->npeers && e->peers[i].client != c)
        i++;
    if (i == e->npeers)
        e->npeers++;
    e->peers[i] = (peer_sent){c, id};
    return 0;
}

/* Every send of the step answered, and out of the writer's hands (a big
 * value leaves by reference, so the step's buffers stay put until then): a
 * lost peer fails the step, naming it. A step that failed or was aborted
 * waits only for the writer: a stopped peer's answers would hold it, and
 * the client's ABORT_STEP behind it, up to the deadline. */
static int await_sends(fl_partition_exec *e, bool step_failed)
{
    for (int i = 0; i < e->npeers; i++) {
        if (!step_failed && fl_task_client_wait(e->peers[i].client, e->peers[i].last_id) != 0)
            note_send_error(e);
        fl_task_client_wait_written(e->peers[i].client); /* at once once answered */
    }
    if (!e->send_error[0])
        return 0;
    fl_set_error_code(e->send_code == FL_OK ? FL_UNAVAILABLE : e->send_code, "%s: sending a value: %s", e->env->task,
                      e->send_error);
    return -1;
}

/* Before the step: connections lost in an earlier one (the peer was
 * restarted) are made again, so a server outlives its peers. Never inside
 * a step: one whose sends were lost must fail. */
static int reconnect_lost_peers(fl_partition_exec *e)
{
    const signature *sig = &e->sig;
    for (int i = 0; i < sig->ntargets; i++) {
        if (sig->targets[i]->op != FL_OP_SEND)
            continue;
        fl_task_client *c = peer_client(e->env, sig->targets[i]->attrs.peer_task);
        if (!c)
            return -1;
        if (fl_task_client_broken(c))
            return fl_cluster_reconnect_peers(e->env->cluster);
    }
    return 0;
}

/* ---- one step ---- */

static int make_session(fl_partition_exec *e, const fl_partition_env *env)
{
    if (e->session)
        return 0;
    /* A node on /gpu:0 of a task without one runs on its /cpu:0. */
    fl_session_options o = {.allow_soft_placement = true, .reuse_memory = e->p.reuse_memory};
    e->session = fl_session_new(e->p.graph, &o);
    if (!e->session) {
        fl_prefix_error("%s: ", env->task);
        return -1;
    }
    fl_session_keep_fetched_values(e->session); /* a warm step allocates none */
    if (e->rendezvous)
        fl_session_set_rendezvous(e->session, fl_rendezvous_device_of(e->rendezvous));
    if (e->variables)
        fl_session_set_variable_container(e->session, e->variables);
    return 0;
}

/* Asked by the session before each op and while it waits for values: the
 * run's client has gone. */
static bool client_gone(void *arg)
{
    const fl_partition_exec *e = arg;
    return e->env->cancelled && atomic_load(e->env->cancelled);
}

static int prepare(fl_partition_exec *e, const fl_partition_env *env, const fl_wire_run_partition *run)
{
    if (make_session(e, env) != 0)
        return -1;
    if (!same_signature(&e->sig, run) && resolve_signature(e, env->task, run) != 0)
        return -1;
    return take_feeds(e, env->task, run) != 0 || reconnect_lost_peers(e) != 0 ? -1 : 0;
}

/* Asking for each fetch as soon as it is computed (fetch_ready) makes the
 * session copy it then: a fetched read of a variable is the value before
 * this step's update of it, as the client's own session gives it. */
static void fetched_early(int index, const fl_tensor *value, void *user)
{
    (void)index, (void)value, (void)user;
}

static int run_step(fl_partition_exec *e, const fl_partition_env *env, fl_tensor **outputs)
{
    const signature *sig = &e->sig;
    fl_rendezvous_step step = {.step_id = e->step_id, .log = env->log,
                               .log_prefix = env->log_prefix, .cancelled = env->cancelled,
                               .send = send_to_peer, .send_user = e, .stale_dropped = env->stale_dropped};
    if (e->rendezvous)
        fl_rendezvous_device_begin_step(e->rendezvous, &step);
    fl_run_options options = {.fetch_ready = fetched_early, .user = e, .should_stop = client_gone};
    int rc = fl_session_run_with_options(e->session, &options, sig->feeds, sig->nfeeds, sig->fetches,
                                         sig->nfetches, outputs, sig->targets, sig->ntargets);
    if (rc != 0) /* the one place a task's own error gets its task's name */
        fl_set_error_code(fl_session_error_code(e->session), "%s: %s", env->task, fl_session_error(e->session));
    return rc;
}

int fl_partition_exec_run(fl_partition_exec *e, const fl_partition_env *env, const fl_wire_run_partition *run,
                          fl_tensor **outputs)
{
    int nfetches = run->lists[0].count;
    memset(outputs, 0, (size_t)nfetches * sizeof *outputs);
    e->env = env;
    e->step_id = run->step_id;
    e->npeers = 0;
    e->send_error[0] = '\0';
    int rc = prepare(e, env, run) == 0 ? run_step(e, env, outputs) : -1;
    if (await_sends(e, rc != 0) != 0)
        rc = -1;
    if (rc != 0) /* the values are the session's */
        memset(outputs, 0, (size_t)nfetches * sizeof *outputs);
    e->env = NULL;
    return rc;
}
