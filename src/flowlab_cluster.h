/* flowlab_cluster.h: flowlab's public API for clusters (chapter 3 on):
 * cluster specs, task servers, the replica device setter, synchronous
 * replicas. Its functions are in libflowlab_cluster.a (pkg-config
 * flowlab-cluster); it includes flowlab.h, the core's. */
#ifndef FLOWLAB_CLUSTER_H
#define FLOWLAB_CLUSTER_H

#include "flowlab.h"

/* ------------------------------------------------------------------------
 * Clusters (chapter 3): between-graph replication runs one process per
 * task. A cluster spec lists the jobs ("ps", "worker", optionally "chief"),
 * each a list of tasks at host:port, and says which task this process is.
 * Every task is started with the same spec and its own job and index.
 * Errors return NULL (or -1) and fl_last_error() names the flag or the
 * TF_CONFIG key at fault.
 * Tasks wait for each other up to FLOWLAB_TASK_DEADLINE seconds (the
 * environment's; 120 when unset). Set to no number of seconds above 0
 * ("abc", "0", "-5"), it fails every fl_cluster_from_* (FL_INVALID_ARGUMENT,
 * naming the variable and the value).
 * ------------------------------------------------------------------------ */
typedef struct fl_cluster fl_cluster;

/* As TensorFlow's distributed examples take them:
 *   --ps_hosts=h:2222,h:2223 --worker_hosts=h:2224,h:2225 --job_name=worker --task_index=1
 * ps_hosts may be NULL or "" (a cluster of workers); worker_hosts may not. */
fl_cluster *fl_cluster_from_flags(const char *ps_hosts, const char *worker_hosts,
                                  const char *job_name, int task_index);
/* The client of a cluster (in-graph replication across tasks): one process
 * that is none of its tasks, drives them all and runs TensorFlow's master.
 * The same lists, no job name; its job name is "client". Given as
 * fl_session_options.cluster, it makes the session the master: its graph's
 * nodes run on the tasks their devices name (no task: /job:worker/task:0);
 * for each distinct run (feeds, fetches, targets) the session partitions the
 * graph once and registers a partition on each task, again when the graph
 * has grown. A run is one request per task, all at once; values that cross
 * tasks go task to task. A task lost mid-run fails the run within the
 * deadline with UNAVAILABLE, naming the task and the step as the user counts
 * it ("run 7 of this session (global step 6 when last fetched)": the value a
 * run of the session last fetched of the node "global_step", left out when
 * none did), and the other tasks give that step up. fl_session_node_device
 * and log_device_placement name each node's task and the device asked of it
 * ("/job:worker/task:1/cpu:0") once a run that needed it has succeeded.
 * Freeing the session says goodbye to every task (all at once, each with a
 * short deadline of its own), so their servers exit. The bytes through the
 * client are fl_remote_traffic's. */
fl_cluster *fl_cluster_client_from_flags(const char *ps_hosts, const char *worker_hosts);
/* TensorFlow's TF_CONFIG JSON:
 *   {"cluster": {"chief": ["h:2222"], "ps": ["h:2223"], "worker": ["h:2224"]},
 *    "task": {"type": "worker", "index": 0}}
 * Other top-level keys ("environment", "rpc_layer") are ignored. */
fl_cluster *fl_cluster_from_tf_config(const char *json);
/* The same, from the TF_CONFIG environment variable. */
fl_cluster *fl_cluster_from_tf_config_env(void);
/* Also closes the connections the cluster opened to other tasks (each
 * cluster owns its own): free it after the sessions that use it. */
void fl_cluster_free(fl_cluster *cluster);

/* Keeping strangers out (chapter 4's "Securing a cluster"). Set these before
 * the cluster's first connection; every connection it opens (to the ps
 * tasks) or accepts (its task server) then uses them.
 * A shared secret: the file's bytes (16 to 1024, a trailing newline
 * dropped). Only a regular file owned by this user, that its group and
 * others may neither read nor change, is taken: another user's file, one
 * others may read, or a symbolic link is refused (FL_PERMISSION_DENIED); a
 * FIFO, device or directory, or a file over 1024 bytes, too
 * (FL_INVALID_ARGUMENT), at once and without blocking, naming the file. Each connection then proves, both
 * ways, that its ends know the secret (HMAC-SHA256 over a fresh nonce, the
 * job, the task and the side): a peer without it is refused, gets nothing,
 * and its refusal is final (FL_UNAUTHENTICATED), never retried. */
int fl_cluster_set_secret_file(fl_cluster *cluster, const char *path);
/* TLS 1.3 on every connection, both ends verified: this task's certificate
 * chain and key, and the CA that signed every task's certificate (PEM).
 * The CA chain is the identity: a peer's certificate is accepted when it
 * chains to a certificate in the ca file and is within its dates, and no
 * name in it is checked (not the host, not the CN or subjectAltName, not the
 * job or task): a certificate the CA signed may be any task of the cluster,
 * and one certificate may serve them all. So give the cluster a CA of its
 * own that signs nothing else. Each task uses its one certificate both to
 * connect and to accept: if it has an extendedKeyUsage, that must allow both
 * TLS client and server authentication (OpenSSL's default purpose checks).
 * 0, or -1 with fl_last_error() naming the flag and file OpenSSL refused. */
int fl_cluster_set_tls(fl_cluster *cluster, const char *cert, const char *key, const char *ca);

/* Secure by default on a network: a task server (fl_server_start) listens
 * on a loopback address (127.0.0.1, ::1, localhost) as it always did, but
 * where other machines may reach it (0.0.0.0, an address of the machine's
 * network) only if its cluster has a secret or TLS. Otherwise
 * fl_server_start fails (FL_FAILED_PRECONDITION) naming the task, the
 * address, --cluster_secret_file and --insecure_listen. allow true lets it
 * listen there anyway, open to anyone who can connect, with a WARNING line
 * in its log; for a network you trust (a lab's private subnet). The
 * environment's FLOWLAB_INSECURE_LISTEN=1 does the same for any program.
 * 0, or -1 for a NULL cluster. */
int fl_cluster_allow_insecure_listen(fl_cluster *cluster, bool allow);

/* The flags every program of a cluster takes for them, parsed in one place:
 *   --cluster_secret_file F   (else the environment's FLOWLAB_CLUSTER_SECRET_FILE)
 *   --tls_cert F --tls_key F --tls_ca F
 *   --insecure_listen          (a switch, no value: fl_cluster_allow_insecure_listen)
 * A program keeps an fl_cluster_security_flags, offers each flag it does
 * not know to fl_cluster_security_flag (and each argument, before looking
 * for a value, to fl_cluster_security_switch), prints
 * FL_CLUSTER_SECURITY_HELP in its --help, and once it has its cluster calls
 * fl_cluster_apply_security. */
typedef struct {
    const char *secret_file;
    const char *tls_cert, *tls_key, *tls_ca;
    bool insecure_listen;
} fl_cluster_security_flags;
#define FL_CLUSTER_SECURITY_FLAG_NAMES "--cluster_secret_file", "--tls_cert", "--tls_key", "--tls_ca"
#define FL_CLUSTER_SECURITY_HELP                                                                          \
    "  --cluster_secret_file F  a file (mode 0600) holding the cluster's shared secret; every connection\n" \
    "                        proves both ends know it (default: $FLOWLAB_CLUSTER_SECRET_FILE, else none)\n" \
    "  --tls_cert F --tls_key F --tls_ca F  TLS 1.3 on every connection: this task's certificate and\n"    \
    "                        key, and the CA that signed every task's (PEM); both ends are verified\n"    \
    "  --insecure_listen     listen on an address other machines may reach (not 127.0.0.1) with no\n"     \
    "                        secret and no TLS; without it such a task refuses to start\n"
/* true when flag is one of them (its value kept in f), false otherwise. */
bool fl_cluster_security_flag(fl_cluster_security_flags *f, const char *flag, const char *value);
/* true when arg is a switch of them, a flag without a value
 * ("--insecure_listen", "--insecure_listen=true" or "=false"), kept in f. */
bool fl_cluster_security_switch(fl_cluster_security_flags *f, const char *arg);
/* Applies the flags, and FLOWLAB_CLUSTER_SECRET_FILE when no flag gave a
 * secret, to the cluster (--insecure_listen too). 0, or -1 with
 * fl_last_error() naming the flag. */
int fl_cluster_apply_security(fl_cluster *cluster, const fl_cluster_security_flags *f);

/* Launchers (chapter 6): the cluster from the variables a launcher gives
 * each process it starts, as TensorFlow's cluster resolvers read them.
 * A launcher says only which of N ranks a process is; num_ps of them are
 * made ps tasks and the rest workers, the ps taken first as TensorFlow's
 * SlurmClusterResolver does (ranks 0..num_ps-1 are ps 0..num_ps-1, rank
 * num_ps is worker 0, ...). Tasks listen on consecutive ports per node
 * from port_base (TensorFlow uses 8888): the second task on a node gets
 * port_base + 1. NULL, with fl_last_error() naming the variable at fault,
 * when a variable is malformed or they disagree.
 *
 *   Slurm (srun): SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST
 *     ("n[1-3,7]", expanded) and SLURM_STEP_TASKS_PER_NODE ("2(x3),1": two
 *     tasks on each of the first three nodes, one on the fourth). Ranks fill
 *     the nodes in order, as Slurm's default block distribution places
 *     them (TensorFlow assumes the same; --distribution=cyclic breaks it). */
fl_cluster *fl_cluster_from_slurm(int num_ps, int port_base);
/*   Open MPI (mpirun): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
 *     OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE;
 *   MPICH (Hydra's mpiexec): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID and
 *     MPI_LOCALNRANKS, read when Open MPI's are not set.
 *   Neither says which host the other ranks run on, so every rank must be
 *   on this node (local size = size): the tasks are 127.0.0.1:port_base+rank.
 *   Across nodes, launch with srun or give TF_CONFIG. */
fl_cluster *fl_cluster_from_mpi_launcher(int num_ps, int port_base);

/* Which source fl_cluster_from_environment will read, in this order:
 *   1. "TF_CONFIG", when it is set: written on purpose for this task (it is
 *      TensorFlow's default resolver), it wins over whatever launched us.
 *   2. "Slurm", when SLURM_PROCID is set and srun started this process
 *      itself: either no MPI launcher's variables are set, or they agree
 *      with Slurm's (same rank and size, as under srun --mpi=pmix or pmi2).
 *      Slurm ahead of MPI because only Slurm's variables name the hosts.
 *   3. "Open MPI", then "MPICH", when their rank is set. An mpirun run
 *      inside a Slurm step (srun -n1 mpirun -np 3 ...) hands every rank the
 *      step's SLURM_PROCID=0 and SLURM_STEP_NUM_TASKS=1; their disagreement
 *      with OMPI_COMM_WORLD_* is how step 2 knows to leave them to mpirun.
 * NULL when none is set. A program's own flags (--ps_hosts, ...) come
 * before all of these; the labs read them first. */
const char *fl_cluster_environment_source(void);
/* The cluster from that source; NULL with fl_last_error() saying why (also
 * when there is none: "no cluster in the environment: ..."). */
fl_cluster *fl_cluster_from_environment(int num_ps, int port_base);

/* The local task: this process. */
const char *fl_cluster_job_name(const fl_cluster *cluster); /* "ps", "worker", "chief" */
int fl_cluster_task_index(const fl_cluster *cluster);
/* The chief initializes, checkpoints and logs for everyone: the "chief"
 * task if the spec has one, else worker 0. */
bool fl_cluster_is_chief(const fl_cluster *cluster);

/* Any task: 0 tasks for a job the spec does not have. */
int fl_cluster_num_tasks(const fl_cluster *cluster, const char *job);
/* NULL, or -1, when there is no such task. An IPv6 host comes without brackets. */
const char *fl_cluster_task_host(const fl_cluster *cluster, const char *job, int task);
int fl_cluster_task_port(const fl_cluster *cluster, const char *job, int task);

/* Device strings in a cluster. What a device string leaves out is the local
 * task's, as in TensorFlow: on worker 1, "/gpu:0" is "/job:worker/task:1/gpu:0"
 * and "/job:ps/task:0" is "/job:ps/task:0/cpu:0". A device string that names
 * another job must name its task. */
/* Writes the full canonical name into out; 0, or -1 when device does not
 * parse or names a task the spec does not have. */
int fl_cluster_device_name(const fl_cluster *cluster, const char *device, char *out, size_t len);
/* 1 when device is the local task's, 0 when another task's (a remote
 * device), -1 as for fl_cluster_device_name. */
int fl_cluster_device_is_local(const fl_cluster *cluster, const char *device);

/* The replica device setter (TensorFlow's tf.train.replica_device_setter):
 * a device function each worker pushes while it builds its copy of the model,
 * so that every worker's variables are the same ones, held by the ps tasks.
 *   - A Variable node goes to "/job:ps/task:K/cpu:0", K chosen by the strategy:
 *     FL_PS_ROUND_ROBIN (the default): the i-th variable placed to task i % num_ps;
 *     FL_PS_GREEDY_BY_BYTES: the task holding the fewest bytes so far (ties to
 *     the lowest index), bytes = elements x dtype size (4 for float32).
 *   - Whatever else is built goes to the worker device.
 *   - A variable's initializer (its Assign), its optimizer slots (Momentum's
 *     accumulator, Adam's m and v) and the update op are colocated with the
 *     variable by the graph, so they land on its ps task without the setter
 *     being asked (and count nothing); Adam's beta powers are colocated with
 *     the first variable updated, as TensorFlow does. The initial value the
 *     Assign takes is not: it is computed on the /cpu:0 of the worker that
 *     runs the initializer and sent to the ps (flowlab.h, before
 *     fl_get_variable).
 *   - A cluster with no ps tasks sends every node to the worker device.
 *     (TensorFlow's setter is then no device function at all.)
 *   - An inner device scope wins: the innermost scope decides in this runtime,
 *     so a node built under fl_device_scope_push inside the setter keeps that
 *     device as written. TensorFlow instead merges the setter's fields into
 *     what the inner scope left out (an inner "/gpu:0" under the setter puts a
 *     variable on "/job:ps/task:K/gpu:0"); flowlab does not merge. An inner
 *     device function that returns NULL leaves the choice to the setter.
 * The setter only places nodes: it needs no server, and works on any graph.
 * Its counts cover every variable it has placed, in any graph it was pushed
 * on, so use one setter per graph to read a graph's load. */
typedef enum { FL_PS_ROUND_ROBIN = 0, FL_PS_GREEDY_BY_BYTES = 1 } fl_ps_strategy;
typedef struct fl_replica_device_setter fl_replica_device_setter;

/* worker_device: where everything but the variables goes, completed as
 * fl_cluster_device_name does ("/gpu:0" on worker 1 is
 * "/job:worker/task:1/gpu:0"); NULL or "" for the local task's host,
 * "/job:<job>/task:<i>/cpu:0". The cluster may be freed afterwards. NULL,
 * with fl_last_error() saying why, for a NULL cluster, an unknown strategy
 * or a worker device that does not parse or names a task the spec lacks. */
fl_replica_device_setter *fl_replica_device_setter_new(const fl_cluster *cluster, const char *worker_device,
                                                       fl_ps_strategy strategy);
/* Pushes the setter as a device function on g (pop it with fl_device_pop).
 * The setter must outlive its use in g. 0, or -1 with the graph's error set. */
int fl_replica_device_setter_push(fl_graph *g, fl_replica_device_setter *setter);
void fl_replica_device_setter_free(fl_replica_device_setter *setter);

/* What the setter decided, for teaching and tests. */
int fl_replica_device_setter_num_ps(const fl_replica_device_setter *setter);
const char *fl_replica_device_setter_worker_device(const fl_replica_device_setter *setter);
/* ps task ps_task's load: the bytes and the number of variables placed on it
 * (either pointer may be NULL). 0, or -1 when there is no such ps task. */
int fl_replica_device_setter_ps_bytes(const fl_replica_device_setter *setter, int ps_task, int64_t *bytes,
                                      int *variables);

/* Chapter 4's SyncReplicasOptimizer: a new optimizer making opt's updates
 * synchronous on the ps tasks, as TensorFlow's graph does: an accumulator
 * per variable on its ps averages the first replicas_to_aggregate gradients
 * for a step and drops any computed against an older step; the chief's
 * train op takes the averages, applies them with opt's updates and
 * advances the global step once per step, and each worker's train op waits
 * for it (the "token"), so the next step reads the updated variables.
 * total_num_replicas >= replicas_to_aggregate: the extra workers are
 * backups. Use it with every worker, pass global_step to
 * minimize/apply_gradients; such a graph runs only in a cluster's worker
 * (chapter 4). NULL, with fl_last_error() saying
 * why, for counts out of range. Free it with fl_optimizer_free.
 * Ownership: the new optimizer copies opt's kind and settings (the learning
 * rate, momentum, Adam's betas and epsilon) as they are at this call and
 * keeps no pointer to it. opt stays the caller's, to free whenever it likes
 * (at once, too); a later fl_optimizer_set_learning_rate on opt does not
 * reach the new one: set a schedule's rate on the optimizer that built the
 * train op. */
fl_optimizer *fl_sync_replicas_optimizer(const fl_optimizer *opt, int replicas_to_aggregate,
                                         int total_num_replicas);

/* Servers: every task runs one, on an event-loop thread of its own, at its
 * address in the cluster spec (it listens there only). A ps task's server
 * holds the variables and their optimizer slots: workers assign them once,
 * pull their values and push updates, which it applies with the host's
 * kernels, so a ps needs no model code. A server survives any bytes a
 * client sends: a bad frame gets an error frame and a closed connection,
 * logged with the peer and the reason, and everyone else is still served. */
typedef struct fl_server fl_server;

/* Every limit has a flag of the same name (fl_server_option_flag) and is
 * named in the error or log line of a client that reaches it; 0 is its default. */
typedef struct {
    void *log;              /* a FILE * for the server's log lines (NULL: stderr) */
    /* Before authentication: a client gets this long from connecting to
     * HELLO_OK (TLS handshake included), however often it sends (0: 10 s). */
    double hello_timeout_s;
    int max_unauthenticated;              /* connections not yet welcomed, in all (0: 256) */
    int max_unauthenticated_per_address;  /* ... from one address (0: 64) */
    /* After: what one connection may make the server hold. */
    uint64_t max_unread_reply_bytes;  /* replies not yet read: reading it pauses (0: 256 MiB) */
    uint64_t max_bytes_behind_run;    /* requests buffered behind its partition run (0: 128 MiB) */
    int max_partitions;               /* partitions registered (0: 64) */
    /* Values sent here (SEND_TENSOR) that no run has taken yet, each
     * counted with 512 bytes of bookkeeping: those one connection sent (0:
     * 256 MiB; they go when it closes, except a running step's), and all
     * (0: 1 GiB). One waits at most FLOWLAB_TASK_DEADLINE seconds. */
    uint64_t max_waiting_value_bytes;
    uint64_t max_waiting_value_bytes_total;
    int max_variables;                /* variables a ps holds in all (0: 100000) */
} fl_server_options;

/* The flags of fl_server_options, for a program's --help. */
#define FL_SERVER_OPTIONS_HELP                                                                                  \
    "  --hello_timeout_s S            seconds from connecting to the end of the handshake (10)\n"               \
    "  --max_unauthenticated N        connections not yet authenticated, in all (256)\n"                        \
    "  --max_unauthenticated_per_address N   ... from one address (64)\n"                                       \
    "  --max_unread_reply_bytes N     replies queued to one connection before it is read again (256 MiB)\n"    \
    "  --max_bytes_behind_run N       bytes one connection may send behind its partition run (128 MiB)\n"       \
    "  --max_partitions N             partitions one connection may register (64)\n"                            \
    "  --max_waiting_value_bytes N    values one connection sent that no run has taken yet (256 MiB)\n"       \
    "  --max_waiting_value_bytes_total N   ... from all connections (1 GiB)\n"                                  \
    "  --max_variables N              variables a ps holds (100000)\n"

/* Their names, for a program's table of flags that take a value. */
#define FL_SERVER_OPTION_NAMES                                                                                  \
    "--hello_timeout_s", "--max_unauthenticated", "--max_unauthenticated_per_address",                         \
        "--max_unread_reply_bytes", "--max_bytes_behind_run", "--max_partitions", "--max_waiting_value_bytes",   \
        "--max_waiting_value_bytes_total", "--max_variables"

/* Reads one of those flags into o: 1 when flag is one (value checked), 0
 * when it is not, -1 with fl_last_error() naming the flag for a bad value. */
int fl_server_option_flag(fl_server_options *o, const char *flag, const char *value);

typedef struct {
    uint64_t connections;    /* accepted so far */
    uint64_t frames;         /* well-formed requests served */
    uint64_t bad_frames;     /* connections closed for bad input */
    uint64_t bytes_in, bytes_out;
    uint64_t variable_bytes; /* held in variables (ps) */
    int variables;
    int goodbyes;            /* workers and chiefs that have finished */
    /* Synchronous updates dropped here as stale (chapter 4), in two units:
     * workers' steps that lost at least one update here (one per worker and
     * step), and the updates lost, one per variable a step updates. */
    uint64_t stale_steps, stale_variable_updates;
    /* In-graph replication across tasks: steps of partitions run here, and
     * the values other tasks sent this one for them (SEND_TENSOR). */
    uint64_t partition_steps;
    /* Run signatures its partitions resolved (names into nodes, the feeds'
     * host tensors): one per new signature, none for a warm step. */
    uint64_t partition_signatures;
    uint64_t values_received, value_bytes_received;
    uint64_t waiting_value_bytes; /* charged now for values no run has taken (--max_waiting_value_bytes) */
    uint64_t refused;        /* connections that never proved they know the cluster's secret,
                              * or whose TLS certificate was refused */
} fl_server_stats;

/* Starts the local task's server. NULL when it cannot listen (fl_last_error
 * names the task and the port: "port 2222 of /job:ps/task:0 is already in
 * use ..."). The cluster must outlive the server. A ps task must run one. A
 * worker in between-graph training needs none: it opens its own connections
 * to the ps tasks, and nothing connects to it (chapter 3's lab starts one on
 * every task anyway, as TensorFlow does, which also claims its port of the
 * spec). */
fl_server *fl_server_start(const fl_cluster *cluster, const fl_server_options *options);
/* Waits until every worker (and chief) of the cluster has said goodbye, as a
 * ps task does before it exits (a task server of in-graph replication: until
 * its client has), or until timeout_s seconds pass (0: no limit). A worker
 * that said no goodbye but has been neither connected nor heard from for
 * longer than FLOWLAB_TASK_DEADLINE since the server started or it last
 * disconnected counts as gone: a worker that loses its ps retries for that
 * long and gives up, so it has finished or given up (a ps restarted after a
 * worker said goodbye to the old one, workers that gave up, a worker refused
 * at the handshake). Start the workers within that deadline of their ps.
 * Every 10 s (FLOWLAB_JOIN_LOG_EVERY_S) while one of them is not connected,
 * the wait logs the tasks it still waits for; its end names any counted as
 * gone. 0 when all have
 * finished or gone, 1 on the timeout, -1 for a NULL server. */
int fl_server_join(fl_server *server, double timeout_s);
void fl_server_get_stats(fl_server *server, fl_server_stats *out);
/* A worker that has finished says so to every ps task of the cluster (also
 * those it never used), so that they can exit, and closes its connections.
 * The goodbyes go at once, each over the live connection or a new one tried
 * for 2 s (at most FLOWLAB_TASK_DEADLINE): -1 naming a task not reached.
 * fl_monitored_session_close does it for a worker: call it yourself only in
 * a program without a monitored session. */
int fl_cluster_say_goodbye(const fl_cluster *cluster);
/* Removed: fl_session_options.cluster takes the cluster itself
 * (.cluster = cluster), task or client alike; the table these returned is
 * internal now. A program that still calls them stops at compile time with
 * this message (gcc 12 and later, clang), and links nowhere elsewhere. */
#if defined(__has_attribute)
#if __has_attribute(unavailable)
#define FL_REMOVED_PLUGIN_CALL                                                                             \
    __attribute__((unavailable("removed: fl_session_options.cluster now takes the cluster itself: write "  \
                               "`.cluster = cluster` (a task's or a client's cluster alike); see "          \
                               "flowlab_cluster.h")))
#endif
#endif
#ifndef FL_REMOVED_PLUGIN_CALL
#define FL_REMOVED_PLUGIN_CALL
#endif
const void *fl_cluster_session_plugin(const fl_cluster *cluster) FL_REMOVED_PLUGIN_CALL;
const void *fl_cluster_client_plugin(const fl_cluster *cluster) FL_REMOVED_PLUGIN_CALL;
/* Bytes this process has sent to and received from the cluster's other
 * tasks so far (each cluster counts its own connections, and what its
 * task's server received). */
void fl_remote_traffic(const fl_cluster *cluster, uint64_t *sent, uint64_t *received);
/* Synchronous updates (chapter 4) this worker sent through this cluster that
 * the ps tasks dropped as stale (computed against a step the others had
 * finished), in steps: this worker's steps that lost at least one update,
 * however many ps tasks dropped them... */
uint64_t fl_remote_stale_steps(const fl_cluster *cluster);
/* ... and in variable updates: one per variable a step updates (Adam's
 * beta powers and the global step are variables too), so a step of 7 such
 * variables that came too late counts 1 step and 7 variable updates. */
uint64_t fl_remote_stale_variable_updates(const fl_cluster *cluster);
/* After a run failed because a task was lost (killed, restarted): connects
 * again to every lost task, waiting for it with a line every few seconds up
 * to FLOWLAB_TASK_DEADLINE. The number of tasks found lost since the last
 * call, reconnected here or already by this task's own pieces and masters
 * (0: none was lost), or -1, and fl_last_error() names the task that did
 * not come back. */
int fl_cluster_reconnect(const fl_cluster *cluster);
/* The same for one task ("/job:ps/task:1"); 0 when this process has not
 * talked to it through this cluster. */
int fl_remote_task_traffic(const fl_cluster *cluster, const char *task, uint64_t *sent, uint64_t *received);
/* Stops serving, closes every connection and frees the server. */
void fl_server_stop(fl_server *server);

#endif
