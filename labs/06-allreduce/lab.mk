# labs/06-allreduce/lab.mk: chapter 6's MPI lab, its exercises and figure; included by the Makefile.
#   make exercises / exercises-solutions cover this chapter too. The step-time
#   and fusion-threshold checks run offline; the reduce-scatter check is built
#   with mpicc (left out where there is none) and starts itself under
#   `mpirun -np 2` and `-np 3`, with the lab's real all-gather.
MPICC       ?= mpicc
EX06_DIR    := labs/06-allreduce/exercises
EX06_NAMES  := step_time fusion_threshold ps_shards
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

#   make labs / make tests build the lab and its ring's check with mpicc (Debian's
#   libopenmpi-dev) when mpicc is there; without it the rest builds and test_lab06 skips.
#   make figures-06   ch6-cost-model.svg (into FIGURES_DIR): the cost model's scaling to 512 workers
#   make figures-links  ch6-links.svg and .csv: the labs on links shaped to 1 and 10 Gbit/s (as root)
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
# This lab alone links NCCL and cudart (nccl_allreduce.c calls both); the CUDA backend is a
# module the registry opens at run time (cuda/backend.mk).
ifeq ($(CUDA_OK),yes)
ifneq ($(wildcard $(CUDA_HOME)/include/nccl.h),)
LAB06_NCCL_FLAGS := -DFL_HAVE_NCCL -I$(CUDA_HOME)/include
LAB06_NCCL_LIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcudart
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
	@mkdir -p $(FIGURES_DIR) $(BUILD)/ch6
	./$(COST_MODEL) $(CH6_NET) --bytes 95407136 --compute_ms 451 --batch_size 64 --ps_shards 8 \
	    --csv $(BUILD)/ch6/inception-ps8.csv
	./$(COST_MODEL) $(CH6_NET) --bytes 95407136 --compute_ms 451 --batch_size 64 --ps_shards 32 \
	    --csv $(BUILD)/ch6/inception-ps32.csv
	ms=$$($(CH6_MPI) ./$(LAB06) --batch_size 128 --train_steps 12 --log_every 1 \
	    | sed -n 's/^Step .*(\([0-9.]*\) images\/sec)$$/\1/p' | tail -n +3 | sort -n \
	    | awk '{v[NR] = $$1} END {if (NR) printf "%.1f", 128000 / v[int((NR + 1) / 2)]}') && \
	./$(COST_MODEL) $(CH6_NET) --compute_ms "$$ms" --ps_shards 8 --csv $(BUILD)/ch6/chapter1.csv && \
	gnuplot -e "dir='$(BUILD)/ch6'; ch1_ms='$$ms'; out='$(FIGURES_DIR)/ch6-cost-model.svg'" labs/tools/ch6-cost-model.gp
.PHONY: figures-06

# The real-links measurement (labs/tools/links_sweep.sh; root and iproute2): 1 ps, 2 sharded ps,
# ring allreduce and in-graph across tasks at N = 1, 2, 4 on 1 and 10 Gbit/s links, each task in a
# network namespace of its own (launch_cluster --links); ch6-links.csv and ch6-links.svg into
# FIGURES_DIR. About 10 minutes on a 2-core machine.
figures-links: $(COST_MODEL) $(LAB06) $(BUILD)/labs/tools/launch_cluster $(BUILD)/labs/tools/flowlab_server \
               $(BUILD)/labs/03-between-graph/between_graph $(BUILD)/labs/02-in-graph-towers/in_graph_towers
	@mkdir -p $(FIGURES_DIR)
	sh labs/tools/links_sweep.sh $(BUILD) $(BUILD)/links
	cp $(BUILD)/links/links.csv $(FIGURES_DIR)/ch6-links.csv
	gnuplot -e "csv='$(FIGURES_DIR)/ch6-links.csv'; out='$(FIGURES_DIR)/ch6-links.svg'" labs/tools/ch6-links.gp
.PHONY: figures-links
endif
