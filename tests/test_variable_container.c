/* test_variable_container.c: a task's variables live in one container
 * (TensorFlow's ResourceMgr, issue 36 item 2): sessions of different
 * graphs given the same container share each host variable by name. One
 * initialises w and another reads it without initialising; an update by
 * one is seen by the other and outlives the session that made it; a graph
 * that gives w another shape is refused, naming it; and two threads adding
 * to w 2 x ADDS times lose no update (the container's lock). */
#include <pthread.h>

#include "runtime.h"
#include "session_access.h"
#include "tap.h"
#include "variable_container.h"

#define ADDS 300

typedef struct {
    fl_graph *g;
    fl_session *s;
    fl_node *w, *init, *add;
} task_graph;

/* w [2] = 1 (its initializer), and add: w += 1. */
static void build(task_graph *t, fl_variable_container *c, int dims)
{
    t->g = fl_graph_new();
    t->w = fl_get_variable(t->g, "w", fl_shape_make(1, dims), fl_constant_initializer(1.0f));
    t->init = fl_global_variables_initializer(t->g);
    fl_tensor *one = fl_tensor_new(FL_FLOAT32, fl_shape_make(1, dims));
    for (int i = 0; i < dims; i++)
        ((float *)one->data)[i] = 1.0f;
    t->add = fl_assign_add(t->g, t->w, fl_constant(t->g, one, "one"), "add");
    fl_tensor_free(one);
    t->s = fl_session_new(t->g, NULL);
    fl_session_set_variable_container(t->s, c);
}

static void drop(task_graph *t)
{
    fl_session_free(t->s);
    fl_graph_free(t->g);
}

/* w's first element as t's session reads it; -1 when the read fails. */
static float read_w(task_graph *t)
{
    fl_tensor *out = NULL;
    if (fl_session_run(t->s, NULL, 0, &t->w, 1, &out, NULL, 0) != 0)
        return -1;
    float v = ((float *)out->data)[0];
    fl_tensor_free(out);
    return v;
}

static void test_sharing(fl_variable_container *c)
{
    task_graph a, b;
    build(&a, c, 2);
    build(&b, c, 2);
    ok(fl_session_run(b.s, NULL, 0, NULL, 0, NULL, &b.add, 1) != 0, "before anyone initialises w, updating it fails");
    contains(fl_session_error(b.s), "reads variable w before it is initialized", "naming w");
    ok(fl_session_run(a.s, NULL, 0, NULL, 0, NULL, &a.init, 1) == 0, "session a initialises w: %s",
       fl_session_error(a.s));
    is_near(read_w(&b), 1, 0, "session b reads a's value without initialising it");
    ok(fl_session_run(b.s, NULL, 0, NULL, 0, NULL, &b.add, 1) == 0, "session b adds 1: %s", fl_session_error(b.s));
    is_near(read_w(&a), 2, 0, "and session a sees the update");
    drop(&a);
    drop(&b);
    task_graph later;
    build(&later, c, 2);
    is_near(read_w(&later), 2, 0, "w outlives the sessions that made and updated it");
    ok(fl_variable_container_count(c) == 1, "the container holds one w (got %d)", fl_variable_container_count(c));
    ok(fl_variable_container_has_value(c, "w") && !fl_variable_container_has_value(c, "v"),
       "it says w has a value and v, which it does not hold, none");
    drop(&later);
}

static void test_other_shape(fl_variable_container *c)
{
    task_graph odd;
    build(&odd, c, 3);
    ok(read_w(&odd) < 0, "a graph whose w is [3] cannot use the [2] one");
    contains(fl_session_error(odd.s), "variable w already lives on this task as float32 [2], not float32 [3]",
             "the refusal names the variable and both shapes");
    drop(&odd);
}

static void *add_many(void *arg)
{
    task_graph *t = arg;
    for (int i = 0; i < ADDS; i++)
        if (fl_session_run(t->s, NULL, 0, NULL, 0, NULL, &t->add, 1) != 0)
            return (void *)fl_session_error(t->s);
    return NULL;
}

static void test_two_threads(fl_variable_container *c)
{
    task_graph t[2];
    pthread_t threads[2];
    build(&t[0], c, 2);
    build(&t[1], c, 2);
    float before = read_w(&t[0]);
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, add_many, &t[i]);
    for (int i = 0; i < 2; i++) {
        void *why = NULL;
        pthread_join(threads[i], &why);
        ok(why == NULL, "thread %d's %d updates ran: %s", i, ADDS, why ? (const char *)why : "yes");
    }
    is_near(read_w(&t[0]), before + 2 * ADDS, 0, "two threads' updates of w: none lost");
    drop(&t[0]);
    drop(&t[1]);
}

int main(void)
{
    fl_variable_container *c = fl_variable_container_new();
    test_sharing(c);
    test_other_shape(c);
    test_two_threads(c);
    fl_variable_container_free(c);
    return done_testing();
}
