/* Reading a source file (or standard input) and compiling it, for every subcommand.
 * Key idea: one place prints diagnostics, so every subcommand reports errors alike. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_read(const char *path, char **text, size_t *len) {
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "rnncc: error: cannot open '%s': %s\n", path, strerror(errno));
        return CLI_INPUT_ERROR;
    }
    StrBuf sb = {0};
    int err = sb_read(&sb, f, RNNCC_MAX_SOURCE_BYTES);
    if (!is_stdin) fclose(f);
    *len = sb.len;
    if (!err && (*text = sb_take(&sb))) return CLI_OK;
    sb_free(&sb);
    *text = NULL;
    if (!err) err = ENOMEM;
    if (err == EFBIG)
        fprintf(stderr, "rnncc: error: '%s' is longer than %u bytes (64 MiB), the most a cell source may be\n", path,
                (unsigned)RNNCC_MAX_SOURCE_BYTES);
    else
        fprintf(stderr, "rnncc: error: cannot read '%s': %s\n", path, strerror(err));
    return CLI_INPUT_ERROR;
}

int cli_load(CliSource *s, const char *path) {
    memset(s, 0, sizeof *s);
    s->path = path;
    arena_init(&s->arena);
    int st = cli_read(path, &s->text, &s->len);
    if (st != CLI_OK) return st;
    diag_init(&s->diags, &s->arena, strcmp(path, "-") == 0 ? "<stdin>" : path, s->text, s->len);
    s->module = ir_compile(&s->arena, &s->diags, s->text, s->len);
    StrBuf out = {0};
    diag_render(&s->diags, &out);
    fputs(sb_str(&out), stderr);
    sb_free(&out);
    return s->module ? CLI_OK : CLI_INPUT_ERROR;
}

void cli_source_free(CliSource *s) {
    free(s->text);
    arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}

int cli_write_output(const char *out_path, const char *text, size_t len) {
    FILE *f = out_path && strcmp(out_path, "-") != 0 ? fopen(out_path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "rnncc: error: cannot write '%s': %s\n", out_path, strerror(errno));
        return CLI_INPUT_ERROR;
    }
    int ok = fwrite(text, 1, len, f) == len;
    ok &= (f == stdout ? fflush(f) : fclose(f)) == 0;
    if (!ok) {
        fprintf(stderr, "rnncc: error: writing '%s' failed\n", out_path ? out_path : "standard output");
        return CLI_INPUT_ERROR;
    }
    return CLI_OK;
}

int cli_parse_batch(const char *cmd, const char *opt, const char *arg, long long *out) {
    char *end = NULL;
    long long v = strtoll(arg, &end, 10);
    if (!*arg || *end || v < 1 || v > INT32_MAX) {
        fprintf(stderr, "rnncc %s: error: %s takes a batch size N >= 1, not '%s'\n", cmd, opt, arg);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_precision(const char *cmd, const char *arg, rnncc_precision *out) {
    for (int p = RNNCC_FP32; p <= RNNCC_TF32X3; p++)
        if (strcmp(arg, rnncc_precision_name((rnncc_precision)p)) == 0) {
            *out = (rnncc_precision)p;
            return 1;
        }
    fprintf(stderr, "rnncc %s: error: --precision must be fp32, tf32, fp16, bf16 or tf32x3, not '%s'\n", cmd, arg);
    return 0;
}
