# labs/04-synchronous-training/lab.mk: chapter 4's exercises and figures; included by the Makefile.
#   make exercises / exercises-solutions cover this chapter too; its checks run
#   offline (no server, no port opened). Each check links only its own file.
#   The chapter's program is chapter 3's lab (--sync_replicas true); its
#   failure drill is labs/04-synchronous-training/ps_dies.sh.
EX04_DIR    := labs/04-synchronous-training/exercises
EX04_NAMES  := accumulator steps_lost checkpoint_interval
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
# also includes the reference accumulator.c, steps_lost.c and
# checkpoint_interval.c to hold them against the ps's real accumulators and
# against each other.
$(BUILD)/tests/test_lab04_exercises: $(EX04_CHECKS) $(EX04_SOLVED)
$(BUILD)/tests/test_lab04_exercises: private CFLAGS += -I$(EX04_DIR)

# The figures of chapter 4, from real runs of chapter 3's lab with 1 ps and 2
# workers: the global step over time and the loss by global step, synchronous
# beside asynchronous (every step logged; seconds added up from images/sec by
# progress_table.sh), then the chief's timeline of synchronous steps 2 to 4.
CH4_RUN := --max_examples 4096 --batch_size 64 --train_steps 80 --log_every 1
figures: figures-04
figures-04: $(LAB03) $(LAUNCHER) $(BUILD)/labs/tools/trace_timeline
	@mkdir -p $(FIGURES_DIR) $(BUILD)/ch4
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) $(CH4_RUN) --sync_replicas true > $(BUILD)/ch4/sync.log
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) $(CH4_RUN) > $(BUILD)/ch4/async.log
	sh labs/tools/progress_table.sh 64 < $(BUILD)/ch4/sync.log > $(BUILD)/ch4/sync.txt
	sh labs/tools/progress_table.sh 64 < $(BUILD)/ch4/async.log > $(BUILD)/ch4/async.txt
	gnuplot -e "sync='$(BUILD)/ch4/sync.txt'; async='$(BUILD)/ch4/async.txt'; \
	    steps='$(FIGURES_DIR)/ch4-global-step.svg'; losses='$(FIGURES_DIR)/ch4-loss.svg'" labs/tools/ch4-progress.gp
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) --train_steps 12 --batch_size 64 --log_every 10 \
	    --max_examples 2048 --sync_replicas true --trace $(BUILD)/ch4/sync-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch4/sync-trace.json $(FIGURES_DIR)/ch4-timeline.svg
.PHONY: figures-04
