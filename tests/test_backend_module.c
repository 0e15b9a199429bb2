/* test_backend_module.c: the CUDA backend is a module opened at run time.
 * Where no NVIDIA driver answers, asking for CUDA says why and maps none of
 * CUDA's libraries; the module, opened by hand, reports its errors through
 * the program's fl_last_error; a bad module is refused with the reason; no
 * lab links cudart, cuBLAS or cuDNN (lab 6 links cudart for NCCL); and
 * flowlab-devices says why CUDA is unavailable. */
#include <dlfcn.h>
#include <string.h>

#include "backend_entry.h"
#include "tap.h"
#include "tools.h"

static const char *build_dir(void) { return getenv("BUILD") ? getenv("BUILD") : "build"; }

static const fl_backend_entry *cuda_entry(void)
{
    for (int i = 0; fl_backend_entries[i]; i++)
        if (strcmp(fl_backend_entries[i]->name, "cuda") == 0)
            return fl_backend_entries[i];
    return NULL;
}

/* The first CUDA library this process has mapped, or NULL. */
static const char *mapped_cuda_library(void)
{
    static const char *const names[] = {"libcudart", "libcublas", "libcudnn", "libflowlab_cuda"};
    char *maps = read_text("/proc/self/maps");
    const char *found = NULL;
    for (size_t i = 0; maps && !found && i < sizeof names / sizeof *names; i++)
        if (strstr(maps, names[i]))
            found = names[i];
    free(maps);
    return found;
}

/* Asked for by name on a machine without a GPU: a reason, no library. */
static void test_asked_without_a_gpu(void)
{
    fl_device_info info[4];
    int count = fl_list_devices(info, 4);
    if (count > 1) {
        skip("CUDA asked for without a GPU maps no CUDA library", "this machine has a CUDA device");
        return;
    }
    ok(fl_last_error()[0] != '\0', "with no CUDA device, fl_last_error says why: %s", fl_last_error());
    const char *mapped = mapped_cuda_library();
    ok(!mapped, "and no CUDA library was mapped (%s)", mapped ? mapped : "none");
}

/* The module opened without asking the driver (it loads without a GPU): a
 * device that does not open leaves its error in this program's
 * fl_last_error, through the table the core hands the module. */
static void test_module_reports_through_the_core(const fl_backend_entry *e)
{
    fl_status why = {0};
    const fl_backend *b = fl_backend_module_open(e, &why);
    if (!ok(b && strcmp(b->name, "cuda") == 0, "the module opens and holds the cuda backend"))
        diag("%s", why.message);
    if (!b || b->device_count() > 0)
        return;
    ok(b->why_unavailable()[0] != '\0', "its device_count is 0 and it says why: %s", b->why_unavailable());
    fl_set_error("stale");
    ok(b->open(0) == NULL, "opening /gpu:0 without a GPU fails");
    ok(strcmp(fl_last_error(), "stale") != 0, "and the module's message reached fl_last_error: %s", fl_last_error());
    ok(fl_last_error_code() != FL_UNKNOWN, "with the module's code, as the core's own errors have (%s)",
       fl_error_code_name(fl_last_error_code()));
}

static void test_bad_modules(const fl_backend_entry *e)
{
    fl_status why = {0};
    fl_backend_entry missing = *e, foreign = *e;
    missing.module_path = "/nonexistent/libflowlab_cuda.so";
    missing.module_path_env = "FLOWLAB_TEST_NO_SUCH_VARIABLE";
    ok(fl_backend_module_open(&missing, &why) == NULL, "a missing module is refused");
    contains(why.message, "FLOWLAB_TEST_NO_SUCH_VARIABLE", "and the reason names the variable that overrides its path");
    foreign.module_path = "libz.so.1"; /* a shared object that is no flowlab module */
    foreign.module_path_env = NULL;
    ok(fl_backend_module_open(&foreign, &why) == NULL, "a library that is not a module is refused");
    contains(why.message, "fl_cuda_module_open", "and the reason names the entry point it lacks");
}

/* ldd of every built lab and tool: none needs cuBLAS or cuDNN, and only
 * lab 6 (NCCL) needs cudart. */
static void test_labs_link_no_cuda(void)
{
    if (!have("ldd")) {
        skip("no lab links a CUDA library", "ldd is not installed");
        return;
    }
    char cmd[512], line[1024], file[512] = "";
    snprintf(cmd, sizeof cmd, "ldd %s/labs/*/* 2>/dev/null", build_dir());
    FILE *p = popen(cmd, "r");
    int files = 0, bad = 0;
    while (p && fgets(line, sizeof line, p)) {
        if (line[0] != '\t' && strchr(line, ':')) {
            snprintf(file, sizeof file, "%.*s", (int)strcspn(line, ":"), line);
            files++;
            continue;
        }
        bool cudart = strstr(line, "libcudart") != NULL, allreduce = strstr(file, "06-allreduce") != NULL;
        if (strstr(line, "libcublas") || strstr(line, "libcudnn") || (cudart && !allreduce)) {
            diag("%s links %.*s", file, (int)strcspn(line + 1, " "), line + 1);
            bad++;
        }
    }
    if (p)
        pclose(p);
    ok(files > 0, "ldd read %d built labs and tools under %s/labs", files, build_dir());
    ok(bad == 0, "none links cuBLAS or cuDNN, and only lab 6 links cudart");
}

/* flowlab-devices' output with env before it ("" for none), or NULL. */
static char *devices_tool_output(const char *env, int *status)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s/labs/tools/flowlab-devices 2>&1", env, build_dir());
    FILE *p = popen(cmd, "r");
    char *out = calloc(1, 8192);
    size_t n = p ? fread(out, 1, 8191, p) : 0;
    *status = p ? pclose(p) : -1;
    out[n] = '\0';
    return out;
}

static void test_devices_tool_says_why(void)
{
    int status;
    char *out = devices_tool_output("FLOWLAB_BACKEND=cuda", &status);
    ok(status == 0, "FLOWLAB_BACKEND=cuda flowlab-devices exits 0");
    if (strstr(out, "/gpu:0"))
        contains(out, "cuda", "and lists the CUDA device");
    else
        contains(out, "no accelerator: ", "and says why there is no CUDA device");
    free(out);
    /* Left to choose, it still names each built backend that has no device here, and why. */
    unsetenv("FLOWLAB_BACKEND");
    fl_backend_info backends[8];
    int nb = fl_list_backends(backends, 8);
    out = devices_tool_output("env -u FLOWLAB_BACKEND", &status);
    ok(status == 0 && nb > 0, "flowlab-devices exits 0 with %d backends built", nb);
    for (int i = 0; i < nb; i++) {
        char want[300];
        snprintf(want, sizeof want, "%s: unavailable: %s", backends[i].name, backends[i].why_unavailable);
        if (backends[i].devices == 0)
            contains(out, want, "an unavailable backend is named with its reason");
        else
            ok(!strstr(out, want), "%s has %d devices and is not called unavailable", backends[i].name,
               backends[i].devices);
    }
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
        diag("%s", line);
    free(out);
}

int main(void)
{
    setenv("FLOWLAB_BACKEND", "cuda", 1);
    const fl_backend_entry *e = cuda_entry();
    test_asked_without_a_gpu();
    if (e) {
        test_module_reports_through_the_core(e);
        test_bad_modules(e);
    } else {
        skip("the CUDA module", "built without CUDA (nvcc, cuBLAS or cuDNN not found; see cuda/backend.mk)");
    }
    test_labs_link_no_cuda();
    test_devices_tool_says_why();
    return done_testing();
}
