/* test_graph_partition.c: the master's partitioning, offline (no server):
 * a two-tower placement (a variable and its update on the ps, a tower on
 * each worker) gives the partitions and Send/Recv pairs predicted by hand;
 * every Recv has its Send on its peer; a control edge across tasks; what
 * a run does not need stays out; a fed node becomes a Placeholder; an update
 * of another task's variable is refused, naming the node. */
#include "tap.h"
#include "distributed_runtime/partition/graph_partition.h"
#include "distributed_runtime/partition/run_plan.h"

#define PS "/job:ps/task:0"

typedef struct {
    fl_graph *g;
    fl_node *w, *x[2], *y[2], *loss[2], *grad[2], *train, *after_tower0;
} model;

static fl_node *tower(model *m, int i)
{
    char device[64];
    snprintf(device, sizeof device, "/job:worker/task:%d/cpu:0", i);
    fl_device_scope_push(m->g, device);
    char name[32];
    snprintf(name, sizeof name, "tower_%d", i);
    fl_name_scope_push(m->g, name);
    m->x[i] = fl_placeholder(m->g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    m->y[i] = fl_placeholder(m->g, FL_FLOAT32, fl_shape_make(2, -1, 1), "y");
    fl_node *error = fl_sub(m->g, fl_matmul(m->g, m->x[i], m->w, false, false, "pred"), m->y[i], NULL);
    m->loss[i] = fl_reduce_mean(m->g, fl_mul(m->g, error, error, NULL), NULL, 0, false, "loss");
    fl_gradients(m->g, m->loss[i], &m->w, 1, &m->grad[i]);
    fl_name_scope_pop(m->g);
    fl_device_pop(m->g);
    return m->loss[i];
}

/* Variables, averaging and the update on the ps; tower i on worker i. */
static model build(void)
{
    model m = {.g = fl_graph_new()};
    fl_device_scope_push(m.g, PS);
    m.w = fl_get_variable(m.g, "w", fl_shape_make(2, 3, 1), fl_constant_initializer(0.5f));
    fl_device_pop(m.g);
    tower(&m, 0);
    tower(&m, 1);
    fl_device_scope_push(m.g, PS);
    fl_node *sum = fl_add_n(m.g, m.grad, 2, "sum_grads");
    fl_grad_var pair = {fl_mul(m.g, sum, fl_scalar(m.g, 0.5f, NULL), "average"), m.w};
    fl_optimizer *opt = fl_gradient_descent_optimizer(0.1f);
    m.train = fl_apply_gradients(opt, m.g, &pair, 1, NULL, "train");
    fl_optimizer_free(opt);
    fl_device_pop(m.g);
    fl_device_scope_push(m.g, "/job:worker/task:1");
    m.after_tower0 = fl_group(m.g, &m.loss[0], 1, "after_tower0");
    fl_device_pop(m.g);
    return m;
}

static const fl_graph_partition *part(const fl_partitioned_run *r, const char *job, int task)
{
    for (int p = 0; p < r->nparts; p++)
        if (strcmp(r->parts[p].job, job) == 0 && r->parts[p].task == task)
            return &r->parts[p];
    return NULL;
}

static int count_op(const fl_graph_partition *p, fl_op_kind op)
{
    int n = 0;
    for (int id = 0; id < fl_graph_node_count(p->graph); id++)
        n += fl_graph_node(p->graph, id)->op == op;
    return n;
}

/* The node `name` of p is a Send or Recv (op) keyed `key`, with peer `peer`. */
static bool has_transfer(const fl_graph_partition *p, fl_op_kind op, const char *name, const char *key,
                         const char *peer)
{
    const fl_node *n = fl_graph_find(p->graph, name);
    return n && n->op == op && strcmp(n->attrs.edge_key, key) == 0 && strcmp(n->attrs.peer_task, peer) == 0;
}

static void check_training_run(model *m)
{
    fl_node *feeds[4] = {m->x[0], m->y[0], m->x[1], m->y[1]};
    fl_partition_request req = {feeds, 4, m->loss, 2, &m->train, 1, {"", 0}, false};
    int before = fl_graph_node_count(m->g);
    fl_partitioned_run r;
    if (!ok(fl_partition_graph(m->g, &req, &r) == 0, "the training run partitions"))
        diag("%s", fl_last_error());
    ok(fl_graph_node_count(m->g) == before, "the user's graph is not changed");
    ok(r.nparts == 3, "three partitions: ps 0, worker 0, worker 1 (got %d)", r.nparts);
    const fl_graph_partition *ps = part(&r, "ps", 0), *w0 = part(&r, "worker", 0), *w1 = part(&r, "worker", 1);
    ok(ps == &r.parts[0] && w0 == &r.parts[1] && w1 == &r.parts[2], "ordered by job, then task");
    if (!ps || !w0 || !w1)
        return;
    ok(count_op(ps, FL_OP_SEND) == 2 && count_op(ps, FL_OP_RECV) == 2,
       "the ps has two Sends of w and two Recvs of gradients (%d, %d)", count_op(ps, FL_OP_SEND),
       count_op(ps, FL_OP_RECV));
    ok(count_op(w0, FL_OP_SEND) == 1 && count_op(w0, FL_OP_RECV) == 1 && count_op(w1, FL_OP_SEND) == 1 &&
           count_op(w1, FL_OP_RECV) == 1,
       "each worker receives w once, though two of its nodes read it, and sends one gradient");
    const char *w_key = "w:/job:ps/task:0->/job:worker/task:1";
    ok(has_transfer(ps, FL_OP_SEND, "_send/w/to/worker/1", w_key, "/job:worker/task:1") &&
           has_transfer(w1, FL_OP_RECV, "_recv/w", w_key, "/job:ps/task:0"),
       "w's edge to worker 1: a Send on the ps, a Recv _recv/w on the worker, keyed by value and both tasks");
    const fl_node *send = fl_graph_find(ps->graph, "_send/w/to/worker/1");
    ok(send && send->ninputs == 1 && strcmp(send->inputs[0]->name, "w") == 0, "the Send reads the value it sends");
    char key[300], name[300];
    snprintf(key, sizeof key, "%s:/job:worker/task:0->/job:ps/task:0", fl_node_name(m->grad[0]));
    snprintf(name, sizeof name, "_send/%s/to/ps/0", fl_node_name(m->grad[0]));
    ok(has_transfer(w0, FL_OP_SEND, name, key, "/job:ps/task:0"), "tower 0's gradient goes to the ps: %s", key);
    const fl_node *recv = fl_graph_find(w1->graph, "_recv/w");
    ok(recv && fl_shape_equal(recv->shape, m->w->shape) && recv->dtype == FL_FLOAT32,
       "a Recv has its value's dtype and shape");
    ok(fl_graph_find(w0->graph, "w") == NULL && fl_graph_find(ps->graph, "w") != NULL,
       "the variable lives only on the ps");
    fl_node *pred = fl_graph_find(w1->graph, "tower_1/pred");
    is_string(pred ? fl_node_device(pred) : NULL, "/cpu:0", "a copy keeps its name; its device is made local");
    ok(r.fetch_part[0] == 1 && r.fetch_part[1] == 2 && r.target_part[0] == 0 && r.feed_part[2] == 2,
       "the master learns where each fetch, target and feed lives");
    fl_partitioned_run_free(&r);
}

/* Every Recv has one Send with its key on the task it names, which sends
 * to the Recv's task: each value that crosses tasks has both ends. */
static bool recvs_have_sends(const fl_partitioned_run *r)
{
    for (int p = 0; p < r->nparts; p++) {
        const fl_graph_partition *to = &r->parts[p];
        char to_task[64];
        snprintf(to_task, sizeof to_task, "/job:%s/task:%d", to->job, to->task);
        for (int id = 0; id < fl_graph_node_count(to->graph); id++) {
            const fl_node *recv = fl_graph_node(to->graph, id);
            if (recv->op != FL_OP_RECV)
                continue;
            int sends = 0;
            for (int q = 0; q < r->nparts; q++)
                for (int k = 0; k < fl_graph_node_count(r->parts[q].graph); k++) {
                    const fl_node *n = fl_graph_node(r->parts[q].graph, k);
                    sends += n->op == FL_OP_SEND && strcmp(n->attrs.edge_key, recv->attrs.edge_key) == 0 &&
                             strcmp(n->attrs.peer_task, to_task) == 0 && q != p;
                }
            if (sends != 1)
                return false;
        }
    }
    return true;
}

static void check_pairs(model *m)
{
    fl_node *feeds[4] = {m->x[0], m->y[0], m->x[1], m->y[1]};
    fl_node *roots[2] = {m->train, m->after_tower0};
    fl_partition_request req = {feeds, 4, m->loss, 2, roots, 2, {"", 0}, false};
    fl_partitioned_run r;
    if (fl_partition_graph(m->g, &req, &r) != 0)
        diag("%s", fl_last_error());
    ok(r.nparts == 3 && recvs_have_sends(&r), "every Recv has one Send with its key on its peer task");
    fl_partitioned_run_free(&r);
}

static void check_control_edge(model *m)
{
    fl_node *feeds[2] = {m->x[0], m->y[0]};
    fl_partition_request req = {feeds, 2, NULL, 0, &m->after_tower0, 1, {"", 0}, false};
    fl_partitioned_run r;
    if (!ok(fl_partition_graph(m->g, &req, &r) == 0 && r.nparts == 3, "a control edge pulls in its task, and w's"))
        diag("%s", fl_last_error());
    const fl_graph_partition *w0 = part(&r, "worker", 0), *w1 = part(&r, "worker", 1);
    if (!w0 || !w1)
        return;
    const char *key = "^_send_control/tower_0/loss:/job:worker/task:0->/job:worker/task:1";
    ok(has_transfer(w0, FL_OP_SEND, "_send/_send_control/tower_0/loss/to/worker/1", key, "/job:worker/task:1") &&
           has_transfer(w1, FL_OP_RECV, "_recv_control/tower_0/loss", key, "/job:worker/task:0"),
       "worker 0 sends a token once tower_0/loss has run: %s", key);
    fl_node *token = fl_graph_find(w0->graph, "_send_control/tower_0/loss");
    fl_node *group = fl_graph_find(w1->graph, "after_tower0");
    ok(token && token->ncontrols == 1 && strcmp(token->controls[0]->name, "tower_0/loss") == 0,
       "the token runs after the node it stands for");
    ok(group && group->ncontrols == 1 && strcmp(group->controls[0]->name, "_recv_control/tower_0/loss") == 0,
       "the receiving node waits on the token's Recv");
    ok(fl_graph_find(w1->graph, "tower_1/loss") == NULL, "tower 1 is not needed, so not copied");
    fl_partitioned_run_free(&r);
}

static void check_pruning_and_feeds(model *m)
{
    fl_node *pred = fl_graph_find(m->g, "tower_0/pred");
    fl_node *feeds[2] = {pred, m->y[0]};
    fl_partition_request req = {feeds, 2, &m->loss[0], 1, NULL, 0, {"", 0}, false};
    fl_partitioned_run r;
    ok(fl_partition_graph(m->g, &req, &r) == 0 && r.nparts == 1 && strcmp(r.parts[0].job, "worker") == 0,
       "feeding tower 0's prediction leaves the ps out");
    fl_node *copy = r.nparts ? fl_graph_find(r.parts[0].graph, "tower_0/pred") : NULL;
    is_string(copy ? fl_node_op_type(copy) : NULL, "Placeholder", "a fed node becomes a Placeholder");
    ok(r.nparts && count_op(&r.parts[0], FL_OP_SEND) == 0 && count_op(&r.parts[0], FL_OP_RECV) == 0,
       "and nothing crosses tasks");
    fl_partitioned_run_free(&r);
}

static void check_remote_update_refused(void)
{
    fl_graph *g = fl_graph_new();
    fl_device_scope_push(g, PS);
    fl_node *v = fl_get_variable(g, "v", fl_shape_make(1, 2), fl_zeros_initializer());
    fl_device_pop(g);
    fl_device_scope_push(g, "/job:worker/task:0");
    fl_node *assign = fl_assign(g, v, fl_ones_like(g, v, NULL), "stray_assign");
    fl_device_pop(g);
    fl_partition_request req = {NULL, 0, NULL, 0, &assign, 1, {"", 0}, false};
    fl_partitioned_run r;
    ok(fl_partition_graph(g, &req, &r) == -1 && fl_last_error_code() == FL_INVALID_ARGUMENT &&
       strstr(fl_last_error(), "stray_assign") && strstr(fl_last_error(), "colocate"),
       "an update of another task's variable is refused, naming the node and how to fix it");
    diag("%s", fl_last_error());
    ok(r.nparts == 0 && r.parts == NULL, "a failed partitioning hands back nothing");
    fl_graph_free(g);
}

/* The cut of every node, as the master registers it. */
static void cut_everything(model *m, fl_partitioned_run *cut)
{
    int n = fl_graph_node_count(m->g);
    fl_node **all = malloc((size_t)n * sizeof *all);
    for (int i = 0; i < n; i++)
        all[i] = fl_graph_node(m->g, i);
    fl_partition_request req = {.targets = all, .ntargets = n};
    ok(fl_partition_graph(m->g, &req, cut) == 0 && cut->nparts == 3, "the whole graph cuts into three partitions");
    free(all);
}

/* The Sends among the plan's targets (their names start with "_send/"). */
static int active_sends(const fl_run_plan *plan)
{
    int n = 0;
    for (int t = 0; t < plan->ntasks; t++)
        for (int i = 0; i < plan->tasks[t].run.ntargets; i++)
            n += strncmp(plan->tasks[t].run.target_names[i], "_send/", 6) == 0;
    return n;
}

static void check_run_plans(model *m)
{
    fl_partitioned_run cut;
    cut_everything(m, &cut);
    fl_node *feeds[4] = {m->x[0], m->y[0], m->x[1], m->y[1]};
    fl_partition_request train = {feeds, 4, m->loss, 2, &m->train, 1, {"", 0}, false};
    fl_run_plan plan;
    ok(fl_run_plan_make(m->g, &cut, &train, &plan) == 0 && plan.ntasks == 3 && active_sends(&plan) == 4,
       "a training step needs all three tasks and four Sends (w out twice, two gradients back)");
    ok(plan.tasks[plan.fetch_task[1]].part == 2 && plan.fetch_slot[1] == 0, "tower 1's loss is fetched from worker 1");
    fl_run_plan_free(&plan);
    fl_partition_request evaluate = {feeds, 2, &m->loss[0], 1, NULL, 0, {"", 0}, false};
    ok(fl_run_plan_make(m->g, &cut, &evaluate, &plan) == 0 && plan.ntasks == 2 && active_sends(&plan) == 1,
       "tower 0's loss alone needs the ps and worker 0, and only w's edge to it: no gradient is sent");
    bool feeds_on_worker0 = true;
    for (int t = 0; t < plan.ntasks; t++)
        feeds_on_worker0 = feeds_on_worker0 && (plan.tasks[t].run.nfeeds == 0 || plan.tasks[t].part == 1);
    ok(feeds_on_worker0, "its feeds go to worker 0, where they are read");
    fl_run_plan_free(&plan);
    fl_partitioned_run_free(&cut);
}

int main(void)
{
    model m = build();
    if (!ok(fl_graph_error(m.g) == NULL, "the two-tower model builds"))
        diag("%s", fl_graph_error(m.g));
    check_training_run(&m);
    check_pairs(&m);
    check_control_edge(&m);
    check_pruning_and_feeds(&m);
    check_remote_update_refused();
    check_run_plans(&m);
    fl_graph_free(m.g);
    return done_testing();
}
