/* test_op_checklist.c: the add-an-op checklist of README's map, checked for
 * every op kind: a definition with a shape rule, a gradient rule or a stated
 * reason for none, and a kernel or a stated reason in every backend this
 * build found (host, OpenCL, the CUDA module). */
#include "backend_entry.h"
#include "tap.h"

/* The one place this test reads a backend's table. */
static bool backend_has_kernel(const fl_backend *b, fl_op_kind op) { return b->has_kernel(op); }

static const char *type_of(fl_op_kind op)
{
    const fl_op_def *def = fl_op_def_of(op);
    return def && def->type ? def->type : "(no definition)";
}

/* A rule or a reason, never both: a reason beside a rule is out of date. */
static void check_gradient(fl_op_kind op)
{
    const fl_op_def *def = fl_op_def_of(op);
    const char *why = fl_op_why_no_gradient(op);
    bool has_rule = def && def->gradient;
    if (!ok(has_rule != (why != NULL), "%s: a gradient rule or a stated reason for none", type_of(op)))
        diag(has_rule ? "it has a rule: remove its line from why_no_gradient in src/op_registry.c"
                      : "write its gradient rule beside its definition, or say why it has none "
                        "in why_no_gradient in src/op_registry.c");
}

static void check_kernel(const char *backend_name, const fl_backend *b, fl_op_kind op)
{
    const char *why = fl_op_why_no_kernel(op);
    if (fl_op_why_kernel_optional(op)) { /* a fused op: the session fuses only where it may */
        ok(why == NULL, "%s: optional in the %s backend (%s), %s", type_of(op), backend_name,
           fl_op_why_kernel_optional(op), backend_has_kernel(b, op) ? "which has it" : "which fuses none");
        return;
    }
    bool has = backend_has_kernel(b, op);
    if (!ok(has != (why != NULL), "%s: a kernel in the %s backend or a stated reason for none", type_of(op),
            backend_name))
        diag(has ? "it has a kernel: remove its line from why_no_kernel in src/op_registry.c"
                 : "add the kernel to the backend's table, or say why none is needed in "
                   "why_no_kernel in src/op_registry.c");
}

/* Each backend the build found: a linked table as it is, a module's opened
 * here without asking for a driver (loading CUDA's libraries needs no GPU). */
static const fl_backend *backends[8];
static int nbackends;

static void find_backends(void)
{
    backends[nbackends++] = &fl_host_backend;
    for (int i = 0; fl_backend_entries[i] && nbackends < 8; i++) {
        const fl_backend_entry *e = fl_backend_entries[i];
        char why[FL_ERROR_LEN] = "";
        const fl_backend *b = e->linked ? e->linked : fl_backend_module_open(e, why, sizeof why);
        if (!ok(b != NULL, "the %s backend's table is there to check", e->name))
            diag("%s", why);
        if (b)
            backends[nbackends++] = b;
    }
}

static void check_op(fl_op_kind op)
{
    const fl_op_def *def = fl_op_def_of(op);
    if (!ok(def && def->type && def->type[0], "op %d has a definition with a type name", (int)op))
        diag("add its fl_def_* to op_table in src/op_registry.c");
    ok(def && def->infer, "%s: a shape rule", type_of(op));
    check_gradient(op);
    for (int i = 0; i < nbackends; i++)
        check_kernel(backends[i]->name, backends[i], op);
}

int main(void)
{
    find_backends();
    for (int op = 0; op < FL_OP_COUNT; op++)
        check_op((fl_op_kind)op);
    /* A backend that is not built has no table to check: say which were. */
    diag("backends built: %d besides the host (src/backends.mk)", nbackends - 1);
    return done_testing();
}
