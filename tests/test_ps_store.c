/* test_ps_store.c: a parameter server's variables (src/distributed_runtime/ps/ps_store.c):
 * assigned once, updated in place by state ops run with the host's kernels,
 * and every bad request refused with a message naming the variable. */
#include "tap.h"
#include "flowlab.h"
#include "runtime.h"
#include "distributed_runtime/ps/ps_store.h"

static fl_tensor *filled(fl_dtype dtype, fl_shape shape, float value)
{
    fl_tensor *t = fl_tensor_new(dtype, shape);
    for (int64_t i = 0; i < fl_shape_size(shape); i++) {
        if (dtype == FL_INT32)
            fl_tensor_ints(t)[i] = (int32_t)value;
        else
            fl_tensor_floats(t)[i] = value;
    }
    return t;
}

static void test_init_once(void)
{
    fl_ps_store *s = fl_ps_store_new();
    fl_status err = {0};
    fl_tensor *first = filled(FL_FLOAT32, fl_shape_make(2, 2, 3), 1.5f);
    fl_tensor *second = filled(FL_FLOAT32, fl_shape_make(2, 2, 3), 9.0f);
    ok(fl_ps_store_init(s, "dense/kernel", first, &err) == 1, "the first init assigns");
    ok(fl_ps_store_init(s, "dense/kernel", second, &err) == 0, "a second init is told it was late");
    is_near(fl_tensor_floats(fl_ps_store_get(s, "dense/kernel"))[5], 1.5, 0, "and the first value is kept");
    ok(fl_ps_store_count(s) == 1 && fl_ps_store_bytes(s) == 24, "one variable of 24 bytes");

    fl_tensor *wrong = filled(FL_FLOAT32, fl_shape_make(2, 3, 2), 0);
    ok(fl_ps_store_init(s, "dense/kernel", wrong, &err) == -1, "an init of another shape is refused");
    contains(err.message, "dense/kernel is float32 [2,3]", "naming the variable and its shape");
    ok(fl_ps_store_get(s, "nothing") == NULL, "an unknown name has no value");
    fl_tensor_free(first);
    fl_tensor_free(second);
    fl_tensor_free(wrong);
    fl_ps_store_free(s);
}

static void test_updates(void)
{
    fl_ps_store *s = fl_ps_store_new();
    fl_status err = {0};
    fl_tensor *w = filled(FL_FLOAT32, fl_shape_make(1, 4), 2.0f);
    fl_tensor *zeros = filled(FL_FLOAT32, fl_shape_make(1, 4), 0.0f);
    fl_tensor *b1 = filled(FL_FLOAT32, fl_shape_make(0), 0.9f), *b2 = filled(FL_FLOAT32, fl_shape_make(0), 0.999f);
    fl_tensor *grad = filled(FL_FLOAT32, fl_shape_make(1, 4), 0.5f);
    fl_ps_store_init(s, "w", w, &err);
    fl_ps_store_init(s, "w/Adam", zeros, &err);
    fl_ps_store_init(s, "w/Adam_1", zeros, &err);
    fl_ps_store_init(s, "beta1_power", b1, &err);
    fl_ps_store_init(s, "beta2_power", b2, &err);

    fl_attrs sgd = {.learning_rate = 0.1f};
    const char *just_w[] = {"w"};
    ok(fl_ps_store_run(s, FL_OP_APPLY_GRADIENT_DESCENT, &sgd, just_w, 1, grad, &err) == 0,
       "ApplyGradientDescent runs");
    is_near(fl_tensor_floats(fl_ps_store_get(s, "w"))[3], 2.0 - 0.05, 1e-6, "w -= lr * grad");

    /* Adam's first step moves every weight by about lr, whatever the gradient. */
    fl_attrs adam = {.learning_rate = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f};
    const char *adam_vars[] = {"w", "w/Adam", "w/Adam_1", "beta1_power", "beta2_power"};
    ok(fl_ps_store_run(s, FL_OP_APPLY_ADAM, &adam, adam_vars, 5, grad, &err) == 0, "ApplyAdam runs");
    is_near(fl_tensor_floats(fl_ps_store_get(s, "w"))[0], 1.95 - 0.01, 1e-5, "Adam's first step is lr");
    is_near(fl_tensor_floats(fl_ps_store_get(s, "w/Adam"))[0], 0.05, 1e-6, "its slot m is updated in place");

    fl_tensor *wrong = filled(FL_FLOAT32, fl_shape_make(1, 5), 0.5f);
    ok(fl_ps_store_run(s, FL_OP_APPLY_GRADIENT_DESCENT, &sgd, just_w, 1, wrong, &err) == -1,
       "a gradient of the wrong shape is refused");
    contains(err.message, "variable w is float32 [4]; the value sent is float32 [5]", "naming both shapes");
    ok(err.code == FL_INVALID_ARGUMENT, "a value of another shape is INVALID_ARGUMENT, which the server sends on");
    const char *missing[] = {"w", "w/Momentum"};
    fl_attrs momentum = {.learning_rate = 0.1f, .momentum = 0.9f};
    ok(fl_ps_store_run(s, FL_OP_APPLY_MOMENTUM, &momentum, missing, 2, grad, &err) == -1,
       "an update whose slot does not exist is refused");
    contains(err.message, "w/Momentum has no value on this ps", "naming the missing slot");
    ok(err.code == FL_FAILED_PRECONDITION, "a slot with no value yet is FAILED_PRECONDITION");
    is_near(fl_tensor_floats(fl_ps_store_get(s, "w"))[0], 1.94, 1e-5, "and nothing changed");
    ok(fl_ps_store_run(s, FL_OP_MATMUL, &sgd, just_w, 1, grad, &err) == -1 &&
           strstr(err.message, "MatMul is not a state op"),
       "an op that is not a state op is refused: %s", err.message);
    const char *swapped[] = {"w", "w/Adam", "beta1_power", "w/Adam_1", "beta2_power"};
    ok(fl_ps_store_run(s, FL_OP_APPLY_ADAM, &adam, swapped, 5, grad, &err) == -1,
       "Adam with a scalar where a slot belongs is refused");
    contains(err.message, "variable beta1_power is float32 []; the value sent is float32 [4]", "naming the slot");
    fl_tensor_free(w);
    fl_tensor_free(zeros);
    fl_tensor_free(b1);
    fl_tensor_free(b2);
    fl_tensor_free(grad);
    fl_tensor_free(wrong);
    fl_ps_store_free(s);
}

static void test_global_step(void)
{
    fl_ps_store *s = fl_ps_store_new();
    fl_status err = {0};
    fl_tensor *zero = filled(FL_INT32, fl_shape_make(0), 0), *one = filled(FL_INT32, fl_shape_make(0), 1);
    fl_ps_store_init(s, "global_step", zero, &err);
    const char *step[] = {"global_step"};
    fl_attrs none = {0};
    for (int i = 0; i < 5; i++)
        fl_ps_store_run(s, FL_OP_ASSIGN_ADD, &none, step, 1, one, &err);
    ok(fl_tensor_ints(fl_ps_store_get(s, "global_step"))[0] == 5, "five AssignAdds of 1 count to 5");
    fl_tensor *as_float = filled(FL_FLOAT32, fl_shape_make(0), 1);
    ok(fl_ps_store_run(s, FL_OP_ASSIGN_ADD, &none, step, 1, as_float, &err) == -1,
       "a float delta to an int32 step is refused");
    contains(err.message, "global_step is int32", "naming the step's dtype");
    fl_tensor_free(zero);
    fl_tensor_free(one);
    fl_tensor_free(as_float);
    fl_ps_store_free(s);
}

/* A value lent to a reply on its way out keeps its bytes through updates:
 * the update changes a copy, and the lent one is freed with its last loan
 * (ASan's leak check sees the frees). */
static void test_loans(void)
{
    fl_ps_store *s = fl_ps_store_new();
    fl_status err = {0};
    fl_tensor *w = filled(FL_FLOAT32, fl_shape_make(1, 4), 1.0f), *grad = filled(FL_FLOAT32, fl_shape_make(1, 4), 1.0f);
    fl_ps_store_init(s, "w", w, &err);
    const char *just_w[] = {"w"};
    fl_attrs sgd = {.learning_rate = 0.5f};
    const fl_tensor *lent = NULL, *lent_again = NULL;
    ok(fl_ps_store_lend(s, "nothing", &lent) == NULL, "an unknown variable is not lent");
    fl_ps_loan *first = fl_ps_store_lend(s, "w", &lent);
    fl_ps_loan *second = fl_ps_store_lend(s, "w", &lent_again);
    ok(first && first == second && lent == lent_again && lent == fl_ps_store_get(s, "w"),
       "two replies borrow the same value, where it lies");
    ok(fl_ps_store_run(s, FL_OP_APPLY_GRADIENT_DESCENT, &sgd, just_w, 1, grad, &err) == 0,
       "an update runs while the value is lent");
    is_near(fl_tensor_floats(lent)[3], 1.0, 0, "the lent bytes are still the value that was read");
    ok(fl_ps_store_get(s, "w") != lent, "the variable's value is a copy now");
    is_near(fl_tensor_floats(fl_ps_store_get(s, "w"))[3], 0.5, 1e-7, "and the copy was updated");
    fl_ps_store_give_back(first);
    is_near(fl_tensor_floats(lent)[0], 1.0, 0, "one loan back, the other still reads the old value");
    fl_ps_store_give_back(second);

    const fl_tensor *now = fl_ps_store_get(s, "w");
    ok(fl_ps_store_run(s, FL_OP_APPLY_GRADIENT_DESCENT, &sgd, just_w, 1, grad, &err) == 0 &&
           fl_ps_store_get(s, "w") == now,
       "with no loan out, an update is in place again");
    fl_ps_loan *late = fl_ps_store_lend(s, "w", &lent);
    fl_ps_store_free(s);
    is_near(fl_tensor_floats(lent)[0], 0.0, 1e-7, "a value lent when the store is freed lives until its loan ends");
    fl_ps_store_give_back(late);
    fl_tensor_free(w);
    fl_tensor_free(grad);
}

int main(void)
{
    test_init_once();
    test_updates();
    test_global_step();
    test_loans();
    return done_testing();
}
