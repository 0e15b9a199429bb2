/* ps_store.h: what a parameter-server task holds: variables by name (the
 * model's and the optimizers' slots alike), each given its first value once
 * and then changed only by the state ops workers send. It runs those ops
 * with the host's own kernels, so a ps needs no model code. Not thread-safe:
 * the server's one event-loop thread owns it. */
#ifndef FLOWLAB_PS_STORE_H
#define FLOWLAB_PS_STORE_H

#include "runtime.h"

typedef struct fl_ps_store fl_ps_store;

fl_ps_store *fl_ps_store_new(void);
void fl_ps_store_free(fl_ps_store *s);

/* Gives variable `name` its first value. Returns 1 when it was assigned now,
 * 0 when the variable already had a value (kept: the first initialiser wins,
 * as a chief's does), -1 with INVALID_ARGUMENT in st when the value's dtype
 * or shape differs from the variable's. */
int fl_ps_store_init(fl_ps_store *s, const char *name, const fl_tensor *value, fl_status *st);

/* The variable's value, or NULL when there is no such variable yet. */
const fl_tensor *fl_ps_store_get(const fl_ps_store *s, const char *name);

/* Lends the variable's value to a reply that sends it from where it lies,
 * without copying it (NULL when there is no such variable). Until the loan
 * is given back, an update changes a fresh copy instead, so the bytes on
 * their way stay the value that was read. */
typedef struct fl_ps_loan fl_ps_loan;
fl_ps_loan *fl_ps_store_lend(fl_ps_store *s, const char *name, const fl_tensor **value);
void fl_ps_store_give_back(fl_ps_loan *loan);
int fl_ps_store_count(const fl_ps_store *s);
/* Bytes held, for the server's log and the load test's flat-memory check. */
size_t fl_ps_store_bytes(const fl_ps_store *s);

/* Runs one state op the way the host would: Assign, AssignAdd,
 * ApplyGradientDescent, ApplyMomentum or ApplyAdam. Its inputs are the
 * variables named by vars (in the op's input order: the variable, then its
 * slots) followed by arg (the value, delta or gradient). Every variable must
 * exist and arg must match the first variable's dtype and shape; otherwise
 * -1 with st naming the variable (INVALID_ARGUMENT; FAILED_PRECONDITION for
 * one with no value yet), and nothing changes. */
int fl_ps_store_run(fl_ps_store *s, fl_op_kind op, const fl_attrs *attrs, const char *const *vars,
                    int nvars, const fl_tensor *arg, fl_status *st);

#endif
