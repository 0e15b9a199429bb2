/* make_graph_corpus.c: writes fuzz_graph_wire's seeds into the folder
 * given: the two partitions of tests/partition_fixture.h (a ps holding w,
 * a worker computing g = w x), made with the encoder. */
#include <stdio.h>

#include "../partition_fixture.h"
#include "distributed_runtime/partition/partition_def.h"

static int write_seed(const char *dir, const char *name, fl_graph_partition *p)
{
    fl_wire_buf bytes = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = fl_partition_def_encode(p, &bytes) == 0 ? fopen(path, "wb") : NULL;
    int rc = f && fwrite(bytes.data, 1, bytes.len, f) == bytes.len ? 0 : -1;
    if (f)
        fclose(f);
    if (rc != 0)
        fprintf(stderr, "make_graph_corpus: cannot write %s: %s\n", path, fl_last_error());
    fl_wire_buf_free(&bytes);
    fl_graph_partition_free(p);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_graph_corpus DIR\n");
        return 2;
    }
    fl_graph_partition ps, worker;
    ps_partition(&ps);
    worker_partition(&worker);
    int rc = write_seed(argv[1], "ps", &ps) | write_seed(argv[1], "worker", &worker);
    return rc == 0 ? 0 : 1;
}
