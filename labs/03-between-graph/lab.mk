# labs/03-between-graph/lab.mk: chapter 3's lab, its figures and exercises; included by the Makefile.
LAB03    := $(BUILD)/labs/03-between-graph/between_graph
LAUNCHER := $(BUILD)/labs/tools/launch_cluster
# tests/test_lab03 runs the lab through the launcher, so both are built first.
$(BUILD)/tests/test_lab03: $(LAB03) $(LAUNCHER)
# tests/test_lab03_attack runs the lab's ps and worker itself, under a slowloris.
$(BUILD)/tests/test_lab03_attack: $(LAB03)
# tests/test_lab03_hybrid holds the hybrid (--num_gpus) against chapter 2's towers.
$(BUILD)/tests/test_lab03_hybrid: $(LAB03) $(LAUNCHER) $(BUILD)/labs/02-in-graph-towers/in_graph_towers
$(LAB03): $(LAB_COMMON) $(wildcard labs/03-between-graph/*.h)
# A program of a cluster: it links the cluster rooms' archive and libevent,
# which the labs of chapters 0-2 do not.
$(LAB03): labs/03-between-graph/between_graph.c $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(CLUSTER_LINK)

# The figures of chapter 3: who talks to whom, with the bytes worker 0 moved
# per step, from a short run of 2 ps tasks and 2 workers; then one traced
# step of a worker of 1 ps and 2 workers (between-graph), and one traced
# in-graph step across 1 ps and 2 worker tasks (labs/tools/in_graph_trace.sh).
figures: figures-03
figures-03: $(LAB03) $(LAUNCHER) $(BUILD)/labs/tools/flowlab_server $(BUILD)/labs/02-in-graph-towers/in_graph_towers \
            $(BUILD)/labs/tools/trace_timeline
	@mkdir -p $(FIGURES_DIR)
	./$(LAUNCHER) --ps 2 --workers 2 -- ./$(LAB03) --train_steps 20 --batch_size 128 --log_every 10 \
	    --max_examples 2048 --ps_strategy greedy --cluster_graph $(FIGURES_DIR)/ch3-cluster.dot
	dot -Tsvg $(FIGURES_DIR)/ch3-cluster.dot -o $(FIGURES_DIR)/ch3-cluster.svg
	./$(LAUNCHER) --ps 1 --workers 2 -- ./$(LAB03) --train_steps 4 --batch_size 128 --log_every 10 \
	    --max_examples 2048 --trace $(BUILD)/ch3-worker-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch3-worker-trace.json $(FIGURES_DIR)/ch3-timeline.svg
	sh labs/tools/in_graph_trace.sh $(BUILD) $(BUILD)/ch3-in-graph-trace.json
	./$(BUILD)/labs/tools/trace_timeline $(BUILD)/ch3-in-graph-trace.json $(FIGURES_DIR)/ch3-in-graph-timeline.svg
.PHONY: figures-03

# The measurement of chapter 3's first half: in-graph replication across tasks against between-graph
# for 1, 2, 4 and 8 workers, 3 rounds of 40 steps on CPUs 0,1 (ingraph_vs_between.sh); the CSV and the figures go to FIGURES_DIR as
# ch3-replication.csv, ch3-replication.svg and ch3-extrapolation.svg (the
# in-graph client's costs fitted to a line in N and drawn to 1,000 workers).
figures-replication: $(LAB03) $(LAUNCHER) $(BUILD)/labs/02-in-graph-towers/in_graph_towers \
                     $(BUILD)/labs/tools/flowlab_server
	@mkdir -p $(FIGURES_DIR)
	labs/tools/ingraph_vs_between.sh $(BUILD) $(BUILD)/replication
	cp $(BUILD)/replication/replication.csv $(FIGURES_DIR)/ch3-replication.csv
	gnuplot -e "csv='$(FIGURES_DIR)/ch3-replication.csv'; out='$(FIGURES_DIR)/ch3-replication.svg'" \
	    labs/tools/replication.gp
	sh labs/tools/replication_fit.sh $(FIGURES_DIR)/ch3-replication.csv $(BUILD)/replication/fitted.csv
	gnuplot -e "csv='$(FIGURES_DIR)/ch3-replication.csv'; fitted='$(BUILD)/replication/fitted.csv'; \
	    out='$(FIGURES_DIR)/ch3-extrapolation.svg'" labs/tools/replication_fit.gp
.PHONY: figures-replication

# Exercises:
#   make exercises / exercises-solutions cover this chapter too; its checks
#   run offline (no server, no port opened). Each check links only its own file.
EX03_DIR    := labs/03-between-graph/exercises
EX03_NAMES  := partition_edges cross_task_bytes round_robin ps_load staleness
EX03_OUT    := $(BUILD)/exercises/03-between-graph
EX03_CHECKS := $(patsubst %,$(EX03_OUT)/check_%,$(EX03_NAMES))
EX03_SOLVED := $(patsubst %,$(EX03_OUT)/solutions/check_%,$(EX03_NAMES))

$(EX03_OUT)/check_%: $(EX03_DIR)/check_%.c $(EX03_DIR)/%.c $(EX03_DIR)/exercises.h $(EX03_DIR)/check_graphs.h $(EXERCISE_CHECK_H) $(LAB_COMMON) $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX03_DIR) $(EX03_DIR)/check_$*.c $(EX03_DIR)/$*.c -o $@ $(LDFLAGS) $(CLUSTER_LINK)

$(EX03_OUT)/solutions/check_%: $(EX03_DIR)/check_%.c $(EX03_DIR)/solutions/%.c $(EX03_DIR)/exercises.h $(EX03_DIR)/check_graphs.h $(EXERCISE_CHECK_H) $(LAB_COMMON) $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(EX03_DIR) $(EX03_DIR)/check_$*.c $(EX03_DIR)/solutions/$*.c -o $@ $(LDFLAGS) $(CLUSTER_LINK)

# tests/test_lab03_exercises runs the checks, so they are built first; it
# also includes the reference staleness.c to hold it against chapter 4's claim.
$(BUILD)/tests/test_lab03_exercises: $(EX03_CHECKS) $(EX03_SOLVED)
$(BUILD)/tests/test_lab03_exercises: private CFLAGS += -I$(EX03_DIR)
