/* wire_order.c: which frame may come when on one connection. A server takes
 * HELLO first (then PROOF when it asked for the secret's), requests, nothing
 * after GOODBYE; a client takes the handshake and HELLO_OK (or ERROR) first,
 * then replies only. */
#include "wire_internal.h"

void fl_wire_conn_init(fl_wire_conn *conn, fl_wire_role role)
{
    conn->role = role;
    conn->stage = FL_WIRE_AWAIT_HELLO;
}

static bool is_request(fl_wire_type type)
{
    return fl_wire_reply_type(type) != 0;
}

static int server_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st)
{
    const char *name = fl_wire_type_name(type);
    if (conn->stage == FL_WIRE_CLOSED) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s after GOODBYE: the connection is finished", name);
        return -1;
    }
    if (!is_request(type)) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s is a reply; a client sends requests", name);
        return -1;
    }
    if (conn->stage == FL_WIRE_AWAIT_HELLO && type != FL_WIRE_HELLO) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s before HELLO: a connection starts with HELLO", name);
        return -1;
    }
    if ((conn->stage == FL_WIRE_AWAIT_PROOF) != (type == FL_WIRE_PROOF)) {
        fl_status_set(st, FL_FAILED_PRECONDITION,
                      type == FL_WIRE_PROOF ? "PROOF without a CHALLENGE"
                                            : "%s before PROOF: this task asks for the cluster secret's proof",
                      name);
        return -1;
    }
    if (conn->stage == FL_WIRE_READY && type == FL_WIRE_HELLO) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "HELLO twice on one connection");
        return -1;
    }
    conn->stage = type == FL_WIRE_HELLO || type == FL_WIRE_PROOF ? FL_WIRE_READY
                  : type == FL_WIRE_GOODBYE                     ? FL_WIRE_CLOSED
                                                                : conn->stage;
    return 0;
}

static int client_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st)
{
    const char *name = fl_wire_type_name(type);
    if (is_request(type)) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s is a request; a server sends replies", name);
        return -1;
    }
    if (type == FL_WIRE_ERROR)
        return 0; /* the server may refuse anything, HELLO included */
    if (type == FL_WIRE_CHALLENGE || type == FL_WIRE_SERVER_PROOF) {
        if (conn->stage == FL_WIRE_AWAIT_HELLO)
            return 0; /* the handshake comes before HELLO_OK */
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s after HELLO_OK: the handshake is over", name);
        return -1;
    }
    if (conn->stage == FL_WIRE_AWAIT_HELLO && type != FL_WIRE_HELLO_OK) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "%s before HELLO_OK: the server answers HELLO first", name);
        return -1;
    }
    if (conn->stage == FL_WIRE_READY && type == FL_WIRE_HELLO_OK) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "HELLO_OK twice on one connection");
        return -1;
    }
    conn->stage = FL_WIRE_READY;
    return 0;
}

int fl_wire_check_order(fl_wire_conn *conn, fl_wire_type type, fl_status *st)
{
    if (strcmp(fl_wire_type_name((int)type), "?") == 0) {
        fl_status_set(st, FL_FAILED_PRECONDITION, "unknown frame type %d", (int)type);
        return -1;
    }
    if (conn->role == FL_WIRE_SERVER_SIDE)
        return server_order(conn, type, st);
    return client_order(conn, type, st);
}
