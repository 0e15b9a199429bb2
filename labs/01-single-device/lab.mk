# labs/01-single-device/lab.mk: chapter 1's exercises and figure; included by the Makefile.
#   make exercises            builds the exercise checks against your files and runs them
#   make exercises-solutions  the same against the reference solutions; fails unless all pass
#   make figures              ch1-model.svg from a 1-step run of the lab (into FIGURES_DIR)
#   make figures-lr           chapter 2's learning-rate experiment: four 2-epoch runs (~8 min)
LAB01       := $(BUILD)/labs/01-single-device/single_device
EX01_DIR    := labs/01-single-device/exercises
EX01_NAMES  := dense_layer momentum accuracy
EX01_OUT    := $(BUILD)/exercises/01-single-device
EX01_CHECKS := $(patsubst %,$(EX01_OUT)/check_%,$(EX01_NAMES))
EX01_SOLVED := $(patsubst %,$(EX01_OUT)/solutions/check_%,$(EX01_NAMES))
# What every exercise check includes (fail, pass, run).
EXERCISE_CHECK_H := labs/common/check.h

.PHONY: exercises exercises-solutions figures figures-lr

$(EX01_OUT)/check_%: $(EX01_DIR)/check_%.c $(EX01_DIR)/%.c $(EX01_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX01_DIR) $(EX01_DIR)/check_$*.c $(EX01_DIR)/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

$(EX01_OUT)/solutions/check_%: $(EX01_DIR)/check_%.c $(EX01_DIR)/solutions/%.c $(EX01_DIR)/exercises.h $(EXERCISE_CHECK_H) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX01_DIR) $(EX01_DIR)/check_$*.c $(EX01_DIR)/solutions/$*.c -o $@ $(LDFLAGS) $(LIB) $(LDLIBS)

# tests/test_lab01 runs the lab and the checks, so they are built first.
$(BUILD)/tests/test_lab01: $(LAB01) $(EX01_CHECKS) $(EX01_SOLVED)

figures: $(LAB01)
	@mkdir -p $(FIGURES_DIR)
	./$(LAB01) --device /cpu:0 --train_steps 1 --max_examples 64 --batch_size 32 \
	    --graph $(FIGURES_DIR)/ch1-model.dot
	dot -Tsvg $(FIGURES_DIR)/ch1-model.dot -o $(FIGURES_DIR)/ch1-model.svg

# Goyal et al. 2017's linear scaling and warm-up on this model, from real
# runs; the logs and tables stay in build/lr/ for the reader to compare.
figures-lr: $(LAB01)
	@mkdir -p $(FIGURES_DIR)
	labs/tools/lr-scaling.sh ./$(LAB01) $(BUILD)/lr
	gnuplot -e "dir='$(BUILD)/lr'; out='$(FIGURES_DIR)/ch2-lr-scaling.svg'" labs/tools/lr-scaling.gp
