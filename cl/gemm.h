/* gemm.h: single-precision matrix multiply on an OpenCL device, written for
 * PoCL's CPU device (kernels in cl/matmul.cl, host side in cl/gemm.c).
 * Independent of the rest of flowlab: needs only <CL/cl.h>.
 *
 * Build with -DCL_TARGET_OPENCL_VERSION=120 (it uses OpenCL 1.2 calls only;
 * 300 works too).  The caller builds a cl_program from cl/matmul.cl with
 * the options fl_cl_gemm_build_options gives (the tile width; no
 * -cl-fast-relaxed-math needed: the kernels call fma() explicitly) and
 * passes it to fl_cl_gemm_new.
 */
#ifndef FL_CL_GEMM_H
#define FL_CL_GEMM_H

#include <stddef.h>
#include <CL/cl.h>

typedef struct fl_cl_gemm fl_cl_gemm;

/* The columns of the GEMM's register tile on dev (16 or 32), and the build
 * options for cl/matmul.cl that say so ("-DFL_GEMM_NR=32"). */
int fl_cl_gemm_tile_columns(cl_device_id dev);
void fl_cl_gemm_build_options(cl_device_id dev, char *options, size_t size);

/* Create the kernels from a program built from cl/matmul.cl with
 * fl_cl_gemm_build_options(dev).  Retains ctx
 * (scratch buffers are allocated in it).  NULL on failure; then
 * fl_cl_gemm_error(NULL) says why. */
fl_cl_gemm *fl_cl_gemm_new(cl_context ctx, cl_device_id dev, cl_program program);

/* Enqueue C = op(A) op(B)  (beta == 0, C is not read)
 *      or C = op(A) op(B) + beta C   (beta == 1: accumulate).
 * All matrices are dense row-major floats starting at the given offsets
 * (counted in floats) inside their buffers:
 *   op(A) is M x K: A is stored M x K, or K x M when transpose_a;
 *   op(B) is K x N: B is stored K x N, or N x K when transpose_b;
 *   C is M x N.
 * Waits for `wait` (nwait events) before starting.  Enqueues only, never
 * blocks; if done != NULL it receives an event (caller releases it) that
 * completes when C is written.  Works on in-order and out-of-order queues.
 * Scratch space (packed panels) belongs to g; it grows when a larger problem
 * is first seen and is then reused, so a warm call allocates nothing.
 * One fl_cl_gemm must not be used from two host threads at once.
 * Returns 0, or -1 with a message for fl_cl_gemm_error(g).  Prints nothing.
 * (After -1 from an enqueue failure half-way, C may be partly updated.) */
int fl_cl_gemm_enqueue(fl_cl_gemm *g, cl_command_queue q,
                       int transpose_a, int transpose_b, int M, int N, int K,
                       cl_mem A, size_t a_offset_floats,
                       cl_mem B, size_t b_offset_floats,
                       cl_mem C, size_t c_offset_floats,
                       float beta,
                       cl_uint nwait, const cl_event *wait, cl_event *done);

/* The same, then on each result as it is stored: + bias[j] for column j
 * when bias != NULL (a buffer of N floats), then max(0, v) when relu. */
int fl_cl_gemm_enqueue_epilogue(fl_cl_gemm *g, cl_command_queue q,
                                int transpose_a, int transpose_b, int M, int N, int K,
                                cl_mem A, size_t a_offset_floats,
                                cl_mem B, size_t b_offset_floats,
                                cl_mem C, size_t c_offset_floats,
                                float beta, cl_mem bias, int relu,
                                cl_uint nwait, const cl_event *wait, cl_event *done);

/* Last error message of g, or of the last failed fl_cl_gemm_new in this
 * thread when g is NULL.  "" when there was none. */
const char *fl_cl_gemm_error(const fl_cl_gemm *g);

/* Release kernels, scratch buffers and the context reference.  NULL is ok.
 * Commands already enqueued still complete (OpenCL keeps what they use). */
void fl_cl_gemm_free(fl_cl_gemm *g);

#endif
