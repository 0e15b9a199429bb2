/* test_pictures.c: the graph as DOT, every node (fl_graph_write_dot,
 * fl_session_write_dot) or one box per name scope (fl_*_write_dot_with), and a
 * run's timeline as Chrome trace JSON (fl_session_write_trace). Checks the
 * text itself, then asks dot and python3 when they are installed. */
#include <unistd.h>

#include "tap.h"
#include "tools.h"
#include "flowlab.h"
#include "session_internal.h" /* to pretend a node ran on a second device */

typedef struct {
    fl_graph *g;
    fl_node *x, *w, *mm[2], *total, *unused;
} towers;

/* w on /cpu:0; tower_0 on /gpu:0 and tower_1 on /gpu:1 each compute
 * sum(relu(x w)); tower_1 waits for tower_0 through a control edge. */
static towers build_towers(void)
{
    towers t = {.g = fl_graph_new()};
    t.x = fl_placeholder(t.g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_device_scope_push(t.g, "/cpu:0");
    t.w = fl_get_variable(t.g, "w", fl_shape_make(2, 3, 4), fl_glorot_uniform_initializer(1));
    fl_device_pop(t.g);
    fl_node *sums[2];
    for (int i = 0; i < 2; i++) {
        char scope[16], device[16];
        snprintf(scope, sizeof scope, "tower_%d", i);
        snprintf(device, sizeof device, "/gpu:%d", i);
        fl_name_scope_push(t.g, scope);
        fl_device_scope_push(t.g, device);
        t.mm[i] = fl_matmul(t.g, t.x, t.w, false, false, NULL);
        sums[i] = fl_reduce_sum(t.g, fl_relu(t.g, t.mm[i], NULL), NULL, 0, false, NULL);
        fl_device_pop(t.g);
        fl_name_scope_pop(t.g);
    }
    fl_add_control_input(t.g, t.mm[1], sums[0]);
    t.total = fl_add(t.g, sums[0], sums[1], "total");
    t.unused = fl_identity(t.g, t.x, "unused");
    if (fl_graph_error(t.g))
        diag("graph error: %s", fl_graph_error(t.g));
    return t;
}

/* The fillcolor on the line holding key, into out ("" if none). */
static const char *fill_of(const char *dot, const char *key, char *out, size_t len)
{
    out[0] = '\0';
    const char *at = dot ? strstr(dot, key) : NULL;
    const char *end = at ? strchr(at, '\n') : NULL;
    const char *fill = at ? strstr(at, "fillcolor=\"") : NULL;
    if (!fill || (end && fill > end))
        return out;
    fill += strlen("fillcolor=\"");
    size_t n = strcspn(fill, "\"");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), fill);
    return out;
}

/* The legend gives /gpu:0, /gpu:1 and /cpu:0 three colours, and the nodes
 * (or boxes) whose lines hold the three keys wear them, in that order. */
static bool coloured_by_device(const char *dot, const char *on_gpu0, const char *on_gpu1, const char *on_cpu)
{
    const char *legend[] = {"label=\"/gpu:0\"", "label=\"/gpu:1\"", "label=\"/cpu:0\""};
    const char *keys[] = {on_gpu0, on_gpu1, on_cpu};
    char want[3][32], got[32];
    for (int i = 0; i < 3; i++) {
        fill_of(dot, legend[i], want[i], sizeof want[i]);
        fill_of(dot, keys[i], got, sizeof got);
        if (!want[i][0] || strcmp(got, want[i]) != 0) {
            diag("%s: fill '%s', its device's legend '%s'", keys[i], got, want[i]);
            return false;
        }
    }
    return strcmp(want[0], want[1]) && strcmp(want[0], want[2]) && strcmp(want[1], want[2]);
}

static int count_of(const char *text, const char *part)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, part)); p += strlen(part))
        n++;
    return n;
}

static void check_dot_accepts(const char *path)
{
    if (!have("dot")) {
        skip("dot -Tsvg accepts the file", "graphviz (dot) is not installed");
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o '%s.svg'", path, path);
    ok(system(cmd) == 0, "dot -Tsvg accepts the file");
    snprintf(cmd, sizeof cmd, "%s.svg", path);
    unlink(cmd);
}

static void check_graph_dot(const towers *t, const char *path)
{
    ok(fl_graph_write_dot(t->g, path) == 0, "fl_graph_write_dot writes %s", path);
    char *dot = read_text(path);
    contains(dot, "digraph", "it is a digraph");
    contains(dot, "subgraph \"cluster_tower_0\"", "tower_0 is a cluster");
    contains(dot, "subgraph \"cluster_tower_1\"", "tower_1 is a cluster");
    contains(dot, "label=\"w\\nVariableV2 float32 [3,4]\", shape=cylinder", "the variable shows its shape, as a cylinder");
    contains(dot, "label=\"x\\nPlaceholder float32 [?,3]\", shape=invhouse", "the placeholder has its own shape");
    ok(coloured_by_device(dot, "label=\"tower_0/MatMul\\n", "label=\"tower_1/MatMul\\n", "label=\"w\\n"),
       "the legend gives /gpu:0, /gpu:1 and /cpu:0 three colours, and nodes their requested device's");
    char edge[64];
    snprintf(edge, sizeof edge, "-> n%d [style=dashed", t->mm[1]->id);
    contains(dot, edge, "the control edge into tower_1/MatMul is dashed");
    contains(dot, "subgraph \"cluster_w\" {\n    label=\"w\"; style=rounded; color=gray40;\n    n1 [label=\"w\\n",
             "the variable w shares a box with w/Initializer and w/Assign");
    ok(!strstr(dot, "Copy"), "a graph picture marks no copies");
    free(dot);
    check_dot_accepts(path);
}

static void check_session_dot(const towers *t, fl_session *s, const char *path)
{
    ok(fl_session_write_dot(s, path) == 0, "fl_session_write_dot writes %s", path);
    char *dot = read_text(path);
    char cpu[32], mm0[32];
    fill_of(dot, "label=\"/cpu:0\"", cpu, sizeof cpu);
    fill_of(dot, "label=\"tower_0/MatMul\\n", mm0, sizeof mm0);
    ok(cpu[0] && !strcmp(mm0, cpu), "tower_0/MatMul is coloured as /cpu:0, where it ran");
    ok(!strstr(dot, "/gpu:0\""), "no /gpu:0 in the legend: nothing ran there");
    contains(dot, "label=\"not run\"", "the legend has nodes that did not run");
    contains(dot, "label=\"unused\\nIdentity float32 [?,3]\", shape=ellipse, fillcolor=\"white\", "
                  "style=\"filled,dashed\"", "an unused node is drawn white and dashed");
    ok(!strstr(dot, "Copy"), "one device: no copies");
    free(dot);

    /* No second device exists here, so pretend tower_0/MatMul ran on one. */
    fl_device fake = *s->slots[t->mm[0]->id].device;
    fl_device *real = s->slots[t->mm[0]->id].device;
    snprintf(fake.name, sizeof fake.name, "/gpu:7");
    s->slots[t->mm[0]->id].device = &fake;
    fl_session_write_dot(s, path);
    s->slots[t->mm[0]->id].device = real;
    dot = read_text(path);
    char edge[96];
    snprintf(edge, sizeof edge, "n%d -> c%d_1 [color=red", t->x->id, t->x->id); /* /gpu:7 is colour 1 */
    contains(dot, edge, "an edge between devices goes through a Copy node");
    snprintf(edge, sizeof edge, "c%d_1 -> n%d [color=red", t->x->id, t->mm[0]->id);
    contains(dot, edge, "and on to the node that reads the value");
    contains(dot, "label=\"Copy\\n/cpu:0 -> /gpu:7\", shape=box", "which says from where to where");
    ok(count_of(dot, "label=\"Copy") == 3, "x, w and the Relu edges of the moved node: 3 Copy nodes");
    free(dot);

    /* Both towers' MatMuls on /gpu:7: each reads x and w there, and the
     * session copies each value once per device, so x and w get one Copy
     * node each, with two edges out. */
    fl_device *real1 = s->slots[t->mm[1]->id].device;
    s->slots[t->mm[0]->id].device = &fake;
    s->slots[t->mm[1]->id].device = &fake;
    fl_session_write_dot(s, path);
    s->slots[t->mm[0]->id].device = real;
    s->slots[t->mm[1]->id].device = real1;
    dot = read_text(path);
    ok(count_of(dot, "label=\"Copy") == 4, "x and w once each to /gpu:7, the two MatMuls back: 4 Copy nodes (got %d)",
       count_of(dot, "label=\"Copy"));
    snprintf(edge, sizeof edge, "c%d_1 -> n%d [color=red", t->w->id, t->mm[1]->id);
    contains(dot, edge, "w's one copy feeds the second MatMul too");
    free(dot);
    check_dot_accepts(path);
}

/* The scope picture of the towers: a box per tower in its device's colour,
 * the variable's box, shapes on the edges, no node drawn alone but x. */
static void check_scopes_dot(const towers *t, const char *path)
{
    ok(fl_graph_write_dot_with(t->g, path, NULL) == 0, "fl_graph_write_dot_with writes scopes by default");
    char *dot = read_text(path);
    contains(dot, "label=\"tower_0\\n3 ops\", shape=box", "tower_0 is one box of 3 ops");
    contains(dot, "label=\"tower_1\\n3 ops\", shape=box", "tower_1 is one box of 3 ops");
    contains(dot, "label=\"w\\n3 ops\", shape=box", "w, its Initializer and its Assign are one box");
    ok(dot && !strstr(dot, "tower_0/MatMul"), "no node of a scope is drawn alone");
    ok(coloured_by_device(dot, "label=\"tower_0\\n", "label=\"tower_1\\n", "label=\"w\\n"),
       "each box takes its device's colour: the towers /gpu:0's and /gpu:1's, w /cpu:0's");
    contains(dot, "[label=\"[3,4]\", weight=4]", "the edge from w to a tower carries w's shape");
    ok(count_of(dot, "[label=\"[3,4]\"") == 2, "one edge from w into each tower");
    free(dot);
    check_dot_accepts(path);

    fl_dot_options nodes = {.detail = FL_DOT_NODES};
    ok(fl_graph_write_dot_with(t->g, path, &nodes) == 0, "FL_DOT_NODES writes %s", path);
    dot = read_text(path);
    int drawn = 0;
    for (int id = 0; id < fl_graph_node_count(t->g); id++) {
        char node[32];
        snprintf(node, sizeof node, "    n%d [label=", id);
        drawn += dot && strstr(dot, node) != NULL;
    }
    ok(drawn == fl_graph_node_count(t->g), "FL_DOT_NODES draws every node (%d of %d)", drawn,
       fl_graph_node_count(t->g));
    free(dot);
    fl_dot_options bad = {.detail = (fl_dot_detail)7};
    ok(fl_graph_write_dot_with(t->g, path, &bad) == -1, "an unknown detail is refused");
    contains(fl_last_error(), "FL_DOT_SCOPES or FL_DOT_NODES", "the error says what is allowed");
}

/* net/layer_a and net/layer_b, differentiated: depth 2 frames net around a
 * box per layer; the gradients stay one box at any depth. */
static void check_scope_depth(const char *path)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *w = fl_get_variable(g, "w", fl_shape_make(2, 3, 3), fl_glorot_uniform_initializer(1));
    fl_name_scope_push(g, "net");
    fl_name_scope_push(g, "layer_a");
    fl_node *y = fl_matmul(g, x, w, false, false, NULL);
    fl_name_scope_pop(g);
    fl_name_scope_push(g, "layer_b");
    y = fl_reduce_sum(g, fl_relu(g, y, NULL), NULL, 0, false, NULL);
    fl_name_scope_pop(g);
    fl_name_scope_pop(g);
    fl_node *grad = NULL;
    fl_gradients(g, y, &w, 1, &grad);
    fl_dot_options deep = {.scope_depth = 3};
    ok(fl_graph_write_dot_with(g, path, &deep) == 0, "scope_depth 3 writes %s", path);
    char *dot = read_text(path);
    contains(dot, "subgraph \"cluster_net\"", "depth 3: net is a frame");
    contains(dot, "label=\"layer_a\\n1 op\", shape=box", "around a box for layer_a");
    contains(dot, "label=\"layer_b\\n2 ops\", shape=box", "and one for layer_b");
    contains(dot, "label=\"gradients\\n", "the gradients are one box");
    ok(dot && !strstr(dot, "cluster_gradients"), "even three levels deep");
    free(dot);
    check_dot_accepts(path);
    ok(fl_graph_write_dot_with(g, path, &(fl_dot_options){.scope_depth = 1}) == 0, "scope_depth 1 writes %s", path);
    dot = read_text(path);
    contains(dot, "label=\"net\\n3 ops\", shape=box", "depth 1: net is one box");
    ok(dot && !strstr(dot, "cluster_net"), "and no frame");
    free(dot);
    fl_graph_free(g);
}

/* tower_0/MatMul moved to a pretend /gpu:7: x's edge into tower_0 is a copy. */
static void check_session_scopes(const towers *t, fl_session *s, const char *path)
{
    fl_device fake = *s->slots[t->mm[0]->id].device;
    fl_device *real = s->slots[t->mm[0]->id].device;
    snprintf(fake.name, sizeof fake.name, "/gpu:7");
    s->slots[t->mm[0]->id].device = &fake;
    ok(fl_session_write_dot_with(s, path, NULL) == 0, "fl_session_write_dot_with writes %s", path);
    s->slots[t->mm[0]->id].device = real;
    char *dot = read_text(path);
    contains(dot, "[label=\"copy [?,3]\", color=red", "x's edge into tower_0 is a red copy with its shape");
    contains(dot, "label=\"tower_0\\n3 ops\", shape=box, penwidth=2, fillcolor=\"", "tower_0 is drawn");
    char fill[64];
    fill_of(dot, "label=\"tower_0\\n", fill, sizeof fill);
    ok(strchr(fill, ':') && strstr(dot, "style=\"striped\""), "ops on two devices: a striped box (%s)", fill);
    contains(dot, "label=\"unused\\nIdentity\", shape=ellipse, fillcolor=\"white\", style=\"filled,dashed\"",
             "a lone node that never ran is white and dashed");
    free(dot);
    check_dot_accepts(path);
}

/* Balanced braces and brackets outside strings, escapes honoured. */
static bool json_balanced(const char *text)
{
    char stack[256];
    int depth = 0;
    bool in_string = false;
    for (const char *c = text; *c; c++) {
        if (in_string) {
            if (*c == '\\' && c[1])
                c++;
            else if (*c == '"')
                in_string = false;
        } else if (*c == '"') {
            in_string = true;
        } else if (*c == '{' || *c == '[') {
            if (depth == (int)sizeof stack)
                return false;
            stack[depth++] = *c == '{' ? '}' : ']';
        } else if (*c == '}' || *c == ']') {
            if (depth == 0 || stack[--depth] != *c)
                return false;
        }
    }
    return depth == 0 && !in_string && text[0] == '{';
}

static void check_json_tool(const char *path)
{
    if (!have("python3")) {
        skip("python3 -m json.tool parses the trace", "python3 is not installed");
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s' >/dev/null", path);
    ok(system(cmd) == 0, "python3 -m json.tool parses the trace");
}

/* x [2,3] times a constant [3,2], relu, sum: three ops each run. */
static void check_trace(const char *path)
{
    fl_graph *g = fl_graph_new();
    const float ones[6] = {1, 1, 1, 1, 1, 1};
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, 2, 3), ones);
    fl_tensor *wt = fl_tensor_from_floats(fl_shape_make(2, 3, 2), ones);
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(2, -1, 3), "x");
    fl_node *sum = fl_reduce_sum(g, fl_relu(g, fl_matmul(g, x, fl_constant(g, wt, "w"), false, false, NULL), NULL), NULL, 0, false, "sum");
    fl_session *s = fl_session_new(g, NULL);
    fl_feed feed = {x, xt};
    fl_tensor *out = NULL;
    fl_session_set_tracing(s, true);
    for (int i = 0; i < 3; i++) {
        fl_session_run(s, &feed, 1, &sum, 1, &out, NULL, 0);
        fl_tensor_free(out);
    }
    fl_session_set_tracing(s, false);
    fl_session_run(s, &feed, 1, &sum, 1, &out, NULL, 0); /* not traced */
    fl_tensor_free(out);
    ok(fl_session_write_trace(s, path) == 0, "fl_session_write_trace writes %s", path);
    char *json = read_text(path);
    ok(json && json_balanced(json), "the trace's braces and brackets balance outside strings");
    check_json_tool(path);
    contains(json, "{\"traceEvents\":[", "it is a traceEvents object");
    ok(count_of(json, "\"ph\":\"X\"") == 9, "one X event per op run: 3 ops x 3 traced runs (got %d)",
       count_of(json, "\"ph\":\"X\""));
    contains(json, "{\"name\":\"MatMul\",\"cat\":\"MatMul\",\"ph\":\"X\",\"pid\":1,\"tid\":1,",
             "an X event names the node and its op");
    contains(json, "\"args\":{\"op\":\"Sum\",\"device\":\"/cpu:0\"}", "its args say op and device");
    contains(json, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"/cpu:0\"}}",
             "the lane is named after its device");
    free(json);

    fl_session_set_tracing(s, true); /* a fresh timeline */
    fl_session_run(s, &feed, 1, &sum, 1, &out, NULL, 0);
    fl_tensor_free(out);
    fl_session_write_trace(s, path);
    json = read_text(path);
    ok(count_of(json, "\"ph\":\"X\"") == 3, "turning tracing on again starts a fresh timeline");
    free(json);
    fl_session_free(s);
    fl_graph_free(g);
    fl_tensor_free(xt);
    fl_tensor_free(wt);
}

static void check_bad_path(const towers *t)
{
    ok(fl_graph_write_dot(t->g, "/nonexistent-dir/g.dot") == -1, "a DOT file that cannot be made: -1");
    contains(fl_last_error(), "/nonexistent-dir/g.dot", "the error names the file");
}

int main(void)
{
    /* Accelerators off: the towers' /gpu:N fall back to /cpu:0 everywhere. */
    setenv("FLOWLAB_BACKEND", "host", 1);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/test_pictures.XXXXXX");
    if (!mkdtemp(dir))
        skip_all("cannot make a temporary directory");
    char graph_dot[96], session_dot[96], trace[96];
    snprintf(graph_dot, sizeof graph_dot, "%s/graph.dot", dir);
    snprintf(session_dot, sizeof session_dot, "%s/session.dot", dir);
    snprintf(trace, sizeof trace, "%s/trace.json", dir);

    towers t = build_towers();
    check_graph_dot(&t, graph_dot);
    check_scopes_dot(&t, graph_dot);
    check_scope_depth(graph_dot);
    fl_session_options opt = {.allow_soft_placement = true};
    fl_session *s = fl_session_new(t.g, &opt);
    fl_node *init = fl_global_variables_initializer(t.g);
    const float xs[6] = {1, 2, 3, 4, 5, 6};
    fl_tensor *xt = fl_tensor_from_floats(fl_shape_make(2, 2, 3), xs), *out = NULL;
    fl_feed feed = {t.x, xt};
    if (fl_session_run(s, NULL, 0, NULL, 0, NULL, &init, 1) != 0 ||
        fl_session_run(s, &feed, 1, &t.total, 1, &out, NULL, 0) != 0)
        diag("run failed: %s", fl_session_error(s));
    check_session_dot(&t, s, session_dot);
    check_session_scopes(&t, s, session_dot);
    check_trace(trace);
    check_bad_path(&t);

    fl_tensor_free(out);
    fl_tensor_free(xt);
    fl_session_free(s);
    fl_graph_free(t.g);
    unlink(graph_dot);
    unlink(session_dot);
    unlink(trace);
    ok(rmdir(dir) == 0, "no temporary files were left behind");
    return done_testing();
}
