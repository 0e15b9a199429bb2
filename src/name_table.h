/* name_table.h: a small string -> pointer hash map.
 * The graph finds nodes and variables by name with it. */
#ifndef FLOWLAB_NAME_TABLE_H
#define FLOWLAB_NAME_TABLE_H

#include <stddef.h>

typedef struct fl_name_entry fl_name_entry;
typedef struct {
    fl_name_entry **buckets;
    size_t nbuckets;
    size_t count;
} fl_name_table;

void fl_name_table_init(fl_name_table *t);
void fl_name_table_free(fl_name_table *t);
void *fl_name_table_get(const fl_name_table *t, const char *name);
/* Stores value under name (copied); replaces an existing value. */
void fl_name_table_put(fl_name_table *t, const char *name, void *value);

#endif
