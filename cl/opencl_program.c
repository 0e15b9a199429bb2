/* opencl_program.c: build a program from source or from a cached binary.
 * A cache file is a small header (magic, key, length, checksum) and the
 * driver's binary; a file that fails any check, or that the driver will not
 * build, is ignored and rewritten. Writes go to a temporary file renamed
 * into place, so two processes never see half a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "opencl_device.h"
#include "opencl_program.h"

typedef struct {
    char magic[8]; /* "FLCLBIN1" */
    uint64_t key;
    uint64_t length;
    uint64_t checksum; /* of the binary */
} cache_header;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static fl_cl_cache_stats stats;

static void count(uint64_t *counter)
{
    pthread_mutex_lock(&stats_lock);
    (*counter)++;
    pthread_mutex_unlock(&stats_lock);
}

fl_cl_cache_stats fl_cl_program_cache_stats(void)
{
    pthread_mutex_lock(&stats_lock);
    fl_cl_cache_stats s = stats;
    pthread_mutex_unlock(&stats_lock);
    return s;
}

/* FNV-1a, 64 bits: not cryptographic, only a cache key and a checksum. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_string(uint64_t h, const char *s) { return fnv1a(h, s, strlen(s) + 1); }

static uint64_t cache_key(cl_device_id device, const char *source, const char *options)
{
    uint64_t h = 0xcbf29ce484222325ull;
    cl_device_info fields[3] = {CL_DEVICE_NAME, CL_DRIVER_VERSION, CL_DEVICE_VERSION};
    for (int i = 0; i < 3; i++) {
        char text[256] = "";
        clGetDeviceInfo(device, fields[i], sizeof text - 1, text, NULL);
        h = hash_string(h, text);
    }
    return hash_string(hash_string(h, options), source);
}

/* mkdir -p; failure is for the caller's open() to discover. */
static void make_dirs(const char *path)
{
    char partial[1024];
    snprintf(partial, sizeof partial, "%s", path);
    for (char *p = partial + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(partial, 0755);
        *p = '/';
    }
    mkdir(partial, 0755);
}

/* The cache directory, or "" when neither a variable nor HOME names one. */
static void cache_dir(char *dir, size_t len)
{
    const char *own = getenv("FLOWLAB_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (own && own[0])
        snprintf(dir, len, "%s", own);
    else if (xdg && xdg[0])
        snprintf(dir, len, "%s/flowlab", xdg);
    else if (home && home[0])
        snprintf(dir, len, "%s/.cache/flowlab", home);
    else
        dir[0] = '\0';
}

static void cache_path(const char *label, uint64_t key, char *path, size_t len)
{
    char dir[900];
    cache_dir(dir, sizeof dir);
    if (!dir[0]) {
        path[0] = '\0';
        return;
    }
    snprintf(path, len, "%s/%s-%016llx.clbin", dir, label, (unsigned long long)key);
}

/* The cached binary for key, or NULL (absent, short, corrupt or foreign). */
static unsigned char *read_cached(const char *path, uint64_t key, size_t *length)
{
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (!f)
        return NULL;
    cache_header h;
    unsigned char *binary = NULL;
    bool good = fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, "FLCLBIN1", 8) == 0 &&
                h.key == key && h.length > 0 && h.length < ((uint64_t)1 << 30);
    if (good) {
        binary = fl_xmalloc((size_t)h.length);
        good = fread(binary, 1, (size_t)h.length, f) == h.length && fgetc(f) == EOF &&
               fnv1a(0xcbf29ce484222325ull, binary, (size_t)h.length) == h.checksum;
    }
    fclose(f);
    if (!good) {
        free(binary);
        return NULL;
    }
    *length = (size_t)h.length;
    return binary;
}

static cl_program from_binary(cl_context context, cl_device_id device, const unsigned char *binary,
                              size_t length, const char *options)
{
    cl_int err, status;
    cl_program p = clCreateProgramWithBinary(context, 1, &device, &length, &binary, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS) {
        if (p)
            clReleaseProgram(p);
        return NULL;
    }
    if (clBuildProgram(p, 1, &device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(p);
        return NULL;
    }
    return p;
}

static void print_build_log(cl_program p, cl_device_id device, const char *label)
{
    size_t size = 0;
    clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = fl_xcalloc(size + 1, 1);
    clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    fprintf(stderr, "flowlab: building the OpenCL program \"%s\" failed; the build log:\n%s\n",
            label, log);
    free(log);
}

static cl_program from_source(cl_context context, cl_device_id device, const char *label,
                              const char *source, const char *options)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    if (err != CL_SUCCESS) {
        fl_cl_fail("clCreateProgramWithSource", err);
        return NULL;
    }
    err = clBuildProgram(p, 1, &device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        print_build_log(p, device, label);
        clReleaseProgram(p);
        fl_set_error_code(FL_INTERNAL, "building the OpenCL program \"%s\" failed: %s (the build log is on stderr)",
                          label, fl_cl_error_name(err));
        return NULL;
    }
    return p;
}

/* Best effort: any failure leaves no file behind and says nothing. */
static void write_cached(const char *path, uint64_t key, cl_program p)
{
    size_t length = 0;
    if (!path[0] || clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof length, &length, NULL) ||
        length == 0)
        return;
    unsigned char *binary = fl_xmalloc(length);
    cache_header h = {.key = key, .length = length};
    memcpy(h.magic, "FLCLBIN1", 8);
    bool good = clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL) == 0;
    h.checksum = fnv1a(0xcbf29ce484222325ull, binary, length);
    char dir[900], tmp[1100];
    cache_dir(dir, sizeof dir);
    make_dirs(dir);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = good ? fopen(tmp, "wb") : NULL;
    if (f) {
        good = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(binary, 1, length, f) == length;
        good = fclose(f) == 0 && good && rename(tmp, path) == 0;
        if (!good)
            remove(tmp);
        else
            count(&stats.cache_writes);
    }
    free(binary);
}

cl_program fl_cl_program_build(cl_context context, cl_device_id device, const char *label,
                               const char *source, const char *options)
{
    uint64_t key = cache_key(device, source, options);
    char path[1024];
    cache_path(label, key, path, sizeof path);
    size_t length = 0;
    unsigned char *binary = read_cached(path, key, &length);
    cl_program p = binary ? from_binary(context, device, binary, length, options) : NULL;
    free(binary);
    if (p) {
        count(&stats.cache_hits);
        return p;
    }
    count(&stats.cache_misses);
    p = from_source(context, device, label, source, options);
    if (p)
        write_cached(path, key, p);
    return p;
}
