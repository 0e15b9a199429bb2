/* lab_runner.h: runs a chapter's built lab and exercise checks the way a
 * student does (through the shell, output captured), for test_lab01.c and
 * test_lab02.c: where the build is, the "Step N with loss X" lines parsed,
 * exit statuses decoded, and a scratch directory removed at the end. */
#ifndef FLOWLAB_LAB_RUNNER_H
#define FLOWLAB_LAB_RUNNER_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static char build_dir[512] = "build";
static char lab[600];     /* the lab program */
static char tmp_dir[256]; /* scratch for outputs and checkpoints */

#define MAX_STEPS 64

typedef struct {
    int status;                /* exit status, or 128 + signal */
    char *out;                 /* stdout and stderr together */
    int nsteps;
    long step[MAX_STEPS];
    double loss[MAX_STEPS];
    char line[MAX_STEPS][96];  /* "Step N with loss X", without the speed */
} run_result;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = calloc((size_t)len + 1, 1);
    if (text && fread(text, 1, (size_t)len, f) != (size_t)len)
        text[0] = '\0';
    fclose(f);
    return text;
}

static void parse_steps(run_result *r)
{
    r->nsteps = 0;
    for (const char *p = r->out; p && (p = strstr(p, "Step ")) && r->nsteps < MAX_STEPS; p++) {
        long step;
        double loss;
        if ((p == r->out || p[-1] == '\n') && sscanf(p, "Step %ld with loss %lf", &step, &loss) == 2) {
            const char *end = strstr(p, " (");
            const char *nl = strchr(p, '\n');
            int len = (int)((end && (!nl || end < nl) ? end : nl ? nl : p + strlen(p)) - p);
            snprintf(r->line[r->nsteps], sizeof r->line[0], "%.*s", len, p);
            r->step[r->nsteps] = step;
            r->loss[r->nsteps++] = loss;
        }
    }
}

static int decode_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* Runs "COMMAND > out 2>&1" through the shell; the output is returned. */
static int run_command(const char *command, char **out)
{
    char cmd[2400], out_path[300];
    snprintf(out_path, sizeof out_path, "%s/out.txt", tmp_dir);
    snprintf(cmd, sizeof cmd, "%s > %s 2>&1", command, out_path);
    int status = decode_status(system(cmd));
    *out = read_file(out_path);
    return status;
}

/* A lab run that hangs ends here, with timeout's status 124, so the test
 * fails with the run's output instead of hanging the suite. */
#define LAB_DEADLINE_S 300

/* Runs "ENV lab ARGS", capturing both output streams. */
static run_result run_env(const char *env, const char *args)
{
    run_result r = {0};
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s timeout %d %s %s", env, LAB_DEADLINE_S, lab, args);
    r.status = run_command(cmd, &r.out);
    parse_steps(&r);
    return r;
}

static inline run_result run_lab(const char *args) { return run_env("", args); }

/* The number printed right after key in out, or -1 when key is not there. */
static inline double printed_number(const char *out, const char *key)
{
    const char *p = out ? strstr(out, key) : NULL;
    return p ? atof(p + strlen(key)) : -1;
}

/* Under SANITIZE=1 a lab reports what it did not free when it exits; in
 * the plain build there is no report and this holds trivially. */
static inline bool reports_no_leak(const run_result *r)
{
    return r->out && !strstr(r->out, "LeakSanitizer") && !strstr(r->out, "leaked in");
}

/* A bad flag and the flag its message must name. */
typedef struct {
    const char *args, *flag;
} bad_flag_case;

/* Each of cases[0..count) run alone exits 2 with a message naming its flag. */
static inline void test_bad_flags(const bad_flag_case *cases, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        run_result r = run_lab(cases[i].args);
        ok(r.status == 2 && r.out && strstr(r.out, cases[i].flag), "'%s' exits 2 and names %s",
           cases[i].args, cases[i].flag);
        if (r.status != 2)
            diag("exit %d: %s", r.status, r.out ? r.out : "");
        free(r.out);
    }
}

/* Waits (polling, up to seconds) until path holds text; false on the deadline. */
static inline bool wait_for_text(const char *path, const char *text, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        char *have = read_file(path);
        bool found = have && strstr(have, text);
        free(have);
        if (found)
            return true;
        usleep(100000);
    }
    return false;
}

/* Writes text into DIR/checkpoint (DIR is made): an index the saver cannot read. */
static inline void write_damaged_index(const char *dir, const char *text)
{
    char index[600];
    snprintf(index, sizeof index, "%s/checkpoint", dir);
    mkdir(dir, 0700);
    FILE *f = fopen(index, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Finds the build from argv[0] (build/tests/test_labNN -> build, or
 * build-sanitize under SANITIZE=1), names the lab program (`lab_path`
 * under it) and makes the scratch directory; skips everything when the
 * lab is not built. */
static void lab_runner_start(const char *argv0, const char *test_name, const char *lab_path)
{
    char tail[64];
    snprintf(tail, sizeof tail, "/tests/%s", test_name);
    const char *at = strstr(argv0, tail);
    if (at)
        snprintf(build_dir, sizeof build_dir, "%.*s", (int)(at - argv0), argv0);
    snprintf(lab, sizeof lab, "%s/%s", build_dir, lab_path);
    if (access(lab, X_OK) != 0)
        skip_all("the lab is not built; `make tests` builds it");
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/%s.XXXXXX", test_name);
    if (!mkdtemp(tmp_dir))
        skip_all("cannot make a temporary directory");
}

static void lab_runner_finish(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp_dir);
}

/* Each exercise {file name, check name} of a chapter: the reference
 * solution's check prints "PASS name"; the student's copy, solved or not,
 * prints one clear line (PASS, or "not implemented yet" ending with the
 * file to edit). */
static inline void test_exercise_checks(const char *chapter, const char *const names[][2], size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char cmd[1200], want[64];
        snprintf(want, sizeof want, "PASS %s\n", names[i][1]);
        snprintf(cmd, sizeof cmd, "%s/exercises/%s/solutions/check_%s", build_dir, chapter, names[i][0]);
        char *out;
        int status = run_command(cmd, &out);
        ok(status == 0 && out && strcmp(out, want) == 0, "the reference solution passes %s", names[i][1]);
        if (status != 0)
            diag("%s", out ? out : "(no output)");
        free(out);

        snprintf(cmd, sizeof cmd, "%s/exercises/%s/check_%s", build_dir, chapter, names[i][0]);
        status = run_command(cmd, &out);
        snprintf(want, sizeof want, "FAIL %s: not implemented yet", names[i][1]);
        ok(out && ((status == 0 && strncmp(out, "PASS ", 5) == 0) ||
                   (status == 1 && strncmp(out, want, strlen(want)) == 0)),
           "the exercise file's check says PASS or 'not implemented yet' for %s", names[i][1]);
        char file[200], line_end[220];
        snprintf(file, sizeof file, "labs/%s/exercises/%s.c", chapter, names[i][0]);
        snprintf(line_end, sizeof line_end, " (edit %s)\n", file);
        ok(out && (strncmp(out, "PASS ", 5) == 0 || (status == 1 && strstr(out, line_end))),
           "a failing check of %s ends with the file to edit, %s", names[i][1], file);
        free(out);
    }
}

#endif
