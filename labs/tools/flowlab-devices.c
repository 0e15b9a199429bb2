/* flowlab-devices.c: lists the devices flowlab can place nodes on, with
 * their backend, memory and compute units, then each backend this flowlab
 * was built with that has no device here, and why. /gpu:N follows the active
 * backend (FLOWLAB_BACKEND=opencl|cuda|host, else the first that has one). */
#include <stdio.h>
#include <string.h>

#include "flowlab.h"

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: flowlab-devices\n"
               "Lists every device: its name for device scopes, its backend, memory and compute units.\n"
               "Environment: FLOWLAB_BACKEND=opencl|cuda|host picks the backend behind /gpu:N;\n"
               "POCL_DEVICES=\"pthread pthread\" makes PoCL show two CPU devices (/gpu:0, /gpu:1).\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "flowlab-devices: unknown argument %s (see --help)\n", argv[1]);
        return 2;
    }
    fl_device_info devices[32];
    int n = fl_list_devices(devices, 32);
    printf("%-8s %-8s %10s %6s  %s\n", "device", "backend", "memory", "units", "description");
    for (int i = 0; i < n; i++)
        printf("%-8s %-8s %7.1f GiB %6d  %s\n", devices[i].name, devices[i].backend,
               devices[i].memory_bytes / (1024.0 * 1024.0 * 1024.0), devices[i].compute_units,
               devices[i].description);
    if (n == 1)
        printf("no accelerator: %s\n", fl_last_error());
    fl_backend_info backends[8];
    int nb = fl_list_backends(backends, 8);
    for (int i = 0; i < nb; i++)
        if (backends[i].devices == 0)
            printf("%s: unavailable: %s\n", backends[i].name, backends[i].why_unavailable);
    return 0;
}
