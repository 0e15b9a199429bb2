-- book_html.lua: the pandoc filter of `make book-html` (labs/tools/book-html.sh).
-- A link to a chapter (x.md, x.md#part) becomes x.html; a link out of book/
-- (../labs/...) gains a ../, as the pages sit a folder deeper than book/.
function Link(el)
  local target = el.target
  if target:match("^%a[%w+.-]*:") or target:match("^#") then
    return el
  end
  if target:match("^%.%./") then
    el.target = "../" .. target
    return el
  end
  local path, part = target:match("^([^#]*)(.*)$")
  if path:match("%.md$") then
    el.target = path:sub(1, -4) .. ".html" .. part
  end
  return el
end
