/* `rnncc run` and `rnncc devices`: run a cell forward on the GPU on random data, check it
 * against the double-precision reference, and time it; list the CUDA devices.
 * Key idea: the GPU result and the reference start from the very same float-rounded
 * weights and inputs, so the error shown is the GPU's alone. */
#include <cuda_runtime.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/rnncc.h"
#include "runtime/rt_verify.h"

typedef struct RunOpts {
    const char *file, *cell;
    const char *dims[64];
    int ndims, layers, bidir, varlen, repeat, check, train, keep_derived, json;
    rnncc_precision precision;
    rnncc_backend backend;
    rnncc_fold fold;
    int64_t T, N;
    uint64_t seed;
} RunOpts;

static int parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out) {
    long long v;
    if (!ir_parse_int(arg, lo, hi, &v)) {
        fprintf(stderr, "rnncc run: error: %s must be an integer in %lld..%lld, not '%s'\n", opt, (long long)lo, (long long)hi, arg);
        return 0;
    }
    *out = v;
    return 1;
}

_Static_assert(RNNCC_BACKEND_AUTO == 0 && RNNCC_BACKEND_CUBLAS == 1 && RNNCC_BACKEND_PERSISTENT == 2, "parse_word's order");
_Static_assert(RNNCC_FOLD_AUTO == 0 && RNNCC_FOLD_ON == 1 && RNNCC_FOLD_OFF == 2, "parse_word's order");

/* The index of arg among option opt's three words, or -1 with the error on stderr. */
static int parse_word(const char *opt, const char *arg, const char *const words[3]) {
    for (int i = 0; i < 3; i++)
        if (strcmp(arg, words[i]) == 0) return i;
    fprintf(stderr, "rnncc run: error: %s must be %s, %s or %s, not '%s'\n", opt, words[0], words[1], words[2], arg);
    return -1;
}

static int parse(int argc, char **argv, RunOpts *o) {
    static const struct option opts[] = {
        {"dim", required_argument, 0, 'D'}, {"batch", required_argument, 0, 'N'}, {"seq", required_argument, 0, 'T'},
        {"layers", required_argument, 0, 'L'}, {"bidirectional", no_argument, 0, 'b'},
        {"precision", required_argument, 0, 'p'}, {"cell", required_argument, 0, 'c'},
        {"varlen", no_argument, 0, 'v'}, {"repeat", required_argument, 0, 'r'}, {"seed", required_argument, 0, 's'},
        {"no-check", no_argument, 0, 'n'}, {"train", no_argument, 0, 't'}, {"backend", required_argument, 0, 'B'},
        {"keep-derived-weights", no_argument, 0, 'K'}, {"keep-half-weights", no_argument, 0, 'K'}, /* its earlier name */
        {"fold", required_argument, 0, 'F'}, {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    *o = (RunOpts){.layers = 1, .repeat = 20, .check = 1, .T = 16, .N = 8, .seed = 1};
    int c;
    int64_t v;
    unsigned char seen[256] = {0};
    optind = 1;
    while ((c = cli_getopt("run", argc, argv, "h", opts)) != -1) {
        if (c != 'D' && !cli_once("run", opts, c, seen)) return 0;
        switch (c) {
        case 'D': if (!cli_add_dim("run", optarg, o->dims, &o->ndims, 64)) return 0; break;
        case 'N': if (!parse_int("--batch", optarg, 1, INT32_MAX, &o->N)) return 0; break;
        case 'T': if (!parse_int("--seq", optarg, 0, INT32_MAX, &o->T)) return 0; break;
        case 'L': if (!parse_int("--layers", optarg, 1, 1024, &v)) return 0; o->layers = (int)v; break;
        case 'r': if (!parse_int("--repeat", optarg, 1, 100000, &v)) return 0; o->repeat = (int)v; break;
        case 's': if (!parse_int("--seed", optarg, 0, INT64_MAX, &v)) return 0; o->seed = (uint64_t)v; break;
        case 'b': o->bidir = 1; break;
        case 'v': o->varlen = 1; break;
        case 'n': o->check = 0; break;
        case 't': o->train = 1; break;
        case 'K': o->keep_derived = 1; break;
        case 'j': o->json = 1; break;
        case 'c': o->cell = optarg; break;
        case 'p': {
            if (!cli_parse_precision("run", optarg, &o->precision)) return 0;
            break;
        }
        case 'B': {
            static const char *const words[3] = {"auto", "cublas", "persistent"}; /* rnncc_backend's values in order */
            int v = parse_word("--backend", optarg, words);
            if (v < 0) return 0;
            o->backend = (rnncc_backend)v;
            break;
        }
        case 'F': {
            static const char *const words[3] = {"auto", "on", "off"}; /* rnncc_fold's values in order */
            int v = parse_word("--fold", optarg, words);
            if (v < 0) return 0;
            o->fold = (rnncc_fold)v;
            break;
        }
        case 'h':
            printf("usage: rnncc run FILE --dim NAME=VALUE... [--batch N] [--seq T] [--layers L] [--bidirectional]\n"
                   "                 [--precision P] [--cell NAME] [--varlen] [--train] [--repeat R] [--seed S]\n"
                   "                 [--backend auto|cublas|persistent] [--fold auto|on|off]\n"
                   "                 [--keep-derived-weights] [--no-check] [--json]\n"
                   "FILE '-' reads standard input. Defaults: --batch 8, --seq 16, --layers 1, --repeat 20, --seed 1,\n"
                   "--cell the file's only cell.\n"
                   "Runs the cell forward on the GPU on random data (weights uniform in +-1/sqrt(S), S the first\n"
                   "state's size; inputs in +-1), checks it against the double-precision CPU reference, and prints\n"
                   "the error (max |gpu - ref| / max |ref| per tensor) and the median time of R runs.\n"
                   "With --train it runs the training forward, backward data and backward weights, times the three\n"
                   "together, and checks dx, dh0 and every weight gradient against the reference's. Before each\n"
                   "checked pass the workspace (and in training the reserve) is filled with NaN, so a pass that\n"
                   "reads what it has not written fails the check.\n"
                   "--precision fp32 (default), tf32, fp16, bf16 or tf32x3 (fp16 and bf16: every cuBLAS GEMM's\n"
                   "inputs rounded to 16 bits, as cuDNN's TENSOR_OP_MATH_ALLOW_CONVERSION; persistent kernels hold\n"
                   "16-bit weights and round the states they multiply; tf32x3: every cuBLAS GEMM's inputs split\n"
                   "into two tf32 parts and three tensor-core products of them summed, persistent kernels as fp32).\n"
                   "Exit status 1 when an error exceeds its bound: outputs 1e-5 (fp32), 5e-5 (tf32x3), 5e-3 (tf32,\n"
                   "fp16) or 2e-2 (bf16), gradients 1e-4, 5e-4, 5e-2 or 2e-1. Where a cell's op has a derivative that jumps\n"
                   "(relu, abs, min, max, clamp, hardsigmoid), rounding that moves a value across the jump can\n"
                   "put gradients past their bound with nothing wrong: a note then says so.\n"
                   "--backend forces how the step loop runs (default auto: the rule of rnncc_model_backend);\n"
                   "the line 'backend:' says which ran and why ('backward backend:' for the backward pass).\n"
                   "--fold runs a cell the projection fold takes (an LSTMP) folded or as written (default auto:\n"
                   "folded where the products are tf32, fp16 or bf16, in fp32 where V = U P is at most 3 GFLOP\n"
                   "or is kept; docs/runtime.md); 'backend:' says which.\n"
                   "--keep-derived-weights keeps what the model derives from the weights from the first pass on (in\n"
                   "fp16 and bf16 the weights rounded to 16 bits, in every precision a folded cell's V = U P;\n"
                   "rnncc_model_desc.keep_derived_weights), as an inference server whose weights stay fixed would,\n"
                   "so the fold's rule counts V once (--keep-half-weights: its earlier name).\n"
                   "--no-check only times it (no reference: long sequences time in seconds, not minutes).\n"
                   "--json prints instead one JSON object on standard output and nothing on standard error, once the\n"
                   "options are read: file, T, N, layers, bidirectional, training, precision, diagnostics (the cell's\n"
                   "warnings), error (null, or why it did not run), then where it ran ms, repeat, us_per_step, backend\n"
                   "(and backward_backend), and where checked outputs and final_states (their errors), worst, bound\n"
                   "and in training gradients {dx, dh0, weights, worst_weight, bound, ok, kinks}; last ok. An error\n"
                   "that is not finite is null. The exit status is the same as without it.\n");
            exit(CLI_OK);
        default: return 0;
        }
    }
    if (optind != argc - 1) { fprintf(stderr, "rnncc run: error: expected exactly one input file (argument FILE)\n"); return 0; }
    o->file = argv[optind];
    return 1;
}

/* What a run found: a failure's message, or the measurements and checks. */
typedef struct RunReport {
    int status;             /* the CLI status */
    char error[900];        /* why it failed ("" where it ran) */
    int unread;             /* the file could not be read (its message is rnncc's, not the command's) */
    int in_log;             /* the failure is the cell's errors, which log holds */
    char *log;              /* the program's diagnostics (warnings), malloc'd; NULL for none */
    char why[640], bwhy[640];
    rnncc_model_sizes sz;
    RtVerify v;
    double tol, gtol;
    int ok, grad_ok;
} RunReport;

/* Compiles, creates, runs and checks the cell of o into r; prints nothing. */
static void run_cell(const RunOpts *o, RunReport *r) {
    memset(r, 0, sizeof *r);
    char *text = NULL;
    size_t len = 0;
    r->status = CLI_INPUT_ERROR;
    if (cli_read(o->file, &text, &len, r->error, sizeof r->error) != CLI_OK) {
        r->unread = 1;
        return;
    }
    rnncc_program *prog = NULL;
    rnncc_status s = rnncc_compile_string(text, len, cli_source_name(o->file), NULL, &prog);
    free(text);
    if (prog && rnncc_program_log(prog)[0]) r->log = strdup(rnncc_program_log(prog));
    if (s != RNNCC_OK) {
        snprintf(r->error, sizeof r->error, "%s", rnncc_status_string(s)); /* RNNCC_ERR_COMPILE: "the cell source has errors" */
        r->in_log = prog != NULL;
        rnncc_program_destroy(prog);
        return;
    }
    rnncc_model_desc desc = {o->cell, o->dims, o->ndims, o->layers, o->bidir, o->precision, -1, o->backend, o->fold,
                             o->keep_derived};
    rnncc_model *m = NULL;
    s = rnncc_model_create(prog, &desc, &m);
    rnncc_program_destroy(prog);
    if (s != RNNCC_OK) {
        /* the options the user gave, named as such: desc->dims is --dim, desc->cell is --cell */
        const char *msg = rnncc_model_error(m);
        if (strncmp(msg, "desc->dims: ", 12) == 0) snprintf(r->error, sizeof r->error, "%s (option --dim)", msg + 12);
        else if (strncmp(msg, "desc->cell: ", 12) == 0) snprintf(r->error, sizeof r->error, "%s (option --cell)", msg + 12);
        else if (strncmp(msg, "desc->cell is NULL but ", 23) == 0) /* "... but FILE defines N cells; name one" */
            snprintf(r->error, sizeof r->error, "%.*s; choose one with --cell NAME", (int)(strcspn(msg + 23, ";")), msg + 23);
        else if (s == RNNCC_ERR_NO_GPU) snprintf(r->error, sizeof r->error, "%s", msg); /* "no CUDA device: why" */
        else snprintf(r->error, sizeof r->error, "%s: %s", rnncc_status_string(s), msg);
        rnncc_model_destroy(m);
        if (s == RNNCC_ERR_INVALID_ARGUMENT || s == RNNCC_ERR_NOT_FOUND) r->status = CLI_USAGE_ERROR;
        return;
    }
    rnncc_backend used;
    s = rnncc_model_backend(m, o->N, &used, r->why, sizeof r->why);
    if (s == RNNCC_OK && o->train) s = rnncc_model_backward_backend(m, o->N, &used, r->bwhy, sizeof r->bwhy);
    r->v = (RtVerify){.T = o->T, .N = o->N, .varlen = o->varlen, .random_h0 = 1, .repeat = o->repeat, .seed = o->seed,
                      .backward = o->train, .time_only = !o->check, .nan_workspace = 1};
    if (s == RNNCC_OK) s = rt_verify(m, &r->v);
    if (s != RNNCC_OK) {
        snprintf(r->error, sizeof r->error, "%s: %s", rnncc_status_string(s), rnncc_model_error(m));
        rnncc_model_destroy(m);
        return;
    }
    rnncc_model_get_sizes(m, &r->sz);
    rnncc_model_destroy(m);
    r->tol = rt_verify_bound(o->precision, 0);
    r->gtol = rt_verify_bound(o->precision, 1);
    r->ok = !o->check || r->v.worst <= r->tol;
    r->grad_ok = !o->check || !o->train || r->v.grad_worst <= r->gtol;
    r->status = r->ok && r->grad_ok ? CLI_OK : CLI_INPUT_ERROR;
}

/* The run's lines (the text mode): a failure and the diagnostics on stderr, the results on stdout. */
static void print_text(const RunOpts *o, const RunReport *r) {
    if (r->log) fputs(r->log, stderr);
    if (r->error[0]) {
        if (!r->in_log) fprintf(stderr, "%s: error: %s\n", r->unread ? "rnncc" : "rnncc run", r->error);
        return;
    }
    const RtVerify *v = &r->v;
    printf("%s: T=%lld N=%lld layers=%d%s %s%s: %.3f ms per sequence, %.2f us per step (median of %d)\n",
           cli_source_name(o->file),
           (long long)o->T, (long long)o->N, o->layers, o->bidir ? " bidirectional" : "", o->train ? "training " : "",
           rnncc_precision_name(o->precision), v->median_ms, o->T ? v->median_ms * 1e3 / (double)o->T : 0.0, o->repeat);
    printf("  backend: %s\n", r->why);
    if (o->train) printf("  backward backend: %s\n", r->bwhy);
    if (!o->check) return;
    for (int q = 0; q < r->sz.noutputs; q++) printf("  output %d: relative error %.3g\n", q, v->out_err[q]);
    for (int q = 0; q < r->sz.nstates; q++) printf("  final state %d: relative error %.3g\n", q, v->state_err[q]);
    printf("  worst relative error against the double-precision reference: %.3g (bound %.0e): %s\n", v->worst, r->tol,
           r->ok ? "ok" : "TOO LARGE");
    if (!o->train) return;
    printf("  gradients: dx %.3g, dh0 %.3g, weights %.3g (worst: %s); bound %.0e: %s\n", v->dx_err, v->dh0_err, v->dw_err,
           v->dw_worst_name, r->gtol, r->grad_ok ? "ok" : "TOO LARGE");
    if (!r->grad_ok && v->kinks[0]) /* the derivative jumps: the check cannot tell a flip from a fault */
        printf("  note: %s's derivative jumps (docs/training.md, \"Kinks in the checks\"): where rounding moves a\n"
               "  value across the jump, the GPU takes the other side's derivative there, and the gradients can\n"
               "  differ past the bound with nothing wrong; a flip moves or goes away with another --seed, --batch,\n"
               "  --dim or --precision, a fault does not\n",
               v->kinks);
}

/* A number for JSON: finite ones as %.6g, others (an error of NaN or infinity) as null. */
static void put_number(StrBuf *out, double x) {
    if (isfinite(x)) sb_printf(out, "%.6g", x);
    else sb_puts(out, "null");
}

/* n numbers for JSON, as an array. */
static void put_numbers(StrBuf *out, const double *x, int n) {
    sb_putc(out, '[');
    for (int q = 0; q < n; q++) {
        if (q) sb_puts(out, ", ");
        put_number(out, x[q]);
    }
    sb_putc(out, ']');
}

/* The run as one JSON object on stdout (--json), nothing on stderr. */
static void print_json(const RunOpts *o, const RunReport *r) {
    StrBuf out = {0};
    const RtVerify *v = &r->v;
    sb_puts(&out, "{\"file\": ");
    sb_put_json(&out, cli_source_name(o->file));
    sb_printf(&out, ", \"T\": %lld, \"N\": %lld, \"layers\": %d, \"bidirectional\": %s, \"training\": %s, \"precision\": \"%s\",\n",
              (long long)o->T, (long long)o->N, o->layers, o->bidir ? "true" : "false", o->train ? "true" : "false",
              rnncc_precision_name(o->precision));
    sb_puts(&out, " \"diagnostics\": ");
    if (r->log) sb_put_json(&out, r->log);
    else sb_puts(&out, "\"\"");
    sb_puts(&out, ", \"error\": ");
    sb_put_json_or_null(&out, r->error);
    if (!r->error[0]) {
        sb_puts(&out, ",\n \"ms\": ");
        put_number(&out, v->median_ms);
        sb_printf(&out, ", \"repeat\": %d, \"us_per_step\": ", o->repeat);
        put_number(&out, o->T ? v->median_ms * 1e3 / (double)o->T : 0.0);
        sb_puts(&out, ", \"backend\": ");
        sb_put_json(&out, r->why);
        if (o->train) {
            sb_puts(&out, ", \"backward_backend\": ");
            sb_put_json(&out, r->bwhy);
        }
        if (o->check) {
            sb_puts(&out, ",\n \"outputs\": ");
            put_numbers(&out, v->out_err, r->sz.noutputs);
            sb_puts(&out, ", \"final_states\": ");
            put_numbers(&out, v->state_err, r->sz.nstates);
            sb_puts(&out, ", \"worst\": ");
            put_number(&out, v->worst);
            sb_printf(&out, ", \"bound\": %g", r->tol);
            if (o->train) {
                sb_puts(&out, ",\n \"gradients\": {\"dx\": ");
                put_number(&out, v->dx_err);
                sb_puts(&out, ", \"dh0\": ");
                put_number(&out, v->dh0_err);
                sb_puts(&out, ", \"weights\": ");
                put_number(&out, v->dw_err);
                sb_puts(&out, ", \"worst_weight\": ");
                sb_put_json(&out, v->dw_worst_name);
                sb_printf(&out, ", \"bound\": %g, \"ok\": %s, \"kinks\": ", r->gtol, r->grad_ok ? "true" : "false");
                sb_put_json(&out, v->kinks);
                sb_putc(&out, '}');
            }
        }
    }
    sb_printf(&out, ",\n \"ok\": %s}\n", r->status == CLI_OK ? "true" : "false");
    cli_write_output(NULL, sb_str(&out), out.len);
    sb_free(&out);
}

int cli_run(int argc, char **argv) {
    RunOpts o;
    if (!parse(argc, argv, &o)) return CLI_USAGE_ERROR;
    RunReport r;
    run_cell(&o, &r);
    if (o.json) print_json(&o, &r);
    else print_text(&o, &r);
    free(r.log);
    return r.status;
}

int cli_devices(int argc, char **argv) {
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: rnncc devices\n"
               "Lists the CUDA devices: index, name, architecture, multiprocessors, memory. Exit status 1 where there\n"
               "is none (the reason on standard error).\n");
        return CLI_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "rnncc devices: error: unexpected argument '%s' (rnncc devices takes none)\n", argv[1]);
        return CLI_USAGE_ERROR;
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        fprintf(stderr, "rnncc devices: error: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return CLI_INPUT_ERROR;
    }
    for (int i = 0; i < n; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        printf("%d: %s, sm_%d%d, %d multiprocessors, %.1f GiB\n", i, p.name, p.major, p.minor, p.multiProcessorCount,
               (double)p.totalGlobalMem / (1 << 30));
    }
    return CLI_OK;
}
