/* json.h: a small strict JSON reader, just what TF_CONFIG needs.
 * Not a general JSON library: it reads a whole document into a tree, writes
 * nothing, and refuses what RFC 8259 does not allow, saying at which byte.
 * Unlike the RFC it passes bytes >= 0x80 through unchecked (no UTF-8
 * check), refuses \u0000 and numbers over 63 characters, and reads numbers
 * with strtod in the C locale's "." that flowlab's programs keep. */
#ifndef FLOWLAB_DIST_JSON_H
#define FLOWLAB_DIST_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

/* Limits, so that hostile input cannot exhaust the stack or memory:
 * TF_CONFIG itself nests 3 levels deep, lists one item per task and is a
 * few hundred bytes. */
#define FL_JSON_MAX_DEPTH 16
#define FL_JSON_MAX_BYTES (1 << 20)
/* Items of one array or object: also bounds the quadratic duplicate-key check. */
#define FL_JSON_MAX_ITEMS 4096

typedef enum {
    FL_JSON_NULL,
    FL_JSON_BOOL,
    FL_JSON_NUMBER,
    FL_JSON_STRING,
    FL_JSON_ARRAY,
    FL_JSON_OBJECT,
} fl_json_type;

typedef struct fl_json {
    fl_json_type type;
    bool boolean;          /* FL_JSON_BOOL */
    double number;         /* FL_JSON_NUMBER */
    char *string;          /* FL_JSON_STRING: UTF-8, no NUL inside */
    int count;             /* array items or object members */
    struct fl_json *items; /* count values, in input order */
    char **keys;           /* FL_JSON_OBJECT: the count keys, unique */
} fl_json;

/* Parses one JSON value filling all of text (a C string). On error returns
 * NULL with INVALID_ARGUMENT "at byte N: what was wrong" in st, N counting from 0. */
fl_json *fl_json_parse(const char *text, fl_status *st);
void fl_json_free(fl_json *value);

/* The member named key of an object; NULL when absent or not an object. */
const fl_json *fl_json_member(const fl_json *object, const char *key);
/* "a string", "a number", "an object", ...: for messages like "got a string". */
const char *fl_json_type_name(fl_json_type type);

#endif
