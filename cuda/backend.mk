# cuda/backend.mk: the CUDA backend, included by the Makefile.
# Only when nvcc, cuBLAS and cuDNN are all found. The backend is a shared
# module, $(BUILD)/libflowlab_cuda.so, that carries cudart, cuBLAS and cuDNN
# as its own dependencies: programs link none of them. The registry opens it
# with dlopen only when CUDA is asked for or probed and NVIDIA's driver finds
# a GPU (cuda/driver_probe.c, the one file linked into the core's library).
# FLOWLAB_CUDA_MODULE=path overrides where it is looked for. Without the
# toolkit flowlab builds as before, with no CUDA backend; `make NVCC=/nonexistent`
# forces that.
NVCC      ?= $(shell command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(NVCC)))
CUDA_OK   := $(shell test -f $(NVCC) && test -x $(NVCC) && test -f $(CUDA_HOME)/include/cudnn.h && \
                     test -f $(CUDA_HOME)/include/cublas_v2.h && echo yes)

# Lab 6 links NCCL (and cudart) itself when CUDA is there: it is relinked
# when that answer changes. The stamp file changes only when it does.
CUDA_STAMP := $(BUILD)/cuda-backend.stamp
$(shell mkdir -p $(BUILD) && echo "cuda=$(CUDA_OK)" | cmp -s - $(CUDA_STAMP) || \
        echo "cuda=$(CUDA_OK)" > $(CUDA_STAMP))

ifeq ($(CUDA_OK),yes)
BACKENDS    += cuda
CUDA_MODULE := $(BUILD)/libflowlab_cuda.so
BACKEND_OBJ += $(BUILD)/obj/cuda_driver_probe.o
# Whatever builds the library builds the module beside it.
$(LIB): | $(CUDA_MODULE)

CUDA_MODULE_OBJ := $(patsubst cuda/%.cu,$(BUILD)/cuda_module/%.o,$(wildcard cuda/*.cu)) \
                   $(patsubst cuda/%.c,$(BUILD)/cuda_module/%.o,$(filter-out cuda/driver_probe.c,$(wildcard cuda/*.c)))

# Ampere and Hopper machine code, plus Hopper PTX that the driver can JIT for
# newer GPUs. Three targets keep a full build near a minute on two cores.
NVCC_ARCH  := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
# -Isrc: the kernels include src/scalar_rules.h, the rules the host shares.
NVCC_FLAGS := -O2 -std=c++17 $(NVCC_ARCH) -Icuda -Isrc -Xcompiler -Wall,-Wextra,-fPIC
# The module is built without sanitizers even with SANITIZE=1 or thread: a
# plain shared object loads fine into a sanitized program, and CUDA's own
# libraries are not instrumented either.
CUDA_MODULE_CFLAGS := $(filter-out $(SANFLAGS),$(CFLAGS)) -fPIC -I$(CUDA_HOME)/include -Icuda

$(BUILD)/cuda_module/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh) src/scalar_rules.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

$(BUILD)/cuda_module/%.o: cuda/%.c src/runtime.h src/backend_entry.h
	@mkdir -p $(dir $@)
	$(CC) $(CUDA_MODULE_CFLAGS) -MMD -MP -c $< -o $@

# -z defs: every symbol is found in the module or its libraries, so a core
# function the backend starts calling must be added to module_open.c (and to
# the table in src/backend_entry.h), at build time, not at dlopen.
$(CUDA_MODULE): $(CUDA_MODULE_OBJ) cuda/module.map
	$(CC) -shared -Wl,-z,defs -Wl,--version-script=cuda/module.map $(CUDA_MODULE_OBJ) -o $@ \
	    -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++ -lm -pthread

# Where the module is: an absolute path baked into the probe, so that a
# program finds it wherever it is run from.
$(BUILD)/obj/cuda_driver_probe.o: cuda/driver_probe.c src/backend_entry.h cuda/backend.mk | $(BUILD)/obj
	$(CC) $(CFLAGS) -DFL_CUDA_MODULE='"$(abspath $(CUDA_MODULE))"' -MMD -MP -c $< -o $@

-include $(wildcard $(BUILD)/cuda_module/*.d)
endif
