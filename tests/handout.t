#!/bin/bash
# handout.t: `make handout DEST=dir` writes a student's tree without the
# reference solutions, and in it `make exercises` fails on every stub and
# passes once each stub holds a correct answer (here: the reference one,
# copied in). The library is copied from this tree's build, with its file
# times, so that only the exercise checks are compiled. TAP, run by prove;
# skipped where this tree has no plain build (make first) or no git.
set -u
BUILD=build
DIR=$(mktemp -d /tmp/flowlab-handout.XXXXXX)
STUDENT=$DIR/student
trap 'rm -rf "$DIR"' EXIT
n=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
check()  { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

if [ ! -f $BUILD/libflowlab.a ] || ! command -v git >/dev/null; then
    echo "1..0 # SKIP needs a plain build ($BUILD/libflowlab.a: run make) and git"
    exit 0
fi
solutions=$(ls labs/*/exercises/solutions/*.c)
nsolutions=$(echo "$solutions" | wc -l)
echo "1..8"

check "make handout writes the tree" "make -s handout DEST=$STUDENT >/dev/null"
check "the hand-out holds no solutions folder" \
    "[ -z \"\$(find $STUDENT -path '*/exercises/solutions*')\" ]"
# No solution is in it under another name either: no file equals one.
leaked=0
for s in $solutions; do
    if find "$STUDENT/labs" -type f -name '*.c' -exec cmp -s "$s" {} \; -print | grep -q .; then
        echo "# $s is in the hand-out"; leaked=1
    fi
done
check "no file of the hand-out equals a reference solution" "[ $leaked = 0 ]"
missing=0
for s in $solutions; do
    stub=$STUDENT/$(dirname "$(dirname "$s")")/$(basename "$s")
    [ -f "$stub" ] || { echo "# no stub $stub"; missing=1; }
done
check "every solved exercise has its stub in the hand-out" "[ $missing = 0 ]"

# The library, as this tree built it, so that the hand-out compiles only the checks.
mkdir -p "$STUDENT/$BUILD"
cp -a $BUILD/obj $BUILD/gen $BUILD/libflowlab.a $BUILD/*.stamp "$STUDENT/$BUILD/" 2>/dev/null
make -s -C "$STUDENT" exercises >"$DIR/stubs.log" 2>&1
status=$?
fails=$(grep -c '^FAIL ' "$DIR/stubs.log")
check "make exercises fails on the stubs" "[ $status != 0 ]"
check "every one of the $nsolutions stubs fails its check (got $fails)" "[ $fails = $nsolutions ]"
[ "$fails" = "$nsolutions" ] || sed 's/^/# /' "$DIR/stubs.log" | tail -20

# A student's correct work: each stub replaced by an answer that is right.
for s in $solutions; do
    cp "$s" "$STUDENT/$(dirname "$(dirname "$s")")/$(basename "$s")"
done
make -s -C "$STUDENT" exercises >"$DIR/solved.log" 2>&1
status=$?
passes=$(grep -c '^PASS ' "$DIR/solved.log")
check "make exercises passes on correct work" "[ $status = 0 ]"
check "all $nsolutions checks pass (got $passes)" "[ $passes = $nsolutions ]"
[ "$status" = 0 ] || sed 's/^/# /' "$DIR/solved.log" | tail -20
