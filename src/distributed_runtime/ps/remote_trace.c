/* remote_trace.c: a remote device's requests in a traced run, from send to
 * reply. The executor's thread logs each op's last request as it is sent;
 * the connection's reader thread stamps the replies, which a task sends in
 * the order of the requests; the session takes the ops after the run. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "remote_trace.h"
#include "runtime.h"

typedef struct {
    int node;
    uint32_t id;                /* the op's last request */
    double sent_us, replied_us; /* replied_us 0: no reply yet */
} traced_request;

struct fl_remote_trace {
    atomic_bool on;       /* read without the lock first: an untraced step takes no lock per request */
    pthread_mutex_t lock; /* all below: the executor's and the reader's threads */
    traced_request *items;
    int count, cap, answered; /* items[0..answered) have their replies */
};

fl_remote_trace *fl_remote_trace_new(void)
{
    fl_remote_trace *t = fl_xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

void fl_remote_trace_free(fl_remote_trace *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->items);
    free(t);
}

void fl_remote_trace_set(fl_remote_trace *t, bool on)
{
    pthread_mutex_lock(&t->lock);
    t->on = on;
    t->count = t->answered = 0;
    pthread_mutex_unlock(&t->lock);
}

void fl_remote_trace_sent(fl_remote_trace *t, int node, uint32_t last_id, double sent_us)
{
    if (!atomic_load(&t->on))
        return;
    pthread_mutex_lock(&t->lock);
    if (t->on) {
        if (t->count == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 64;
            t->items = fl_xrealloc(t->items, (size_t)t->cap * sizeof *t->items);
        }
        t->items[t->count++] = (traced_request){node, last_id, sent_us, 0};
    }
    pthread_mutex_unlock(&t->lock);
}

void fl_remote_trace_replied(void *trace, uint32_t id, double at_us)
{
    fl_remote_trace *t = trace;
    if (!atomic_load(&t->on))
        return;
    pthread_mutex_lock(&t->lock);
    while (t->answered < t->count && t->items[t->answered].id <= id)
        t->items[t->answered++].replied_us = at_us;
    pthread_mutex_unlock(&t->lock);
}

int fl_remote_trace_take(fl_remote_trace *t, fl_op_timing *out, int max)
{
    double now = fl_now_us();
    pthread_mutex_lock(&t->lock);
    int n = t->count < max ? t->count : max;
    for (int i = 0; i < n; i++) {
        const traced_request *r = &t->items[i];
        out[i] = (fl_op_timing){r->node, r->sent_us, r->replied_us > 0 ? r->replied_us : now};
    }
    memmove(t->items, t->items + n, (size_t)(t->count - n) * sizeof *t->items);
    t->count -= n;
    t->answered = t->answered > n ? t->answered - n : 0;
    pthread_mutex_unlock(&t->lock);
    return n;
}
