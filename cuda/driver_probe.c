/* driver_probe.c: the CUDA backend's entry in the registry, linked into every
 * program (the backend itself is the module libflowlab_cuda.so). Before the
 * module is opened it asks NVIDIA's driver, libcuda.so.1, for a GPU, so a
 * machine without one never maps cudart, cuBLAS or cuDNN (200 MB). */
#include <dlfcn.h>
#include <stdio.h>

#include "backend_entry.h"

/* The driver API's CUresult is an enum; 0 is CUDA_SUCCESS. */
typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_device_count_fn)(int *count);

static int ask_driver(void *driver, int *count)
{
    cu_init_fn init;
    cu_device_count_fn device_count;
    *(void **)&init = dlsym(driver, "cuInit");
    *(void **)&device_count = dlsym(driver, "cuDeviceGetCount");
    if (!init || !device_count)
        return -1;
    int result = init(0);
    return result != 0 ? result : device_count(count);
}

/* libcuda stays open when it finds a GPU: the module's cudart uses it. */
static bool driver_answers(fl_status *st)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        fl_status_set(st, FL_NOT_FOUND, "no NVIDIA driver: libcuda.so.1 not found (%s); install the driver, "
                      "then nvidia-smi shows whether it sees a GPU", dlerror());
        return false;
    }
    int count = 0, result = ask_driver(driver, &count);
    if (result == 0 && count > 0)
        return true;
    if (result != 0)
        fl_status_set(st, FL_NOT_FOUND, "no CUDA device: the NVIDIA driver (libcuda.so.1) answers cuInit or "
                      "cuDeviceGetCount with CUresult %d; nvidia-smi shows what it sees", result);
    else
        fl_status_set(st, FL_NOT_FOUND, "no CUDA device: the NVIDIA driver finds no GPU");
    dlclose(driver);
    return false;
}

const fl_backend_entry fl_cuda_backend_entry = {
    .name = "cuda",
    .module_path = FL_CUDA_MODULE,
    .module_path_env = "FLOWLAB_CUDA_MODULE",
    .module_open = "fl_cuda_module_open",
    .driver_answers = driver_answers,
};
