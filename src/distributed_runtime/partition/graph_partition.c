/* graph_partition.c: the client's master cuts what one run needs into one
 * graph per task (TensorFlow's graph partitioning). A pure function: it
 * reads the user's graph, changes nothing, talks to no one; the master
 * (master.c) registers the pieces and runs them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_partition.h"

/* The partitioner's working state for one run signature. */
typedef struct {
    const fl_graph *g;
    fl_task_ref home;      /* where a node without a task goes */
    int nnodes;
    bool *needed, *fed;
    int *part_of;          /* partition index per node, -1 when not needed */
    fl_graph_partition *parts;
    int nparts;
    fl_node **copy;         /* copy[id]: the node's copy in its partition */
    fl_node **recv;         /* recv[p * nnodes + id]: the Recv of id's value on p */
    fl_node **control_recv; /* the same for "id has run" */
    fl_node **control_token; /* in id's own partition: a scalar run after id */
} cutter;

/* ---- which task a node belongs to ---- */

/* A node's task and its device on that task. No device or no job: the
 * home task: worker 0, where TensorFlow's master in a client puts what it
 * leaves unplaced, or a between-graph worker's own task. */
static int node_task(const fl_node *n, const fl_task_ref *home, char job[32], int *task, char *local, size_t len)
{
    fl_device_name d = {.task = -1};
    if (n->device[0] && fl_parse_device(n->device, &d, NULL, 0) != 0) {
        fl_prefix_error("%s: ", n->name);
        return -1;
    }
    snprintf(job, 32, "%s", d.job[0] ? d.job : home->job[0] ? home->job : "worker");
    *task = d.task >= 0 ? d.task : d.job[0] ? 0 : home->task;
    if (!n->device[0])
        local[0] = '\0';
    else
        snprintf(local, len, "/%s:%d", d.is_gpu ? "gpu" : "cpu", d.index);
    return 0;
}

int fl_partition_node_device(const fl_partitioned_run *cut, const fl_node *n, char *out, size_t len)
{
    char job[32], local[FL_DEVICE_LEN];
    int task;
    if (node_task(n, &cut->home, job, &task, local, sizeof local) != 0)
        return -1;
    snprintf(out, len, "/job:%s/task:%d%s", job, task, local[0] ? local : "/cpu:0");
    return 0;
}

static int find_part(const fl_graph_partition *parts, int nparts, const char *job, int task)
{
    for (int p = 0; p < nparts; p++)
        if (strcmp(parts[p].job, job) == 0 && parts[p].task == task)
            return p;
    return -1;
}

int fl_partition_of_node(const fl_partitioned_run *cut, const fl_node *n)
{
    char job[32], local[FL_DEVICE_LEN];
    int task;
    if (node_task(n, &cut->home, job, &task, local, sizeof local) != 0)
        return -1;
    return find_part(cut->parts, cut->nparts, job, task);
}

static int find_or_add_part(cutter *c, const char *job, int task)
{
    int found = find_part(c->parts, c->nparts, job, task);
    if (found >= 0)
        return found;
    c->parts = fl_xrealloc(c->parts, (size_t)(c->nparts + 1) * sizeof *c->parts);
    fl_graph_partition *p = &c->parts[c->nparts];
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "%s", job);
    p->task = task;
    return c->nparts++;
}

/* Partitions in a fixed order (ps before worker, task 0 first), so the same
 * placement always gives the same partitions. */
static int compare_parts(const void *a, const void *b)
{
    const fl_graph_partition *x = a, *y = b;
    int by_job = strcmp(x->job, y->job);
    return by_job ? by_job : x->task - y->task;
}

static int assign_tasks(cutter *c)
{
    char job[32], local[FL_DEVICE_LEN];
    int task;
    for (int id = 0; id < c->nnodes; id++)
        if (c->needed[id]) {
            if (node_task(fl_graph_node(c->g, id), &c->home, job, &task, local, sizeof local) != 0)
                return -1;
            find_or_add_part(c, job, task);
        }
    qsort(c->parts, (size_t)c->nparts, sizeof *c->parts, compare_parts);
    for (int id = 0; id < c->nnodes; id++) {
        c->part_of[id] = -1;
        if (c->needed[id]) {
            node_task(fl_graph_node(c->g, id), &c->home, job, &task, local, sizeof local);
            c->part_of[id] = find_or_add_part(c, job, task);
        }
    }
    return 0;
}

/* ---- pruning (graph_prune.c, as the session's) ---- */

static bool fed_here(const void *fed, int id) { return ((const bool *)fed)[id]; }

void fl_partition_prune(const fl_graph *g, const fl_partition_request *run, bool *needed, bool *fed)
{
    memset(needed, 0, (size_t)fl_graph_node_count(g) * sizeof *needed);
    memset(fed, 0, (size_t)fl_graph_node_count(g) * sizeof *fed);
    for (int i = 0; i < run->nfeeds; i++)
        fed[run->feeds[i]->id] = true;
    fl_graph_mark_needed(needed, fed_here, fed, run->fetches, run->nfetches);
    fl_graph_mark_needed(needed, fed_here, fed, run->targets, run->ntargets);
}

/* ---- building the partitions' graphs ---- */

/* One send on the value's task and one recv on the reader's, keyed by both
 * ends: "dense/kernel:/job:ps/task:0->/job:worker/task:1". A control edge's
 * key starts with '^', as TensorFlow writes control inputs. */
static int edge_key(const fl_graph_partition *from, const fl_graph_partition *to, const char *value, bool control,
                    char *key, size_t len)
{
    return snprintf(key, len, "%s%s:/job:%s/task:%d->/job:%s/task:%d", control ? "^" : "", value, from->job,
                    from->task, to->job, to->task);
}

/* The Send's name on the sending task: one per value and receiving task. */
static void send_name(const fl_graph_partition *to, const char *value, char *out, size_t len)
{
    snprintf(out, len, "_send/%s/to/%s/%d", value, to->job, to->task);
}

fl_node *fl_partition_send_of(const fl_graph_partition *from, const fl_graph_partition *to, const fl_node *before,
                              bool control)
{
    char value[FL_WIRE_MAX_NAME + 32], name[2 * FL_WIRE_MAX_NAME];
    snprintf(value, sizeof value, "%s%s", control ? "_send_control/" : "", before->name);
    send_name(to, value, name, sizeof name);
    fl_node *send = fl_graph_find(from->graph, name);
    return send && send->op == FL_OP_SEND ? send : NULL;
}

static int check_edge_names(const char *value, const char *key, const char *send, const char *recv)
{
    size_t longest = strlen(key) > strlen(send) ? strlen(key) : strlen(send);
    if (strlen(recv) > longest)
        longest = strlen(recv);
    if (longest <= FL_WIRE_MAX_NAME)
        return 0;
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: its name is too long to cross tasks (a key or Send of %zu bytes; "
                      "the wire allows %u): give it a shorter name", value, longest, FL_WIRE_MAX_NAME);
    return -1;
}

/* The pair for sent (a copy on partition `from`) to partition `to`: a Send
 * after it there, a Recv named recv_name on `to`, matched by key. */
static fl_node *add_send_recv(cutter *c, int from, int to, fl_node *sent, const char *recv_name, bool control)
{
    const fl_graph_partition *src = &c->parts[from], *dst = &c->parts[to];
    char key[2 * FL_WIRE_MAX_NAME], send[2 * FL_WIRE_MAX_NAME], src_task[FL_DEVICE_LEN], dst_task[FL_DEVICE_LEN];
    edge_key(src, dst, sent->name, control, key, sizeof key);
    send_name(dst, sent->name, send, sizeof send);
    if (check_edge_names(sent->name, key, send, recv_name) != 0)
        return NULL;
    snprintf(src_task, sizeof src_task, "/job:%s/task:%d", src->job, src->task);
    snprintf(dst_task, sizeof dst_task, "/job:%s/task:%d", dst->job, dst->task);
    if (!fl_send(src->graph, sent, key, dst_task, send))
        return NULL;
    return fl_recv(dst->graph, sent->dtype, sent->shape, key, src_task, recv_name);
}

/* The Recv of `value` (another task's) on partition p, with its Send on the
 * value's task: made the first time a node of p reads it. */
static fl_node *received_value(cutter *c, int p, const fl_node *value)
{
    fl_node **slot = &c->recv[(size_t)p * (size_t)c->nnodes + (size_t)value->id];
    if (*slot)
        return *slot;
    char name[FL_WIRE_MAX_NAME + 16];
    snprintf(name, sizeof name, "_recv/%s", value->name);
    *slot = add_send_recv(c, c->part_of[value->id], p, c->copy[value->id], name, false);
    return *slot;
}

/* "before has run", on partition p: a scalar token built after before on
 * its task, sent to p and received there. */
static fl_node *received_control(cutter *c, int p, const fl_node *before)
{
    fl_node **slot = &c->control_recv[(size_t)p * (size_t)c->nnodes + (size_t)before->id];
    if (*slot)
        return *slot;
    int from = c->part_of[before->id];
    char token[FL_WIRE_MAX_NAME + 16], name[FL_WIRE_MAX_NAME + 16];
    snprintf(token, sizeof token, "_send_control/%s", before->name);
    snprintf(name, sizeof name, "_recv_control/%s", before->name);
    fl_node **sent = &c->control_token[before->id];
    if (!*sent) { /* an Identity of a constant: a source runs at once, whatever its control inputs */
        fl_graph *src = c->parts[from].graph;
        fl_node *zero = fl_scalar(src, 0.0f, NULL);
        fl_control_dependencies_push(src, &c->copy[before->id], 1);
        *sent = zero ? fl_identity(src, zero, token) : NULL;
        fl_control_dependencies_pop(src);
        if (!*sent)
            return NULL;
    }
    *slot = add_send_recv(c, from, p, *sent, name, true);
    return *slot;
}

/* A variable is updated where it lives: an op that writes one (Assign, an
 * optimizer's Apply) must be on the variable's task. */
static bool writes_inputs(fl_op_kind op)
{
    return op == FL_OP_ASSIGN || op == FL_OP_ASSIGN_ADD || op == FL_OP_APPLY_GRADIENT_DESCENT ||
           op == FL_OP_APPLY_MOMENTUM || op == FL_OP_APPLY_ADAM;
}

static int check_state_input(const cutter *c, const fl_node *n, const fl_node *in)
{
    if (!writes_inputs(n->op) || in->op != FL_OP_VARIABLE || c->part_of[in->id] == c->part_of[n->id])
        return 0;
    fl_set_error_code(FL_INVALID_ARGUMENT, "%s: a %s on %s writes variable %s, which lives on %s; a variable "
                      "is updated on its own task: colocate the update with it (fl_device_scope_push_colocated)",
                      n->name, fl_node_op_type(n), n->device, in->name, in->device);
    return -1;
}

/* n's inputs as its partition sees them: its own copies, or received values. */
static int local_inputs(cutter *c, const fl_node *n, fl_node **out)
{
    int p = c->part_of[n->id];
    for (int i = 0; i < n->ninputs; i++) {
        const fl_node *in = n->inputs[i];
        if (check_state_input(c, n, in) != 0)
            return -1;
        out[i] = c->part_of[in->id] == p ? c->copy[in->id] : received_value(c, p, in);
        if (!out[i])
            return -1;
    }
    return 0;
}

/* n's control inputs as its partition sees them; made before n's copy,
 * since a control input must be older than its node. */
static int local_controls(cutter *c, const fl_node *n, fl_node **out)
{
    int p = c->part_of[n->id];
    for (int i = 0; i < n->ncontrols; i++) {
        const fl_node *before = n->controls[i];
        out[i] = c->part_of[before->id] == p ? c->copy[before->id] : received_control(c, p, before);
        if (!out[i])
            return -1;
    }
    return 0;
}

/* The copy keeps the name, op, attributes and value; its device is made
 * local to the task ("/job:worker/task:1/gpu:0" becomes "/gpu:0"). */
static fl_node *copy_node(fl_graph *pg, const fl_node *n, fl_node **inputs, const char *device)
{
    fl_node_spec spec = {.op = n->op, .name = n->name, .inputs = inputs, .ninputs = n->ninputs,
                         .dtype = n->dtype, .attrs = n->attrs,
                         .exact_name = true};
    fl_device_scope_push(pg, device);
    fl_node *copy = fl_add_node(pg, &spec);
    fl_device_pop(pg);
    if (!copy)
        return NULL;
    if (n->value)
        copy->value = fl_tensor_copy(n->value);
    copy->trainable = n->trainable;
    if (n->op == FL_OP_VARIABLE)
        fl_graph_register_variable(pg, copy);
    return copy;
}

/* The variable's first Assign is its initializer in the copy as well. */
static void keep_initializer(cutter *c, const fl_node *n, fl_node *copy)
{
    if (n->op == FL_OP_ASSIGN && n->inputs[0]->initializer == n)
        c->copy[n->inputs[0]->id]->initializer = copy;
}

static int place_node(cutter *c, const fl_node *n)
{
    char job[32], device[FL_DEVICE_LEN];
    int task;
    fl_graph_partition *p = &c->parts[c->part_of[n->id]];
    node_task(n, &c->home, job, &task, device, sizeof device);
    if (c->fed[n->id]) { /* the client feeds it here: its inputs are not needed */
        fl_device_scope_push(p->graph, device);
        c->copy[n->id] = fl_placeholder(p->graph, n->dtype, n->shape, n->name);
        fl_device_pop(p->graph);
        return c->copy[n->id] ? 0 : -1;
    }
    fl_node *inputs[n->ninputs ? n->ninputs : 1], *controls[n->ncontrols ? n->ncontrols : 1];
    if (local_inputs(c, n, inputs) != 0 || local_controls(c, n, controls) != 0)
        return -1;
    fl_node *copy = copy_node(p->graph, n, inputs, device);
    if (!copy)
        return -1;
    for (int i = 0; i < n->ncontrols; i++)
        if (fl_add_control_input(p->graph, copy, controls[i]) != 0)
            return -1;
    keep_initializer(c, n, copy);
    c->copy[n->id] = copy;
    return 0;
}

static int build_partitions(cutter *c)
{
    for (int p = 0; p < c->nparts; p++) {
        c->parts[p].graph = fl_graph_new();
        fl_graph_set_random_seed(c->parts[p].graph, fl_graph_seed(c->g));
    }
    for (int id = 0; id < c->nnodes; id++)
        if (c->needed[id] && place_node(c, fl_graph_node(c->g, id)) != 0)
            goto failed;
    for (int p = 0; p < c->nparts; p++)
        if (fl_graph_error(c->parts[p].graph)) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s", fl_graph_error(c->parts[p].graph));
            goto failed;
        }
    return 0;
failed:
    fl_prefix_error("partitioning the graph by task: ");
    return -1;
}

/* ---- the public function ---- */

static int roots_part(const cutter *c, fl_node *const *nodes, int n, int **out)
{
    *out = fl_xmalloc((size_t)(n ? n : 1) * sizeof **out);
    for (int i = 0; i < n; i++)
        (*out)[i] = c->part_of[nodes[i]->id];
    return 0;
}

static void cutter_free(cutter *c)
{
    free(c->needed);
    free(c->fed);
    free(c->part_of);
    free(c->copy);
    free(c->recv);
    free(c->control_recv);
    free(c->control_token);
}

static int check_nodes(const fl_graph *g, fl_node *const *nodes, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!nodes[i] || nodes[i]->graph != g) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "partitioning: %s %d is NULL or from another graph", what, i);
            return -1;
        }
    return 0;
}

static void cutter_init(cutter *c, const fl_graph *g)
{
    size_t n = (size_t)fl_graph_node_count(g);
    *c = (cutter){.g = g, .nnodes = (int)n};
    c->needed = fl_xcalloc(n + 1, sizeof *c->needed);
    c->fed = fl_xcalloc(n + 1, sizeof *c->fed);
    c->part_of = fl_xcalloc(n + 1, sizeof *c->part_of);
    c->copy = fl_xcalloc(n + 1, sizeof *c->copy);
    c->control_token = fl_xcalloc(n + 1, sizeof *c->control_token);
}

int fl_partition_graph(const fl_graph *g, const fl_partition_request *run, fl_partitioned_run *out)
{
    memset(out, 0, sizeof *out);
    if (check_nodes(g, run->feeds, run->nfeeds, "feed") || check_nodes(g, run->fetches, run->nfetches, "fetch") ||
        check_nodes(g, run->targets, run->ntargets, "target"))
        return -1;
    cutter c;
    cutter_init(&c, g);
    c.home = run->home;
    out->home = run->home;
    fl_partition_prune(g, run, c.needed, c.fed);
    int rc = assign_tasks(&c);
    if (rc == 0) {
        size_t slots = (size_t)(c.nparts ? c.nparts : 1) * (size_t)(c.nnodes + 1);
        c.recv = fl_xcalloc(slots, sizeof *c.recv);
        c.control_recv = fl_xcalloc(slots, sizeof *c.control_recv);
        rc = build_partitions(&c);
    }
    out->parts = c.parts;
    out->nparts = c.nparts;
    c.parts = NULL;
    for (int p = 0; p < out->nparts; p++)
        out->parts[p].reuse_memory = run->reuse_memory;
    roots_part(&c, run->feeds, run->nfeeds, &out->feed_part);
    roots_part(&c, run->fetches, run->nfetches, &out->fetch_part);
    roots_part(&c, run->targets, run->ntargets, &out->target_part);
    cutter_free(&c);
    if (rc != 0)
        fl_partitioned_run_free(out);
    return rc;
}

void fl_graph_partition_free(fl_graph_partition *p)
{
    if (!p)
        return;
    fl_graph_free(p->graph);
    memset(p, 0, sizeof *p);
}

void fl_partitioned_run_free(fl_partitioned_run *r)
{
    for (int p = 0; p < r->nparts; p++)
        fl_graph_partition_free(&r->parts[p]);
    free(r->parts);
    free(r->feed_part);
    free(r->fetch_part);
    free(r->target_part);
    memset(r, 0, sizeof *r);
}
