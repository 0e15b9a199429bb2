/* cuda_tests.h: what the tests that need a CUDA GPU share: require_cuda()
 * skips the whole test, with the reason, where flowlab has no CUDA device,
 * and fails it (never skips) where one exists but does not open. Call it
 * after setenv("FLOWLAB_BACKEND", "cuda", 1), before any other flowlab call.
 * Built with -DTEST_NO_SKIP it lets the test run on whatever /gpu:0 is.
 * cuda_module_symbol() finds what the module exports for tests
 * (cuda/cuda_stats.h). */
#ifndef FLOWLAB_TESTS_CUDA_TESTS_H
#define FLOWLAB_TESTS_CUDA_TESTS_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "backend_entry.h"
#include "device.h" /* fl_accelerator: whether /gpu:0 opens */
#include "flowlab.h"
#include "tap.h"

/* Skips the whole file unless /gpu:0 is a CUDA device. */
static void require_cuda(void)
{
#ifndef TEST_NO_SKIP
    fl_device_info info[4];
    int count = fl_list_devices(info, 4);
    if (count >= 2 && strcmp(info[1].backend, "cuda") == 0) {
        diag("testing %s: %s", info[1].name, info[1].description);
        if (fl_accelerator(0))
            return;
        /* A device that exists but will not open is a failure, not a skip. */
        ok(false, "/gpu:0 opens");
        diag("%s", fl_last_error());
        diag("under AddressSanitizer, CUDA needs ASAN_OPTIONS=protect_shadow_gap=0");
        exit(done_testing());
    }
    const char *why = fl_last_error() ? fl_last_error() : "unknown";
    char line[700];
    if (strncmp(why, "no CUDA device", 14) == 0)
        snprintf(line, sizeof line, "%s", why);
    else
        snprintf(line, sizeof line, "no CUDA device: %s", why);
    skip_all(line);
#endif
}

/* A function of cuda/cuda_stats.h, from the CUDA module the registry
 * opened (FLOWLAB_CUDA_MODULE or the built-in path); NULL where none is. */
static void *cuda_module_symbol(const char *name)
{
    const fl_backend_entry *cuda = NULL;
    for (int i = 0; fl_backend_entries[i]; i++)
        if (strcmp(fl_backend_entries[i]->name, "cuda") == 0)
            cuda = fl_backend_entries[i];
    if (!cuda)
        return NULL;
    const char *path = getenv(cuda->module_path_env);
    void *module = dlopen(path && path[0] ? path : cuda->module_path, RTLD_NOW | RTLD_NOLOAD);
    return module ? dlsym(module, name) : NULL;
}

/* The compute capability's major of /gpu:0, from its description; 0 unknown. */
static inline int cuda_compute_major(void)
{
    fl_device_info info[4];
    int major = 0, minor = 0;
    if (fl_list_devices(info, 4) < 2)
        return 0;
    const char *cc = strstr(info[1].description, "compute capability ");
    if (cc)
        sscanf(cc, "compute capability %d.%d", &major, &minor);
    return major;
}

/* Runs measure(result) in a child forked before this process touches
 * CUDA, with env=value set there (a policy the device reads when it
 * opens), and copies its result back through a pipe. measure runs only if
 * /gpu:0 opens. False when the child failed. */
static inline bool measure_in_child(const char *env, const char *value, void *result, size_t size,
                                    void (*measure)(void *result))
{
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    pid_t child = fork();
    if (child == 0) {
        close(fds[0]);
        setenv(env, value, 1);
        if (fl_accelerator(0))
            measure(result);
        ssize_t wrote = write(fds[1], result, size);
        _exit(wrote == (ssize_t)size ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = child > 0 ? read(fds[0], result, size) : -1;
    close(fds[0]);
    int status = 0;
    if (child > 0)
        waitpid(child, &status, 0);
    return got == (ssize_t)size && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#endif
