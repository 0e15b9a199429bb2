/* rendezvous_accumulators.c: the accumulator ops' kernels on a task's
 * rendezvous device. An apply or a set-step runs at once on the task's
 * container; a take is asynchronous, as a Recv is: the device registers it
 * and tries it whenever the executor looks (backend_rendezvous.c), so a
 * take waiting for other workers' gradients never holds the executor's
 * thread while this partition's own Recvs and applies still have to run. */
#include <string.h>

#include "accumulator.h"
#include "rendezvous_accumulators.h"

static fl_accumulator *find(fl_variable_container *c, const fl_node *n)
{
    if (!c) {
        fl_set_error_code(FL_FAILED_PRECONDITION, "%s: accumulator %s lives in a task's container: only a task "
                          "server's partition runs a %s", n->name, n->attrs.edge_key, fl_node_op_type(n));
        return NULL;
    }
    fl_accumulator *a = fl_accumulator_find(fl_variable_container_accumulators(c), n->attrs.edge_key, n->attrs.shape);
    if (!a)
        fl_prefix_error("%s: ", n->name);
    return a;
}

int fl_accumulator_kernel_run(fl_variable_container *c, const fl_node *n, const fl_tensor *in0, const fl_tensor *in1,
                              int32_t *dropped)
{
    fl_accumulator *a = find(c, n);
    if (!a)
        return -1;
    int32_t step = *(const int32_t *)in0->data;
    if (n->op == FL_OP_ACCUMULATOR_SET_GLOBAL_STEP)
        fl_accumulator_set_step(a, step);
    else if (n->op == FL_OP_ACCUMULATOR_CLOSE)
        fl_accumulator_close_at(a, step);
    if (n->op != FL_OP_ACCUMULATOR_APPLY_GRADIENT)
        return 0;
    int rc = fl_accumulator_apply(a, step, in1, n->name);
    if (rc >= 0 && dropped)
        *dropped = rc;
    return rc < 0 ? -1 : 0;
}

int fl_accumulator_kernel_try_wait(fl_variable_container *c, const fl_node *n, int32_t local_step, int32_t *step)
{
    fl_accumulator *a = find(c, n);
    if (!a)
        return -1;
    fl_accumulator_state now = fl_accumulator_read(a);
    if (now.global_step > local_step) { /* a step the chief finished, even if it ended since */
        *step = (int32_t)now.global_step;
        return 1;
    }
    if (!now.closed)
        return 0;
    fl_set_error_code(FL_OUT_OF_RANGE, "%s: the chief stopped training at global step %lld, so step %d never "
                      "ends (accumulator %s is closed): this worker's training is over", n->name,
                      (long long)now.closed_at, (int)local_step + 1, n->attrs.edge_key);
    return -1;
}

/* Each worker brings one gradient a step: once fewer than num_required
 * have not said goodbye, the step can never complete, and the chief is
 * told at once rather than at its deadline. */
int fl_accumulator_kernel_try_take(fl_variable_container *c, const fl_node *n, int num_required, fl_tensor *out)
{
    fl_accumulator *a = find(c, n);
    int rc = a ? fl_accumulator_try_take(a, num_required, out, n->name) : -1;
    int remaining = rc == 0 ? fl_accumulator_set_remaining(fl_variable_container_accumulators(c)) : -1;
    if (remaining < 0 || remaining >= num_required)
        return rc;
    fl_set_error_code(FL_FAILED_PRECONDITION, "%s: accumulator %s has %d of the %d gradients a step needs "
                      "(replicas_to_aggregate), and only %d worker%s of the cluster %s not said goodbye: the step "
                      "can never complete; did the other workers finish or give up?", n->name, n->attrs.edge_key,
                      fl_accumulator_read(a).accumulated, num_required, remaining, remaining == 1 ? "" : "s",
                      remaining == 1 ? "has" : "have");
    return -1;
}
