/* temp_files.h: the temporary files behind every atomic write in src/io/
 * (PATH.tmp.PID, renamed over PATH once complete), and the removal of those
 * a writer killed mid-write left behind. */
#ifndef FLOWLAB_TEMP_FILES_H
#define FLOWLAB_TEMP_FILES_H

#include <stdbool.h>

/* "PATH.tmp.PID" for this process, to free. */
char *fl_temp_path_for(const char *path);

/* Removes DIR/NAME.tmp.PID files that are stale (see temp_files.c for the
 * rule) and whose NAME is_ours() accepts. Best effort: nothing is reported. */
void fl_remove_stale_temps(const char *dir, bool (*is_ours)(const char *name));

#endif
