# cl/backend.mk: the OpenCL backend, included by the Makefile.
# Builds cl/*.c into $(BUILD)/obj/cl_*.o, and embeds cl/*.cl into the library
# as $(BUILD)/gen/cl_sources.c (made by cl/embed_sources.c, a build tool),
# with src/scalar_rules.h, the element-wise rules the kernels share with the
# host and CUDA: the program is built from text, so the header travels in it.
CL_SRC     := $(filter-out cl/embed_sources.c,$(wildcard cl/*.c))
CL_KERNELS := $(sort $(wildcard cl/*.cl)) src/scalar_rules.h
BACKENDS    += cl
BACKEND_OBJ += $(patsubst cl/%.c,$(BUILD)/obj/cl_%.o,$(CL_SRC)) $(BUILD)/obj/cl_sources.o
# OpenCL 1.2 calls only: every OpenCL driver in use has them.
CFLAGS     += -DCL_TARGET_OPENCL_VERSION=120
LDLIBS     += -lclblast -lOpenCL

$(BUILD)/obj/cl_%.o: cl/%.c src/runtime.h | $(BUILD)/obj
	$(CC) $(CFLAGS) -Icl -MMD -MP -c $< -o $@

$(BUILD)/gen:
	mkdir -p $@

# The generator runs at build time only: plain flags, no sanitizers.
$(BUILD)/gen/embed_sources: cl/embed_sources.c | $(BUILD)/gen
	$(CC) -std=c11 -Wall -Wextra -Werror -O1 $< -o $@

$(BUILD)/gen/cl_sources.c: $(BUILD)/gen/embed_sources $(CL_KERNELS)
	$(BUILD)/gen/embed_sources $(CL_KERNELS) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/cl_sources.o: $(BUILD)/gen/cl_sources.c cl/opencl_sources.h | $(BUILD)/obj
	$(CC) $(CFLAGS) -Icl -c $< -o $@
