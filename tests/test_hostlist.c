/* test_hostlist.c: Slurm's compressed host lists expanded (src/cluster/hostlist.c),
 * as SLURM_STEP_NODELIST gives them: plain names, brackets of numbers and
 * ranges, zero padding, text after a bracket, several brackets in a name,
 * and every malformed list refused with a message naming the list. */
#include "flowlab.h"
#include "runtime.h"
#include "cluster/hostlist.h"
#include "tap.h"

/* Expands list and joins the hosts with spaces, or returns "error". */
static const char *expanded(const char *list, char *buf, size_t len)
{
    char **hosts = NULL;
    int n = fl_hostlist_expand(list, &hosts);
    if (n < 0)
        return "error";
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", hosts[i]);
    fl_hostlist_free(hosts, n);
    return buf;
}

static void test_expansions(void)
{
    static const char *const cases[][2] = {
        {"n1", "n1"},
        {"n[1-3,7]", "n1 n2 n3 n7"},
        {"n[1-3,7],login1", "n1 n2 n3 n7 login1"},
        {"login1,n[2-3]", "login1 n2 n3"},
        {"gpu[08-10]", "gpu08 gpu09 gpu10"},
        {"gpu[8-10]", "gpu8 gpu9 gpu10"},
        {"n[001-002,10]", "n001 n002 n10"},
        {"n[5]", "n5"},
        {"n[1-2]-ib", "n1-ib n2-ib"},
        {"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"},
        {"[1-2]", "1 2"},
        {"a,b,c", "a b c"},
        {"node-1.example", "node-1.example"},
    };
    char buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[128];
        snprintf(what, sizeof what, "%s expands to %s", cases[i][0], cases[i][1]);
        is_string(expanded(cases[i][0], buf, sizeof buf), cases[i][1], what);
    }
}

static void test_errors(void)
{
    static const char *const cases[][2] = {
        {"n[1-3", "a '[' without its ']'"},
        {"n1-3]", "a ']' without its '['"},
        {"n[3-1]", "\"3-1\" is not a number or a range"},
        {"n[]", "\"\" is not a number or a range"},
        {"n[1,,2]", "\"\" is not a number or a range"},
        {"n[1-]", "\"1-\" is not a number or a range"},
        {"n[a-b]", "\"a-b\" is not a number or a range"},
        {"n[1-[2]]", "brackets inside brackets"},
        {"n1,,n2", "an empty host name"},
        {"", "an empty host name"},
        {"n[0-99999]", "more than 65536 hosts"},
        {"n[1234567890]", "is not a number or a range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char **hosts = (char **)&hosts; /* must come back NULL */
        int n = fl_hostlist_expand(cases[i][0], &hosts);
        char want[160];
        snprintf(want, sizeof want, "host list \"%s\": ", cases[i][0]);
        ok(n == -1 && !hosts && strncmp(fl_last_error(), want, strlen(want)) == 0 &&
               strstr(fl_last_error(), cases[i][1]),
           "\"%s\" is refused: %s", cases[i][0], fl_last_error());
    }
}

int main(void)
{
    test_expansions();
    test_errors();
    return done_testing();
}
