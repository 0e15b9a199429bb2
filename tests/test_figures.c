/* test_figures.c: every SVG a chapter of book/ includes exists, renders
 * (rsvg-convert, with a deadline) and fits a page at its natural size, so
 * a figure too wide to read fails here instead of reaching a reader. */
#include <dirent.h>
#include <unistd.h>

#include "tap.h"
#include "tools.h"

#define MAX_WIDTH 1600  /* pixels at natural size: a wide page, unscaled */
#define MAX_HEIGHT 2400 /* about two screens */
#define MAX_FIGURES 64

/* The width and height in a PNG's IHDR chunk; false when it is no PNG. */
static bool png_size(const char *path, unsigned *width, unsigned *height)
{
    unsigned char head[24];
    FILE *f = fopen(path, "rb");
    bool read = f && fread(head, 1, sizeof head, f) == sizeof head;
    if (f)
        fclose(f);
    if (!read || memcmp(head, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(head + 12, "IHDR", 4) != 0)
        return false;
    *width = (unsigned)head[16] << 24 | (unsigned)head[17] << 16 | (unsigned)head[18] << 8 | head[19];
    *height = (unsigned)head[20] << 24 | (unsigned)head[21] << 16 | (unsigned)head[22] << 8 | head[23];
    return true;
}

/* Adds each "](figures/NAME.svg" of one chapter to figures, once. */
static int collect(const char *chapter, char figures[][128], int n)
{
    char path[300];
    snprintf(path, sizeof path, "book/%s", chapter);
    char *text = read_text(path);
    for (const char *p = text; p && (p = strstr(p, "](figures/")); p++) {
        size_t len = strcspn(p + 2, ")\" ");
        if (len < 5 || strncmp(p + 2 + len - 4, ".svg", 4) != 0 || len >= 128)
            continue;
        bool seen = false;
        for (int i = 0; i < n && !seen; i++)
            seen = strncmp(figures[i], p + 2, len) == 0 && figures[i][len] == '\0';
        if (!seen && n < MAX_FIGURES)
            snprintf(figures[n++], 128, "%.*s", (int)len, p + 2);
    }
    free(text);
    return n;
}

/* Renders one figure and checks its size. */
static void check_figure(const char *figure, const char *png)
{
    char cmd[600];
    unsigned width = 0, height = 0;
    snprintf(cmd, sizeof cmd, "timeout 60 rsvg-convert 'book/%s' -o '%s'", figure, png);
    bool rendered = access(png, F_OK) != 0 && system(cmd) == 0 && png_size(png, &width, &height);
    ok(rendered, "%s renders", figure);
    ok(rendered && width <= MAX_WIDTH && height <= MAX_HEIGHT,
       "%s is %ux%u px at natural size, within %dx%d", figure, width, height, MAX_WIDTH, MAX_HEIGHT);
    unlink(png);
}

int main(void)
{
    if (!have("rsvg-convert"))
        skip_all("rsvg-convert is not installed (apt-get install librsvg2-bin)");
    static char figures[MAX_FIGURES][128];
    int n = 0;
    DIR *book = opendir("book");
    for (struct dirent *e; book && (e = readdir(book));) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".md") == 0)
            n = collect(e->d_name, figures, n);
    }
    if (book)
        closedir(book);
    ok(n >= 10, "the chapters include %d SVG figures", n);
    char png[64];
    snprintf(png, sizeof png, "/tmp/test_figures.%ld.png", (long)getpid());
    for (int i = 0; i < n; i++) {
        char path[200];
        snprintf(path, sizeof path, "book/%s", figures[i]);
        if (ok(access(path, F_OK) == 0, "%s exists", path))
            check_figure(figures[i], png);
    }
    /* The check can fail: a figure as wide as chapter 2's every-node picture was. */
    char svg[64], cmd[200];
    snprintf(svg, sizeof svg, "/tmp/test_figures.%ld.svg", (long)getpid());
    FILE *f = fopen(svg, "w");
    if (f) {
        fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"7000pt\" height=\"900pt\"/>\n", f);
        fclose(f);
    }
    unsigned width = 0, height = 0;
    snprintf(cmd, sizeof cmd, "timeout 60 rsvg-convert '%s' -o '%s'", svg, png);
    bool measured = system(cmd) == 0 && png_size(png, &width, &height);
    ok(measured && width > MAX_WIDTH, "a 7000 pt wide figure measures %u px, over the bound", width);
    unlink(svg);
    unlink(png);
    return done_testing();
}
