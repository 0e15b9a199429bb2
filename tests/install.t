#!/bin/bash
# install.t: `make install PREFIX=...` into a temporary prefix, then two
# programs outside the tree built with nothing but pkg-config (a graph
# trained one step with its summaries written; a cluster spec read; the
# README's smallest complete program, labs/00-xor/xor.c, copied out), run;
# flowlab_server and launch_cluster installed in PREFIX/bin and run;
# the installed archive opens the installed CUDA module, not this tree's;
# `make uninstall` leaves no file behind. DESTDIR stages the same files.
# TAP, run by prove; skipped where pkg-config is missing or there is no plain build.
set -u
DIR=$(mktemp -d /tmp/flowlab-install.XXXXXX)
PREFIX=$DIR/prefix
trap 'rm -rf "$DIR"' EXIT
n=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
check()  { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

if ! command -v pkg-config >/dev/null || [ ! -f build/libflowlab.a ]; then
    echo "1..0 # SKIP needs pkg-config and a plain build (build/libflowlab.a: run make)"
    exit 0
fi

cat > "$DIR/core.c" <<'PROGRAM'
#include <stdio.h>
#include "flowlab.h"
int main(int argc, char **argv)
{
    fl_graph *g = fl_graph_new();
    fl_node *x = fl_placeholder(g, FL_FLOAT32, fl_shape_make(1, 2), "x");
    fl_node *y = fl_reduce_sum(g, fl_mul(g, x, x, NULL), NULL, 0, false, "y");
    fl_tensor *in = fl_tensor_from_floats(fl_shape_make(1, 2), (const float[]){3, 4}), *out = NULL;
    fl_session *s = fl_session_new(g, NULL);
    fl_feed feed = {x, in};
    fl_summary_file_writer *w = argc > 1 ? fl_summary_file_writer_new(argv[1]) : NULL;
    if (fl_session_run(s, &feed, 1, &y, 1, &out, NULL, 0) != 0 || !w ||
        fl_summary_add_scalar(w, "y", fl_tensor_scalar(out), 1) != 0 || fl_summary_add_graph(w, g) != 0) {
        fprintf(stderr, "core: %s %s\n", fl_session_error(s), fl_last_error());
        return 1;
    }
    printf("y = %g\n", fl_tensor_scalar(out));
    int rc = fl_summary_file_writer_close(w);
    fl_tensor_free(out);
    fl_tensor_free(in);
    fl_session_free(s);
    fl_graph_free(g);
    return rc;
}
PROGRAM
cat > "$DIR/cluster.c" <<'PROGRAM'
#include <stdio.h>
#include "flowlab.h"
int main(void)
{
    fl_cluster *c = fl_cluster_from_flags("localhost:2222", "localhost:2223,localhost:2224", "worker", 1);
    if (!c)
        return fprintf(stderr, "cluster: %s\n", fl_last_error()), 1;
    printf("%d workers\n", fl_cluster_num_tasks(c, "worker"));
    fl_cluster_free(c);
    return 0;
}
PROGRAM

echo "1..14"
check "make install PREFIX=$PREFIX" "make -s install PREFIX=$PREFIX >$DIR/install.log 2>&1 || { sed 's/^/# /' $DIR/install.log; false; }"
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
check "pkg-config finds flowlab and flowlab-cluster" "pkg-config --exists flowlab flowlab-cluster"
check "a program outside the tree builds with pkg-config --cflags --libs flowlab" \
    "cc -std=c11 $DIR/core.c \$(pkg-config --cflags --libs flowlab) -o $DIR/core 2>&1 | sed 's/^/# /'; [ -x $DIR/core ]"
check "it runs a session and writes its summaries" \
    "$DIR/core $DIR/logs | grep -q 'y = 25' && ls $DIR/logs | grep -q tfevents"
check "a cluster program builds with pkg-config --cflags --libs flowlab-cluster and runs" \
    "cc -std=c11 $DIR/cluster.c \$(pkg-config --cflags --libs flowlab-cluster) -o $DIR/cluster 2>&1 | sed 's/^/# /'; $DIR/cluster | grep -q '2 workers'"
cp labs/00-xor/xor.c "$DIR/xor.c"
check "labs/00-xor/xor.c, copied out of the tree, builds with pkg-config --cflags --libs flowlab" \
    "cc -std=c11 $DIR/xor.c \$(pkg-config --cflags --libs flowlab) -o $DIR/xor 2>&1 | sed 's/^/# /'; [ -x $DIR/xor ]"
check "it learns XOR and writes its --log_dir" \
    "$DIR/xor --steps 50 --log_dir $DIR/xor_logs | grep -q 'Step 50 with loss' && ls $DIR/xor_logs | grep -q tfevents"
check "flowlab_server is installed in PREFIX/bin and runs" \
    "[ -x $PREFIX/bin/flowlab_server ] && $PREFIX/bin/flowlab_server --help | grep -q 'usage: flowlab_server'"
check "launch_cluster is installed in PREFIX/bin and runs" \
    "[ -x $PREFIX/bin/launch_cluster ] && $PREFIX/bin/launch_cluster --help | grep -q 'usage: launch_cluster'"
if [ -f build/libflowlab_cuda.so ]; then
    check "the installed archive opens the installed CUDA module" \
        "[ -x $PREFIX/lib/flowlab/libflowlab_cuda.so ] && grep -aq '$PREFIX/lib/flowlab/libflowlab_cuda.so' $DIR/core &&
         ! grep -aq '$PWD/build/libflowlab_cuda.so' $DIR/core"
else
    ok "the installed archive opens the installed CUDA module # SKIP no CUDA module in this build"
fi
check "make uninstall PREFIX=$PREFIX" "make -s uninstall PREFIX=$PREFIX >/dev/null 2>&1"
left=$(find "$PREFIX" -type f -o -type d -name flowlab)
check "nothing installed is left" "[ -z '$left' ] || { echo '# left: $left'; false; }"
check "DESTDIR stages the files under it, naming PREFIX" \
    "make -s install PREFIX=/opt/fl DESTDIR=$DIR/stage >/dev/null 2>&1 && grep -q '^prefix=/opt/fl$' $DIR/stage/opt/fl/lib/pkgconfig/flowlab.pc"
check "make uninstall with DESTDIR removes them" \
    "make -s uninstall PREFIX=/opt/fl DESTDIR=$DIR/stage >/dev/null 2>&1 && [ -z \"\$(find $DIR/stage -type f)\" ]"
