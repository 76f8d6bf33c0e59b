/* JSON text for the tools' machine-readable output. */
#include <stdio.h>
#include <string.h>

#include "meshfs/util.h"

/* Length of the valid UTF-8 sequence at s (max n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A JSON string; invalid UTF-8 bytes become U+FFFD so the line stays valid. */
void mfs_json_str(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t k = utf8_len(p + i, n - i);
            if (k == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, k, f);
                i += k;
            }
        }
    }
    fputc('"', f);
}
