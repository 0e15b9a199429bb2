/* variable_container.h: TensorFlow's ResourceMgr for variables: the values
 * of a task's variables by name, shared by every session on the task that
 * is given the container (a task server's partitions, whoever registered
 * them), so that a variable has one home and its updates are the ordinary
 * kernels of whichever session runs them (variable_container.c). */
#ifndef FLOWLAB_VARIABLE_CONTAINER_H
#define FLOWLAB_VARIABLE_CONTAINER_H

#include "runtime.h"

typedef struct fl_variable_container fl_variable_container;

/* One variable's home: its value in host memory, made on first ask. */
typedef struct fl_shared_variable fl_shared_variable;

fl_variable_container *fl_variable_container_new(void);
/* At most max variables (a task server's --max_variables; 0: no limit):
 * one more is refused with RESOURCE_EXHAUSTED naming the flag. */
void fl_variable_container_set_limit(fl_variable_container *c, int max);
void fl_variable_container_free(fl_variable_container *c);

/* The home of the variable `name` of dtype and shape, made (uninitialised)
 * the first time it is asked for; NULL after fl_set_error_code when one of
 * that name already lives here with another dtype or shape. */
fl_shared_variable *fl_variable_container_find(fl_variable_container *c, const char *name, fl_dtype dtype,
                                               fl_shape shape);
/* Its value: data in host memory, valid as long as the container. */
fl_tensor fl_shared_variable_value(const fl_shared_variable *v);
/* Whether any session gave it a value yet; the same with the container's
 * lock already held; and marking (lock held) that an Assign gave it one. */
bool fl_shared_variable_initialized(fl_variable_container *c, const fl_shared_variable *v);
bool fl_shared_variable_initialized_locked(const fl_shared_variable *v);
void fl_shared_variable_mark_initialized(fl_shared_variable *v);
/* Whether a variable of that name lives here with a value (a worker's
 * IS_INITIALIZED: TensorFlow's report_uninitialized_variables). */
bool fl_variable_container_has_value(fl_variable_container *c, const char *name);
/* The task's accumulators (accumulator.h), made with the container and
 * freed with it: sync training's gradients live beside the variables. */
struct fl_accumulator_set *fl_variable_container_accumulators(fl_variable_container *c);
/* How many variables live here (the server's log line, tests), and the bytes of their values. */
int fl_variable_container_count(fl_variable_container *c);
size_t fl_variable_container_bytes(fl_variable_container *c);

/* Held while an op reads or writes a variable that lives here: sessions on
 * several threads update the same variables (TensorFlow's use_locking). */
void fl_variable_container_lock(fl_variable_container *c);
void fl_variable_container_unlock(fl_variable_container *c);

#endif
