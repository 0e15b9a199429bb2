# tests/tests.mk: the TAP suite (make test, make test SANITIZE=1) and the threaded
# code's tests under ThreadSanitizer (make test-threads); included by the Makefile.
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

# Every test links the cluster rooms too: a test of the core pulls no object
# from their archive.
$(BUILD)/tests/%: tests/%.c tests/tap.h tests/gradcheck.h tests/lab_runner.h tests/loopback.h $(LIB) $(CLUSTER_LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(CLUSTER_LINK)

tests: $(TEST_BIN)
# tests/house_rules.t reads ldd of the core's programs: chapters 0-2 and flowlab-devices.
tests: $(patsubst %,$(BUILD)/labs/%,00-xor/xor 01-single-device/single_device 02-in-graph-towers/in_graph_towers \
                                    tools/flowlab-devices)

# The tests of threaded code, run under ThreadSanitizer by `make test-threads`
# (CI does): the task server and its clients, the data prefetch, eight
# worker processes against one ps (test_ps_load), a run handing its fetches over
# early while another thread adds trace events (test_fetch_ready), two clusters in
# one process, each with its own connections and reader threads (test_two_clusters).
THREAD_TESTS := test_server test_remote test_monitored_cluster test_connect test_data test_data_bytes test_ps_load test_fetch_ready test_frame_reader test_two_clusters

test-threads: deps
	$(MAKE) SANITIZE=thread $(patsubst %,build-tsan/tests/%,$(THREAD_TESTS))
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" FLOWLAB_BACKEND=host \
	    prove $(PROVE_FLAGS) $(patsubst %,build-tsan/tests/%,$(THREAD_TESTS))

# A failing test's lines and every test's diagnostics ("# ...") in the log,
# so that a failure in CI says what it waited for without a rerun.
PROVE_FLAGS ?= --failures --comments

test: deps
	$(MAKE) tests
	FLOWLAB_LIB=$(LIB) BUILD=$(BUILD) prove -j2 $(PROVE_FLAGS) $(TEST_BIN) tests/house_rules.t tests/netns.t tests/slurm.t tests/handout.t \
	    tests/containerfile.t


$(TEST_BIN): tests/tools.h
