/* make_corpus.c: writes fuzz_wire's seed corpus, one valid frame of each type per file,
 * plus one file holding a whole short conversation, into the folder given, and two
 * hostile frames no encoder writes (a name with a NUL byte, a field given twice).
 * Generated with the encoders rather than committed, so the seeds follow the format. */
#include <stdio.h>
#include <stdlib.h>

#include "distributed_runtime/transport/wire.h"

static int write_seed(const char *dir, const char *name, const fl_wire_buf *buf)
{
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf->data, 1, buf->len, f) != buf->len) {
        fprintf(stderr, "make_corpus: cannot write %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

/* IS_INITIALIZED frames by hand: header (version 2, type 19, request 2, body
 * length 5 or 6, no tail), then the name field (tag 0x0a) with a NUL inside,
 * or twice. */
static const unsigned char NUL_NAME[] = {'F', 'L', 'W', 'P', 2, 19, 0, 0, 0, 0, 0, 2, 0, 0, 0, 5,
                                         0, 0, 0, 0, 0x0a, 3, 'w', 0, 'x'};
static const unsigned char TWICE[] = {'F', 'L', 'W', 'P', 2, 19, 0, 0, 0, 0, 0, 2, 0, 0, 0, 6,
                                      0, 0, 0, 0, 0x0a, 1, 'a', 0x0a, 1, 'b'};

static int write_hostile(const char *dir)
{
    fl_wire_buf nul = {.data = (unsigned char *)NUL_NAME, .len = sizeof NUL_NAME};
    fl_wire_buf twice = {.data = (unsigned char *)TWICE, .len = sizeof TWICE};
    return write_seed(dir, "nul-in-name", &nul) != 0 || write_seed(dir, "field-twice", &twice) != 0 ? -1 : 0;
}

static int put_run_partition(fl_wire_buf *buf, const fl_tensor *x)
{
    const char *feeds[] = {"x"}, *fetches[] = {"loss"}, *targets[] = {"train"};
    const char *sends[] = {"_send/g/to/ps/0"};
    const fl_tensor *values[] = {x};
    fl_wire_name_list lists[2] = {{1, fetches}, {2, (const char *[]){targets[0], sends[0]}}};
    return fl_wire_put_run_partition(buf, 11, 1, 7, FL_WIRE_RUN_TRACE, 1, feeds, values, lists);
}

/* Appends one frame of every type to buf; a tensor frame per dtype; the
 * partitions' frames (6-13); the handshake of a cluster with a secret
 * (14-16), which follows HELLO (0) on a real connection. */
static int put_all(fl_wire_buf *buf, int which)
{
    const float w[6] = {1, -2, 0.5f, 3, 4, -5};
    const int32_t one[1] = {1};
    fl_tensor weights = {.dtype = FL_FLOAT32, .shape = {2, {2, 3}}, .data = (void *)w};
    fl_tensor step = {.dtype = FL_INT32, .shape = {0, {0}}, .data = (void *)one};
    const unsigned char nonce[FL_WIRE_PROOF_BYTES] = {1, 2, 3}, proof[FL_WIRE_PROOF_BYTES] = {0xa5, 0x5a};
    switch (which) {
    case 0: return fl_wire_put_hello(buf, 1, "worker", 1);
    case 1: return fl_wire_put_hello_ok(buf, 1, "ps", 0);
    case 2: return fl_wire_put_is_initialized(buf, 2, "dense/kernel");
    case 3: return fl_wire_put_init_done(buf, 2, true);
    case 4: return fl_wire_put_goodbye(buf, 7);
    case 5: return fl_wire_put_ok(buf, 7);
    case 6: return fl_wire_put_register_partition(buf, 10, "\x08\x04\x12\x02ps", 6); /* format 4, job ps */
    case 7: return fl_wire_put_partition_registered(buf, 10, 1);
    case 8: return put_run_partition(buf, &weights);
    case 9: {
        const fl_tensor *values[2] = {&weights, &step};
        fl_wire_trace_event ops[2] = {{"tower_0/MatMul", "MatMul", "/job:worker/task:0/cpu:0", 1000, 250000},
                                      {"train/update", "ApplyAdam", "/job:worker/task:0/cpu:0", 260000, 4000}};
        fl_wire_device_peak peaks[1] = {{"/job:worker/task:0/cpu:0", 52428800}};
        fl_wire_step_trace trace = {.step_ns = 300000, .count = 2, .events = ops, .npeaks = 1, .peaks = peaks};
        return fl_wire_put_partition_done(buf, 11, &trace, 2, values);
    }
    case 10: return fl_wire_put_send_tensor(buf, 12, 7, "g:/job:worker/task:0->/job:ps/task:0", &weights);
    case 11: return fl_wire_put_send_tensor(buf, 13, 7, "global_step:/job:ps/task:0->/job:worker/task:0", &step);
    case 12: return fl_wire_put_number(buf, FL_WIRE_ABORT_STEP, 13, 7);
    case 13: return fl_wire_put_number(buf, FL_WIRE_DEREGISTER_PARTITION, 14, 1);
    case 14: return fl_wire_put_challenge(buf, 1, nonce);
    case 15: return fl_wire_put_proof(buf, 1, proof, nonce);
    case 16: return fl_wire_put_server_proof(buf, 1, proof);
    default: return fl_wire_put_error(buf, 8, FL_WIRE_E_UNKNOWN_VARIABLE, "no variable 'x'");
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    fl_wire_buf all = {0};
    for (int i = 0; i <= 17; i++) {
        fl_wire_buf one = {0};
        char name[16];
        snprintf(name, sizeof name, "%02d", i);
        if (put_all(&one, i) != 0 || put_all(&all, i) != 0) {
            fprintf(stderr, "make_corpus: %s\n", one.error[0] ? one.error : all.error);
            return 1;
        }
        if (write_seed(argv[1], name, &one) != 0)
            return 1;
        fl_wire_buf_free(&one);
    }
    int rc = write_seed(argv[1], "conversation", &all) != 0 || write_hostile(argv[1]) != 0;
    fl_wire_buf_free(&all);
    return rc == 0 ? 0 : 1;
}
