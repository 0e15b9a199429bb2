/* server_reading.c: how a connection's reading resumes after a pause (a
 * unread replies, a run in flight): frames that arrived
 * meanwhile are served by asking libevent to call the read callback that
 * server_conn.c registered, so the layers below it never name it. */
#include <event2/buffer.h>

#include "server_internal.h"

void fl_server_serve_buffered(fl_server_conn *c)
{
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS);
}

void fl_server_resume_reading(fl_server_conn *c)
{
    if (c->reading_paused || c->closing)
        return;
    bufferevent_enable(c->bev, EV_READ);
    if (!c->running)
        fl_server_serve_buffered(c);
}
