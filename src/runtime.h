/* runtime.h: what the runtime's files share and labs never see.
 * The graph's node structure, the op table, the device seam, and small
 * helpers for errors and memory. */
#ifndef FLOWLAB_RUNTIME_H
#define FLOWLAB_RUNTIME_H

#include "flowlab.h"

#define FL_ERROR_LEN 512

/* errors.c */
void fl_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fl_clear_error(void);

/* tensor.c */
size_t fl_dtype_size(fl_dtype dtype);
size_t fl_tensor_bytes(const fl_tensor *t);
bool fl_shape_known(fl_shape shape);
/* Exits with a message: only for running out of memory, never for user input. */
void *fl_xmalloc(size_t bytes);
void *fl_xcalloc(size_t count, size_t size);
void *fl_xrealloc(void *p, size_t bytes);
char *fl_xstrdup(const char *s);

#endif
