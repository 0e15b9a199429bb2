/* monitored_session_hooks.c: the monitored session's built-in hooks, TensorFlow's
 * StopAtStepHook, StepCounterHook, LoggingTensorHook and
 * CheckpointSaverHook. Each is a small state and one after_run. */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "runtime.h"

enum { MAX_LOGGED = 16 }; /* a logging hook's tensors: its extra fetches (the session takes 16 per hook) */

typedef struct {
    long every, last_step, last_saved;
    double every_secs, last_time;
    char *dir;
    int max_to_keep;
    fl_node *tensors[MAX_LOGGED];
    int ntensors;
} hook_state;

static void free_state(void *state)
{
    hook_state *st = state;
    if (st)
        free(st->dir);
    free(st);
}

static fl_session_hook *new_hook(const char *name)
{
    fl_session_hook *h = fl_xcalloc(1, sizeof *h);
    hook_state *st = fl_xcalloc(1, sizeof *st);
    st->last_step = st->last_saved = -1;
    st->last_time = fl_now_s();
    *h = (fl_session_hook){.name = name, .free_state = free_state, .state = st};
    return h;
}

void fl_session_hook_free(fl_session_hook *h)
{
    if (!h)
        return;
    if (h->free_state)
        h->free_state(h->state);
    free(h);
}

static bool stop_at_step(fl_session_hook *h, const fl_run_values *v)
{
    return v->global_step >= ((hook_state *)h->state)->every;
}

fl_session_hook *fl_stop_at_step_hook(long last_step)
{
    fl_session_hook *h = new_hook("StopAtStepHook");
    ((hook_state *)h->state)->every = last_step;
    h->after_run = stop_at_step;
    /* A run restored at or past last_step trains no step at all. */
    h->after_create_session = stop_at_step;
    return h;
}

/* Whether every steps have passed since the last time this hook acted. */
static bool is_due(hook_state *st, long step)
{
    if (st->last_step < 0) {
        st->last_step = step;
        return false;
    }
    return st->every > 0 && step - st->last_step >= st->every;
}

static bool count_steps(fl_session_hook *h, const fl_run_values *v)
{
    hook_state *st = h->state;
    if (!is_due(st, v->global_step))
        return false;
    double now = fl_now_s();
    fprintf((FILE *)v->log, "%sglobal_step/sec: %.3g\n", v->who,
            (double)(v->global_step - st->last_step) / (now - st->last_time));
    fflush((FILE *)v->log);
    st->last_step = v->global_step;
    st->last_time = now;
    return false;
}

fl_session_hook *fl_step_counter_hook(long every_n_steps)
{
    fl_session_hook *h = new_hook("StepCounterHook");
    ((hook_state *)h->state)->every = every_n_steps;
    h->after_run = count_steps;
    return h;
}

static int fetch_tensors(fl_session_hook *h, fl_node **extra, int max)
{
    hook_state *st = h->state;
    int n = st->ntensors < max ? st->ntensors : max;
    memcpy(extra, st->tensors, (size_t)n * sizeof *extra);
    return n;
}

static bool log_tensors(fl_session_hook *h, const fl_run_values *v)
{
    hook_state *st = h->state;
    bool first = st->last_step < 0;
    if (!first && !(st->every > 0 && v->global_step - st->last_step >= st->every))
        return false;
    FILE *log = (FILE *)v->log;
    fprintf(log, "%sglobal step %ld:", v->who, v->global_step);
    for (int i = 0; i < st->ntensors; i++)
        fprintf(log, " %s = %g", fl_node_name(st->tensors[i]), fl_tensor_scalar(v->extra[i]));
    fputc('\n', log);
    fflush(log);
    st->last_step = v->global_step;
    return false;
}

fl_session_hook *fl_logging_tensor_hook(fl_node *const *tensors, int n, long every_n_steps)
{
    if (n < 1 || n > MAX_LOGGED || !tensors) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_logging_tensor_hook: %d tensors%s; it logs 1 to %d", n,
                          tensors ? "" : " (and the array is NULL)", MAX_LOGGED);
        return NULL;
    }
    fl_session_hook *h = new_hook("LoggingTensorHook");
    hook_state *st = h->state;
    st->every = every_n_steps;
    st->ntensors = n;
    memcpy(st->tensors, tensors, (size_t)st->ntensors * sizeof *tensors);
    h->before_run = fetch_tensors;
    h->after_run = log_tensors;
    return h;
}

static void save(fl_session_hook *h, const fl_run_values *v, long step)
{
    hook_state *st = h->state;
    if (step == st->last_saved)
        return;
    FILE *log = v->log;
    if (fl_session_save_keeping(v->session, st->dir, step, st->max_to_keep) != 0)
        fprintf(log, "%scheckpoint at global step %ld not saved: %s\n", v->who, step,
                fl_session_error(v->session));
    else
        fprintf(log, "%ssaved %s/model.ckpt-%ld\n", v->who, st->dir, step);
    fflush(log);
    st->last_saved = step;
    st->last_time = fl_now_s();
}

static bool save_when_due(fl_session_hook *h, const fl_run_values *v)
{
    hook_state *st = h->state;
    /* Counted from the step the model was prepared at, as TensorFlow's saver
     * counts from the session's start: with 10, a fresh model is saved at
     * 10, 20, ...; one restored at 35 at 45, 55, ... (it is saved already). */
    if (st->last_saved < 0 || v->global_step < st->last_saved)
        st->last_saved = v->start_step;
    bool by_steps = st->every > 0 && v->global_step - st->last_saved >= st->every;
    bool by_time = st->every_secs > 0 && fl_now_s() - st->last_time >= st->every_secs;
    if (by_steps || by_time)
        save(h, v, v->global_step);
    return false;
}

static void save_at_end(fl_session_hook *h, const fl_run_values *v)
{
    save(h, v, v->global_step);
}

fl_session_hook *fl_checkpoint_saver_hook(const char *dir, double every_secs, long every_steps, int max_to_keep)
{
    if (!dir || !*dir) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_checkpoint_saver_hook: no directory given for the checkpoints");
        return NULL;
    }
    fl_session_hook *h = new_hook("CheckpointSaverHook");
    hook_state *st = h->state;
    st->dir = fl_xstrdup(dir);
    st->max_to_keep = max_to_keep;
    st->every = every_steps;
    st->every_secs = every_secs;
    h->after_run = save_when_due;
    h->end = save_at_end;
    return h;
}
