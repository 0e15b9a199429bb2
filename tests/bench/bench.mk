# tests/bench/bench.mk: make bench (one table of side-by-side measurements, CSV
# and charts) and make bench-charts; included by the Makefile.
BENCH := $(BUILD)/bench/bench
# bench.c and its parts: the table they share, chapter 1's step beside PyTorch, chapter 6's allreduce
# rows with its cost model, chapter 3's clusters and in-graph-across-tasks rows (bench_cluster.c,
# bench_replication.c) on the same two CPUs (bench_cores.c), chapter 4's secured cluster
# (bench_tls.c: certificates by tests/make_test_certs.sh, so openssl), chapter 7's pipeline.
BENCH_SRC := tests/bench/bench.c tests/bench/bench_table.c tests/bench/bench_training.c tests/bench/bench_allreduce.c \
             tests/bench/bench_pipeline.c tests/bench/bench_replication.c tests/bench/bench_tls.c \
             tests/bench/bench_cluster.c tests/bench/bench_cores.c tests/bench/bench_transport.c \
             labs/06-allreduce/cost_model.c
$(BENCH): $(BENCH_SRC) tests/bench/bench_table.h tests/bench/bench_training.h tests/bench/bench_allreduce.h tests/bench/bench_csv.h \
          tests/bench/bench_pipeline.h tests/bench/bench_replication.h tests/bench/bench_tls.h \
          tests/bench/bench_cluster.h tests/bench/bench_cores.h tests/bench/bench_transport.h tests/loopback.h \
          labs/06-allreduce/cost_model.h labs/tools/trace_events.h $(LIB) $(CLUSTER_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BENCH_SRC) -o $@ $(LDFLAGS) -lclblast $(CLUSTER_LINK)

# The scaling rows (chapters 2-7) run ROUNDS rounds (3) of 40 measured steps and print ranges
# (a target's sides alternate, 4 runs of 10 steps each); QUICK=1 measures 10 steps a round (a smoke run: not figures to quote). On a 2-core AMD EPYC
# shared with other jobs (load average 16 falling to 9) those rows took 29 minutes (QUICK=1
# ROUNDS=2: 13); the kernels and chapter 1's rows add a few. `make bench-scaling` runs the
# scaling rows alone (build/bench/scaling.txt and .csv).
# ALLREDUCE_PROBE (chapter 6's lab.mk) is empty where there is no mpicc.
ROUNDS ?= 3
QUICK ?= 0
BENCH_ENV = OPENBLAS_THREAD_TIMEOUT=4 BENCH_ROUNDS=$(ROUNDS) BENCH_QUICK=$(QUICK)
bench: deps
	$(MAKE) labs $(BENCH) $(ALLREDUCE_PROBE)
	$(BENCH_ENV) ./$(BENCH) $(BUILD)/bench/results.csv | tee $(BUILD)/bench/results.txt
	$(MAKE) bench-charts
	@echo "table: $(BUILD)/bench/results.txt, charts: $(FIGURES_DIR)/bench.svg, $(FIGURES_DIR)/roofline.svg"

bench-scaling: deps
	$(MAKE) labs $(BENCH) $(ALLREDUCE_PROBE)
	$(BENCH_ENV) ./$(BENCH) --scaling | tee $(BUILD)/bench/scaling.txt

# `make bench-pipeline`: chapter 7's rows alone, in one process and with the stages on two tasks
# (a minute; build/bench/pipeline.txt and .csv).
bench-pipeline: deps
	$(MAKE) labs $(BENCH)
	$(BENCH_ENV) ./$(BENCH) --pipeline | tee $(BUILD)/bench/pipeline.txt

# tests/test_bench_csv reads back what the bench's CSV writer writes.
$(BUILD)/tests/test_bench_csv: tests/bench/bench_csv.h

#   make bench-charts   redraws bench.svg and roofline.svg (into FIGURES_DIR) from the last `make bench`
#                       (build/bench/*.csv), or from the sample in tests/data/ when there is none
BENCH_CSV  = $(firstword $(wildcard $(BUILD)/bench/results.csv) tests/data/bench-results.csv)
ROOF_CSV   = $(firstword $(wildcard $(BUILD)/bench/roofline.csv) tests/data/bench-roofline.csv)
.PHONY: bench bench-scaling bench-pipeline bench-charts
bench-charts:
	@mkdir -p $(FIGURES_DIR)
	gnuplot -e "csv='$(BENCH_CSV)'; out='$(FIGURES_DIR)/bench.svg'" tests/bench/chart.gp
	gnuplot -e "points='$(ROOF_CSV)'; $$(sed -n 's/^# peak \([0-9.]*\) bandwidth \([0-9.]*\)/peak=\1; bw=\2/p' $(ROOF_CSV)); out='$(FIGURES_DIR)/roofline.svg'" tests/bench/roofline.gp

# tests/test_bench_ranges includes bench_table.c (the rows measured in rounds) and runs
# book_check on such rows.
$(BUILD)/tests/test_bench_ranges: tests/bench/bench_table.c tests/bench/bench_table.h tests/bench/bench_csv.h \
                                  $(BUILD)/labs/tools/book_check
