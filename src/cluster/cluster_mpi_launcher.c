/* cluster_mpi_launcher.c: the cluster of the processes an MPI launcher
 * started, from the variables it gives each one: Open MPI's mpirun
 * (OMPI_COMM_WORLD_*) or MPICH's Hydra mpiexec (PMI_RANK, PMI_SIZE,
 * MPI_LOCALRANKID, MPI_LOCALNRANKS). They name no hosts, so one node only. */
#include <stdio.h>
#include <stdlib.h>

#include "cluster.h"
#include "hostlist.h"

/* One launcher's names for this process's place in the job. */
typedef struct {
    const char *launcher;
    const char *rank, *size, *local_rank, *local_size;
} mpi_variables;

static const mpi_variables open_mpi = {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
static const mpi_variables mpich = {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};

/* A variable that must be set, in [min, max]: 0, or -1 after fl_set_error. */
static int read_required(const mpi_variables *v, const char *name, long min, long max, const char *expected,
                         long *value)
{
    int rc = fl_launcher_env_int(name, min, max, expected, value);
    if (rc == 1)
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s is not set though %s is: %s's variables are incomplete; give the cluster in TF_CONFIG "
                          "instead", name, v->rank, v->launcher);
    return rc == 0 ? 0 : -1;
}

/* Size, rank and their local twins, checked to describe ranks on one node. */
static int read_job(const mpi_variables *v, long *size, long *rank)
{
    char expected[96];
    long local_size, local_rank;
    if (read_required(v, v->size, 1, FL_HOSTLIST_MAX_HOSTS, "the number of processes", size) != 0)
        return -1;
    snprintf(expected, sizeof expected, "a rank from 0 to %ld (%s is %ld)", *size - 1, v->size, *size);
    if (read_required(v, v->rank, 0, *size - 1, expected, rank) != 0 ||
        read_required(v, v->local_size, 1, *size, "the number of processes on this node", &local_size) != 0)
        return -1;
    if (local_size != *size) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "%s is %ld but %s is %ld: the processes span several nodes and %s's variables do not say "
                          "which; launch with srun or give the cluster in TF_CONFIG",
                          v->local_size, local_size, v->size, *size, v->launcher);
        return -1;
    }
    snprintf(expected, sizeof expected, "%ld, as %s (all processes are on this node)", *rank, v->rank);
    return read_required(v, v->local_rank, *rank, *rank, expected, &local_rank);
}

fl_cluster *fl_cluster_from_mpi_launcher(int num_ps, int port_base)
{
    const mpi_variables *v = getenv(open_mpi.rank) ? &open_mpi : getenv(mpich.rank) ? &mpich : NULL;
    if (!v) {
        fl_set_error_code(FL_NOT_FOUND,
                          "neither OMPI_COMM_WORLD_RANK (Open MPI's mpirun) nor PMI_RANK (MPICH's mpiexec) is set: "
                          "this process was not started by an MPI launcher");
        return NULL;
    }
    long size, rank;
    if (read_job(v, &size, &rank) != 0)
        return NULL;
    const char **hosts = fl_xmalloc((size_t)size * sizeof *hosts);
    int *local_index = fl_xmalloc((size_t)size * sizeof *local_index);
    for (int r = 0; r < size; r++) {
        hosts[r] = "127.0.0.1";
        local_index[r] = r;
    }
    fl_cluster *c = fl_cluster_from_ranks(hosts, local_index, (int)size, (int)rank, num_ps, port_base, v->size);
    free(hosts);
    free(local_index);
    return c;
}
