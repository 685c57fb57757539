/* `rnncc check --json`: every file's diagnostics and cells as one JSON object on stdout, nothing on stderr
 * (conventions.md's machine-readable mode), for editors and scripts.
 * Key idea: the same load and plan as `rnncc check` (cli_parse_source, cli_plan_cells); only the printing differs. */
#include <string.h>

#include "cli.h"

static const char *const level_names[] = {"error", "warning", "note"};

/* A shape as a list of its dimensions: names as strings, literals as numbers ([] for a scalar). */
static void put_shape(StrBuf *o, const IrCell *c, IrShape s) {
    int n = s.kind == IR_SCALAR ? 0 : s.kind == IR_VECTOR ? 1 : 2;
    sb_putc(o, '[');
    for (int i = 0; i < n; i++) {
        const IrDim *d = &c->dims[s.dims[i]];
        if (i) sb_puts(o, ", ");
        if (d->name) sb_put_json(o, d->name);
        else sb_printf(o, "%lld", (long long)d->literal);
    }
    sb_putc(o, ']');
}

/* One named, shaped thing: {"name": ..., "shape": [...]} */
static void put_named(StrBuf *o, const IrCell *c, const char *name, IrShape s) {
    sb_puts(o, "{\"name\": ");
    sb_put_json(o, name);
    sb_puts(o, ", \"shape\": ");
    put_shape(o, c, s);
    sb_putc(o, '}');
}

static void put_cell(StrBuf *o, const IrCell *c) {
    sb_puts(o, "{\"name\": ");
    sb_put_json(o, c->name);
    sb_printf(o, ", \"line\": %d, \"column\": %d, \"dims\": [", c->loc.line, c->loc.col);
    for (int d = 0, n = 0; d < c->ndims; d++)
        if (c->dims[d].name) {
            if (n++) sb_puts(o, ", ");
            sb_put_json(o, c->dims[d].name);
        }
    sb_puts(o, "],\n      \"inputs\": [");
    for (int i = 0; i < c->ninputs; i++) {
        if (i) sb_puts(o, ", ");
        put_named(o, c, c->inputs[i].name, c->inputs[i].shape);
    }
    sb_puts(o, "],\n      \"states\": [");
    for (int i = 0; i < c->nstates; i++) {
        if (i) sb_puts(o, ", ");
        put_named(o, c, c->states[i].name, c->states[i].shape);
    }
    sb_puts(o, "],\n      \"params\": [");
    for (int i = 0; i < c->nparams; i++) {
        if (i) sb_puts(o, ", ");
        put_named(o, c, c->params[i].name, c->params[i].shape);
    }
    sb_puts(o, "],\n      \"outputs\": [");
    for (int i = 0; i < c->noutputs; i++) {
        if (i) sb_puts(o, ", ");
        put_named(o, c, c->outputs[i].name, c->nodes[c->outputs[i].node].shape);
    }
    sb_puts(o, "]}");
}

/* One file's object; returns whether it had no error. */
static int put_file(StrBuf *o, const char *path) {
    CliSource s;
    cli_parse_source(&s, path);
    cli_plan_cells(&s); /* its errors are among the diagnostics */
    int ok = !s.why[0] && s.diags.nerrors == 0 && s.module; /* no module and no error: out of memory */
    sb_puts(o, "  {\"path\": ");
    sb_put_json(o, cli_source_name(path));
    sb_printf(o, ", \"ok\": %s, \"read_error\": ", ok ? "true" : "false");
    sb_put_json_or_null(o, s.why);
    sb_printf(o, ", \"errors\": %d, \"warnings\": %d,\n   \"diagnostics\": [", s.diags.nerrors, s.diags.nwarnings);
    int n = 0;
    for (const Diag *g = s.diags.head; g; g = g->next) {
        sb_puts(o, n++ ? ",\n     " : "\n     ");
        sb_printf(o, "{\"level\": \"%s\", \"line\": %d, \"column\": %d, \"length\": %d, \"message\": ",
                  level_names[g->level], g->loc.line, g->loc.col, g->loc.len);
        sb_put_json(o, g->msg);
        sb_putc(o, '}');
    }
    sb_puts(o, "],\n   \"cells\": [");
    for (int k = 0; ok && s.module && k < s.module->ncells; k++) {
        sb_puts(o, k ? ",\n     " : "\n     ");
        put_cell(o, s.module->cells[k]);
    }
    sb_puts(o, "]}");
    cli_source_free(&s);
    return ok;
}

int cli_check_json(int nfiles, char **paths) {
    StrBuf o = {0};
    int ok = 1;
    sb_puts(&o, "{\"files\": [\n");
    for (int i = 0; i < nfiles; i++) {
        if (i) sb_puts(&o, ",\n");
        ok &= put_file(&o, paths[i]);
    }
    sb_printf(&o, "\n], \"ok\": %s}\n", ok ? "true" : "false");
    int st = o.failed ? CLI_INPUT_ERROR : cli_write_output(NULL, sb_str(&o), o.len);
    sb_free(&o);
    return st != CLI_OK ? st : ok ? CLI_OK : CLI_INPUT_ERROR;
}
