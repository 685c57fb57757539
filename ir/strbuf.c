/* Growable text buffer with an indentation level.
 * Key idea: a failed allocation sets a flag checked once at the end, not at every write. */
#include "strbuf.h"

#include "c_locale.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sb_reserve(StrBuf *sb, size_t extra) {
    if (sb->failed) return 0;
    if (sb->len + extra + 1 <= sb->cap) return 1;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) { sb->failed = 1; return 0; }
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p) { sb->failed = 1; return 0; }
    sb->data = p;
    sb->cap = cap;
    return 1;
}

void sb_putn(StrBuf *sb, const char *s, size_t n) {
    if (!sb_reserve(sb, n)) return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = 0;
}

void sb_puts(StrBuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }
void sb_putc(StrBuf *sb, char c) { sb_putn(sb, &c, 1); }

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap) {
    CLocaleScope scope; /* generated text reads "0.5", whatever the caller's LC_NUMERIC */
    c_locale_enter(&scope);
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n >= 0 && sb_reserve(sb, (size_t)n)) {
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
        sb->len += (size_t)n;
    }
    c_locale_leave(&scope);
}

void sb_printf(StrBuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void sb_line(StrBuf *sb, const char *fmt, ...) {
    for (int i = 0; i < sb->indent; i++) sb_puts(sb, "    ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
    sb_putc(sb, '\n');
}

const char *sb_str(const StrBuf *sb) { return sb->data ? sb->data : ""; }

void sb_free(StrBuf *sb) {
    free(sb->data);
    memset(sb, 0, sizeof *sb);
}

char *sb_take(StrBuf *sb) {
    char *p = sb->failed ? NULL : sb->data;
    if (sb->failed) free(sb->data);
    else if (!p) p = calloc(1, 1);
    memset(sb, 0, sizeof *sb);
    return p;
}

int sb_read(StrBuf *sb, FILE *f, size_t max) {
    char chunk[16384];
    for (;;) {
        errno = 0;
        size_t got = fread(chunk, 1, sizeof chunk, f);
        if (got == 0) break;
        if (got > max || sb->len > max - got) return EFBIG;
        sb_putn(sb, chunk, got);
        if (sb->failed) return ENOMEM;
    }
    return !ferror(f) ? 0 : errno ? errno : EIO; /* EISDIR for a directory */
}

/* The length of the valid UTF-8 sequence at s (2 to 4), or 0. */
static int utf8_len(const unsigned char *s) {
    int n = s[0] >= 0xF5 ? 0 : s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0; /* F5..FF, 80..C1: never leads */
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0; /* overlong, surrogate */
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0; /* overlong, past U+10FFFF */
    return n;
}

void sb_put_json(StrBuf *sb, const char *s) {
    sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '"' || *p == '\\') {
            sb_putc(sb, '\\');
            sb_putc(sb, (char)*p++);
        } else if (*p == '\n') {
            sb_puts(sb, "\\n");
            p++;
        } else if (*p < 0x20 || *p == 0x7F) {
            sb_printf(sb, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            sb_putc(sb, (char)*p++);
        } else {
            int n = utf8_len(p);
            if (n) sb_putn(sb, (const char *)p, (size_t)n), p += n;
            else sb_puts(sb, "\\ufffd"), p++;
        }
    }
    sb_putc(sb, '"');
}

void sb_put_json_or_null(StrBuf *sb, const char *s) {
    if (s && s[0]) sb_put_json(sb, s);
    else sb_puts(sb, "null");
}
