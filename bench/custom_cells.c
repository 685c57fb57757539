/* custom_cells: rnncc on cells cuDNN cannot run (peephole LSTM, multiplicative LSTM with M = H,
 * LSTM with a projection P = H/2, by the fold's rule and as written, coupled input-forget gate LSTM)
 * at bench_rnn's configurations,
 * and each one's time over rnncc's own LSTM at the same sizes (the target: within 15%).
 * Key idea: the LSTM baseline is measured in the same process, on the same kind of data, right
 * before the custom cells, so the ratio compares like with like.
 *
 *   make bench && ./build/bench/custom_cells --config fastrnns --precision fp32
 *
 * No library computes these cells for comparison here; rnncc's own tests check them against
 * the double-precision reference (rnncc run). This program checks that every output element is
 * written and finite (outputs start as NaN). Exit status: 0, 1 a failure, 2 usage, 77 no GPU. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* The cells: name (for --cells), file (cells/FILE.cell), the extra dimension they bind as a fraction of H,
 * and whether the projection fold runs (the rule's choice, or as written: docs/runtime.md). */
typedef struct Custom {
    const char *name, *file, *extra_dim; /* extra_dim NULL: none */
    int extra_num, extra_den;            /* extra = H * num / den */
    const char *label;
    rnncc_fold fold;
} Custom;
static const Custom customs[] = {
    {"lstm", "lstm", NULL, 0, 1, "lstm (baseline)", RNNCC_FOLD_AUTO},
    {"peephole", "peephole", NULL, 0, 1, "peephole", RNNCC_FOLD_AUTO},
    {"mlstm", "mlstm", "M", 1, 1, "mlstm M=H", RNNCC_FOLD_AUTO},
    {"lstmp", "lstmp", "P", 1, 2, "lstmp P=H/2", RNNCC_FOLD_AUTO},
    {"lstmp_written", "lstmp", "P", 1, 2, "lstmp as written", RNNCC_FOLD_OFF},
    {"cifg", "cifg", NULL, 0, 1, "cifg", RNNCC_FOLD_AUTO},
};
enum { NCUSTOM = (int)(sizeof customs / sizeof customs[0]) };
static const double TARGET_RATIO = 1.15;

typedef enum St { ST_NONE, ST_OK, ST_NA, ST_FAIL, ST_SKIP } St;
typedef struct Res {
    St st;
    Timing t;
} Res;
typedef struct Row {
    const Config *cfg;
    Prec prec;
    int training;
    Res cell[NCUSTOM];
} Row;

typedef struct Options {
    const Config *configs[MAX_CONFIGS];
    int nconfigs;
    Prec precs[NPREC];
    int nprecs;
    int use[NCUSTOM];
    int do_infer, do_train, repeat, warmup, quick;
    double budget_s;
    const char *markdown, *summary, *cells_dir;
    uint64_t seed;
} Options;

static Row rows[2 * MAX_CONFIGS * 2];
static int nrows, failures;

static const char *res_text(const Res *r, char *buf, size_t size) {
    switch (r->st) {
    case ST_OK: snprintf(buf, size, "%.3f", r->t.median_ms); break;
    case ST_NA: snprintf(buf, size, "n/a"); break;
    case ST_FAIL: snprintf(buf, size, "FAIL"); break;
    case ST_SKIP: snprintf(buf, size, "skip"); break;
    default: snprintf(buf, size, "-"); break;
    }
    return buf;
}

/* "12.345 (1.07)": the time and its ratio to the LSTM baseline ("!" past the target). */
static const char *cell_text(const Row *r, int k, char *buf, size_t size) {
    char t[16];
    res_text(&r->cell[k], t, sizeof t);
    if (k > 0 && r->cell[k].st == ST_OK && r->cell[0].st == ST_OK) {
        double ratio = r->cell[k].t.median_ms / r->cell[0].t.median_ms;
        snprintf(buf, size, "%s (%.2f%s)", t, ratio, ratio <= TARGET_RATIO ? "" : "!");
    } else {
        snprintf(buf, size, "%s", t);
    }
    return buf;
}

static void print_header(FILE *f) {
    fprintf(f, "%-12s %-4s %-5s", "config", "prec", "mode");
    for (int k = 0; k < NCUSTOM; k++) fprintf(f, " %18s", customs[k].label);
    fprintf(f, "\n");
}

static void print_row(FILE *f, const Row *r) {
    fprintf(f, "%-12s %-4s %-5s", r->cfg->name, prec_names[r->prec], r->training ? "train" : "infer");
    for (int k = 0; k < NCUSTOM; k++) {
        char buf[40];
        fprintf(f, " %18s", cell_text(r, k, buf, sizeof buf));
    }
    fprintf(f, "\n");
}

/* Copies n floats back and counts the ones that are not finite (NaN = never written). */
static int64_t nonfinite_on_device(const float *dev, int64_t n) {
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!h) { fprintf(stderr, "custom_cells: error: out of host memory\n"); return -1; }
    int64_t bad = CK_CUDA(cudaMemcpy(h, dev, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost)) ? bench_count_nonfinite(h, n) : -1;
    free(h);
    return bad;
}

/* Measures one cell at one configuration and precision into ri (inference) or rt (training), the other NULL, on a
 * model of its own: inference keeps what the model derives from its weights (its 16-bit copy, a folded cell's V,
 * rnncc_model_desc.keep_derived_weights, as bench_rnn's rows do; the fold's rule then counts V once), training
 * derives them every forward, as a training loop whose weights change every step must. */
static void run_phase(const Options *o, cudaStream_t stream, const Config *cfg, Prec p, int k, Row *ri, Row *rt, uint64_t seed) {
    const Custom *c = &customs[k];
    char dI[32], dH[32], dX[32], file[1024];
    snprintf(dI, sizeof dI, "I=%d", cfg->I);
    snprintf(dH, sizeof dH, "H=%d", cfg->H);
    const char *dims[3] = {dI, dH, dX};
    int ndims = 2;
    if (c->extra_dim) {
        snprintf(dX, sizeof dX, "%s=%d", c->extra_dim, cfg->H * c->extra_num / c->extra_den);
        ndims = 3;
    }
    snprintf(file, sizeof file, "%s/%s.cell", o->cells_dir, c->file);
    const char *label = c->name;
    RnnccRun r;
    memset(&r, 0, sizeof r);
    rnncc_model *m = bench_model_create(file, NULL, dims, ndims, cfg->layers, cfg->bidir, bench_rnncc_precision(p), c->fold,
                                        ri != NULL);
    int ok = m && bench_rnncc_alloc(&r, m, cfg->T, cfg->N, rt != NULL) == 0 &&
             bench_rnncc_random_params(m, 1.0f / sqrtf((float)cfg->H), &seed) == 0 && bench_rnncc_random_inputs(&r, &seed) == 0;
    if (!ok) {
        printf("*** %s %s %s: could not set up (see the error above) ***\n", cfg->name, prec_names[p], label);
        failures++;
        if (ri) ri->cell[k].st = ST_FAIL;
        if (rt) rt->cell[k].st = ST_FAIL;
        goto done;
    }
    if (ri) {
        int64_t ny = cfg->T * (int64_t)cfg->N * r.sz.output, bad = 0;
        ok = CK_CUDA(cudaMemset(r.y, 0xff, (size_t)ny * sizeof(float)));
        for (int q = 0; ok && q < r.sz.nstates; q++)
            ok = CK_CUDA(cudaMemset(r.hT[q], 0xff, (size_t)(r.units * cfg->N * r.sz.state_size[q]) * sizeof(float)));
        ok = ok && bench_rnncc_infer(&r, stream) == 0 && CK_CUDA(cudaStreamSynchronize(stream));
        if (ok) bad = nonfinite_on_device(r.y, ny);
        for (int q = 0; ok && bad == 0 && q < r.sz.nstates; q++) bad = nonfinite_on_device(r.hT[q], r.units * cfg->N * r.sz.state_size[q]);
        if (!ok || bad != 0) {
            if (bad > 0) printf("\n*** %s %s %s inference: %lld outputs are NaN/inf (unwritten or overflowed) ***\n\n", cfg->name,
                                prec_names[p], label, (long long)bad);
            failures++;
            ri->cell[k].st = ST_FAIL;
        } else if (bench_time(bench_rnncc_infer, &r, stream, o->warmup, o->repeat, &ri->cell[k].t) != 0) {
            failures++;
            ri->cell[k].st = ST_FAIL;
        } else {
            ri->cell[k].st = ST_OK;
            printf("  %s %s infer %-9s %9.3f ms (min %.3f, max %.3f, %d runs)\n", cfg->name, prec_names[p], label,
                   ri->cell[k].t.median_ms, ri->cell[k].t.min_ms, ri->cell[k].t.max_ms, ri->cell[k].t.runs);
        }
    }
    if (rt) {
        int pr = bench_rnncc_probe_training(&r, stream);
        int64_t nx = cfg->T * (int64_t)cfg->N * r.sz.input, bad = 0;
        if (pr == 0) {
            printf("  %s %s train %s: n/a: %s\n", cfg->name, prec_names[p], label, r.why_no_training);
            rt->cell[k].st = ST_NA;
        } else if (pr < 0 || !CK_CUDA(cudaMemset(r.dx, 0xff, (size_t)nx * sizeof(float))) ||
                   !CK_CUDA(cudaMemset(r.dweights, 0, (size_t)r.nweights * sizeof(float))) || bench_rnncc_train(&r, stream) != 0 ||
                   !CK_CUDA(cudaStreamSynchronize(stream)) || (bad = nonfinite_on_device(r.dx, nx)) != 0 ||
                   (bad = nonfinite_on_device(r.dweights, r.nweights)) != 0) {
            if (bad > 0) printf("\n*** %s %s %s training: %lld gradients are NaN/inf ***\n\n", cfg->name, prec_names[p], label,
                                (long long)bad);
            failures++;
            rt->cell[k].st = ST_FAIL;
        } else if (bench_time(bench_rnncc_train, &r, stream, o->warmup, o->repeat, &rt->cell[k].t) != 0) {
            failures++;
            rt->cell[k].st = ST_FAIL;
        } else {
            rt->cell[k].st = ST_OK;
            printf("  %s %s train %-9s %9.3f ms (min %.3f, max %.3f, %d runs)\n", cfg->name, prec_names[p], label,
                   rt->cell[k].t.median_ms, rt->cell[k].t.min_ms, rt->cell[k].t.max_ms, rt->cell[k].t.runs);
        }
    }
done:
    fflush(stdout);
    bench_rnncc_free(&r);
    rnncc_model_destroy(m);
    cudaGetLastError();
}

/* Measures one cell at one configuration and precision into ri (inference) and rt (training), either may be NULL. */
static void run_cell(const Options *o, cudaStream_t stream, const Config *cfg, Prec p, int k, Row *ri, Row *rt, uint64_t seed) {
    if (ri) run_phase(o, stream, cfg, p, k, ri, NULL, seed);
    if (rt) run_phase(o, stream, cfg, p, k, NULL, rt, seed);
}

static void markdown_row(FILE *f, const Row *r) {
    fprintf(f, "| %s (%d, %d, %d, %d, %d) | %s | %s |", r->cfg->name, r->cfg->T, r->cfg->N, r->cfg->H, r->cfg->layers,
            r->cfg->bidir ? 2 : 1, prec_names[r->prec], r->training ? "training" : "inference");
    for (int k = 0; k < NCUSTOM; k++) {
        char buf[40];
        fprintf(f, " %s |", cell_text(r, k, buf, sizeof buf));
    }
    fprintf(f, "\n");
}

static void usage(FILE *f) {
    fprintf(f, "usage: custom_cells [--config NAME]... [--precision fp32|tf32|fp16|bf16|tf32x3]... [--cells peephole,mlstm,lstmp,lstmp_written,cifg]\n"
               "                    [--mode both|inference|training] [--repeat R] [--warmup W] [--quick]\n"
               "                    [--budget SECONDS] [--markdown FILE] [--summary FILE] [--cells-dir DIR] [--seed S]\n"
               "Times rnncc on cells cuDNN cannot run and prints each one's time over rnncc's LSTM at the same sizes\n"
               "(target: ratio <= %.2f; '!' marks a miss). Configurations as bench_rnn (--help there).\n"
               "Defaults: every configuration, fp32 and tf32, every cell above, both modes, 5 warm-ups, median of 20.\n",
            TARGET_RATIO);
}

static int parse_args(int argc, char **argv, Options *o) {
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'}, {"precision", required_argument, 0, 'p'},
        {"cells", required_argument, 0, 'C'}, {"mode", required_argument, 0, 'm'},
        {"repeat", required_argument, 0, 'r'}, {"warmup", required_argument, 0, 'w'},
        {"quick", no_argument, 0, 'q'}, {"budget", required_argument, 0, 'B'},
        {"markdown", required_argument, 0, 'M'}, {"summary", required_argument, 0, 'S'},
        {"cells-dir", required_argument, 0, 'd'}, {"seed", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    *o = (Options){.repeat = 20, .warmup = 5, .cells_dir = "cells", .seed = 1, .do_infer = 1, .do_train = 1};
    int c, repeat_given = 0, warmup_given = 0, cells_given = 0;
    char *items[64], *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int n = 0;
        if (c == 'c' || c == 'p' || c == 'C') {
            n = bench_split(optarg, items, 64);
            if (n < 0) { fprintf(stderr, "custom_cells: error: too many items in '%s'\n", optarg); return 0; }
        }
        switch (c) {
        case 'c':
            if (!bench_add_configs("custom_cells", items, n, o->configs, &o->nconfigs, MAX_CONFIGS)) return 0;
            break;
        case 'p':
            if (!bench_add_precs("custom_cells", items, n, o->precs, &o->nprecs)) return 0;
            break;
        case 'C':
            cells_given = 1;
            for (int i = 0; i < n; i++) {
                int k = 1;
                while (k < NCUSTOM && strcmp(customs[k].name, items[i]) != 0) k++;
                if (k == NCUSTOM) { fprintf(stderr, "custom_cells: error: --cells takes peephole, mlstm, lstmp, lstmp_written, cifg, not '%s'\n", items[i]); return 0; }
                o->use[k] = 1;
            }
            break;
        case 'm':
            if (strcmp(optarg, "both") == 0) o->do_infer = o->do_train = 1;
            else if (strcmp(optarg, "inference") == 0) { o->do_infer = 1; o->do_train = 0; }
            else if (strcmp(optarg, "training") == 0) { o->do_infer = 0; o->do_train = 1; }
            else { fprintf(stderr, "custom_cells: error: --mode must be both, inference or training\n"); return 0; }
            break;
        case 'r': o->repeat = (int)strtol(optarg, &end, 10); repeat_given = 1;
            if (*end || o->repeat < 1) { fprintf(stderr, "custom_cells: error: --repeat must be a positive integer\n"); return 0; }
            break;
        case 'w': o->warmup = (int)strtol(optarg, &end, 10); warmup_given = 1;
            if (*end || o->warmup < 0) { fprintf(stderr, "custom_cells: error: --warmup must be a non-negative integer\n"); return 0; }
            break;
        case 'q': o->quick = 1; break;
        case 'B': o->budget_s = strtod(optarg, &end);
            if (*end || o->budget_s < 0) { fprintf(stderr, "custom_cells: error: --budget must be a number of seconds\n"); return 0; }
            break;
        case 'M': o->markdown = optarg; break;
        case 'S': o->summary = optarg; break;
        case 'd': o->cells_dir = optarg; break;
        case 's': o->seed = strtoull(optarg, &end, 10);
            if (*end) { fprintf(stderr, "custom_cells: error: --seed must be an integer\n"); return 0; }
            break;
        case 'h': usage(stdout); exit(0);
        default: fprintf(stderr, "custom_cells: try --help\n"); return 0;
        }
    }
    if (optind != argc) { fprintf(stderr, "custom_cells: error: unexpected argument '%s'\n", argv[optind]); return 0; }
    if (!o->nconfigs) {
        const Config *list = o->quick ? bench_quick_configs : bench_configs;
        int n = o->quick ? bench_nquick : bench_nconfigs;
        for (int i = 0; i < n; i++) o->configs[o->nconfigs++] = &list[i];
    }
    if (!o->nprecs) { o->precs[0] = PREC_FP32; o->precs[1] = PREC_TF32; o->nprecs = 2; }
    o->use[0] = 1; /* the baseline always runs */
    if (!cells_given)
        for (int k = 1; k < NCUSTOM; k++) o->use[k] = 1;
    if (o->quick && !repeat_given) o->repeat = 5;
    if (o->quick && !warmup_given) o->warmup = 2;
    return 1;
}

int main(int argc, char **argv) {
    bench_prog = "custom_cells";
    Options o;
    if (!parse_args(argc, argv, &o)) return 2;
    if (!bench_have_gpu("custom_cells")) return EXIT_SKIP;
    FILE *md = bench_open_append(o.markdown), *sum = bench_open_append(o.summary);
    double t0 = bench_now();
    cudaStream_t stream;
    struct cudaDeviceProp prop;
    int dev = 0;
    if (!CK_CUDA(cudaGetDevice(&dev)) || !CK_CUDA(cudaGetDeviceProperties(&prop, dev)) ||
        !CK_CUDA(cudaStreamCreate(&stream))) /* blocking: ordered with the plain cudaMemset calls */
        return 1;
    printf("custom_cells: %s, rnncc %s, %d warm-ups, median of %d runs; ratio = cell / rnncc's lstm at the same sizes\n",
           prop.name, rnncc_version(), o.warmup, o.repeat);
    /* the files get their rows as each configuration finishes: a run stopped part-way keeps them */
    if (md) {
        fprintf(md, "\n### custom_cells: %s, rnncc %s, %d warm-ups, median of %d runs (ms; in parentheses: over rnncc's "
                    "LSTM at the same sizes, target <= %.2f)\n\n| config (T, N, I=H, layers, dirs) | precision | mode |",
                prop.name, rnncc_version(), o.warmup, o.repeat, TARGET_RATIO);
        for (int k = 0; k < NCUSTOM; k++) fprintf(md, " %s |", customs[k].label);
        fprintf(md, "\n|---|---|---|");
        for (int k = 0; k < NCUSTOM; k++) fprintf(md, "---|");
        fprintf(md, "\n");
        fflush(md);
    }
    if (sum) {
        fprintf(sum, "\n== custom_cells: rnncc ms (cell / rnncc lstm; target <= %.2f, ! = missed)\n", TARGET_RATIO);
        print_header(sum);
        fflush(sum);
    }
    for (int pi = 0; pi < o.nprecs; pi++)
        for (int ci = 0; ci < o.nconfigs; ci++) {
            const Config *cfg = o.configs[ci];
            Row *ri = o.do_infer ? &rows[nrows++] : NULL, *rt = o.do_train ? &rows[nrows++] : NULL;
            Row *pair[2] = {ri, rt};
            for (int k = 0; k < 2; k++)
                if (pair[k]) {
                    memset(pair[k], 0, sizeof *pair[k]);
                    pair[k]->cfg = cfg;
                    pair[k]->prec = o.precs[pi];
                    pair[k]->training = k;
                    for (int j = 0; j < NCUSTOM; j++) pair[k]->cell[j].st = o.use[j] ? ST_NONE : ST_SKIP;
                }
            if (o.budget_s > 0 && bench_now() - t0 > o.budget_s) {
                printf("%s %s: skipped: the time budget of %.0f s is spent\n", cfg->name, prec_names[o.precs[pi]], o.budget_s);
                for (int k = 0; k < 2; k++)
                    for (int j = 0; pair[k] && j < NCUSTOM; j++) pair[k]->cell[j].st = ST_SKIP;
            } else {
                printf("== %s %s: T=%d N=%d I=%d H=%d layers=%d%s\n", cfg->name, prec_names[o.precs[pi]], cfg->T, cfg->N,
                       cfg->I, cfg->H, cfg->layers, cfg->bidir ? " bidirectional" : "");
                for (int k = 0; k < NCUSTOM; k++)
                    if (o.use[k]) run_cell(&o, stream, cfg, o.precs[pi], k, ri, rt, o.seed * 7919u + (uint64_t)(ci * 16 + k));
                print_header(stdout);
                for (int k = 0; k < 2; k++)
                    if (pair[k]) print_row(stdout, pair[k]);
            }
            for (int k = 0; k < 2; k++)
                if (pair[k]) {
                    if (md) { markdown_row(md, pair[k]); fflush(md); }
                    if (sum) { print_row(sum, pair[k]); fflush(sum); }
                }
        }
    cudaStreamDestroy(stream);

    if (md) {
        if (failures) fprintf(md, "\n**custom_cells: %d failure(s): see the log.**\n", failures);
        fclose(md);
    }
    if (sum) {
        if (failures) fprintf(sum, "custom_cells: %d FAILURE(S): see the log\n", failures);
        fclose(sum);
    }
    printf("\n== custom_cells results: rnncc ms per whole sequence (in parentheses: over rnncc's lstm at the same sizes; "
           "target <= %.2f, ! = missed)\n", TARGET_RATIO);
    print_header(stdout);
    for (int i = 0; i < nrows; i++) print_row(stdout, &rows[i]);
    if (failures) printf("custom_cells: %d FAILURE(S): see above\n", failures);
    return failures ? 1 : 0;
}
