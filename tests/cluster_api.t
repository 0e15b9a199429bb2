#!/bin/bash
# cluster_api.t: compile checks of the cluster API as a user meets it, with
# gcc and with clang. flowlab.h declares only functions of libflowlab.a; a
# program giving its session the cluster itself
# (.cluster = cluster; tests/cluster_api/new_api.c) builds with -std=c11 -Wall
# -Wextra -Werror and trains against a ps and a worker task on loopback; one
# written for the removed plugin functions (old_api.c) does not build, at
# -O0 too, and the compiler's message names the change.
# TAP, run by prove; BUILD says which build's archives (build-sanitize: ASan's).
set -u
BUILD=${BUILD:-build}
case "$BUILD" in
    build-sanitize) SANITIZE=1 ;;
    build-tsan) SANITIZE=thread ;;
    *) SANITIZE=0 ;;
esac
if [ ! -f "$BUILD/libflowlab.a" ] || [ ! -f "$BUILD/libflowlab_cluster.a" ]; then
    echo "1..0 # SKIP $BUILD/libflowlab.a and libflowlab_cluster.a are not built (make lib)"
    exit 0
fi
DIR=$(mktemp -d /tmp/flowlab-cluster-api.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
# The build's own list of backends, so that this make reads the same list:
# make rewrites $BUILD/gen/backends.list when a run's list differs (say, a
# run without nvcc), and the next make of another test then rebuilds the
# archive while this test reads it.
if [ -s "$BUILD/gen/backends.list" ]; then
    FLAGS=$(make -s flags-cluster SANITIZE=$SANITIZE BACKENDS="$(cat "$BUILD/gen/backends.list")")
else
    FLAGS=$(make -s flags-cluster SANITIZE=$SANITIZE)
fi
CHANGE='fl_session_options.cluster now takes the cluster itself'
n=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
check()  { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

echo "1..11"
# flowlab.h declares only what the core's archive holds: every function it
# (and the headers it includes) declares is defined in libflowlab.a.
declared=$(cc -std=c11 -E -P -Isrc src/flowlab.h | grep -oE '\bfl_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u)
defined=$(nm -g --defined-only "$BUILD/libflowlab.a" 2>/dev/null | awk '$2 ~ /[TDRB]/ {print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$defined") | tr '\n' ' ')
check "flowlab.h declares only functions of libflowlab.a ($(echo "$declared" | wc -l) declared)" \
    "[ -z \"$missing\" ] || { echo \"# declared but not in $BUILD/libflowlab.a: $missing\"; false; }"
for cc in gcc clang; do
    if ! command -v $cc >/dev/null; then
        for i in 1 2 3 4 5; do ok "$cc # SKIP $cc is not installed"; done
        continue
    fi
    check "$cc: a program with .cluster = cluster builds with -std=c11 -Wall -Wextra -Werror" \
        "$cc -std=c11 -Wall -Wextra -Werror -Itests tests/cluster_api/new_api.c -o $DIR/new_$cc $FLAGS \
             >$DIR/new_$cc.log 2>&1 || { sed 's/^/# /' $DIR/new_$cc.log; false; }"
    check "$cc: it trains as a worker against a ps and as a client against a worker task, the losses falling" \
        "FLOWLAB_BACKEND=host timeout 120 $DIR/new_$cc >$DIR/run_$cc.log 2>&1 &&
         grep -q 'worker: step 5' $DIR/run_$cc.log && grep -q 'client: step 5' $DIR/run_$cc.log ||
         { sed 's/^/# /' $DIR/run_$cc.log; false; }"
    check "$cc: a program calling the removed plugin functions does not build" \
        "! $cc -std=c11 -O0 tests/cluster_api/old_api.c -o $DIR/old_$cc $FLAGS >$DIR/old_$cc.log 2>&1"
    check "$cc: the compiler's message names the change for fl_cluster_session_plugin" \
        "grep -q \"fl_cluster_session_plugin.*$CHANGE\" $DIR/old_$cc.log || { sed 's/^/# /' $DIR/old_$cc.log; false; }"
    check "$cc: and for fl_cluster_client_plugin" "grep -q \"fl_cluster_client_plugin.*$CHANGE\" $DIR/old_$cc.log"
done
