# cuda/backend.mk: the CUDA backend, included by the Makefile.
# Only when nvcc, cuBLAS and cuDNN are all found: cuda/*.cu (the kernels) are
# compiled by nvcc and cuda/*.c (the backend table, memory pool, cuBLAS and
# cuDNN calls) by $(CC), into $(BUILD)/obj/cuda_*.o. Without them flowlab
# builds as before, with no CUDA backend. `make NVCC=/nonexistent` forces that.
NVCC      ?= $(shell command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(NVCC)))
CUDA_OK   := $(shell test -f $(NVCC) && test -x $(NVCC) && test -f $(CUDA_HOME)/include/cudnn.h && \
                     test -f $(CUDA_HOME)/include/cublas_v2.h && echo yes)

# The registry compiles in &fl_cuda_backend only with FL_HAVE_CUDA, so it
# must be rebuilt when the backend comes or goes (say NVCC=/nonexistent on a
# tree built with CUDA). The stamp file changes only when that answer does.
CUDA_STAMP := $(BUILD)/cuda-backend.stamp
$(shell mkdir -p $(BUILD) && echo "cuda=$(CUDA_OK)" | cmp -s - $(CUDA_STAMP) || \
        echo "cuda=$(CUDA_OK)" > $(CUDA_STAMP))
$(BUILD)/obj/device_registry.o: $(CUDA_STAMP) cuda/backend.mk

ifeq ($(CUDA_OK),yes)
CUDA_CU   := $(wildcard cuda/*.cu)
CUDA_C    := $(wildcard cuda/*.c)
BACKEND_OBJ += $(patsubst cuda/%.cu,$(BUILD)/obj/cuda_%.o,$(CUDA_CU)) \
               $(patsubst cuda/%.c,$(BUILD)/obj/cuda_%.o,$(CUDA_C))
CFLAGS    += -DFL_HAVE_CUDA
LDLIBS    += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++

# Ampere and Hopper machine code, plus Hopper PTX that the driver can JIT for
# newer GPUs. Three targets keep a full build near a minute on two cores.
NVCC_ARCH  := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
# No -fsanitize here even with SANITIZE=1: nvcc's host objects need no
# sanitizer and link fine into a sanitized program.
NVCC_FLAGS := -O2 -std=c++17 $(NVCC_ARCH) -Icuda -Xcompiler -Wall,-Wextra

$(BUILD)/obj/cuda_%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh) | $(BUILD)/obj
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

$(BUILD)/obj/cuda_%.o: cuda/%.c src/runtime.h | $(BUILD)/obj
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Icuda -MMD -c $< -o $@
endif
