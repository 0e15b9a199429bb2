/* placement.h: picking a device for each node of a session. */
#ifndef FLOWLAB_PLACEMENT_H
#define FLOWLAB_PLACEMENT_H

#include "device.h"

/* The device n runs on, or NULL with "node: why" and its code in st. */
fl_device *fl_place_node(const fl_node *n, const fl_session_options *opt, fl_status *st);
/* log_device_placement's line: "name: (Op): device", and what n asked for
 * when that differs. */
void fl_log_placement(const fl_node *n, const char *device);

#endif
