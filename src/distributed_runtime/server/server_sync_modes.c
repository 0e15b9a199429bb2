/* server_sync_modes.c: workers that disagree on --sync_replicas are refused
 * (issue 38). A worker's piece says its kind: a synchronous one applies its
 * gradients into accumulators, an asynchronous one applies an optimizer to
 * the variables itself; the ps keeps the first worker of each kind. */
#include <string.h>

#include "server_internal.h"

typedef enum { NO_UPDATE, SYNCHRONOUS, ASYNCHRONOUS } update_kind;

/* The chief's synchronous piece applies the averages too: any accumulator
 * op makes a piece synchronous, an optimizer's apply without one not. */
static update_kind kind_of(const fl_graph *g)
{
    bool applies = false;
    for (int i = 0; i < fl_graph_node_count(g); i++) {
        fl_op_kind op = fl_graph_node(g, i)->op;
        if (op == FL_OP_ACCUMULATOR_APPLY_GRADIENT || op == FL_OP_ACCUMULATOR_TAKE_GRADIENT)
            return SYNCHRONOUS;
        applies |= op == FL_OP_APPLY_GRADIENT_DESCENT || op == FL_OP_APPLY_MOMENTUM || op == FL_OP_APPLY_ADAM;
    }
    return applies ? ASYNCHRONOUS : NO_UPDATE;
}

bool fl_server_refuses_sync_mode(fl_server_conn *c, const fl_graph *piece, fl_status *st)
{
    update_kind kind = kind_of(piece);
    if (kind == NO_UPDATE) /* an initializer, a restore, a save, the token's close */
        return false;
    fl_server *s = c->server;
    bool sync = kind == SYNCHRONOUS;
    char *mine = sync ? s->sync_worker : s->async_worker, task[sizeof s->sync_worker];
    const char *other = sync ? s->async_worker : s->sync_worker;
    snprintf(task, sizeof task, "/job:%s/task:%d", c->job, c->task);
    if (!other[0] || strcmp(other, task) == 0) {
        if (!mine[0]) /* a refused worker is not kept: the first kind goes on */
            snprintf(mine, sizeof s->sync_worker, "%s", task);
        return false;
    }
    fl_status_set(st, FL_FAILED_PRECONDITION, "%s trains with --sync_replicas %s, and %s with --sync_replicas %s (its "
                  "piece %s): start every worker of this ps with the same --sync_replicas", other,
                  sync ? "false" : "true", task, sync ? "true" : "false", sync ? "applies its gradients to "
                  "accumulators" : "applies the optimizer to the variables itself");
    if (!s->sync_modes_logged) {
        fprintf(s->log, "%s: refused a partition from %s %s: %s\n", s->log_prefix, c->peer, c->who, st->message);
        fflush(s->log);
    }
    s->sync_modes_logged = true;
    return true;
}
