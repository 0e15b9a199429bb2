# src/distributed_runtime/distributed_runtime.mk: the runtime that talks to the
# other tasks (wire protocol, task server, ps store and synchronous steps,
# remote backend, client); included by the Makefile. libevent runs the servers.
DISTRIBUTED_RUNTIME_SRC := $(wildcard src/distributed_runtime/*.c)
LDLIBS += -levent_core -levent_pthreads
