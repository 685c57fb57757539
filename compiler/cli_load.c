/* Reading a source file (or standard input) and compiling it, for every subcommand.
 * Key idea: one place prints diagnostics, so every subcommand reports errors alike. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_read(const char *path, char **text, size_t *len, char *why, size_t why_size) {
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    *text = NULL;
    if (!f) {
        snprintf(why, why_size, "cannot open '%s': %s", path, strerror(errno));
        return CLI_INPUT_ERROR;
    }
    StrBuf sb = {0};
    int err = sb_read(&sb, f, RNNCC_MAX_SOURCE_BYTES);
    if (!is_stdin) fclose(f);
    *len = sb.len;
    if (!err && (*text = sb_take(&sb))) return CLI_OK;
    sb_free(&sb);
    if (!err) err = ENOMEM;
    if (err == EFBIG)
        snprintf(why, why_size, "'%s' is longer than %u bytes (64 MiB), the most a cell source may be",
                 cli_source_name(path), (unsigned)RNNCC_MAX_SOURCE_BYTES);
    else
        snprintf(why, why_size, "cannot read '%s': %s", cli_source_name(path), strerror(err));
    return CLI_INPUT_ERROR;
}

int cli_parse_source(CliSource *s, const char *path) {
    memset(s, 0, sizeof *s);
    s->path = path;
    arena_init(&s->arena);
    int st = cli_read(path, &s->text, &s->len, s->why, sizeof s->why);
    if (st != CLI_OK) return st;
    diag_init(&s->diags, &s->arena, cli_source_name(path), s->text, s->len);
    s->module = ir_compile(&s->arena, &s->diags, s->text, s->len);
    return s->module ? CLI_OK : CLI_INPUT_ERROR;
}

int cli_plan_cells(CliSource *s) {
    int ok = 1;
    for (int k = 0; s->module && k < s->module->ncells; k++) {
        const IrCell *c = s->module->cells[k];
        Plan *plan = sched_plan(&s->arena, c, &s->diags);
        ok &= plan != NULL;
        int symbols = 0;
        for (int d = 0; d < c->ndims; d++) symbols |= c->dims[d].name != NULL;
        if (plan && !symbols) { /* every size a literal: laid out as every command will (a size that overflows) */
            int64_t *dimval = arena_array(&s->arena, (size_t)c->ndims + 1, sizeof *dimval);
            ok &= dimval && ir_bind_dims(c, NULL, 0, dimval, &s->diags) && sched_layout(&s->arena, plan, dimval, &s->diags);
        }
    }
    return ok;
}

int cli_load(CliSource *s, const char *path) {
    int st = cli_parse_source(s, path);
    if (s->why[0]) {
        fprintf(stderr, "rnncc: error: %s\n", s->why);
        return st;
    }
    StrBuf out = {0};
    diag_render(&s->diags, &out);
    fputs(sb_str(&out), stderr);
    sb_free(&out);
    return st;
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
    if (!ir_parse_int(arg, 1, INT32_MAX, out)) {
        fprintf(stderr, "rnncc %s: error: %s takes a batch size N in 1..%d, not '%s'\n", cmd, opt, INT32_MAX, arg);
        return 0;
    }
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

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *opts) {
    char spec[32];
    snprintf(spec, sizeof spec, ":%s", shortopts); /* ':' first: a missing value answers ':', apart from '?' */
    opterr = 0;
    int c = getopt_long(argc, argv, spec, opts, NULL);
    if (c != '?' && c != ':') return c;
    /* the element getopt_long stopped at, where it is a long option: the options its name (to any '=') abbreviates
     * (optopt names the one it took, where it took one) */
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    size_t n = strncmp(arg, "--", 2) == 0 ? strcspn(arg + 2, "=") : 0;
    int longs = 0;
    for (const struct option *o = opts; n && o->name; o++)
        longs += (!optopt || o->val == optopt) && strncmp(o->name, arg + 2, n) == 0;
    if (c == ':' && longs) fprintf(stderr, "rnncc %s: error: option '%s' needs a value\n", cmd, arg);
    else if (c == ':') fprintf(stderr, "rnncc %s: error: option '-%c' needs a value\n", cmd, optopt);
    else if (optopt && longs) fprintf(stderr, "rnncc %s: error: option '%.*s' takes no value\n", cmd, (int)n + 2, arg);
    else if (optopt) fprintf(stderr, "rnncc %s: error: unknown option '-%c' (rnncc %s --help lists them)\n", cmd, optopt, cmd);
    else if (longs > 1) fprintf(stderr, "rnncc %s: error: option '%s' is ambiguous (rnncc %s --help lists them)\n", cmd, arg, cmd);
    else fprintf(stderr, "rnncc %s: error: unknown option '%s' (rnncc %s --help lists them)\n", cmd, arg, cmd);
    return '?';
}

int cli_once(const char *cmd, const struct option *opts, int c, unsigned char seen[256]) {
    if (c < 0 || c > 255 || !seen[c]++) return 1;
    const char *name = "?";
    for (const struct option *o = opts; o->name; o++)
        if (o->val == c) { name = o->name; break; }
    fprintf(stderr, "rnncc %s: error: %s--%s is given twice\n", cmd, c == 'o' ? "-o/" : "", name);
    return 0;
}

int cli_output_apart(const char *cmd, const char *out_path, const char *in_path) {
    struct stat out, in;
    if (!out_path || strcmp(out_path, "-") == 0 || strcmp(in_path, "-") == 0) return 1;
    if (stat(out_path, &out) != 0 || stat(in_path, &in) != 0) return 1; /* no such output yet: apart */
    if (out.st_dev != in.st_dev || out.st_ino != in.st_ino) return 1;
    fprintf(stderr, "rnncc %s: error: -o '%s' is the input file '%s'\n", cmd, out_path, in_path);
    return 0;
}

int cli_add_dim(const char *cmd, const char *arg, const char **dims, int *n, int max) {
    if (!strchr(arg, '=')) {
        fprintf(stderr, "rnncc %s: error: --dim takes NAME=VALUE, not '%s'\n", cmd, arg);
        return 0;
    }
    if (*n == max) {
        fprintf(stderr, "rnncc %s: error: too many --dim options (at most %d)\n", cmd, max);
        return 0;
    }
    dims[(*n)++] = arg;
    return 1;
}
