/* server_limits.c: the limits a task server keeps to (fl_server_options):
 * their defaults, and their flags, read the same way by every program that
 * runs a server (the labs, flowlab_server). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

#define MIB ((uint64_t)1 << 20)

fl_server_options fl_server_limits_resolve(const fl_server_options *o)
{
    fl_server_options r = o ? *o : (fl_server_options){0};
    if (!r.log)
        r.log = stderr;
    if (!(r.hello_timeout_s > 0))
        r.hello_timeout_s = 10;
    if (r.max_unauthenticated <= 0)
        r.max_unauthenticated = 256;
    if (r.max_unauthenticated_per_address <= 0)
        r.max_unauthenticated_per_address = 64;
    if (r.max_unread_reply_bytes == 0)
        r.max_unread_reply_bytes = 256 * MIB;
    if (r.max_bytes_behind_run == 0)
        r.max_bytes_behind_run = 128 * MIB;
    if (r.max_partitions <= 0)
        r.max_partitions = 64;
    if (r.max_waiting_value_bytes == 0)
        r.max_waiting_value_bytes = 256 * MIB;
    if (r.max_waiting_value_bytes_total == 0)
        r.max_waiting_value_bytes_total = 1024 * MIB;
    if (r.max_variables <= 0)
        r.max_variables = 100000;
    return r;
}

/* A whole positive number, at most max; -1 with the flag named otherwise. */
static int parse_count(const char *flag, const char *value, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = value && *value != '-' ? strtoull(value, &end, 10) : 0;
    if (!value || *value == '-' || errno || *end || end == value || n == 0 || n > max) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s=%s: expected a whole number from 1 to %llu", flag,
                          value ? value : "(missing)", (unsigned long long)max);
        return -1;
    }
    *out = n;
    return 0;
}

static int parse_seconds(const char *flag, const char *value, double *out)
{
    char *end;
    double s = value ? strtod(value, &end) : 0;
    if (!value || end == value || *end || !(s > 0) || s > 86400) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s=%s: expected seconds, more than 0 and at most 86400", flag,
                          value ? value : "(missing)");
        return -1;
    }
    *out = s;
    return 0;
}

int fl_server_option_flag(fl_server_options *o, const char *flag, const char *value)
{
    static const struct { const char *flag; size_t at; bool is_int; } counts[] = {
        {"--max_unauthenticated", offsetof(fl_server_options, max_unauthenticated), true},
        {"--max_unauthenticated_per_address", offsetof(fl_server_options, max_unauthenticated_per_address), true},
        {"--max_unread_reply_bytes", offsetof(fl_server_options, max_unread_reply_bytes), false},
        {"--max_bytes_behind_run", offsetof(fl_server_options, max_bytes_behind_run), false},
        {"--max_partitions", offsetof(fl_server_options, max_partitions), true},
        {"--max_waiting_value_bytes", offsetof(fl_server_options, max_waiting_value_bytes), false},
        {"--max_waiting_value_bytes_total", offsetof(fl_server_options, max_waiting_value_bytes_total), false},
        {"--max_variables", offsetof(fl_server_options, max_variables), true},
    };
    if (strcmp(flag, "--hello_timeout_s") == 0)
        return parse_seconds(flag, value, &o->hello_timeout_s) == 0 ? 1 : -1;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        if (strcmp(flag, counts[i].flag) != 0)
            continue;
        uint64_t n;
        if (parse_count(flag, value, counts[i].is_int ? 1000000 : (uint64_t)1 << 40, &n) != 0)
            return -1;
        char *field = (char *)o + counts[i].at;
        if (counts[i].is_int)
            *(int *)(void *)field = (int)n;
        else
            *(uint64_t *)(void *)field = n;
        return 1;
    }
    return 0;
}
