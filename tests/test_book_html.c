/* test_book_html.c: `make book-html` (labs/tools/book-html.sh) builds a page
 * per chapter, every image a page shows exists beside it, and every link
 * inside the book (a chapter, a heading, a file of the repository) resolves. */
#include <dirent.h>
#include <unistd.h>

#include "tap.h"
#include "tools.h"

typedef struct {
    int images, links, anchors;
    int broken;
} link_count;

/* Whether page holds an element with id="anchor". */
static bool has_anchor(const char *page, const char *anchor, size_t len)
{
    char id[512];
    snprintf(id, sizeof id, "id=\"%.*s\"", (int)len, anchor);
    return page && strstr(page, id) != NULL;
}

/* One src or href of page (in dir): a file there, and its #part. */
static void check_target(const char *dir, const char *name, const char *page, const char *target, size_t len,
                         bool image, link_count *c)
{
    if (strncmp(target, "http://", 7) == 0 || strncmp(target, "https://", 8) == 0 ||
        strncmp(target, "mailto:", 7) == 0)
        return;
    size_t path_len = strcspn(target, "#\"");
    const char *part = target[path_len] == '#' ? target + path_len + 1 : NULL;
    size_t part_len = part ? len - path_len - 1 : 0;
    bool good = true;
    char *other = NULL;
    if (path_len > 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)path_len, target);
        good = access(path, F_OK) == 0;
        if (good && part && path_len > 5 && strncmp(target + path_len - 5, ".html", 5) == 0)
            other = read_text(path);
    }
    if (good && part)
        good = has_anchor(other ? other : page, part, part_len);
    free(other);
    *(image ? &c->images : part && path_len == 0 ? &c->anchors : &c->links) += 1;
    if (!good && c->broken++ < 10)
        diag("%s.html: %s '%.*s' does not resolve", name, image ? "image" : "link", (int)len, target);
}

/* Every src="..." and href="..." of one page. */
static void check_page(const char *dir, const char *name, link_count *c)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.html", dir, name);
    char *page = read_text(path);
    if (!page) {
        c->broken++;
        diag("no page %s for book/%s.md", path, name);
        return;
    }
    const char *attrs[] = {" src=\"", " href=\""};
    for (int a = 0; a < 2; a++)
        for (const char *p = strstr(page, attrs[a]); p; p = strstr(p, attrs[a])) {
            p += strlen(attrs[a]);
            size_t len = strcspn(p, "\"");
            check_target(dir, name, page, p, len, a == 0, c);
        }
    free(page);
}

int main(void)
{
    if (!have("pandoc"))
        skip_all("pandoc is not installed (apt-get install pandoc)");
    /* Two folders deep, as build/book-html is: links out of the book climb two. */
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char dir[256], cmd[600];
    snprintf(dir, sizeof dir, "%s/book-html-test.%ld", build, (long)getpid());
    snprintf(cmd, sizeof cmd, "timeout 300 sh labs/tools/book-html.sh '%s' >/dev/null", dir);
    ok(system(cmd) == 0, "labs/tools/book-html.sh builds the book into %s", dir);

    DIR *book = opendir("book");
    link_count c = {0};
    int chapters = 0;
    for (struct dirent *e; book && (e = readdir(book));) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 3), e->d_name);
        check_page(dir, name, &c);
        chapters++;
    }
    if (book)
        closedir(book);
    ok(chapters >= 10, "a page for each of the %d chapters of book/", chapters);
    ok(c.images >= 10, "the pages show the book's figures (%d images)", c.images);
    ok(c.links >= 10, "and link to each other (%d links)", c.links);
    ok(c.broken == 0, "every image, link and #anchor resolves (%d images, %d links, %d anchors; %d broken)",
       c.images, c.links, c.anchors, c.broken);
    snprintf(cmd, sizeof cmd, "%s/index.html", dir);
    ok(access(cmd, F_OK) == 0, "index.html is the contents");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ok(system(cmd) == 0, "the test's copy of the book is removed");
    return done_testing();
}
