/* alloc_count.h: counts the host memory blocks this test process asks for,
 * by defining malloc, calloc, realloc and free in the test binary itself:
 * every library's calls (the runtime's fl_x*, libevent's, libc's strdup)
 * come here first and go on to the next definition (libc's, or a
 * sanitizer's). Include it in one test file, before any other header.
 * A block is the runtime's when the code asking is in this binary (the
 * runtime is linked in whole), else a library's (libevent's buffers,
 * libc's stdio): they are counted apart. FL_ALLOC_TRACE=1 prints the stack
 * of each of the runtime's blocks counted while a count is open, to find
 * who allocates. Under a sanitizer its own interceptors
 * (strdup, ...) allocate without coming here: the plain build is the count
 * that matters. */
#ifndef FLOWLAB_TESTS_ALLOC_COUNT_H
#define FLOWLAB_TESTS_ALLOC_COUNT_H

#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The hooks run before a sanitizer has made its shadow memory (its own
 * start-up allocates): they are not instrumented. */
#define NOT_SANITIZED __attribute__((no_sanitize("address", "thread", "undefined")))

typedef void *(*alloc_malloc_fn)(size_t);
typedef void *(*alloc_calloc_fn)(size_t, size_t);
typedef void *(*alloc_realloc_fn)(void *, size_t);
typedef void (*alloc_free_fn)(void *);

static alloc_malloc_fn next_malloc;
static alloc_calloc_fn next_calloc;
static alloc_realloc_fn next_realloc;
static alloc_free_fn next_free;
static atomic_ullong blocks_counted, library_blocks;
static void *this_binary; /* where it is loaded: a caller here is the runtime */
static atomic_bool counting, tracing;
static _Thread_local bool in_hook; /* dlsym and backtrace may allocate: not counted, not traced */

/* What dlsym asks for while the next definitions are being found. */
static _Alignas(16) unsigned char bootstrap[4096];
static size_t bootstrap_used;

NOT_SANITIZED static bool from_bootstrap(const void *p)
{
    return (const unsigned char *)p >= bootstrap && (const unsigned char *)p < bootstrap + sizeof bootstrap;
}

NOT_SANITIZED static void *bootstrap_alloc(size_t bytes)
{
    size_t at = (bootstrap_used + 15) & ~(size_t)15;
    if (at + bytes > sizeof bootstrap)
        return NULL;
    bootstrap_used = at + bytes;
    return bootstrap + at;
}

NOT_SANITIZED static bool find_next(void)
{
    if (next_free)
        return true;
    if (in_hook)
        return false;
    in_hook = true;
    next_malloc = (alloc_malloc_fn)dlsym(RTLD_NEXT, "malloc");
    next_calloc = (alloc_calloc_fn)dlsym(RTLD_NEXT, "calloc");
    next_realloc = (alloc_realloc_fn)dlsym(RTLD_NEXT, "realloc");
    next_free = (alloc_free_fn)dlsym(RTLD_NEXT, "free");
    in_hook = false;
    return next_free != NULL;
}

NOT_SANITIZED static void count_block(void *caller)
{
    if (!atomic_load(&counting) || in_hook)
        return;
    in_hook = true;
    Dl_info where;
    bool ours = dladdr(caller, &where) && where.dli_fbase == this_binary;
    in_hook = false;
    atomic_fetch_add(ours ? &blocks_counted : &library_blocks, 1);
    if (!ours)
        return;
    if (!atomic_load(&tracing))
        return;
    in_hook = true;
    void *frames[12];
    int n = backtrace(frames, 12);
    static const char line[] = "---- a block counted, from:\n";
    backtrace_symbols_fd(frames, 1, 2); /* unused, keeps libgcc loaded before the write */
    (void)!write(2, line, sizeof line - 1);
    backtrace_symbols_fd(frames + 2, n - 2, 2);
    in_hook = false;
}

NOT_SANITIZED void *malloc(size_t bytes)
{
    if (!find_next())
        return bootstrap_alloc(bytes);
    count_block(__builtin_return_address(0));
    return next_malloc(bytes);
}

NOT_SANITIZED void *calloc(size_t count, size_t size)
{
    if (!find_next())
        return bootstrap_alloc(count * size); /* zeroed: static */
    count_block(__builtin_return_address(0));
    return next_calloc(count, size);
}

NOT_SANITIZED void *realloc(void *p, size_t bytes)
{
    if (!find_next() || from_bootstrap(p))
        return NULL; /* nothing reallocates what dlsym was given */
    count_block(__builtin_return_address(0));
    return next_realloc(p, bytes);
}

NOT_SANITIZED void free(void *p)
{
    if (p && !from_bootstrap(p) && find_next())
        next_free(p);
}

/* Starts counting from 0 (with FL_ALLOC_TRACE=1 in the environment, each
 * block's stack on stderr); alloc_count_stop returns how many blocks the
 * runtime asked for since, alloc_count_libraries the libraries' (after a stop). */
static inline void alloc_count_start(void)
{
    Dl_info self;
    this_binary = dladdr((void *)alloc_count_start, &self) ? self.dli_fbase : NULL;
    const char *trace = getenv("FL_ALLOC_TRACE");
    if (trace && trace[0] == '1') {
        void *warm[2];
        backtrace(warm, 2); /* loads libgcc now, not inside a counted block */
        fprintf(stderr, "---- this binary is loaded at %p (for addr2line)\n", this_binary);
    }
    atomic_store(&tracing, trace && trace[0] == '1');
    atomic_store(&blocks_counted, 0);
    atomic_store(&library_blocks, 0);
    atomic_store(&counting, true);
}

static inline unsigned long long alloc_count_stop(void)
{
    atomic_store(&counting, false);
    return atomic_load(&blocks_counted);
}

static inline unsigned long long alloc_count_libraries(void) { return atomic_load(&library_blocks); }

#endif
