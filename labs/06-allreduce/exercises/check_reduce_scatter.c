/* check_reduce_scatter.c: checks exercise reduce-scatter. Run alone (as
 * `make exercises` runs it), it starts itself under `mpirun -np 2` and then
 * `-np 3` and prints one line; started by mpirun, it is one rank of the
 * check. Each rank sums buffers of many sizes with your reduce-scatter and
 * the lab's real all-gather, and compares with MPI_Allreduce. The numbers
 * are small integers, so every order of addition gives the same bits.
 * While your function runs, the MPI calls it makes are counted through
 * MPI's profiling interface (each MPI_ function below calls its PMPI_
 * twin): what it sends, to whom, and any collective it tries. */
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring_exercise.h"
#include "../ring_allreduce.c" /* the lab's all_gather, static there */
#include "../../common/check.h"

#define RANKS_TIMEOUT_S 60

/* What the exercise's function did, counted while it runs. */
static struct {
    bool inside;
    size_t floats_sent;
    int wrong_peer;             /* a rank it sent to other than its right neighbour, or -1 */
    const char *collective;     /* a collective it called, or NULL */
} seen = {false, 0, -1, NULL};

static void count_send(int count, MPI_Datatype type, int dest, MPI_Comm comm)
{
    if (!seen.inside)
        return;
    int size, rank, ranks;
    MPI_Type_size(type, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    seen.floats_sent += (size_t)count * (size_t)size / sizeof(float);
    if (dest != (rank + 1) % ranks)
        seen.wrong_peer = dest;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    count_send(count, type, dest, comm);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    count_send(count, type, dest, comm);
    return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    count_send(count, type, dest, comm);
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    count_send(sendcount, sendtype, dest, comm);
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                         comm, status);
}

/* The collectives that would do the exercise's work for it. */
int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    seen.collective = seen.inside ? "MPI_Allreduce" : seen.collective;
    return PMPI_Allreduce(in, out, count, type, op, comm);
}

int MPI_Reduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    seen.collective = seen.inside ? "MPI_Reduce" : seen.collective;
    return PMPI_Reduce(in, out, count, type, op, root, comm);
}

int MPI_Reduce_scatter(const void *in, void *out, const int counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    seen.collective = seen.inside ? "MPI_Reduce_scatter" : seen.collective;
    return PMPI_Reduce_scatter(in, out, counts, type, op, comm);
}

int MPI_Reduce_scatter_block(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    seen.collective = seen.inside ? "MPI_Reduce_scatter_block" : seen.collective;
    return PMPI_Reduce_scatter_block(in, out, count, type, op, comm);
}

/* Small integers, different on every rank: sums are exact in any order. */
static float value_at(size_t i, int rank)
{
    return (float)((int)((i * 7 + (size_t)rank * 13) % 17) - 8);
}

/* The first element of data[from..to) that differs from want, or to. */
static size_t first_difference(const float *data, const float *want, size_t from, size_t to)
{
    while (from < to && data[from] == want[from])
        from++;
    return from;
}

/* Runs the exercise on one buffer; 0, or -1 with why. */
static int reduce_scatter_once(float *data, size_t count, const float *sums, int rank, int n, char *why,
                               size_t len)
{
    float *scratch = malloc((count / (size_t)n + 1) * sizeof *scratch);
    seen.inside = true, seen.floats_sent = 0, seen.wrong_peer = -1, seen.collective = NULL;
    int rc = my_reduce_scatter(data, count, scratch, MPI_COMM_WORLD);
    seen.inside = false;
    free(scratch);
    size_t mine = ring_chunk_start(count, n, (rank + 1) % n), end = ring_chunk_start(count, n, (rank + 1) % n + 1);
    size_t at = first_difference(data, sums, mine, end);
    size_t most = (size_t)(n - 1) * (count / (size_t)n + 1);
    if (rc == -2)
        return snprintf(why, len, "not implemented yet (my_reduce_scatter returned -2)"), -1;
    if (rc != MPI_SUCCESS)
        return snprintf(why, len, "my_reduce_scatter returned %d on rank %d", rc, rank), -1;
    if (seen.collective)
        return snprintf(why, len, "it called %s: write the ring with point-to-point messages (MPI_Sendrecv)",
                        seen.collective), -1;
    if (seen.wrong_peer >= 0)
        return snprintf(why, len, "rank %d sent to rank %d: in a ring each rank sends only to its right "
                        "neighbour, rank %d", rank, seen.wrong_peer, (rank + 1) % n), -1;
    if (seen.floats_sent > most)
        return snprintf(why, len, "rank %d sent %zu floats for a buffer of %zu on %d ranks; a reduce-scatter "
                        "needs N-1 chunks, (N-1)/N of the buffer (at most %zu floats here)", rank,
                        seen.floats_sent, count, n, most), -1;
    if (at < end)
        return snprintf(why, len, "on %d ranks, after the reduce-scatter rank %d's chunk %d (elements %zu to %zu "
                        "of %zu) must hold the sum over all ranks: element %zu is %g, the sum is %g", n, rank,
                        (rank + 1) % n, mine, end, count, at, data[at], sums[at]), -1;
    return 0;
}

/* Every rank learns the lowest rank that found a problem (n: none); that
 * rank prints it, so each failure is told once. */
static bool all_agree(int problem, const char *why, int rank, int n)
{
    int first = problem ? rank : n;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == rank)
        printf("FAIL %s\n", why);
    fflush(stdout);
    return first == n;
}

/* One size: the reduce-scatter, then the real all-gather; true when both
 * leave the expected sums on every rank. */
static bool check_size(size_t count, int rank, int n)
{
    float *data = malloc((count ? count : 1) * sizeof *data), *sums = malloc((count ? count : 1) * sizeof *sums);
    for (size_t i = 0; i < count; i++)
        data[i] = sums[i] = value_at(i, rank);
    MPI_Allreduce(MPI_IN_PLACE, sums, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    char why[512] = "";
    bool good = all_agree(reduce_scatter_once(data, count, sums, rank, n, why, sizeof why) != 0, why, rank, n);
    if (good) {
        int rc = all_gather(data, count, rank, n, MPI_COMM_WORLD);
        size_t at = first_difference(data, sums, 0, count);
        snprintf(why, sizeof why, "on %d ranks, after the lab's all-gather rank %d's element %zu of %zu is %g, the "
                 "sum is %g: was every rank's chunk rank+1 finished?", n, rank, at, count,
                 at < count ? data[at] : 0.0f, at < count ? sums[at] : 0.0f);
        good = all_agree(rc != MPI_SUCCESS || at < count, why, rank, n);
    }
    free(data);
    free(sums);
    return good;
}

/* One rank of the check, under mpirun: prints "OK ..." from rank 0, or one
 * FAIL line from the lowest rank that found a problem. */
static int run_as_rank(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Empty, fewer elements than ranks, N dividing or not, 256 KiB. */
    static const size_t sizes[] = {0, 1, 2, 3, 5, 7, 64, 1000, 1001, 65537};
    bool good = true;
    for (size_t k = 0; good && k < sizeof sizes / sizeof sizes[0]; k++)
        good = check_size(sizes[k], rank, n);
    if (good && rank == 0)
        printf("OK on %d ranks\n", n);
    MPI_Finalize();
    return 0;
}

/* Starts the check on `ranks` ranks and fails, naming the exercise file,
 * unless every rank agrees that it passed. */
static void run_ranks(const char *self, int ranks)
{
    char cmd[1400], out[8192] = "";
    /* --oversubscribe: 3 ranks on a 2-core machine. LeakSanitizer off (a
     * SANITIZE=1 build): Open MPI never frees some of its own memory. */
    snprintf(cmd, sizeof cmd, "timeout %d mpirun --oversubscribe -np %d -x ASAN_OPTIONS=detect_leaks=0 '%s' 2>&1",
             RANKS_TIMEOUT_S, ranks, self);
    FILE *p = popen(cmd, "r");
    size_t used = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[used] = '\0';
    int status = p ? pclose(p) : -1;
    int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const char *failed = strstr(out, "FAIL ");
    if (failed)
        fail("%.*s", (int)strcspn(failed + 5, "\n"), failed + 5);
    if (code == 124)
        fail("on %d ranks it had not finished after %d s: does every rank send and receive at each step "
             "(MPI_Sendrecv), and do all ranks take the same number of steps?", ranks, RANKS_TIMEOUT_S);
    if (code != 0 || !strstr(out, "OK on "))
        fail("mpirun -np %d exited with status %d: %.300s", ranks, code, out);
}

int main(int argc, char **argv)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE"))
        return run_as_rank(argc, argv);
    check_start("reduce-scatter", "labs/06-allreduce/exercises/reduce_scatter.c");
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        fail("cannot find this program's own path (/proc/self/exe)");
    self[len] = '\0';
    if (system("command -v mpirun >/dev/null 2>&1") != 0)
        fail("mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)");
    if (geteuid() == 0) { /* Open MPI refuses to start as root without both */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    run_ranks(self, 2);
    run_ranks(self, 3);
    pass();
}
