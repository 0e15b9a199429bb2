/* monitored_session.c: MonitoredTrainingSession. It owns a session and
 * prepares the model before the first step (the chief restores or
 * initialises, the others wait until it is ready); each run fetches the
 * global step and what the hooks ask for, then runs the hooks; a run that
 * failed because a task was lost is recovered (connect again, restore a
 * restarted ps, wait for the model) and run again. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdio.h>

#include "cluster_plugin.h"
#include "runtime.h"

#define MAX_HOOKS 32
#define MAX_EXTRA 16  /* extra fetches per hook */
#define MAX_RECOVERIES 3

struct fl_monitored_session {
    fl_graph *graph;
    fl_session *session;
    fl_node *global_step, *init;
    fl_monitored_session_options o;
    const fl_cluster *cluster;        /* o.config's, or NULL: one process */
    const fl_cluster_plugin *plugin;  /* the cluster's (cluster_plugin.h) */
    bool is_chief;
    fl_session_hook *hooks[MAX_HOOKS];
    int nhooks;
    fl_session_hook *owned[2]; /* the step counter and the saver made here */
    long step, start_step; /* the global step now, and when the model was last prepared */
    bool stop, ended; /* ended: the chief ended training (close is no failure) */
    FILE *log;
    char who[64];
    char error[FL_ERROR_LEN];
};

bool fl_monitored_session_should_stop(const fl_monitored_session *ms) { return ms->stop; }
long fl_monitored_session_global_step(const fl_monitored_session *ms) { return ms->step; }
fl_session *fl_monitored_session_session(fl_monitored_session *ms) { return ms->session; }
const char *fl_monitored_session_error(const fl_monitored_session *ms) { return ms->error; }

static int fail(fl_monitored_session *ms, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(fl_monitored_session *ms, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(ms->error, sizeof ms->error, fmt, args);
    va_end(args);
    fl_set_error_code(fl_last_error_code(), "%s", ms->error); /* the failed run's code */
    return -1;
}

static void say(fl_monitored_session *ms, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(fl_monitored_session *ms, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(ms->log, "%s", ms->who);
    vfprintf(ms->log, fmt, args);
    fputc('\n', ms->log);
    fflush(ms->log);
    va_end(args);
}

static int read_global_step(fl_monitored_session *ms)
{
    fl_tensor *value = NULL;
    if (fl_session_run(ms->session, NULL, 0, &ms->global_step, 1, &value, NULL, 0) != 0)
        return fail(ms, "reading the global step: %s", fl_session_error(ms->session));
    ms->step = (long)fl_tensor_scalar(value);
    fl_tensor_free(value);
    return 0;
}

// [book:chief_prepare]
/* The chief: a model already on the ps tasks is kept (a chief that was
 * restarted); else the latest checkpoint is restored; else the variables
 * get their initial values. */
static int chief_prepare(fl_monitored_session *ms)
{
    int missing = fl_session_uninitialized_variables(ms->session, NULL, 0);
    if (missing < 0)
        return fail(ms, "%s", fl_session_error(ms->session));
    if (missing == 0) {
        if (read_global_step(ms) != 0)
            return -1;
        say(ms, "the model is already there (global step %ld): going on", ms->step);
        return 0;
    }
    int restored = ms->o.checkpoint_dir ? fl_session_restore_latest(ms->session, ms->o.checkpoint_dir) : 0;
    if (restored < 0)
        return fail(ms, "restoring from %s: %s", ms->o.checkpoint_dir, fl_session_error(ms->session));
    if (restored == 0 && fl_session_run(ms->session, NULL, 0, NULL, 0, NULL, &ms->init, 1) != 0)
        return fail(ms, "initializing the variables: %s", fl_session_error(ms->session));
    if (read_global_step(ms) != 0)
        return -1;
    if (restored)
        say(ms, "restored the latest checkpoint in %s: global step %ld", ms->o.checkpoint_dir, ms->step);
    else
        say(ms, "initialized the variables");
    return 0;
}
// [end:chief_prepare]

// [book:wait_ready]
/* Any other worker: wait until every variable has a value, saying so every
 * few seconds, and give up at the deadline with what was missing. */
static int wait_until_ready(fl_monitored_session *ms)
{
    double start = fl_now_s(), next_line = start + 5, deadline = fl_task_deadline_s();
    for (;;) {
        const char *first = NULL;
        int missing = fl_session_uninitialized_variables(ms->session, &first, 1);
        if (missing < 0)
            return fail(ms, "%s", fl_session_error(ms->session));
        if (missing == 0)
            return read_global_step(ms);
        double waited = fl_now_s() - start;
        if (waited >= deadline) {
            fl_set_error_code(FL_DEADLINE_EXCEEDED, "the model was not ready"); /* fail() keeps the code */
            return fail(ms, "the model was not ready after %.0f s: %d variables have no value (%s first); "
                        "is the chief (the chief task, else worker 0, unless fl_monitored_session_options.chief "
                        "says otherwise) running, and do all workers place the variables alike (the same ps tasks "
                        "and device function, e.g. --ps_strategy)? (FLOWLAB_TASK_DEADLINE)", waited, missing, first);
        }
        if (fl_now_s() >= next_line) {
            say(ms, "waiting for the chief to initialize or restore %d variables (%s first) for %.0f s", missing,
                first, waited);
            next_line += 5;
        }
        nanosleep(&(struct timespec){0, 200000000}, NULL);
    }
}
// [end:wait_ready]

static int prepare(fl_monitored_session *ms)
{
    int rc = ms->is_chief ? chief_prepare(ms) : wait_until_ready(ms);
    ms->start_step = ms->step;
    return rc;
}

static void add_hooks(fl_monitored_session *ms, fl_session_hook *const *hooks, int n)
{
    for (int i = 0; i < n && ms->nhooks < MAX_HOOKS; i++)
        if (hooks[i])
            ms->hooks[ms->nhooks++] = hooks[i];
}

/* A program's hooks: a NULL among them is a hook whose maker refused its
 * arguments, so it is an error here, not a hook silently missing. */
static int check_hooks(const char *which, fl_session_hook *const *hooks, int n)
{
    if (n < 0 || (n > 0 && !hooks)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_monitored_training_session: %d %s%s", n, which,
                          n > 0 && !hooks ? " but the array is NULL" : "");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!hooks[i]) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "fl_monitored_training_session: %s[%d] is NULL (did making it "
                              "fail? each hook maker says why in fl_last_error)", which, i);
            return -1;
        }
    return 0;
}

/* The step counter for everyone, the saver and the chief-only hooks for the chief. */
static void make_hooks(fl_monitored_session *ms)
{
    const fl_monitored_session_options *o = &ms->o;
    if (o->log_step_count_steps >= 0)
        ms->owned[0] = fl_step_counter_hook(o->log_step_count_steps ? o->log_step_count_steps : 100);
    bool by_default = o->save_checkpoint_secs <= 0 && o->save_checkpoint_steps <= 0;
    if (ms->is_chief && o->checkpoint_dir) /* max_checkpoints_to_keep 0 keeps all, as the saver's 0 */
        ms->owned[1] = fl_checkpoint_saver_hook(o->checkpoint_dir, by_default ? 600 : o->save_checkpoint_secs,
                                                o->save_checkpoint_steps, o->max_checkpoints_to_keep);
    add_hooks(ms, ms->owned, 2);
    add_hooks(ms, o->hooks, o->nhooks);
    if (ms->is_chief)
        add_hooks(ms, o->chief_only_hooks, o->nchief_hooks);
}

/* The cluster knows which task is the chief; a program may say otherwise.
 * One process without a cluster is its own chief. */
static bool is_chief(const fl_monitored_session *ms, fl_chief_choice chief)
{
    if (chief != FL_CHIEF_FROM_CLUSTER)
        return chief == FL_CHIEF_YES;
    return !ms->cluster || ms->plugin->is_chief(ms->cluster);
}

/* The hooks see the prepared model before any step: a stop hook whose step
 * a restored checkpoint has already reached stops the loop before it trains. */
static void after_create_session(fl_monitored_session *ms)
{
    fl_run_values v = {ms->step, NULL, ms->session, ms->log, ms->who, ms->start_step};
    for (int h = 0; h < ms->nhooks; h++)
        if (ms->hooks[h]->after_create_session && ms->hooks[h]->after_create_session(ms->hooks[h], &v))
            ms->stop = true;
}

static void free_session(fl_monitored_session *ms)
{
    fl_session_hook_free(ms->owned[0]);
    fl_session_hook_free(ms->owned[1]);
    fl_session_free(ms->session);
    free(ms);
}

fl_monitored_session *fl_monitored_training_session(fl_graph *g, fl_node *global_step,
                                                    const fl_monitored_session_options *o)
{
    if (!g || !global_step || !o) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "fl_monitored_training_session: the graph, the global step and the options are needed");
        return NULL;
    }
    if (check_hooks("hooks", o->hooks, o->nhooks) != 0 || check_hooks("chief_only_hooks", o->chief_only_hooks,
                                                                        o->nchief_hooks) != 0)
        return NULL;
    if (o->max_checkpoints_to_keep < 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_monitored_training_session: max_checkpoints_to_keep %d: give "
                          "the number of checkpoints to keep (FL_DEFAULT_MAX_TO_KEEP: TensorFlow's 5), or 0 for all",
                          o->max_checkpoints_to_keep);
        return NULL;
    }
    if (o->nhooks + o->nchief_hooks > MAX_HOOKS - 2) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_monitored_training_session: %d hooks; at most %d",
                          o->nhooks + o->nchief_hooks, MAX_HOOKS - 2);
        return NULL;
    }
    const fl_cluster *cluster = o->config ? o->config->cluster : NULL;
    if (fl_cluster_check(cluster, "fl_monitored_training_session") != 0)
        return NULL;
    fl_monitored_session *ms = fl_xcalloc(1, sizeof *ms);
    ms->graph = g;
    ms->global_step = global_step;
    ms->o = *o;
    ms->cluster = cluster;
    ms->plugin = fl_cluster_plugin_of(cluster);
    ms->is_chief = is_chief(ms, o->chief);
    ms->log = o->log ? o->log : stdout;
    if (ms->cluster)
        snprintf(ms->who, sizeof ms->who, "%s: ", ms->plugin->task_name(ms->cluster));
    ms->init = fl_global_variables_initializer(g);
    ms->session = fl_session_new(g, o->config);
    make_hooks(ms);
    if (!ms->init || !ms->session || prepare(ms) != 0) {
        if (!ms->init || !ms->session)
            fl_set_error_code(fl_graph_error(g) ? FL_INVALID_ARGUMENT : fl_last_error_code(), "%s",
                              fl_graph_error(g) ? fl_graph_error(g) : fl_last_error());
        free_session(ms);
        return NULL;
    }
    after_create_session(ms);
    return ms;
}

/* Whether the failed run may succeed when tried again, as TensorFlow's
 * MonitoredSession decides, from its code: a task was lost (UNAVAILABLE) or
 * a synchronous step was abandoned (ABORTED). Anything else (a bad feed, a
 * missing variable) fails the same way every time, and is returned at once.
 * Only a run with a cluster can reconnect. */
static bool run_failed_for_a_lost_task(const fl_monitored_session *ms)
{
    fl_error_code code = fl_session_error_code(ms->session);
    return ms->cluster != NULL && (code == FL_UNAVAILABLE || code == FL_ABORTED);
}

/* The step of the latest checkpoint, read when a run fails, before the
 * chief restores a restarted ps from it: a worker that is back after the
 * chief has trained on (asynchronous training) finds a later step, which
 * would hide the loss. -1 for the chief, which knows what it restored, and
 * without a checkpoint directory. */
static long checkpoint_to_restore(const fl_monitored_session *ms)
{
    return ms->is_chief || !ms->o.checkpoint_dir ? -1 : fl_latest_checkpoint_step(ms->o.checkpoint_dir);
}

/* Every worker says what the lost task cost: from the global step it had
 * seen to the checkpoint the model went back to (or the step it found). */
static void report_steps_lost(fl_monitored_session *ms, long before, long checkpoint)
{
    long after = checkpoint >= 0 && checkpoint < ms->step ? checkpoint : ms->step;
    if (after < before)
        say(ms, "global step %ld -> %ld: %ld %s lost since the last checkpoint", before, after,
            before - after, before - after == 1 ? "step" : "steps");
}

// [book:recover]
/* A run failed. If it was a lost task that is back, prepare the model again
 * (a restarted ps gets the latest checkpoint from the chief) and say how
 * many steps that cost; 0 when the run may be tried again. */
static int recover(fl_monitored_session *ms)
{
    char why[FL_ERROR_LEN];
    snprintf(why, sizeof why, "%s", fl_session_error(ms->session));
    if (!run_failed_for_a_lost_task(ms))
        return fail(ms, "%s", why);
    say(ms, "the step failed (%s); connecting again", why);
    long checkpoint = checkpoint_to_restore(ms);
    int reconnected = ms->plugin->recover(ms->cluster);
    if (reconnected < 0)
        return fail(ms, "%s", fl_last_error());
    if (reconnected == 0)
        return fail(ms, "%s", why); /* no task was lost: a real error */
    long before = ms->step;
    /* The same loss may show later on another connection to the task
     * (one the failed step did not use): connect again and prepare again. */
    int rc = prepare(ms);
    for (int again = 0; rc != 0 && fl_last_error_code() == FL_UNAVAILABLE && again < MAX_RECOVERIES; again++) {
        say(ms, "preparing the model failed (%s); connecting again", ms->error);
        rc = ms->plugin->recover(ms->cluster) < 0 ? fail(ms, "%s", fl_last_error()) : prepare(ms);
    }
    if (rc != 0)
        return -1;
    report_steps_lost(ms, before, checkpoint);
    return 0;
}
// [end:recover]

// [book:training_ended]
/* A run failed OUT_OF_RANGE: the chief ended training while this worker
 * waited for a step that will never come (it closed the sync token), or an
 * input ran out. Training is over, as TensorFlow's MonitoredSession ends on
 * OutOfRangeError: no failure, and no reason to connect again. */
static bool training_ended(fl_monitored_session *ms)
{
    if (fl_session_error_code(ms->session) != FL_OUT_OF_RANGE)
        return false;
    fail(ms, "%s", fl_session_error(ms->session));
    say(ms, "training is over: %s", ms->error);
    ms->stop = ms->ended = true;
    return true;
}
// [end:training_ended]

/* The hooks' extra fetches after the caller's and the global step. */
static int gather_fetches(fl_monitored_session *ms, fl_node *const *fetches, int nfetches, fl_node **all,
                          int *first_extra)
{
    int n = 0;
    for (int i = 0; i < nfetches; i++)
        all[n++] = fetches[i];
    all[n++] = ms->global_step;
    for (int h = 0; h < ms->nhooks; h++) {
        first_extra[h] = n;
        if (ms->hooks[h]->before_run)
            n += ms->hooks[h]->before_run(ms->hooks[h], all + n, MAX_EXTRA);
    }
    first_extra[ms->nhooks] = n;
    return n;
}

static void run_hooks(fl_monitored_session *ms, fl_tensor **values, const int *first_extra)
{
    for (int h = 0; h < ms->nhooks; h++) {
        fl_run_values v = {ms->step, values + first_extra[h], ms->session, ms->log, ms->who, ms->start_step};
        if (ms->hooks[h]->after_run && ms->hooks[h]->after_run(ms->hooks[h], &v))
            ms->stop = true;
    }
}

/* The run's own increment has moved the global step, but the value fetched
 * in the same run may have been read before it (nothing orders the read
 * after the increment, and a synchronous step ends only when every replica
 * has counted). A value that has not moved past the last one seen is read
 * again, so hooks (stop at step, checkpoint names) see the step reached. */
static int note_global_step(fl_monitored_session *ms, long fetched)
{
    if (fetched > ms->step) {
        ms->step = fetched;
        return 0;
    }
    return read_global_step(ms);
}

int fl_monitored_session_run(fl_monitored_session *ms, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                             int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets)
{
    if (nfetches < 0 || nfetches > 64)
        return fail(ms, "fl_monitored_session_run: %d fetches (0..64)", nfetches);
    fl_node *all[64 + 1 + MAX_HOOKS * MAX_EXTRA];
    fl_tensor *values[64 + 1 + MAX_HOOKS * MAX_EXTRA] = {0};
    int first_extra[MAX_HOOKS + 1];
    int n = gather_fetches(ms, fetches, nfetches, all, first_extra);
    int rc = -1;
    for (int attempt = 0; attempt <= MAX_RECOVERIES && rc != 0; attempt++) {
        rc = fl_session_run(ms->session, feeds, nfeeds, all, n, values, targets, ntargets);
        if (rc != 0 && (training_ended(ms) || recover(ms) != 0))
            return -1;
    }
    if (rc != 0)
        return fail(ms, "the step failed %d times in a row: %s", MAX_RECOVERIES + 1, fl_session_error(ms->session));
    /* The step is done; a task lost while reading the step back is
     * recovered like one lost during the step (recover reads it again). */
    if (note_global_step(ms, (long)fl_tensor_scalar(values[nfetches])) != 0 && recover(ms) != 0) {
        for (int i = 0; i < n; i++)
            fl_tensor_free(values[i]);
        return -1;
    }
    run_hooks(ms, values, first_extra);
    for (int i = 0; i < n; i++) {
        if (i < nfetches && outputs)
            outputs[i] = values[i];
        else
            fl_tensor_free(values[i]);
    }
    return 0;
}

int fl_monitored_session_close(fl_monitored_session *ms)
{
    if (!ms)
        return 0;
    fl_run_values v = {ms->step, NULL, ms->session, ms->log, ms->who, ms->start_step};
    for (int h = 0; h < ms->nhooks; h++)
        if (ms->hooks[h]->end)
            ms->hooks[h]->end(ms->hooks[h], &v);
    int rc = ms->error[0] && !ms->ended ? -1 : 0;
    const fl_cluster *cluster = ms->cluster;
    const fl_cluster_plugin *plugin = ms->plugin;
    free_session(ms);
    /* After the chief's last save: the ps tasks may exit once every worker
     * has said goodbye. */
    if (cluster && plugin->say_goodbye(cluster) != 0) {
        char why[FL_ERROR_LEN];
        snprintf(why, sizeof why, "%s", fl_last_error());
        fl_set_error("fl_monitored_session_close: saying goodbye to the ps tasks: %s", why);
        rc = -1;
    }
    return rc;
}
