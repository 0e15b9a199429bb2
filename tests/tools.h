/* tools.h: what tests of pictures and documents share: a whole file read into
 * a string, and whether an outside tool (dot, gnuplot, pandoc, rsvg-convert)
 * is installed, so a test can skip with the reason when it is not. */
#ifndef FLOWLAB_TEST_TOOLS_H
#define FLOWLAB_TEST_TOOLS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* The file as a NUL-terminated string (its first MiB), or NULL. */
static inline char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = calloc(1, 1 << 20);
    text[fread(text, 1, (1 << 20) - 1, f)] = '\0';
    fclose(f);
    return text;
}

static inline bool have(const char *tool)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

#endif
