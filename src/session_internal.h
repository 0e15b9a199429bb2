/* session_internal.h: the session's state, shared by the files that run it
 * (src/session*.c), save it, trace it and draw it (`grep -rl
 * session_internal.h src` lists them all). */
#ifndef FLOWLAB_SESSION_INTERNAL_H
#define FLOWLAB_SESSION_INTERNAL_H

#include <pthread.h>

#include "device.h"

/* An input that comes from another device: a copy of it on this node's
 * device, staged through host memory. Kept between runs like outputs. */
typedef struct {
    fl_tensor value;   /* on the consumer's device */
    void *buffer;      /* the consumer device's buffer */
    size_t capacity;
    void *host;        /* host staging buffer (NULL when one side is the host) */
    size_t host_capacity;
} fl_edge_copy;

/* A copy of a node's value that this run made on another device; every
 * node there that reads the value shares it (TensorFlow's one _Recv per
 * device and tensor). */
typedef struct {
    const fl_device *device;
    fl_tensor *value; /* in the fl_edge_copy of the node that asked first */
    int64_t run;      /* the session's run_count when made */
} fl_sent_copy;

/* One node's output in this session: its buffer stays between runs. */
typedef struct {
    fl_device *device; /* where the node runs; NULL until placed */
    fl_tensor value;   /* the latest output; data is a device buffer */
    void *buffer;      /* owned by this slot (aliases point elsewhere) */
    size_t capacity;
    bool initialized;  /* variables: assigned at least once */
    fl_edge_copy *copies; /* one per input, made when an input crosses devices */
    /* This run: whether a node on another device reads the value, and then
     * the mark its device passes when the value is finished (device.h). */
    bool crosses;
    void *mark;
    int64_t mark_seq; /* marks in the order they were made: older ones finish first */
    bool mark_reached;
    bool issued; /* enqueued (or run, on the host) in this run */
    bool fetched; /* this run returns the value to the caller */
    fl_sent_copy *sent; /* at most one per other device */
    int nsent;
} fl_slot;

/* Host memory a device is still to copy in: a host op must not write it
 * until the device is past the mark (NULL: until the device is idle). */
typedef struct {
    const void *host;
    fl_device *device;
    void *mark;
} fl_pending_read;

/* One op's run, for the timeline (fl_session_write_trace). */
typedef struct {
    int node;                /* node id */
    const fl_device *device;
    double start_us, duration_us; /* since the session's first traced run */
    int copy_of; /* a cross-device copy of this node's value into `node`; -1 for an op */
    size_t bytes; /* a copy's size: what chapter 7 counts per step; 0 for an op */
    const fl_device *from; /* the device a copy came from; NULL for an op */
    const char *op; /* the op's type as it ran ("FusedConv2D" under a Relu's name) */
} fl_trace_event;

/* A device a traced run has used, and whether it times its own ops (an
 * asynchronous device: the host only sees when an op was enqueued). */
typedef struct {
    fl_device *device;
    bool timed;
} fl_traced_device;

#define FL_TRACED_DEVICES 32

/* An event added from outside the executor (fl_session_trace_event), on a
 * lane named by the caller. Times are absolute, fl_now_us()'s clock. */
typedef struct {
    char lane[48];
    char name[64];
    double start_us, end_us;
} fl_external_event;

/* This run's fetches and where their values go (session_fetch.c). */
typedef struct {
    fl_node *const *fetches;
    int n;
    fl_tensor **outputs;
    const fl_run_options *options; /* NULL, or no fetch_ready: all copied at the end */
    bool *delivered;               /* by fetch index */
} fl_run_fetches;

/* session_fusion.c's plan of a step: by node id, arrays of `size`. */
typedef struct {
    int size;
    fl_node **planned;    /* the node run under this id this step; NULL: the graph's */
    fl_node *made;        /* the session's own nodes, kept between runs */
    fl_node **made_inputs; /* three per id: the made nodes' inputs */
    int *consumers;       /* this step's readers of each value (inputs and controls) */
    fl_node **relu_of;    /* a Relu of this step that reads the value */
} fl_fusion_plan;

struct fl_session {
    fl_graph *graph;
    fl_session_options options;
    char error[FL_ERROR_LEN];
    fl_error_code error_code; /* error's, while error is not empty */
    fl_slot *slots; /* by node id */
    int nslots;
    bool *needed;
    const fl_tensor **feeds;
    bool tracing;
    fl_trace_event *events;
    int nevents, events_cap;
    double trace_origin_us; /* 0 until the first traced run starts */
    fl_traced_device traced[FL_TRACED_DEVICES]; /* this run's, while tracing */
    int ntraced;
    int64_t run_count;
    int ops_run; /* in the latest run: ops issued (a fused node counts once) */
    fl_fusion_plan fusion;
    int *pending;  /* this run's needed nodes not yet issued, in creation order */
    int *readers;  /* by node id: how many inputs of this run's ops read its value */
    int64_t marks_made;
    fl_pending_read *reads;
    int nreads, reads_cap;
    fl_run_fetches *run; /* during a run, else NULL */
    void *master; /* the cluster runtime's master, in the client of a cluster */
    bool *placement_logged; /* by node id, in the client: its task's device was printed */
    int nplacement_logged;
    /* fl_session_trace_event's events, from any thread: under external_lock. */
    pthread_mutex_t external_lock;
    bool external_tracing; /* s->tracing, as the other threads may read it */
    fl_external_event *external;
    int nexternal, external_cap;
};

/* The run (or save, restore) failed: the message goes to fl_session_error
 * and fl_last_error. fl_session_fail adds context to an error already set
 * (fl_last_error in its arguments) and keeps that error's code;
 * fl_session_fail_code is for a failure found here, with its own code. */
int fl_session_fail(fl_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fl_session_fail_code(fl_session *s, fl_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Gives every node of the graph (it may have grown) a slot. */
void fl_session_grow(fl_session *s);
/* Chooses n's device once (logging it when asked); -1 with the error set. */
int fl_session_place(fl_session *s, fl_node *n);
/* Makes slot->buffer hold at least bytes on the slot's device: 0, or -1
 * with RESOURCE_EXHAUSTED when bytes pass fl_max_tensor_bytes or the device
 * has no room (the slot is then left empty). */
int fl_session_ensure_buffer(fl_slot *slot, size_t bytes);
/* The same for node n's value, the failure recorded as the run's, naming
 * n, its output's shape and the limit. */
int fl_session_ensure_node_buffer(fl_session *s, const fl_node *n, fl_slot *slot, fl_dtype dtype, fl_shape shape);

/* ---- session_master.c: a run handed to the cluster's master, in a client
 * (fl_cluster_plugin.open_master); without one, open does nothing ---- */
void fl_session_open_master(fl_session *s);
void fl_session_close_master(fl_session *s);
/* -1 with the error set when s is a client's (what: "fl_session_save"). */
int fl_session_refuse_in_client(fl_session *s, const char *what);
int fl_session_run_master(fl_session *s, const fl_run_options *options, const fl_feed *feeds, int nfeeds,
                          fl_node *const *fetches, int nfetches, fl_tensor **outputs, fl_node *const *targets,
                          int ntargets);
/* The task and device the master asked n to run on, once a run needed it. */
const char *fl_session_master_node_device(const fl_session *s, const fl_node *n);
/* ---- session_forward.c: an element-wise op's output over its input's buffer ---- */
/* Whether n (about to run, its output of `shape`) may write over its input
 * 0's buffer: in[0] is read by nothing else in this run, and more. */
bool fl_session_can_forward(const fl_session *s, const fl_node *n, const fl_tensor *in0, fl_shape shape);

/* ---- session_prune.c: checks a run's fetches, targets and feeds, records
 * the feeds and marks in s->needed what the run needs; -1 with the error set. */
int fl_session_prune(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches,
                     int nfetches, fl_node *const *targets, int ntargets);

/* ---- session_fusion.c: after placement, before the run's reads are
 * counted: which ops of the step run fused (s->needed loses the absorbed
 * ones); planned gives the node to run under an id (the graph's, or the
 * session's fused stand-in). ---- */
void fl_session_fuse(fl_session *s);
fl_node *fl_session_planned(const fl_session *s, int id);
void fl_session_free_fusion(fl_session *s);

/* ---- session_copies.c: values crossing devices ---- */
/* Gives n's input i on n's device in *out: the copy this run already made
 * there for another reader, or a new one; -1 with the error set. */
int fl_session_copy_input(fl_session *s, fl_node *n, int i, fl_tensor **out);
/* Copies a value its device has finished into host memory. A device with
 * marks copies it at once, even with later work still in its queue; any
 * other waits for its queue. Returns the backend's status. */
/* Before a host op writes a variable in place: waits until no device is
 * still to copy its old value in. */
int fl_session_wait_for_pending_reads(fl_session *s, const fl_node *n, fl_tensor *const *in);
/* After a run: releases its marks and forgets its pending reads. */
void fl_session_forget_marks(fl_session *s);
void fl_session_release_copies(fl_slot *slot, int ninputs);

/* ---- session_fetch.c: handing the fetched values over ---- */
/* After placement: every device feed lies on its placeholder's device and
 * every fetch_to device is its fetch's; -1 with the error set. */
int fl_session_check_device_io(fl_session *s);
/* After a failed run: waits until its devices are idle (ignoring their
 * errors), so that no copy they still make writes into outputs the run
 * frees, or reads feeds the caller may now free. */
void fl_session_wait_after_failure(fl_session *s);
/* Whether the value of the node in slot is fetched by a run that wants it
 * as soon as it is finished (it then gets a mark on its device). */
bool fl_session_wants_early_fetch(const fl_session *s, const fl_slot *slot);
/* Hands over, without blocking, every issued fetch whose value is finished
 * (a host value; a marked one whose mark has passed). -1 with the error set. */
int fl_session_fetch_finished(fl_session *s);
/* At the end of a run: hands over every fetch not handed over yet, in the
 * order they finish, then waits until the devices are idle. */
int fl_session_fetch_the_rest(fl_session *s);

/* ---- trace.c: the timeline's bookkeeping (times on fl_now_us()'s clock) ---- */
void fl_session_trace_op(fl_session *s, const fl_node *n, const fl_device *d, double start,
                         double end);
/* A copy of node `value` made for node `reader` on d. */
void fl_session_trace_copy(fl_session *s, int reader, int value, const fl_device *d, double start,
                           double end);
/* Whether d times its own ops in this traced run (asked once per device and
 * run; the first ask turns its timing on). */
bool fl_session_device_times_ops(fl_session *s, fl_device *d);
/* After a traced run: device-timed ops join the timeline; devices stop timing. */
void fl_session_take_device_timings(fl_session *s);

#endif
