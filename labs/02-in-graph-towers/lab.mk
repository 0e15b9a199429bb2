# labs/02-in-graph-towers/lab.mk: chapter 2's lab, its exercises and figures; included by the Makefile.
#   make exercises / exercises-solutions / figures cover this chapter too.
LAB02       := $(BUILD)/labs/02-in-graph-towers/in_graph_towers
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
# Its cluster mode makes chapter 2's lab the client of a cluster (TensorFlow's
# master lives in the client): it links the cluster rooms, as chapter 3's does.
$(LAB02): labs/02-in-graph-towers/in_graph_towers.c labs/02-in-graph-towers/cluster_mode.h $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(CLUSTER_LINK)

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
	@mkdir -p $(FIGURES_DIR)
	POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=1 ./$(LAB02) --num_gpus 2 \
	    --train_steps 1 --max_examples 64 --batch_size 32 --graph $(FIGURES_DIR)/ch2-towers.dot
	dot -Tsvg $(FIGURES_DIR)/ch2-towers.dot -o $(FIGURES_DIR)/ch2-towers.svg
	POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2 ./$(LAB02) --num_gpus 2 \
	    --train_steps 5 --batch_size 256 --trace $(BUILD)/ch2-towers-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch2-towers-trace.json $(FIGURES_DIR)/ch2-timeline.svg

.PHONY: figures-02
