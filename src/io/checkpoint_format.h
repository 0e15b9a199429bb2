/* checkpoint_format.h: what the checkpoint writer and reader agree on, the
 * format's constants and its little-endian and CRC helpers. The layout is
 * described field by field in book/appendix-checkpoint-format.md. */
#ifndef FLOWLAB_CHECKPOINT_FORMAT_H
#define FLOWLAB_CHECKPOINT_FORMAT_H

#include "runtime.h"

/* Six letters, a NUL so that no text file can match, and a 1. */
extern const unsigned char fl_checkpoint_magic[8];
/* Version 2: every CRC covers all the bytes of the file before it (header,
 * names, shapes and data). Version 1's CRC covered the payloads only. */
#define CHECKPOINT_VERSION 2u
#define HEADER_BYTES 20u /* magic, version, tensor count, header CRC */
/* The smallest possible tensor record: name length, a one-byte name, dtype,
 * rank 0, payload length, four payload bytes, CRC (rank 1 with a zero dim is
 * the same size). It bounds how many records a file of some size can hold. */
#define MIN_RECORD_BYTES (4u + 1u + 4u + 4u + 8u + 4u + 4u)
/* Payloads are converted to little-endian through a buffer of this many bytes. */
#define CHUNK_BYTES 65536u

/* dtype codes in the file; part of the format, so spelled out rather than
 * borrowed from the fl_dtype enum. */
enum { FILE_DTYPE_FLOAT32 = 0, FILE_DTYPE_INT32 = 1 };

/* Little-endian, independent of the host's byte order. */
void fl_store_le32(unsigned char *out, uint32_t v);
void fl_store_le64(unsigned char *out, uint64_t v);
uint32_t fl_load_le32(const unsigned char *in);
uint64_t fl_load_le64(const unsigned char *in);

/* zlib's CRC-32 continued over len more bytes, any len; crc starts at 0. */
uint32_t fl_crc32_update(uint32_t crc, const unsigned char *bytes, size_t len);

/* Payload bytes for a shape, or false if the product overflows 64 bits
 * (possible only with corrupted dims; a real tensor fits in memory). */
bool fl_checkpoint_payload_bytes(fl_shape shape, uint64_t *bytes);

/* 0 when no name repeats; else -1 with "PATH: tensor name 'x' appears more
 * than once" set as the error. */
int fl_checkpoint_check_unique_names(const char *path, const fl_named_tensor *tensors, int n);

#endif
