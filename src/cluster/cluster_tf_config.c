/* cluster_tf_config.c: a cluster spec from TensorFlow's TF_CONFIG variable,
 *   {"cluster": {"ps": ["h:p", ...], "worker": [...], "chief": [...]},
 *    "task": {"type": "worker", "index": 0}}
 * read with the small JSON reader in json.c. Messages name the key at fault. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "json.h"

static const fl_cluster_spelling tf_config_spelling = {
    .job_key = "TF_CONFIG: \"task.type\"",
    .index_key = "TF_CONFIG: \"task.index\"",
    .list_key = {"\"cluster.ps\"", "\"cluster.worker\"", "\"cluster.chief\""},
};

#define TF_CONFIG_EXAMPLE \
    "{\"cluster\": {\"worker\": [\"host:port\", ...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}"

/* One job's list: "cluster.worker": ["h:1", "h:2"]. */
static int add_job(fl_cluster *c, const char *name, const fl_json *list)
{
    int job = fl_job_from_name(name);
    if (job < 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "TF_CONFIG: \"cluster.%s\": not one of ps, worker, chief", name);
        return -1;
    }
    if (list->type != FL_JSON_ARRAY) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "TF_CONFIG: \"cluster.%s\" must be an array of \"host:port\" strings; got %s", name,
                          fl_json_type_name(list->type));
        return -1;
    }
    for (int i = 0; i < list->count; i++) {
        char where[96];
        snprintf(where, sizeof where, "TF_CONFIG: \"cluster.%s[%d]\"", name, i);
        if (list->items[i].type != FL_JSON_STRING) {
            fl_set_error_code(FL_INVALID_ARGUMENT, "%s must be a \"host:port\" string; got %s", where,
                              fl_json_type_name(list->items[i].type));
            return -1;
        }
        if (fl_cluster_add_task(c, (fl_job)job, list->items[i].string, where) != 0)
            return -1;
    }
    return 0;
}

/* The member key of object, of the given type; path and what name it in
 * errors ("task.type", "a string"). */
static const fl_json *require(const fl_json *object, const char *key, fl_json_type type,
                              const char *path, const char *what)
{
    const fl_json *v = fl_json_member(object, key);
    if (!v) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "TF_CONFIG: missing \"%s\", %s", path, what);
        return NULL;
    }
    if (v->type != type) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "TF_CONFIG: \"%s\" must be %s; got %s", path, what, fl_json_type_name(v->type));
        return NULL;
    }
    return v;
}

static int read_cluster(fl_cluster *c, const fl_json *root)
{
    const fl_json *cluster = require(root, "cluster", FL_JSON_OBJECT, "cluster",
                                     "an object of jobs, as in {\"worker\": [\"host:port\", ...]}");
    if (!cluster)
        return -1;
    for (int i = 0; i < cluster->count; i++)
        if (add_job(c, cluster->keys[i], &cluster->items[i]) != 0)
            return -1;
    if (c->num_tasks[FL_JOB_CHIEF] > 1) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "TF_CONFIG: \"cluster.chief\" lists %d tasks; a cluster has one chief at most",
                          c->num_tasks[FL_JOB_CHIEF]);
        return -1;
    }
    if (c->num_tasks[FL_JOB_WORKER] + c->num_tasks[FL_JOB_CHIEF] == 0) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "TF_CONFIG: \"cluster\" lists no \"worker\" or \"chief\" task; expected %s",
                          TF_CONFIG_EXAMPLE);
        return -1;
    }
    return 0;
}

/* "task": {"type": "worker", "index": 0}, checked against the cluster. */
static int read_task(fl_cluster *c, const fl_json *root)
{
    const fl_json *task = require(root, "task", FL_JSON_OBJECT, "task",
                                  "an object, as in {\"type\": \"worker\", \"index\": 0}");
    const fl_json *type = task ? require(task, "type", FL_JSON_STRING, "task.type",
                                         "a string: \"ps\", \"worker\" or \"chief\"")
                               : NULL;
    const fl_json *index = type ? require(task, "index", FL_JSON_NUMBER, "task.index", "a whole number")
                                : NULL;
    if (!index)
        return -1;
    if (index->number != floor(index->number) || fabs(index->number) > INT_MAX) {
        fl_set_error_code(FL_INVALID_ARGUMENT,
                          "TF_CONFIG: \"task.index\" must be a whole number; got %g", index->number);
        return -1;
    }
    return fl_cluster_set_task(c, type->string, (int)index->number, &tf_config_spelling);
}

/* TF_CONFIG's strings are untrusted text: a message that quotes one (a job
 * name, an address) is escaped whole (\xNN) before anyone prints it. */
static void escape_error(void)
{
    char shown[FL_ERROR_LEN];
    fl_escape_untrusted(fl_last_error(), strlen(fl_last_error()), shown, sizeof shown);
    fl_set_error_code(fl_last_error_code(), "%s", shown);
}

fl_cluster *fl_cluster_from_tf_config(const char *json)
{
    fl_status st = {0};
    fl_json *root = fl_json_parse(json, &st);
    if (!root) {
        fl_set_error_code(st.code, "TF_CONFIG: %s", st.message);
        return NULL;
    }
    fl_cluster *c = fl_cluster_new(); /* NULL: FLOWLAB_TASK_DEADLINE is wrong, and it said so */
    int rc = -1;
    if (c && root->type != FL_JSON_OBJECT)
        fl_set_error_code(FL_INVALID_ARGUMENT, "TF_CONFIG must be a JSON object, %s; got %s", TF_CONFIG_EXAMPLE,
                          fl_json_type_name(root->type));
    else if (c && read_cluster(c, root) == 0)
        rc = read_task(c, root);
    fl_json_free(root);
    if (rc != 0) {
        fl_cluster_free(c);
        escape_error();
        return NULL;
    }
    return c;
}

fl_cluster *fl_cluster_from_tf_config_env(void)
{
    const char *json = getenv("TF_CONFIG");
    if (!json) {
        fl_set_error_code(FL_NOT_FOUND, "TF_CONFIG is not set; export it as %s, or pass flags to fl_cluster_from_flags",
                          TF_CONFIG_EXAMPLE);
        return NULL;
    }
    return fl_cluster_from_tf_config(json);
}
