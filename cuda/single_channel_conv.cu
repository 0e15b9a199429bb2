/* single_channel_conv.cu: the convolution of a one-channel image (a first
 * layer on grey pictures), with its bias and ReLU, and its filter gradient,
 * by our own kernels. cuDNN tiles its kernels over input channels, and with
 * one channel it ran chapter 1's conv_1 at a small share of the memory
 * roof on an H200: 20 us forward (then a bias pass) and 39 us for the
 * filter gradient, to move about 13 MB each. These read the image and the
 * output (or its gradient) once. Float32 throughout, no atomics: the same
 * bits every run. */
#include "launch.cuh"
#include "scalar_rules.h"

/* Threads of a filter-gradient block, and its blocks: enough to fill an
 * H200 twice; each block sums its own share of the pixels. */
#define GRAD_THREADS 256
#define GRAD_BLOCKS 256
/* At most this many output channels: their sums per tap fill 25 KB of
 * shared memory at 49 taps. */
#define MAX_CHANNELS 128
/* A forward block loads the filter once; a thousand blocks fill the GPU. */
#define FORWARD_BLOCKS 1024

/* The input pixel a tap reads for an output pixel, or -1 in the padding. */
__device__ static inline int64_t tap_offset(const fl_cu_conv_window &g, int64_t b, int oy, int ox, int t)
{
    int iy = oy * g.sh - g.pad_top + t / g.kw, ix = ox * g.sw - g.pad_left + t % g.kw;
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
        return -1;
    return (b * g.h + iy) * g.w + ix;
}

/* One thread per output value (pixel, channel): the channels of a pixel are
 * neighbours in a warp, so they share each image read. The filter, [KH,KW,1,OC],
 * sits in shared memory. With bias, the bias and then ReLU as host_fused.c
 * applies them after its convolution. */
__global__ static void forward_kernel(fl_cu_conv_window g, const float *x, const float *w, const float *bias,
                                      bool relu, float *y)
{
    extern __shared__ float filter[];
    int taps = g.kh * g.kw;
    for (int i = threadIdx.x; i < taps * g.oc; i += blockDim.x)
        filter[i] = w[i];
    __syncthreads();
    int64_t total = (int64_t)g.batch * g.oh * g.ow * g.oc;
    for (int64_t i = fl_first_index(); i < total; i += fl_grid_stride()) {
        int o = (int)(i % g.oc);
        int64_t pixel = i / g.oc;
        int ox = (int)(pixel % g.ow), oy = (int)(pixel / g.ow % g.oh);
        int64_t b = pixel / g.ow / g.oh;
        float acc = 0.0f;
        for (int t = 0; t < taps; t++) {
            int64_t at = tap_offset(g, b, oy, ox, t);
            if (at >= 0)
                acc = fmaf(x[at], filter[t * g.oc + o], acc);
        }
        if (bias) {
            acc += bias[o];
            acc = relu ? fl_rule_relu(acc) : acc;
        }
        y[i] = acc;
    }
}

/* Stage 1 of the filter gradient: block k sums its contiguous share of the
 * output pixels into partials[k][tap][channel]. Thread (lane, channel) walks
 * every lanes-th pixel of the share with one sum per tap in registers; the
 * lanes are then added in order in shared memory. */
__global__ static void filter_grad_partials(fl_cu_conv_window g, const float *x, const float *dy, float *partials)
{
    __shared__ float sums[FL_CU_SINGLE_CHANNEL_MAX_TAPS * MAX_CHANNELS];
    int taps = g.kh * g.kw, o = threadIdx.x % g.oc, lane = threadIdx.x / g.oc, lanes = GRAD_THREADS / g.oc;
    int64_t pixels = (int64_t)g.batch * g.oh * g.ow, share = (pixels + gridDim.x - 1) / gridDim.x;
    int64_t first = blockIdx.x * share, end = first + share < pixels ? first + share : pixels;
    float acc[FL_CU_SINGLE_CHANNEL_MAX_TAPS] = {0};
    for (int64_t p = first + lane; lane < lanes && p < end; p += lanes) {
        int ox = (int)(p % g.ow), oy = (int)(p / g.ow % g.oh);
        int64_t b = p / g.ow / g.oh;
        float grad = dy[p * g.oc + o];
#pragma unroll
        for (int t = 0; t < FL_CU_SINGLE_CHANNEL_MAX_TAPS; t++) {
            int64_t at = t < taps ? tap_offset(g, b, oy, ox, t) : -1;
            if (at >= 0)
                acc[t] = fmaf(x[at], grad, acc[t]);
        }
    }
    for (int l = 0; l < lanes; l++) {
        if (lane == l)
#pragma unroll
            for (int t = 0; t < FL_CU_SINGLE_CHANNEL_MAX_TAPS; t++)
                if (t < taps)
                    sums[t * g.oc + o] = l == 0 ? acc[t] : sums[t * g.oc + o] + acc[t];
        __syncthreads();
    }
    for (int i = threadIdx.x; i < taps * g.oc; i += blockDim.x)
        partials[(int64_t)blockIdx.x * taps * g.oc + i] = sums[i];
}

/* Stage 2: each filter value is its blocks' partial sums, in block order. */
__global__ static void filter_grad_total(const float *partials, int blocks, int values, float *dw)
{
    for (int64_t i = fl_first_index(); i < values; i += fl_grid_stride()) {
        float total = 0.0f;
        for (int k = 0; k < blocks; k++)
            total += partials[(int64_t)k * values + i];
        dw[i] = total;
    }
}

extern "C" bool fl_cu_single_channel_fits(fl_cu_conv_window g)
{
    return g.kh * g.kw <= FL_CU_SINGLE_CHANNEL_MAX_TAPS && g.oc >= 1 && g.oc <= MAX_CHANNELS;
}

extern "C" cudaError_t fl_cu_single_channel_conv(fl_cu_conv_window g, const float *x, const float *w,
                                                 const float *bias, bool relu, float *y, cudaStream_t s)
{
    int64_t total = (int64_t)g.batch * g.oh * g.ow * g.oc;
    size_t filter_bytes = (size_t)g.kh * g.kw * g.oc * sizeof(float);
    unsigned blocks = fl_blocks(total) < FORWARD_BLOCKS ? fl_blocks(total) : FORWARD_BLOCKS;
    forward_kernel<<<blocks, fl_threads, filter_bytes, s>>>(g, x, w, bias, relu, y);
    return cudaGetLastError();
}

extern "C" size_t fl_cu_single_channel_partials_bytes(fl_cu_conv_window g)
{
    return (size_t)GRAD_BLOCKS * g.kh * g.kw * g.oc * sizeof(float);
}

extern "C" cudaError_t fl_cu_single_channel_filter_grad(fl_cu_conv_window g, const float *x, const float *dy,
                                                        float *partials, float *dw, cudaStream_t s)
{
    int values = g.kh * g.kw * g.oc;
    filter_grad_partials<<<GRAD_BLOCKS, GRAD_THREADS, 0, s>>>(g, x, dy, partials);
    filter_grad_total<<<fl_blocks(values), fl_threads, 0, s>>>(partials, GRAD_BLOCKS, values, dw);
    return cudaGetLastError();
}
