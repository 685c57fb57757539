/* The CUDA emitter: one growable text buffer (ir/strbuf.h) with an indentation level, and
 * the small helpers every generator shares (identifier checks, float literals). */
#ifndef RNNCC_CG_EMIT_H
#define RNNCC_CG_EMIT_H
#include <stddef.h>

#include "ir/strbuf.h"

/* Appends one line at the current indentation (4 spaces a level); an empty format
 * appends an empty line, without trailing spaces. */
void cg_emit(StrBuf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a line (e.g. "for (...) {" or "{") and indents the lines after it one level. */
void cg_open(StrBuf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Dedents one level and appends "}" followed by suffix (NULL or "" for none). */
void cg_close(StrBuf *out, const char *suffix);

/* Returns 1 when s is a plain identifier [A-Za-z_][A-Za-z0-9_]* of at most 200 characters:
 * the only text from a cell that may be pasted into generated code. */
int cg_ident_ok(const char *s);
/* Writes v, rounded to float, as a CUDA float literal that reads back exactly ("1.0f",
 * "-0.25f", "1e+20f"). Returns 0 when the float is not finite (nothing usable written). */
int cg_float_literal(double v, char *buf, size_t size);

#endif
