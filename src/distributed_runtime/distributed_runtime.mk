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
PARTITION_PB   := $(BUILD)/obj/distributed_runtime/partition/partition.pb-c.o
WIRE_PB        := $(BUILD)/obj/distributed_runtime/transport/wire.pb-c.o
CLUSTER_OBJ    := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(CLUSTER_SRC) $(DISTRIBUTED_RUNTIME_SRC)) $(PARTITION_PB) $(WIRE_PB)
CLUSTER_LDLIBS := -levent_core -levent_pthreads -levent_openssl -lssl -lcrypto
# A cluster program's link line (expanded late: the backends add to LDLIBS).
CLUSTER_LINK    = $(CLUSTER_LIB) $(LIB) $(LDLIBS) $(CLUSTER_LDLIBS)

$(CLUSTER_LIB): $(CLUSTER_OBJ)
	rm -f $@
	ar rcs $@ $^

# partition/partition.proto (REGISTER_PARTITION's message around graph.proto's
# GraphDef, src/summary/) and transport/wire.proto (the other frames' bodies),
# compiled by protoc-c at build time like summary's.
PARTITION_GEN  := $(BUILD)/gen/distributed_runtime
DR_PROTOS      := src/distributed_runtime/partition/partition.proto src/distributed_runtime/transport/wire.proto
DR_PB_C        := $(PARTITION_GEN)/partition.pb-c.c $(PARTITION_GEN)/wire.pb-c.c

$(DR_PB_C) $(DR_PB_C:.c=.h) &: $(DR_PROTOS) src/summary/graph.proto
	@mkdir -p $(PARTITION_GEN)
	protoc-c --proto_path=src/summary $(addprefix --proto_path=,$(dir $(DR_PROTOS))) --c_out=$(PARTITION_GEN) $(DR_PROTOS)

# Each object from its own generated file.
$(PARTITION_PB): $(PARTITION_GEN)/partition.pb-c.c
$(WIRE_PB): $(PARTITION_GEN)/wire.pb-c.c
$(PARTITION_PB) $(WIRE_PB): $(DR_PB_C:.c=.h) $(SUMMARY_PB_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(SUMMARY_GEN) -I$(PARTITION_GEN) -c $(filter %.c,$^) -o $@

PARTITION_DEF_OBJ := $(BUILD)/obj/distributed_runtime/partition/partition_def.o \
                     $(BUILD)/obj/distributed_runtime/partition/partition_def_nodes.o \
                     $(patsubst src/%.c,$(BUILD)/obj/%.o,$(wildcard src/distributed_runtime/transport/wire*.c))
$(PARTITION_DEF_OBJ): CFLAGS += -I$(SUMMARY_GEN) -I$(PARTITION_GEN)
$(PARTITION_DEF_OBJ): $(PARTITION_GEN)/partition.pb-c.h $(PARTITION_GEN)/wire.pb-c.h $(SUMMARY_PB_H) src/summary/graph_def.h
