/* The public API's front half: status strings, the version, and programs (cell source
 * compiled and checked, no GPU involved). Key idea: a program that failed to compile is
 * still a handle, holding the diagnostics, as an NVRTC program is. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define RT_MAX_SOURCE (64u << 20) /* bytes of cell source at most */

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

rnncc_status rnncc_compile_string(const char *source, size_t len, const char *name,
                                  const rnncc_compile_options *options, rnncc_program **out) {
    if (!out) return RNNCC_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!source && len) return RNNCC_ERR_INVALID_ARGUMENT;
    rnncc_program *p = calloc(1, sizeof *p);
    if (!p) return RNNCC_ERR_NOMEM;
    arena_init(&p->arena);
    p->name = strdup(name ? name : "<string>");
    if (p->name && len > RT_MAX_SOURCE) { /* before anything reads len bytes of it */
        char msg[200];
        snprintf(msg, sizeof msg, "%s: error: len is %zu bytes; a cell source is at most %u bytes\n", p->name, len,
                 RT_MAX_SOURCE);
        if (options && options->on_diagnostic) options->on_diagnostic(options->user, "error", msg);
        if (!(p->log = strdup(msg))) { rnncc_program_destroy(p); return RNNCC_ERR_NOMEM; }
        *out = p;
        return RNNCC_ERR_COMPILE;
    }
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

rnncc_status rnncc_compile_file(const char *path, const rnncc_compile_options *options, rnncc_program **out) {
    if (!out || !path) return RNNCC_ERR_INVALID_ARGUMENT;
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOMEM ? RNNCC_ERR_NOMEM : RNNCC_ERR_NOT_FOUND;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            if (cap > RT_MAX_SOURCE) break; /* longer than a source may be: rnncc_compile_string says so */
            char *q = realloc(buf, cap = cap * 2 > RT_MAX_SOURCE ? RT_MAX_SOURCE + 1 : cap * 2);
            if (!q) { free(buf); buf = NULL; }
            else buf = q;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) { free(buf); return buf ? RNNCC_ERR_NOT_FOUND : RNNCC_ERR_NOMEM; }
    rnncc_status s = rnncc_compile_string(buf, n, path, options, out);
    free(buf);
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
