#!/bin/bash
# handout.t: `make handout DEST=dir` writes a student's tree without the
# reference solutions, and in it `make exercises` fails on every stub and
# passes once each stub holds a correct answer (here: the reference one,
# copied in). The marking recipe (make mark) reads only the files a student
# edits, keeps its trees outside the repository, and a hand-out made after
# it holds no student's file. The library is copied from this tree's build,
# with its file times, so that only the exercise checks are compiled. TAP, run by prove;
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
echo "1..15"

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

# --- marking a class: in a copy of this tree (its tracked files, committed in
# a repository of its own), so that the files planted below touch nothing here.
TREE=$DIR/tree
mkdir -p "$TREE"
git ls-files -z | xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh | tar --null -T - -cf - | tar -xf - -C "$TREE"
(cd "$TREE" && git init -q && git add -A && git -c user.name=test -c user.email=test@localhost commit -qm tree) ||
    echo "# could not commit the copy in $TREE"
mkdir -p "$TREE/$BUILD"
cp -a $BUILD/obj $BUILD/gen $BUILD/libflowlab.a $BUILD/*.stamp "$TREE/$BUILD/" 2>/dev/null
# alice solved accuracy (the reference answer) and forged dense_layer's checker and lab.mk.
ALICE=$DIR/submissions/alice/labs/01-single-device
mkdir -p "$ALICE/exercises"
cp labs/01-single-device/exercises/solutions/accuracy.c "$ALICE/exercises/accuracy.c"
printf '#include <stdio.h>\nint main(void) { puts("PASS dense-layer"); return 0; }\n' >"$ALICE/exercises/check_dense_layer.c"
echo 'EX01_NAMES := accuracy' >"$ALICE/lab.mk"
make -s -C "$TREE" mark SUBMISSIONS="$DIR/submissions" MARKING="$DIR/marking" >"$DIR/marks.txt" 2>&1
sed 's/^/# /' "$DIR/marks.txt" | grep -E 'alice (PASS|FAIL) (accuracy|dense-layer)|mark:'
check "make mark passes alice's solved exercise" "grep -q '^alice PASS accuracy' $DIR/marks.txt"
check "and fails her unsolved one: her own checker and lab.mk were not copied" \
    "grep -q '^alice FAIL dense-layer' $DIR/marks.txt && cmp -s $TREE/labs/01-single-device/lab.mk $DIR/marking/alice/labs/01-single-device/lab.mk"
check "every exercise of every chapter is marked once ($nsolutions lines)" \
    "[ \$(grep -c '^alice \(PASS\|FAIL\) ' $DIR/marks.txt) = $nsolutions ]"
check "make mark refuses a marking folder inside the repository" \
    "! make -s -C $TREE mark SUBMISSIONS=$DIR/submissions MARKING=$TREE/marking 2>/dev/null && [ ! -e $TREE/marking ]"

# What an instructor's tree holds after marking the old way: the class's
# files, untracked. A hand-out made then ships none of them.
mkdir -p "$TREE/marking/alice"
cp -r "$DIR/submissions/alice/labs" "$TREE/marking/alice/"
cp labs/01-single-device/exercises/solutions/accuracy.c "$TREE/labs/01-single-device/exercises/alice_accuracy.c"
cp "$DIR/marks.txt" "$TREE/class-results.txt"
check "make handout after marking succeeds" "make -s -C $TREE handout DEST=$DIR/after >$DIR/after.log 2>&1"
grep 'left out' "$DIR/after.log" | sed 's/^/# /'
leaked=$(cd "$DIR/after" 2>/dev/null && find . -path './marking*' -o -name 'alice_*' -o -name 'class-results.txt' | head -3)
check "and ships no untracked file of the class (found: ${leaked:-none})" "[ -z '$leaked' ] && [ -d $DIR/after/labs ]"
# A stub edited in the instructor's tree (a student's answer pasted in) is refused.
cp labs/01-single-device/exercises/solutions/accuracy.c "$TREE/labs/01-single-device/exercises/accuracy.c"
check "make handout refuses a stub edited since the last commit" \
    "! make -s -C $TREE handout DEST=$DIR/edited 2>$DIR/edited.log && grep -q 'accuracy.c' $DIR/edited.log"
