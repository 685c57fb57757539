/* Diagnostics as values: each carries a location and a message; one renderer
 * prints them in the compilers' format with the source line and a caret. */
#ifndef RNNCC_DIAG_H
#define RNNCC_DIAG_H
#include "arena.h"
#include "strbuf.h"

typedef struct SrcLoc {
    int line, col; /* 1-based; line 0 means "no location" */
    int len;       /* length of the offending token in columns (at least 1) */
} SrcLoc;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct Diag {
    DiagLevel level;
    SrcLoc loc;
    const char *msg;
    struct Diag *next;
} Diag;

/* A sink for one source file's diagnostics. Text comes from the owning arena. */
typedef struct Diags {
    Arena *arena;
    const char *filename; /* as shown in messages */
    const char *src;      /* the source text, to quote lines; may be NULL */
    size_t srclen;
    Diag *head, *tail;
    int nerrors, nwarnings;
    int max_errors;       /* errors (and warnings) past this are counted but not kept; 0 = default (20) */
    int dropping;         /* the last error or warning was not kept, so neither are its notes */
} Diags;

/* Where the line at p ends (its line break, or end): lines end at LF, CR LF, or a CR alone (an old Mac file),
 * for every reader of line numbers alike (the scanner, diagnostics, generated code's comments). */
const char *src_line_end(const char *p, const char *end);
/* Where the line after the one at p starts (end where there is none). */
const char *src_next_line(const char *p, const char *end);

/* Prepares a sink for the named source text. */
void diag_init(Diags *d, Arena *arena, const char *filename, const char *src, size_t srclen);
/* Records an error at loc. */
void diag_error(Diags *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records a warning at loc. */
void diag_warning(Diags *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records a note (attached context for the previous diagnostic) at loc. */
void diag_note(Diags *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Renders one diagnostic as `file:line:col: level: msg`, the source line and a caret. */
void diag_render_one(const Diags *d, const Diag *g, StrBuf *out);
/* Renders all diagnostics sorted by position, then a count line for each level that had some dropped. */
void diag_render(const Diags *d, StrBuf *out);

#endif
