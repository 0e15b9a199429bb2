/* tensor_split.h: chapter 7's horizontal split (tensor parallelism). The
 * matrix multiply of dense_1, x [N,3136] times W [3136,1024], is cut in two
 * and each half of W lives on its own device: by columns (each device
 * computes half of the outputs, joined by a concat) or by rows (each device
 * multiplies half of x's features by half of W's rows, and the two partial
 * products are summed). Megatron-LM's pairing cuts dense_1 by columns and
 * dense_2 by rows, so dense_1's halves never meet: one sum joins the
 * partial logits. Everything else runs on the first device. */
#ifndef LAB07_TENSOR_SPLIT_H
#define LAB07_TENSOR_SPLIT_H

#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "../common/model.h"
#include "pipeline.h"

typedef enum { SPLIT_COLUMNS, SPLIT_ROWS, SPLIT_PAIR } tensor_split;

#define DENSE_1_IN (7 * 7 * 64)
#define DENSE_1_UNITS 1024
#define DENSE_2_UNITS 10

/* A kernel [in,units] in two shards, each a variable on its own device: by
 * columns (axis 1) or by rows (axis 0). */
typedef struct {
    fl_node *shards[2], *full;
    int in, units, axis;
} sharded_kernel;

/* The two shards of a kernel, each a variable on its own device. They
 * start as the halves of the kernel one device would have: that kernel is
 * made first, with the same initializer and seed, on the host, where it
 * only serves to initialize the shards (load_shards); so the losses can
 * equal one device's. The shards' own initializer takes no seed from the
 * graph, so every later variable gets the seed it gets on one device. */
static void shard_kernel(fl_graph *g, sharded_kernel *k, device_name *devices)
{
    fl_device_scope_push(g, "/cpu:0");
    k->full = fl_get_variable_typed(g, "kernel", FL_FLOAT32, fl_shape_make(2, k->in, k->units),
                                    fl_glorot_uniform_initializer(0), false);
    fl_device_pop(g);
    fl_shape half = k->axis == 1 ? fl_shape_make(2, k->in, k->units / 2) : fl_shape_make(2, k->in / 2, k->units);
    fl_initializer zeros = fl_zeros_initializer();
    zeros.seed = 1; /* not drawn from the graph's counter: see above */
    for (int d = 0; d < 2; d++) {
        char name[32];
        snprintf(name, sizeof name, "kernel_shard_%d", d);
        fl_device_scope_push(g, devices[d]);
        k->shards[d] = fl_get_variable(g, name, half, zeros);
        fl_device_pop(g);
    }
}

// [book:tensor_split]
/* dense_1 with its kernel in two shards: y = relu(x W + b), [N,1024]. The
 * multiply by shard d runs in name scope shard_d on devices[d]; the join
 * (concat or sum), the bias and the relu on devices[0]. */
static fl_node *split_dense_1(fl_graph *g, fl_node *x, tensor_split split, device_name *devices,
                              sharded_kernel *k)
{
    fl_variable_scope_push(g, "dense_1", FL_REUSE_INHERIT);
    *k = (sharded_kernel){.in = DENSE_1_IN, .units = DENSE_1_UNITS, .axis = split == SPLIT_COLUMNS ? 1 : 0};
    shard_kernel(g, k, devices);
    fl_node *bias = fl_get_variable(g, "bias", fl_shape_make(1, DENSE_1_UNITS), fl_zeros_initializer());
    fl_node *parts[2];
    for (int d = 0; d < 2; d++) {
        /* rows: device d reads its half of x's features (cut on devices[0]) */
        fl_node *input = split == SPLIT_COLUMNS ? x
                         : fl_slice(g, x, 1, d * DENSE_1_IN / 2, DENSE_1_IN / 2, NULL);
        char scope[16];
        snprintf(scope, sizeof scope, "shard_%d", d);
        fl_name_scope_push(g, scope);
        fl_device_scope_push(g, devices[d]);
        parts[d] = fl_matmul(g, input, k->shards[d], false, false, NULL);
        fl_device_pop(g);
        fl_name_scope_pop(g);
    }
    fl_node *y = split == SPLIT_COLUMNS ? fl_concat(g, parts, 2, 1, "concat")
                                        : fl_add(g, parts[0], parts[1], "sum");
    fl_variable_scope_pop(g);
    return fl_relu(g, fl_add(g, y, bias, NULL), NULL);
}
// [end:tensor_split]

// [book:paired_dense]
/* dense_1 by columns, then dense_2 by rows (Megatron-LM's pairing): device d
 * computes its half of dense_1's outputs, h_d = relu(x W1_d + b1_d), and
 * multiplies it by its half of dense_2's rows, h_d W2_d; one sum on
 * devices[0] joins the partial logits. Backward, autodiff adds the two
 * halves' gradients of x: the one sum the other way. */
static fl_node *paired_dense(fl_graph *g, fl_node *x, device_name *devices, sharded_kernel *k1, sharded_kernel *k2)
{
    fl_node *b1[2], *parts[2];
    fl_variable_scope_push(g, "dense_1", FL_REUSE_INHERIT);
    *k1 = (sharded_kernel){.in = DENSE_1_IN, .units = DENSE_1_UNITS, .axis = 1};
    shard_kernel(g, k1, devices);
    fl_device_scope_push(g, "/cpu:0"); /* one device's bias, for its seed's turn; not trained */
    fl_get_variable_typed(g, "bias", FL_FLOAT32, fl_shape_make(1, DENSE_1_UNITS), fl_zeros_initializer(), false);
    fl_device_pop(g);
    for (int d = 0; d < 2; d++) {
        char name[32];
        snprintf(name, sizeof name, "bias_shard_%d", d);
        fl_initializer zeros = fl_zeros_initializer();
        zeros.seed = 1; /* as the shards' */
        fl_device_scope_push(g, devices[d]);
        b1[d] = fl_get_variable(g, name, fl_shape_make(1, DENSE_1_UNITS / 2), zeros);
        fl_device_pop(g);
    }
    fl_variable_scope_pop(g);
    fl_variable_scope_push(g, "dense_2", FL_REUSE_INHERIT);
    *k2 = (sharded_kernel){.in = DENSE_1_UNITS, .units = DENSE_2_UNITS, .axis = 0};
    shard_kernel(g, k2, devices);
    fl_node *b2 = fl_get_variable(g, "bias", fl_shape_make(1, DENSE_2_UNITS), fl_zeros_initializer());
    fl_variable_scope_pop(g);
    for (int d = 0; d < 2; d++) {
        char scope[16];
        snprintf(scope, sizeof scope, "shard_%d", d);
        fl_name_scope_push(g, scope);
        fl_device_scope_push(g, devices[d]);
        fl_node *h = fl_relu(g, fl_add(g, fl_matmul(g, x, k1->shards[d], false, false, NULL), b1[d], NULL), NULL);
        parts[d] = fl_matmul(g, h, k2->shards[d], false, false, NULL);
        fl_device_pop(g);
        fl_name_scope_pop(g);
    }
    return fl_add(g, fl_add(g, parts[0], parts[1], "sum"), b2, NULL);
}
// [end:paired_dense]

/* A device function for the backward pass: the gradient of an op of
 * shard 1 runs on its device; everything else on devices[0]. */
static const char *place_by_shard(const fl_node *node, void *user)
{
    device_name *devices = user;
    return strstr(fl_node_name(node), "shard_1/") ? devices[1] : devices[0];
}

/* The whole model with dense_1 split (and dense_2 too, paired); the
 * model's variables are made by the first call, shared by later ones
 * (reuse); k[0] is dense_1's kernel, k[1] dense_2's when paired. */
static fl_node *split_model(fl_graph *g, fl_node *image, tensor_split split, device_name *devices,
                            bool reuse, sharded_kernel k[2])
{
    fl_variable_scope_push(g, "model", reuse ? FL_REUSE : FL_REUSE_INHERIT);
    fl_device_scope_push(g, devices[0]);
    fl_node *convolutions = model_layers(g, MODEL_CNN, 0, 2, image); /* conv_1, conv_2 */
    fl_node *features = fl_reshape(g, convolutions, fl_shape_make(2, -1, DENSE_1_IN), NULL);
    fl_node *logits = NULL;
    if (split == SPLIT_PAIR) {
        logits = paired_dense(g, features, devices, &k[0], &k[1]);
    } else {
        fl_node *net = split_dense_1(g, features, split, devices, &k[0]);
        logits = dense(g, net, DENSE_1_UNITS, DENSE_2_UNITS, false, "dense_2");
    }
    fl_device_pop(g);
    fl_variable_scope_pop(g);
    return logits;
}

/* The ops that give each shard its half of the host's kernel. */
static void load_kernel(fl_graph *g, const sharded_kernel *k, fl_node **assigns)
{
    int size = k->axis == 1 ? k->units / 2 : k->in / 2;
    for (int d = 0; d < 2; d++) {
        fl_device_scope_push(g, "/cpu:0");
        fl_node *half = fl_slice(g, k->full, k->axis, d * size, size, NULL);
        fl_device_pop(g);
        fl_device_scope_push(g, fl_node_device(k->shards[d]));
        assigns[d] = fl_assign(g, k->shards[d], half, NULL);
        fl_device_pop(g);
    }
}

/* The op that loads every shard: run once, after the variables'
 * initializer (a restored checkpoint has the shards). */
static fl_node *load_shards(fl_graph *g, tensor_split split, const sharded_kernel k[2])
{
    fl_node *assigns[4];
    load_kernel(g, &k[0], assigns);
    if (split == SPLIT_PAIR)
        load_kernel(g, &k[1], assigns + 2);
    return fl_group(g, assigns, split == SPLIT_PAIR ? 4 : 2, "load_shards");
}

/* Training with dense_1 split: the loss of the whole batch and its
 * gradients, each computed where its forward op ran. */
static pipeline_out build_tensor_split(fl_graph *g, tensor_split split, device_name *devices,
                                       fl_node *image, fl_node *label, fl_node **load)
{
    pipeline_out out = {0};
    sharded_kernel k[2];
    memset(k, 0, sizeof k);
    fl_node *logits = split_model(g, image, split, devices, false, k);
    fl_device_scope_push(g, devices[0]);
    out.loss = mean_loss(g, logits, label);
    fl_device_function_push(g, place_by_shard, devices);
    out.nvars = fl_compute_gradients(g, out.loss, NULL, 0, out.grads);
    fl_device_pop(g);
    fl_device_pop(g);
    if (k[0].full)
        *load = load_shards(g, split, k);
    return out;
}

#endif
