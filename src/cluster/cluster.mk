# src/cluster/cluster.mk: the cluster spec and its resolvers (flags, TF_CONFIG,
# Slurm, MPI launchers, host lists, JSON) and the replica device setter;
# included by the Makefile. Plain C: no library beyond libc. Its objects go
# into build/libflowlab_cluster.a (src/distributed_runtime/distributed_runtime.mk).
CLUSTER_SRC := $(wildcard src/cluster/*.c)
