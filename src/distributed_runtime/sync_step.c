/* sync_step.c: which step of synchronous training (chapter 4) this worker
 * is at: the global step its variables were read at, learnt from the token
 * (a WAIT_STEP's answer) the previous step ended with, and forgotten when a
 * connection is lost, since the task may come back restored. */
#include <pthread.h>

#include "remote_device.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;


/* Synchronous replicas: the step this worker is at, learnt from the token
 * (a WAIT_STEP's answer) the last step ended with. Under lock. */
static struct {
    uint64_t step;
    fl_ps_client *token_client;
    uint32_t token_id;
    int32_t token_value;
} sync_state = {FL_WIRE_STEP_UNKNOWN, NULL, 0, 0};

uint64_t fl_remote_sync_step(void)
{
    pthread_mutex_lock(&lock);
    fl_ps_client *c = sync_state.token_client;
    uint32_t id = sync_state.token_id;
    pthread_mutex_unlock(&lock);
    /* The token came before the run that asked for it ended; this is quick. */
    int rc = c ? fl_ps_client_wait(c, id) : -1;
    pthread_mutex_lock(&lock);
    if (c && sync_state.token_client == c && sync_state.token_id == id) {
        sync_state.step = rc == 0 ? (uint64_t)(sync_state.token_value < 0 ? 0 : sync_state.token_value)
                                  : FL_WIRE_STEP_UNKNOWN;
        sync_state.token_client = NULL;
    }
    uint64_t step = sync_state.step;
    pthread_mutex_unlock(&lock);
    return step;
}

void fl_remote_sync_expect_token(fl_ps_client *c, uint32_t id)
{
    pthread_mutex_lock(&lock);
    sync_state.token_client = c;
    sync_state.token_id = id;
    pthread_mutex_unlock(&lock);
}

/* Where a token's value lands (the reader thread writes it before the
 * reply counts as done, and it is read only after waiting for that). */
void *fl_remote_sync_token_buffer(void)
{
    return &sync_state.token_value;
}

void fl_remote_sync_forget(fl_ps_client *lost)
{
    pthread_mutex_lock(&lock);
    if (!lost || sync_state.token_client == lost)
        sync_state.token_client = NULL;
    sync_state.step = FL_WIRE_STEP_UNKNOWN;
    pthread_mutex_unlock(&lock);
}
