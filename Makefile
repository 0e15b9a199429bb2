# flowlab: one make for everything.
#   make             the library (build/libflowlab.a) and the labs
#   make test        the TAP suite under prove
#   make test SANITIZE=1   the same suite under AddressSanitizer + UBSan
#   make clean

CC      ?= cc
SANITIZE ?= 0
BUILD   := build
ifeq ($(SANITIZE),1)
BUILD   := build-sanitize
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g
else ifeq ($(SANITIZE),thread)
# ThreadSanitizer, for the threaded code: servers, clients, the data prefetch.
BUILD   := build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
OPT     := -O1 -g
else
SANFLAGS :=
# -O3 vectorises the host's element-wise loops (Adam, the towers' gradient
# mean); -fno-math-errno lets sqrtf become one instruction there. Neither
# reorders float arithmetic, so results stay bit-identical.
OPT     := -O3 -g -fno-math-errno
endif

# Error messages are cut to fit their buffers on purpose: no truncation warning.
CFLAGS  := -std=c11 -Wall -Wextra -Werror -Wno-format-truncation $(OPT) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
           -pthread -Isrc $(SANFLAGS) $(EXTRA_CFLAGS)
# libevent runs the servers of chapter 3's tasks (src/dist/server*.c).
LDLIBS  := -lz -lm -levent_core -levent_pthreads -pthread
LDFLAGS := $(SANFLAGS)

# src/ is the graph and the executor; src/host/ is /cpu:0; src/io/ the file formats;
# src/dist/ the tasks of chapter 3 (between-graph replication) and their wire protocol.
LIB_SRC := $(wildcard src/*.c src/host/*.c src/io/*.c src/dist/*.c)
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
LIB     := $(BUILD)/libflowlab.a

# Each accelerator backend adds its objects to BACKEND_OBJ, its defines to
# CFLAGS (FL_HAVE_OPENCL, FL_HAVE_CUDA) and its libraries to LDLIBS.
BACKEND_OBJ :=
# /cpu:0 runs matmul and conv2d through OpenBLAS's CBLAS when it is installed.
ifeq ($(shell pkg-config --exists openblas 2>/dev/null && echo yes),yes)
CFLAGS  += -DFL_HAVE_CBLAS $(shell pkg-config --cflags openblas)
LDLIBS  += $(shell pkg-config --libs openblas)
endif
-include cl/backend.mk
-include cuda/backend.mk
LIB_OBJ += $(BACKEND_OBJ)

TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

.PHONY: all lib labs lab tests test test-threads deps clean bench flags
all: lib labs

# Installs the Debian packages that are missing (see labs/install-deps.sh).
deps:
	@sh labs/install-deps.sh

lib: $(LIB)

$(BUILD)/obj/%.o: src/%.c src/flowlab.h src/flowlab_cluster.h src/flowlab_monitored.h src/runtime.h | $(BUILD)/obj
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -c $< -o $@

$(LIB): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: tests/%.c tests/tap.h tests/gradcheck.h tests/lab_runner.h tests/loopback.h $(LIB) | $(BUILD)/tests
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

tests: $(TEST_BIN)

# The tests of threaded code, run under ThreadSanitizer by `make test-threads`
# (CI does): the task server and its clients, the data prefetch, eight
# worker processes against one ps (test_ps_load), a run handing its fetches over
# early while another thread adds trace events (test_fetch_ready).
THREAD_TESTS := test_server test_remote test_connect test_data test_ps_load test_fetch_ready test_frame_reader

test-threads: deps
	$(MAKE) SANITIZE=thread $(patsubst %,build-tsan/tests/%,$(THREAD_TESTS))
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" FLOWLAB_BACKEND=host \
	    prove $(PROVE_FLAGS) $(patsubst %,build-tsan/tests/%,$(THREAD_TESTS))

# A failing test's lines and every test's diagnostics ("# ...") in the log,
# so that a failure in CI says what it waited for without a rerun.
PROVE_FLAGS ?= --failures --comments

test: deps
	$(MAKE) tests
	FLOWLAB_LIB=$(LIB) BUILD=$(BUILD) prove -j2 $(PROVE_FLAGS) $(TEST_BIN) tests/house_rules.t tests/netns.t tests/slurm.t

# ---- labs: each folder labs/NN-name/ holds one program, NN-name/name.c ----
# Chapter 6's lab is an MPI program of several files, built by mpicc in its own section.
LAB_SRC := $(filter-out labs/06-allreduce/%,$(wildcard labs/*/*.c))
LAB_BIN := $(patsubst labs/%.c,$(BUILD)/labs/%,$(LAB_SRC))

$(BUILD)/labs/%: labs/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

labs: $(LAB_BIN)

# The main lab, as the README's quick start runs it.
lab: deps
	$(MAKE) labs
	$(BUILD)/labs/01-single-device/single_device

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

# What your own program needs to compile and link against flowlab:
#   cc -std=c11 my_program.c $(make -s -C path/to/flowlab flags)
flags:
	@echo "-I$(CURDIR)/src $(CURDIR)/$(LIB) $(LDFLAGS) $(LDLIBS)"

# ---- make bench: one table of side-by-side measurements, CSV and a chart ----
BENCH := $(BUILD)/bench/bench
# bench.c and its parts: the table they share, and chapter 6's allreduce rows with its cost model.
BENCH_SRC := tests/bench/bench.c tests/bench/bench_table.c tests/bench/bench_allreduce.c labs/06-allreduce/cost_model.c
$(BENCH): $(BENCH_SRC) tests/bench/bench_table.h tests/bench/bench_allreduce.h labs/06-allreduce/cost_model.h \
          labs/tools/trace_events.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BENCH_SRC) -o $@ $(LDFLAGS) $(LIB) -lclblast $(LDLIBS)

# ALLREDUCE_PROBE (chapter 6's section) is empty where there is no mpicc.
bench: deps
	$(MAKE) labs $(BENCH) $(ALLREDUCE_PROBE)
	OPENBLAS_THREAD_TIMEOUT=4 ./$(BENCH) $(BUILD)/bench/results.csv | tee $(BUILD)/bench/results.txt
	$(MAKE) bench-charts
	@echo "table: $(BUILD)/bench/results.txt, charts: book/figures/bench.svg, book/figures/roofline.svg"

clean:
	rm -rf build build-sanitize build-tsan

-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/obj/*/*.d)

# ==== chapter 1 (labs/01-single-device): exercises, book-check, figures ====
#   make exercises            builds the exercise checks against your files and runs them
#   make exercises-solutions  the same against the reference solutions; fails unless all pass
#   make book-check           the book's code quotes must equal the labs' marked regions
#   make book-sync            rewrites the book's code quotes from the labs
#   make figures              book/figures/ch1-model.svg from a 1-step run of the lab
LAB01       := $(BUILD)/labs/01-single-device/single_device
EX01_DIR    := labs/01-single-device/exercises
EX01_NAMES  := dense_layer momentum accuracy
EX01_OUT    := $(BUILD)/exercises/01-single-device
EX01_CHECKS := $(patsubst %,$(EX01_OUT)/check_%,$(EX01_NAMES))
EX01_SOLVED := $(patsubst %,$(EX01_OUT)/solutions/check_%,$(EX01_NAMES))
# What every exercise check includes (fail, pass, run).
EXERCISE_CHECK_H := labs/common/check.h
BOOK_CHECK  := $(BUILD)/labs/tools/book_check
BOOK_MD      = $(wildcard book/*.md)

.PHONY: exercises exercises-solutions book-check book-sync figures

$(EX01_OUT)/check_%: $(EX01_DIR)/check_%.c $(EX01_DIR)/%.c $(EX01_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX01_DIR) $(EX01_DIR)/check_$*.c $(EX01_DIR)/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX01_OUT)/solutions/check_%: $(EX01_DIR)/check_%.c $(EX01_DIR)/solutions/%.c $(EX01_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX01_DIR) $(EX01_DIR)/check_$*.c $(EX01_DIR)/solutions/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# tests/test_lab01 runs the lab and the checks, so they are built first.
$(BUILD)/tests/test_lab01: $(LAB01) $(EX01_CHECKS) $(EX01_SOLVED)

book-check: $(BOOK_CHECK)
	./$(BOOK_CHECK) $(BOOK_MD)

# book_check is one program in labs/tools/, one concept per header.
$(BOOK_CHECK): $(wildcard labs/tools/book_*.h)

book-sync: $(BOOK_CHECK)
	./$(BOOK_CHECK) --write $(BOOK_MD)

figures: $(LAB01)
	@mkdir -p book/figures
	./$(LAB01) --device /cpu:0 --train_steps 1 --max_examples 64 --batch_size 32 \
	    --graph book/figures/ch1-model.dot
	dot -Tsvg book/figures/ch1-model.dot -o book/figures/ch1-model.svg
# ==== end of chapter 1 ====

# ==== chapter 2 (labs/02-in-graph-towers): exercises, shared headers, figures ====
#   make exercises / exercises-solutions / figures cover this chapter too.
# The backends' .mk files, included above, define targets of their own; keep
# `make` with no goal building the library and the labs.
.DEFAULT_GOAL := all
LAB02       := $(BUILD)/labs/02-in-graph-towers/in_graph_towers
LAB_COMMON  := $(wildcard labs/common/*.h)
EX02_DIR    := labs/02-in-graph-towers/exercises
EX02_NAMES  := average_gradients assign_to_device controller
EX02_OUT    := $(BUILD)/exercises/02-in-graph-towers
EX02_CHECKS := $(patsubst %,$(EX02_OUT)/check_%,$(EX02_NAMES))
EX02_SOLVED := $(patsubst %,$(EX02_OUT)/solutions/check_%,$(EX02_NAMES))
# The controller exercise builds on the other two, so every check links all three files.
EX02_MINE   := $(patsubst %,$(EX02_DIR)/%.c,$(EX02_NAMES))
EX02_REFS   := $(patsubst %,$(EX02_DIR)/solutions/%.c,$(EX02_NAMES))

# The labs include labs/common/*.h: rebuild them when a shared header changes.
$(LAB01) $(LAB02): $(LAB_COMMON)

$(EX02_OUT)/check_%: $(EX02_DIR)/check_%.c $(EX02_MINE) $(EX02_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX02_DIR) $(EX02_DIR)/check_$*.c $(EX02_MINE) -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX02_OUT)/solutions/check_%: $(EX02_DIR)/check_%.c $(EX02_REFS) $(EX02_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX02_DIR) $(EX02_DIR)/check_$*.c $(EX02_REFS) -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# tests/test_trace_timeline runs the tool that draws chapter 2's timeline.
$(BUILD)/tests/test_trace_timeline: $(BUILD)/labs/tools/trace_timeline
$(BUILD)/labs/tools/trace_timeline: labs/tools/trace_events.h
# tests/test_launch_cluster runs the launcher of chapter 3's tasks.
$(BUILD)/tests/test_launch_cluster: $(BUILD)/labs/tools/launch_cluster
# launch_cluster is one program in labs/tools/, its flags, ports and output in headers.
$(BUILD)/labs/tools/launch_cluster: $(wildcard labs/tools/launch_*.h)
# tests/test_lab02 runs the lab and the checks, so they are built first.
$(BUILD)/tests/test_lab02: $(LAB02) $(EX02_CHECKS) $(EX02_SOLVED)

# The replicated graph beside chapter 1's: one step with two towers. Without
# two accelerators, PoCL is asked for two single-core devices. Then the
# timeline of steps 2-4 of a two-tower run (two PoCL devices sharing two cores).
figures: figures-02
figures-02: $(LAB02) $(BUILD)/labs/tools/trace_timeline
	@mkdir -p book/figures
	POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=1 ./$(LAB02) --num_gpus 2 \
	    --train_steps 1 --max_examples 64 --batch_size 32 --graph book/figures/ch2-towers.dot
	dot -Tsvg book/figures/ch2-towers.dot -o book/figures/ch2-towers.svg
	POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2 ./$(LAB02) --num_gpus 2 \
	    --train_steps 5 --batch_size 256 --trace $(BUILD)/ch2-towers-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch2-towers-trace.json book/figures/ch2-timeline.svg

.PHONY: figures-02
# ==== end of chapter 2 ====

# The book's schematics, drawn from hand-written Graphviz (one concept each;
# not runs of a lab): chapter 0's two kinds of parallelism, chapter 2's copies.
SCHEMATICS := book/figures/ch0-parallelism.svg book/figures/ch2-copies.svg
figures: $(SCHEMATICS)
$(SCHEMATICS): book/figures/%.svg: book/figures/%.dot
	dot -Tsvg $< -o $@

# ==== chapter 3 (labs/03-between-graph): the lab, its launcher, the fuzz target ====
LAB03    := $(BUILD)/labs/03-between-graph/between_graph
LAUNCHER := $(BUILD)/labs/tools/launch_cluster
# tests/test_lab03 runs the lab through the launcher, so both are built first.
$(BUILD)/tests/test_lab03: $(LAB03) $(LAUNCHER)
$(LAB03): $(LAB_COMMON)

# The figure of chapter 3: who talks to whom, with the bytes worker 0 moved
# per step, from a short run of 1 ps and 2 workers; then 2 ps tasks.
figures: figures-03
figures-03: $(LAB03) $(LAUNCHER)
	@mkdir -p book/figures
	./$(LAUNCHER) --ps 2 --workers 2 -- ./$(LAB03) --train_steps 20 --batch_size 128 --log_every 10 \
	    --max_examples 2048 --ps_strategy greedy --cluster_graph book/figures/ch3-cluster.dot
	dot -Tsvg book/figures/ch3-cluster.dot -o book/figures/ch3-cluster.svg
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) --train_steps 12 --batch_size 128 --log_every 10 \
	    --max_examples 2048 --trace $(BUILD)/ch3-worker-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch3-worker-trace.json book/figures/ch3-timeline.svg
.PHONY: figures-03

# ---- the wire protocol's fuzz target ----
#   make fuzz                  builds tests/fuzz/fuzz_wire with libFuzzer (Debian's clang and
#                              libclang-rt-14-dev) and runs it for FUZZ_SECONDS (30) on seeds
#                              that make_corpus writes with the encoders
# Exits 0 when no input crashed the decoder or the parsers; a crash fails the target and
# leaves the input that caused it in build/fuzz/ (replay: build/fuzz/fuzz_wire FILE).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_DIR     := build/fuzz
WIRE_SRC     := $(wildcard src/dist/wire*.c)
WIRE_HDR     := $(wildcard src/dist/wire*.h) src/flowlab.h
FUZZ_CFLAGS  := -std=c11 -Wall -Wextra -Werror -g -O1 -Isrc \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_DIR)/fuzz_wire: tests/fuzz/fuzz_wire.c $(WIRE_SRC) $(WIRE_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz_wire.c $(WIRE_SRC) -o $@

$(FUZZ_DIR)/make_corpus: tests/fuzz/make_corpus.c $(WIRE_SRC) $(WIRE_HDR)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -Isrc tests/fuzz/make_corpus.c $(WIRE_SRC) -o $@ -lm

fuzz: $(FUZZ_DIR)/fuzz_wire $(FUZZ_DIR)/make_corpus
	@mkdir -p $(FUZZ_DIR)/corpus
	./$(FUZZ_DIR)/make_corpus $(FUZZ_DIR)/corpus
	./$(FUZZ_DIR)/fuzz_wire -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus

.PHONY: fuzz
# ==== end of chapter 3 ====

# ==== chapter 3 (labs/03-between-graph): exercises ====
#   make exercises / exercises-solutions cover this chapter too; its checks
#   run offline (no server, no port opened). Each check links only its own file.
EX03_DIR    := labs/03-between-graph/exercises
EX03_NAMES  := round_robin ps_load waiting_log
EX03_OUT    := $(BUILD)/exercises/03-between-graph
EX03_CHECKS := $(patsubst %,$(EX03_OUT)/check_%,$(EX03_NAMES))
EX03_SOLVED := $(patsubst %,$(EX03_OUT)/solutions/check_%,$(EX03_NAMES))

$(EX03_OUT)/check_%: $(EX03_DIR)/check_%.c $(EX03_DIR)/%.c $(EX03_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LAB_COMMON) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX03_DIR) $(EX03_DIR)/check_$*.c $(EX03_DIR)/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX03_OUT)/solutions/check_%: $(EX03_DIR)/check_%.c $(EX03_DIR)/solutions/%.c $(EX03_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LAB_COMMON) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX03_DIR) $(EX03_DIR)/check_$*.c $(EX03_DIR)/solutions/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# tests/test_lab03_exercises runs the checks, so they are built first; it
# also includes the reference waiting_log.c to read a log the runtime wrote.
$(BUILD)/tests/test_lab03_exercises: $(EX03_CHECKS) $(EX03_SOLVED)
$(BUILD)/tests/test_lab03_exercises: private CFLAGS += -I$(EX03_DIR)
# ==== end of chapter 3's exercises ====

# ==== chapter 4 (labs/04-synchronous-training): exercises, figures ====
#   make exercises / exercises-solutions cover this chapter too; its checks run
#   offline (no server, no port opened). Each check links only its own file.
#   The chapter's program is chapter 3's lab (--sync_replicas true); its
#   failure drill is labs/04-synchronous-training/ps_dies.sh.
EX04_DIR    := labs/04-synchronous-training/exercises
EX04_NAMES  := accumulator steps_lost fault_log
EX04_OUT    := $(BUILD)/exercises/04-synchronous-training
EX04_CHECKS := $(patsubst %,$(EX04_OUT)/check_%,$(EX04_NAMES))
EX04_SOLVED := $(patsubst %,$(EX04_OUT)/solutions/check_%,$(EX04_NAMES))

$(EX04_OUT)/check_%: $(EX04_DIR)/check_%.c $(EX04_DIR)/%.c $(EX04_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX04_DIR) $(EX04_DIR)/check_$*.c $(EX04_DIR)/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX04_OUT)/solutions/check_%: $(EX04_DIR)/check_%.c $(EX04_DIR)/solutions/%.c $(EX04_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX04_DIR) $(EX04_DIR)/check_$*.c $(EX04_DIR)/solutions/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# tests/test_lab04_exercises runs the checks, so they are built first; it
# also includes the reference accumulator.c and fault_log.c to hold them
# against the ps's real accumulators and a log the failure drill wrote.
$(BUILD)/tests/test_lab04_exercises: $(EX04_CHECKS) $(EX04_SOLVED)
$(BUILD)/tests/test_lab04_exercises: private CFLAGS += -I$(EX04_DIR)

# The figures of chapter 4, from real runs of chapter 3's lab with 1 ps and 2
# workers: the global step over time and the loss by global step, synchronous
# beside asynchronous (every step logged; seconds added up from images/sec by
# progress_table.sh), then the chief's timeline of synchronous steps 2 to 4.
CH4_RUN := --max_examples 4096 --batch_size 64 --train_steps 80 --log_every 1
figures: figures-04
figures-04: $(LAB03) $(LAUNCHER) $(BUILD)/labs/tools/trace_timeline
	@mkdir -p book/figures $(BUILD)/ch4
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) $(CH4_RUN) --sync_replicas true > $(BUILD)/ch4/sync.log
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) $(CH4_RUN) > $(BUILD)/ch4/async.log
	sh labs/tools/progress_table.sh 64 < $(BUILD)/ch4/sync.log > $(BUILD)/ch4/sync.txt
	sh labs/tools/progress_table.sh 64 < $(BUILD)/ch4/async.log > $(BUILD)/ch4/async.txt
	gnuplot -e "sync='$(BUILD)/ch4/sync.txt'; async='$(BUILD)/ch4/async.txt'; \
	    steps='book/figures/ch4-global-step.svg'; losses='book/figures/ch4-loss.svg'" labs/tools/ch4-progress.gp
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) --train_steps 12 --batch_size 64 --log_every 10 \
	    --max_examples 2048 --sync_replicas true --trace $(BUILD)/ch4/sync-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch4/sync-trace.json book/figures/ch4-timeline.svg
.PHONY: figures-04
# ==== end of chapter 4 ====

# ==== chapter 6 (labs/06-allreduce): exercises ====
#   make exercises / exercises-solutions cover this chapter too. The step-time
#   and fusion-threshold checks run offline; the reduce-scatter check is built
#   with mpicc (left out where there is none) and starts itself under
#   `mpirun -np 2` and `-np 3`, with the lab's real all-gather.
MPICC       ?= mpicc
EX06_DIR    := labs/06-allreduce/exercises
EX06_NAMES  := step_time fusion_threshold
ifneq ($(shell command -v $(MPICC) 2>/dev/null),)
EX06_NAMES  := reduce_scatter $(EX06_NAMES)
endif
EX06_OUT    := $(BUILD)/exercises/06-allreduce
EX06_CHECKS := $(patsubst %,$(EX06_OUT)/check_%,$(EX06_NAMES))
EX06_SOLVED := $(patsubst %,$(EX06_OUT)/solutions/check_%,$(EX06_NAMES))
EX06_H      := $(wildcard $(EX06_DIR)/*.h) $(EXERCISE_CHECK_H)
# The reduce-scatter check includes the lab's ring_allreduce.c for its all-gather.
EX06_RING   := labs/06-allreduce/ring_allreduce.c labs/06-allreduce/ring_allreduce.h

# The step-time check holds answers against the lab's cost model (cost_model.c).
EX06_MODEL  := labs/06-allreduce/cost_model.c

$(EX06_OUT)/check_%: $(EX06_DIR)/check_%.c $(EX06_DIR)/%.c $(EX06_H) $(EX06_MODEL) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX06_DIR) $(EX06_DIR)/check_$*.c $(EX06_DIR)/$*.c $(EX06_MODEL) -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX06_OUT)/solutions/check_%: $(EX06_DIR)/check_%.c $(EX06_DIR)/solutions/%.c $(EX06_H) $(EX06_MODEL) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX06_DIR) $(EX06_DIR)/check_$*.c $(EX06_DIR)/solutions/$*.c $(EX06_MODEL) -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX06_OUT)/check_reduce_scatter: $(EX06_DIR)/check_reduce_scatter.c $(EX06_DIR)/reduce_scatter.c $(EX06_H) $(EX06_RING)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -I$(EX06_DIR) $(EX06_DIR)/check_reduce_scatter.c $(EX06_DIR)/reduce_scatter.c -o $@ $(LDFLAGS) -lm

$(EX06_OUT)/solutions/check_reduce_scatter: $(EX06_DIR)/check_reduce_scatter.c $(EX06_DIR)/solutions/reduce_scatter.c $(EX06_H) $(EX06_RING)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -I$(EX06_DIR) $(EX06_DIR)/check_reduce_scatter.c $(EX06_DIR)/solutions/reduce_scatter.c -o $@ $(LDFLAGS) -lm

# tests/test_lab06_exercises runs the checks, so they are built first; it
# also includes fusion_judge.h to hold tables it should refuse against it.
$(BUILD)/tests/test_lab06_exercises: $(EX06_CHECKS) $(EX06_SOLVED)
$(BUILD)/tests/test_lab06_exercises: private CFLAGS += -I$(EX06_DIR)
$(BUILD)/tests/test_lab06_exercises: $(EX06_MODEL) labs/06-allreduce/cost_model.h
# ==== end of chapter 6's exercises ====

# ==== make exercises: every chapter's checks against your files, in chapter order ====
# Failing checks are expected until you solve them; each FAIL line names the
# file to edit, and the exit status is non-zero while any exercise fails.
# $(call run_exercise_checks,CHAPTER,CHECKS) runs one chapter's checks, prints
# how many pass and records a failure in the shell variable `failed`.
run_exercise_checks = pass=0; for t in $(2); do if ./$$t; then pass=$$((pass + 1)); else failed=1; fi; done; \
	echo "chapter $(1): $$pass of $(words $(2)) exercises pass";

exercises: $(EX01_CHECKS) $(EX02_CHECKS) $(EX03_CHECKS) $(EX04_CHECKS) $(EX06_CHECKS)
	@failed=0; \
	 $(call run_exercise_checks,1,$(EX01_CHECKS)) \
	 $(call run_exercise_checks,2,$(EX02_CHECKS)) \
	 $(call run_exercise_checks,3,$(EX03_CHECKS)) \
	 $(call run_exercise_checks,4,$(EX04_CHECKS)) \
	 $(call run_exercise_checks,6,$(EX06_CHECKS)) \
	 exit $$failed

# The same checks against the reference solutions: fails unless all pass.
exercises-solutions: $(EX01_SOLVED) $(EX02_SOLVED) $(EX03_SOLVED) $(EX04_SOLVED) $(EX06_SOLVED)
	@failed=0; \
	 $(call run_exercise_checks,1,$(EX01_SOLVED)) \
	 $(call run_exercise_checks,2,$(EX02_SOLVED)) \
	 $(call run_exercise_checks,3,$(EX03_SOLVED)) \
	 $(call run_exercise_checks,4,$(EX04_SOLVED)) \
	 $(call run_exercise_checks,6,$(EX06_SOLVED)) \
	 exit $$failed

# ==== the book's program output (not part of `make test`; regenerate by hand, like figures) ====
#   make book-outputs   book/outputs/*.txt from short real runs of the labs (labs/tools/book-outputs.sh);
#                       then `make book-sync` copies them into the chapters, and `make book-check`
#                       fails while a block differs from its file (speeds and times may differ)
.PHONY: book-outputs
book-outputs: labs $(EX01_OUT)/check_dense_layer
	sh labs/tools/book-outputs.sh

# ==== figures a reader can read: the bench's CSV, scope-level graph pictures, the book as HTML ====
#   make bench-charts   redraws book/figures/bench.svg and roofline.svg from the last `make bench`
#                       (build/bench/*.csv), or from the sample in tests/data/ when there is none
#   make book-html      the chapters and their figures as HTML pages in build/book-html/ (pandoc);
#                       open build/book-html/index.html. tests/test_book_html builds it in `make test`,
#                       tests/test_figures renders every figure the book includes (rsvg-convert)
$(BENCH): tests/bench/bench_csv.h
# tests/test_bench_csv reads back what the bench's CSV writer writes.
$(BUILD)/tests/test_bench_csv: tests/bench/bench_csv.h
$(TEST_BIN): tests/tools.h
BENCH_CSV  = $(firstword $(wildcard $(BUILD)/bench/results.csv) tests/data/bench-results.csv)
ROOF_CSV   = $(firstword $(wildcard $(BUILD)/bench/roofline.csv) tests/data/bench-roofline.csv)
.PHONY: bench-charts
bench-charts:
	gnuplot -e "csv='$(BENCH_CSV)'; out='book/figures/bench.svg'" tests/bench/chart.gp
	gnuplot -e "points='$(ROOF_CSV)'; $$(sed -n 's/^# peak \([0-9.]*\) bandwidth \([0-9.]*\)/peak=\1; bw=\2/p' $(ROOF_CSV)); out='book/figures/roofline.svg'" tests/bench/roofline.gp
.PHONY: book-html
book-html:
	sh labs/tools/book-html.sh $(BUILD)/book-html
# ==== end of figures ====

# ==== chapter 6 (labs/06-allreduce): allreduce on MPI ====
#   make labs / make tests build the lab and its ring's check with mpicc (Debian's
#   libopenmpi-dev) when mpicc is there; without it the rest builds and test_lab06 skips.
#   make figures-06   book/figures/ch6-cost-model.svg: the cost model's scaling to 512 workers
# The cost model (labs/06-allreduce/cost_model.c) is plain C: mpicc links it into the lab, cc
# into labs/tools/cost_model and the bench; tests/test_cost_model includes it.
COST_MODEL := $(BUILD)/labs/tools/cost_model
$(COST_MODEL): labs/tools/cost_model.c labs/06-allreduce/cost_model.c labs/06-allreduce/cost_model.h \
               labs/common/model.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) labs/tools/cost_model.c labs/06-allreduce/cost_model.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)
$(BUILD)/tests/test_cost_model: labs/06-allreduce/cost_model.c labs/06-allreduce/cost_model.h $(COST_MODEL)
MPICC      ?= mpicc
LAB06      := $(BUILD)/labs/06-allreduce/allreduce
LAB06_SRC  := $(wildcard labs/06-allreduce/*.c)
RING_CHECK := $(BUILD)/tests/mpi/ring_check
# --allreduce nccl: NCCL ships with the CUDA toolkit; built in when CUDA is and nccl.h is there.
ifeq ($(CUDA_OK),yes)
ifneq ($(wildcard $(CUDA_HOME)/include/nccl.h),)
LAB06_NCCL_FLAGS := -DFL_HAVE_NCCL -I$(CUDA_HOME)/include
LAB06_NCCL_LIBS  := -L$(CUDA_HOME)/lib64 -lnccl
endif
endif
ifneq ($(shell command -v $(MPICC) 2>/dev/null),)
labs: $(LAB06)
$(LAB06): $(LAB06_SRC) $(wildcard labs/06-allreduce/*.h) $(LAB_COMMON) $(LIB) $(CUDA_STAMP)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(LAB06_NCCL_FLAGS) $(LAB06_SRC) -o $@ $(LDFLAGS) $(LIB) $(LAB06_NCCL_LIBS) $(LDLIBS)

$(RING_CHECK): tests/mpi/ring_check.c labs/06-allreduce/ring_allreduce.c labs/06-allreduce/ring_allreduce.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -Ilabs/06-allreduce tests/mpi/ring_check.c labs/06-allreduce/ring_allreduce.c \
	    -o $@ $(LDFLAGS) -lm

# tests/test_lab06 runs the lab and the ring's check under mpirun, so both are built first.
$(BUILD)/tests/test_lab06: $(LAB06) $(RING_CHECK)

# make bench times MPI_Allreduce on 2 ranks with this probe (alpha and bandwidth for the model).
ALLREDUCE_PROBE := $(BUILD)/bench/allreduce_probe
$(ALLREDUCE_PROBE): tests/bench/allreduce_probe.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $< -o $@ $(LDFLAGS)

# The figure: the model's scaling efficiency to 512 workers on a 25 Gbit/s, 25 us network
# (the Horovod paper's), ring allreduce against parameter servers, for Inception V3 on P100s
# (23,851,784 float32 parameters; 64 images at 142 images/sec, TensorFlow's 2017 benchmarks:
# 451 ms), where the published points come from, and for chapter 1's model with one worker's
# step of 128 images measured here by a 1-process run of the lab (median after 2 warm-up steps).
CH6_NET   := --alpha_us 25 --bandwidth_gbit 25
CH6_MPI   := OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 1
figures: figures-06
figures-06: $(COST_MODEL) $(LAB06)
	@mkdir -p book/figures $(BUILD)/ch6
	./$(COST_MODEL) $(CH6_NET) --bytes 95407136 --compute_ms 451 --batch_size 64 --ps_shards 8 \
	    --csv $(BUILD)/ch6/inception-ps8.csv
	./$(COST_MODEL) $(CH6_NET) --bytes 95407136 --compute_ms 451 --batch_size 64 --ps_shards 32 \
	    --csv $(BUILD)/ch6/inception-ps32.csv
	ms=$$($(CH6_MPI) ./$(LAB06) --batch_size 128 --train_steps 12 --log_every 1 \
	    | sed -n 's/^Step .*(\([0-9.]*\) images\/sec)$$/\1/p' | tail -n +3 | sort -n \
	    | awk '{v[NR] = $$1} END {if (NR) printf "%.1f", 128000 / v[int((NR + 1) / 2)]}') && \
	./$(COST_MODEL) $(CH6_NET) --compute_ms "$$ms" --ps_shards 8 --csv $(BUILD)/ch6/chapter1.csv && \
	gnuplot -e "dir='$(BUILD)/ch6'; ch1_ms='$$ms'; out='book/figures/ch6-cost-model.svg'" labs/tools/ch6-cost-model.gp
.PHONY: figures-06
endif
# ==== end of chapter 6 ====
