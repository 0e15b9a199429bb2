/* summary_internal.h: what the files of src/summary/ share: the checksum of
 * TFRecord framing (crc32c.c) and the one way an Event reaches the file
 * (event_writer.c); summary.c and graph_def.c build the Events. */
#ifndef FLOWLAB_SUMMARY_INTERNAL_H
#define FLOWLAB_SUMMARY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "event.pb-c.h" /* generated into build/gen/summary/ from event.proto */
#include "graph.pb-c.h" /* and from graph.proto: the GraphDef */
#include "runtime.h"

/* ---- crc32c.c ---- */
uint32_t fl_crc32c(const void *data, size_t len);       /* SSE4.2 where the CPU has it */
uint32_t fl_crc32c_table(const void *data, size_t len); /* the portable fallback */
uint32_t fl_masked_crc32c(const void *data, size_t len);

/* ---- event_writer.c ---- */
/* Stamps event with the wall time, encodes it and appends it as one TFRecord,
 * written by the next flush: the writer's thread flushes every
 * FLOWLAB_SUMMARY_FLUSH_SECS (2 s; 0: each record is written at once). */
int fl_summary_write_event(fl_summary_file_writer *w, Tensorflow__Event *event);

#endif
