/* server_reply.c: a reply on its way to a connection: the frame the
 * request's server built in s->out, copied into the connection's output
 * (libevent writes it when the socket takes it) and counted. */
#include <event2/bufferevent.h>

#include "server_internal.h"

void fl_server_send_out(fl_server_conn *c)
{
    fl_server *s = c->server;
    fl_server_count(s, &s->stats.bytes_out, s->out.len);
    bufferevent_write(c->bev, s->out.data, s->out.len);
    fl_wire_buf_consume(&s->out, s->out.len);
}
