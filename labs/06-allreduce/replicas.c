/* replicas.c: the ranks' copies of the variables, kept identical (see
 * replicas.h): reading and writing them through a session, broadcasting
 * rank 0's, summing a buffer over the ranks, checksumming them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replicas.h"
#include "ring_allreduce.h"

static char last_error[512];

const char *replicas_error(void)
{
    return last_error;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return -1;
}

static int mpi_failed(const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return fail("%s: %.*s", what, len, text);
}

/* float32 and int32 elements are 4 bytes each. */
static size_t tensor_bytes(const fl_tensor *t)
{
    return (size_t)fl_shape_size(t->shape) * 4;
}

int variable_io_build(fl_graph *g, variable_io *io)
{
    io->count = fl_global_variables(g, io->variables, MAX_REPLICA_VARIABLES);
    if (io->count > MAX_REPLICA_VARIABLES)
        return fail("the graph has %d variables; raise MAX_REPLICA_VARIABLES", io->count);
    fl_node *assigns[MAX_REPLICA_VARIABLES];
    fl_name_scope_push(g, "replicas");
    for (int i = 0; i < io->count; i++) {
        fl_node *v = io->variables[i];
        io->values[i] = fl_placeholder(g, fl_node_dtype(v), fl_node_shape(v), "value");
        assigns[i] = fl_assign(g, v, io->values[i], "assign");
    }
    io->assign_all = fl_group(g, assigns, io->count, "assign_all");
    fl_name_scope_pop(g);
    return fl_graph_error(g) ? fail("%s", fl_graph_error(g)) : 0;
}

/* Fetches every variable's value into values[] (new host tensors). */
static int read_variables(fl_session *s, const variable_io *io, fl_tensor **values)
{
    if (fl_session_run(s, NULL, 0, io->variables, io->count, values, NULL, 0) != 0)
        return fail("reading the variables: %s", fl_session_error(s));
    return 0;
}

static void free_tensors(fl_tensor **tensors, int n)
{
    for (int i = 0; i < n; i++)
        fl_tensor_free(tensors[i]);
}

int broadcast_variables(fl_session *s, const variable_io *io, int root, MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    /* Every rank reads its own values first: the tensors then have the
     * right shapes to receive root's bytes. */
    fl_tensor *values[MAX_REPLICA_VARIABLES] = {0};
    if (read_variables(s, io, values) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < io->count && rc == 0; i++) {
        int code = MPI_Bcast(values[i]->data, (int)tensor_bytes(values[i]), MPI_BYTE, root, comm);
        if (code != MPI_SUCCESS)
            rc = mpi_failed("broadcasting the variables", code);
    }
    if (rc == 0 && rank != root) {
        fl_feed feeds[MAX_REPLICA_VARIABLES];
        for (int i = 0; i < io->count; i++)
            feeds[i] = (fl_feed){io->values[i], values[i]};
        if (fl_session_run(s, feeds, io->count, NULL, 0, NULL, &io->assign_all, 1) != 0)
            rc = fail("writing the broadcast variables: %s", fl_session_error(s));
    }
    free_tensors(values, io->count);
    return rc;
}

/* Each way to sum: its --allreduce value and what messages call it. */
static const struct {
    const char *flag, *name;
    allreduce_algorithm algorithm;
} algorithms[] = {
    {"mpi", "MPI_Allreduce", ALLREDUCE_MPI},
    {"ring", "the ring allreduce", ALLREDUCE_RING},
    {"shared", "shared memory (MPI_Win_allocate_shared)", ALLREDUCE_SHARED},
    {"nccl", "ncclAllReduce", ALLREDUCE_NCCL},
};
enum { ALGORITHMS = sizeof algorithms / sizeof algorithms[0] };

const char *allreduce_algorithm_name(allreduce_algorithm algorithm)
{
    for (int k = 0; k < ALGORITHMS; k++)
        if (algorithms[k].algorithm == algorithm)
            return algorithms[k].name;
    return "MPI_Allreduce";
}

bool allreduce_algorithm_parse(const char *flag_value, allreduce_algorithm *out)
{
    for (int k = 0; k < ALGORITHMS; k++)
        if (strcmp(flag_value, algorithms[k].flag) == 0) {
            *out = algorithms[k].algorithm;
            return true;
        }
    return false;
}

// [book:sum_across_ranks]
int sum_across_ranks(float *buffer, size_t count, allreduce_algorithm algorithm, MPI_Comm comm)
{
    if (algorithm == ALLREDUCE_NCCL) /* its buffers are GPU memory: reducer.c calls nccl_average */
        return fail("summing the gradients: NCCL's buffers are on the GPU, not in host memory");
    if (algorithm == ALLREDUCE_SHARED) /* its buffers are a window: reducer.c calls shared_allreduce_sum */
        return fail("summing the gradients: --allreduce shared sums a shared window's buffers, not one buffer");
    int code = algorithm == ALLREDUCE_RING
                   ? ring_allreduce_sum(buffer, count, comm)
                   : MPI_Allreduce(MPI_IN_PLACE, buffer, (int)count, MPI_FLOAT, MPI_SUM, comm);
    return code == MPI_SUCCESS ? 0 : mpi_failed("summing the gradients", code);
}
// [end:sum_across_ranks]

int variables_checksum(fl_session *s, const variable_io *io, uint64_t *out)
{
    fl_tensor *values[MAX_REPLICA_VARIABLES] = {0};
    if (read_variables(s, io, values) != 0)
        return -1;
    uint64_t hash = 14695981039346656037ull; /* FNV-1a's offset basis */
    for (int i = 0; i < io->count; i++) {
        const unsigned char *bytes = values[i]->data;
        size_t size = tensor_bytes(values[i]);
        for (size_t k = 0; k < size; k++)
            hash = (hash ^ bytes[k]) * 1099511628211ull; /* FNV's 64-bit prime */
    }
    free_tensors(values, io->count);
    *out = hash;
    return 0;
}

void print_checksums_in_rank_order(uint64_t mine, MPI_Comm comm)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    uint64_t all[size];
    MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, comm);
    if (rank != 0)
        return;
    for (int r = 0; r < size; r++)
        printf("rank %d of %d: variables checksum %016llx\n", r, size, (unsigned long long)all[r]);
    fflush(stdout);
}
