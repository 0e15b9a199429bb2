/* pool_grad.cu: MaxPoolGrad and MaxPoolReluGrad as one gather kernel, in
 * place of cuDNN's pooling backward, its padded scratch and a ReLU pass.
 * One thread per element of dx, channels fastest, so reads of x and writes
 * of dx are coalesced: the thread visits every window that holds its pixel,
 * finds that window's maximum as the host does (taps in row-major order, a
 * strict '>', the first maximum wins, padding never a candidate), and adds
 * the window's dy when the maximum is its own pixel. The windows are visited
 * in the host's order, so dx matches src/host/host_conv.c bit for bit, ties
 * included. Every byte is read about once from memory (neighbours' taps come
 * from cache): the kernel runs near the copy bandwidth. */
#include "launch.cuh"
#include "scalar_rules.h" /* ReluGrad's rule, for MaxPoolReluGrad */

/* Whether pixel (iy, ix) of channel `at` (its offset in x) is the first
 * maximum of window (oy, ox): the host's window_max for one channel. */
__device__ static bool wins_window(const fl_cu_pool_window &g, const float *x, int64_t image, int c, int oy,
                                   int ox, int64_t at)
{
    int64_t best_at = -1;
    float best = 0.0f;
    for (int ky = 0; ky < g.kh; ky++) {
        int iy = oy * g.sh - g.pad_top + ky;
        if (iy < 0 || iy >= g.h)
            continue;
        for (int kx = 0; kx < g.kw; kx++) {
            int ix = ox * g.sw - g.pad_left + kx;
            if (ix < 0 || ix >= g.w)
                continue;
            int64_t tap = image + ((int64_t)iy * g.w + ix) * g.c + c;
            float v = x[tap];
            if (best_at < 0 || v > best) {
                best = v;
                best_at = tap;
            }
        }
    }
    return best_at == at;
}

/* The first and last window along one axis whose taps reach pixel i. */
__device__ static void windows_over(int i, int pad, int k, int stride, int out, int *first, int *last)
{
    int reach = i + pad; /* the pixel's position in the padded image */
    int lo = reach - k + 1;
    *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
    *last = reach / stride;
    if (*last > out - 1)
        *last = out - 1;
}

/* Index is int where the tensor allows: 64-bit division costs the GPU
 * many instructions, and each thread divides six times. */
template <typename Index>
__global__ static void max_pool_grad_kernel(fl_cu_pool_window g, const float *dy, const float *x, float *dx,
                                            bool relu, Index total)
{
    for (Index i = (Index)fl_first_index(); i < total; i += (Index)fl_grid_stride()) {
        int c = (int)(i % g.c);
        Index pixel = i / g.c;
        int ix = (int)(pixel % g.w);
        int iy = (int)((pixel / g.w) % g.h);
        int64_t b = (int64_t)(pixel / g.w / g.h);
        int64_t image = b * g.h * g.w * g.c;
        int oy0, oy1, ox0, ox1;
        windows_over(iy, g.pad_top, g.kh, g.sh, g.oh, &oy0, &oy1);
        windows_over(ix, g.pad_left, g.kw, g.sw, g.ow, &ox0, &ox1);
        float sum = 0.0f;
        for (int oy = oy0; oy <= oy1; oy++)
            for (int ox = ox0; ox <= ox1; ox++)
                if (wins_window(g, x, image, c, oy, ox, (int64_t)i))
                    sum += dy[((b * g.oh + oy) * g.ow + ox) * g.c + c];
        /* MaxPoolReluGrad: the ReLU whose output was pooled passes nothing where x <= 0. */
        dx[i] = relu ? fl_rule_relu_grad(sum, x[i]) : sum;
    }
}

/* Windows that tile the image exactly (stride = window, no padding, no
 * pixel left over: chapter 1's 2x2 pools) give each pixel to one window, so
 * one thread per window element does the work with a quarter of the index
 * arithmetic: it finds the first maximum of its taps and writes every tap,
 * dy to the winner and zero to the rest. The same answer as the gather. */
static bool tiles_exactly(const fl_cu_pool_window &g)
{
    return g.sh == g.kh && g.sw == g.kw && g.pad_top == 0 && g.pad_left == 0 && g.oh * g.kh == g.h &&
           g.ow * g.kw == g.w;
}

__global__ static void max_pool_grad_tiled_kernel(fl_cu_pool_window g, const float *dy, const float *x, float *dx,
                                                  bool relu, int total)
{
    for (int o = (int)fl_first_index(); o < total; o += (int)fl_grid_stride()) {
        int c = o % g.c, pixel = o / g.c;
        int ox = pixel % g.ow, oy = (pixel / g.ow) % g.oh, b = pixel / g.ow / g.oh;
        int64_t first = (((int64_t)b * g.h + oy * g.kh) * g.w + ox * g.kw) * g.c + c;
        int64_t best_at = first;
        float best = x[first];
        for (int ky = 0; ky < g.kh; ky++)
            for (int kx = 0; kx < g.kw; kx++) {
                int64_t tap = first + ((int64_t)ky * g.w + kx) * g.c;
                if (x[tap] > best) {
                    best = x[tap];
                    best_at = tap;
                }
            }
        float grad = dy[o];
        for (int ky = 0; ky < g.kh; ky++)
            for (int kx = 0; kx < g.kw; kx++) {
                int64_t tap = first + ((int64_t)ky * g.w + kx) * g.c;
                float mine = tap == best_at ? grad : 0.0f;
                dx[tap] = relu ? fl_rule_relu_grad(mine, x[tap]) : mine;
            }
    }
}

/* The tiled kernel four channels at a time, where the channels come in
 * fours and every pointer is 16-byte aligned: one 16-byte load or store
 * where the kernel above makes four, and a quarter of its index
 * arithmetic. Each lane of the float4 keeps its own first maximum, so the
 * answer is the same. */
__device__ static inline float lane(const float4 &v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }

__device__ static inline float4 tap_grad(const float4 &x, const float4 &grad, const int best[4], int tap, bool relu)
{
    float out[4];
    for (int j = 0; j < 4; j++) {
        float mine = best[j] == tap ? lane(grad, j) : 0.0f;
        out[j] = relu ? fl_rule_relu_grad(mine, lane(x, j)) : mine;
    }
    return make_float4(out[0], out[1], out[2], out[3]);
}

__global__ static void max_pool_grad_tiled4_kernel(fl_cu_pool_window g, const float4 *dy, const float4 *x,
                                                   float4 *dx, bool relu, int total)
{
    int c4 = g.c / 4;
    for (int o = (int)fl_first_index(); o < total; o += (int)fl_grid_stride()) {
        int c = o % c4, pixel = o / c4;
        int ox = pixel % g.ow, oy = (pixel / g.ow) % g.oh, b = pixel / g.ow / g.oh;
        int64_t first = (((int64_t)b * g.h + oy * g.kh) * g.w + ox * g.kw) * c4 + c;
        float4 top = x[first];
        float best[4] = {top.x, top.y, top.z, top.w};
        int best_tap[4] = {0, 0, 0, 0};
        for (int t = 1; t < g.kh * g.kw; t++) {
            float4 v = x[first + ((int64_t)(t / g.kw) * g.w + t % g.kw) * c4];
            for (int j = 0; j < 4; j++)
                if (lane(v, j) > best[j]) {
                    best[j] = lane(v, j);
                    best_tap[j] = t;
                }
        }
        float4 grad = dy[o];
        for (int t = 0; t < g.kh * g.kw; t++) {
            int64_t at = first + ((int64_t)(t / g.kw) * g.w + t % g.kw) * c4;
            dx[at] = tap_grad(x[at], grad, best_tap, t, relu);
        }
    }
}

static bool in_fours(const fl_cu_pool_window &g, const void *dy, const void *x, const void *dx)
{
    return g.c % 4 == 0 && (((uintptr_t)dy | (uintptr_t)x | (uintptr_t)dx) & 15) == 0;
}

extern "C" cudaError_t fl_cu_max_pool_grad(fl_cu_pool_window g, const float *dy, const float *x, float *dx,
                                           bool relu, cudaStream_t s)
{
    int64_t total = (int64_t)g.batch * g.h * g.w * g.c;
    int64_t windows = (int64_t)g.batch * g.oh * g.ow * g.c;
    if (tiles_exactly(g) && total < (int64_t)1 << 30 && in_fours(g, dy, x, dx)) {
        max_pool_grad_tiled4_kernel<<<fl_blocks(windows / 4), fl_threads, 0, s>>>(
            g, (const float4 *)dy, (const float4 *)x, (float4 *)dx, relu, (int)(windows / 4));
        return cudaGetLastError();
    }
    if (tiles_exactly(g) && total < (int64_t)1 << 30) {
        max_pool_grad_tiled_kernel<<<fl_blocks(windows), fl_threads, 0, s>>>(g, dy, x, dx, relu, (int)windows);
        return cudaGetLastError();
    }
    if (total < (int64_t)1 << 30)
        max_pool_grad_kernel<int><<<fl_blocks(total), fl_threads, 0, s>>>(g, dy, x, dx, relu, (int)total);
    else
        max_pool_grad_kernel<int64_t><<<fl_blocks(total), fl_threads, 0, s>>>(g, dy, x, dx, relu, total);
    return cudaGetLastError();
}
