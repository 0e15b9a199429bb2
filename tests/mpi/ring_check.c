/* ring_check.c: checks chapter 6's ring allreduce against MPI_Allreduce, run
 * by tests/test_lab06.c under `mpirun -np N` (N = 1, 2, 3). For each size,
 * including 0, sizes below N and sizes N does not divide, every rank fills a
 * buffer with its own numbers, sums it both ways and compares. Rank 0 prints
 * "PASS size S: ..." or "FAIL size S: ..." per size; exits 0 when all pass.
 *
 * The tolerance: each element is a sum of N floats, added by the ring in
 * another order than by MPI_Allreduce. Two orders of the same N-term float
 * sum differ by at most (N-1) * FLT_EPSILON * sum(|x|) (each order is within
 * (N-1) * FLT_EPSILON/2 * sum(|x|) of the exact sum), so that is the bound.
 * For N <= 2 the two are bitwise equal: a + b == b + a in IEEE arithmetic.
 * Every rank must also hold bitwise the same result, whatever N. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ring_allreduce.h"

/* Numbers of many magnitudes and both signs, different on every rank. */
static float value_at(size_t i, int rank)
{
    uint64_t x = (uint64_t)i * 6364136223846793005ull + (uint64_t)rank * 1442695040888963407ull + 1;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    double unit = (double)(x >> 11) / (double)(1ull << 53);            /* [0, 1) */
    return (float)((unit - 0.5) * ldexp(1.0, (int)(x % 16) - 8));    /* 2^-9 .. 2^7 */
}

static uint64_t fnv1a(const float *data, size_t count)
{
    const unsigned char *bytes = (const unsigned char *)data;
    uint64_t hash = 14695981039346656037ull;
    for (size_t k = 0; k < count * sizeof *data; k++)
        hash = (hash ^ bytes[k]) * 1099511628211ull;
    return hash;
}

/* True when rank 0's result has the same bits on every rank. */
static bool same_on_every_rank(const float *data, size_t count)
{
    unsigned long long mine = fnv1a(data, count), root = mine;
    MPI_Bcast(&root, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    int same = mine == root, all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

/* The worst |ring - mpi| / bound over the elements (<= 1 passes), and
 * whether they are bitwise equal. */
static double worst_error(const float *ring, const float *mpi, const float *mine, size_t count,
                          int ranks, bool *bitwise)
{
    double *magnitude = calloc(count ? count : 1, sizeof *magnitude);
    for (size_t i = 0; i < count; i++)
        magnitude[i] = fabs((double)mine[i]);
    MPI_Allreduce(MPI_IN_PLACE, magnitude, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double worst = 0;
    *bitwise = count == 0 || memcmp(ring, mpi, count * sizeof *ring) == 0;
    for (size_t i = 0; i < count; i++) {
        double bound = (ranks - 1) * (double)FLT_EPSILON * magnitude[i];
        double error = fabs((double)ring[i] - (double)mpi[i]);
        double ratio = error == 0 ? 0 : bound == 0 ? INFINITY : error / bound;
        worst = ratio > worst ? ratio : worst;
    }
    free(magnitude);
    return worst;
}

/* One size: returns true when the ring passes. */
static bool check_size(size_t count, int rank, int ranks)
{
    float *mine = malloc((count ? count : 1) * sizeof *mine);
    float *ring = malloc((count ? count : 1) * sizeof *ring);
    float *mpi = malloc((count ? count : 1) * sizeof *mpi);
    for (size_t i = 0; i < count; i++)
        mine[i] = ring[i] = mpi[i] = value_at(i, rank);
    int rc = ring_allreduce_sum(ring, count, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, mpi, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    bool bitwise = false;
    double worst = worst_error(ring, mpi, mine, count, ranks, &bitwise);
    bool same = same_on_every_rank(ring, count);
    bool pass = rc == MPI_SUCCESS && same && (ranks <= 2 ? bitwise : worst <= 1.0);
    char how[128];
    if (bitwise)
        snprintf(how, sizeof how, "bitwise equal to MPI_Allreduce");
    else
        snprintf(how, sizeof how, "%s (N-1)*FLT_EPSILON*sum|x| of MPI_Allreduce (worst %.3g of it)",
                 worst <= 1.0 ? "within" : "NOT within", worst);
    if (rank == 0)
        printf("%s size %zu on %d rank%s: %s; %s on every rank\n", pass ? "PASS" : "FAIL", count,
               ranks, ranks == 1 ? "" : "s", how, same ? "the same bits" : "NOT the same bits");
    free(mine);
    free(ring);
    free(mpi);
    return pass;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    /* 0, fewer elements than ranks, N dividing or not, and the model's
     * gradients plus its loss (3,274,635 floats, 13 MB). */
    static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 64, 1000, 1001, 65537, 3274635};
    bool all = true;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        all = check_size(sizes[k], rank, ranks) && all;
    MPI_Finalize();
    return all ? 0 : 1;
}
