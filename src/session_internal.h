/* session_internal.h: the session's state, shared by the files that run,
 * save and trace it. */
#ifndef FLOWLAB_SESSION_INTERNAL_H
#define FLOWLAB_SESSION_INTERNAL_H

#include "device.h"

/* One node's output in this session: its buffer stays between runs. */
typedef struct {
    fl_device *device; /* where the node runs; NULL until placed */
    fl_tensor value;   /* the latest output; data is a device buffer */
    void *buffer;      /* owned by this slot (aliases point elsewhere) */
    size_t capacity;
    bool initialized;  /* variables: assigned at least once */
} fl_slot;

struct fl_session {
    fl_graph *graph;
    fl_session_options options;
    char error[FL_ERROR_LEN];
    fl_slot *slots; /* by node id */
    int nslots;
    bool *needed;
    const fl_tensor **feeds;
};

int fl_session_fail(fl_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
