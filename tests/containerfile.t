#!/bin/bash
# containerfile.t: labs/Containerfile runs the README's quick start and
# nothing else. Its build steps (RUN lines) must be: installing make, the
# one package a fresh Debian lacks to run `make`, which labs/install-deps.sh
# lists too; then each command of the README's quick start, in order. No
# container is built here (no runtime on this machine). TAP, run by prove.
set -u
CONTAINERFILE=labs/Containerfile
echo "1..4"
n=0
check() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi; }

runs=$(sed -n 's/^RUN //p' "$CONTAINERFILE")
first=$(echo "$runs" | head -1)
rest=$(echo "$runs" | tail -n +2)
# The README's quick start: the indented `make ...` lines under "## Quick start".
readme=$(sed -n '/^## Quick start/,/^## /s/^    \(make [a-z-]*\).*/\1/p' README.md)

check "the README's quick start has commands (got: $(echo $readme))" "[ -n \"\$readme\" ]"
check "after make, the Containerfile runs exactly the README's commands" "[ \"\$rest\" = \"\$readme\" ]"
[ "$rest" = "$readme" ] || printf '# Containerfile: %s\n# README: %s\n' "$(echo $rest)" "$(echo $readme)"
check "its first step installs make alone" \
    "[ \"\$first\" = 'apt-get update && apt-get install -y --no-install-recommends make' ]"
check "and labs/install-deps.sh lists make too" \
    "grep -Eq '^packages=\"([^\"]* )?make( |\")' labs/install-deps.sh"
