/* cuda_tests.h: what the tests that need a CUDA GPU share: require_cuda()
 * skips the whole test, with the reason, where flowlab has no CUDA device,
 * and fails it (never skips) where one exists but does not open. Call it
 * after setenv("FLOWLAB_BACKEND", "cuda", 1), before any other flowlab call.
 * Built with -DTEST_NO_SKIP it lets the test run on whatever /gpu:0 is. */
#ifndef FLOWLAB_TESTS_CUDA_TESTS_H
#define FLOWLAB_TESTS_CUDA_TESTS_H

#include <stdlib.h>
#include <string.h>

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

#endif
