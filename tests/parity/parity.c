/* parity: runs one case written by tests/parity/export.py through rnncc, forward and
 * backward, and compares every result with PyTorch's nn.LSTM (with or without proj_size) /
 * nn.GRU on the same weights, on each backend, and for the LSTM with proj_size (cells/lstmp.cell)
 * folded and as written.
 * Key idea: the criterion is the exact function, PyTorch in float64 (y64, hT64, ..., grad64_*):
 * rnncc passes when max|rnncc - torch64| / max|torch64| <= 1e-5 for outputs and final states
 * and <= 1e-4 for gradients. PyTorch's own float32 results are compared too, for information
 * (bound 5e-5, PyTorch's own cuDNN-vs-CPU tolerance), as is PyTorch float32 against float64;
 * they decide nothing, since rnncc need not round as cuDNN does. Every rnncc parameter is
 * filled from PyTorch's tensors through one mapping table, and every gradient slice of
 * PyTorch's is compared with exactly one rnncc parameter gradient through the same table.
 *
 * With --reference, rnncc's double-precision CPU reference (ir/ref_stack.c) runs instead of the GPU, from the same
 * table, and must come within 1e-9 of PyTorch in float64 on every result: no GPU needed.
 *
 *   parity [--cells DIR] [--reference] CASE_DIR       (DIR holds <cell>.cell; default "cells")
 *
 * Exit status: 0 all passed, 1 any failure or bad input, 2 usage, 77 no CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"

static const double BOUND_FWD = 1e-5;  /* rnncc vs PyTorch float64: outputs and final states (decides) */
static const double BOUND_GRAD = 1e-4; /* rnncc vs PyTorch float64: gradients (decides) */
static const double BOUND_FP32 = 5e-5; /* rnncc vs PyTorch float32 (informational: decides nothing) */
static const double BOUND_REF = 1e-9;  /* --reference: rnncc's double-precision reference vs PyTorch float64, every result */

/* ---- the comparison ------------------------------------------------------------------ */

static void results_free(Results *r) {
    free(r->y); free(r->ty); free(r->dx); free(r->dw);
    for (int k = 0; k < MAX_STATES; k++) { free(r->hT[k]); free(r->thT[k]); free(r->dh0[k]); }
    for (int i = 0; r->info && i < r->ninfo; i++) free((char *)r->info[i].name);
    free(r->info);
    memset(r, 0, sizeof *r);
}

typedef struct Tally {
    double bound_fwd, bound_grad; /* the criterion's bounds: BOUND_FWD and BOUND_GRAD, or BOUND_REF for both */
    int passed, failed;      /* the criterion: rnncc vs PyTorch float64 */
    int fp32_ok, fp32_over;  /* informational: rnncc vs PyTorch float32 */
    double worst_fwd, worst_grad, worst_fp32, worst_torch;
} Tally;

/* max|a-b| / max|b| (max|a-b| when b is all zero); NaN when either holds a NaN or infinity. */
static double rel_err(const double *a, const double *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) return NAN;
        double e = fabs(a[i] - b[i]);
        if (e > num) num = e;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static double worse(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }

static void print_legend(const Tally *t) {
    printf("  error = max|a-b|/max|b|; \"vs torch64\" decides (bound %.0e outputs and states, %.0e gradients); \"vs torch32\"\n"
           "  informs (bound %.0e, PyTorch's own cuDNN-vs-CPU tolerance), as does \"torch32 vs 64\" (PyTorch's own float32 error)\n",
           t->bound_fwd, t->bound_grad, BOUND_FP32);
    printf("  %-46s %-4s  %-20s  %-16s  %s\n", "result", "", "vs torch64 (bound)", "vs torch32", "torch32 vs 64");
}

/* One line: e64 = rnncc vs PyTorch float64 (decides, against bound), e32 = rnncc vs PyTorch
 * float32 (informs), et = PyTorch float32 vs float64 (informs). NaN fails. */
static void report(Tally *t, const char *label, int gradient, double e64, double e32, double et) {
    double bound = gradient ? t->bound_grad : t->bound_fwd;
    int ok = e64 <= bound, ok32 = e32 <= BOUND_FP32;
    printf("  %-46s %-4s  %9.2e (%.0e)    %9.2e %-4s    %9.2e%s\n", label, ok ? "ok" : "FAIL", e64, bound, e32,
           ok32 ? "ok" : "over", et, isnan(e64) ? "  (NaN or infinity: an element left unwritten, or an overflow)" : "");
    if (ok) t->passed++;
    else t->failed++;
    if (ok32) t->fp32_ok++;
    else t->fp32_over++;
    double *worst = gradient ? &t->worst_grad : &t->worst_fwd;
    *worst = worse(*worst, e64);
    t->worst_fp32 = worse(t->worst_fp32, e32);
    t->worst_torch = worse(t->worst_torch, et);
}

/* A whole tensor: rnncc's got against PyTorch's pair. */
static void compare(Tally *t, const char *label, int gradient, const double *got, const Tensor ref[2]) {
    report(t, label, gradient, rel_err(got, ref[REF64].v, ref[REF64].n), rel_err(got, ref[REF32].v, ref[REF32].n),
           rel_err(ref[REF32].v, ref[REF64].v, ref[REF64].n));
}

/* Every parameter gradient, sliced out of rnncc's packed buffer at the offsets rnncc reports,
 * against its PyTorch slice through the mapping table. Each H-row block (weight_hr: its one P-row block) of
 * each of PyTorch's gradient tensors must be compared exactly once. Returns 0 on a malformed layout (an error). */
static int compare_weight_grads(const Case *c, const Results *r, Tally *t) {
    static int cover[MAX_LAYERS][2][KINDS][MAX_GATES];
    memset(cover, 0, sizeof cover);
    for (int i = 0; i < r->ninfo; i++) {
        const rnncc_param_info *info = &r->info[i];
        const Map *map = param_source(c, info);
        if (!map) return 0;
        int64_t n = info->rows * info->cols;
        if (info->offset < 0 || info->offset > r->nw - n) {
            fprintf(stderr, "parity: error: rnncc's %s (layer %d, direction %d) lies at [%lld, %lld), outside its %lld-float weight buffer\n",
                    info->name, info->layer, info->direction, (long long)info->offset, (long long)(info->offset + n),
                    (long long)r->nw);
            return 0;
        }
        const double *got = r->dw + info->offset;
        const Tensor(*g)[2] = c->gw[info->layer][info->direction];
        int js[2], nj = source_kinds(map->src, js);
        int64_t rows = block_rows(c, map);
        double e64 = 0, e32 = 0, et = 0;
        for (int k = 0; k < nj; k++) {
            int64_t at = map->gate * rows * info->cols; /* rows [gate*rows, gate*rows + rows) are contiguous */
            const Tensor *p = g[js[k]];
            cover[info->layer][info->direction][js[k]][map->gate]++;
            e64 = worse(e64, rel_err(got, p[REF64].v + at, n));
            e32 = worse(e32, rel_err(got, p[REF32].v + at, n));
            et = worse(et, rel_err(p[REF32].v + at, p[REF64].v + at, n));
        }
        char label[160], src[96];
        const char *sfx = info->direction ? "_reverse" : "";
        if (nj == 2) snprintf(src, sizeof src, "bias_ih|hh_l%d%s", info->layer, sfx);
        else snprintf(src, sizeof src, "%s_l%d%s", kind_name[js[0]], info->layer, sfx);
        snprintf(label, sizeof label, "d%s l%d%s <- grad %s[%lld:%lld)", info->name, info->layer, info->direction ? "r" : "",
                 src, (long long)(map->gate * rows), (long long)(map->gate * rows + rows));
        report(t, label, 1, e64, e32, et);
    }
    int ok = 1;
    for (int l = 0; l < c->layers; l++)
        for (int d = 0; d < c->dirs; d++)
            for (int j = 0; j < c->nkinds; j++)
                for (int q = 0; q < (j == KIND_W_HR ? 1 : c->spec->ngates); q++)
                    if (cover[l][d][j][q] != 1) {
                        int64_t rows = kind_rows(c, j);
                        fprintf(stderr, "parity: error: rows [%lld, %lld) of grad_%s_l%d%s were compared %d times, not once: "
                                "the mapping table does not cover PyTorch's parameters exactly\n",
                                (long long)(q * rows), (long long)(q * rows + rows), kind_name[j], l, d ? "_reverse" : "",
                                cover[l][d][j][q]);
                        ok = 0;
                    }
    return ok;
}

/* Every comparison of one case. Returns 0 when the comparison itself could not be made. */
static int compare_all(const Case *c, const Results *r, Tally *t) {
    print_legend(t);
    compare(t, "y", 0, r->y, c->y);
    for (int k = 0; k < c->spec->nstates; k++) compare(t, c->spec->state_tensor[k][ST_FINAL], 0, r->hT[k], c->hT[k]);
    char label[64];
    if (r->ty) { /* the reference has one forward */
        compare(t, "y (training forward)", 0, r->ty, c->y);
        for (int k = 0; k < c->spec->nstates; k++) {
            snprintf(label, sizeof label, "%s (training forward)", c->spec->state_tensor[k][ST_FINAL]);
            compare(t, label, 0, r->thT[k], c->hT[k]);
        }
    }
    if (!c->backward) {
        printf("  gradients: none in this case (backward = 0)\n");
        return 1;
    }
    compare(t, "dx", 1, r->dx, c->dx);
    for (int k = 0; k < c->spec->nstates; k++) compare(t, c->spec->state_tensor[k][ST_DINIT], 1, r->dh0[k], c->dh0[k]);
    return compare_weight_grads(c, r, t);
}

int main(int argc, char **argv) {
    const char *cells_dir = "cells", *case_dir = NULL;
    int reference = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cells") == 0 && i + 1 < argc) cells_dir = argv[++i];
        else if (strcmp(argv[i], "--reference") == 0) reference = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: parity [--cells DIR] [--reference] CASE_DIR\n"
                   "Runs a case written by tests/parity/export.py (CASE_DIR/manifest) through rnncc, compiling\n"
                   "DIR/<cell>.cell (default DIR: cells): the inference and training forward, backward data and\n"
                   "backward weights, on each backend forced in turn (and an LSTMP folded and as written). Passes\n"
                   "when every result is within max|a-b|/max|b| <= %.0e (y, hT, cT) or <= %.0e (dx, dh0, dc0,\n"
                   "every parameter gradient) of PyTorch in float64. PyTorch's float32 results are compared too,\n"
                   "for information only (bound %.0e).\n"
                   "--reference runs rnncc's double-precision CPU reference instead (no GPU; one forward and the\n"
                   "gradients), within %.0e of PyTorch in float64 on every result.\n"
                   "Exit 0 all passed, 1 failure, 2 usage, 77 no CUDA device.\n", BOUND_FWD, BOUND_GRAD, BOUND_FP32, BOUND_REF);
            return 0;
        } else if (argv[i][0] != '-' && !case_dir) case_dir = argv[i];
        else { fprintf(stderr, "usage: parity [--cells DIR] [--reference] CASE_DIR\n"); return EXIT_USAGE; }
    }
    if (!case_dir) { fprintf(stderr, "usage: parity [--cells DIR] [--reference] CASE_DIR\n"); return EXIT_USAGE; }

    int status = EXIT_FAIL, finished = 0;
    Tally t = {0};
    t.bound_fwd = reference ? BOUND_REF : BOUND_FWD;
    t.bound_grad = reference ? BOUND_REF : BOUND_GRAD;
    Manifest mf = {0};
    Results r;
    memset(&r, 0, sizeof r);
    static Case c; /* large: static */
    memset(&c, 0, sizeof c);

    if (!manifest_read(case_dir, &mf) || !case_load(&mf, &c)) goto done;
    char proj[32] = "";
    if (c.P) snprintf(proj, sizeof proj, " P=%d", c.P);
    printf("parity %s: %s, I=%d H=%d%s T=%d N=%d, %d layer%s%s, lengths %s, %s\n", case_dir, c.spec->name, c.I, c.H, proj, c.T,
           c.N, c.layers, c.layers > 1 ? "s" : "", c.dirs == 2 ? ", bidirectional" : "", manifest_get(&mf, "lengths"),
           c.backward ? "forward and backward" : "forward only");
    const char *tv = manifest_get(&mf, "torch"), *d32 = manifest_get(&mf, "torch_fp32_device"),
               *d64 = manifest_get(&mf, "torch_fp64_device");
    printf("  PyTorch %s: float32 on %s, float64 on %s\n", tv ? tv : "?", d32 ? d32 : "?", d64 ? d64 : "?");

    if (reference) {
        printf(" rnncc's double-precision reference (ir/ref_stack.c):\n");
        finished = run_reference(&c, cells_dir, &r) == 0 && compare_all(&c, &r, &t);
        results_free(&r);
        goto done;
    }
    const Variant *variants;
    int nvariants = parity_variants(&c, &variants);
    finished = 1;
    for (int v = 0; finished && v < nvariants; v++) {
        printf(" rnncc %s:\n", variants[v].name);
        int rc = run_rnncc(&c, cells_dir, &variants[v], &r);
        if (rc == EXIT_SKIP) {
            status = EXIT_SKIP;
            goto done;
        }
        finished = rc == VARIANT_SKIPPED || (rc == 0 && compare_all(&c, &r, &t));
        results_free(&r);
    }

done:
    if (status != EXIT_SKIP) {
        if (!finished) t.failed++; /* the case itself could not run or be compared (the error is above) */
        if (finished)
            printf("  worst rnncc vs torch64: %.3g outputs and states, %.3g gradients; informational: rnncc vs torch32 "
                   "within %.0e on %d of %d (worst %.3g), torch32 vs torch64 worst %.3g\n",
                   t.worst_fwd, t.worst_grad, BOUND_FP32, t.fp32_ok, t.fp32_ok + t.fp32_over, t.worst_fp32, t.worst_torch);
        printf("%d passed, %d failed%s\n", t.passed, t.failed, finished ? "" : " (the case did not run to the end)");
        status = t.failed ? EXIT_FAIL : 0;
    }
    results_free(&r);
    case_free(&c);
    manifest_free(&mf);
    return status;
}
