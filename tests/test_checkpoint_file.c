/* test_checkpoint_file.c: the checkpoint file format on its own.
 * Round trips, the exact bytes of a small file, the messages for corrupted
 * (header, names, shapes, data) and truncated files, and that a failed
 * write leaves the old file intact. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "flowlab.h"
#include "tap.h"

/* Under AddressSanitizer (make SANITIZE=1) any allocation above 64 MiB
 * aborts the test, so a corrupted length that reached malloc fails loudly
 * instead of quietly succeeding on a machine with memory to spare. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=64"; }

static char test_dir[] = "/tmp/flowlab-ckpt-XXXXXX";

/* ---- small file helpers ---- */

static const char *path_in_dir(const char *name)
{
    static char paths[8][512];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", test_dir, name);
    return path;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *bytes = malloc(*len ? *len : 1);
    if (fread(bytes, 1, *len, f) != *len) {
        free(bytes);
        bytes = NULL;
    }
    fclose(f);
    return bytes;
}

static void spit(const char *path, const unsigned char *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len)
        diag("cannot write %s: %s", path, strerror(errno));
    if (f)
        fclose(f);
}

static void put_le32(unsigned char *out, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *in)
{
    return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}

static int count_temp_files(void)
{
    DIR *dir = opendir(test_dir);
    int count = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        if (strstr(e->d_name, ".tmp."))
            count++;
    if (dir)
        closedir(dir);
    return count;
}

/* Reads path expecting failure; returns fl_last_error() for comparison. */
static const char *read_error(const char *path)
{
    fl_named_tensor *got = NULL;
    int n = -1;
    if (fl_checkpoint_read(path, &got, &n) == 0) {
        fl_checkpoint_free(got, n);
        return "(the read succeeded)";
    }
    return fl_last_error();
}

/* ---- the tensors the tests save ---- */

static fl_named_tensor model[6];
enum { MODEL_SIZE = 6 };

static void make_model(void)
{
    static const float weights[24] = {1.5f, -2.25f, 0.0f, -0.0f, 3e-38f, 1e38f};
    static const int32_t steps[12] = {INT32_MIN, -1, 0, 1, INT32_MAX, 42, 7, 8, 9, 10, 11, 12};
    float kernel[2 * 2 * 3 * 2];
    for (int i = 0; i < 24; i++)
        kernel[i] = weights[i % 6] + (float)i * 0.125f;
    float nan = 0.0f;
    uint32_t nan_bits = 0x7fc01234u; /* a NaN with a payload: must survive bit for bit */
    memcpy(&nan, &nan_bits, 4);

    model[0] = (fl_named_tensor){"learning_rate", fl_tensor_from_floats(fl_shape_make(0), &nan)};
    model[1] = (fl_named_tensor){"global_step", fl_tensor_from_ints(fl_shape_make(1, 5), steps)};
    model[2] = (fl_named_tensor){"dense/bias", fl_tensor_from_floats(fl_shape_make(2, 3, 4), kernel)};
    model[3] = (fl_named_tensor){"labels", fl_tensor_from_ints(fl_shape_make(3, 2, 3, 2), steps)};
    model[4] = (fl_named_tensor){"empty", fl_tensor_new(FL_FLOAT32, fl_shape_make(2, 0, 3))};
    model[5] = (fl_named_tensor){"conv1/kernel",
                                 fl_tensor_from_floats(fl_shape_make(4, 2, 2, 3, 2), kernel)};
}

static void free_model(void)
{
    for (int i = 0; i < MODEL_SIZE; i++)
        fl_tensor_free(model[i].tensor);
}

static bool same_tensor(const fl_named_tensor *a, const fl_named_tensor *b)
{
    const fl_tensor *x = a->tensor, *y = b->tensor;
    size_t bytes = (size_t)fl_shape_size(x->shape) * 4;
    return strcmp(a->name, b->name) == 0 && x->dtype == y->dtype &&
           fl_shape_equal(x->shape, y->shape) && memcmp(x->data, y->data, bytes) == 0;
}

/* ---- round trips ---- */

static void test_round_trip(void)
{
    const char *path = path_in_dir("model.ckpt-1");
    ok(fl_checkpoint_write(path, model, MODEL_SIZE) == 0, "write six tensors, ranks 0 to 4");
    ok(count_temp_files() == 0, "no temporary file is left after a successful write");

    fl_named_tensor *got = NULL;
    int n = 0;
    if (!ok(fl_checkpoint_read(path, &got, &n) == 0, "read them back"))
        diag("%s", fl_last_error());
    ok(n == MODEL_SIZE, "six tensors come back (got %d)", n);
    for (int i = 0; i < n && i < MODEL_SIZE; i++)
        ok(same_tensor(&got[i], &model[i]), "'%s' is byte-exact, same dtype and shape",
           model[i].name);
    fl_checkpoint_free(got, n);
}

static void test_empty_checkpoint(void)
{
    const char *path = path_in_dir("empty.ckpt");
    fl_named_tensor *got = NULL;
    int n = -1;
    ok(fl_checkpoint_write(path, NULL, 0) == 0, "a checkpoint of no tensors can be written");
    ok(fl_checkpoint_read(path, &got, &n) == 0 && n == 0, "and read back as zero tensors");
    fl_checkpoint_free(got, n);
}

/* The documented layout, byte for byte, for one int32 tensor 'a' = [1, -2].
 * Each CRC is the CRC-32 of every byte of the file before it. */
static void test_exact_bytes(void)
{
    const char *path = path_in_dir("tiny.ckpt");
    int32_t values[2] = {1, -2};
    fl_named_tensor one = {"a", fl_tensor_from_ints(fl_shape_make(1, 2), values)};
    ok(fl_checkpoint_write(path, &one, 1) == 0, "write a one-tensor checkpoint");
    fl_tensor_free(one.tensor);

    unsigned char payload[8] = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff};
    unsigned char want[57] = {'F', 'L', 'C', 'K', 'P', 'T', 0, 1, /* magic */
                              2, 0, 0, 0,       /* version */
                              1, 0, 0, 0,       /* tensor count; the header's CRC follows */
                              0, 0, 0, 0,
                              1, 0, 0, 0, 'a',  /* name */
                              1, 0, 0, 0,       /* dtype int32 */
                              1, 0, 0, 0,       /* rank */
                              2, 0, 0, 0,       /* dims */
                              8, 0, 0, 0, 0, 0, 0, 0}; /* payload bytes; payload and CRC follow */
    put_le32(want + 16, (uint32_t)crc32(0L, want, 16));
    memcpy(want + 45, payload, sizeof payload);
    put_le32(want + 53, (uint32_t)crc32(0L, want, 53));

    size_t len = 0;
    unsigned char *got = slurp(path, &len);
    ok(got && len == sizeof want && memcmp(got, want, len) == 0,
       "the file holds exactly the documented little-endian bytes");
    free(got);
}

/* ---- damaged files ---- */

/* A two-tensor file whose last tensor is 'dense/kernel' [2,3]; returns its bytes. */
static unsigned char *write_victim(const char *path, size_t *len)
{
    float kernel[6] = {0.5f, -1.0f, 2.0f, 0.25f, 8.0f, -3.5f};
    fl_named_tensor pair[2] = {
        {"global_step", fl_tensor_from_ints(fl_shape_make(0), (int32_t[]){100})},
        {"dense/kernel", fl_tensor_from_floats(fl_shape_make(2, 2, 3), kernel)},
    };
    if (fl_checkpoint_write(path, pair, 2) != 0)
        diag("write_victim: %s", fl_last_error());
    fl_tensor_free(pair[0].tensor);
    fl_tensor_free(pair[1].tensor);
    return slurp(path, len);
}

/* Offsets in the victim: header 20 (its CRC at 16); global_step record
 * 4+11+4+4+8+4+4 = 39; the kernel's payload, then its CRC, end the file. */
enum { HEADER_CRC = 16, SECOND_RECORD = 20 + 39, KERNEL_PAYLOAD_BYTES = 24 };

/* Writes the edited victim bytes to path and returns the message a CRC
 * mismatch should give for what ("tensor 'x'", "the header"), whose CRC is
 * stored at crc_at. */
static const char *spit_expecting_crc_error(const char *path, unsigned char *bytes, size_t len,
                                            size_t crc_at, const char *what)
{
    static char want[600];
    spit(path, bytes, len);
    snprintf(want, sizeof want, "%s: %s is corrupted (CRC 0x%08x, expected 0x%08x): a byte changed "
             "after it was written; restore an earlier checkpoint", path, what,
             (unsigned)crc32(0L, bytes, (uInt)crc_at), (unsigned)get_le32(bytes + crc_at));
    free(bytes);
    return want;
}

static void test_flipped_payload_byte(void)
{
    const char *path = path_in_dir("model.ckpt-100");
    size_t len = 0;
    unsigned char *bytes = write_victim(path, &len);
    bytes[len - 4 - KERNEL_PAYLOAD_BYTES + 5] ^= 0x10;
    const char *want = spit_expecting_crc_error(path, bytes, len, len - 4, "tensor 'dense/kernel'");
    is_string(read_error(path), want, "a flipped payload byte is refused, naming the tensor");
}

/* Version 1's CRC covered payloads only: each of these read back wrong. */
static void test_flipped_name_and_shape(void)
{
    const char *path = path_in_dir("model.ckpt-101");
    size_t len = 0, kernel_dims = SECOND_RECORD + 4 + 12 + 4 + 4;
    unsigned char *bytes = write_victim(path, &len);
    bytes[SECOND_RECORD + 4 + 1] ^= 0x10; /* dense/kernel reads as dunse/kernel */
    const char *want = spit_expecting_crc_error(path, bytes, len, len - 4, "tensor 'dunse/kernel'");
    is_string(read_error(path), want, "a flipped byte in a name is refused, naming the file");

    bytes = write_victim(path, &len);
    put_le32(bytes + kernel_dims, 3); /* [2,3] becomes [3,2], the same payload size */
    put_le32(bytes + kernel_dims + 4, 2);
    want = spit_expecting_crc_error(path, bytes, len, len - 4, "tensor 'dense/kernel'");
    is_string(read_error(path), want, "a transposed shape is refused");

    bytes = write_victim(path, &len);
    bytes[20 + 4 + 11] = 0; /* global_step's dtype: int32 (1) becomes float32 (0) */
    want = spit_expecting_crc_error(path, bytes, len, SECOND_RECORD - 4, "tensor 'global_step'");
    is_string(read_error(path), want, "an int32 tensor turned float32 is refused");

    bytes = write_victim(path, &len);
    bytes[12] ^= 0x01; /* two tensors become three */
    want = spit_expecting_crc_error(path, bytes, len, HEADER_CRC, "the header");
    is_string(read_error(path), want, "a flipped byte in the tensor count is refused");
}

/* The bytes version 1 wrote for 'a' = [1, -2]: refused, naming the version. */
static void test_version_1_file(void)
{
    const char *path = path_in_dir("old.ckpt");
    unsigned char old[53] = {'F', 'L', 'C', 'K', 'P', 'T', 0, 1, 1, 0, 0, 0, 1, 0, 0, 0,
                             1, 0, 0, 0, 'a', 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0,
                             8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff};
    spit(path, old, sizeof old);
    char want[600];
    snprintf(want, sizeof want, "%s: checkpoint format version 1 is not supported (this build "
             "reads 2); it was written by an older flowlab: train again to save a new one", path);
    is_string(read_error(path), want, "a version 1 file is refused, naming its version");
}

static void test_truncated(void)
{
    const char *path = path_in_dir("truncated.ckpt");
    size_t len = 0;
    unsigned char *bytes = write_victim(path, &len);
    char want[600];

    spit(path, bytes, len - 3);
    snprintf(want, sizeof want, "%s: file is truncated in tensor 'dense/kernel'", path);
    is_string(read_error(path), want, "truncated in a payload: names the tensor");

    spit(path, bytes, SECOND_RECORD + 4 + 12 + 4 + 4 + 2); /* inside the dims */
    is_string(read_error(path), want, "truncated in the shape: names the tensor");

    spit(path, bytes, SECOND_RECORD + 2); /* inside the name length */
    snprintf(want, sizeof want, "%s: file is truncated in tensor 2 of 2", path);
    is_string(read_error(path), want, "truncated before a name: says which tensor by number");

    spit(path, bytes, 10);
    snprintf(want, sizeof want, "%s: not a flowlab checkpoint (10 bytes, too short for the header)",
             path);
    is_string(read_error(path), want, "truncated in the header");
    free(bytes);
}

static void test_wrong_magic(void)
{
    const char *path = path_in_dir("magic.ckpt");
    size_t len = 0;
    unsigned char *bytes = write_victim(path, &len);
    bytes[0] = 'X';
    spit(path, bytes, len);
    free(bytes);
    char want[600];
    snprintf(want, sizeof want, "%s: not a flowlab checkpoint (bad magic)", path);
    is_string(read_error(path), want, "a wrong magic is refused");
}

/* Rewrites one little-endian uint32 of the victim file and returns the error.
 * A word in the header gets its CRC fixed up, so that the checks behind the
 * CRC (the count against the file's size) are tested too. */
static const char *read_with_word(const char *path, size_t offset, uint32_t value)
{
    size_t len = 0;
    unsigned char *bytes = write_victim(path, &len);
    put_le32(bytes + offset, value);
    if (offset < HEADER_CRC)
        put_le32(bytes + HEADER_CRC, (uint32_t)crc32(0L, bytes, HEADER_CRC));
    spit(path, bytes, len);
    free(bytes);
    return read_error(path);
}

static void test_corrupted_fields(void)
{
    const char *path = path_in_dir("fields.ckpt");
    char want[600];
    size_t file_len = SECOND_RECORD + 4 + 12 + 4 + 4 + 8 + 8 + KERNEL_PAYLOAD_BYTES + 4;

    /* 0xFFFFFFFF must be compared with the bytes left, never handed to malloc. */
    snprintf(want, sizeof want,
             "%s: tensor 1 of 2 claims a 4294967295-byte name but only %zu bytes are left "
             "(truncated or corrupted file)", path, file_len - 24);
    is_string(read_with_word(path, 20, 0xFFFFFFFFu), want, "a name length of 0xFFFFFFFF");

    snprintf(want, sizeof want, "%s: header claims 4294967295 tensors (corrupted file)", path);
    is_string(read_with_word(path, 12, 0xFFFFFFFFu), want, "a tensor count of 0xFFFFFFFF");

    /* A plausible count too large for the file: it runs out after tensor 2. */
    snprintf(want, sizeof want, "%s: file is truncated in tensor 3 of 2147483647", path);
    is_string(read_with_word(path, 12, 0x7FFFFFFFu), want, "a tensor count larger than the file holds");

    snprintf(want, sizeof want,
             "%s: checkpoint format version 7 is not supported (this build reads 2)", path);
    is_string(read_with_word(path, 8, 7), want, "an unknown format version");

    size_t kernel_dtype = SECOND_RECORD + 4 + 12;
    snprintf(want, sizeof want, "%s: tensor 'dense/kernel' has unknown dtype code 9", path);
    is_string(read_with_word(path, kernel_dtype, 9), want, "an unknown dtype");

    snprintf(want, sizeof want, "%s: tensor 'dense/kernel' has rank 5 (at most 4)", path);
    is_string(read_with_word(path, kernel_dtype + 4, 5), want, "a rank above 4");

    snprintf(want, sizeof want, "%s: tensor 'dense/kernel' has negative dimension -3", path);
    is_string(read_with_word(path, kernel_dtype + 8, (uint32_t)-3), want, "a negative dimension");

    snprintf(want, sizeof want,
             "%s: tensor 'dense/kernel' stores 24 payload bytes but float32 [2,1000000] needs "
             "8000000", path);
    is_string(read_with_word(path, kernel_dtype + 12, 1000000), want,
              "a dimension that disagrees with the payload length");

    snprintf(want, sizeof want,
             "%s: tensor 'dense/kernel' stores 4294967295 payload bytes but float32 [2,3] needs 24",
             path);
    is_string(read_with_word(path, kernel_dtype + 16, 0xFFFFFFFFu), want,
              "a corrupted payload length");
}

static void test_trailing_garbage(void)
{
    const char *path = path_in_dir("trailing.ckpt");
    size_t len = 0;
    unsigned char *bytes = write_victim(path, &len);
    unsigned char *longer = calloc(len + 5, 1);
    memcpy(longer, bytes, len);
    spit(path, longer, len + 5);
    free(longer);
    free(bytes);
    char want[600];
    snprintf(want, sizeof want, "%s: 5 unexpected bytes after the last tensor", path);
    is_string(read_error(path), want, "bytes after the last tensor are refused");
}

static void test_missing_file(void)
{
    const char *path = path_in_dir("no-such.ckpt");
    char want[600];
    snprintf(want, sizeof want, "%s: cannot open checkpoint: No such file or directory", path);
    is_string(read_error(path), want, "a missing file");
}

/* ---- refused and failed writes ---- */

static void test_refused_tensors(void)
{
    const char *path = path_in_dir("refused.ckpt");
    char want[600];
    fl_tensor *t = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, 3));
    fl_named_tensor twice[3] = {{"w", t}, {"b", t}, {"w", t}};
    snprintf(want, sizeof want, "%s: tensor name 'w' appears more than once", path);
    ok(fl_checkpoint_write(path, twice, 3) == -1, "duplicate names are refused");
    is_string(fl_last_error(), want, "the message names the duplicate");

    fl_tensor unknown = {.dtype = FL_FLOAT32, .shape = {2, {-1, 3}}, .data = NULL};
    fl_named_tensor bad = {"x", &unknown};
    snprintf(want, sizeof want,
             "%s: tensor 'x' has shape [?,3]; a checkpoint needs a known shape of rank 0 to 4", path);
    ok(fl_checkpoint_write(path, &bad, 1) == -1, "an unknown dimension is refused");
    is_string(fl_last_error(), want, "the message shows the shape");

    struct stat st;
    ok(stat(path, &st) != 0 && count_temp_files() == 0, "refused writes create no file at all");
    fl_tensor_free(t);
}

static bool reads_as_model(const char *path)
{
    fl_named_tensor *got = NULL;
    int n = 0;
    if (fl_checkpoint_read(path, &got, &n) != 0)
        return false;
    bool same = n == MODEL_SIZE;
    for (int i = 0; same && i < n; i++)
        same = same_tensor(&got[i], &model[i]);
    fl_checkpoint_free(got, n);
    return same;
}

static void test_failed_writes(void)
{
    const char *path = path_in_dir("keep.ckpt");
    char temp[600], want[1400];
    snprintf(temp, sizeof temp, "%s.tmp.%ld", path, (long)getpid());
    fl_named_tensor smaller[1] = {model[1]};
    ok(fl_checkpoint_write(path, model, MODEL_SIZE) == 0, "write the checkpoint to keep");

    /* The disk fills up mid-write: the temp file is /dev/full in disguise. */
    if (symlink("/dev/full", temp) == 0) {
        snprintf(want, sizeof want, "%s: writing %s failed: No space left on device", path, temp);
        ok(fl_checkpoint_write(path, smaller, 1) == -1, "a write to a full disk fails");
        is_string(fl_last_error(), want, "the message says the disk is full");
        ok(access(temp, F_OK) != 0 && errno == ENOENT, "the temporary file is removed");
        ok(reads_as_model(path), "the earlier checkpoint is intact and readable");
    } else {
        diag("symlink: %s", strerror(errno));
    }

    /* Something in the way of the temporary file: creating it fails. */
    mkdir(temp, 0700);
    snprintf(want, sizeof want, "%s: cannot create temporary file %s: Is a directory", path, temp);
    ok(fl_checkpoint_write(path, smaller, 1) == -1, "a write whose temp file cannot be made fails");
    is_string(fl_last_error(), want, "the message names the temporary file");
    ok(reads_as_model(path), "the earlier checkpoint is still intact");
    rmdir(temp);

    const char *missing = path_in_dir("no-such-dir/model.ckpt");
    snprintf(want, sizeof want, "%s: cannot create temporary file %s.tmp.%ld: No such file or directory",
             missing, missing, (long)getpid());
    ok(fl_checkpoint_write(missing, smaller, 1) == -1, "a write into a missing directory fails");
    is_string(fl_last_error(), want, "the message says why");

    /* The target is a directory: everything succeeds until the rename. */
    const char *dir = path_in_dir("a-directory");
    mkdir(dir, 0700);
    snprintf(want, sizeof want, "%s: cannot rename %s.tmp.%ld over it: Is a directory", dir, dir,
             (long)getpid());
    ok(fl_checkpoint_write(dir, smaller, 1) == -1, "a write over a directory fails at the rename");
    is_string(fl_last_error(), want, "the message names the rename");
    ok(count_temp_files() == 0, "no temporary file is left behind after failed writes");
    rmdir(dir);
}

/* ---- cleanup ---- */

static void remove_test_dir(void)
{
    DIR *dir = opendir(test_dir);
    for (struct dirent *e; dir && (e = readdir(dir));)
        if (e->d_name[0] != '.')
            unlink(path_in_dir(e->d_name));
    if (dir)
        closedir(dir);
    rmdir(test_dir);
}

int main(void)
{
    if (!mkdtemp(test_dir))
        skip_all("cannot make a temporary directory");
    make_model();

    test_round_trip();
    test_empty_checkpoint();
    test_exact_bytes();
    test_flipped_payload_byte();
    test_flipped_name_and_shape();
    test_version_1_file();
    test_truncated();
    test_wrong_magic();
    test_corrupted_fields();
    test_trailing_garbage();
    test_missing_file();
    test_refused_tensors();
    test_failed_writes();

    free_model();
    remove_test_dir();
    return done_testing();
}
