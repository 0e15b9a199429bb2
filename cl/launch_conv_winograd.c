/* launch_conv_winograd.c: host side of cl/conv_winograd.cl, the Winograd
 * F(4x4, 5x5) convolutions: when they apply, the filter's transform into
 * a scratch buffer, then one kernel that does the rest. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

enum { WINO_TILES = 6, WINO_COLS = 16, WINO_POINTS = 64 }; /* as in conv_winograd.cl */

/* Channels, on either side, below which it loses. Measured on 2 Zen 4
 * cores, batch 64 on 14x14: it wins from 8 -> 8 channels (0.35 against
 * 0.46 ms a core, both directions) up; with 2 -> 32 it loses (1.8 against
 * 1.6 ms forward), and so does the data gradient of 4 -> 64, whose 4
 * result columns fill a quarter of the GEMM's 16. The filter gradient wins
 * at 8 -> 8 as well (0.46 against 2.3 ms a core), and at 8 -> 64 and 64 -> 8
 * (0.77 against 1.5, 2.6 against 17.4). */
enum { MIN_CHANNELS = 8 };

static bool turned_off(void)
{
    const char *setting = getenv("FLOWLAB_WINOGRAD");
    return setting && strcmp(setting, "0") == 0;
}

/* Sizes whose every index fits the kernels' ints. */
static bool fits(const fl_conv_geometry *g)
{
    int64_t pixels = (int64_t)g->batch * (g->h + 1) * (g->w + 1);
    int64_t channels = g->c > g->oc ? g->c : g->oc;
    return pixels * channels < INT_MAX && (int64_t)WINO_POINTS * channels * (channels + WINO_COLS) < INT_MAX;
}

bool fl_cl_winograd_applies(const fl_cl_device *d, const fl_conv_geometry *g)
{
    if (turned_off() || fl_cl_use_clblast(d))
        return false;
    return g->kh == 5 && g->kw == 5 && g->sh == 1 && g->sw == 1 && g->c >= MIN_CHANNELS &&
           g->oc >= MIN_CHANNELS && g->batch > 0 && g->oh > 0 && g->ow > 0 && fits(g);
}

static size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

/* U, the filter transformed for the forward convolution (transposed =
 * false) or the data gradient, `cols` columns wide, in the scratch. */
static cl_mem transform_filter(fl_cl_device *d, const fl_conv_geometry *g, const void *filter,
                               bool transposed, int cols)
{
    int channels = transposed ? g->oc : g->c;
    cl_mem u = fl_cl_scratch(d, (size_t)WINO_POINTS * channels * cols * sizeof(float));
    if (!u)
        return NULL;
    fl_cl_call c = fl_cl_begin(d, K_WINOGRAD_FILTER);
    fl_cl_mem(&c, filter);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, transposed);
    fl_cl_int(&c, cols);
    fl_cl_mem(&c, u);
    size_t global[2] = {(size_t)cols / WINO_COLS, (size_t)channels}, local[2] = {1, 1};
    return fl_cl_run_groups(&c, 2, global, local) == 0 ? u : NULL;
}

/* The result = the convolution of src, then the epilogue (NULL: none). */
static int winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *src, const void *filter,
                    bool transposed, const fl_cl_epilogue *epilogue, void *out)
{
    int out_c = transposed ? g->c : g->oc, out_h = transposed ? g->h : g->oh;
    int out_w = transposed ? g->w : g->ow, cols = (int)round_up((size_t)out_c, WINO_COLS);
    int src_c = transposed ? g->oc : g->c;
    /* read for pixels off the image, and as the bias when there is none */
    cl_mem zeros = fl_cl_zeros(d, (size_t)(src_c > out_c ? src_c : out_c) * sizeof(float));
    cl_mem u = zeros ? transform_filter(d, g, filter, transposed, cols) : NULL;
    if (!u)
        return -1;
    const void *bias = epilogue && epilogue->bias ? epilogue->bias : zeros;
    size_t tiles = (size_t)g->batch * ((out_h + 3) / 4) * ((out_w + 3) / 4);
    fl_cl_call c = fl_cl_begin(d, K_WINOGRAD_CONV);
    fl_cl_mem(&c, src);
    fl_cl_mem(&c, zeros);
    fl_cl_mem(&c, u);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, transposed);
    fl_cl_int(&c, cols);
    fl_cl_mem(&c, bias);
    fl_cl_int(&c, epilogue && epilogue->relu);
    fl_cl_mem(&c, out);
    size_t global = round_up(tiles, WINO_TILES) / WINO_TILES, local = 1;
    return fl_cl_run_groups(&c, 1, &global, &local);
}

int fl_cl_conv2d_winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                          const void *filter, const fl_cl_epilogue *epilogue, void *y)
{
    return winograd(d, g, x, filter, false, epilogue, y);
}

int fl_cl_conv2d_backprop_input_winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *dy,
                                         const void *filter, void *dx)
{
    return winograd(d, g, dy, filter, true, NULL, dx);
}

/* The filter gradient's work-items each take about this many of dy's 4x4
 * tiles (a multiple of the kernel's WINO_GRAD_TILES): conv_2's 2048 tiles
 * make 8 partials, enough for two cores to share evenly; at most 16
 * partials bound the scratch on large batches. The count depends on the
 * shape only, so the partials are added in the same order on any device. */
enum { GRAD_TILES_PER_ITEM = 256, GRAD_MAX_ITEMS = 16, GRAD_TILES = 12 /* the kernel's WINO_GRAD_TILES */ };

/* dfilter = G^T (sum of the partials) G, each partial M[p][ci][co] being
 * one work-item's sum of point products over its run of tiles. */
int fl_cl_conv2d_backprop_filter_winograd(fl_cl_device *d, const fl_conv_geometry *g, const void *x,
                                          const void *dy, void *dfilter)
{
    size_t tiles = (size_t)g->batch * ((g->oh + 3) / 4) * ((g->ow + 3) / 4);
    size_t items = (tiles + GRAD_TILES_PER_ITEM - 1) / GRAD_TILES_PER_ITEM;
    items = items < GRAD_MAX_ITEMS ? items : GRAD_MAX_ITEMS;
    size_t per_item = round_up((tiles + items - 1) / items, GRAD_TILES);
    items = (tiles + per_item - 1) / per_item; /* none left empty by the rounding */
    int m_rows = (int)round_up((size_t)g->c, 8), cols = (int)round_up((size_t)g->oc, 2 * (size_t)d->conv_width);
    cl_mem zeros = fl_cl_zeros(d, (size_t)g->c * sizeof(float));
    cl_mem partials = fl_cl_scratch(d, items * WINO_POINTS * m_rows * cols * sizeof(float));
    if (!zeros || !partials)
        return -1;
    fl_cl_call c = fl_cl_begin(d, K_WINOGRAD_FILTER_GRAD);
    fl_cl_mem(&c, x);
    fl_cl_mem(&c, dy);
    fl_cl_mem(&c, zeros);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_int(&c, (int)per_item);
    fl_cl_int(&c, m_rows);
    fl_cl_int(&c, cols);
    fl_cl_mem(&c, partials);
    size_t one = 1, output[2] = {(size_t)(g->oc + 15) / 16, (size_t)g->c}, ones[2] = {1, 1};
    if (fl_cl_run_groups(&c, 1, &items, &one) != 0)
        return -1;
    c = fl_cl_begin(d, K_WINOGRAD_FILTER_GRAD_OUTPUT);
    fl_cl_mem(&c, partials);
    fl_cl_int(&c, (int)items);
    fl_cl_int(&c, m_rows);
    fl_cl_int(&c, cols);
    fl_cl_value(&c, sizeof *g, g);
    fl_cl_mem(&c, dfilter);
    return fl_cl_run_groups(&c, 2, output, ones);
}
