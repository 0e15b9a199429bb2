/* exercises.h: the three functions chapter 1's exercises ask you to write.
 * Each one lives in its own file in this folder (dense_layer.c, momentum.c,
 * accuracy.c); edit that file, then run `make exercises` from the top of the
 * repository. Reference answers are in solutions/, but try first. */
#ifndef LAB01_EXERCISES_H
#define LAB01_EXERCISES_H

#include <stdbool.h>

#include "flowlab.h"

/* Exercise dense-layer: a fully connected layer, y = x W + b, with relu(y)
 * when relu is true. x is float32 [N,in]; y is [N,units]. W ("kernel",
 * [in,units], random initial values) and b ("bias", [units], zeros) are made
 * with fl_get_variable inside the variable scope `scope`, so that they are
 * called "<scope>/kernel" and "<scope>/bias". */
fl_node *my_dense(fl_graph *g, fl_node *x, int units, bool relu, const char *scope);

/* Exercise momentum-update: one step of SGD with momentum for one variable,
 *     accum = momentum * accum + grad
 *     var   = var - learning_rate * accum
 * built from public ops. accum is a slot variable you create with
 * fl_get_variable_typed (zeros, not trainable), named "<var>/Momentum".
 * Returns a node that, run as a target, performs the whole update. */
fl_node *my_momentum_update(fl_graph *g, fl_node *var, fl_node *grad, float learning_rate,
                            float momentum);

/* Exercise accuracy: the fraction of examples whose largest logit is at the
 * right label, as a float32 scalar. logits float32 [N,C], labels int32 [N]. */
fl_node *my_accuracy(fl_graph *g, fl_node *logits, fl_node *labels);

#endif
