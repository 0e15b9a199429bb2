#!/bin/bash
# book_rerun.t: `book_check --rerun KIND STORED FRESH` (what `make book-rerun`
# runs for each quick output block) passes a fresh run equal to its stored
# output, masks speeds and the "# cpu:" line, holds "within R" to R, and names
# the first differing line; book_check refuses an output marker that does not
# say how it is rerun; and book-outputs.sh --rerun reruns one block. TAP, run
# by prove; skipped where book_check is not built (make labs).
set -u
BUILD=${BUILD:-build}
CHECK=$BUILD/labs/tools/book_check
case "$CHECK" in /*) ;; *) CHECK=$PWD/$CHECK ;; esac
DIR=$(mktemp -d /tmp/flowlab-book-rerun.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
n=0
ok()     { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
check()  { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

if [ ! -x "$CHECK" ]; then
    echo "1..0 # SKIP needs $CHECK (make labs)"
    exit 0
fi
echo "1..11"

printf '# cpu: Intel Xeon\n$ lab\nStep 0 with loss 2.323407 (225.2 images/sec)\nTest accuracy: 0.4531\n' > "$DIR/stored"
printf '# cpu: AMD EPYC\n$ lab\nStep 0 with loss 2.323407 (98.0 images/sec)\nTest accuracy: 0.4531\n' > "$DIR/same"
printf '# cpu: AMD EPYC\n$ lab\nStep 0 with loss 2.323408 (98.0 images/sec)\nTest accuracy: 0.4531\n' > "$DIR/near"
printf '# cpu: AMD EPYC\n$ lab\nStep 0 with loss 2.323692 (98.0 images/sec)\nTest accuracy: 0.4531\n' > "$DIR/far"

check "exact: equal but for the speed and the CPU line passes" "$CHECK --rerun exact $DIR/stored $DIR/same > /dev/null"
check "exact: a loss one digit off fails" "! $CHECK --rerun exact $DIR/stored $DIR/near > $DIR/out"
check "the failure names the line and both texts" \
    "grep -q 'first difference at line 3' $DIR/out && grep -q 'stored: Step 0 with loss 2.323407' $DIR/out && grep -q 'fresh:  Step 0 with loss 2.323408' $DIR/out"
check "within 1e-5: a loss 4e-7 off passes" "$CHECK --rerun 'within 1e-5' $DIR/stored $DIR/near > /dev/null"
check "within 1e-5: a loss 1.2e-4 off (a kernel change) fails" "! $CHECK --rerun 'within 1e-5' $DIR/stored $DIR/far > /dev/null"
$CHECK --rerun 'within 2' "$DIR/stored" "$DIR/same" > /dev/null 2>&1
check "a kind that is no tolerance is refused (exit 2)" "[ $? = 2 ]"
head -n 3 "$DIR/same" > "$DIR/short"
check "a fresh run with a line missing fails" "! $CHECK --rerun exact $DIR/stored $DIR/short > /dev/null"

mkdir -p "$DIR/book/outputs"
cp "$DIR/stored" "$DIR/book/outputs/x.txt"
{ echo '<!-- output: book/outputs/x.txt -->'; echo '```text'; cat "$DIR/stored"; echo '```'; } > "$DIR/book/bare.md"
sed 's/x.txt -->/x.txt (rerun: within 1e-5) -->/' "$DIR/book/bare.md" > "$DIR/book/kind.md"
(cd "$DIR" && "$CHECK" book/bare.md > out 2>&1)
check "book_check refuses an output marker without its rerun kind" "[ $? = 1 ] && grep -q '(rerun: exact)' $DIR/out"
check "book_check accepts (rerun: within 1e-5) and compares the block" "(cd $DIR && $CHECK book/kind.md > /dev/null)"

if [ -x "$BUILD/labs/02-in-graph-towers/in_graph_towers" ] && [ "$BUILD" = build ]; then
    out=$(BOOK_OUTPUTS=02-too-many sh labs/tools/book-outputs.sh --rerun 2>&1)
    check "book-outputs.sh --rerun reruns 02-too-many and finds it equal" "echo \"\$out\" | grep -q 'ok 02-too-many (exact)'"
    check "its summary counts one rerun and none differing" "echo \"\$out\" | grep -q '1 rerun and equal, 0 differ'"
else
    ok "# SKIP needs the labs in build/ (make labs)"
    ok "# SKIP needs the labs in build/ (make labs)"
fi
