/* name_table.c: a small string -> pointer hash map with chaining.
 * Grows by doubling so lookups stay constant time in graphs with thousands
 * of nodes (every tower adds a copy of the model). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "name_table.h"
#include "runtime.h"

struct fl_name_entry {
    char *name;
    void *value;
    fl_name_entry *next;
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void fl_name_table_init(fl_name_table *t)
{
    t->nbuckets = 64;
    t->count = 0;
    t->buckets = fl_xcalloc(t->nbuckets, sizeof *t->buckets);
}

void fl_name_table_free(fl_name_table *t)
{
    for (size_t i = 0; i < t->nbuckets; i++) {
        fl_name_entry *e = t->buckets[i];
        while (e) {
            fl_name_entry *next = e->next;
            free(e->name);
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = NULL;
}

static fl_name_entry *find_entry(const fl_name_table *t, const char *name)
{
    fl_name_entry *e = t->buckets[hash_name(name) % t->nbuckets];
    while (e && strcmp(e->name, name) != 0)
        e = e->next;
    return e;
}

void *fl_name_table_get(const fl_name_table *t, const char *name)
{
    fl_name_entry *e = find_entry(t, name);
    return e ? e->value : NULL;
}

static void grow(fl_name_table *t)
{
    size_t nbuckets = t->nbuckets * 2;
    fl_name_entry **buckets = fl_xcalloc(nbuckets, sizeof *buckets);
    for (size_t i = 0; i < t->nbuckets; i++) {
        fl_name_entry *e = t->buckets[i];
        while (e) {
            fl_name_entry *next = e->next;
            size_t b = hash_name(e->name) % nbuckets;
            e->next = buckets[b];
            buckets[b] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = buckets;
    t->nbuckets = nbuckets;
}

void fl_name_table_put(fl_name_table *t, const char *name, void *value)
{
    fl_name_entry *e = find_entry(t, name);
    if (e) {
        e->value = value;
        return;
    }
    if (t->count >= t->nbuckets)
        grow(t);
    e = fl_xmalloc(sizeof *e);
    e->name = fl_xstrdup(name);
    e->value = value;
    size_t b = hash_name(name) % t->nbuckets;
    e->next = t->buckets[b];
    t->buckets[b] = e;
    t->count++;
}
