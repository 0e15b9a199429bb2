#!/bin/sh
# book-html.sh: `make book-html`: every chapter of book/ as an HTML page in
# OUT (default build/book-html), with its figures, links between chapters
# rewritten to the pages (labs/tools/book_html.lua); index.html is the contents.
set -e
out=${1:-build/book-html}
command -v pandoc >/dev/null 2>&1 || { echo "book-html: pandoc is not installed (apt-get install pandoc)" >&2; exit 1; }
mkdir -p "$out/figures"
cp book/figures/*.svg "$out/figures/"
cp book/figures/*.png "$out/figures/" 2>/dev/null || true # the screenshots (TensorBoard)
for md in book/*.md; do
    name=$(basename "$md" .md)
    title=$(sed -n '1s/^# *//p' "$md")
    timeout 60 pandoc --from gfm --to html5 --standalone --metadata "pagetitle=${title:-$name}" \
        --lua-filter labs/tools/book_html.lua "$md" -o "$out/$name.html"
done
cp "$out/README.html" "$out/index.html"
echo "book-html: $(ls "$out"/*.html | wc -l) pages in $out/ (open $out/index.html)"
