# tests/fuzz/fuzz.mk: the wire protocol's fuzz targets (make fuzz); included by the Makefile.
#   make fuzz                  builds tests/fuzz/fuzz_wire with libFuzzer (Debian's clang and
#                              libclang-rt-14-dev) and runs it for FUZZ_SECONDS (30) on seeds
#                              that make_corpus writes with the encoders; then fuzz_graph_wire, the
#                              decoder of a partition's message, for FUZZ_GRAPH_SECONDS (15); then
#                              fuzz_graph_run, which decodes, registers and RUNS partitions on the
#                              host device, for FUZZ_RUN_SECONDS (60), from tests/fuzz/corpus-run/
# Exits 0 when no input crashed the decoder or the parsers; a crash fails the target and
# leaves the input that caused it in build/fuzz/ (replay: build/fuzz/fuzz_wire FILE).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_DIR     := build/fuzz
# The wire's bodies are wire.proto's messages: its generated code comes along, and the
# core's archive for graph.proto's (TensorProto) and fl_xmalloc.
WIRE_SRC     := $(wildcard src/distributed_runtime/transport/wire*.c) $(PARTITION_GEN)/wire.pb-c.c
WIRE_HDR     := $(wildcard src/distributed_runtime/transport/wire*.h) src/flowlab.h src/status.h \
                $(PARTITION_GEN)/wire.pb-c.h $(SUMMARY_PB_H)
FUZZ_CFLAGS  := -std=c11 -Wall -Wextra -Werror -g -O1 -Isrc -I$(SUMMARY_GEN) -I$(PARTITION_GEN) \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_DIR)/fuzz_wire: tests/fuzz/fuzz_wire.c $(WIRE_SRC) $(WIRE_HDR) $(LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz_wire.c $(WIRE_SRC) -o $@ $(LIB) $(LDLIBS)

$(FUZZ_DIR)/make_corpus: tests/fuzz/make_corpus.c $(WIRE_SRC) $(WIRE_HDR) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -Isrc -I$(SUMMARY_GEN) -I$(PARTITION_GEN) tests/fuzz/make_corpus.c \
	    $(WIRE_SRC) -o $@ $(LIB) $(LDLIBS)

# The decoder of a partition's message (REGISTER_PARTITION's payload: partition.proto around
# src/summary's GraphDef) unpacks with protobuf-c and rebuilds nodes with the runtime's
# fl_add_node, so its target links the core's archive (the GraphDef writer and graph.proto's
# code among it) and the generated partition.pb-c.c; seeds from the encoder.
GRAPH_WIRE_SRC := src/distributed_runtime/partition/partition_def.c src/distributed_runtime/partition/partition_def_nodes.c \
                  src/distributed_runtime/partition/graph_partition.c $(PARTITION_GEN)/partition.pb-c.c
GRAPH_WIRE_INC := -I$(SUMMARY_GEN) -I$(PARTITION_GEN)
FUZZ_GRAPH_SECONDS ?= 15

$(FUZZ_DIR)/fuzz_graph_wire: tests/fuzz/fuzz_graph_wire.c $(GRAPH_WIRE_SRC) $(WIRE_SRC) $(WIRE_HDR) $(LIB) $(PARTITION_GEN)/partition.pb-c.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(GRAPH_WIRE_INC) tests/fuzz/fuzz_graph_wire.c $(GRAPH_WIRE_SRC) $(WIRE_SRC) -o $@ $(LIB) $(LDLIBS)

$(FUZZ_DIR)/make_graph_corpus: tests/fuzz/make_graph_corpus.c tests/partition_fixture.h $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) tests/fuzz/make_graph_corpus.c -o $@ $(LDFLAGS) $(CLUSTER_LINK)

# fuzz_graph_run runs what it decodes: the core and the cluster rooms are built
# again with clang, the sanitizers and the fuzzer's coverage (build/fuzz/obj/),
# so that a kernel's over-read is caught; the protobuf code (event, graph,
# partition), the GraphDef writer and the backend table come from the plain build. Its seeds are checked in (tests/fuzz/corpus-run/:
# seed-* written by make_run_corpus, `make fuzz-run-corpus` after changing it;
# found-* inputs a longer run found, one of them a crash since fixed); what the
# fuzzer adds goes to build/fuzz/corpus-run/.
FUZZ_RUN_SECONDS ?= 60
FUZZ_RUN_SRC := $(wildcard src/*.c src/host/*.c src/io/*.c src/training/*.c) $(CLUSTER_SRC) $(DISTRIBUTED_RUNTIME_SRC)
FUZZ_RUN_OBJ := $(patsubst src/%.c,$(FUZZ_DIR)/obj/%.o,$(FUZZ_RUN_SRC))
FUZZ_RUN_CFLAGS = $(filter-out -O3 -Wno-format-truncation,$(CFLAGS)) -O1 \
                  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_DIR)/obj/%.o: src/%.c src/flowlab.h src/runtime.h $(PARTITION_GEN)/partition.pb-c.h $(PARTITION_GEN)/wire.pb-c.h \
                     $(SUMMARY_PB_H)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_RUN_CFLAGS) $(GRAPH_WIRE_INC) -MMD -MP -c $< -o $@

-include $(FUZZ_RUN_OBJ:.o=.d)

$(FUZZ_DIR)/fuzz_graph_run: tests/fuzz/fuzz_graph_run.c tests/fuzz/graph_program.h $(FUZZ_RUN_OBJ) $(LIB) $(PARTITION_PB) \
                             $(WIRE_PB)
	$(FUZZ_CC) $(FUZZ_RUN_CFLAGS) -fsanitize=fuzzer tests/fuzz/fuzz_graph_run.c $(FUZZ_RUN_OBJ) \
	    $(SUMMARY_OBJ) $(PARTITION_PB) $(WIRE_PB) $(BUILD)/obj/backends.o $(BACKEND_OBJ) -o $@ $(LDLIBS) $(CLUSTER_LDLIBS)

$(FUZZ_DIR)/make_run_corpus: tests/fuzz/make_run_corpus.c $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) tests/fuzz/make_run_corpus.c -o $@ $(LDFLAGS) $(CLUSTER_LINK)

fuzz-run-corpus: $(FUZZ_DIR)/make_run_corpus
	./$(FUZZ_DIR)/make_run_corpus tests/fuzz/corpus-run

fuzz: $(FUZZ_DIR)/fuzz_wire $(FUZZ_DIR)/make_corpus $(FUZZ_DIR)/fuzz_graph_wire $(FUZZ_DIR)/make_graph_corpus \
      $(FUZZ_DIR)/fuzz_graph_run
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/corpus-graph
	./$(FUZZ_DIR)/make_corpus $(FUZZ_DIR)/corpus
	./$(FUZZ_DIR)/fuzz_wire -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus
	./$(FUZZ_DIR)/make_graph_corpus $(FUZZ_DIR)/corpus-graph
	./$(FUZZ_DIR)/fuzz_graph_wire -max_total_time=$(FUZZ_GRAPH_SECONDS) -max_len=8192 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus-graph
	@mkdir -p $(FUZZ_DIR)/corpus-run
	./$(FUZZ_DIR)/fuzz_graph_run -max_total_time=$(FUZZ_RUN_SECONDS) -max_len=16384 -timeout=20 -rss_limit_mb=4096 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus-run tests/fuzz/corpus-run

.PHONY: fuzz fuzz-run-corpus
