/* Diagnostic collection and rendering in gcc/clang's format.
 * Key idea: errors are recorded, never printed or fatal where they arise; the host renders them. */
#include "diag.h"

#include <stdlib.h>
#include <string.h>

void diag_init(Diags *d, Arena *arena, const char *filename, const char *src, size_t srclen) {
    memset(d, 0, sizeof *d);
    d->arena = arena;
    d->filename = filename ? filename : "<input>";
    d->src = src;
    d->srclen = srclen;
}

static void diag_add(Diags *d, DiagLevel level, SrcLoc loc, const char *fmt, va_list ap) {
    int cap = d->max_errors > 0 ? d->max_errors : 20;
    if (level == DIAG_NOTE) {
        if (d->dropping) return; /* a note on a dropped error or warning */
    } else {
        /* Warnings are capped too: each quotes a source line, and a generated file with
         * thousands of unused parameters on one long line would print gigabytes. */
        int n = level == DIAG_ERROR ? d->nerrors++ : d->nwarnings++;
        d->dropping = n >= cap;
        if (d->dropping) return;
    }
    Diag *g = arena_alloc(d->arena, sizeof *g);
    if (!g) return;
    g->level = level;
    g->loc = loc;
    g->msg = arena_vprintf(d->arena, fmt, ap);
    if (!g->msg) g->msg = "(out of memory)";
    if (d->tail) d->tail->next = g;
    else d->head = g;
    d->tail = g;
}

#define DIAG_FN(fn, level)                                      \
    void fn(Diags *d, SrcLoc loc, const char *fmt, ...) {       \
        va_list ap;                                             \
        va_start(ap, fmt);                                      \
        diag_add(d, level, loc, fmt, ap);                       \
        va_end(ap);                                             \
    }
DIAG_FN(diag_error, DIAG_ERROR)
DIAG_FN(diag_warning, DIAG_WARNING)
DIAG_FN(diag_note, DIAG_NOTE)

/* Finds the start and length of 1-based line `line` in the source. */
const char *src_line_end(const char *p, const char *end) {
    while (p < end && *p != '\n' && *p != '\r') p++;
    return p;
}

const char *src_next_line(const char *p, const char *end) {
    p = src_line_end(p, end);
    if (p == end) return end;
    return *p == '\r' && p + 1 < end && p[1] == '\n' ? p + 2 : p + 1;
}

static int find_line(const Diags *d, int line, const char **start, size_t *len) {
    if (!d->src || line < 1) return 0;
    const char *p = d->src, *end = d->src + d->srclen;
    for (int l = 1; l < line; l++) {
        if (src_line_end(p, end) == end) return 0; /* no such line */
        p = src_next_line(p, end);
    }
    *start = p;
    *len = (size_t)(src_line_end(p, end) - p);
    return 1;
}

static const char *level_name(DiagLevel l) {
    return l == DIAG_ERROR ? "error" : l == DIAG_WARNING ? "warning" : "note";
}

/* Whether s starts with the UTF-8 of a bidirectional control: U+200E, U+200F, U+202A..U+202E, U+2066..U+2069. */
static int bidi_control(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    if (n < 3 || u[0] != 0xE2) return 0;
    return (u[1] == 0x80 && (u[2] == 0x8E || u[2] == 0x8F || (u[2] >= 0xAA && u[2] <= 0xAE))) ||
           (u[1] == 0x81 && u[2] >= 0xA6 && u[2] <= 0xA9);
}

void diag_render_one(const Diags *d, const Diag *g, StrBuf *out) {
    if (g->loc.line > 0)
        sb_printf(out, "%s:%d:%d: %s: %s\n", d->filename, g->loc.line, g->loc.col,
                  level_name(g->level), g->msg);
    else
        sb_printf(out, "%s: %s: %s\n", d->filename, level_name(g->level), g->msg);
    const char *line;
    size_t len;
    if (g->loc.line <= 0 || !find_line(d, g->loc.line, &line, &len)) return;
    /* a long line is quoted around the column, at most QUOTE bytes ("..." where cut) */
    enum { QUOTE = 160 };
    size_t at = g->loc.col > 0 ? (size_t)g->loc.col - 1 : 0, from = 0, upto = len;
    if (len > QUOTE) {
        from = at > QUOTE / 2 ? at - QUOTE / 2 : 0;
        upto = from + QUOTE < len ? from + QUOTE : len;
    }
    sb_printf(out, "%5d | %s", g->loc.line, from ? "..." : "");
    /* tabs and control bytes become spaces, and Unicode's bidirectional controls "???" (a comment's U+202E must
     * not reorder the quote in a terminal), byte for byte, so carets align */
    for (size_t i = from; i < upto; i++) {
        unsigned char ch = (unsigned char)line[i];
        if (bidi_control(line + i, len - i)) {
            sb_puts(out, "???");
            i += 2;
        } else {
            sb_putc(out, ch < ' ' || ch == 127 ? ' ' : (char)ch);
        }
    }
    sb_printf(out, "%s\n      | %s", upto < len ? "..." : "", from ? "   " : "");
    for (size_t i = from; i < at; i++) sb_putc(out, ' ');
    sb_putc(out, '^');
    for (int i = 1; i < g->loc.len; i++) sb_putc(out, '~');
    sb_putc(out, '\n');
}

/* Orders diagnostics by position; a note stays after the diagnostic it belongs to. */
typedef struct DiagGroup { const Diag *lead; int order; } DiagGroup;

static int group_cmp(const void *pa, const void *pb) {
    const DiagGroup *a = pa, *b = pb;
    if (a->lead->loc.line != b->lead->loc.line) return a->lead->loc.line < b->lead->loc.line ? -1 : 1;
    if (a->lead->loc.col != b->lead->loc.col) return a->lead->loc.col < b->lead->loc.col ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

void diag_render(const Diags *d, StrBuf *out) {
    int n = 0;
    for (const Diag *g = d->head; g; g = g->next) n += g->level != DIAG_NOTE;
    DiagGroup *groups = n ? malloc((size_t)n * sizeof *groups) : NULL;
    if (groups) {
        int i = 0;
        for (const Diag *g = d->head; g; g = g->next)
            if (g->level != DIAG_NOTE) groups[i] = (DiagGroup){g, i}, i++;
        qsort(groups, (size_t)n, sizeof *groups, group_cmp);
        for (i = 0; i < n; i++) {
            diag_render_one(d, groups[i].lead, out);
            for (const Diag *g = groups[i].lead->next; g && g->level == DIAG_NOTE; g = g->next)
                diag_render_one(d, g, out);
        }
        free(groups);
    } else {
        for (const Diag *g = d->head; g; g = g->next) diag_render_one(d, g, out);
    }
    int cap = d->max_errors > 0 ? d->max_errors : 20;
    if (d->nerrors > cap)
        sb_printf(out, "%s: note: %d more errors not shown\n", d->filename, d->nerrors - cap);
    if (d->nwarnings > cap)
        sb_printf(out, "%s: note: %d more warnings not shown\n", d->filename, d->nwarnings - cap);
}
