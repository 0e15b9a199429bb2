/* test_cluster.c: cluster specs (chapter 3) from flags and from TF_CONFIG,
 * every error's exact message, local and remote device strings, and the
 * edge cases of the small JSON reader behind TF_CONFIG. */
#include "tap.h"
#include "flowlab.h"
#include "flowlab_cluster.h"
#include "cluster/json.h" /* the reader itself, for its edge cases */

/* The spec is refused with exactly message. */
static void flags_refused(const char *ps, const char *workers, const char *job, int index,
                          const char *message)
{
    fl_cluster *c = fl_cluster_from_flags(ps, workers, job, index);
    is_string(c ? "(accepted)" : fl_last_error(), message, message);
    fl_cluster_free(c);
}

static void tf_config_refused(const char *json, const char *message)
{
    fl_cluster *c = fl_cluster_from_tf_config(json);
    is_string(c ? "(accepted)" : fl_last_error(), message, message);
    fl_cluster_free(c);
}

static void test_flags(void)
{
    fl_cluster *c = fl_cluster_from_flags("ps0:2222,ps1:2222", "10.0.0.1:2222,10.0.0.2:2223", "worker", 1);
    if (!ok(c != NULL, "flags give a cluster")) {
        diag("%s", fl_last_error());
        return;
    }
    is_string(fl_cluster_job_name(c), "worker", "the local job");
    ok(fl_cluster_task_index(c) == 1, "the local task index");
    ok(fl_cluster_num_tasks(c, "ps") == 2 && fl_cluster_num_tasks(c, "worker") == 2,
       "two ps tasks and two workers");
    ok(fl_cluster_num_tasks(c, "chief") == 0 && fl_cluster_num_tasks(c, "nope") == 0,
       "no chief job, and no job of an unknown name");
    is_string(fl_cluster_task_host(c, "ps", 1), "ps1", "ps task 1's host");
    ok(fl_cluster_task_port(c, "worker", 1) == 2223, "worker task 1's port");
    ok(!fl_cluster_is_chief(c), "worker 1 is not the chief");
    ok(fl_cluster_task_host(c, "worker", 2) == NULL, "there is no worker 2");
    is_string(fl_last_error(), "fl_cluster_task_host: no worker task 2; job worker has 2 tasks (0 and 1)",
              "and the error says which tasks exist");
    ok(fl_cluster_task_port(c, "wroker", 0) == -1, "nor a job \"wroker\"");
    is_string(fl_last_error(), "fl_cluster_task_port: job \"wroker\" is not one of ps, worker, chief",
              "naming the job");
    fl_cluster_free(c);

    c = fl_cluster_from_flags("ps0:2222", "w0:2222", "worker", 0);
    ok(c && fl_cluster_is_chief(c), "without a chief job, worker 0 is the chief");
    fl_cluster_free(c);
    c = fl_cluster_from_flags("ps0:2222", "w0:2222", "ps", 0);
    ok(c && !fl_cluster_is_chief(c), "a ps task is never the chief");
    fl_cluster_free(c);
    c = fl_cluster_from_flags(NULL, "[::1]:2222,[fe80::1%eth0]:2223", "worker", 1);
    ok(c && fl_cluster_num_tasks(c, "ps") == 0, "no --ps_hosts: a cluster of workers");
    is_string(c ? fl_cluster_task_host(c, "worker", 0) : NULL, "::1", "an IPv6 host loses its brackets");
    is_string(c ? fl_cluster_task_host(c, "worker", 1) : NULL, "fe80::1%eth0", "and keeps its zone");
    fl_cluster_free(c);
}

/* Each spec is refused with exactly its message. */
static const struct {
    const char *ps_hosts, *worker_hosts, *job_name;
    int task_index;
    const char *message;
} flag_errors[] = {
    {"ps0:2222", "localhost", "worker", 0,
     "--worker_hosts: \"localhost\" has no \":port\"; write host:port, as in localhost:2222"},
    {"ps0:2222", "w0:2222,:2223", "worker", 0,
     "--worker_hosts: \":2223\" has no host before the \":port\""},
    {"ps0:2222,,ps1:2222", "w0:2222", "worker", 0,
     "--ps_hosts: an empty entry; separate host:port entries with one ',' and no ',' at the ends"},
    {"ps0:2222", "w0:2222,", "worker", 0,
     "--worker_hosts: an empty entry; separate host:port entries with one ',' and no ',' at the ends"},
    {"ps0:2222", "w0:2222, w1:2222", "worker", 0,
     "--worker_hosts: \" w1:2222\": the host is not a host name or an address (IPv6 goes in brackets, as "
     "in [::1]:2222)"},
    {"ps0:2222", "::1:2222", "worker", 0,
     "--worker_hosts: \"::1:2222\": the host is not a host name or an address (IPv6 goes in brackets, as "
     "in [::1]:2222)"},
    {"ps0:http", "w0:2222", "worker", 0,
     "--ps_hosts: \"ps0:http\": the port \"http\" is not a number"},
    {"ps0:2222", "w0:-1", "worker", 0,
     "--worker_hosts: \"w0:-1\": the port \"-1\" is not a number"},
    {"ps0:65536", "w0:2222", "worker", 0,
     "--ps_hosts: \"ps0:65536\": port 65536 is out of range (1 to 65535)"},
    {"ps0:2222", "w0:0", "worker", 0,
     "--worker_hosts: \"w0:0\": port 0 is out of range (1 to 65535)"},
    {"ps0:2222", "w0:99999999999999999999", "worker", 0,
     "--worker_hosts: \"w0:99999999999999999999\": port 99999999999999999999 is out of range (1 to 65535)"},
    {"127.0.0.1:2222", "127.0.0.1:2223,127.0.0.1:2222", "worker", 0,
     "--worker_hosts: \"127.0.0.1:2222\" is also ps task 0"},
    {"ps0:2222", "w0:2222,W0:2222", "worker", 0,
     "--worker_hosts: \"W0:2222\" is also worker task 0"},
    {"ps0:2222", "w0:2222", "wroker", 0,
     "--job_name \"wroker\": not one of ps, worker, chief"},
    {"ps0:2222", "w0:2222", "chief", 0,
     "--job_name \"chief\": the cluster has no chief tasks"},
    {NULL, "w0:2222", "ps", 0,
     "--job_name \"ps\": the cluster has no ps tasks"},
    {"ps0:2222", "w0:2222,w1:2222", "worker", 2,
     "--task_index 2: --worker_hosts lists 2 tasks (0 and 1)"},
    {"ps0:2222", "w0:2222", "ps", -1,
     "--task_index -1: --ps_hosts lists 1 task (only 0)"},
    {"ps0:2222", "w0:1,w1:1,w2:1", "worker", 3,
     "--task_index 3: --worker_hosts lists 3 tasks (0 to 2)"},
    {"ps0:2222", "", "worker", 0,
     "--worker_hosts is empty; list the workers as host:port,host:port"},
    {"ps0:2222", "w0:2222", NULL, 0,
     "--job_name is missing; say which job this task is in: ps or worker"},
};

static void test_flag_errors(void)
{
    for (size_t i = 0; i < sizeof flag_errors / sizeof flag_errors[0]; i++)
        flags_refused(flag_errors[i].ps_hosts, flag_errors[i].worker_hosts, flag_errors[i].job_name,
                      flag_errors[i].task_index, flag_errors[i].message);
}

/* A host of 253 characters (DNS's longest name) is taken; longer ones, up
 * to 100 KB, are refused at once, naming the flag, without the whole name. */
static void test_long_hosts(void)
{
    size_t sizes[] = {253, 254, 100 * 1024};
    for (size_t i = 0; i < 3; i++) {
        char *hosts = malloc(sizes[i] + 8);
        memset(hosts, 'h', sizes[i]);
        strcpy(hosts + sizes[i], ":2222");
        fl_cluster *c = fl_cluster_from_flags(hosts, "w0:2222", "worker", 0);
        if (i == 0)
            ok(c != NULL, "a host of 253 characters is taken %s", c ? "" : fl_last_error());
        else
            ok(!c && strstr(fl_last_error(), "--ps_hosts: the host of \"hhhh") &&
                   strstr(fl_last_error(), "characters long; a host name or address has at most 253") &&
                   strlen(fl_last_error()) < 300,
               "a host of %zu characters is refused, naming the flag: %s", sizes[i], fl_last_error());
        fl_cluster_free(c);
        free(hosts);
    }
    char *json = malloc(100 * 1024 + 200);
    int at = sprintf(json, "{\"cluster\": {\"worker\": [\"");
    memset(json + at, 'h', 100 * 1024);
    sprintf(json + at + 100 * 1024, ":2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
    fl_cluster *c = fl_cluster_from_tf_config(json);
    ok(!c && strstr(fl_last_error(), "TF_CONFIG: \"cluster.worker[0]\": the host of"),
       "so is one in TF_CONFIG, naming its place: %.80s", fl_last_error());
    fl_cluster_free(c);
    free(json);
}

/* The client of in-graph replication across tasks is none of the tasks. */
static void test_client_flags(void)
{
    fl_cluster *c = fl_cluster_client_from_flags("h:2222", "h:2223,h:2224");
    ok(c && fl_cluster_num_tasks(c, "ps") == 1 && fl_cluster_num_tasks(c, "worker") == 2,
       "a client's cluster from the lists alone, no --job_name");
    is_string(c ? fl_cluster_job_name(c) : NULL, "client", "its job name is \"client\"");
    char full[64] = "";
    fl_cluster_device_name(c, "/gpu:0", full, sizeof full);
    is_string(full, "/job:worker/task:0/gpu:0", "what its device strings leave out is worker 0's");
    fl_cluster_free(c);
    c = fl_cluster_client_from_flags("h:2222", "");
    is_string(c ? "(accepted)" : fl_last_error(), "--worker_hosts is empty; list the workers as host:port,host:port",
              "a client still needs workers");
    fl_cluster_free(c);
}

static void test_tf_config(void)
{
    const char *json = "{\"cluster\": {\"chief\": [\"c0:2222\"], \"ps\": [\"p0:2222\", \"p1:2222\"],\n"
                       "             \"worker\": [\"w0:2222\", \"w1:2222\", \"w2:2222\"]},\n"
                       " \"task\": {\"type\": \"worker\", \"index\": 2}, \"environment\": \"cloud\"}";
    fl_cluster *c = fl_cluster_from_tf_config(json);
    if (!ok(c != NULL, "TF_CONFIG gives a cluster")) {
        diag("%s", fl_last_error());
        return;
    }
    is_string(fl_cluster_job_name(c), "worker", "task.type is the local job");
    ok(fl_cluster_task_index(c) == 2, "task.index is the local index");
    ok(fl_cluster_num_tasks(c, "chief") == 1 && fl_cluster_num_tasks(c, "ps") == 2 &&
           fl_cluster_num_tasks(c, "worker") == 3,
       "one chief, two ps tasks, three workers");
    is_string(fl_cluster_task_host(c, "chief", 0), "c0", "the chief's host");
    ok(fl_cluster_task_port(c, "ps", 1) == 2222, "ps task 1's port");
    ok(!fl_cluster_is_chief(c), "a worker is not the chief when a chief job exists");
    fl_cluster_free(c);

    c = fl_cluster_from_tf_config("{\"cluster\": {\"chief\": [\"c0:1\"], \"worker\": [\"w0:1\"]},"
                                  " \"task\": {\"type\": \"chief\", \"index\": 0}}");
    ok(c && fl_cluster_is_chief(c), "the chief task is the chief");
    fl_cluster_free(c);
    c = fl_cluster_from_tf_config("{\"cluster\": {\"chief\": [\"c0:1\"], \"worker\": [\"w0:1\"]},"
                                  " \"task\": {\"type\": \"worker\", \"index\": 0}}");
    ok(c && !fl_cluster_is_chief(c), "and worker 0 then is not");
    fl_cluster_free(c);

    setenv("TF_CONFIG", "{\"cluster\": {\"worker\": [\"w0:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}", 1);
    c = fl_cluster_from_tf_config_env();
    ok(c && fl_cluster_is_chief(c), "TF_CONFIG is read from the environment");
    fl_cluster_free(c);
    unsetenv("TF_CONFIG");
    ok(fl_cluster_from_tf_config_env() == NULL, "an unset TF_CONFIG is an error");
    contains(fl_last_error(), "TF_CONFIG is not set; export it as {\"cluster\"", "that shows the format");
}

/* "task" values, beside a cluster of two workers, and their messages. */
static const struct {
    const char *task, *message;
} task_errors[] = {
    {"null", "TF_CONFIG: \"task\" must be an object, as in {\"type\": \"worker\", \"index\": 0}; got null"},
    {"{\"index\": 0}", "TF_CONFIG: missing \"task.type\", a string: \"ps\", \"worker\" or \"chief\""},
    {"{\"type\": \"worker\"}", "TF_CONFIG: missing \"task.index\", a whole number"},
    {"{\"type\": \"worker\", \"index\": \"0\"}", "TF_CONFIG: \"task.index\" must be a whole number; got a string"},
    {"{\"type\": \"worker\", \"index\": 0.5}", "TF_CONFIG: \"task.index\" must be a whole number; got 0.5"},
    {"{\"type\": \"wroker\", \"index\": 0}", "TF_CONFIG: \"task.type\" \"wroker\": not one of ps, worker, chief"},
    {"{\"type\": \"worker\", \"index\": 2}",
     "TF_CONFIG: \"task.index\" 2: \"cluster.worker\" lists 2 tasks (0 and 1)"},
    {"{\"type\": \"ps\", \"index\": 0}", "TF_CONFIG: \"task.type\" \"ps\": the cluster has no ps tasks"},
};

static void test_tf_config_errors(void)
{
    tf_config_refused("{\"cluster\" {\"worker\": [\"w0:1\"]}}",
                      "TF_CONFIG: at byte 11: expected ':' after key \"cluster\"");
    tf_config_refused("{\"cluster\": {\"worker\": [\"w0:1\"", "TF_CONFIG: at byte 30: unexpected end of input; "
                      "expected ',' or ']' after an array item");
    tf_config_refused("[]", "TF_CONFIG must be a JSON object, {\"cluster\": {\"worker\": [\"host:port\", ...]}, "
                      "\"task\": {\"type\": \"worker\", \"index\": 0}}; got an array");
    tf_config_refused("{\"task\": {\"type\": \"worker\", \"index\": 0}}",
                      "TF_CONFIG: missing \"cluster\", an object of jobs, as in {\"worker\": "
                      "[\"host:port\", ...]}");
    tf_config_refused("{\"cluster\": [\"w0:1\"]}", "TF_CONFIG: \"cluster\" must be an object of jobs, "
                      "as in {\"worker\": [\"host:port\", ...]}; got an array");
    tf_config_refused("{\"cluster\": {\"worker\": \"w0:1\"}}",
                      "TF_CONFIG: \"cluster.worker\" must be an array of \"host:port\" strings; got a string");
    tf_config_refused("{\"cluster\": {\"worker\": [\"w0:1\", 2222]}}",
                      "TF_CONFIG: \"cluster.worker[1]\" must be a \"host:port\" string; got a number");
    tf_config_refused("{\"cluster\": {\"worker\": [\"w0:1\", \"localhost\"]}}",
                      "TF_CONFIG: \"cluster.worker[1]\": \"localhost\" has no \":port\";"
                      " write host:port, as in localhost:2222");
    tf_config_refused("{\"cluster\": {\"ps\": [\"h:1\"], \"worker\": [\"h:2\", \"h:1\"]}}",
                      "TF_CONFIG: \"cluster.worker[1]\": \"h:1\" is also ps task 0");
    tf_config_refused("{\"cluster\": {\"evaluator\": [\"e:1\"]}}",
                      "TF_CONFIG: \"cluster.evaluator\": not one of ps, worker, chief");
    tf_config_refused("{\"cluster\": {\"chief\": [\"c:1\", \"c:2\"]}}",
                      "TF_CONFIG: \"cluster.chief\" lists 2 tasks; a cluster has one chief at most");
    tf_config_refused("{\"cluster\": {\"ps\": [\"p:1\"]}}",
                      "TF_CONFIG: \"cluster\" lists no \"worker\" or \"chief\" task; expected {\"cluster\": "
                      "{\"worker\": [\"host:port\", ...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
    for (size_t i = 0; i < sizeof task_errors / sizeof task_errors[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"cluster\": {\"worker\": [\"w0:1\", \"w1:1\"]}, \"task\": %s}",
                 task_errors[i].task);
        tf_config_refused(json, task_errors[i].message);
    }
}

static void device_is(const fl_cluster *c, const char *device, int local, const char *full)
{
    char name[64] = "";
    int rc = fl_cluster_device_name(c, device, name, sizeof name);
    is_string(rc == 0 ? name : fl_last_error(), full, device);
    ok(fl_cluster_device_is_local(c, device) == local, "%s is %s", device, local ? "local" : "remote");
}

static void test_devices(void)
{
    fl_cluster *c = fl_cluster_from_flags("p0:1,p1:1", "w0:1,w1:1", "worker", 1);
    device_is(c, "/gpu:0", 1, "/job:worker/task:1/gpu:0");
    device_is(c, "", 1, "/job:worker/task:1/cpu:0");
    device_is(c, "/job:worker/task:1/gpu:0", 1, "/job:worker/task:1/gpu:0");
    device_is(c, "/job:worker/device:GPU:2", 1, "/job:worker/task:1/gpu:2");
    device_is(c, "/job:worker/task:0/gpu:0", 0, "/job:worker/task:0/gpu:0");
    device_is(c, "/task:0/cpu:0", 0, "/job:worker/task:0/cpu:0");
    device_is(c, "/job:ps/task:1", 0, "/job:ps/task:1/cpu:0");

    char name[64];
    ok(fl_cluster_device_is_local(c, "/job:ps/cpu:0") == -1, "another job's device must name its task");
    is_string(fl_last_error(), "device \"/job:ps/cpu:0\" names job ps but no task; name one, as in /job:ps/task:0",
              "and the error says so");
    ok(fl_cluster_device_name(c, "/job:ps/task:2/cpu:0", name, sizeof name) == -1,
       "a task out of range is refused");
    is_string(fl_last_error(), "device \"/job:ps/task:2/cpu:0\": no ps task 2; job ps has 2 tasks (0 and 1)",
              "naming the tasks that exist");
    ok(fl_cluster_device_is_local(c, "/job:chief/task:0/cpu:0") == -1, "a job the spec lacks is refused");
    is_string(fl_last_error(), "device \"/job:chief/task:0/cpu:0\": no chief task 0; job chief has no tasks",
              "saying it has no tasks");
    ok(fl_cluster_device_is_local(c, "/gpu:x") == -1, "a malformed device string is refused");
    contains(fl_last_error(), "device string '/gpu:x' does not parse", "with the parser's message");
    char small[8];
    ok(fl_cluster_device_name(c, "/gpu:0", small, sizeof small) == -1,
       "a short buffer is an error, not a cut name");
    fl_cluster_free(c);

    c = fl_cluster_from_flags("p0:1", "w0:1", "ps", 0);
    device_is(c, "/cpu:0", 1, "/job:ps/task:0/cpu:0");
    device_is(c, "/job:worker/task:0/gpu:0", 0, "/job:worker/task:0/gpu:0");
    fl_cluster_free(c);
}

/* ---- the JSON reader ---- */

static void json_refused(const char *text, const char *message)
{
    fl_status err = {0};
    fl_json *v = fl_json_parse(text, &err);
    is_string(v ? "(accepted)" : err.message, message, message);
    fl_json_free(v);
}

static void test_json_values(void)
{
    fl_status err = {0};
    fl_json *v = fl_json_parse(" {\"a\": [1, -0.5e+2, true, false, null, {}, []], \"b\": \"x\"}\n", &err);
    if (!ok(v && v->type == FL_JSON_OBJECT && v->count == 2, "an object of two members")) {
        diag("%s", err.message);
        return;
    }
    const fl_json *a = fl_json_member(v, "a");
    ok(a && a->type == FL_JSON_ARRAY && a->count == 7, "an array of seven items, in order");
    ok(a && a->items[0].number == 1 && a->items[1].number == -50, "numbers with sign, fraction and exponent");
    ok(a && a->items[2].type == FL_JSON_BOOL && a->items[2].boolean && !a->items[3].boolean, "true and false");
    ok(a && a->items[4].type == FL_JSON_NULL && a->items[5].type == FL_JSON_OBJECT && a->items[5].count == 0 &&
           a->items[6].type == FL_JSON_ARRAY,
       "null, an empty object and an empty array");
    ok(fl_json_member(v, "c") == NULL && fl_json_member(a, "a") == NULL,
       "no member c, and an array has no members");
    fl_json_free(v);

    v = fl_json_parse("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u20AC \\ud83d\\ude00\"", &err);
    is_string(v ? v->string : err.message, "q\" b\\ s/ \b\f\n\r\t \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
              "every escape, \\u to UTF-8 and a surrogate pair to one code point");
    fl_json_free(v);

    char deep[2 * FL_JSON_MAX_DEPTH + 1] = "";
    for (int i = 0; i < FL_JSON_MAX_DEPTH; i++)
        deep[i] = '[', deep[2 * FL_JSON_MAX_DEPTH - 1 - i] = ']';
    v = fl_json_parse(deep, &err);
    ok(v != NULL, "%d levels of nesting are allowed", FL_JSON_MAX_DEPTH);
    fl_json_free(v);
}

static void test_json_errors(void)
{
    fl_status err = {0};
    json_refused("", "at byte 0: unexpected end of input; expected a value");
    json_refused(" \n\t", "at byte 3: unexpected end of input; expected a value");
    json_refused("{\"a\": 1} x", "at byte 9: trailing characters after the JSON value");
    json_refused("{\"a\": 1}{}", "at byte 8: trailing characters after the JSON value");
    json_refused("{\"a\": 1,}", "at byte 8: expected a string key in quotes");
    json_refused("[1,]", "at byte 3: expected a value; true, false and null are spelled in lower case");
    json_refused("[1 2]", "at byte 3: expected ',' or ']' after an array item");
    json_refused("{\"a\": 1 \"b\": 2}", "at byte 8: expected ',' or '}' after the value of \"a\"");
    json_refused("{'a': 1}", "at byte 1: expected a string key in quotes");
    json_refused("{\"a\": 1, \"a\": 2}", "at byte 9: duplicate key \"a\"");
    json_refused("[True]", "at byte 1: expected a value; true, false and null are spelled in lower case");
    json_refused("[01]", "at byte 1: a number may not start with 0");
    json_refused("[1.]", "at byte 3: expected a digit after '.'");
    json_refused("[1e+]", "at byte 4: expected a digit in the exponent");
    json_refused("[-]", "at byte 2: expected a digit");
    json_refused("[1e999]", "at byte 1: number out of range");
    json_refused("[0x10]", "at byte 2: expected ',' or ']' after an array item");
    json_refused("\"abc", "at byte 0: unterminated string");
    json_refused("\"a\tb\"", "at byte 2: control character 0x09 in a string; escape it (\\n, \\t, \\u00XX)");
    json_refused("\"\\x\"", "at byte 1: invalid escape; JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t, and \\u with four hex digits");
    json_refused("\"\\u12\"", "at byte 1: \\u needs four hex digits");
    json_refused("\"\\u0000\"", "at byte 1: \\u0000 is not allowed: the strings read here are C strings");
    json_refused("\"\\ud83d\"", "at byte 1: \\uD83D is a high surrogate without a low one after it");
    json_refused("\"\\ude00\"", "at byte 1: \\uDE00 is a low surrogate without a high one before it");

    char deep[2 * FL_JSON_MAX_DEPTH + 3] = "";
    for (int i = 0; i <= FL_JSON_MAX_DEPTH; i++)
        deep[i] = '[', deep[2 * FL_JSON_MAX_DEPTH + 1 - i] = ']';
    json_refused(deep, "at byte 16: nested deeper than 16 levels");

    char *many = malloc(2 * FL_JSON_MAX_ITEMS + 4);
    size_t n = 0;
    many[n++] = '[';
    for (int i = 0; i <= FL_JSON_MAX_ITEMS; i++)
        many[n++] = '0', many[n++] = ',';
    many[n - 1] = ']';
    many[n] = '\0';
    json_refused(many, "at byte 8193: more than 4096 items in one array or object");
    many[2 * FL_JSON_MAX_ITEMS] = ']'; /* in place of the comma after item 4095 */
    many[2 * FL_JSON_MAX_ITEMS + 1] = '\0';
    fl_json *v = fl_json_parse(many, &err);
    ok(v && v->count == FL_JSON_MAX_ITEMS, "%d items are allowed", FL_JSON_MAX_ITEMS);
    fl_json_free(v);
    free(many);

    char *huge = malloc(FL_JSON_MAX_BYTES + 2);
    memset(huge, ' ', FL_JSON_MAX_BYTES + 1);
    huge[0] = '1';
    huge[FL_JSON_MAX_BYTES + 1] = '\0';
    json_refused(huge, "at byte 1048576: longer than 1048576 bytes");
    free(huge);
}

/* Every proper prefix of a document is refused, without a leak or a read
 * past its end (the sanitized build checks both). */
static void test_json_truncated(void)
{
    const char *doc = "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w\\u0041:2\"]}, "
                      "\"task\": {\"type\": \"worker\", \"index\": -0, \"x\": [true, null, 1.5e3]}}";
    size_t len = strlen(doc);
    int refused = 0;
    fl_status err = {0};
    for (size_t n = 0; n < len; n++) {
        char *prefix = malloc(n + 1);
        memcpy(prefix, doc, n);
        prefix[n] = '\0';
        fl_json *v = fl_json_parse(prefix, &err);
        refused += v == NULL;
        fl_json_free(v);
        free(prefix);
    }
    ok(refused == (int)len, "all %zu truncations of a document are refused", len);
    fl_json *v = fl_json_parse(doc, &err);
    ok(v != NULL, "and the whole document is read");
    fl_json_free(v);
}

int main(void)
{
    test_flags();
    test_flag_errors();
    test_long_hosts();
    test_client_flags();
    test_tf_config();
    test_tf_config_errors();
    test_devices();
    test_json_values();
    test_json_errors();
    test_json_truncated();
    return done_testing();
}
