/* cost_model.h: the alpha-beta model of one synchronous data-parallel step,
 * for ring allreduce and for parameter servers, so that the two measured
 * processes of this chapter can say what 512 workers on a cluster would do.
 *
 * A message of b bytes over one link costs alpha + b / bandwidth: alpha is
 * the fixed cost of a message (latency, software), bandwidth the bytes per
 * second a link carries. What the model assumes:
 *   - every link is full duplex: a worker sends and receives at the same
 *     time, each direction at the full bandwidth;
 *   - each worker has a link of its own (one worker per machine), and each
 *     parameter-server shard has a link of its own too, on a machine of its
 *     own; the shards split the variables evenly;
 *   - the network core never congests: only the links at the ends limit;
 *   - compute is the same on every worker at every N (weak scaling: each
 *     worker keeps its batch), and no worker straggles;
 *   - by default communication starts after the whole backward pass; with
 *     overlap f (0 to 1) it may start once the first 1 - f of the compute
 *     is done, as Horovod's reductions during the backward pass do.
 *
 * Ring allreduce over N workers: 2(N-1) messages each way (reduce-scatter,
 * then all-gather), each of bytes/N, so
 *   time = 2(N-1) alpha + 2(N-1)/N * bytes / bandwidth.
 * M parameter-server shards: each worker pushes its gradients, then pulls
 * the variables (bytes one way, then bytes the other, over its own link:
 * the pull waits for the push, so 2 bytes in all); each shard receives and
 * sends N * bytes / M, both directions at once, as different workers push
 * and pull; the slower end limits, and the push and the pull are two
 * messages in a row:
 *   time = max(2 bytes, N * bytes / M) / bandwidth + 2 alpha.
 * Chapter 6 held both against the labs on links shaped to 1 and 10 Gbit/s
 * (make figures-links); the worker's 2 bytes came from those runs.
 *
 * Scaling efficiency is throughput at N over N times the throughput of one
 * worker that talks to no one: compute / step(N). */
#ifndef LABS_06_COST_MODEL_H
#define LABS_06_COST_MODEL_H

/* A network: the cost of a message and the bytes per second of a link. */
typedef struct {
    double alpha_s;       /* seconds per message */
    double bandwidth_Bps; /* bytes per second, each direction */
} cost_network;

/* One step of one worker: its compute and the bytes of its gradients. */
typedef struct {
    double compute_s;     /* forward, backward and update of one worker's batch */
    double gradient_bytes;
    double overlap;       /* share of compute that communication may hide behind, 0..1 */
} cost_workload;

/* Seconds for N workers to sum bytes with a ring allreduce; 0 for N = 1. */
double ring_allreduce_seconds(int workers, double bytes, cost_network net);

/* Seconds for N workers to push bytes of gradients to M shards and pull
 * bytes of variables back. A single worker still talks to its shards. */
double parameter_server_seconds(int workers, int shards, double bytes, cost_network net);

/* The same when each pull waits for every push (synchronous replicas, and
 * in-graph replication's one step): a shard's two directions take turns
 * instead of working at once, so its bytes count twice:
 *   time = 2 max(bytes, N * bytes / M) / bandwidth + 2 alpha. */
double parameter_server_sync_seconds(int workers, int shards, double bytes, cost_network net);

/* A step: compute, then communication that takes comm_s, of which up to
 * overlap * compute is hidden behind the end of the backward pass. */
double step_seconds(cost_workload w, double comm_s);

/* Step time with ring allreduce / with M parameter-server shards. */
double ring_step_seconds(int workers, cost_workload w, cost_network net);
double parameter_server_step_seconds(int workers, int shards, cost_workload w, cost_network net);

/* Throughput at N over N times one worker's alone: compute_s / step_s. */
double scaling_efficiency(cost_workload w, double step_s);

/* Images per second of the whole job: N workers of batch images each. */
double job_images_per_second(int workers, int batch, double step_s);

/* Fits the model to two timings of one allreduce on two workers: a tiny
 * message (time_small_s of small_bytes) and a large one (time_large_s of
 * large_bytes). On two workers the ring costs 2 alpha + bytes / bandwidth,
 * so two points give both. Returns 0, or -1 when the timings cannot be a
 * network (the large message not slower than the small one). */
int fit_two_worker_allreduce(double small_bytes, double time_small_s, double large_bytes,
                             double time_large_s, cost_network *out);

/* Chapter 1's gradient bytes: one float32 per element of its trainable
 * variables, counted from the model's graph (labs/common/model.h), so the
 * number follows the model: 3,274,634 floats, 13,098,536 bytes. Returns -1
 * if the graph cannot be built. */
double chapter1_gradient_bytes(void);

#endif
