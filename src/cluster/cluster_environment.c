/* cluster_environment.c: which source of the cluster a process finds in its
 * environment, TF_CONFIG or a launcher's variables, in the order that
 * flowlab_cluster.h gives and explains, and the cluster from it. */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

/* Slurm started this process itself when no MPI launcher's variables
 * contradict its own: under srun --mpi=pmix or pmi2 both name the same rank
 * and size; under srun -n1 mpirun, Slurm's are the outer step's. */
static bool slurm_started_us(void)
{
    static const char *const mpi_pairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                               {"PMI_RANK", "PMI_SIZE"}};
    const char *slurm_rank = getenv("SLURM_PROCID"), *slurm_size = getenv("SLURM_STEP_NUM_TASKS");
    if (!slurm_rank)
        return false;
    for (size_t i = 0; i < sizeof mpi_pairs / sizeof *mpi_pairs; i++) {
        const char *rank = getenv(mpi_pairs[i][0]), *size = getenv(mpi_pairs[i][1]);
        if (!rank)
            continue;
        if (!slurm_size || !size || strtol(rank, NULL, 10) != strtol(slurm_rank, NULL, 10) ||
            strtol(size, NULL, 10) != strtol(slurm_size, NULL, 10))
            return false;
    }
    return true;
}

const char *fl_cluster_environment_source(void)
{
    if (getenv("TF_CONFIG"))
        return "TF_CONFIG";
    if (slurm_started_us())
        return "Slurm";
    if (getenv("OMPI_COMM_WORLD_RANK"))
        return "Open MPI";
    if (getenv("PMI_RANK"))
        return "MPICH";
    return NULL;
}

fl_cluster *fl_cluster_from_environment(int num_ps, int port_base)
{
    const char *source = fl_cluster_environment_source();
    if (!source) {
        fl_set_error_code(FL_NOT_FOUND, "no cluster in the environment: none of TF_CONFIG, SLURM_PROCID (srun), "
                          "OMPI_COMM_WORLD_RANK (Open MPI's mpirun) or PMI_RANK (MPICH's mpiexec) is set");
        return NULL;
    }
    if (strcmp(source, "TF_CONFIG") == 0)
        return fl_cluster_from_tf_config_env();
    if (strcmp(source, "Slurm") == 0)
        return fl_cluster_from_slurm(num_ps, port_base);
    return fl_cluster_from_mpi_launcher(num_ps, port_base);
}
