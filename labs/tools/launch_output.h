/* launch_output.h: launch_cluster's output. Every line a task writes goes
 * out with the task's name in front, in one write(), so lines from many
 * tasks never mix; the launcher's own lines start with "launch_cluster: ". */
#ifndef FLOWLAB_LAUNCH_OUTPUT_H
#define FLOWLAB_LAUNCH_OUTPUT_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A task's line is written with one write() of at most PIPE_BUF (4096)
 * bytes, so the launcher's output stays whole lines even when it is a pipe. */
enum { LINE_BYTES = 4000 };

typedef struct {
    int fd;  /* read end of the task's pipe; -1 once closed */
    int to;  /* where its lines go: 1 (stdout) or 2 (stderr) */
    size_t len;
    char line[LINE_BYTES];
} stream;

/* Writes all of buf; a reader that went away (EPIPE) is not our problem. */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* The launcher's own line, on stderr, written at once like a task's. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char text[2048] = "launch_cluster: ";
    size_t at = strlen(text);
    va_list args;
    va_start(args, fmt);
    vsnprintf(text + at, sizeof text - at - 1, fmt, args);
    va_end(args);
    at = strlen(text);
    text[at++] = '\n';
    write_all(2, text, at);
}

/* Prints the stream's line so far with the task's name in front. */
static void emit_line(const char *name, stream *s)
{
    char text[LINE_BYTES + 32];
    int at = snprintf(text, sizeof text, "%s: ", name);
    memcpy(text + at, s->line, s->len);
    at += (int)s->len;
    text[at++] = '\n';
    write_all(s->to, text, (size_t)at);
    s->len = 0;
}

/* At its end a stream prints what is left of its last line. */
static void end_stream(const char *name, stream *s)
{
    if (s->len > 0)
        emit_line(name, s);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

static void take_bytes(const char *name, stream *s, const char *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == '\n') {
            emit_line(name, s);
            continue;
        }
        s->line[s->len++] = bytes[i];
        if (s->len == sizeof s->line) /* a very long line goes out in pieces, each prefixed */
            emit_line(name, s);
    }
}

/* Reads what the pipe holds now (at most max_reads reads, so one chatty task
 * cannot starve the others); the pipe is non-blocking. */
static void read_stream(const char *name, stream *s, int max_reads)
{
    char chunk[4096];
    for (int i = 0; i < max_reads && s->fd >= 0; i++) {
        ssize_t n = read(s->fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            end_stream(name, s);
            return;
        }
        take_bytes(name, s, chunk, (size_t)n);
    }
}

#endif
