/* server_reply.c: a reply on its way to a connection. Most are small and
 * copied into the connection's output. A variable's value (a pull of
 * dense_1's kernel is 13 MB) goes out from where it lies: the store lends
 * it until libevent has written its bytes, and an update meanwhile changes
 * a copy (ps_store.c), so no reply copies a big value. A request for a
 * variable that has no value yet is answered with an ERROR, and the
 * connection stays. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdlib.h>

#include "server_internal.h"

#define LEND_BYTES ((size_t)64 << 10)

void fl_server_send_out(fl_server_conn *c)
{
    fl_server *s = c->server;
    fl_server_count(s, &s->stats.bytes_out, s->out.len);
    bufferevent_write(c->bev, s->out.data, s->out.len);
    fl_wire_buf_consume(&s->out, s->out.len);
}

/* libevent calls this on the loop thread once the bytes are written, or
 * when the connection is freed with them still queued. */
static void value_written(const void *data, size_t len, void *loan)
{
    (void)data;
    (void)len;
    fl_ps_store_give_back(loan);
}

/* The frame's head is copied, its data handed to libevent by reference. */
static bool send_lent(fl_server_conn *c, uint32_t id, const char *name)
{
    fl_server *s = c->server;
    const fl_tensor *value;
    fl_ps_loan *loan = fl_ps_store_lend(s->store, name, &value);
    size_t bytes = fl_tensor_bytes(value);
    if (fl_wire_put_value_head(&s->out, id, name, value) != 0) {
        fl_ps_store_give_back(loan);
        return false;
    }
    fl_server_send_out(c);
    fl_server_count(s, &s->stats.bytes_out, bytes);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_add_reference(out, value->data, bytes, value_written, loan) != 0) {
        evbuffer_add(out, value->data, bytes); /* out of memory for the reference: copy */
        fl_ps_store_give_back(loan);
    }
    return true;
}

void fl_server_send_value(fl_server_conn *c, uint32_t id, const char *name)
{
    fl_server *s = c->server;
    const fl_tensor *value = fl_ps_store_get(s->store, name);
    if (fl_tensor_bytes(value) >= LEND_BYTES && send_lent(c, id, name))
        return;
    fl_wire_put_value(&s->out, id, name, value);
    fl_server_send_out(c);
}

/* A request that cannot be served now, though nothing was wrong with it
 * (a variable not initialised yet): an ERROR reply, and the connection stays. */
static void answer_error(fl_server_conn *c, uint32_t id, fl_wire_error_code code, const char *why)
{
    fl_wire_put_error(&c->server->out, id, code, why);
    fl_server_send_out(c);
}

bool fl_server_answer_if_missing(fl_server_conn *c, uint32_t id, const char *name)
{
    if (fl_ps_store_get(c->server->store, name))
        return false;
    char why[FL_WIRE_ERROR_LEN];
    snprintf(why, sizeof why, "variable %s has no value on %s yet (the chief initialises variables)", name,
             c->server->name);
    answer_error(c, id, FL_WIRE_E_NOT_INITIALIZED, why);
    return true;
}
