/* device_string.c: parsing TensorFlow-style device strings.
 * "/cpu:0", "/gpu:1", "/device:GPU:1", "/job:ps/task:0/cpu:0" all become one
 * canonical lower-case form so that two spellings name one device. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static int parse_number(const char **p, int *out)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s))
        return -1;
    long v = 0;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v > 1000000)
            return -1;
        s++;
    }
    *out = (int)v;
    *p = s;
    return 0;
}

static bool starts_with_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* "/job:NAME" */
static int parse_job(const char **p, fl_device_name *d)
{
    const char *s = *p + strlen("/job:");
    size_t len = 0;
    while (s[len] && s[len] != '/' && len < sizeof d->job - 1) {
        if (!(isalnum((unsigned char)s[len]) || s[len] == '_' || s[len] == '-'))
            return -1;
        len++;
    }
    if (len == 0 || (s[len] && s[len] != '/'))
        return -1;
    memcpy(d->job, s, len);
    d->job[len] = '\0';
    *p = s + len;
    return 0;
}

/* "/cpu:N", "/gpu:N", "/device:CPU:N", "/device:GPU:N" */
static int parse_kind(const char **p, fl_device_name *d)
{
    const char *s = *p;
    if (starts_with_ci(s, "/device:"))
        s += strlen("/device");
    else if (*s == '/')
        s += 0;
    else
        return -1;
    s++; /* the '/' or the ':' after "device" */
    if (starts_with_ci(s, "cpu:"))
        d->is_gpu = false;
    else if (starts_with_ci(s, "gpu:"))
        d->is_gpu = true;
    else
        return -1;
    s += 4;
    if (parse_number(&s, &d->index) != 0)
        return -1;
    *p = s;
    return 0;
}

int fl_parse_device(const char *text, fl_device_name *out, char *canonical, size_t len)
{
    fl_device_name d = {.task = -1};
    const char *p = text ? text : "";
    bool ok = true;
    if (starts_with_ci(p, "/job:"))
        ok = parse_job(&p, &d) == 0;
    if (ok && starts_with_ci(p, "/task:")) {
        p += strlen("/task:");
        ok = parse_number(&p, &d.task) == 0;
    }
    if (ok && (d.job[0] || d.task >= 0) && *p == '\0') {
        /* "/job:ps/task:0" alone means that task's host. */
        d.is_gpu = false;
        d.index = 0;
    } else if (ok) {
        ok = parse_kind(&p, &d) == 0 && *p == '\0';
    }
    if (!ok) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "device string '%s' does not parse; expected /cpu:N or /gpu:N, "
                          "optionally after /job:NAME/task:N",
                          text ? text : "(null)");
        return -1;
    }
    if (out)
        *out = d;
    if (canonical) {
        char prefix[64] = "";
        if (d.job[0])
            snprintf(prefix, sizeof prefix, "/job:%s", d.job);
        if (d.task >= 0)
            snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix), "/task:%d", d.task);
        snprintf(canonical, len, "%s/%s:%d", prefix, d.is_gpu ? "gpu" : "cpu", d.index);
    }
    return 0;
}
