/* launch_conv_gemm.c: host side of the implicit-GEMM convolutions of
 * cl/conv_gemm*.cl: packs the filter, picks the work sizes and the split of
 * the filter gradient's sum, and enqueues the kernels. The scratch holds
 * the packed filter, or the filter gradient's partial sums and padded
 * images: no patch matrix is ever written. */
#include <limits.h>

#include "launch.h"

/* As in conv_gemm.cl; a tile's columns are 2 * d->conv_width (16 or 32). */
enum { TILE_ROWS = 6, MAX_TILE_COLS = 32, STRIP = 8, WIN_FLOATS = 512 };

static int tile_cols(const fl_cl_device *d) { return 2 * d->conv_width; }

/* The filter gradient's sum over the batch is cut into this many partial
 * sums at most (one work-item each): enough for the cores to share, few
 * enough that the partial sums stay small (conv_2: 16 x 200 KB). */
enum { MAX_SPLITS = 16 };

static size_t tiles(int n, int tile) { return ((size_t)n + tile - 1) / tile; }

static int check_size(const fl_conv_geometry *g)
{
    int64_t pixels = (int64_t)g->batch * (g->h > g->oh ? g->h : g->oh) * (g->w > g->ow ? g->w : g->ow);
    int64_t channels = g->c > g->oc ? g->c : g->oc;
    if (pixels * channels < INT_MAX && (int64_t)g->kh * g->kw * channels * (g->c + MAX_TILE_COLS) < INT_MAX)
        return 0;
    fl_set_error_code(FL_UNIMPLEMENTED,
                      "a convolution of [%d,%d,%d,%d] by a %dx%d window is too large for the OpenCL kernels",
                      g->batch, g->h, g->w, g->c, g->kh, g->kw);
    return -1;
}

/* Packs the filter [KH, KW, Cin, Cout] as B of the forward GEMM ([K, Cout],
 * transposed = false) or of the data gradient's (each tap's block
 * transposed, [KH*KW*Cout, Cin]) into panels a tile wide in the scratch. */
static cl_mem pack_filter(fl_cl_device *d, const fl_conv_geometry *g, const void *filter, bool transposed)
{
    int taps = g->kh * g->kw, kin = transposed ? g->oc : g->c, n = transposed ? g->c : g->oc;
    size_t panels = tiles(n, tile_cols(d)), K = (size_t)taps * kin;
    cl_mem bp = fl_cl_scratch(d, panels * K * tile_cols(d) * sizeof(float));
    if (!bp)
        return NULL;
    fl_cl_call c = fl_cl_begin(d, K_CONV_PACK_FILTER);
    fl_cl_mem(&c, filter);
    fl_cl_int(&c, taps);
    fl_cl_int(&c, kin);
    fl_cl_int(&c, n);
    fl_cl_int(&c, g->c * g->oc);          /* tap_stride */
    fl_cl_int(&c, transposed ? 1 : g->oc); /* stride_q */
    fl_cl_int(&c, transposed ? g->oc : 1); /* stride_c */
    fl_cl_mem(&c, bp);
    size_t global[2] = {panels, K}, local[2] = {1, 1};
    return fl_cl_run_groups(&c, 2, global, local) == 0 ? bp : NULL;
}

/* B of a convolution's GEMM as the kernels read it: row k of panel p at
 * b + p * panel + k * row (floats). */
typedef struct {
    const void *b;
    int row, panel;
} gemm_b;

/* The filter as B: itself when it is a forward filter whose Cout fills
 * whole panels (packing would only copy it), else packed. */
static int filter_as_b(fl_cl_device *d, const fl_conv_geometry *g, const void *filter, bool transposed,
                       gemm_b *b)
{
    int n = transposed ? g->c : g->oc, K = g->kh * g->kw * (transposed ? g->oc : g->c);
    if (!transposed && n % tile_cols(d) == 0) {
        *b = (gemm_b){filter, n, tile_cols(d)};
        return 0;
    }
    *b = (gemm_b){pack_filter(d, g, filter, transposed), tile_cols(d), K * tile_cols(d)};
    return b->b ? 0 : -1;
}

static void add_b(fl_cl_call *c, const gemm_b *b)
{
    fl_cl_mem(c, b->b);
    fl_cl_int(c, b->row);
    fl_cl_int(c, b->panel);
}

/* The epilogue as a kernel's three arguments (bias, has_bias, relu); a
 * kernel without a bias is passed `any` buffer in its place, never read. */
static void add_epilogue(fl_cl_call *c, const fl_cl_epilogue *epilogue, const void *any)
{
    bool has_bias = epilogue && epilogue->bias;
    fl_cl_mem(c, has_bias ? epilogue->bias : any);
    fl_cl_int(c, has_bias);
    fl_cl_int(c, epilogue && epilogue->relu);
}

/* Input channels up to which Conv2D and its data gradient take the narrow
 * kernels (for a first layer), rather than conv_gemm's tiles. */
enum { NARROW_CHANNELS = 4 };

/* Whether conv_forward_narrow's private copy of the kh input rows under
 * one output row, padded to whole strips of pixels, fits in WIN_FLOATS. */
static bool forward_narrow_fits(const fl_conv_geometry *g)
{
    int64_t row = ((int64_t)tiles(g->ow, TILE_ROWS) * TILE_ROWS - 1) * g->sw * g->c + (int64_t)g->kw * g->c;
    return g->c <= NARROW_CHANNELS && g->kh * row <= WIN_FLOATS;
}

/* Conv2D through conv_forward_narrow, a work-item per output row, with the
 * filter as B. */
static int forward_narrow(fl_cl_device *d, const fl_conv_geometry *g, const void *x, const gemm_b *b,
                          const fl_cl_epilogue *epilogue, void *y)
{
    fl_cl_call c = fl_cl_begin(d, K_CONV_FORWARD_NARROW);
    fl_cl_mem(&c, x);
    add_b(&c, b);
    fl_cl_value(&c, sizeof *g, g);
    add_epilogue(&c, epilogue, b->b);
    fl_cl_mem(&c, y);
    size_t global = (size_t)g->batch * g->oh, local = 1;
    return fl_cl_run_groups(&c, 1, &global, &local);
}

/* Conv2D (transposed = false) or Conv2DBackpropInput (true) through
 * conv_gemm: rows are the result's pixels, columns its channels; the
 * epilogue (NULL: none) applied as each tile is stored. */
static int conv_gemm(fl_cl_device *d, const fl_conv_geometry *g, const void *src, const void *filter,
                     bool transposed, const fl_cl_epilogue *epilogue, void *out)
{
    int rows_h = transposed ? g->h : g->oh, rows_w = transposed ? g->w : g->ow;
    int src_c = transposed ? g->oc : g->c, n = transposed ? g->c : g->oc;
    size_t m = (size_t)g->batch * rows_h * rows_w;
    if (m == 0 || n == 0)
        return 0;
    if (src_c == 0 || g->kh * g->kw == 0) /* an empty sum */
        return fl_cl_fill_bytes(d, out, 0, m * n * sizeof(float));
    cl_mem zeros = fl_cl_zeros(d, (size_t)g->kw * src_c * sizeof(float));
    gemm_b b;
    if (!zeros || filter_as_b(d, g, filter, transposed, &b) != 0)
        return -1;
    if (!transposed && forward_narrow_fits(g))
        return forward_narrow(d, g, src, &b, epilogue, out);
    fl_cl_call c = fl_cl_begin(d, K_CONV_GEMM);
    fl_cl_mem(&c, src);
    add_b(&c, &b);
    fl_cl_mem(&c, zeros);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, transposed);
    add_epilogue(&c, epilogue, filter);
    fl_cl_mem(&c, out);
    size_t global[2] = {tiles(n, tile_cols(d)), tiles((int)m, TILE_ROWS)}, local[2] = {1, 1};
    return fl_cl_run_groups(&c, 2, global, local);
}

int fl_cl_conv2d_implicit(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                          const void *filter, const fl_cl_epilogue *epilogue, void *y)
{
    return check_size(g) ? -1 : conv_gemm(d, g, x, filter, false, epilogue, y);
}

int fl_cl_conv2d_backprop_input_implicit(fl_cl_device *d, const fl_conv_geometry *g, const void *dy,
                                         const void *filter, void *dx)
{
    if (check_size(g) != 0)
        return -1;
    if (g->c > NARROW_CHANNELS)
        return conv_gemm(d, g, dy, filter, true, NULL, dx);
    cl_mem zeros = fl_cl_zeros(d, (size_t)g->oc * sizeof(float));
    if (!zeros)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_CONV_BACKPROP_INPUT_NARROW);
    fl_cl_mem(&c, dy);
    fl_cl_mem(&c, filter);
    fl_cl_mem(&c, zeros);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_mem(&c, dx);
    size_t global = (size_t)g->batch * g->h * tiles(g->w, STRIP) * g->c, local = 1;
    return fl_cl_run_groups(&c, 1, &global, &local);
}

/* conv_filter_grad's partial sums, one per share of the batch, then
 * conv_sum_splits adding them up in order. The scratch holds the partial
 * sums, then each work-item's zero-bordered copy of its current image. */
int fl_cl_conv2d_backprop_filter_implicit(fl_cl_device *d, const fl_conv_geometry *g,
                                          const void *x, const void *dy, void *dfilter)
{
    int K = g->kh * g->kw * g->c, n = g->oc, run = g->kw * g->c;
    if (check_size(g) != 0)
        return -1;
    if (K == 0 || n == 0)
        return 0;
    if (g->batch == 0 || g->oh == 0 || g->ow == 0)
        return fl_cl_fill_bytes(d, dfilter, 0, (size_t)K * n * sizeof(float));
    int splits = g->batch < MAX_SPLITS ? g->batch : MAX_SPLITS;
    int hp = (g->oh - 1) * g->sh + g->kh, wp = (g->ow - 1) * g->sw + g->kw; /* every window fits */
    size_t rpad = tiles(run, TILE_ROWS) * TILE_ROWS, npad = tiles(n, tile_cols(d)) * tile_cols(d);
    size_t partial = (size_t)g->kh * rpad * npad, padded = (size_t)hp * wp * g->c + TILE_ROWS;
    cl_mem partials = fl_cl_scratch(d, splits * (partial + padded) * sizeof(float));
    if (!partials)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_CONV_FILTER_GRAD);
    fl_cl_mem(&c, x);
    fl_cl_mem(&c, dy);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, splits);
    fl_cl_int(&c, hp);
    fl_cl_int(&c, wp);
    fl_cl_mem(&c, partials);
    size_t global = (size_t)splits, local = 1;
    if (fl_cl_run_groups(&c, 1, &global, &local) != 0)
        return -1;
    c = fl_cl_begin(d, K_CONV_SUM_SPLITS);
    fl_cl_mem(&c, partials);
    fl_cl_int(&c, splits);
    fl_cl_int(&c, run);
    fl_cl_int(&c, (int)rpad);
    fl_cl_int(&c, (int)npad);
    fl_cl_int(&c, K);
    fl_cl_int(&c, n);
    fl_cl_mem(&c, dfilter);
    return fl_cl_run(&c, (size_t)K * n);
}
