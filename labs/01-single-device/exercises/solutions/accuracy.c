/* solutions/accuracy.c: a reference answer to exercise accuracy. */
#include "exercises.h"

fl_node *my_accuracy(fl_graph *g, fl_node *logits, fl_node *labels)
{
    fl_node *prediction = fl_argmax(g, logits, 1, NULL);     /* int32 [N] */
    fl_node *correct = fl_equal(g, prediction, labels, NULL); /* int32 1 or 0 */
    return fl_reduce_mean(g, fl_cast(g, correct, FL_FLOAT32, NULL), NULL, 0, false, "accuracy");
}
