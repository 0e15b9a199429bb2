#!/bin/sh
# handout.sh DEST: writes a student's copy of this repository into DEST, every
# file git knows of (tracked, or new and not ignored) except the reference
# solutions, labs/*/exercises/solutions/. Called by `make handout DEST=dir`.
# File times are kept, so that a build copied beside it stays up to date.
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
mkdir -p "$dest"
# Deleted-but-tracked files are left out: git ls-files still lists them.
git ls-files -z --cached --others --exclude-standard \
    | grep -z -v '^labs/[^/]*/exercises/solutions/' \
    | xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh \
    | tar --null -T - -cf - | tar -xf - -C "$dest"
count=$(find "$dest" -type f | wc -l)
echo "handout: $count files in $dest, without labs/*/exercises/solutions/"
echo "handout: there, make exercises fails on every stub until it is solved"
