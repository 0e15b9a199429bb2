/* tensor_limit.c: the most bytes one tensor may take in this process, so
 * that a graph (from the wire, say) asking for a petabyte fails its run with
 * RESOURCE_EXHAUSTED instead of taking the task down. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime.h"

static size_t limit_set; /* 0: the default; read and written atomically */

/* FLOWLAB_MAX_TENSOR_BYTES, else half of physical memory (1 GiB if unknown). */
static size_t default_limit(void)
{
    const char *env = getenv("FLOWLAB_MAX_TENSOR_BYTES");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v > 0)
            return (size_t)v;
        fprintf(stderr, "flowlab: FLOWLAB_MAX_TENSOR_BYTES=%s is not a number of bytes; using the default\n",
                env);
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0)
        return (size_t)1 << 30;
    return (size_t)pages / 2 * (size_t)page;
}

size_t fl_max_tensor_bytes(void)
{
    size_t set = __atomic_load_n(&limit_set, __ATOMIC_RELAXED);
    return set ? set : default_limit();
}

void fl_set_max_tensor_bytes(size_t bytes) { __atomic_store_n(&limit_set, bytes, __ATOMIC_RELAXED); }

int fl_check_tensor_bytes(size_t bytes)
{
    size_t limit = fl_max_tensor_bytes();
    if (bytes <= limit)
        return 0;
    if (bytes == SIZE_MAX)
        fl_set_error_code(FL_RESOURCE_EXHAUSTED,
                          "needs more bytes than a size_t holds, over the limit of %zu bytes a tensor may take "
                          "(FLOWLAB_MAX_TENSOR_BYTES, fl_set_max_tensor_bytes)", limit);
    else
        fl_set_error_code(FL_RESOURCE_EXHAUSTED,
                          "needs %zu bytes, over the limit of %zu bytes a tensor may take "
                          "(FLOWLAB_MAX_TENSOR_BYTES, fl_set_max_tensor_bytes)", bytes, limit);
    return -1;
}

void *fl_try_malloc(size_t bytes)
{
    if (fl_check_tensor_bytes(bytes) != 0)
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fl_set_error_code(FL_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes (the limit a tensor may take "
                          "is %zu: FLOWLAB_MAX_TENSOR_BYTES, fl_set_max_tensor_bytes)", bytes, fl_max_tensor_bytes());
    return p;
}
