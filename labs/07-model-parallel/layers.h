/* layers.h: chapter 7's two models as lists of layers, so that a pipeline
 * can cut between any two of them: chapter 1's network (--model cnn), whose
 * convolutions do most of the work, and an MLP of equal layers (--model mlp),
 * whose stages can be made even. Each layer's ops carry its name
 * ("conv_2/MaxPool"), so a trace tells which layer every op serves. */
#ifndef LAB07_LAYERS_H
#define LAB07_LAYERS_H

#include <stdio.h>
#include <string.h>

#include "flowlab.h"
#include "../common/model.h"

#define MAX_LAYERS 10
#define MLP_WIDTH 1024

typedef enum { MODEL_CNN, MODEL_MLP } model_kind;

/* The layers in order, as trace_report and the cut name them. */
static const char *const cnn_layers[] = {"conv_1", "conv_2", "dense_1", "dense_2"};
static const char *const mlp_layers[] = {"dense_1", "dense_2", "dense_3", "dense_4", "dense_5",
                                         "dense_6", "dense_7", "dense_8", "dense_9", "dense_10"};

static int model_num_layers(model_kind kind) { return kind == MODEL_CNN ? 4 : MAX_LAYERS; }

static const char *model_layer_name(model_kind kind, int l)
{
    return kind == MODEL_CNN ? cnn_layers[l] : mlp_layers[l];
}

// [book:mlp]
/* The MLP: image [N,28,28,1] -> [N,784] -> dense_1 to 1024 -> dense_2 ...
 * dense_9, each 1024 -> 1024 with relu -> dense_10 to the 10 logits. Eight
 * of its ten layers are the same matrix multiply, so stages of equal
 * numbers of them take equal time. dense_1 takes about half as long (784
 * inputs, and no gradient for the image), dense_10 almost nothing: cut
 * after dense_5, the two stages differ by about a tenth. */
static fl_node *mlp_layer(fl_graph *g, fl_node *x, int l)
{
    char reshape[32];
    snprintf(reshape, sizeof reshape, "%s/Reshape", mlp_layers[l]);
    if (l == 0)
        x = fl_reshape(g, x, fl_shape_make(2, -1, 28 * 28), reshape);
    int in = l == 0 ? 28 * 28 : MLP_WIDTH, out = l == MAX_LAYERS - 1 ? 10 : MLP_WIDTH;
    return dense(g, x, in, out, l < MAX_LAYERS - 1, mlp_layers[l]);
}
// [end:mlp]

/* Chapter 1's network, layer by layer (model.h's core_model, the same ops in
 * the same order): a convolution's pooling, and dense_1's reshape, go with
 * their layer. A reshape only renames its input's memory, so it runs where
 * its layer does, after the copy into that device. */
static fl_node *cnn_layer(fl_graph *g, fl_node *x, int l)
{
    char name[32];
    if (l == 0 || l == 1) {
        snprintf(name, sizeof name, "%s/MaxPool", cnn_layers[l]);
        x = conv_relu(g, x, l == 0 ? 1 : 32, l == 0 ? 32 : 64, cnn_layers[l]);
        return fl_max_pool2d(g, x, 2, 2, 2, 2, FL_VALID, name);
    }
    if (l == 2) {
        snprintf(name, sizeof name, "%s/Reshape", cnn_layers[l]);
        x = fl_reshape(g, x, fl_shape_make(2, -1, 7 * 7 * 64), name);
        return dense(g, x, 7 * 7 * 64, 1024, true, "dense_1");
    }
    return dense(g, x, 1024, 10, false, "dense_2");
}

/* Layer l of the model, on x. */
static fl_node *model_layer(fl_graph *g, model_kind kind, int l, fl_node *x)
{
    return kind == MODEL_CNN ? cnn_layer(g, x, l) : mlp_layer(g, x, l);
}

/* Layers [from, to) of the model, on x. */
static fl_node *model_layers(fl_graph *g, model_kind kind, int from, int to, fl_node *x)
{
    for (int l = from; l < to; l++)
        x = model_layer(g, kind, l, x);
    return x;
}

/* The layer a node's name names: the index of the model's layer that is a
 * whole component of it ("gradients/model/stage_0/dense_3/MatMul_grad/
 * MatMul", "model/dense_3/kernel": dense_3, not dense_30), or -1. */
static int layer_in_name(model_kind kind, const char *name)
{
    for (int l = 0; l < model_num_layers(kind); l++) {
        const char *layer = model_layer_name(kind, l);
        size_t n = strlen(layer);
        for (const char *at = strstr(name, layer); at; at = strstr(at + 1, layer))
            if ((at == name || at[-1] == '/') && at[n] == '/')
                return l;
    }
    return -1;
}

/* The layer a variable belongs to ("model/dense_3/kernel" -> "dense_3"), or
 * "other". */
static const char *layer_of_variable(model_kind kind, const fl_node *var)
{
    int l = layer_in_name(kind, fl_node_name(var));
    return l >= 0 ? model_layer_name(kind, l) : "other";
}

#endif
