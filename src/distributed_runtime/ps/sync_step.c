/* sync_step.c: which step of synchronous training (chapter 4) a worker is
 * at: the global step its variables were read at, learnt from the token
 * (a WAIT_STEP's answer) the previous step ended with, and forgotten when a
 * connection is lost, since the task may come back restored. */
#include <pthread.h>
#include <stdlib.h>

#include "runtime.h"
#include "sync_step.h"

struct fl_sync_step {
    pthread_mutex_t lock; /* everything below */
    uint64_t step;
    fl_task_client *token_client; /* the token awaited, NULL: none */
    uint32_t token_id;
    /* Written by token_client's reader thread before the reply counts as
     * done, and read only after waiting for that. */
    int32_t token_value;
};

fl_sync_step *fl_sync_step_new(void)
{
    fl_sync_step *s = fl_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    s->step = FL_WIRE_STEP_UNKNOWN;
    return s;
}

void fl_sync_step_free(fl_sync_step *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

uint64_t fl_sync_step_now(fl_sync_step *s)
{
    pthread_mutex_lock(&s->lock);
    fl_task_client *c = s->token_client;
    uint32_t id = s->token_id;
    pthread_mutex_unlock(&s->lock);
    /* The token came before the run that asked for it ended; this is quick. */
    int rc = c ? fl_task_client_wait(c, id) : -1;
    pthread_mutex_lock(&s->lock);
    if (c && s->token_client == c && s->token_id == id) {
        s->step = rc == 0 ? (uint64_t)(s->token_value < 0 ? 0 : s->token_value) : FL_WIRE_STEP_UNKNOWN;
        s->token_client = NULL;
    }
    uint64_t step = s->step;
    pthread_mutex_unlock(&s->lock);
    return step;
}

void fl_sync_step_expect_token(fl_sync_step *s, fl_task_client *c, uint32_t id)
{
    pthread_mutex_lock(&s->lock);
    s->token_client = c;
    s->token_id = id;
    pthread_mutex_unlock(&s->lock);
}

void *fl_sync_step_token_buffer(fl_sync_step *s)
{
    return &s->token_value;
}

void fl_sync_step_forget(fl_sync_step *s, fl_task_client *lost)
{
    pthread_mutex_lock(&s->lock);
    if (!lost || s->token_client == lost)
        s->token_client = NULL;
    s->step = FL_WIRE_STEP_UNKNOWN;
    pthread_mutex_unlock(&s->lock);
}
