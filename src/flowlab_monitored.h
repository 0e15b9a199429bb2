/* flowlab_monitored.h: the part of flowlab's public API for chapter 4's
 * monitored training, TensorFlow's MonitoredTrainingSession and its hooks.
 * Included by flowlab.h; include that, not this. */
#ifndef FLOWLAB_MONITORED_H
#define FLOWLAB_MONITORED_H

#include "flowlab.h"

/* ------------------------------------------------------------------------
 * Monitored training (chapter 4): TensorFlow's MonitoredTrainingSession.
 * The chief (worker 0, or the chief task) restores the latest checkpoint or
 * initialises the variables; every other worker waits until the model is
 * ready, saying what it waits for every few seconds, up to
 * FLOWLAB_TASK_DEADLINE seconds (120 unset). A run that loses a task connects again, lets the
 * chief restore a restarted ps from the latest checkpoint, and runs again.
 * Hooks run after every step: stop at a step, count steps, log, save.
 * ------------------------------------------------------------------------ */
typedef struct fl_monitored_session fl_monitored_session;

typedef struct {
    long global_step;           /* after the run */
    fl_tensor *const *extra;    /* the values of the fetches before_run asked for */
    fl_session *session;        /* the monitored session's own */
    void *log;                  /* FILE * for lines, and what they start with: */
    const char *who;            /* "worker 1: " ("" for one process) */
    long start_step;            /* the global step the model was prepared at (or recovered to) */
} fl_run_values;

typedef struct fl_session_hook fl_session_hook;
struct fl_session_hook {
    const char *name;
    /* Extra nodes to fetch in this run (at most max); may be NULL. */
    int (*before_run)(fl_session_hook *h, fl_node **extra, int max);
    /* After a run; true asks the session to stop. May be NULL. */
    bool (*after_run)(fl_session_hook *h, const fl_run_values *v);
    /* Once the model is ready, before the first run; true asks the session
     * to stop before any step (TensorFlow's after_create_session). May be NULL. */
    bool (*after_create_session)(fl_session_hook *h, const fl_run_values *v);
    void (*end)(fl_session_hook *h, const fl_run_values *v); /* at close (extra: NULL); may be NULL */
    void (*free_state)(void *state);                            /* may be NULL */
    void *state;
};

/* The built-in hooks (free them with fl_session_hook_free after closing). */
fl_session_hook *fl_stop_at_step_hook(long last_step);      /* stop once the global step reaches it */
fl_session_hook *fl_step_counter_hook(long every_n_steps);  /* logs global steps/sec */
/* Logs the tensors' values every n global steps (scalars: their value);
 * 1 to 16 tensors. Each maker returns NULL, fl_last_error saying why, for
 * arguments it cannot take. */
fl_session_hook *fl_logging_tensor_hook(fl_node *const *tensors, int n, long every_n_steps);
/* Saves DIR/model.ckpt-STEP every secs seconds or every steps global steps
 * (0: not by that measure) and at the end, keeping the newest max_to_keep
 * checkpoints (0: every one; see fl_session_save_keeping); the chief's. */
fl_session_hook *fl_checkpoint_saver_hook(const char *dir, double every_secs, long every_steps, int max_to_keep);
void fl_session_hook_free(fl_session_hook *h);

/* Which process is the chief. By default the cluster says (config->cluster:
 * the chief task, else worker 0); one process without a cluster is the chief.
 * A program may say otherwise, e.g. to make a restarted worker the chief. */
typedef enum { FL_CHIEF_FROM_CLUSTER = 0, FL_CHIEF_YES = 1, FL_CHIEF_NO = 2 } fl_chief_choice;

typedef struct {
    fl_chief_choice chief;          /* FL_CHIEF_FROM_CLUSTER unless overridden */
    const char *checkpoint_dir;     /* restore from / save to (NULL: none) */
    double save_checkpoint_secs;    /* the chief's saver (both 0 with a dir: every 600 s) */
    long save_checkpoint_steps;
    /* The newest N checkpoints are kept, older ones deleted; 0 keeps every
     * one, as TensorFlow's max_to_keep=0 and fl_session_save_keeping's 0,
     * so options left zero never delete a checkpoint. TensorFlow's default,
     * 5, is FL_DEFAULT_MAX_TO_KEEP. Negative: refused (FL_INVALID_ARGUMENT). */
    int max_checkpoints_to_keep;
    long log_step_count_steps;      /* global steps/sec every N steps (0: 100; -1: never) */
    fl_session_hook *const *hooks;  /* every worker's; not freed by close */
    int nhooks;
    fl_session_hook *const *chief_only_hooks;
    int nchief_hooks;
    const fl_session_options *config; /* with .cluster = cluster for a worker */
    void *log;                      /* FILE * for the session's lines (NULL: stdout) */
} fl_monitored_session_options;

/* Makes the session and prepares the model (see above). NULL, and
 * fl_last_error() says why: no model within the deadline, a checkpoint that
 * fits no variable, a task that never answered. */
fl_monitored_session *fl_monitored_training_session(fl_graph *g, fl_node *global_step,
                                                    const fl_monitored_session_options *o);
/* fl_session_run's arguments; 0, or -1 with fl_monitored_session_error.
 * A run that fails OUT_OF_RANGE ends training, as TensorFlow's does: the
 * chief stopped (a synchronous worker's wait for the next step ends so)
 * or an input ran out. Then should_stop is true, and close returns 0. */
int fl_monitored_session_run(fl_monitored_session *ms, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                             int nfetches, fl_tensor **outputs, fl_node *const *targets, int ntargets);
bool fl_monitored_session_should_stop(const fl_monitored_session *ms);
long fl_monitored_session_global_step(const fl_monitored_session *ms);
fl_session *fl_monitored_session_session(fl_monitored_session *ms); /* e.g. to evaluate */
const char *fl_monitored_session_error(const fl_monitored_session *ms);
/* Runs the hooks' end (the chief's saver saves) and frees the session; a
 * worker of a cluster then says goodbye to the ps tasks (so a program does
 * not call fl_cluster_say_goodbye after it). 0, or -1 when a run had failed
 * or the goodbye did not reach every ps task. */
int fl_monitored_session_close(fl_monitored_session *ms);

#endif
