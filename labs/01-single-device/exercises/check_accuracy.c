/* check_accuracy.c: checks my_accuracy (exercise accuracy) on small batches
 * whose accuracy is known: 3 of 4 right, all right, none right. */
#include "exercises.h"
#include "../../common/check.h"

int main(void)
{
    check_start("accuracy", "labs/01-single-device/exercises/accuracy.c");
    fl_graph *g = fl_graph_new();
    fl_node *logits = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "logits");
    fl_node *labels = fl_placeholder(g, FL_INT32, fl_shape_make(1, -1), "labels");
    fl_node *acc = my_accuracy(g, logits, labels);
    if (!acc && !fl_graph_error(g))
        fail("not implemented yet (my_accuracy returned NULL)");
    check_graph(g);
    char buf[32];
    if (fl_node_dtype(acc) != FL_FLOAT32)
        fail("the accuracy is %s; it should be float32 (fl_cast before the mean)",
             fl_dtype_name(fl_node_dtype(acc)));
    if (fl_node_shape(acc).rank != 0)
        fail("the accuracy has shape %s; it should be a scalar [] (reduce over every axis)",
             fl_shape_format(fl_node_shape(acc), buf, sizeof buf));

    /* predictions: 2, 0, 1, 1 */
    const float lv[12] = {0.1f, 0.2f, 3.0f, 5.0f, -1.0f, 0.0f, 0.0f, 9.0f, 1.0f, -2.0f, 4.0f, 3.5f};
    const struct { int32_t labels[4]; float want; } cases[] = {
        {{2, 0, 0, 1}, 0.75f}, {{2, 0, 1, 1}, 1.0f}, {{0, 1, 2, 0}, 0.0f}};
    fl_tensor *lt = fl_tensor_from_floats(fl_shape_make(2, 4, 3), lv);
    fl_session *s = fl_session_new(g, NULL);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fl_tensor *yt = fl_tensor_from_ints(fl_shape_make(1, 4), cases[c].labels);
        fl_feed feeds[2] = {{logits, lt}, {labels, yt}};
        fl_tensor *out = run(s, feeds, 2, acc, NULL);
        float got = fl_tensor_scalar(out);
        if (fabsf(got - cases[c].want) > 1e-6f)
            fail("predictions 2,0,1,1 against labels %d,%d,%d,%d give %g; want %g",
                 cases[c].labels[0], cases[c].labels[1], cases[c].labels[2], cases[c].labels[3],
                 got, cases[c].want);
        fl_tensor_free(out);
        fl_tensor_free(yt);
    }
    fl_tensor_free(lt);
    fl_session_free(s);
    fl_graph_free(g);
    pass();
}
