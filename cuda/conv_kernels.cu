/* conv_kernels.cu: the small kernels cuda/launch_conv.c puts around cuDNN.
 * Explicit padding (TensorFlow's SAME may pad one more row or column after
 * the image than before, which cuDNN cannot express), the matching crop for
 * gradients, and a transpose between flowlab's filter layout [KH,KW,Cin,Cout]
 * and cuDNN's NHWC filter layout [Cout,KH,KW,Cin]. */
#include "launch.cuh"

/* One thread per element of the padded tensor: a copy of x, or fill. */
__global__ static void pad_kernel(const float *x, float *out, int n, int h, int w, int c, int top,
                                  int left, int ph, int pw, float fill)
{
    int64_t total = (int64_t)n * ph * pw * c;
    for (int64_t i = fl_first_index(); i < total; i += fl_grid_stride()) {
        int ch = (int)(i % c);
        int px = (int)((i / c) % pw);
        int py = (int)((i / c / pw) % ph);
        int64_t b = i / c / pw / ph;
        int y = py - top, xx = px - left;
        bool inside = y >= 0 && y < h && xx >= 0 && xx < w;
        out[i] = inside ? x[((b * h + y) * w + xx) * c + ch] : fill;
    }
}

/* One thread per element of the cropped output. */
__global__ static void crop_kernel(const float *padded, float *out, int n, int h, int w, int c,
                                   int top, int left, int ph, int pw)
{
    int64_t total = (int64_t)n * h * w * c;
    for (int64_t i = fl_first_index(); i < total; i += fl_grid_stride()) {
        int ch = (int)(i % c);
        int xx = (int)((i / c) % w);
        int y = (int)((i / c / w) % h);
        int64_t b = i / c / w / h;
        out[i] = padded[((b * ph + y + top) * pw + xx + left) * c + ch];
    }
}

extern "C" cudaError_t fl_cu_pad_nhwc(const float *x, float *out, int n, int h, int w, int c,
                                      int top, int bottom, int left, int right, float fill,
                                      cudaStream_t s)
{
    int ph = top + h + bottom, pw = left + w + right;
    int64_t total = (int64_t)n * ph * pw * c;
    pad_kernel<<<fl_blocks(total), fl_threads, 0, s>>>(x, out, n, h, w, c, top, left, ph, pw, fill);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_crop_nhwc(const float *padded, float *out, int n, int h, int w, int c,
                                       int top, int bottom, int left, int right, cudaStream_t s)
{
    int ph = top + h + bottom, pw = left + w + right;
    int64_t total = (int64_t)n * h * w * c;
    crop_kernel<<<fl_blocks(total), fl_threads, 0, s>>>(padded, out, n, h, w, c, top, left, ph, pw);
    return cudaGetLastError();
}

/* A plain transpose: filters are small next to activations, so no tiling. */
__global__ static void transpose_kernel(const float *x, float *out, int64_t rows, int64_t cols)
{
    for (int64_t i = fl_first_index(); i < rows * cols; i += fl_grid_stride()) {
        int64_t r = i / cols, c = i % cols;
        out[c * rows + r] = x[i];
    }
}

extern "C" cudaError_t fl_cu_transpose(const float *x, float *out, int64_t rows, int64_t cols,
                                       cudaStream_t s)
{
    transpose_kernel<<<fl_blocks(rows * cols), fl_threads, 0, s>>>(x, out, rows, cols);
    return cudaGetLastError();
}
