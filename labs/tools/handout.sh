#!/bin/sh
# handout.sh DEST: writes a student's copy of this repository into DEST: the
# files git tracks, except the reference solutions, labs/*/exercises/solutions/.
# Untracked files (an instructor's marking folder, a student's submission) are
# never included, and a stub edited since the last commit is refused. Called
# by `make handout DEST=dir`. File times are kept, so that a build copied
# beside it stays up to date.
set -e
dest=$1
if [ -z "$dest" ]; then
    echo "handout: no destination; run: make handout DEST=dir" >&2
    exit 2
fi
if ! git rev-parse --show-toplevel >/dev/null 2>&1; then
    echo "handout: not in a git checkout; make handout lists the files with git" >&2
    exit 2
fi
if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
    echo "handout: $dest exists and is not empty; give a new or empty folder" >&2
    exit 2
fi
edited=$(git status --porcelain -- 'labs/*/exercises/*' | grep -v '^??' | cut -c4- | grep -v '/solutions/' || true)
if [ -n "$edited" ]; then
    echo "handout: these exercise files differ from the last commit:" $edited >&2
    echo "handout: a hand-out ships the committed stubs; commit them, or restore them with git checkout --" >&2
    exit 2
fi
untracked=$(git ls-files --others --exclude-standard | wc -l)
mkdir -p "$dest"
# Deleted-but-tracked files are left out: git ls-files still lists them.
git ls-files -z --cached \
    | grep -z -v '^labs/[^/]*/exercises/solutions/' \
    | xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh \
    | tar --null -T - -cf - | tar -xf - -C "$dest"
count=$(find "$dest" -type f | wc -l)
echo "handout: $count files in $dest, without labs/*/exercises/solutions/"
[ "$untracked" = 0 ] || echo "handout: left out $untracked untracked files (git status lists them); commit a file to hand it out"
echo "handout: there, make exercises fails on every stub until it is solved"
