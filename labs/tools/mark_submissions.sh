#!/bin/sh
# mark_submissions.sh SUBMISSIONS MARKING: marks a class's exercises. For each
# student's folder in SUBMISSIONS it writes a fresh hand-out into MARKING/name
# (outside this repository), copies in only the exercise files a student
# edits, and prints that tree's `make exercises` lines as "name PASS|FAIL ...".
# Called by `make mark SUBMISSIONS=dir MARKING=dir` (book/for-instructors.md).
set -e
submissions=$1
marking=$2
if [ -z "$submissions" ] || [ -z "$marking" ] || [ ! -d "$submissions" ]; then
    echo "mark: usage: make mark SUBMISSIONS=dir MARKING=dir (SUBMISSIONS holds one folder per student)" >&2
    exit 2
fi
repo=$(git rev-parse --show-toplevel)
case "$(realpath -m "$marking")/" in
"$(realpath "$repo")"/*)
    echo "mark: $marking is inside this repository; give a folder outside it, so that no student's file can reach a later hand-out" >&2
    exit 2 ;;
esac

# The stubs a student edits: every labs/*/exercises/*.c of the hand-out but
# the checkers. Nothing else of a submission is read (not its check_*.c,
# lab.mk or exercises.h: a checker that always passes is not marked).
# The library as this tree built it goes beside each hand-out, with its file
# times, so that each student's tree compiles only the checks.
mkdir -p "$marking"
for student in "$submissions"/*/; do
    [ -d "$student" ] || continue
    name=$(basename "$student")
    dest="$marking/$name"
    if [ -e "$dest" ]; then
        echo "mark: $dest exists; give an empty MARKING folder" >&2
        exit 2
    fi
    sh labs/tools/handout.sh "$dest" >/dev/null
    for stub in $(cd "$dest" && ls labs/*/exercises/*.c | grep -v '/check_'); do
        [ -f "$student/$stub" ] && cp "$student/$stub" "$dest/$stub"
    done
    if [ -f build/libflowlab.a ]; then
        mkdir -p "$dest/build"
        cp -a build/obj build/gen build/libflowlab.a "$dest/build/" 2>/dev/null || true
        cp -a build/*.stamp "$dest/build/" 2>/dev/null || true
    fi
    make -s -C "$dest" exercises 2>&1 | grep -E '^(PASS|FAIL)' | sed "s|^|$name |" || true
done
