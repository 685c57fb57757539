/* The emitter's buffer helpers: indented lines, blocks, checked identifiers, float literals.
 * Key idea: everything generated goes through these, so layout and escaping live in one place. */
#include "emit.h"

#include "ir/c_locale.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void emit_line(StrBuf *out, const char *fmt, va_list ap) {
    size_t start = out->len;
    for (int i = 0; i < out->indent; i++) sb_puts(out, "    ");
    size_t text = out->len;
    sb_vprintf(out, fmt, ap);
    if (!out->failed && out->len == text) { /* an empty line: no indentation */
        out->len = start;
        if (out->data) out->data[start] = 0;
    }
    sb_putc(out, '\n');
}

void cg_emit(StrBuf *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit_line(out, fmt, ap);
    va_end(ap);
}

void cg_open(StrBuf *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit_line(out, fmt, ap);
    va_end(ap);
    out->indent++;
}

void cg_close(StrBuf *out, const char *suffix) {
    if (out->indent > 0) out->indent--;
    cg_emit(out, "}%s", suffix ? suffix : "");
}

int cg_ident_ok(const char *s) {
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
    size_t n = 0;
    for (; *s; s++, n++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return n <= 200;
}

int cg_float_literal(double v, char *buf, size_t size) {
    float f = (float)v;
    if (!isfinite(f) || size < 32) return 0;
    /* the shortest form that reads back as the same float (9 digits always do), in the C locale */
    CLocaleScope scope;
    c_locale_enter(&scope);
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, size, "%.*g", digits, (double)f);
        if (strtof(buf, NULL) == f) break;
    }
    c_locale_leave(&scope);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    strcat(buf, "f");
    return 1;
}
