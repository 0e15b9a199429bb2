# src/distributed_runtime/distributed_runtime.mk: the runtime that talks to the
# other tasks, in four sub-rooms: transport/ (the wire, frames, connections,
# handshake, TLS, a task's client), partition/ (the master, the partitioner,
# Send/Recv's rendezvous), server/ (a task server, the session plugin) and ps/ (a parameter
# server's variables and synchronous steps); included after src/cluster/cluster.mk.
# With the cluster room it makes build/libflowlab_cluster.a, which a program of
# a cluster links before the core's archive, with libevent (the servers' loop)
# and OpenSSL (the shared secret's HMAC, TLS: libevent_openssl on the server side).
DISTRIBUTED_RUNTIME_SRC := $(wildcard src/distributed_runtime/*/*.c)
CLUSTER_LIB    := $(BUILD)/libflowlab_cluster.a
CLUSTER_OBJ    := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(CLUSTER_SRC) $(DISTRIBUTED_RUNTIME_SRC))
CLUSTER_LDLIBS := -levent_core -levent_pthreads -levent_openssl -lssl -lcrypto
# A cluster program's link line (expanded late: the backends add to LDLIBS).
CLUSTER_LINK    = $(CLUSTER_LIB) $(LIB) $(LDLIBS) $(CLUSTER_LDLIBS)

$(CLUSTER_LIB): $(CLUSTER_OBJ)
	rm -f $@
	ar rcs $@ $^
