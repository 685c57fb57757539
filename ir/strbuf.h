/* A growable text buffer: the one way the compiler builds output text (dumps,
 * diagnostics, generated CUDA). Allocation failure is remembered, never fatal. */
#ifndef RNNCC_STRBUF_H
#define RNNCC_STRBUF_H
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef struct StrBuf {
    char *data;   /* NUL-terminated once anything was written; may be NULL when empty */
    size_t len, cap;
    int failed;   /* set once memory ran out; later writes are dropped */
    int indent;   /* indentation level used by sb_line */
} StrBuf;

/* Appends n bytes. */
void sb_putn(StrBuf *sb, const char *s, size_t n);
/* Appends a NUL-terminated string. */
void sb_puts(StrBuf *sb, const char *s);
/* Appends one character. */
void sb_putc(StrBuf *sb, char c);
/* Appends printf-formatted text. */
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends vprintf-formatted text. */
void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
/* Appends one line: the current indentation (4 spaces a level), the text, a newline. */
void sb_line(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the rest of stream f, at most max bytes in all; 0, or EFBIG past max, ENOMEM, or the read's errno
 * (EIO where it set none). */
int sb_read(StrBuf *sb, FILE *f, size_t max);
/* Appends s as a JSON string, quoted: '"', '\\' and control bytes escaped, valid UTF-8 kept, any other byte
 * U+FFFD (so the text is valid JSON whatever s holds). */
void sb_put_json(StrBuf *sb, const char *s);
/* sb_put_json, or null where s is NULL or empty. */
void sb_put_json_or_null(StrBuf *sb, const char *s);
/* Returns the text (never NULL: "" when empty). */
const char *sb_str(const StrBuf *sb);
/* Frees the buffer and resets it to empty. */
void sb_free(StrBuf *sb);
/* Hands the malloc'd text to the caller (who frees it) and resets the buffer; NULL if it failed. */
char *sb_take(StrBuf *sb);

#endif
