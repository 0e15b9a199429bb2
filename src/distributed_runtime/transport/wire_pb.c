/* wire_pb.c: a frame's body as a protobuf message, trusting nothing. protobuf-c
 * unpacks into an arena (a block kept from frame to frame, so a warm step allocates
 * nothing) under a budget, so a hostile count asks for no more memory than the
 * frame brought; then fields this build does not know, and any body not in the
 * form this build encodes, are refused before a field is looked at. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime.h"
#include "wire_internal.h"

#define SMALL_BUDGET ((size_t)1 << 20)
#define MAX_BUDGET ((size_t)256 << 20)
#define ALIGN ((size_t)_Alignof(max_align_t))
#define FIRST_CHUNK ((size_t)4096)

static void *arena_alloc(void *data, size_t size) { return wire_arena_alloc(data, size); }
static void arena_free(void *data, void *pointer) { (void)data, (void)pointer; } /* all go at the reset */

void wire_arena_on(fl_wire_arena *a, void *block, size_t cap)
{
    *a = (fl_wire_arena){.allocator = {arena_alloc, arena_free, a}, .budget = SMALL_BUDGET};
    if (block && cap > sizeof(wire_chunk)) {
        a->first = a->current = a->borrowed = block;
        *a->first = (wire_chunk){.cap = cap - sizeof(wire_chunk)};
    }
}

fl_wire_arena *fl_wire_arena_new(void)
{
    fl_wire_arena *a = fl_xmalloc(sizeof *a);
    wire_arena_on(a, NULL, 0);
    return a;
}

void wire_arena_release(fl_wire_arena *a)
{
    for (wire_chunk *c = a->first, *next; c; c = next) {
        next = c->next;
        if (c != a->borrowed)
            free(c);
    }
    a->first = a->current = a->borrowed = NULL;
}

void fl_wire_arena_free(fl_wire_arena *a)
{
    if (!a)
        return;
    wire_arena_release(a);
    free(a);
}

/* Rewinds every chunk, which stay: the same step again allocates nothing. */
void wire_arena_reset(fl_wire_arena *a, size_t budget)
{
    for (wire_chunk *c = a->first; c; c = c->next)
        c->used = 0;
    a->current = a->first;
    a->charged = 0;
    a->budget = budget;
    a->over_budget = false;
}

/* Bump in the current chunk, else the next that has room, else a new one at
 * the end, twice the last's size but no more than the budget left: frame
 * after frame, the same walk. */
void *wire_arena_alloc(fl_wire_arena *a, size_t size)
{
    size = size ? (size + ALIGN - 1) / ALIGN * ALIGN : ALIGN; /* each its own address */
    if (size > a->budget - a->charged) {
        a->over_budget = true;
        return NULL; /* protobuf-c's unpack fails cleanly on a NULL */
    }
    wire_chunk *c = a->current, *last = NULL;
    while (c && size > c->cap - c->used) {
        last = c;
        c = c->next;
    }
    if (!c) {
        size_t cap = last && 2 * last->cap > size ? 2 * last->cap : size > FIRST_CHUNK ? size : FIRST_CHUNK;
        if (cap > a->budget - a->charged) /* what it holds stays within the budget */
            cap = a->budget - a->charged;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        *c = (wire_chunk){.cap = cap};
        if (last)
            last->next = c;
        else
            a->first = c;
    }
    a->current = c;
    a->charged += size;
    c->used += size;
    return (unsigned char *)(c + 1) + c->used - size;
}

uint32_t wire_unknown_field(const ProtobufCMessage *m, const char **where)
{
    *where = m->descriptor->short_name;
    if (m->n_unknown_fields)
        return m->unknown_fields[0].tag;
    for (unsigned i = 0; i < m->descriptor->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &m->descriptor->fields[i];
        const char *at = (const char *)m + f->offset;
        bool repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
        bool in_oneof = (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
        if (f->type != PROTOBUF_C_TYPE_MESSAGE ||
            (in_oneof && *(const uint32_t *)((const char *)m + f->quantifier_offset) != f->id))
            continue;
        size_t n = repeated ? *(const size_t *)((const char *)m + f->quantifier_offset) : 1;
        ProtobufCMessage *const *items = repeated ? *(ProtobufCMessage *const *const *)at : (ProtobufCMessage *const *)at;
        for (size_t k = 0; k < n; k++) {
            uint32_t tag = items[k] ? wire_unknown_field(items[k], where) : 0;
            if (tag)
                return tag;
        }
    }
    return 0;
}

ProtobufCMessage *wire_unpack(const fl_wire_frame *f, fl_wire_arena *a, fl_status *st)
{
    const ProtobufCMessageDescriptor *d = wire_body_of(f->type);
    const char *type = fl_wire_type_name(f->type), *where;
    /* A message's parts take some 10 times their bytes once unpacked, tiny ones more. */
    size_t budget = 64 * (size_t)f->body_len + SMALL_BUDGET;
    wire_arena_reset(a, budget < MAX_BUDGET ? budget : MAX_BUDGET);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, &a->allocator, f->body_len, f->body);
    if (!m) {
        fl_status_set(st, FL_DATA_LOSS, "%s: protobuf-c could not unpack its %u bytes as message %s%s", type,
                      (unsigned)f->body_len, d->short_name, a->over_budget ? " within its memory budget" : "");
        return NULL;
    }
    uint32_t unknown = wire_unknown_field(m, &where);
    if (unknown) {
        fl_status_set(st, FL_DATA_LOSS, "%s: field %u of message %s is not one this build knows", type, unknown, where);
        return NULL;
    }
    size_t canonical = protobuf_c_message_get_packed_size(m);
    if (canonical != f->body_len) {
        fl_status_set(st, FL_DATA_LOSS, "%s: %u bytes that this build would encode in %zu (a field repeated, out of "
                      "canonical form, or a string with a NUL byte)", type, (unsigned)f->body_len, canonical);
        return NULL;
    }
    return m;
}
