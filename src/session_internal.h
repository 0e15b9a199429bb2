/* session_internal.h: the session's state and the calls between the files
 * that run it. A small core (graph, options, one slot per node) is shared;
 * each part's own state is a sub-struct that only its owner writes:
 *   run     session.c          the executor: what a run needs, its queue, counts
 *   fetch   session_fetch.c    the run's fetches and where their values go
 *   reads   session_copies.c   host memory a device is still to copy in
 *   trace   trace.c            the timeline and the devices it times
 *   fusion  session_fusion.c   the step's plan of fused ops
 *   master  session_master.c   the cluster's master, in a client
 *   error   session_error.c    the last failure
 * Another part calls the owner's functions, declared in the owner's section
 * below, or reads through its inline accessors there. Only the session's own
 * files (session*.c, trace.c) include this header; the saver and the DOT
 * writer have session_access.h.
 * tests/house_rules.t checks both rules. */
#ifndef FLOWLAB_SESSION_INTERNAL_H
#define FLOWLAB_SESSION_INTERNAL_H

#include <pthread.h>

#include "device.h"
#include "session_error.h"
#include "session_access.h"

struct fl_shared_variable; /* variable_container.h */

/* An input that comes from another device: a copy of it on this node's
 * device, staged through host memory. Kept between runs like outputs. */
typedef struct {
    fl_tensor value;   /* on the consumer's device */
    void *buffer;      /* the consumer device's buffer */
    size_t capacity;
    void *host;        /* host staging buffer (NULL when one side is the host) */
    size_t host_capacity;
    void *wrapped;     /* non-NULL: buffer lies over these host bytes, the value's own (no copy) */
} fl_edge_copy;

/* A copy of a node's value that this run made on another device; every
 * node there that reads the value shares it (TensorFlow's one _Recv per
 * device and tensor). */
typedef struct {
    const fl_device *device;
    fl_tensor *value; /* in the fl_edge_copy of the node that asked first */
    int64_t made_in_run; /* the session's run_count then */
} fl_sent_copy;

/* One node's output in this session: its buffer stays between runs. */
typedef struct {
    fl_device *device; /* where the node runs; NULL until placed */
    fl_tensor value;   /* the latest output; data is a device buffer */
    void *buffer;      /* owned by this slot (aliases point elsewhere) */
    size_t capacity;
    bool initialized;  /* variables: assigned at least once */
    fl_edge_copy *copies; /* one per input, made when an input crosses devices */
    int ncopies;          /* copies' length: the most inputs the node (or its fused form) took */
    fl_edge_copy caller;  /* over the caller's bytes: a feed read, or a fetch written, in place */
    const void *caller_last; /* the caller's bytes in the last run, and how many runs in a row */
    int caller_moves;        /* they moved (fl_session_use_caller_bytes) */
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
    /* Where the value lives when the task's container holds it (a variable
     * there, or an op's output that is that variable): NULL otherwise. */
    struct fl_shared_variable *shared;
} fl_slot;

/* Host memory a device is still to copy in: a host op must not write it
 * until the device is past the mark (NULL: until the device is idle). */
typedef struct {
    const void *host;
    fl_device *device;
    void *mark;
    int64_t seq;  /* its age among the run's marks (fl_session_next_mark_age) */
    bool reached; /* the device is known past the mark */
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
    char kind[32]; /* the trace's "cat": "external", or another task's op */
    double start_us, end_us;
} fl_external_event;

/* ---- the parts' own state: each written only by the file named ---- */

/* session.c's: the executor's state of one run, by node id where an array
 * (grown with the slots). It lends needed and feeds to session_prune.c,
 * which records the run's in them, and needed to session_fusion.c, which
 * drops what it absorbs; the other parts read them through the accessors
 * below, as session.c's functions cannot be called from the files it calls
 * (no call cycle). */
typedef struct {
    bool *needed;            /* this run runs the node */
    const fl_tensor **feeds; /* the value fed to the node; NULL when none */
    int *pending;  /* this run's needed nodes not yet issued, in creation order */
    int *readers;  /* how many inputs of this run's ops read the node's value */
    const fl_run_options *options; /* this run's (NULL: none, or between runs) */
    int64_t run_count;
    int ops_run; /* in the latest run: ops issued (a fused node counts once) */
} fl_run_state;

/* session_fetch.c's: this run's fetches and where their values go. */
typedef struct {
    bool running;                  /* false between runs */
    fl_node *const *fetches;
    int n;
    fl_tensor **outputs;
    const fl_run_options *options; /* NULL, or no fetch_ready: all copied at the end */
    bool *delivered;               /* by fetch index; lent by the executor for the run */
} fl_run_fetches;

/* session_fetch.c's: a task's partition keeps each fetch's host tensor from
 * run to run (fl_session_keep_fetched_values), its memory reused. */
typedef struct {
    bool on;
    fl_tensor **values;
    size_t *capacity; /* each value's bytes when it was made */
    int n;
} fl_kept_fetches;

/* session_copies.c's: host memory devices are still to copy in, this run;
 * and the count of marks taken, values' and pending reads' alike, whose
 * order the executor compares. */
typedef struct {
    fl_pending_read *list;
    int n, cap;
    int64_t marks_made;
} fl_pending_reads;

/* trace.c's: the timeline. The executor's events are recorded without a
 * lock; other threads' (fl_session_trace_event) under external_lock. */
typedef struct {
    bool on;
    fl_trace_event *events;
    int nevents, events_cap;
    double origin_us; /* 0 until the first traced run starts */
    fl_traced_device traced[FL_TRACED_DEVICES]; /* this run's, while tracing */
    int ntraced;
    pthread_mutex_t external_lock;
    bool external_on; /* on, as the other threads may read it */
    fl_external_event *external;
    int nexternal, external_cap;
} fl_trace_state;

/* session_fusion.c's plan of a step: by node id, arrays of `size`. */
typedef struct {
    int size;
    fl_node **planned;    /* the node run under this id this step; NULL: the graph's */
    fl_node *made;        /* the session's own nodes, kept between runs */
    fl_node **made_inputs; /* three per id: the made nodes' inputs */
    int *consumers;       /* this step's readers of each value (inputs and controls) */
    fl_node **relu_of;    /* a Relu of this step that reads the value */
    bool *needed;         /* the executor's, lent for fl_session_fuse */
    /* The multi-tensor Adam's: by id, whether a node depends on an update
     * it groups, and a grouped update's one control (its MultiApplyAdam);
     * then its groups and their MultiApplyAdams' inputs, kept between runs. */
    bool *reach;
    fl_node **after;
    struct fl_adam_group *groups;
    int groups_capacity;
    fl_node **group_inputs; /* 6 per group's room: 4 per member, 2 per group */
} fl_fusion_plan;

/* session_master.c's: in the client of a cluster, the master runs each run. */
typedef struct {
    void *runtime;          /* the cluster runtime's master; NULL outside a client */
    bool *placement_logged; /* by node id: its task's device was printed */
    int nplacement_logged;
} fl_master_state;

/* session_memory.c's: the bytes each device's values hold this run, and
 * with reuse_memory its pool (by node id: whose buffer a value lies in, its
 * readers still to be issued, the pool buffer it borrowed or -1); in a
 * cluster's client, what its tasks reported of theirs. */
typedef struct fl_device_pool fl_device_pool;
typedef struct {
    fl_device_pool *pools;
    int npools;
    int *owner, *unread, *lent;
    int size;
    fl_device_memory *task_peaks; /* a cluster client's: each task device's latest traced peak */
    int ntask_peaks;
} fl_memory_state;

/* session_error.c's: the last failure, for fl_session_error. */
typedef struct {
    char message[FL_ERROR_LEN];
    fl_error_code code; /* message's, while message is not empty */
} fl_error_state;

/* The core (graph, options, slots) is shared; each part's state below it
 * has one owner, named in the type's comment above. */
struct fl_session {
    /* Set by fl_session_new and read by every part. */
    fl_graph *graph;
    fl_session_options options;
    /* One per node: where it runs and its value. Shared on purpose, since
     * the values are what every part works on: session.c places nodes and
     * fills their values, session_copies.c marks and copies them,
     * session_fetch.c hands them over, session_variables.c gives variables
     * theirs, and the fusion and forwarding passes read where they live. */
    fl_slot *slots; /* by node id */
    int nslots;
    fl_run_state run;        /* session.c */
    fl_run_fetches fetch;    /* session_fetch.c */
    fl_kept_fetches kept;    /* session_fetch.c */
    fl_pending_reads reads;  /* session_copies.c */
    fl_trace_state trace;    /* trace.c */
    fl_fusion_plan fusion;   /* session_fusion.c */
    fl_master_state master;  /* session_master.c */
    fl_error_state error;    /* session_error.c */
    fl_memory_state memory;  /* session_memory.c */
    fl_device *rendezvous;   /* where Send and Recv run: a task's (fl_session_set_rendezvous), or NULL */
    /* The task's variables (fl_session_set_variable_container), or NULL:
     * variables then live in their slots, this session's alone. */
    struct fl_variable_container *container;
};

/* ---- session.c: the executor ---- */
/* Gives every node of the graph (it may have grown) a slot. */
void fl_session_grow(fl_session *s);
/* Chooses n's device once (logging it when asked); -1 with the error set. */
int fl_session_place(fl_session *s, fl_node *n);
/* session_sources.c: gives source n (or a fed node) its value on its
 * device; a Recv is only registered there, its value comes later. */
int fl_session_run_source(fl_session *s, fl_node *n);
/* session_buffers.c: a slot's buffer freed (the slot left empty), and
 * made to hold at least bytes on the slot's device: 0, or -1
 * with RESOURCE_EXHAUSTED when bytes pass fl_max_tensor_bytes or the device
 * has no room (the slot is then left empty). */
void fl_session_release_buffer(fl_slot *slot);
int fl_session_ensure_buffer(fl_slot *slot, size_t bytes);
/* The same for node n's value, the failure recorded as the run's, naming
 * n, its output's shape and the limit. */
int fl_session_ensure_node_buffer(fl_session *s, const fl_node *n, fl_slot *slot, fl_dtype dtype, fl_shape shape);
/* The run's state, for the parts the executor calls (inline: they cannot
 * call back into session.c). */
static inline bool fl_session_needs(const fl_session *s, int id) { return s->run.needed[id]; }
static inline const fl_tensor *fl_session_fed(const fl_session *s, int id) { return s->run.feeds[id]; }
static inline int fl_session_readers(const fl_session *s, int id) { return s->run.readers[id]; }
static inline int64_t fl_session_run_count(const fl_session *s) { return s->run.run_count; }

/* ---- session_container.c: variables that live in the task's container
 * (variable_container.h) ---- */
/* Variable n, placed on the host, takes its home in the container: its
 * value is the container's, and so is whether it has one; -1 with the
 * error set (a name the container holds with another dtype or shape). */
int fl_session_use_shared_variable(fl_session *s, fl_node *n);
/* Before op n runs: takes the container's lock when n reads or writes a
 * value that lives there, refreshing those inputs' initialized flags; true
 * when it took it (fl_session_unlock_shared after). */
bool fl_session_lock_shared(fl_session *s, const fl_node *n);
void fl_session_unlock_shared(fl_session *s);
/* An Assign gave variable var (with the lock held) its first value: every
 * session on the task sees it initialised. */
void fl_session_note_assigned(fl_session *s, const fl_node *var);

/* ---- session_error.c (session_error.h): fl_session_fail, fl_session_fail_code,
 * fl_session_clear_error ---- */

/* ---- session_master.c: a run handed to the cluster's master, in a client
 * (fl_cluster_plugin.open_master); without one, open does nothing. Open
 * checks options.cluster first: -1 with fl_last_error() set when it is not
 * a live fl_cluster ---- */
int fl_session_open_master(fl_session *s);
void fl_session_close_master(fl_session *s);
int fl_session_run_master(fl_session *s, const fl_run_options *options, const fl_feed *feeds, int nfeeds,
                          fl_node *const *fetches, int nfetches, fl_tensor **outputs, fl_node *const *targets,
                          int ntargets);
/* The task and device the master asked n to run on, once a run needed it. */
const char *fl_session_master_node_device(const fl_session *s, const fl_node *n);
/* Whether var has a value on the task that holds it: 1, 0, or -1 (the session's error set). */
int fl_session_master_variable_has_value(fl_session *s, const fl_node *var);
/* fl_session_in_client: session_access.h */

/* ---- session_forward.c: an element-wise op's output over its input's buffer ---- */
/* Whether n (about to run, its output of `shape`) may write over its input
 * 0's buffer: in[0] is read by nothing else in this run, and more. */
bool fl_session_can_forward(const fl_session *s, const fl_node *n, const fl_tensor *in0, fl_shape shape);

/* ---- session_variable_order.c: nodes on one variable keep creation order ---- */
/* Whether issuing n now would pass a node still waiting before it in
 * creation order (the ids waiting[0..nwaiting)) where one of the two
 * updates in place a variable the other reads or updates: n then waits. */
bool fl_session_passes_variable_use(const fl_session *s, const fl_node *n, const int *waiting, int nwaiting);

/* ---- session_prune.c: checks a run's fetches, targets and feeds, records
 * the feeds in fed and marks in needed (the executor's, by node id) what
 * the run needs; -1 with the error set. ---- */
int fl_session_prune(fl_session *s, const fl_feed *feeds, int nfeeds, fl_node *const *fetches, int nfetches,
                     fl_node *const *targets, int ntargets, bool *needed, const fl_tensor **fed);

/* ---- session_fusion.c: after placement, before the run's reads are
 * counted: which ops of the step run fused (needed, the executor's, loses
 * the absorbed ones); planned gives the node to run under an id (the
 * graph's, or the session's fused stand-in). ---- */
void fl_session_fuse(fl_session *s, bool *needed);
fl_node *fl_session_planned(const fl_session *s, int id);
void fl_session_free_fusion(fl_session *s);

/* ---- session_copies.c: values crossing devices ---- */
/* Gives n's input i on n's device in *out: the copy this run already made
 * there for another reader, or a new one; -1 with the error set. */
int fl_session_copy_input(fl_session *s, fl_node *n, int i, fl_tensor **out);
/* After n's kernel is enqueued, for the /cpu:0 values its device reads
 * where they lie: host ops that write them wait until it is past n. */
int fl_session_note_reads_in_place(fl_session *s, const fl_node *n, fl_tensor *const *in);
/* Before a host op writes a variable in place: waits until no device is
 * still to copy its old value in. */
int fl_session_wait_for_pending_reads(fl_session *s, const fl_node *n);
/* The age the next mark of this session takes: marks on values and on
 * pending reads are ordered alike. */
int64_t fl_session_next_mark_age(fl_session *s);
/* Without blocking: -1 when op n writes nothing a device still reads;
 * otherwise the age of the newest such read's mark, its device in *on. */
int64_t fl_session_unfinished_reads(fl_session *s, const fl_node *n, fl_device **on);
/* After a run: releases its marks and forgets its pending reads. */
void fl_session_forget_marks(fl_session *s);
void fl_session_free_pending_reads(fl_session *s);
void fl_session_release_copies(fl_slot *slot);
/* On a device whose memory is the host's, slot's value in the caller's
 * host bytes: a fed value read (fl_session_read_feed_in_place), a fetched
 * one written (fl_session_output_to_fetch_target) where the caller keeps
 * it. 0, or -1 (no error) where the device cannot, or where the bytes keep
 * moving from run to run, and a copy is made. */
int fl_session_use_caller_bytes(fl_slot *slot, void *host, fl_dtype dtype, fl_shape shape);
int fl_session_read_feed_in_place(fl_slot *slot, const fl_tensor *fed);

/* ---- session_memory.c: the bytes a run's values hold ---- */
/* After the run's readers are counted: every value unread, no device's
 * bytes held. */
void fl_session_memory_start_run(fl_session *s);
/* n's output buffer on its slot's device (the pool's, with reuse_memory),
 * counted as held; -1 with the run's error set, naming n. */
int fl_session_memory_take(fl_session *s, const fl_node *n, fl_slot *slot, fl_dtype dtype, fl_shape shape);
/* n's value lies in in0's buffer (an alias, or an op forwarded over it):
 * that buffer is held until n's readers are issued too. */
void fl_session_memory_share(fl_session *s, const fl_node *n, const fl_node *in0);
/* n is issued: what it read and nobody else will goes back to its pool. */
void fl_session_memory_issued(fl_session *s, const fl_node *n);
/* A copy of a value made on device d this run: held until the run ends. */
void fl_session_memory_count_copy(fl_session *s, fl_device *d, size_t bytes);
/* After the run's fetches: every buffer lent goes back. */
void fl_session_memory_end_run(fl_session *s);
void fl_session_free_memory(fl_session *s);

/* ---- session_fetch.c: handing the fetched values over ---- */
/* Before a run's ops: its fetches, marked in their slots; delivered holds
 * n flags, lent for the run. */
void fl_session_start_fetches(fl_session *s, const fl_run_options *options, fl_node *const *fetches, int n,
                              fl_tensor **outputs, bool *delivered);
/* After it: the slots forget them. A failed run first waits until its
 * devices are idle (ignoring their errors), so that no copy they still make
 * writes into outputs it frees, or reads feeds the caller may now free, and
 * hands back no outputs, not half of them. */
void fl_session_end_fetches(fl_session *s, bool failed);
/* With the session: the fetched values it kept (fl_session_keep_fetched_values). */
void fl_session_free_kept_fetches(fl_session *s);
/* After placement: every device feed lies on its placeholder's device and
 * every fetch_to device is its fetch's; -1 with the error set. */
int fl_session_check_device_io(fl_session *s);
/* Where fetch_to gives n's value host memory of the caller's and n's device
 * lies in host memory (a PoCL CPU device), and no op of the run reads the
 * value (the caller may change it once handed over: chapter 6 averages it
 * in place): n writes it there itself, and handing it over copies nothing.
 * 0 with slot's value set; -1 (no error): take a buffer as usual. */
int fl_session_output_to_fetch_target(fl_session *s, const fl_node *n, fl_slot *slot, fl_shape shape);
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
void fl_session_open_trace(fl_session *s);
void fl_session_close_trace(fl_session *s);
static inline bool fl_session_tracing(const fl_session *s) { return s->trace.on; }
/* A run starts: the first traced run gives every lane its origin. */
void fl_session_trace_run_starts(fl_session *s);
void fl_session_trace_op(fl_session *s, const fl_node *n, const fl_device *d, double start,
                         double end);
/* A copy of node `value` made for node `reader` on d. */
void fl_session_trace_copy(fl_session *s, int reader, int value, const fl_device *d, double start,
                           double end);
/* Whether d times its own ops in this traced run (asked once per device and
 * run; the first ask turns its timing on). */
bool fl_session_device_times_ops(fl_session *s, fl_device *d);
/* After a run: device-timed ops join the timeline; devices stop timing. */
void fl_session_take_device_timings(fl_session *s);

#endif
