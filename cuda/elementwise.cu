/* elementwise.cu: arithmetic, AddN/AssignAdd, Fill, Cast and Equal on the GPU.
 * Every kernel is the host loop of src/host/host_math.c or src/host/host_array.c with
 * the loop index spread over threads; broadcasting is by suffix, so element
 * i of the output meets element i % size of each operand. */
#include <math.h>

#include "launch.cuh"
#include "scalar_rules.h" /* the int32 ops', Cast's and DivGradB's rules, the host's own */

__device__ static float arith_f32(fl_cu_arith op, float x, float y)
{
    switch (op) {
    case FL_CU_ADD: return x + y;
    case FL_CU_SUB: return x - y;
    case FL_CU_MUL: return x * y;
    default: return x / y;
    }
}

__global__ static void arith_f32_kernel(fl_cu_arith op, const float *a, int64_t na, const float *b,
                                        int64_t nb, float *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = arith_f32(op, a[i % na], b[i % nb]);
}

/* int32 wraps like the host's (the rules of src/scalar_rules.h); division by
 * zero and INT32_MIN / -1 are faults, reported at wait(), and write 0. */
__global__ static void arith_i32_kernel(fl_cu_arith op, const int32_t *a, int64_t na,
                                        const int32_t *b, int64_t nb, int32_t *out, int64_t n,
                                        fl_cuda_fault *fault)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride()) {
        int32_t x = a[i % na], y = b[i % nb];
        if (op == FL_CU_ADD)
            out[i] = fl_rule_int32_add(x, y);
        else if (op == FL_CU_SUB)
            out[i] = fl_rule_int32_sub(x, y);
        else if (op == FL_CU_MUL)
            out[i] = fl_rule_int32_mul(x, y);
        else if (fl_rule_int32_div_fails(x, y)) {
            fl_report_fault(fault, FL_CUDA_FAULT_INT_DIV, i, 0, 0);
            out[i] = 0;
        } else
            out[i] = x / y;
    }
}

extern "C" cudaError_t fl_cu_arith_f32(fl_cu_arith op, const float *a, int64_t na, const float *b,
                                       int64_t nb, float *out, int64_t n, cudaStream_t s)
{
    arith_f32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(op, a, na, b, nb, out, n);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_arith_i32(fl_cu_arith op, const int32_t *a, int64_t na,
                                       const int32_t *b, int64_t nb, int32_t *out, int64_t n,
                                       fl_cuda_fault *fault, cudaStream_t s)
{
    arith_i32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(op, a, na, b, nb, out, n, fault);
    return cudaGetLastError();
}

__global__ static void neg_f32_kernel(const float *x, float *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = -x[i];
}

__global__ static void neg_i32_kernel(const int32_t *x, int32_t *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = fl_rule_int32_neg(x[i]);
}

extern "C" cudaError_t fl_cu_neg_f32(const float *x, float *out, int64_t n, cudaStream_t s)
{
    neg_f32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(x, out, n);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_neg_i32(const int32_t *x, int32_t *out, int64_t n, cudaStream_t s)
{
    neg_i32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(x, out, n);
    return cudaGetLastError();
}

__global__ static void accumulate_f32_kernel(float *out, const float *x, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] += x[i];
}

__global__ static void accumulate_i32_kernel(int32_t *out, const int32_t *x, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = fl_rule_int32_add(out[i], x[i]);
}

extern "C" cudaError_t fl_cu_accumulate_f32(float *out, const float *x, int64_t n, cudaStream_t s)
{
    accumulate_f32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(out, x, n);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_accumulate_i32(int32_t *out, const int32_t *x, int64_t n,
                                            cudaStream_t s)
{
    accumulate_i32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(out, x, n);
    return cudaGetLastError();
}

/* d(a / b)/db = -a / b^2, times dy; shaped like dy. */
__global__ static void div_grad_b_kernel(const float *dy, const float *a, int64_t na,
                                         const float *b, int64_t nb, float *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = fl_rule_div_grad_b(dy[i], a[i % na], b[i % nb]);
}

extern "C" cudaError_t fl_cu_div_grad_b(const float *dy, const float *a, int64_t na,
                                        const float *b, int64_t nb, float *out, int64_t n,
                                        cudaStream_t s)
{
    div_grad_b_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(dy, a, na, b, nb, out, n);
    return cudaGetLastError();
}

__global__ static void fill_f32_kernel(float *out, int64_t n, float value)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = value;
}

__global__ static void fill_i32_kernel(int32_t *out, int64_t n, int32_t value)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = value;
}

extern "C" cudaError_t fl_cu_fill_f32(float *out, int64_t n, float value, cudaStream_t s)
{
    fill_f32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(out, n, value);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_fill_i32(int32_t *out, int64_t n, int32_t value, cudaStream_t s)
{
    fill_i32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(out, n, value);
    return cudaGetLastError();
}

__global__ static void cast_f32_i32_kernel(const float *x, int32_t *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = fl_rule_float_to_int32(x[i]);
}

__global__ static void cast_i32_f32_kernel(const int32_t *x, float *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = (float)x[i];
}

extern "C" cudaError_t fl_cu_cast_f32_i32(const float *x, int32_t *out, int64_t n, cudaStream_t s)
{
    cast_f32_i32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(x, out, n);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_cast_i32_f32(const int32_t *x, float *out, int64_t n, cudaStream_t s)
{
    cast_i32_f32_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(x, out, n);
    return cudaGetLastError();
}

/* Element i as a double: exact for every float32 and int32. */
__device__ static double element(const void *t, bool is_int, int64_t i)
{
    return is_int ? (double)((const int32_t *)t)[i] : (double)((const float *)t)[i];
}

__global__ static void equal_kernel(const void *a, bool a_int, int64_t na, const void *b, bool b_int,
                                    int64_t nb, int32_t *out, int64_t n)
{
    for (int64_t i = fl_first_index(); i < n; i += fl_grid_stride())
        out[i] = element(a, a_int, i % na) == element(b, b_int, i % nb);
}

extern "C" cudaError_t fl_cu_equal(const void *a, bool a_int, int64_t na, const void *b, bool b_int,
                                   int64_t nb, int32_t *out, int64_t n, cudaStream_t s)
{
    equal_kernel<<<fl_blocks(n), fl_threads, 0, s>>>(a, a_int, na, b, b_int, nb, out, n);
    return cudaGetLastError();
}
