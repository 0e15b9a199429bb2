# labs/07-model-parallel/lab.mk: chapter 7's lab (model parallelism), its trace
# report, exercises and figure; included by the Makefile.
#   make figures-07   the pipeline's bubble at M = 1, 2, 4, 8 from real runs (ch7-bubble.csv, .svg)
#                     and the timelines of M = 1 and M = 4 (ch7-timeline-m1.svg, -m4.svg)
LAB07        := $(BUILD)/labs/07-model-parallel/model_parallel
LAB07_REPORT := $(BUILD)/labs/07-model-parallel/trace_report

# The lab is one program of three files (the splits in headers).
$(LAB07): $(LAB_COMMON) labs/07-model-parallel/pipeline.h labs/07-model-parallel/tensor_split.h \
          labs/07-model-parallel/layers.h labs/07-model-parallel/stage_cut.h labs/07-model-parallel/schedule.h
# --stage_hosts makes it the client of a cluster: it links the cluster rooms, as chapter 2's does.
$(LAB07): labs/07-model-parallel/model_parallel.c $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(CLUSTER_LINK)
$(LAB07_REPORT): labs/tools/trace_events.h
EX07_DIR    := labs/07-model-parallel/exercises
EX07_NAMES  := bubble balanced_cut split_bytes schedule_memory
EX07_OUT    := $(BUILD)/exercises/07-model-parallel
EX07_CHECKS := $(patsubst %,$(EX07_OUT)/check_%,$(EX07_NAMES))
EX07_SOLVED := $(patsubst %,$(EX07_OUT)/solutions/check_%,$(EX07_NAMES))

# Each check links only its own exercise file (plain C: no graph is built).
$(EX07_OUT)/check_%: $(EX07_DIR)/check_%.c $(EX07_DIR)/%.c $(EX07_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX07_DIR) $(EX07_DIR)/check_$*.c $(EX07_DIR)/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX07_OUT)/solutions/check_%: $(EX07_DIR)/check_%.c $(EX07_DIR)/solutions/%.c $(EX07_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX07_DIR) $(EX07_DIR)/check_$*.c $(EX07_DIR)/solutions/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# tests/test_lab07_exercises runs the checks, so they are built first; it
# includes two reference solutions, which include exercises.h.
$(BUILD)/tests/test_lab07_exercises: $(EX07_CHECKS) $(EX07_SOLVED)
$(BUILD)/tests/test_lab07_exercises: private CFLAGS += -I$(EX07_DIR)
$(BUILD)/tests/test_lab07_exercises: $(EX07_DIR)/solutions/bubble.c $(EX07_DIR)/solutions/split_bytes.c
# tests/test_lab07 runs the lab and its trace report.
$(BUILD)/tests/test_lab07: $(LAB07) $(LAB07_REPORT) tests/task_servers.h $(BUILD)/labs/tools/flowlab_server

# The bubble: steps 2-4 of the split by layers traced with M = 1, 2, 4, 8
# micro-batches of a batch of 128, on two PoCL devices sharing two workers,
# each device's idle fraction beside GPipe's formula (about a minute); then
# the traces of M = 1 and M = 4 drawn as timelines.
figures: figures-07
figures-07: $(LAB07) $(LAB07_REPORT) $(BUILD)/labs/tools/trace_timeline
	@mkdir -p $(FIGURES_DIR) $(BUILD)/ch7
	echo "micro_batches,formula,gpu0_idle,gpu1_idle,mean_idle" > $(FIGURES_DIR)/ch7-bubble.csv
	for m in 1 2 4 8; do \
	    POCL_DEVICES="pthread pthread" POCL_MAX_PTHREAD_COUNT=2 ./$(LAB07) --split layers --micro_batches $$m \
	        --batch_size 128 --train_steps 5 --max_examples 1024 --trace $(BUILD)/ch7/bubble-$$m.json > /dev/null && \
	    ./$(LAB07_REPORT) $(BUILD)/ch7/bubble-$$m.json --micro_batches $$m --csv >> $(FIGURES_DIR)/ch7-bubble.csv \
	    || exit 1; done
	gnuplot -e "csv='$(FIGURES_DIR)/ch7-bubble.csv'; out='$(FIGURES_DIR)/ch7-bubble.svg'" labs/tools/ch7-bubble.gp
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch7/bubble-1.json $(FIGURES_DIR)/ch7-timeline-m1.svg
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch7/bubble-4.json $(FIGURES_DIR)/ch7-timeline-m4.svg
.PHONY: figures-07
