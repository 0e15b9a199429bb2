/* untrusted_text.c: bytes that came from a file or a peer, made safe to
 * print. A corrupted checkpoint's tensor name, a peer's job name or a
 * TF_CONFIG string could hold a terminal's escape sequences or a newline
 * that forges a log line; every such byte is written as \xNN instead. */
#include "runtime.h"

size_t fl_escape_untrusted(const char *in, size_t len, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    if (outlen == 0)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)in[i];
        bool plain = b >= ' ' && b <= '~' && b != '\\';
        size_t need = plain ? 1 : b == '\\' ? 2 : 4;
        if (n + need >= outlen)
            break; /* cut whole: never half an escape */
        if (plain) {
            out[n++] = (char)b;
        } else if (b == '\\') {
            out[n++] = '\\';
            out[n++] = '\\';
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[b >> 4];
            out[n++] = hex[b & 15];
        }
    }
    out[n] = '\0';
    return n;
}
