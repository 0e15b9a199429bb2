/* one_pocl_device.h: a test of the executor on one PoCL device with one
 * thread, whose timing it controls (a slow chain of products on /gpu:0);
 * the whole test is skipped, with the reason, where PoCL is not there. */
#ifndef FLOWLAB_TESTS_ONE_POCL_DEVICE_H
#define FLOWLAB_TESTS_ONE_POCL_DEVICE_H

#include <stdio.h>
#include <stdlib.h>

#include "device.h"
#include "flowlab.h"
#include "tap.h"

static void need_one_pocl_device(void)
{
    setenv("POCL_DEVICES", "pthread", 1);
    setenv("POCL_MAX_PTHREAD_COUNT", "1", 1);
    setenv("FLOWLAB_BACKEND", "opencl", 1);
    if (fl_accelerator_count() >= 1)
        return;
    char why[600];
    snprintf(why, sizeof why, "an OpenCL device is needed (%s)", fl_opencl_backend.why_unavailable());
    skip_all(why);
}

#endif
