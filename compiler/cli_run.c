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
#include "ir/ref.h"
#include "runtime/rnncc.h"

typedef struct RunOpts {
    const char *file, *cell;
    const char *dims[64];
    int ndims, layers, bidir, varlen, repeat, check;
    rnncc_precision precision;
    int64_t T, N;
    uint64_t seed;
} RunOpts;

static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
/* Uniform in [-k, k), rounded to float so the GPU and the reference see the same value. */
static double uniform(uint64_t *s, double k) { return (double)(float)(((double)(next_rand(s) >> 11) * 0x1.0p-53 * 2 - 1) * k); }

static int parse_int(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    long long v = strtoll(arg, &end, 10);
    if (*arg == 0 || *end || v < lo || v > hi) {
        fprintf(stderr, "rnncc run: error: %s must be an integer in %lld..%lld, not '%s'\n", opt, (long long)lo, (long long)hi, arg);
        return 0;
    }
    *out = v;
    return 1;
}

static int parse(int argc, char **argv, RunOpts *o) {
    static const struct option opts[] = {
        {"dim", required_argument, 0, 'D'}, {"batch", required_argument, 0, 'N'}, {"seq", required_argument, 0, 'T'},
        {"layers", required_argument, 0, 'L'}, {"bidirectional", no_argument, 0, 'b'},
        {"precision", required_argument, 0, 'p'}, {"cell", required_argument, 0, 'c'},
        {"varlen", no_argument, 0, 'v'}, {"repeat", required_argument, 0, 'r'}, {"seed", required_argument, 0, 's'},
        {"no-check", no_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    *o = (RunOpts){.layers = 1, .repeat = 20, .check = 1, .T = 16, .N = 8, .seed = 1};
    int c;
    int64_t v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'D':
            if (o->ndims == 64) { fprintf(stderr, "rnncc run: error: too many --dim options\n"); return 0; }
            o->dims[o->ndims++] = optarg;
            break;
        case 'N': if (!parse_int("--batch", optarg, 1, INT32_MAX, &o->N)) return 0; break;
        case 'T': if (!parse_int("--seq", optarg, 0, INT32_MAX, &o->T)) return 0; break;
        case 'L': if (!parse_int("--layers", optarg, 1, 1024, &v)) return 0; o->layers = (int)v; break;
        case 'r': if (!parse_int("--repeat", optarg, 1, 100000, &v)) return 0; o->repeat = (int)v; break;
        case 's': if (!parse_int("--seed", optarg, 0, INT64_MAX, &v)) return 0; o->seed = (uint64_t)v; break;
        case 'b': o->bidir = 1; break;
        case 'v': o->varlen = 1; break;
        case 'n': o->check = 0; break;
        case 'c': o->cell = optarg; break;
        case 'p':
            if (strcmp(optarg, "fp32") == 0) o->precision = RNNCC_FP32;
            else if (strcmp(optarg, "tf32") == 0) o->precision = RNNCC_TF32;
            else { fprintf(stderr, "rnncc run: error: --precision must be fp32 or tf32, not '%s'\n", optarg); return 0; }
            break;
        case 'h':
            printf("usage: rnncc run FILE --dim NAME=VALUE... [--batch N] [--seq T] [--layers L] [--bidirectional]\n"
                   "                 [--precision fp32|tf32] [--cell NAME] [--varlen] [--repeat R] [--seed S] [--no-check]\n"
                   "Runs the cell forward on the GPU on random data (weights uniform in +-1/sqrt(S), S the first\n"
                   "state's size; inputs in +-1), checks it against the double-precision CPU reference, and prints\n"
                   "the error (max |gpu - ref| / max |ref| per tensor) and the median time of R runs.\n"
                   "Exit status 1 when the error exceeds 1e-5 (fp32) or 5e-3 (tf32).\n");
            exit(CLI_OK);
        default: return 0;
        }
    }
    if (optind != argc - 1) { fprintf(stderr, "rnncc run: error: expected exactly one input file (argument FILE)\n"); return 0; }
    o->file = argv[optind];
    return 1;
}

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 4) != cudaSuccess) return NULL;
    return p;
}

/* max |a - b| / max |b| over n elements (a float, b double). */
static double rel_err(const float *a, const double *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (isnan(e)) return INFINITY;
        if (e > num) num = e;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int cli_run(int argc, char **argv) {
    RunOpts o;
    if (!parse(argc, argv, &o)) return CLI_USAGE_ERROR;
    rnncc_program *prog = NULL;
    rnncc_status s = rnncc_compile_file(o.file, NULL, &prog);
    if (s != RNNCC_OK) {
        fprintf(stderr, "%s", prog ? rnncc_program_log(prog) : "");
        if (!prog) fprintf(stderr, "rnncc run: error: cannot read '%s'\n", o.file);
        rnncc_program_destroy(prog);
        return CLI_INPUT_ERROR;
    }
    fputs(rnncc_program_log(prog), stderr);
    rnncc_model_desc desc = {o.cell, o.dims, o.ndims, o.layers, o.bidir, o.precision, -1};
    rnncc_model *m = NULL;
    s = rnncc_model_create(prog, &desc, &m);
    if (s != RNNCC_OK) {
        fprintf(stderr, "rnncc run: error: %s: %s\n", rnncc_status_string(s), rnncc_model_error(m));
        rnncc_model_destroy(m);
        rnncc_program_destroy(prog);
        return s == RNNCC_ERR_INVALID_ARGUMENT || s == RNNCC_ERR_NOT_FOUND ? CLI_USAGE_ERROR : CLI_INPUT_ERROR;
    }
    int status = CLI_INPUT_ERROR;
    rnncc_model_sizes sz;
    rnncc_model_get_sizes(m, &sz);
    int dirs = o.bidir ? 2 : 1, units = o.layers * dirs, np = rnncc_model_param_count(m) / units;
    int64_t T = o.T, N = o.N, I = sz.input;
    uint64_t seed = o.seed;
    double k = 1 / sqrt((double)(sz.nstates ? sz.state_size[0] : 1));
    /* host data, double (reference) and float (GPU) copies of the same values */
    double ***params = calloc((size_t)units, sizeof *params);
    double *x = calloc((size_t)(T * N * I) + 1, sizeof *x);
    float *xf = calloc((size_t)(T * N * I) + 1, sizeof *xf);
    int *lengths = o.varlen ? calloc((size_t)N, sizeof *lengths) : NULL;
    int64_t *lengths64 = o.varlen ? calloc((size_t)N, sizeof *lengths64) : NULL;
    for (int64_t i = 0; i < T * N * I; i++) xf[i] = (float)(x[i] = uniform(&seed, 1));
    for (int64_t n = 0; o.varlen && n < N; n++)
        lengths64[n] = lengths[n] = n == 0 ? (int)T : (int)(next_rand(&seed) % (uint64_t)(T + 1));
    for (int u = 0; u < units; u++) {
        params[u] = calloc((size_t)np, sizeof **params);
        for (int p = 0; p < np; p++) {
            rnncc_param_info info;
            rnncc_model_param_info(m, u * np + p, &info);
            int64_t n = info.rows * info.cols;
            params[u][p] = malloc((size_t)n * sizeof(double));
            float *f = malloc((size_t)n * sizeof(float));
            for (int64_t i = 0; i < n; i++) f[i] = (float)(params[u][p][i] = uniform(&seed, k));
            s = rnncc_model_set_param(m, info.name, info.layer, info.direction, f, n);
            free(f);
            if (s != RNNCC_OK) { fprintf(stderr, "rnncc run: error: %s\n", rnncc_model_error(m)); goto out; }
        }
    }
    /* device buffers */
    float *dx = dev_alloc((size_t)(T * N * I) * sizeof(float)), *dy[8] = {0}, *dhT[8] = {0};
    for (int q = 0; q < sz.noutputs; q++) dy[q] = dev_alloc((size_t)(T * N * sz.output_size[q] * dirs) * sizeof(float));
    for (int q = 0; q < sz.nstates; q++) dhT[q] = dev_alloc((size_t)(units * N * sz.state_size[q]) * sizeof(float));
    size_t wsb;
    if ((s = rnncc_workspace_size(m, T, N, 0, &wsb)) != RNNCC_OK) { fprintf(stderr, "rnncc run: error: %s\n", rnncc_model_error(m)); goto out; }
    void *ws = dev_alloc(wsb);
    cudaMemcpy(dx, xf, (size_t)(T * N * I) * sizeof(float), cudaMemcpyHostToDevice);
    rnncc_io io = {T, N, dx, dy, lengths, NULL, dhT};
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float *times = calloc((size_t)o.repeat, sizeof *times);
    for (int r = -3; r < o.repeat; r++) { /* three untimed warm-up runs (graph capture happens in the first) */
        cudaEventRecord(e0, 0);
        s = rnncc_forward(m, &io, ws, wsb, NULL, 0, NULL);
        cudaEventRecord(e1, 0);
        if (s != RNNCC_OK) { fprintf(stderr, "rnncc run: error: forward: %s\n", rnncc_model_error(m)); goto out; }
        if (cudaEventSynchronize(e1) != cudaSuccess) { fprintf(stderr, "rnncc run: error: %s\n", cudaGetErrorString(cudaGetLastError())); goto out; }
        if (r >= 0) cudaEventElapsedTime(&times[r], e0, e1);
    }
    qsort(times, (size_t)o.repeat, sizeof *times, cmp_float);
    float med = times[o.repeat / 2];
    printf("cell %s: T=%lld N=%lld layers=%d%s %s: %.3f ms per sequence, %.2f us per step (median of %d)\n",
           o.cell ? o.cell : "(only)", (long long)T, (long long)N, o.layers, o.bidir ? " bidirectional" : "",
           o.precision == RNNCC_TF32 ? "tf32" : "fp32", med, T ? med * 1e3 / (double)T : 0.0, o.repeat);
    status = CLI_OK;
    if (o.check) {
        Arena arena;
        arena_init(&arena);
        Diags d;
        diag_init(&d, &arena, o.file, NULL, 0);
        size_t len;
        char *text = NULL;
        FILE *f = fopen(o.file, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            len = (size_t)ftell(f);
            fseek(f, 0, SEEK_SET);
            text = arena_alloc(&arena, len + 1);
            if (text && fread(text, 1, len, f) != len) text = NULL;
            fclose(f);
        }
        const IrModule *mod = text ? ir_compile(&arena, &d, text, len) : NULL;
        const IrCell *cell = mod ? ir_find_cell(mod, o.cell) : NULL;
        if (!cell) { fprintf(stderr, "rnncc run: error: cannot re-read %s for the reference\n", o.file); status = CLI_INPUT_ERROR; goto out; }
        int64_t *dv0 = arena_array(&arena, (size_t)cell->ndims + 1, sizeof *dv0), *dv1 = arena_array(&arena, (size_t)cell->ndims + 1, sizeof *dv1);
        ir_bind_dims(cell, o.dims, o.ndims, dv0, &d);
        memcpy(dv1, dv0, (size_t)cell->ndims * sizeof *dv0);
        if (o.layers > 1) dv1[cell->inputs[0].shape.dims[0]] = ir_node_len(cell, cell->outputs[0].node, dv0) * dirs;
        double *ry[8] = {0}, *rh[8] = {0};
        for (int q = 0; q < sz.noutputs; q++) ry[q] = calloc((size_t)(T * N * sz.output_size[q] * dirs) + 1, sizeof(double));
        for (int q = 0; q < sz.nstates; q++) rh[q] = calloc((size_t)(units * N * sz.state_size[q]) + 1, sizeof(double));
        RefStack rs = {cell, {dv0, dv1}, o.layers, dirs, T, N, lengths64, x, (const double *const *const *)params, NULL};
        if (ref_stack_forward(&rs, ry, rh) != 0) { fprintf(stderr, "rnncc run: error: the reference failed\n"); status = CLI_INPUT_ERROR; goto out; }
        double worst = 0, tol = o.precision == RNNCC_TF32 ? 5e-3 : 1e-5;
        for (int q = 0; q < sz.noutputs; q++) {
            int64_t n = T * N * sz.output_size[q] * dirs;
            float *g = malloc((size_t)n * sizeof(float) + 4);
            cudaMemcpy(g, dy[q], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost);
            double e = rel_err(g, ry[q], n);
            printf("  output %d: relative error %.3g\n", q, e);
            if (!(e <= worst)) worst = e;
            free(g);
            free(ry[q]);
        }
        for (int q = 0; q < sz.nstates; q++) {
            int64_t n = units * N * sz.state_size[q];
            float *g = malloc((size_t)n * sizeof(float) + 4);
            cudaMemcpy(g, dhT[q], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost);
            double e = rel_err(g, rh[q], n);
            printf("  final state %d: relative error %.3g\n", q, e);
            if (!(e <= worst)) worst = e;
            free(g);
            free(rh[q]);
        }
        printf("  worst relative error %.3g (bound %.0e): %s\n", worst, tol, worst <= tol ? "ok" : "TOO LARGE");
        if (!(worst <= tol)) status = CLI_INPUT_ERROR;
        arena_free(&arena);
    }
out:
    rnncc_model_destroy(m);
    rnncc_program_destroy(prog);
    return status;
}

int cli_devices(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
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
