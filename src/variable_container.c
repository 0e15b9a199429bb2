/* variable_container.c: a task's variables by name, their values in host
 * memory (TensorFlow's ResourceMgr, for variables only). A session given
 * the container (fl_session_set_variable_container) reads and writes a
 * host-placed variable here instead of in a buffer of its own; one lock
 * serialises the ops that touch any of them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "accumulator.h"
#include "variable_container.h"

struct fl_shared_variable {
    char *name;
    fl_tensor value;
    bool initialized;
};

struct fl_variable_container {
    pthread_mutex_t lock; /* the list, each initialized flag, and ops on the values */
    fl_shared_variable **vars;
    int count, cap;
    int max_variables; /* 0: no limit */
    fl_accumulator_set *accumulators;
};

fl_variable_container *fl_variable_container_new(void)
{
    fl_variable_container *c = fl_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->accumulators = fl_accumulator_set_new();
    return c;
}

void fl_variable_container_set_limit(fl_variable_container *c, int max) { c->max_variables = max; }

void fl_variable_container_free(fl_variable_container *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->count; i++) {
        free(c->vars[i]->name);
        free(c->vars[i]->value.data);
        free(c->vars[i]);
    }
    free(c->vars);
    fl_accumulator_set_free(c->accumulators);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static fl_shared_variable *make_variable(fl_variable_container *c, const char *name, fl_dtype dtype, fl_shape shape)
{
    if (c->max_variables > 0 && c->count >= c->max_variables) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "variable %s: this task already holds %d variables, the most it "
                          "may (--max_variables)", name, c->count);
        return NULL;
    }
    fl_tensor like = {.dtype = dtype, .shape = shape};
    size_t bytes = fl_tensor_bytes(&like);
    void *data = calloc(1, bytes ? bytes : 1);
    if (!data) {
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "variable %s: no memory for its %zu bytes", name, bytes);
        return NULL;
    }
    fl_shared_variable *v = fl_xcalloc(1, sizeof *v);
    *v = (fl_shared_variable){.name = fl_xstrdup(name), .value = {.dtype = dtype, .shape = shape, .data = data}};
    if (c->count == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->vars = fl_xrealloc(c->vars, (size_t)c->cap * sizeof *c->vars);
    }
    return c->vars[c->count++] = v;
}

static fl_shared_variable *find_locked(fl_variable_container *c, const char *name, fl_dtype dtype, fl_shape shape)
{
    for (int i = 0; i < c->count; i++) {
        fl_shared_variable *v = c->vars[i];
        if (strcmp(v->name, name) != 0)
            continue;
        if (v->value.dtype == dtype && fl_shape_equal(v->value.shape, shape))
            return v;
        char had[64], asked[64];
        fl_set_error_code(FL_INVALID_ARGUMENT, "variable %s already lives on this task as %s %s, not %s %s; a "
                          "graph that reuses its name must give it the same dtype and shape (or restart the task)",
                          name, fl_dtype_name(v->value.dtype), fl_shape_format(v->value.shape, had, sizeof had),
                          fl_dtype_name(dtype), fl_shape_format(shape, asked, sizeof asked));
        return NULL;
    }
    return make_variable(c, name, dtype, shape);
}

fl_shared_variable *fl_variable_container_find(fl_variable_container *c, const char *name, fl_dtype dtype,
                                               fl_shape shape)
{
    pthread_mutex_lock(&c->lock);
    fl_shared_variable *v = find_locked(c, name, dtype, shape);
    pthread_mutex_unlock(&c->lock);
    return v;
}

fl_tensor fl_shared_variable_value(const fl_shared_variable *v) { return v->value; }

bool fl_shared_variable_initialized(fl_variable_container *c, const fl_shared_variable *v)
{
    pthread_mutex_lock(&c->lock);
    bool initialized = v->initialized;
    pthread_mutex_unlock(&c->lock);
    return initialized;
}

bool fl_shared_variable_initialized_locked(const fl_shared_variable *v) { return v->initialized; }

/* By an Assign, under fl_variable_container_lock. */
void fl_shared_variable_mark_initialized(fl_shared_variable *v) { v->initialized = true; }

bool fl_variable_container_has_value(fl_variable_container *c, const char *name)
{
    bool has = false;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->count && !has; i++)
        has = c->vars[i]->initialized && strcmp(c->vars[i]->name, name) == 0;
    pthread_mutex_unlock(&c->lock);
    return has;
}

int fl_variable_container_count(fl_variable_container *c)
{
    pthread_mutex_lock(&c->lock);
    int n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}

size_t fl_variable_container_bytes(fl_variable_container *c)
{
    size_t bytes = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->count; i++)
        bytes += fl_tensor_bytes(&c->vars[i]->value);
    pthread_mutex_unlock(&c->lock);
    return bytes;
}

void fl_variable_container_lock(fl_variable_container *c) { pthread_mutex_lock(&c->lock); }
void fl_variable_container_unlock(fl_variable_container *c) { pthread_mutex_unlock(&c->lock); }

fl_accumulator_set *fl_variable_container_accumulators(fl_variable_container *c) { return c->accumulators; }
