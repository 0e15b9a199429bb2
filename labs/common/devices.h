/* devices.h: device strings and the devices that exist, for the labs.
 * canonical_device checks a --device style flag and spells it as the graph
 * does; list_accelerators names the /gpu:N devices of this machine. */
#ifndef LABS_COMMON_DEVICES_H
#define LABS_COMMON_DEVICES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowlab.h"

/* The canonical spelling of a device string ("/device:GPU:0" -> "/gpu:0"), as
 * the graph records it; exits 2, naming the program and the flag, when the
 * string is not a device. */
static inline void canonical_device(const char *program, const char *flag, const char *device,
                                    char *out, size_t len)
{
    fl_graph *scratch = fl_graph_new();
    fl_device_scope_push(scratch, device);
    fl_node *probe = fl_scalar(scratch, 0.0f, "probe");
    if (fl_graph_error(scratch) || !probe) {
        fprintf(stderr, "%s: %s: '%s' is not valid: %s (see --help)\n", program, flag, device,
                fl_graph_error(scratch) ? fl_graph_error(scratch) : "unknown error");
        fl_graph_free(scratch);
        exit(2);
    }
    snprintf(out, len, "%s", fl_node_device(probe));
    fl_graph_free(scratch);
}

/* The accelerators (/gpu:N) that exist: fills out[0..max) and returns how many. */
static inline int list_accelerators(fl_device_info *out, int max)
{
    fl_device_info all[16];
    int count = fl_list_devices(all, 16), n = 0;
    for (int i = 0; i < count && n < max; i++)
        if (strncmp(all[i].name, "/gpu:", 5) == 0)
            out[n++] = all[i];
    return n;
}

#endif
