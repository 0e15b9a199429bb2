/* test_backend_checklist.c: README's "Adding a backend" checklist, checked
 * for every backend the build found (the registry's generated table): its
 * folder and backend_NAME.c, its backend.mk appending to BACKENDS, its line
 * in the Makefile, its entry (linked, or a module with its probe) and a
 * table whose required core is filled. Run from the repository's root. */
#include <string.h>
#include <sys/stat.h>

#include "backend_entry.h"
#include "tap.h"
#include "tools.h"

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A line "BACKENDS += folder" (any spacing) in the backend.mk. */
static bool appends_to_backends(const char *mk, const char *folder)
{
    for (const char *line = mk; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char word[64] = "";
        if (strncmp(line, "BACKENDS", 8) == 0 && sscanf(line + 8, " += %63s", word) == 1 &&
            strcmp(word, folder) == 0)
            return true;
    }
    return false;
}

/* Steps 1, 2 and 4: the folder's files and the Makefile's line. */
static void check_files(const char *folder, const char *name, const char *makefile)
{
    char path[256], line[256];
    snprintf(path, sizeof path, "%s/backend_%s.c", folder, name);
    if (!ok(file_exists(path), "%s: its table is in %s", name, path))
        diag("step 1 of README's \"Adding a backend\": the fl_backend table goes in %s", path);
    snprintf(path, sizeof path, "%s/backend.mk", folder);
    char *mk = read_text(path);
    if (!ok(appends_to_backends(mk, folder), "%s: %s appends %s to BACKENDS", name, path, folder))
        diag("step 2: %s must say `BACKENDS += %s`", path, folder);
    free(mk);
    snprintf(line, sizeof line, "\n-include %s/backend.mk\n", folder);
    if (!ok(makefile && strstr(makefile, line), "%s: the Makefile includes %s/backend.mk", name, folder))
        diag("step 4: add `-include %s/backend.mk` to the Makefile", folder);
}

/* Step 3: linked, or a module with everything the registry needs to open it. */
static void check_entry(const fl_backend_entry *e)
{
    bool module = e->module_path && e->module_path_env && e->module_open && e->driver_answers;
    if (!ok((e->linked != NULL) != module, "%s: its entry is a linked table or a whole module description", e->name))
        diag("step 3: set .linked, or all of .module_path, .module_path_env, .module_open, .driver_answers");
}

static void check_table(const fl_backend_entry *e)
{
    fl_status why = {0};
    const fl_backend *b = e->linked ? e->linked : fl_backend_module_open(e, &why);
    if (!ok(b != NULL, "%s: its table can be had (a module opens without a driver)", e->name)) {
        diag("%s", why.message);
        return;
    }
    ok(strcmp(b->name, e->name) == 0, "%s: the table's name is the entry's (%s)", e->name, b->name);
    bool core = b->device_count && b->describe && b->open && b->close && b->alloc && b->release && b->copy_in &&
                b->copy_out && b->has_kernel && b->run && b->wait && b->why_unavailable;
    if (!ok(core, "%s: every member of the table's required core is filled", e->name))
        diag("src/device.h lists them: device_count, describe, open, close, alloc, release, copy_in, "
             "copy_out, has_kernel, run, wait, why_unavailable");
}

int main(void)
{
    char *makefile = read_text("Makefile"), *readme = read_text("README.md");
    contains(readme, "### Adding a backend", "README has the \"Adding a backend\" checklist");
    int count = 0;
    for (; fl_backend_entries[count]; count++) {
        const fl_backend_entry *e = fl_backend_entries[count];
        ok(e->name && e->name[0] && fl_backend_folders[count], "backend %d has a name and a folder", count);
        check_files(fl_backend_folders[count], e->name, makefile);
        check_entry(e);
        check_table(e);
    }
    ok(fl_backend_folders[count] == NULL, "one folder per entry in the generated table (src/backends.mk)");
    diag("backends built: %d", count);
    free(makefile);
    free(readme);
    return done_testing();
}
