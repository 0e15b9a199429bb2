/* json.c: the strict JSON reader behind TF_CONFIG (see json.h for what it
 * is not). Recursive descent, one function per grammar rule of RFC 8259; the
 * first error stops the parse and is reported with its byte offset. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "runtime.h"

typedef struct {
    const char *text;
    size_t len, pos;
    int depth;
    fl_status *st;
} parser;

static int parse_value(parser *p, fl_json *out);

static int fail_at(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(parser *p, size_t at, const char *fmt, ...)
{
    char what[FL_STATUS_MESSAGE_LEN];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    return fl_status_set(p->st, FL_INVALID_ARGUMENT, "at byte %zu: %s", at, what);
}

/* What was expected at p->pos; truncated input says so, since that is the
 * usual cause (a shell quote cut the variable short). */
static int fail_expected(parser *p, const char *what, const char *key)
{
    const char *ended = p->pos >= p->len ? "unexpected end of input; " : "";
    if (key)
        return fail_at(p, p->pos, "%sexpected %s \"%s\"", ended, what, key);
    return fail_at(p, p->pos, "%sexpected %s", ended, what);
}

static void skip_space(parser *p)
{
    for (; p->pos < p->len; p->pos++) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
    }
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_value(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits of a \u escape starting at p->pos (the 'u'). */
static int read_hex4(parser *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 1; i <= 4; i++) {
        int h = p->pos + i < p->len ? hex_value(p->text[p->pos + i]) : -1;
        if (h < 0)
            return fail_at(p, p->pos - 1, "\\u needs four hex digits");
        v = v * 16 + (uint32_t)h;
    }
    p->pos += 5;
    *out = v;
    return 0;
}

static size_t put_utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A \u escape (\u00e9), or a surrogate pair \uD83D\uDE00, at p->pos (the 'u'). */
static int read_unicode_escape(parser *p, char *out, size_t *n)
{
    size_t start = p->pos - 1;
    uint32_t cp, low;
    if (read_hex4(p, &cp) != 0)
        return -1;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail_at(p, start, "\\u%04X is a low surrogate without a high one before it",
                       (unsigned)cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        bool escaped = p->pos + 1 < p->len && p->text[p->pos] == '\\' && p->text[p->pos + 1] == 'u';
        if (!escaped)
            return fail_at(p, start, "\\u%04X is a high surrogate without a low one after it", (unsigned)cp);
        p->pos++;
        if (read_hex4(p, &low) != 0)
            return -1;
        if (low < 0xDC00 || low > 0xDFFF)
            return fail_at(p, start, "\\u%04X is a high surrogate without a low one after it", (unsigned)cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (cp == 0)
        return fail_at(p, start, "\\u0000 is not allowed: the strings read here are C strings");
    *n += put_utf8(cp, out + *n);
    return 0;
}

/* One escape at p->pos (the character after the backslash). */
static int read_escape(parser *p, char *out, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char c = p->pos < p->len ? p->text[p->pos] : '\0';
    if (c == 'u')
        return read_unicode_escape(p, out, n);
    const char *hit = c ? strchr(from, c) : NULL;
    if (!hit)
        return fail_at(p, p->pos - 1,
                       "invalid escape; JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t, and \\u with four hex digits");
    out[(*n)++] = to[hit - from];
    p->pos++;
    return 0;
}

/* A string at p->pos (the opening quote). Its decoded bytes are never more
 * than the input bytes left, so one allocation of that size suffices. */
static int parse_string(parser *p, char **out)
{
    size_t start = p->pos++;
    char *s = fl_xmalloc(p->len - p->pos + 1);
    size_t n = 0;
    for (;;) {
        if (p->pos >= p->len) {
            free(s);
            return fail_at(p, start, "unterminated string");
        }
        unsigned char c = (unsigned char)p->text[p->pos];
        if (c == '"')
            break;
        if (c < 0x20) {
            free(s);
            return fail_at(p, p->pos, "control character 0x%02x in a string; escape it (\\n, \\t, \\u00XX)",
                           c);
        }
        p->pos++;
        if (c != '\\') {
            s[n++] = (char)c;
        } else if (read_escape(p, s, &n) != 0) {
            free(s);
            return -1;
        }
    }
    p->pos++;
    s[n] = '\0';
    *out = fl_xrealloc(s, n + 1);
    return 0;
}

/* Skips the digits at p->pos; says whether there was at least one. */
static bool skip_digits(parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && is_digit(p->text[p->pos]))
        p->pos++;
    return p->pos > start;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? checked here, converted by
 * strtod on a copy (strtod alone would also take "0x1p3" and "inf"). */
static int parse_number(parser *p, double *out)
{
    size_t start = p->pos;
    if (p->text[p->pos] == '-')
        p->pos++;
    if (p->pos < p->len && p->text[p->pos] == '0') {
        p->pos++;
        if (p->pos < p->len && is_digit(p->text[p->pos]))
            return fail_at(p, start, "a number may not start with 0");
    } else if (!skip_digits(p)) {
        return fail_at(p, p->pos, "expected a digit");
    }
    if (p->pos < p->len && p->text[p->pos] == '.') {
        p->pos++;
        if (!skip_digits(p))
            return fail_at(p, p->pos, "expected a digit after '.'");
    }
    if (p->pos < p->len && (p->text[p->pos] == 'e' || p->text[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->text[p->pos] == '+' || p->text[p->pos] == '-'))
            p->pos++;
        if (!skip_digits(p))
            return fail_at(p, p->pos, "expected a digit in the exponent");
    }
    char copy[64];
    size_t len = p->pos - start;
    if (len >= sizeof copy)
        return fail_at(p, start, "a number longer than %zu characters", sizeof copy - 1);
    memcpy(copy, p->text + start, len);
    copy[len] = '\0';
    *out = strtod(copy, NULL); /* assumes the C locale's '.', as printf does */
    if (!isfinite(*out))
        return fail_at(p, start, "number out of range");
    return 0;
}

static int parse_literal(parser *p, fl_json *out)
{
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if (p->len - p->pos >= n && memcmp(p->text + p->pos, words[i], n) == 0) {
            out->type = i == 2 ? FL_JSON_NULL : FL_JSON_BOOL;
            out->boolean = i == 0;
            p->pos += n;
            return 0;
        }
    }
    return fail_at(p, p->pos, "expected a value; true, false and null are spelled in lower case");
}

/* Appends item (and key, for an object) to container, which takes both. */
static void append(fl_json *container, fl_json *item, char *key, int *capacity)
{
    if (container->count == *capacity) {
        *capacity = *capacity ? 2 * *capacity : 4;
        size_t n = (size_t)*capacity;
        container->items = fl_xrealloc(container->items, n * sizeof *container->items);
        if (container->type == FL_JSON_OBJECT)
            container->keys = fl_xrealloc(container->keys, n * sizeof *container->keys);
    }
    if (container->type == FL_JSON_OBJECT)
        container->keys[container->count] = key;
    container->items[container->count++] = *item;
}

static void clear(fl_json *v)
{
    for (int i = 0; i < v->count; i++) {
        clear(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

/* One "key": value member; the key must not repeat an earlier one. */
static int parse_member(parser *p, fl_json *object, int *capacity)
{
    skip_space(p);
    if (p->pos >= p->len || p->text[p->pos] != '"')
        return fail_expected(p, "a string key in quotes", NULL);
    size_t key_at = p->pos;
    char *key = NULL;
    if (parse_string(p, &key) != 0)
        return -1;
    if (fl_json_member(object, key)) {
        char shown[4 * 64 + 1]; /* the input's own text: escaped (\xNN), cut */
        fl_escape_untrusted(key, strlen(key), shown, sizeof shown);
        fail_at(p, key_at, "duplicate key \"%s\"", shown);
        free(key);
        return -1;
    }
    skip_space(p);
    if (p->pos >= p->len || p->text[p->pos] != ':') {
        fail_expected(p, "':' after key", key);
        free(key);
        return -1;
    }
    p->pos++;
    fl_json value = {0};
    if (parse_value(p, &value) != 0) {
        clear(&value);
        free(key);
        return -1;
    }
    append(object, &value, key, capacity);
    return 0;
}

static int parse_item(parser *p, fl_json *array, int *capacity)
{
    fl_json item = {0};
    if (parse_value(p, &item) != 0) {
        clear(&item);
        return -1;
    }
    append(array, &item, NULL, capacity);
    return 0;
}

/* An object or an array at p->pos (its opening bracket). */
static int parse_container(parser *p, fl_json *out, bool object)
{
    const char close = object ? '}' : ']';
    if (++p->depth > FL_JSON_MAX_DEPTH)
        return fail_at(p, p->pos, "nested deeper than %d levels", FL_JSON_MAX_DEPTH);
    out->type = object ? FL_JSON_OBJECT : FL_JSON_ARRAY;
    p->pos++;
    skip_space(p);
    bool empty = p->pos < p->len && p->text[p->pos] == close;
    int capacity = 0;
    while (!empty) {
        if (out->count == FL_JSON_MAX_ITEMS)
            return fail_at(p, p->pos, "more than %d items in one array or object", FL_JSON_MAX_ITEMS);
        int rc = object ? parse_member(p, out, &capacity) : parse_item(p, out, &capacity);
        if (rc != 0)
            return -1;
        skip_space(p);
        if (p->pos < p->len && p->text[p->pos] == close)
            break;
        if (p->pos >= p->len || p->text[p->pos] != ',') {
            if (object)
                return fail_expected(p, "',' or '}' after the value of", out->keys[out->count - 1]);
            return fail_expected(p, "',' or ']' after an array item", NULL);
        }
        p->pos++;
    }
    p->pos++;
    p->depth--;
    return 0;
}

static int parse_value(parser *p, fl_json *out)
{
    skip_space(p);
    if (p->pos >= p->len)
        return fail_expected(p, "a value", NULL);
    char c = p->text[p->pos];
    if (c == '{' || c == '[')
        return parse_container(p, out, c == '{');
    if (c == '"') {
        out->type = FL_JSON_STRING;
        return parse_string(p, &out->string);
    }
    if (c == '-' || is_digit(c)) {
        out->type = FL_JSON_NUMBER;
        return parse_number(p, &out->number);
    }
    return parse_literal(p, out);
}

fl_json *fl_json_parse(const char *text, fl_status *st)
{
    parser p = {.text = text ? text : "", .st = st};
    p.len = strnlen(p.text, (size_t)FL_JSON_MAX_BYTES + 1);
    if (p.len > FL_JSON_MAX_BYTES) {
        fail_at(&p, FL_JSON_MAX_BYTES, "longer than %d bytes", FL_JSON_MAX_BYTES);
        return NULL;
    }
    fl_json *root = fl_xcalloc(1, sizeof *root);
    bool good = parse_value(&p, root) == 0;
    skip_space(&p);
    if (good && p.pos < p.len)
        good = fail_at(&p, p.pos, "trailing characters after the JSON value") == 0;
    if (!good) {
        fl_json_free(root);
        return NULL;
    }
    return root;
}

void fl_json_free(fl_json *value)
{
    if (!value)
        return;
    clear(value);
    free(value);
}

const fl_json *fl_json_member(const fl_json *object, const char *key)
{
    if (!object || object->type != FL_JSON_OBJECT)
        return NULL;
    for (int i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0)
            return &object->items[i];
    return NULL;
}

const char *fl_json_type_name(fl_json_type type)
{
    static const char *const names[] = {"null", "a boolean", "a number", "a string", "an array",
                                        "an object"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "an unknown type";
}
