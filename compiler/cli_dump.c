/* `rnncc check` and `rnncc dump`: check cell files, print a cell's IR as text or dot.
 * Key idea: both go through cli_load, so the diagnostics are the same as every other command's. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "codegen/cg.h"
#include "ir/fold_projection.h"
#include "ir/fold_rule.h"
#include "ir/sched.h"

int cli_check(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {"json", no_argument, 0, 'j'}, {0, 0, 0, 0}};
    int c, json = 0;
    unsigned char seen[256] = {0};
    optind = 1;
    while ((c = cli_getopt("check", argc, argv, "h", opts)) != -1) {
        if (!cli_once("check", opts, c, seen)) return CLI_USAGE_ERROR;
        if (c == 'h') {
            printf("usage: rnncc check [--json] FILE...\n"
                   "Parses and checks each cell file ('-' reads standard input), and plans each cell as every\n"
                   "other command does (what cannot be planned is an error here too); prints diagnostics.\n"
                   "--json prints instead one JSON object on standard output and nothing on standard error:\n"
                   "{\"files\": [{\"path\", \"ok\", \"read_error\" (null or why the file cannot be read), \"errors\",\n"
                   "\"warnings\", \"diagnostics\": [{\"level\", \"line\", \"column\", \"length\", \"message\"}],\n"
                   "\"cells\" (where the file has no error): [{\"name\", \"line\", \"column\", \"dims\", \"inputs\",\n"
                   "\"states\", \"params\", \"outputs\": [{\"name\", \"shape\": [dimension names, or numbers]}]}]}],\n"
                   "\"ok\"}. The exit status is the same as without it.\n");
            return CLI_OK;
        }
        if (c == 'j') {
            json = 1;
            continue;
        }
        return CLI_USAGE_ERROR;
    }
    if (optind >= argc) {
        fprintf(stderr, "rnncc check: error: no input files (argument FILE)\n");
        return CLI_USAGE_ERROR;
    }
    int stdin_reads = 0;
    for (int i = optind; i < argc; i++) stdin_reads += strcmp(argv[i], "-") == 0;
    if (stdin_reads > 1) { /* the second would read nothing: standard input is read to its end once */
        fprintf(stderr, "rnncc check: error: '-' (standard input) is given %d times; it can be read once\n", stdin_reads);
        return CLI_USAGE_ERROR;
    }
    if (json) return cli_check_json(argc - optind, argv + optind);
    int status = CLI_OK;
    for (int i = optind; i < argc; i++) {
        CliSource s;
        if (cli_load(&s, argv[i]) != CLI_OK) status = CLI_INPUT_ERROR;
        const Diag *printed = s.diags.tail; /* cli_load printed the checker's diagnostics; the plan's follow */
        if (!cli_plan_cells(&s)) status = CLI_INPUT_ERROR;
        StrBuf err = {0};
        for (const Diag *g = printed ? printed->next : s.diags.head; g; g = g->next) diag_render_one(&s.diags, g, &err);
        fputs(sb_str(&err), stderr);
        sb_free(&err);
        cli_source_free(&s);
    }
    return status;
}

/* Whether the runtime runs a cell the projection fold takes folded (its rule, ir/fold_rule.h) at the dimension
 * values dimval in precision, and what that means for the schedule dumped (the cell as written, or with --fold the
 * folded one, which shares the cell's dimensions). */
static void fold_line(CliSource *s, const IrCell *ic, const IrFold *fold, const int64_t *dimval, rnncc_precision precision,
                      int kept, StrBuf *out) {
    IrFold probe;
    const IrFold *f = fold ? fold : ir_fold_projection(&s->arena, ic, &probe) ? &probe : NULL;
    if (!f) return; /* a cell the fold does not take runs as written: nothing to say */
    const IrFoldProducts products = ir_fold_products_of(precision);
    char by[160];
    const char *why_not = ir_fold_rule(products, rnncc_precision_name(precision), ir_fold_derived_flops(f, dimval), kept, by,
                                       sizeof by);
    sb_printf(out, "  fold (%s): the runtime runs the cell %s (%s)%s%s", rnncc_precision_name(precision),
              why_not ? "as written" : "folded", by, why_not ? ": " : "", why_not ? why_not : "");
    if (!why_not && !fold) sb_printf(out, "; the schedule above is the cell as written, --fold dumps the one that runs");
    if (why_not && fold) sb_printf(out, "; the schedule above runs where the fold is forced (rnncc run --fold on)");
    if (why_not && !fold) sb_printf(out, "; rnncc run --fold on forces it (--fold dumps that schedule)");
    sb_putc(out, '\n');
}

/* Plans one cell (and lays it out when dimensions are bound) into out. */
static int dump_schedule(CliSource *s, const IrCell *ic, const IrFold *fold, int dot, const char **dims, int ndims,
                         long long batch, rnncc_precision precision, int kept, StrBuf *out) {
    int before = s->diags.nerrors;
    Plan *plan = sched_plan(&s->arena, ic, &s->diags);
    if (plan && fold && !cli_fold_pack_like(s, "dump", plan, fold)) return CLI_INPUT_ERROR;
    PlanLayout *layout = NULL;
    int64_t *dimval = NULL;
    int bound = 1;
    if (plan && ndims) {
        dimval = arena_array(&s->arena, (size_t)ic->ndims + 1, sizeof *dimval);
        bound = dimval && ir_bind_dims(ic, dims, ndims, dimval, &s->diags);
        if (bound) layout = sched_layout(&s->arena, plan, dimval, &s->diags);
    }
    if (s->diags.nerrors > before) {
        StrBuf err = {0};
        diag_render(&s->diags, &err);
        fputs(sb_str(&err), stderr);
        sb_free(&err);
        return bound ? CLI_INPUT_ERROR : CLI_USAGE_ERROR; /* a --dim that names no dimension or no value: usage, as emit */
    }
    if (dot) sched_dump_dot(plan, out);
    else sched_dump(plan, layout, out);
    /* training memory the layout saves: one adjoint for two GEMM results that add up alone, and one
     * stored sum where one is hoisted */
    for (int b = 0; !dot && layout && b < plan->nbuffers; b++) {
        int a = cg_adjoint_shared(layout, b);
        if (a >= 0)
            sb_printf(out, "  training: B%d's adjoint is B%d's in the forward direction (their products add up alone)\n", b, a);
        int into = cg_value_summed(layout, b);
        if (into >= 0)
            sb_printf(out, "  training: B%d's step GEMM adds into B%d's columns in the forward direction where the forward "
                           "runs per step (beta = 1)\n", b, into);
    }
    if (dot || !batch) return CLI_OK;
    /* the backend a model of these dimensions takes for this batch and precision (automatic choice), each pass */
    const char *prec = rnncc_precision_name(precision);
    const CgProducts products = cg_products_of(precision); /* the precision's products (codegen/cg.h) */
    for (int backward = 0; backward < 2; backward++) {
        CgPersist P;
        char why[512], rule[160];
        const char *pass = backward ? "backward" : "forward";
        CgPersistAsk ask = cg_persist_h100_ask(batch, backward, products, 0);
        ask.twins = precision == RNNCC_FP16 || precision == RNNCC_BF16; /* as the runtime asks (rt_half), and emit */
        cg_persist_direct_rule(&s->arena, layout, &ask, 0, 0); /* the runtime's rule without a search */
        int in_pairs, fits = cg_persist_h100_plan(&s->arena, layout, &ask, 1, &P, why, sizeof why, &in_pairs);
        sb_printf(out, "  %s backend (batch %lld, %s, on an H100): ", pass, batch, prec);
        if (!fits) sb_printf(out, "cuBLAS per step: %s\n", why);
        else if (!cg_persist_preferred(batch, products, backward, CG_ALONE, &P, rule, sizeof rule))
            sb_printf(out, "cuBLAS per step: %s (%s)\n", rule, why);
        else
            sb_printf(out, "persistent: %s%s%s\n", why, in_pairs ? "; in pairs: " : "", in_pairs ? cg_persist_pairs_reason(&P) : "");
    }
    fold_line(s, ic, fold, dimval, precision, kept, out);
    if (precision == RNNCC_TF32X3)
        sb_printf(out, "  tf32x3: every cuBLAS GEMM (the hoisted ones, and the step's where it runs per step) as one tf32 GEMM "
                       "over its inputs split in two parts (three products); the persistent kernels' products are fp32's\n");
    return CLI_OK;
}

/* The cell after the projection fold (what it did in f), with a line saying so, or NULL with the reason on stderr. */
static const IrCell *folded(CliSource *s, const IrCell *ic, IrFold *f, StrBuf *out) {
    const IrCell *c = cli_fold_cell(s, "dump", ic, f);
    if (c) ir_fold_describe(f, c, out);
    return c;
}

int cli_dump(int argc, char **argv) {
    static const struct option opts[] = {
        {"ir", no_argument, 0, 'i'}, {"dot", no_argument, 0, 'd'}, {"cell", required_argument, 0, 'c'},
        {"schedule", no_argument, 0, 's'}, {"dim", required_argument, 0, 'D'}, {"batch", required_argument, 0, 'N'},
        {"output", required_argument, 0, 'o'}, {"precision", required_argument, 0, 'p'},
        {"fold", no_argument, 0, 'f'}, {"keep-derived-weights", no_argument, 0, 'K'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *what = NULL, *cell = NULL, *out_path = NULL;
    const char *dims[64];
    int ndims = 0, schedule = 0, precision_given = 0, fold = 0, kept = 0;
    rnncc_precision precision = RNNCC_FP32;
    long long batch = 0;
    int c;
    unsigned char seen[256] = {0};
    optind = 1;
    while ((c = cli_getopt("dump", argc, argv, "o:h", opts)) != -1) {
        if (c != 'D' && !cli_once("dump", opts, c, seen)) return CLI_USAGE_ERROR;
        switch (c) {
        case 'i': what = "ir"; break;
        case 'd': what = "dot"; break;
        case 'c': cell = optarg; break;
        case 'o': out_path = optarg; break;
        case 's': schedule = 1; break;
        case 'f': fold = 1; break;
        case 'K': kept = 1; break;
        case 'N': if (!cli_parse_batch("dump", "--batch", optarg, &batch)) return CLI_USAGE_ERROR; break;
        case 'p':
            if (!cli_parse_precision("dump", optarg, &precision)) return CLI_USAGE_ERROR;
            precision_given = 1;
            break;
        case 'D': if (!cli_add_dim("dump", optarg, dims, &ndims, 64)) return CLI_USAGE_ERROR; break;
        case 'h':
            printf("usage: rnncc dump (--ir | --schedule) [--dot] [--dim NAME=VALUE]... [--batch N]\n"
                   "                  [--precision fp32|tf32|fp16|bf16|tf32x3] [--keep-derived-weights] [--fold]\n"
                   "                  [--cell NAME] [-o|--output FILE] FILE\n"
                   "Prints each cell in FILE (or only --cell NAME): its IR, or with --schedule its execution plan\n"
                   "(GEMMs, fused kernels, buffers, packed parameters; with --dim bindings, also offsets and sizes,\n"
                   "which buffers' adjoints training keeps as one, and which step GEMMs add into hoisted results).\n"
                   "--dot prints either as Graphviz dot instead of text. With --dim and --batch N, --schedule also\n"
                   "says which backend runs N sequences (on an H100, in --precision: default fp32) and why, and for\n"
                   "a cell the projection fold takes, whether the runtime's rule runs it folded (docs/runtime.md;\n"
                   "--keep-derived-weights: for a model that keeps V = U P, rnncc_model_desc.keep_derived_weights).\n"
                   "--fold dumps each cell after the projection fold (a state only multiplied, whose next value is\n"
                   "P @ u, becomes u; its products U @ s read derived weights U P; docs/codegen.md), or says why\n"
                   "it does not fold.\n");
            return CLI_OK;
        default: return CLI_USAGE_ERROR;
        }
    }
    if (schedule && what && strcmp(what, "ir") == 0) {
        fprintf(stderr, "rnncc dump: error: --ir and --schedule exclude each other\n");
        return CLI_USAGE_ERROR;
    }
    if (!what && !schedule) {
        fprintf(stderr, "rnncc dump: error: say what to dump (--ir, --schedule or --dot)\n");
        return CLI_USAGE_ERROR;
    }
    if (!what) what = "ir";
    if (batch && (!schedule || !ndims)) {
        fprintf(stderr, "rnncc dump: error: --batch applies to --schedule with every dimension bound (--dim)\n");
        return CLI_USAGE_ERROR;
    }
    if (precision_given && !batch) {
        fprintf(stderr, "rnncc dump: error: --precision applies to --schedule with --batch N\n");
        return CLI_USAGE_ERROR;
    }
    if (kept && !batch) {
        fprintf(stderr, "rnncc dump: error: --keep-derived-weights applies to --schedule with --batch N\n");
        return CLI_USAGE_ERROR;
    }
    if (ndims && !schedule) {
        fprintf(stderr, "rnncc dump: error: --dim applies to --schedule only\n");
        return CLI_USAGE_ERROR;
    }
    if (optind != argc - 1) {
        fprintf(stderr, "rnncc dump: error: expected exactly one input file (argument FILE)\n");
        return CLI_USAGE_ERROR;
    }
    if (!cli_output_apart("dump", out_path, argv[optind])) return CLI_USAGE_ERROR;
    CliSource s;
    int status = cli_load(&s, argv[optind]);
    if (status == CLI_OK) {
        StrBuf out = {0};
        int found = 0;
        for (int i = 0; i < s.module->ncells; i++) {
            const IrCell *ic = s.module->cells[i];
            if (cell && strcmp(ic->name, cell) != 0) continue;
            if (found++) sb_putc(&out, '\n');
            IrFold f;
            if (fold && !(ic = folded(&s, ic, &f, &out))) {
                status = CLI_INPUT_ERROR;
                break;
            }
            if (schedule) {
                status = dump_schedule(&s, ic, fold ? &f : NULL, strcmp(what, "dot") == 0, dims, ndims, batch, precision,
                                       kept, &out);
                if (status != CLI_OK) break;
            } else if (strcmp(what, "ir") == 0) {
                ir_dump(ic, &out);
            } else {
                ir_dump_dot(ic, &out);
            }
        }
        if (status != CLI_OK) { /* the schedule's diagnostics were printed */
            if (status == CLI_USAGE_ERROR && ndims && !cell && s.module->ncells > 1) /* --dim fits one cell of several */
                fprintf(stderr, "rnncc dump: note: %s defines %d cells, each bound by the same --dim; --cell NAME dumps one\n",
                        cli_source_name(s.path), s.module->ncells);
        } else if (!found) {
            fprintf(stderr, "rnncc dump: error: no cell named '%s' in %s (option --cell)\n", cell, cli_source_name(s.path));
            status = CLI_USAGE_ERROR;
        } else {
            status = out.failed ? CLI_INPUT_ERROR : cli_write_output(out_path, sb_str(&out), out.len);
        }
        sb_free(&out);
    }
    cli_source_free(&s);
    return status;
}
