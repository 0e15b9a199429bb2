# flowlab: one make for everything. Each room keeps its own rules beside it
# (src/*/*.mk, cl/backend.mk, cuda/backend.mk, labs/*/lab.mk, tests/*.mk,
# book/book.mk); this file sets the flags, builds the library and includes them.
#   make                   the libraries (build/libflowlab.a, the core; build/libflowlab_cluster.a,
#                          the cluster rooms, chapter 3 on) and the labs
#   make lab               the main lab (chapter 1), as the README's quick start runs it
#   make test              the TAP suite under prove; SANITIZE=1: under ASan + UBSan
#   make test-threads      the threaded code's tests under ThreadSanitizer
#   make fuzz              the wire decoder under libFuzzer for FUZZ_SECONDS
#   make bench             side-by-side measurements (tests/bench/bench.mk)
#   make exercises         every chapter's exercise checks against your files
#   make book-check        the book's quotes against the labs' source, its outputs against reruns
#   make install PREFIX=/usr/local [DESTDIR=...], make uninstall   (src/install.mk)
#   make clean

CC      ?= cc
SANITIZE ?= 0
BUILD   := build
# Where `make figures*` draws: build/figures/ unless asked for the book's own
# copies (make figures FIGURES_DIR=book/figures), so a run leaves git clean.
FIGURES_DIR ?= $(BUILD)/figures
ifeq ($(SANITIZE),1)
BUILD   := build-sanitize
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g
# PoCL builds a kernel with LLVM on the thread that first runs it, and LLVM
# gives that thread an alternate signal stack from malloc; at the thread's
# exit ASan then fails to unmap it as its own ("unable to unmap") and aborts.
export ASAN_OPTIONS := $(if $(ASAN_OPTIONS),$(ASAN_OPTIONS):)use_sigaltstack=0
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
LDLIBS  := -lz -lm -pthread
LDFLAGS := $(SANFLAGS)

# The core: src/ is the graph and the executor; src/host/ is /cpu:0; src/io/
# the file formats; src/training/ the monitored session and its hooks. The cluster rooms (chapter 3 on) build an archive of their
# own, linked only into the programs that use them ($(CLUSTER_LINK)).
CORE_SRC := $(wildcard src/*.c src/host/*.c src/io/*.c src/training/*.c src/summary/*.c)
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(CORE_SRC))
# src/summary/: TensorBoard's event files, with a protoc-c generated object.
include src/summary/summary.mk
LIB_OBJ += $(SUMMARY_PB)
LIB     := $(BUILD)/libflowlab.a
include src/cluster/cluster.mk
include src/distributed_runtime/distributed_runtime.mk

# Each accelerator backend is a folder with a backend.mk, which appends the
# folder's name to BACKENDS, its objects to BACKEND_OBJ and the libraries
# every program needs to LDLIBS (README: "Adding a backend").
BACKENDS    :=
BACKEND_OBJ :=
# /cpu:0 runs matmul and conv2d through OpenBLAS's CBLAS when it is installed.
ifeq ($(shell pkg-config --exists openblas 2>/dev/null && echo yes),yes)
CFLAGS  += -DFL_HAVE_CBLAS $(shell pkg-config --cflags openblas)
LDLIBS  += $(shell pkg-config --libs openblas)
endif
# One line per backend, in order of preference for the automatic choice.
-include cuda/backend.mk
-include cl/backend.mk
include src/backends.mk
LIB_OBJ += $(BACKEND_OBJ)

# What the labs share (flags, the model, the data), for their dependencies.
LAB_COMMON := $(wildcard labs/common/*.h)

.PHONY: all lib labs lab tests test test-threads deps clean flags flags-cluster size
all: lib labs
# The .mk files define targets of their own: `make` alone still builds all.
.DEFAULT_GOAL := all

# Installs the Debian packages that are missing (see labs/install-deps.sh).
deps:
	@sh labs/install-deps.sh

lib: $(LIB) $(CLUSTER_LIB)

$(BUILD)/obj/%.o: src/%.c src/flowlab.h src/flowlab_cluster.h src/flowlab_monitored.h src/flowlab_summary.h src/runtime.h | $(BUILD)/obj
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

# What your own program needs to compile and link against flowlab:
#   cc -std=c11 my_program.c $(make -s -C path/to/flowlab flags)
# and a program of a cluster (chapter 3 on: fl_cluster_*, fl_server_*), flags-cluster.
flags:
	@echo "-I$(CURDIR)/src $(CURDIR)/$(LIB) $(LDFLAGS) $(LDLIBS)"
flags-cluster:
	@echo "-I$(CURDIR)/src $(CURDIR)/$(CLUSTER_LIB) $(CURDIR)/$(LIB) $(LDFLAGS) $(LDLIBS) $(CLUSTER_LDLIBS)"

# Each room's lines beside its budget (tests/line_budgets.txt; house_rules.t checks it).
size:
	@perl tests/room_sizes.pl

clean:
	rm -rf build build-sanitize build-tsan

-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/obj/*/*.d $(BUILD)/obj/*/*/*.d)

include tests/tests.mk
include src/install.mk
include labs/01-single-device/lab.mk
include labs/02-in-graph-towers/lab.mk
include labs/03-between-graph/lab.mk
include labs/04-synchronous-training/lab.mk
include labs/06-allreduce/lab.mk
include labs/07-model-parallel/lab.mk
include labs/labs.mk
include tests/fuzz/fuzz.mk
include tests/bench/bench.mk
include book/book.mk
