/* saver_tasks.c: the saver of a session whose variables live on a
 * cluster's tasks, as TensorFlow's Saver (not sharded) works there: the
 * values travel through the master's pieces. A save fetches every variable
 * in one run; a restore feeds each variable's initial value (its
 * initializer's input) with the saved one and runs the initializers, so
 * every Assign runs beside its variable, on its task. */
#include <stdlib.h>

#include "saver_tasks.h"
#include "session_access.h"

int fl_saver_read_from_tasks(fl_session *s, fl_node *const *vars, int n, fl_tensor **values)
{
    if (fl_session_run(s, NULL, 0, vars, n, values, NULL, 0) != 0)
        return fl_session_fail(s, "saving the variables from their tasks: %s", fl_last_error());
    return 0;
}

int fl_saver_write_to_tasks(fl_session *s, fl_node *const *vars, const fl_tensor *const *values, int n)
{
    fl_feed *feeds = fl_xcalloc((size_t)(n ? n : 1), sizeof *feeds);
    fl_node **assigns = fl_xcalloc((size_t)(n ? n : 1), sizeof *assigns);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        assigns[i] = vars[i]->initializer;
        if (!assigns[i] || assigns[i]->ninputs != 2)
            rc = fl_session_fail_code(s, FL_INVALID_ARGUMENT, "restoring %s: it has no initializer, whose Assign "
                                      "the restore runs on its task", vars[i]->name);
        else
            feeds[i] = (fl_feed){assigns[i]->inputs[1], values[i]};
    }
    if (rc == 0 && fl_session_run(s, feeds, n, NULL, 0, NULL, assigns, n) != 0)
        rc = fl_session_fail(s, "restoring the variables on their tasks: %s", fl_last_error());
    free(feeds);
    free(assigns);
    return rc;
}
