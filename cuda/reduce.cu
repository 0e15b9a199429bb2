/* reduce.cu: Sum, Mean, ReduceGrad, SumToShape and ArgMax on the GPU.
 * A reduction gives each output element one block: the block's threads
 * share out the elements that meet there, each keeps a partial sum, and a
 * tree in shared memory adds the partials. Floats sum in double, integers in
 * int64, as src/host/host_reduce.c does. Reproducible by construction
 * (FLOWLAB_DETERMINISTIC needs nothing here): each thread's share and the
 * tree's order depend only on the sizes, never on scheduling, and nothing
 * is accumulated with atomics. */
#include <math.h>

#include "launch.cuh"

static const int reduce_threads = 256; /* a power of two, for the tree */

/* Where the k-th element that meets in output j sits in x: j spells the
 * kept coordinates and k the reduced ones, each last axis fastest, which is
 * the host's reduced_index() read backwards. */
__device__ static int64_t source_index(const fl_cu_reduction &r, int64_t j, int64_t k)
{
    int64_t index = 0, stride = 1;
    for (int d = r.rank - 1; d >= 0; d--) {
        int64_t coord;
        if (r.reduce[d]) {
            coord = k % r.dims[d];
            k /= r.dims[d];
        } else {
            coord = j % r.dims[d];
            j /= r.dims[d];
        }
        index += coord * stride;
        stride *= r.dims[d];
    }
    return index;
}

/* Where element i of x lands in the reduced tensor (host_reduce.c's reduced_index). */
__device__ static int64_t reduced_index(const fl_cu_reduction &r, int64_t i)
{
    int coord[4];
    for (int d = r.rank - 1; d >= 0; d--) {
        coord[d] = (int)(i % r.dims[d]);
        i /= r.dims[d];
    }
    int64_t index = 0;
    for (int d = 0; d < r.rank; d++)
        if (!r.reduce[d])
            index = index * r.dims[d] + coord[d];
    return index;
}

__device__ static int64_t reduced_count(const fl_cu_reduction &r)
{
    int64_t count = 1;
    for (int d = 0; d < r.rank; d++)
        if (r.reduce[d])
            count *= r.dims[d];
    return count;
}

/* Adds the block's partials; thread 0 gets the total. Every thread calls it. */
template <typename Acc> __device__ static Acc block_sum(Acc partial)
{
    __shared__ Acc partials[reduce_threads];
    partials[threadIdx.x] = partial;
    __syncthreads();
    for (int half = reduce_threads / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            partials[threadIdx.x] += partials[threadIdx.x + half];
        __syncthreads();
    }
    Acc total = partials[0];
    __syncthreads(); /* the next call may overwrite partials */
    return total;
}

__global__ static void reduce_f32_kernel(fl_cu_reduction r, const float *x, float *out,
                                         int64_t nout, bool mean)
{
    int64_t count = reduced_count(r);
    for (int64_t j = blockIdx.x; j < nout; j += gridDim.x) {
        double partial = 0.0;
        for (int64_t k = threadIdx.x; k < count; k += blockDim.x)
            partial += x[source_index(r, j, k)];
        double total = block_sum<double>(partial);
        if (threadIdx.x != 0)
            continue;
        if (!mean)
            out[j] = (float)total;
        else
            out[j] = count ? (float)(total / (double)count) : NAN; /* mean of nothing */
    }
}

/* Integers wrap to 32 bits at the end; a mean truncates toward zero. */
__global__ static void reduce_i32_kernel(fl_cu_reduction r, const int32_t *x, int32_t *out,
                                         int64_t nout, bool mean)
{
    int64_t count = reduced_count(r);
    for (int64_t j = blockIdx.x; j < nout; j += gridDim.x) {
        long long partial = 0;
        for (int64_t k = threadIdx.x; k < count; k += blockDim.x)
            partial += x[source_index(r, j, k)];
        long long total = block_sum<long long>(partial);
        if (threadIdx.x != 0)
            continue;
        long long v = mean ? (count ? total / count : 0) : total;
        out[j] = (int32_t)(uint32_t)(unsigned long long)v;
    }
}

static unsigned reduce_blocks(int64_t nout)
{
    return nout < 65535 ? (unsigned)(nout > 0 ? nout : 1) : 65535u;
}

extern "C" cudaError_t fl_cu_reduce_f32(fl_cu_reduction r, const float *x, float *out, int64_t nout,
                                        bool mean, cudaStream_t s)
{
    reduce_f32_kernel<<<reduce_blocks(nout), reduce_threads, 0, s>>>(r, x, out, nout, mean);
    return cudaGetLastError();
}

extern "C" cudaError_t fl_cu_reduce_i32(fl_cu_reduction r, const int32_t *x, int32_t *out,
                                        int64_t nout, bool mean, cudaStream_t s)
{
    reduce_i32_kernel<<<reduce_blocks(nout), reduce_threads, 0, s>>>(r, x, out, nout, mean);
    return cudaGetLastError();
}

/* ReduceGrad: every element of x gets the dy it was reduced into, scaled. */
__global__ static void reduce_grad_kernel(fl_cu_reduction r, const float *dy, float *out,
                                          int64_t nx, float scale)
{
    for (int64_t i = fl_first_index(); i < nx; i += fl_grid_stride())
        out[i] = dy[reduced_index(r, i)] * scale;
}

extern "C" cudaError_t fl_cu_reduce_grad(fl_cu_reduction r, const float *dy, float *out,
                                         int64_t nx, float scale, cudaStream_t s)
{
    reduce_grad_kernel<<<fl_blocks(nx), fl_threads, 0, s>>>(r, dy, out, nx, scale);
    return cudaGetLastError();
}

/* SumToShape in two stages, as x seen as a matrix [rows, size]. One block
 * per column would leave a large GPU mostly idle (a bias of 32 channels is
 * 32 blocks) and make each warp's reads stride across rows. Instead:
 *  1. blocks of 32 columns x 8 rows, each over a chunk of rows: a warp reads
 *     32 neighbouring floats of one row, and the block leaves one partial
 *     sum per column and chunk;
 *  2. one block per column adds its chunks' partials with block_sum.
 * Every partial and every total is summed in an order fixed by the sizes,
 * in double, so the result is the same run after run. */
static const int column_tile = 32, row_tile = 8;

__global__ static void column_partials_kernel(const float *x, int64_t rows, int64_t size, int64_t rows_per_chunk,
                                              double *partials)
{
    __shared__ double tile[row_tile][column_tile + 1];
    int64_t column = (int64_t)blockIdx.x * column_tile + threadIdx.x;
    int64_t first = (int64_t)blockIdx.y * rows_per_chunk;
    int64_t end = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
    double sum = 0.0;
    if (column < size) {
#pragma unroll 4 /* several rows' loads in flight per thread */
        for (int64_t r = first + threadIdx.y; r < end; r += row_tile)
            sum += x[r * size + column];
    }
    tile[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y != 0 || column >= size)
        return;
    double total = 0.0;
    for (int k = 0; k < row_tile; k++)
        total += tile[k][threadIdx.x];
    partials[(int64_t)blockIdx.y * size + column] = total;
}

__global__ static void sum_partials_kernel(const double *partials, int64_t chunks, int64_t size, float *out)
{
    for (int64_t j = blockIdx.x; j < size; j += gridDim.x) {
        double partial = 0.0;
        for (int64_t k = threadIdx.x; k < chunks; k += blockDim.x)
            partial += partials[k * size + j];
        double total = block_sum<double>(partial);
        if (threadIdx.x == 0)
            out[j] = (float)total;
    }
}

/* About a thousand blocks in stage 1 fill any current GPU several times. */
extern "C" int64_t fl_cu_sum_to_shape_chunks(int64_t count, int64_t size)
{
    int64_t rows = count / size, columns = (size + column_tile - 1) / column_tile;
    int64_t chunks = 1024 / columns;
    int64_t most = (rows + row_tile - 1) / row_tile; /* at least a row per thread */
    if (chunks > most)
        chunks = most;
    if (chunks > 65535)
        chunks = 65535;
    return chunks > 0 ? chunks : 1;
}

extern "C" cudaError_t fl_cu_sum_to_shape(const float *x, int64_t count, float *out, int64_t size,
                                          double *partials, cudaStream_t s)
{
    int64_t rows = count / size, chunks = fl_cu_sum_to_shape_chunks(count, size);
    int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
    dim3 grid((unsigned)((size + column_tile - 1) / column_tile), (unsigned)chunks), block(column_tile, row_tile);
    column_partials_kernel<<<grid, block, 0, s>>>(x, rows, size, rows_per_chunk, partials);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    sum_partials_kernel<<<reduce_blocks(size), reduce_threads, 0, s>>>(partials, chunks, size, out);
    return cudaGetLastError();
}

__device__ static double element(const void *t, bool is_int, int64_t i)
{
    return is_int ? (double)((const int32_t *)t)[i] : (double)((const float *)t)[i];
}

/* One thread per (outer, inner); strictly greater, so the first of equal maxima wins. */
__global__ static void argmax_kernel(const void *x, bool x_int, int64_t outer, int64_t dim,
                                     int64_t inner, int32_t *out)
{
    for (int64_t o = fl_first_index(); o < outer * inner; o += fl_grid_stride()) {
        int64_t first = (o / inner) * dim * inner + o % inner;
        int32_t best = 0;
        for (int64_t j = 1; j < dim; j++)
            if (element(x, x_int, first + j * inner) > element(x, x_int, first + best * inner))
                best = (int32_t)j;
        out[o] = best;
    }
}

extern "C" cudaError_t fl_cu_argmax(const void *x, bool x_int, int64_t outer, int64_t dim,
                                    int64_t inner, int32_t *out, cudaStream_t s)
{
    argmax_kernel<<<fl_blocks(outer * inner), fl_threads, 0, s>>>(x, x_int, outer, dim, inner, out);
    return cudaGetLastError();
}
