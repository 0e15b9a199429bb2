/* crc32c.c: CRC-32C (Castagnoli), the checksum of TFRecord framing, and
 * TensorFlow's mask over it. The SSE4.2 crc32 instruction where the CPU has
 * it, else a 256-entry table; both are checked against the published test
 * vector (crc32c("123456789") == 0xE3069283) by tests/test_summary.c. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "summary_internal.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u /* 0x1EDC6F41, bit-reversed */

static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void fill_crc_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t crc = i;
        for (int bit = 0; bit < 8; bit++)
            crc = crc & 1 ? (crc >> 1) ^ CRC32C_POLY : crc >> 1;
        crc_table[i] = crc;
    }
}

/* The table fallback, one byte at a time. */
uint32_t fl_crc32c_table(const void *data, size_t len)
{
    pthread_once(&crc_table_once, fill_crc_table);
    const unsigned char *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
/* Eight bytes per instruction, then the tail byte by byte. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t crc = 0xFFFFFFFFu;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, sizeof word);
        crc = _mm_crc32_u64(crc, word);
    }
    uint32_t crc32 = (uint32_t)crc;
    for (; len > 0; p++, len--)
        crc32 = _mm_crc32_u8(crc32, *p);
    return ~crc32;
}
#endif

uint32_t fl_crc32c(const void *data, size_t len)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return crc32c_sse42(data, len);
#endif
    return fl_crc32c_table(data, len);
}

/* TFRecord stores the CRC rotated and offset, so that a CRC of data that
 * itself holds CRCs does not come out trivially (TensorFlow's crc32c::Mask). */
uint32_t fl_masked_crc32c(const void *data, size_t len)
{
    uint32_t crc = fl_crc32c(data, len);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
