/* event_writer.c: TensorFlow's event file (events.out.tfevents.*), the file
 * a tf.summary.FileWriter writes and TensorBoard reads: a sequence of
 * TFRecords, each an encoded Event. Records are kept whole in memory and
 * written with one write(2) at a flush, so a run that is killed leaves only
 * whole records on disk, which TensorBoard reads up to the last. A thread
 * flushes every flush_secs, as FileWriter's does, so a lab that stalls
 * (waiting for a ps, evaluating) still shows its latest points. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "summary_internal.h"

#define FLUSH_SECS_DEFAULT 2.0

struct fl_summary_file_writer {
    int fd;
    char *path;
    pthread_mutex_t lock;   /* pending, and the file's end */
    unsigned char *pending; /* whole records not yet written */
    size_t npending, cap;
    double flush_secs;      /* 0: every record is written at once, no thread */
    pthread_t flusher;
    pthread_cond_t wake;
    bool closing;
};

static double wall_time_s(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* One TFRecord: length (8 bytes, little-endian), the length's masked CRC,
 * the data, the data's masked CRC. */
static void append_record(fl_summary_file_writer *w, const unsigned char *data, size_t len)
{
    size_t need = w->npending + len + 16;
    if (need > w->cap) {
        w->cap = need * 2;
        w->pending = fl_xrealloc(w->pending, w->cap);
    }
    unsigned char *p = w->pending + w->npending;
    put_le64(p, len);
    put_le32(p + 8, fl_masked_crc32c(p, 8));
    memcpy(p + 12, data, len);
    put_le32(p + 12 + len, fl_masked_crc32c(data, len));
    w->npending = need;
}

static int write_pending(fl_summary_file_writer *w)
{
    size_t done = 0;
    while (done < w->npending) {
        ssize_t n = write(w->fd, w->pending + done, w->npending - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fl_set_error_code(fl_errno_code(errno), "%s: cannot write the event file: %s", w->path, strerror(errno));
            return -1;
        }
        done += (size_t)n;
    }
    w->npending = 0;
    return 0;
}

int fl_summary_file_writer_flush(fl_summary_file_writer *w)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    int rc = write_pending(w);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* The flusher: every flush_secs until close. A failed write is reported by
 * the next flush or close, which tries again. */
static void *flush_periodically(void *arg)
{
    fl_summary_file_writer *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->closing) {
        struct timespec until = fl_wall_after(w->flush_secs);
        if (pthread_cond_timedwait(&w->wake, &w->lock, &until) != 0 && !w->closing)
            write_pending(w);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int fl_summary_write_event(fl_summary_file_writer *w, Tensorflow__Event *event)
{
    event->wall_time = wall_time_s();
    size_t len = tensorflow__event__get_packed_size(event);
    unsigned char *data = fl_xmalloc(len ? len : 1);
    tensorflow__event__pack(event, data);
    pthread_mutex_lock(&w->lock);
    append_record(w, data, len);
    int rc = w->flush_secs > 0 ? 0 : write_pending(w);
    pthread_mutex_unlock(&w->lock);
    free(data);
    return rc;
}

/* FLOWLAB_SUMMARY_FLUSH_SECS, as TensorFlow's flush_secs (its default is
 * 120 s; ours is short so that TensorBoard follows a lab as it trains). */
static double flush_secs_from_env(void)
{
    const char *text = getenv("FLOWLAB_SUMMARY_FLUSH_SECS");
    char *end = NULL;
    double secs = text ? strtod(text, &end) : FLUSH_SECS_DEFAULT;
    return text && (end == text || *end || secs < 0) ? FLUSH_SECS_DEFAULT : secs;
}

/* events.out.tfevents.<seconds>.<host>.<pid>: TensorFlow's name, the pid
 * added so that two processes writing into one directory never collide. */
static char *event_file_path(const char *log_dir)
{
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    size_t len = strlen(log_dir) + strlen(host) + 96;
    char *path = fl_xmalloc(len);
    snprintf(path, len, "%s/events.out.tfevents.%010lld.%s.%ld", log_dir, (long long)wall_time_s(), host,
             (long)getpid());
    return path;
}

static int open_log_dir(const char *log_dir)
{
    struct stat st;
    if (mkdir(log_dir, 0777) != 0 && errno != EEXIST) {
        fl_set_error_code(fl_errno_code(errno), "%s: cannot create the log directory: %s (is its parent there?)",
                          log_dir, strerror(errno));
        return -1;
    }
    if (stat(log_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s: exists and is not a directory; give --log_dir a directory",
                          log_dir);
        return -1;
    }
    return 0;
}

fl_summary_file_writer *fl_summary_file_writer_new(const char *log_dir)
{
    if (!log_dir || !*log_dir) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_summary_file_writer_new: no log directory given");
        return NULL;
    }
    if (open_log_dir(log_dir) != 0)
        return NULL;
    fl_summary_file_writer *w = fl_xcalloc(1, sizeof *w);
    w->path = event_file_path(log_dir);
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        fl_set_error_code(fl_errno_code(errno), "%s: cannot create the event file: %s", w->path, strerror(errno));
        free(w->path);
        free(w);
        return NULL;
    }
    w->flush_secs = flush_secs_from_env();
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (w->flush_secs > 0 && pthread_create(&w->flusher, NULL, flush_periodically, w) != 0)
        w->flush_secs = 0; /* no thread: write each record at once instead */
    /* The first record says what the file is, as TensorFlow's writer does. */
    Tensorflow__Event version = TENSORFLOW__EVENT__INIT;
    version.what_case = TENSORFLOW__EVENT__WHAT_FILE_VERSION;
    version.file_version = "brain.Event:2";
    if (fl_summary_write_event(w, &version) != 0 || fl_summary_file_writer_flush(w) != 0) {
        fl_summary_file_writer_close(w);
        return NULL;
    }
    return w;
}

const char *fl_summary_file_writer_path(const fl_summary_file_writer *w)
{
    return w ? w->path : NULL;
}

int fl_summary_file_writer_close(fl_summary_file_writer *w)
{
    if (!w)
        return 0;
    if (w->flush_secs > 0) {
        pthread_mutex_lock(&w->lock);
        w->closing = true;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->flusher, NULL);
    }
    int rc = fl_summary_file_writer_flush(w);
    if (close(w->fd) != 0 && rc == 0) {
        fl_set_error_code(fl_errno_code(errno), "%s: closing the event file failed: %s", w->path, strerror(errno));
        rc = -1;
    }
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w->pending);
    free(w->path);
    free(w);
    return rc;
}
