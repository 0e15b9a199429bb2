# tests/tests.mk: the TAP suite (make test, make test SANITIZE=1) and the threaded
# code's tests under ThreadSanitizer (make test-threads); included by the Makefile.
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

# Every test links the cluster rooms too: a test of the core pulls no object
# from their archive.
$(BUILD)/tests/%: tests/%.c tests/tap.h tests/gradcheck.h tests/lab_runner.h tests/loopback.h tests/sync_equivalence.h tests/alloc_count.h tests/one_pocl_device.h $(LIB) $(CLUSTER_LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(CLUSTER_LINK)

tests: $(TEST_BIN)
# tests/house_rules.t reads ldd of the core's programs: chapters 0-1 and flowlab-devices
# (and builds chapter 2's, which its cluster mode makes a cluster program).
tests: $(patsubst %,$(BUILD)/labs/%,00-xor/xor 01-single-device/single_device 02-in-graph-towers/in_graph_towers \
                                    tools/flowlab-devices)

# The tests of threaded code, run under ThreadSanitizer by `make test-threads`
# (CI does): the task server and its clients, the data prefetch, eight
# worker processes against one ps (test_ps_load), a run handing its fetches over
# early while another thread adds trace events (test_fetch_ready), two clusters in
# one process, each with its own connections and reader threads (test_two_clusters), two task
# servers running partitions on their own threads and sending each other values (test_partition_server,
# test_rendezvous), the client's master queuing a step on every task's connection and woken by their reader threads, against
# flowlab_server processes (test_in_graph_cluster), the summary writer's flush thread beside the calls that
# append records (test_summary), the handshake and TLS tunnels of a secured cluster
# (test_cluster_secret, test_cluster_tls, test_untrusted_text), servers started and stopped on 0.0.0.0
# (test_secure_listen), a task server bounding the values two connections leave waiting (test_waiting_values),
# a ps's join watching its workers come and go (test_server_join), a client's goodbyes on a thread per task
# (test_client_close), a traced step whose tasks' timings come back on the master's threads (test_cluster_trace), two tasks' executors sending each other values through their rendezvous (test_recv_executor),
# two threads' sessions updating one variable of a task's container (test_variable_container), two
# between-graph workers' own pieces training one ps variable at once (test_between_graph_partitions),
# a task server's long-lived runners, one job waiting for another's (test_runner_pool), a writer thread sending
# lent bytes that their owner writes again once the wait for them returns (test_socket_writer), a take of a
# task's accumulator on one thread waiting for gradients another adds (test_accumulator), a worker held on
# its own thread while the chief steps, with one ps or two (test_sync_partitions, test_sync_two_ps).
THREAD_TESTS := test_server test_partition_server test_rendezvous test_in_graph_cluster test_remote test_monitored_cluster test_connect test_data test_data_bytes test_ps_load test_fetch_ready test_frame_reader test_two_clusters test_summary \
                test_cluster_secret test_cluster_tls test_untrusted_text test_secure_listen test_server_bounds \
                test_handshake_deadline test_run_cancel test_waiting_values test_server_join test_client_close \
                test_cluster_trace test_recv_executor test_variable_container test_between_graph_partitions test_between_graph_checkpoints test_runner_pool test_socket_writer test_accumulator test_accumulator_ops test_sync_partitions \
                test_sync_two_ps

test-threads: deps
	$(MAKE) SANITIZE=thread $(patsubst %,build-tsan/tests/%,$(THREAD_TESTS))
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" FLOWLAB_BACKEND=host \
	    prove $(PROVE_FLAGS) $(patsubst %,build-tsan/tests/%,$(THREAD_TESTS))

# A failing test's lines and every test's diagnostics ("# ...") in the log,
# so that a failure in CI says what it waited for without a rerun.
PROVE_FLAGS ?= --failures --comments

test: deps
	$(MAKE) tests
	FLOWLAB_ALLOW_TF32=0 FLOWLAB_LIB=$(LIB) BUILD=$(BUILD) prove -j2 $(PROVE_FLAGS) $(TEST_BIN) tests/house_rules.t tests/scalar_rules.t tests/netns.t tests/links.t tests/slurm.t tests/mpirun.t tests/handout.t tests/book_rerun.t \
	    tests/containerfile.t tests/tensorboard.t tests/install.t tests/cluster_api.t


$(TEST_BIN): tests/tools.h
# In-graph replication across tasks: chapter 2's lab in cluster mode against
# flowlab_server processes.
$(BUILD)/tests/test_in_graph_cluster: tests/task_servers.h $(BUILD)/labs/02-in-graph-towers/in_graph_towers \
                                      $(BUILD)/labs/tools/flowlab_server
# --trace in cluster mode: a traced step against flowlab_server processes, chapter 2's
# lab in cluster mode and chapter 3's through the launcher, each with --trace.
$(BUILD)/tests/test_cluster_trace: tests/task_servers.h labs/tools/trace_events.h $(BUILD)/labs/tools/flowlab_server \
                                   $(BUILD)/labs/02-in-graph-towers/in_graph_towers \
                                   $(BUILD)/labs/03-between-graph/between_graph $(BUILD)/labs/tools/launch_cluster
# The synchronous between-graph tests share their ps tasks, workers and gate.
$(BUILD)/tests/test_sync_partitions $(BUILD)/tests/test_sync_two_ps: tests/sync_cluster.h
# The task servers' tests share a graph cut by hand; one runs the built server.
$(BUILD)/tests/test_partition_server $(BUILD)/tests/test_flowlab_server: tests/partition_fixture.h
$(BUILD)/tests/test_flowlab_server: $(BUILD)/labs/tools/flowlab_server
# A NaN loss stops chapter 1's and chapter 3's labs (a poisoned checkpoint).
$(BUILD)/tests/test_nan_loss: $(BUILD)/labs/01-single-device/single_device $(BUILD)/labs/03-between-graph/between_graph \
                              $(BUILD)/labs/tools/launch_cluster
# Secure by default: a ps of chapter 3's lab and flowlab_server refuse 0.0.0.0 without a secret.
$(BUILD)/tests/test_secure_listen: $(BUILD)/labs/tools/flowlab_server $(BUILD)/labs/03-between-graph/between_graph
# The tests that need a CUDA GPU share their skip (and chapter 1's model, for
# the determinism test).
$(BUILD)/tests/test_cuda $(BUILD)/tests/test_deterministic $(BUILD)/tests/test_tf32 $(BUILD)/tests/test_cuda_convolutions: tests/cuda_tests.h
$(BUILD)/tests/test_deterministic: labs/common/model.h

# The wire's tests pack hostile bodies with protobuf-c alone: wire.proto's generated code.
WIRE_BODY_TESTS := $(BUILD)/tests/test_wire $(BUILD)/tests/test_partition_wire
$(WIRE_BODY_TESTS): CFLAGS += -I$(SUMMARY_GEN) -I$(PARTITION_GEN)
$(WIRE_BODY_TESTS): $(PARTITION_GEN)/wire.pb-c.h
