/* model.h: the labs' model, the multi-GPU tutorial's MNIST classifier, built
 * from two layer functions that create their variables in variable scopes.
 * Every chapter trains this same network, so their numbers compare.
 *
 * Shapes (N = batch size):
 *   image [N,28,28,1] -> conv 5x5x32 + relu [N,28,28,32] -> max-pool [N,14,14,32]
 *   -> conv 5x5x64 + relu [N,14,14,64] -> max-pool [N,7,7,64] -> reshape [N,3136]
 *   -> dense 1024 + relu [N,1024] -> dense 10 [N,10] (the logits) */
#ifndef LABS_COMMON_MODEL_H
#define LABS_COMMON_MODEL_H

#include <stdbool.h>
#include <stdio.h>

#include "flowlab.h"

/* --partitions K (chapter 3's lab): a kernel of at least 1 MB (dense_1's,
 * 98% of the model's bytes) is made of K variables, kernel/part_0 ..
 * part_K-1, each a band of its rows, concatenated where it is used, as
 * TensorFlow's fixed_size_partitioner(K) makes it; the replica device setter
 * places each part like any variable, so K ps tasks can share its traffic.
 * Each part is initialized for its own shape. 1: one variable. */
static int model_partitions = 1;

static fl_node *dense_kernel(fl_graph *g, int in, int units)
{
    int parts = (double)in * units * sizeof(float) >= 1e6 ? model_partitions : 1;
    if (parts <= 1)
        return fl_get_variable(g, "kernel", fl_shape_make(2, in, units), fl_glorot_uniform_initializer(0));
    fl_node *band[64];
    for (int i = 0; i < parts && i < 64; i++) {
        char name[32];
        snprintf(name, sizeof name, "kernel/part_%d", i);
        int rows = in / parts + (i < in % parts); /* the first in % parts bands have one row more */
        band[i] = fl_get_variable(g, name, fl_shape_make(2, rows, units), fl_glorot_uniform_initializer(0));
    }
    return fl_concat(g, band, parts < 64 ? parts : 64, 0, "kernel");
}

// [book:layers]
/* conv2d(x) = relu(x * K + b), K [5,5,in,filters], "same" padding, stride 1 */
static fl_node *conv_relu(fl_graph *g, fl_node *x, int in, int filters, const char *scope)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *k = fl_get_variable(g, "kernel", fl_shape_make(4, 5, 5, in, filters),
                                 fl_glorot_uniform_initializer(0));
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, filters), fl_zeros_initializer());
    fl_node *y = fl_relu(g, fl_add(g, fl_conv2d(g, x, k, 1, 1, FL_SAME, NULL), b, NULL), NULL);
    fl_variable_scope_pop(g);
    return y;
}

/* dense(x) = x W + b, W [in,units]; relu on request */
static fl_node *dense(fl_graph *g, fl_node *x, int in, int units, bool relu, const char *scope)
{
    fl_variable_scope_push(g, scope, FL_REUSE_INHERIT);
    fl_node *w = dense_kernel(g, in, units); /* one variable, unless chapter 3 cuts it */
    fl_node *b = fl_get_variable(g, "bias", fl_shape_make(1, units), fl_zeros_initializer());
    fl_node *y = fl_add(g, fl_matmul(g, x, w, false, false, NULL), b, NULL);
    fl_variable_scope_pop(g);
    return relu ? fl_relu(g, y, NULL) : y;
}
// [end:layers]

// [book:model]
/* The tutorial's MNIST classifier: image [N,28,28,1] -> logits [N,10]. */
static fl_node *core_model(fl_graph *g, fl_node *image)
{
    fl_node *net = conv_relu(g, image, 1, 32, "conv_1");
    net = fl_max_pool2d(g, net, 2, 2, 2, 2, FL_VALID, NULL);   /* [N,14,14,32] */
    net = conv_relu(g, net, 32, 64, "conv_2");
    net = fl_max_pool2d(g, net, 2, 2, 2, 2, FL_VALID, NULL);   /* [N,7,7,64] */
    net = fl_reshape(g, net, fl_shape_make(2, -1, 7 * 7 * 64), NULL);
    net = dense(g, net, 7 * 7 * 64, 1024, true, "dense_1");
    return dense(g, net, 1024, 10, false, "dense_2");           /* the logits */
}
// [end:model]

#endif
