/* server_reply.c: a reply on its way to a connection. A small one is copied
 * into the connection's output; a big one (a pull of dense_1's kernel is
 * 13 MB) is handed to libevent as it is, saving a copy per pull, and its
 * buffer comes back for the next big reply once the bytes are written. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdlib.h>

#include "server_internal.h"

#define HAND_OVER_BYTES ((size_t)256 << 10)
#define SPARES ((int)(sizeof ((fl_server *)0)->spare_out / sizeof ((fl_server *)0)->spare_out[0]))

typedef struct {
    fl_server *server;
    fl_wire_buf buf;
} handed_reply;

/* libevent calls this (on the loop thread) once the bytes are written, or
 * when the connection is freed with them still queued. */
static void reply_written(const void *data, size_t len, void *handed)
{
    (void)data;
    (void)len;
    handed_reply *h = handed;
    fl_wire_buf *spare = h->server->spare_out;
    h->buf.len = 0;
    int free_slot = 0;
    while (free_slot < SPARES && spare[free_slot].data)
        free_slot++;
    if (free_slot < SPARES)
        spare[free_slot] = h->buf;
    else
        fl_wire_buf_free(&h->buf);
    free(h);
}

/* A buffer for the next reply: a spare one, or an empty one. */
static fl_wire_buf take_spare(fl_server *s)
{
    for (int i = 0; i < SPARES; i++)
        if (s->spare_out[i].data) {
            fl_wire_buf b = s->spare_out[i];
            s->spare_out[i] = (fl_wire_buf){0};
            return b;
        }
    return (fl_wire_buf){0};
}

void fl_server_send_out(fl_server_conn *c)
{
    fl_server *s = c->server;
    fl_server_count(s, &s->stats.bytes_out, s->out.len);
    if (s->out.len < HAND_OVER_BYTES) {
        bufferevent_write(c->bev, s->out.data, s->out.len);
        fl_wire_buf_consume(&s->out, s->out.len);
        return;
    }
    handed_reply *h = fl_xmalloc(sizeof *h);
    *h = (handed_reply){s, s->out};
    s->out = take_spare(s);
    if (evbuffer_add_reference(bufferevent_get_output(c->bev), h->buf.data, h->buf.len, reply_written, h) != 0) {
        bufferevent_write(c->bev, h->buf.data, h->buf.len); /* out of memory for the reference: copy */
        reply_written(NULL, 0, h);
    }
}

void fl_server_free_spare_replies(fl_server *s)
{
    for (int i = 0; i < SPARES; i++)
        fl_wire_buf_free(&s->spare_out[i]);
}
