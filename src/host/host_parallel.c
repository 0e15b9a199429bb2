/* host_parallel.c: runs a host kernel's loop on every core of the machine.
 * The loop [0, count) is cut into one contiguous range per thread; the
 * kernels that use it are element-wise (no sum crosses two ranges), so the
 * result is the same, bit for bit, as with one thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "host_kernels.h"

/* Below this many elements a loop runs on the calling thread: waking the
 * workers costs tens of microseconds, as much as ~100K floats of work. */
enum { MIN_PARALLEL = 1 << 17, MAX_THREADS = 16, ALIGN = 16 };

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    int nthreads;        /* workers + the calling thread */
    unsigned generation; /* counts jobs: a worker runs each one once */
    int pending;         /* workers still on the current job */
    fl_range_fn *fn;
    void *args;
    int64_t count;
} pool;

static pool workers = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
                        .done = PTHREAD_COND_INITIALIZER, .nthreads = 1};
static pthread_once_t started = PTHREAD_ONCE_INIT;
/* One job at a time: a second caller (another session's thread, or a kernel
 * run by a worker) simply runs its loop itself. */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;

/* Thread `part` of `parts` takes [begin, end); the cuts fall on multiples
 * of ALIGN elements so that every range but the last vectorises cleanly. */
static void run_part(fl_range_fn *fn, void *args, int64_t count, int part, int parts)
{
    int64_t begin = count * part / parts / ALIGN * ALIGN;
    int64_t end = part + 1 == parts ? count : count * (part + 1) / parts / ALIGN * ALIGN;
    if (begin < end)
        fn(args, begin, end);
}

static void *worker_main(void *arg)
{
    int part = (int)(intptr_t)arg;
    unsigned seen = 0;
    pthread_mutex_lock(&workers.lock);
    for (;;) {
        while (workers.generation == seen)
            pthread_cond_wait(&workers.work, &workers.lock);
        seen = workers.generation;
        fl_range_fn *fn = workers.fn;
        void *args = workers.args;
        int64_t count = workers.count;
        int parts = workers.nthreads;
        pthread_mutex_unlock(&workers.lock);
        run_part(fn, args, count, part, parts);
        pthread_mutex_lock(&workers.lock);
        if (--workers.pending == 0)
            pthread_cond_signal(&workers.done);
    }
    return NULL;
}

/* FLOWLAB_HOST_THREADS=N sets the thread count (1: no workers); the
 * default is one per online core. */
static int wanted_threads(void)
{
    const char *env = getenv("FLOWLAB_HOST_THREADS");
    long n = env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void start_workers(void)
{
    int wanted = wanted_threads();
    for (int part = 1; part < wanted; part++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker_main, (void *)(intptr_t)part) != 0)
            break; /* fewer threads still give the right answer */
        pthread_detach(t);
        workers.nthreads = part + 1;
    }
}

void fl_parallel_for(int64_t count, fl_range_fn *fn, void *args)
{
    if (count < MIN_PARALLEL || pthread_mutex_trylock(&busy) != 0) {
        if (count > 0)
            fn(args, 0, count);
        return;
    }
    pthread_once(&started, start_workers);
    pthread_mutex_lock(&workers.lock);
    int parts = workers.nthreads;
    workers.fn = fn;
    workers.args = args;
    workers.count = count;
    workers.pending = parts - 1;
    workers.generation++;
    pthread_cond_broadcast(&workers.work);
    pthread_mutex_unlock(&workers.lock);

    run_part(fn, args, count, 0, parts);

    pthread_mutex_lock(&workers.lock);
    while (workers.pending > 0)
        pthread_cond_wait(&workers.done, &workers.lock);
    pthread_mutex_unlock(&workers.lock);
    pthread_mutex_unlock(&busy);
}
