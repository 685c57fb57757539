/* The public API's front half: status strings, the version, and programs (cell source
 * compiled and checked, no GPU involved). Key idea: a program that failed to compile is
 * still a handle, holding the diagnostics, as an NVRTC program is. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

const char *rnncc_precision_name(rnncc_precision p) {
    static const char *const names[] = {"fp32", "tf32", "fp16", "bf16", "tf32x3"};
    return (unsigned)p < sizeof names / sizeof *names ? names[p] : "?";
}

const char *rnncc_status_string(rnncc_status s) {
    switch (s) {
    case RNNCC_OK: return "success";
    case RNNCC_ERR_INVALID_ARGUMENT: return "invalid argument";
    case RNNCC_ERR_COMPILE: return "the cell source has errors";
    case RNNCC_ERR_NOMEM: return "out of host memory";
    case RNNCC_ERR_OVERFLOW: return "a size overflows";
    case RNNCC_ERR_NOT_FOUND: return "not found";
    case RNNCC_ERR_UNSUPPORTED: return "not supported";
    case RNNCC_ERR_NO_GPU: return "no CUDA device available";
    case RNNCC_ERR_CUDA: return "CUDA error";
    case RNNCC_ERR_CUBLAS: return "cuBLAS error";
    case RNNCC_ERR_NVRTC: return "run-time compilation failed";
    case RNNCC_ERR_WORKSPACE: return "workspace or reserve too small";
    }
    return "unknown status";
}

const char *rnncc_version(void) { return RNNCC_VERSION; }

/* Forwards each rendered diagnostic to the host's callback. */
static void report(const Diags *d, const rnncc_compile_options *o) {
    if (!o || !o->on_diagnostic) return;
    for (const Diag *g = d->head; g; g = g->next) {
        StrBuf one = {0};
        diag_render_one(d, g, &one);
        o->on_diagnostic(o->user, g->level == DIAG_ERROR ? "error" : g->level == DIAG_WARNING ? "warning" : "note",
                         sb_str(&one));
        sb_free(&one);
    }
}

/* "name: error: why\n", whole however long name is (a path), told to o's on_diagnostic where there is one;
 * returned malloc'd, or NULL when memory ran out (then nothing is told). */
static char *say(const rnncc_compile_options *o, const char *name, const char *fmt, va_list ap) {
    StrBuf msg = {0};
    sb_printf(&msg, "%s: error: ", name ? name : "rnncc");
    sb_vprintf(&msg, fmt, ap);
    sb_putc(&msg, '\n');
    char *text = sb_take(&msg);
    if (text && o && o->on_diagnostic) o->on_diagnostic(o->user, "error", text);
    return text;
}

/* Returns status after saying why (say): a call refused before there is a program to hold its log. */
static rnncc_status refuse(const rnncc_compile_options *o, const char *name, rnncc_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static rnncc_status refuse(const rnncc_compile_options *o, const char *name, rnncc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    free(say(o, name, fmt, ap));
    va_end(ap);
    return status;
}

/* A program that did not compile, its log "name: error: why" (said as well), in *out: RNNCC_ERR_COMPILE, or
 * RNNCC_ERR_NOMEM with *out NULL. */
static rnncc_status failed_program(const char *name, const rnncc_compile_options *o, rnncc_program **out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static rnncc_status failed_program(const char *name, const rnncc_compile_options *o, rnncc_program **out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = say(o, name, fmt, ap);
    va_end(ap);
    rnncc_program *p = msg ? calloc(1, sizeof *p) : NULL;
    if (!p) { free(msg); return RNNCC_ERR_NOMEM; }
    arena_init(&p->arena);
    p->name = strdup(name);
    p->log = msg;
    if (!p->name) { rnncc_program_destroy(p); return RNNCC_ERR_NOMEM; }
    *out = p;
    return RNNCC_ERR_COMPILE;
}

rnncc_status rnncc_compile_string(const char *source, size_t len, const char *name,
                                  const rnncc_compile_options *options, rnncc_program **out) {
    if (!out) return refuse(options, name, RNNCC_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!source && len) return refuse(options, name, RNNCC_ERR_INVALID_ARGUMENT, "source is NULL but len is %zu", len);
    if (len > RNNCC_MAX_SOURCE_BYTES) /* before anything reads len bytes of it */
        return failed_program(name ? name : "<string>", options, out, "len is %zu bytes; a cell source is at most %zu bytes",
                              len, RNNCC_MAX_SOURCE_BYTES);
    rnncc_program *p = calloc(1, sizeof *p);
    if (!p) return RNNCC_ERR_NOMEM;
    arena_init(&p->arena);
    p->name = strdup(name ? name : "<string>");
    p->source = malloc(len + 1);
    if (!p->source || !p->name) { rnncc_program_destroy(p); return RNNCC_ERR_NOMEM; }
    if (len) memcpy(p->source, source, len);
    p->source[len] = 0;
    p->len = len;
    Diags d;
    diag_init(&d, &p->arena, p->name, p->source, len);
    p->module = ir_compile(&p->arena, &d, p->source, len);
    StrBuf log = {0};
    diag_render(&d, &log);
    p->log = sb_take(&log);
    report(&d, options);
    if (!p->log || p->arena.failed) { rnncc_program_destroy(p); return RNNCC_ERR_NOMEM; }
    *out = p;
    return p->module ? RNNCC_OK : RNNCC_ERR_COMPILE;
}

/* err's text, thread-safe (strerror need not be): glibc's strerror_r where _GNU_SOURCE, else POSIX's. */
static const char *error_text(int err, char *buf, size_t size) {
#if defined(_GNU_SOURCE)
    return strerror_r(err, buf, size);
#else
    return strerror_r(err, buf, size) == 0 ? buf : "unknown error";
#endif
}

rnncc_status rnncc_compile_file(const char *path, const rnncc_compile_options *options, rnncc_program **out) {
    char text[128];
    if (!out) return refuse(options, path, RNNCC_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!path) return refuse(options, NULL, RNNCC_ERR_INVALID_ARGUMENT, "path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) {
        int err = errno;
        return refuse(options, path, err == ENOMEM ? RNNCC_ERR_NOMEM : RNNCC_ERR_NOT_FOUND, "cannot open: %s",
                      error_text(err, text, sizeof text));
    }
    StrBuf sb = {0};
    int err = sb_read(&sb, f, RNNCC_MAX_SOURCE_BYTES);
    fclose(f);
    rnncc_status s;
    if (err == EFBIG)
        s = failed_program(path, options, out, "the file is longer than %zu bytes, the most a cell source may be",
                           RNNCC_MAX_SOURCE_BYTES);
    else if (err == ENOMEM)
        s = RNNCC_ERR_NOMEM;
    else if (err)
        s = refuse(options, path, RNNCC_ERR_NOT_FOUND, "cannot read: %s", error_text(err, text, sizeof text));
    else
        s = rnncc_compile_string(sb_str(&sb), sb.len, path, options, out);
    sb_free(&sb);
    return s;
}

const char *rnncc_program_log(const rnncc_program *p) { return p && p->log ? p->log : ""; }

void rnncc_program_destroy(rnncc_program *p) {
    if (!p) return;
    arena_free(&p->arena);
    free(p->source);
    free(p->name);
    free(p->log);
    free(p);
}
