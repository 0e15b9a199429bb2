/* allreduce_probe.c: times MPI_Allreduce of float32 buffers for `make bench`,
 * which starts it with `mpirun -np 2`: the tiny message gives alpha and the
 * gradients' size gives bandwidth (labs/06-allreduce/cost_model.h fits them).
 * Rank 0 prints one line per size: "allreduce BYTES bytes MEDIAN seconds". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define MAX_SIZES 16

static const char program[] = "allreduce_probe";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N %s [--bytes B]... [--reps R]\n"
            "Times MPI_Allreduce (sum of float32) of each size on every rank of the job and\n"
            "prints rank 0's median per allreduce: \"allreduce BYTES bytes MEDIAN seconds\"\n"
            "(sizes under 64 KiB are timed in runs of 1000 back to back).\n"
            "  --bytes B   a message size, a multiple of 4 (repeat for more; default 4 and\n"
            "              13098536, chapter 1's gradient bytes)\n"
            "  --reps R    timed repetitions per size, after 3 untimed (default 21)\n",
            program);
}

/* A whole number from low to high, or exit 2 naming the flag. */
static long whole_flag(const char *flag, const char *value, long low, long high)
{
    char *end = NULL;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || end == value || *end != '\0' || v < low || v > high) {
        fprintf(stderr, "%s: %s %s: give a whole number from %ld to %ld (see --help)\n", program, flag,
                value ? value : "needs a value", low, high);
        exit(2);
    }
    return v;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rank 0's median seconds per allreduce of bytes. A tiny message is timed
 * as a run of 1000 back to back, each rank waiting for the other's value
 * every time: timed one at a time, rank 0 would often find rank 1's value
 * already there, having left the barrier first, and see half a round trip. */
static double time_allreduce(long bytes, int reps, int rank)
{
    size_t count = (size_t)bytes / 4;
    int run = bytes < 65536 ? 1000 : 1;
    float *in = malloc(count ? count * 4 : 4), *out = malloc(count ? count * 4 : 4);
    for (size_t i = 0; i < count; i++)
        in[i] = (float)(i % 7) + (float)rank;
    double *times = malloc(sizeof *times * (size_t)reps);
    for (int r = -3; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int k = 0; k < run; k++)
            MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (r >= 0)
            times[r] = (MPI_Wtime() - t0) / run;
    }
    qsort(times, (size_t)reps, sizeof *times, compare_doubles);
    double median = times[reps / 2];
    free(times);
    free(in);
    free(out);
    return median;
}

/* Exits 2 after a one-line message naming the flag at fault. */
static void bad_flag(const char *flag, const char *why)
{
    fprintf(stderr, "%s: %s: %s (see --help)\n", program, flag, why);
    exit(2);
}

int main(int argc, char **argv)
{
    long sizes[MAX_SIZES] = {4, 13098536};
    int nsizes = 0, reps = 21;
    for (int i = 1; i < argc; i += 2) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--bytes") == 0) {
            if (nsizes == MAX_SIZES)
                bad_flag(argv[i], "at most 16 sizes");
            sizes[nsizes] = whole_flag(argv[i], value, 0, 1L << 30);
            if (sizes[nsizes++] % 4 != 0)
                bad_flag(argv[i], "give a multiple of 4 bytes (float32)");
        } else if (strcmp(argv[i], "--reps") == 0) {
            reps = (int)whole_flag(argv[i], value, 1, 100000);
        } else {
            bad_flag(argv[i], "unknown flag");
        }
    }
    nsizes = nsizes ? nsizes : 2;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int k = 0; k < nsizes; k++) {
        double median = time_allreduce(sizes[k], reps, rank);
        if (rank == 0)
            printf("allreduce %ld bytes %.9f seconds\n", sizes[k], median);
    }
    MPI_Finalize();
    return 0;
}
