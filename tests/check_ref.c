/* Tests for the double-precision reference (ir/ref.c): forward against hand-written loops
 * of the LSTM and GRU equations, variable lengths, and every gradient of every cell in
 * cells/ against central finite differences. Key idea: the oracle is checked by code
 * that shares nothing with it but the cell text. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"
#include "../ir/ref.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------- */

/* Uniform in [-0.5, 0.5) and in [0.05, 0.55) (for functions that need positive arguments). */
static void fill(Rng *r, double *v, size_t n) { tu_fill(r, v, n, -0.5, 0.5); }
static void fill_positive(Rng *r, double *v, size_t n) { tu_fill(r, v, n, 0.05, 0.55); }
static double *alloc_doubles(size_t n) { return tu_alloc(n, sizeof(double)); }

static int find_param(const IrCell *c, const char *name) {
    for (int k = 0; k < c->nparams; k++)
        if (strcmp(c->params[k].name, name) == 0) return k;
    ck_abort_msg("cell '%s' has no parameter '%s'", c->name, name);
    return -1;
}

static int find_state(const IrCell *c, const char *name) {
    for (int k = 0; k < c->nstates; k++)
        if (strcmp(c->states[k].name, name) == 0) return k;
    ck_abort_msg("cell '%s' has no state '%s'", c->name, name);
    return -1;
}

/* Binds I and H through the front end's binder. */
static void bind_ih(const IrCell *c, Arena *arena, int64_t I, int64_t H, int64_t *dimval) {
    char si[32], sh[32];
    snprintf(si, sizeof si, "I=%lld", (long long)I);
    snprintf(sh, sizeof sh, "H=%lld", (long long)H);
    const char *specs[] = {si, sh};
    Diags diags;
    diag_init(&diags, arena, "dims", NULL, 0);
    ir_bind_dims(c, specs, 2, dimval, &diags);
    ck_assert_int_eq(diags.nerrors, 0);
}

/* |got - want| <= 1e-12 |want| + 1e-15: relative, with a floor far below the values. */
static void expect_close(const double *got, const double *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i]) + 1e-15,
                      "%s[%zu]: reference %.17g, hand-written %.17g", what, i, got[i], want[i]);
}

/* ---- hand-written cells, straight from the papers / PyTorch docs --------------- */

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* out = W x + U h + b, W [H][I], U [H][H]. */
static void affine(const double *W, const double *x, size_t I, const double *U, const double *h,
                   const double *b, size_t H, double *out) {
    for (size_t r = 0; r < H; r++) {
        double s = 0;
        for (size_t k = 0; k < I; k++) s += W[r * I + k] * x[k];
        double u = 0;
        for (size_t k = 0; k < H; k++) u += U[r * H + k] * h[k];
        out[r] = s + u + b[r];
    }
}

/* PyTorch nn.LSTM over [T][N][I] with per-sequence lengths; w holds W_i..W_o, U_i..U_o,
 * b_i..b_o. Writes y [T][N][H] (0 past a length), hT and cT [N][H]. */
static void lstm_loop(const double *const w[12], size_t T, size_t N, size_t I, size_t H,
                      const int64_t *lengths, const double *x, const double *h0, const double *c0,
                      double *y, double *hT, double *cT) {
    double h[16], c[16], g[4][16];
    ck_assert(H <= 16);
    for (size_t n = 0; n < N; n++) {
        memcpy(h, h0 + n * H, H * sizeof *h);
        memcpy(c, c0 + n * H, H * sizeof *c);
        for (size_t t = 0; t < T; t++) {
            double *yt = y + (t * N + n) * H;
            if (t >= (size_t)lengths[n]) {
                memset(yt, 0, H * sizeof *yt);
                continue;
            }
            for (int q = 0; q < 4; q++) affine(w[q], x + (t * N + n) * I, I, w[4 + q], h, w[8 + q], H, g[q]);
            for (size_t r = 0; r < H; r++) {
                double i = sigm(g[0][r]), f = sigm(g[1][r]), gg = tanh(g[2][r]), o = sigm(g[3][r]);
                c[r] = f * c[r] + i * gg;
                h[r] = o * tanh(c[r]);
            }
            memcpy(yt, h, H * sizeof *h);
        }
        memcpy(hT + n * H, h, H * sizeof *h);
        memcpy(cT + n * H, c, H * sizeof *c);
    }
}

/* PyTorch nn.GRU; w holds W_r, W_z, W_n, U_r, U_z, U_n, b_r, b_z, b_in, b_hn. */
static void gru_loop(const double *const w[10], size_t T, size_t N, size_t I, size_t H,
                     const int64_t *lengths, const double *x, const double *h0, double *y, double *hT) {
    double h[16], r[16], z[16], wn[16], un[16];
    const double zero[16] = {0};
    ck_assert(H <= 16);
    for (size_t n = 0; n < N; n++) {
        memcpy(h, h0 + n * H, H * sizeof *h);
        for (size_t t = 0; t < T; t++) {
            double *yt = y + (t * N + n) * H;
            const double *xt = x + (t * N + n) * I;
            if (t >= (size_t)lengths[n]) {
                memset(yt, 0, H * sizeof *yt);
                continue;
            }
            affine(w[0], xt, I, w[3], h, w[6], H, r);
            affine(w[1], xt, I, w[4], h, w[7], H, z);
            affine(w[2], xt, I, w[5], zero, w[8], H, wn); /* W_n x + b_in (U_n 0 adds nothing) */
            for (size_t q = 0; q < H; q++) {
                double s = 0;
                for (size_t k = 0; k < H; k++) s += w[5][q * H + k] * h[k];
                un[q] = s + w[9][q];
            }
            for (size_t q = 0; q < H; q++) {
                double rq = sigm(r[q]), zq = sigm(z[q]);
                double nq = tanh(wn[q] + rq * un[q]);
                h[q] = (1 - zq) * nq + zq * h[q];
            }
            memcpy(yt, h, H * sizeof *h);
        }
        memcpy(hT + n * H, h, H * sizeof *h);
    }
}

static const char lstm_src[] =
    "cell lstm(x[I]) -> h {\n"
    "    state h[H], c[H]\n"
    "    param W_i[H, I], W_f[H, I], W_g[H, I], W_o[H, I]\n"
    "    param U_i[H, H], U_f[H, H], U_g[H, H], U_o[H, H]\n"
    "    param b_i[H], b_f[H], b_g[H], b_o[H]\n"
    "    i = sigmoid(W_i @ x + U_i @ h + b_i)\n"
    "    f = sigmoid(W_f @ x + U_f @ h + b_f)\n"
    "    g = tanh(W_g @ x + U_g @ h + b_g)\n"
    "    o = sigmoid(W_o @ x + U_o @ h + b_o)\n"
    "    c' = f * c + i * g\n"
    "    h' = o * tanh(c')\n"
    "}\n";

static const char gru_src[] =
    "cell gru(x[I]) -> h {\n"
    "    state h[H]\n"
    "    param W_r[H, I], W_z[H, I], W_n[H, I]\n"
    "    param U_r[H, H], U_z[H, H], U_n[H, H]\n"
    "    param b_r[H], b_z[H], b_in[H], b_hn[H]\n"
    "    r = sigmoid(W_r @ x + U_r @ h + b_r)\n"
    "    z = sigmoid(W_z @ x + U_z @ h + b_z)\n"
    "    n = tanh(W_n @ x + b_in + r * (U_n @ h + b_hn))\n"
    "    h' = (1 - z) * n + z * h\n"
    "}\n";

static const char *const lstm_params[12] = {"W_i", "W_f", "W_g", "W_o", "U_i", "U_f",
                                            "U_g", "U_o", "b_i", "b_f", "b_g", "b_o"};
static const char *const gru_params[10] = {"W_r", "W_z", "W_n", "U_r", "U_z",
                                           "U_n", "b_r", "b_z", "b_in", "b_hn"};

/* Runs the reference LSTM and the hand-written one on the same random problem. */
static void check_lstm(int64_t T, const int64_t *lengths, uint64_t seed) {
    enum { N = 3, I = 5, H = 4 };
    Arena arena;
    arena_init(&arena);
    const IrCell *c = ir_find_cell(tu_compile(&arena, "lstm", lstm_src, sizeof lstm_src - 1), "lstm");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->nparams, 12);
    ck_assert_int_eq(c->nstates, 2);
    ck_assert_int_eq(c->noutputs, 1);
    int64_t *dimval = calloc((size_t)c->ndims + 1, sizeof *dimval);
    ck_assert_ptr_nonnull(dimval);
    bind_ih(c, &arena, I, H, dimval);

    Rng rng = {seed};
    double *params[12], *w[12];
    for (int k = 0; k < 12; k++) {
        size_t n = (size_t)ir_shape_numel(&c->params[k].shape, dimval);
        params[k] = alloc_doubles(n);
        fill(&rng, params[k], n);
    }
    for (int q = 0; q < 12; q++) w[q] = params[find_param(c, lstm_params[q])];
    int kh = find_state(c, "h"), kc = find_state(c, "c");
    double *x = alloc_doubles((size_t)T * N * I), *h0 = alloc_doubles(N * H), *c0 = alloc_doubles(N * H);
    fill(&rng, x, (size_t)T * N * I);
    fill(&rng, h0, N * H);
    fill(&rng, c0, N * H);
    const double *s0[2];
    s0[kh] = h0;
    s0[kc] = c0;
    int64_t full[N] = {T, T, T};
    RefProblem p = {c, dimval, T, N, lengths, x, s0, (const double *const *)params};

    double *y = alloc_doubles((size_t)T * N * H), *sT[2] = {alloc_doubles(N * H), alloc_doubles(N * H)};
    double *wy = alloc_doubles((size_t)T * N * H), *whT = alloc_doubles(N * H), *wcT = alloc_doubles(N * H);
    for (size_t i = 0; i < (size_t)T * N * H; i++) y[i] = NAN; /* padding must be written */
    ck_assert_int_eq(ref_forward(&p, &y, sT), 0);
    lstm_loop((const double *const *)w, (size_t)T, N, I, H, lengths ? lengths : full, x, h0, c0, wy, whT, wcT);
    expect_close(y, wy, (size_t)T * N * H, "y");
    expect_close(sT[kh], whT, N * H, "hT");
    expect_close(sT[kc], wcT, N * H, "cT");
    if (lengths) {
        for (int n = 0; n < N; n++) {
            for (int64_t t = lengths[n]; t < T; t++)
                for (int r = 0; r < H; r++) ck_assert(y[((size_t)t * N + n) * H + r] == 0);
            if (lengths[n] == 0) {
                ck_assert(memcmp(sT[kh] + n * H, h0 + n * H, H * sizeof *h0) == 0);
                ck_assert(memcmp(sT[kc] + n * H, c0 + n * H, H * sizeof *c0) == 0);
            }
        }
    }
    for (int k = 0; k < 12; k++) free(params[k]);
    free(x), free(h0), free(c0), free(y), free(sT[0]), free(sT[1]), free(wy), free(whT), free(wcT);
    free(dimval);
    arena_free(&arena);
}

static void check_gru(int64_t T, const int64_t *lengths, uint64_t seed) {
    enum { N = 3, I = 5, H = 4 };
    Arena arena;
    arena_init(&arena);
    const IrCell *c = ir_find_cell(tu_compile(&arena, "gru", gru_src, sizeof gru_src - 1), "gru");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->nparams, 10);
    ck_assert_int_eq(c->nstates, 1);
    int64_t *dimval = calloc((size_t)c->ndims + 1, sizeof *dimval);
    ck_assert_ptr_nonnull(dimval);
    bind_ih(c, &arena, I, H, dimval);

    Rng rng = {seed};
    double *params[10], *w[10];
    for (int k = 0; k < 10; k++) {
        size_t n = (size_t)ir_shape_numel(&c->params[k].shape, dimval);
        params[k] = alloc_doubles(n);
        fill(&rng, params[k], n);
    }
    for (int q = 0; q < 10; q++) w[q] = params[find_param(c, gru_params[q])];
    double *x = alloc_doubles((size_t)T * N * I), *h0 = alloc_doubles(N * H);
    fill(&rng, x, (size_t)T * N * I);
    fill(&rng, h0, N * H);
    const double *s0[1] = {h0};
    int64_t full[N] = {T, T, T};
    RefProblem p = {c, dimval, T, N, lengths, x, s0, (const double *const *)params};

    double *y = alloc_doubles((size_t)T * N * H), *hT = alloc_doubles(N * H);
    double *wy = alloc_doubles((size_t)T * N * H), *whT = alloc_doubles(N * H);
    for (size_t i = 0; i < (size_t)T * N * H; i++) y[i] = NAN;
    ck_assert_int_eq(ref_forward(&p, &y, &hT), 0);
    gru_loop((const double *const *)w, (size_t)T, N, I, H, lengths ? lengths : full, x, h0, wy, whT);
    expect_close(y, wy, (size_t)T * N * H, "y");
    expect_close(hT, whT, N * H, "hT");
    for (int k = 0; k < 10; k++) free(params[k]);
    free(x), free(h0), free(y), free(hT), free(wy), free(whT);
    free(dimval);
    arena_free(&arena);
}

START_TEST(lstm_matches_textbook) { check_lstm(4, NULL, 1); }
END_TEST

START_TEST(gru_matches_textbook) { check_gru(4, NULL, 2); }
END_TEST

START_TEST(variable_lengths) {
    const int64_t lengths[3] = {5, 1, 0};
    check_lstm(5, lengths, 3);
    check_gru(5, lengths, 4);
}
END_TEST

/* ---- gradients against central finite differences ------------------------------ */

/* A random problem for any cell, with buffers for the forward and backward results. */
typedef struct GradProblem {
    const IrCell *cell;
    int64_t *dimval;
    int64_t lengths[2];
    size_t T, N, I;
    size_t *slen, *olen, *plen;
    double *x, **h0, **params;   /* the inputs */
    double **dy, **dhT;          /* the loss weights */
    double **y, **hT;            /* forward results */
    double *dx, **dh0, **dparams; /* backward results */
    RefProblem rp;
} GradProblem;

static double **alloc_list(int n, const size_t *lens, size_t times) {
    double **l = calloc((size_t)n + 1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    for (int k = 0; k < n; k++) l[k] = alloc_doubles(lens[k] * times);
    return l;
}

static void free_list(double **l, int n) {
    for (int k = 0; k < n; k++) free(l[k]);
    free(l);
}

/* A random problem; with `positive`, the inputs, initial states and parameters are drawn
 * from [0.05, 0.55) instead of [-0.5, 0.5) (the loss weights stay signed). */
static void grad_problem_init(GradProblem *g, const IrCell *c, Rng *rng, int positive) {
    memset(g, 0, sizeof *g);
    g->cell = c;
    g->T = 3;
    g->N = 2;
    g->dimval = calloc((size_t)c->ndims + 1, sizeof *g->dimval);
    ck_assert_ptr_nonnull(g->dimval);
    for (int d = 0; d < c->ndims; d++)
        g->dimval[d] = c->dims[d].name ? 2 + (int64_t)(tu_next(rng) % 4) : c->dims[d].literal;
    /* One full sequence and one shorter (1 or 2 steps), in a random order. */
    int shorter = (int)(tu_next(rng) % 2);
    g->lengths[shorter] = 1 + (int64_t)(tu_next(rng) % 2);
    g->lengths[1 - shorter] = (int64_t)g->T;

    ck_assert_int_eq(c->ninputs, 1);
    g->I = (size_t)ir_shape_numel(&c->inputs[0].shape, g->dimval);
    g->slen = calloc((size_t)c->nstates + 1, sizeof *g->slen);
    g->olen = calloc((size_t)c->noutputs + 1, sizeof *g->olen);
    g->plen = calloc((size_t)c->nparams + 1, sizeof *g->plen);
    ck_assert(g->slen && g->olen && g->plen);
    for (int k = 0; k < c->nstates; k++) g->slen[k] = (size_t)ir_shape_numel(&c->states[k].shape, g->dimval);
    for (int k = 0; k < c->noutputs; k++) g->olen[k] = (size_t)ir_node_len(c, c->outputs[k].node, g->dimval);
    for (int k = 0; k < c->nparams; k++) g->plen[k] = (size_t)ir_shape_numel(&c->params[k].shape, g->dimval);

    size_t TN = g->T * g->N;
    g->x = alloc_doubles(TN * g->I);
    g->dx = alloc_doubles(TN * g->I);
    g->h0 = alloc_list(c->nstates, g->slen, g->N);
    g->dhT = alloc_list(c->nstates, g->slen, g->N);
    g->hT = alloc_list(c->nstates, g->slen, g->N);
    g->dh0 = alloc_list(c->nstates, g->slen, g->N);
    g->params = alloc_list(c->nparams, g->plen, 1);
    g->dparams = alloc_list(c->nparams, g->plen, 1);
    g->dy = alloc_list(c->noutputs, g->olen, TN);
    g->y = alloc_list(c->noutputs, g->olen, TN);
    void (*fill_in)(Rng *, double *, size_t) = positive ? fill_positive : fill;
    fill_in(rng, g->x, TN * g->I);
    for (int k = 0; k < c->nstates; k++) fill_in(rng, g->h0[k], g->N * g->slen[k]);
    for (int k = 0; k < c->nparams; k++) fill_in(rng, g->params[k], g->plen[k]);
    for (int k = 0; k < c->nstates; k++) fill(rng, g->dhT[k], g->N * g->slen[k]);
    for (int k = 0; k < c->noutputs; k++) fill(rng, g->dy[k], TN * g->olen[k]);
    g->rp = (RefProblem){c, g->dimval, (int64_t)g->T, (int64_t)g->N, g->lengths, g->x,
                         (const double *const *)g->h0, (const double *const *)g->params};
}

static void grad_problem_free(GradProblem *g) {
    const IrCell *c = g->cell;
    free(g->x), free(g->dx);
    free_list(g->h0, c->nstates), free_list(g->dhT, c->nstates);
    free_list(g->hT, c->nstates), free_list(g->dh0, c->nstates);
    free_list(g->params, c->nparams), free_list(g->dparams, c->nparams);
    free_list(g->dy, c->noutputs), free_list(g->y, c->noutputs);
    free(g->dimval), free(g->slen), free(g->olen), free(g->plen);
}

/* The loss sum(dy .* y) + sum(dhT .* hT), accumulated in long double so that its own
 * rounding stays below the forward pass's; NaN or infinite when the forward pass is. */
static double try_loss(GradProblem *g) {
    const IrCell *c = g->cell;
    ck_assert_int_eq(ref_forward(&g->rp, g->y, g->hT), 0);
    long double L = 0;
    for (int j = 0; j < c->noutputs; j++)
        for (size_t i = 0; i < g->T * g->N * g->olen[j]; i++) L += (long double)g->dy[j][i] * g->y[j][i];
    for (int k = 0; k < c->nstates; k++)
        for (size_t i = 0; i < g->N * g->slen[k]; i++) L += (long double)g->dhT[k][i] * g->hT[k][i];
    return (double)L;
}

static double loss(GradProblem *g) {
    double L = try_loss(g);
    ck_assert_msg(isfinite(L), "cell '%s': the loss is not finite", g->cell->name);
    return L;
}

/* Finite differences need a floor on the scale of the relative error: with eps = 1e-6
 * and a loss of order 1 whose forward pass rounds at about 1e-16 per term, the central
 * difference carries an absolute noise of about 1e-16 * sqrt(terms) / 2e-6, a few times
 * 1e-10; truncation (eps^2 f''' / 6) is about 1e-13. A gradient much smaller than 1e-3
 * is therefore only known to about 1e-7 relative to 1e-3, which is why the denominator
 * is max(1e-3, |analytic| + |numeric|): errors of real bugs (a missing term, a wrong
 * derivative) are of the order of the gradient itself and far above it. */
#define GRAD_EPS 1e-6
#define GRAD_FLOOR 1e-3
#define GRAD_TOL 1e-6

typedef struct GradStats {
    double max_err;
    size_t checked;
} GradStats;

/* Compares analytic gradients ana[0..n) of the variables v[0..n) with central differences. */
static void check_grads(GradProblem *g, double *v, const double *ana, size_t n, const char *cellname,
                        const char *what, GradStats *st) {
    for (size_t i = 0; i < n; i++) {
        double saved = v[i];
        v[i] = saved + GRAD_EPS;
        double lp = loss(g);
        v[i] = saved - GRAD_EPS;
        double lm = loss(g);
        v[i] = saved;
        double num = (lp - lm) / (2 * GRAD_EPS);
        double err = fabs(ana[i] - num) / fmax(GRAD_FLOOR, fabs(ana[i]) + fabs(num));
        ck_assert_msg(err <= GRAD_TOL, "cell '%s': d%s[%zu]: analytic %.12g, numeric %.12g (error %.3g)",
                      cellname, what, i, ana[i], num, err);
        if (err > st->max_err) st->max_err = err;
        st->checked++;
    }
}

/* Checks every gradient (dx, dh0 of each state, each parameter) of one cell. */
static void gradcheck_cell(const IrCell *c, uint64_t seed, GradStats *st) {
    Rng rng = {seed};
    GradProblem g;
    grad_problem_init(&g, c, &rng, 0);
    if (!isfinite(try_loss(&g))) { /* sqrt or log of a negative value: draw positive values */
        grad_problem_free(&g);
        grad_problem_init(&g, c, &rng, 1);
    }
    /* The results must be overwritten, not accumulated into (nor left alone where padded). */
    for (size_t i = 0; i < g.T * g.N * g.I; i++) g.dx[i] = NAN;
    for (int k = 0; k < c->nstates; k++)
        for (size_t i = 0; i < g.N * g.slen[k]; i++) g.dh0[k][i] = NAN;
    for (int k = 0; k < c->nparams; k++)
        for (size_t i = 0; i < g.plen[k]; i++) g.dparams[k][i] = NAN;
    ck_assert_int_eq(ref_backward(&g.rp, (const double *const *)g.dy, (const double *const *)g.dhT,
                                  g.dx, g.dh0, g.dparams),
                     0);
    char what[128];
    check_grads(&g, g.x, g.dx, g.T * g.N * g.I, c->name, "x", st);
    for (int k = 0; k < c->nstates; k++) {
        snprintf(what, sizeof what, "h0 '%s'", c->states[k].name);
        check_grads(&g, g.h0[k], g.dh0[k], g.N * g.slen[k], c->name, what, st);
    }
    for (int k = 0; k < c->nparams; k++) {
        snprintf(what, sizeof what, "param '%s'", c->params[k].name);
        check_grads(&g, g.params[k], g.dparams[k], g.plen[k], c->name, what, st);
    }
    grad_problem_free(&g);
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void gradcheck_source(const char *filename, const char *src, size_t len, GradStats *st) {
    Arena arena;
    arena_init(&arena);
    const IrModule *m = tu_compile(&arena, filename, src, len);
    ck_assert_int_gt(m->ncells, 0);
    for (int i = 0; i < m->ncells; i++) gradcheck_cell(m->cells[i], hash_str(filename) + (uint64_t)i, st);
    arena_free(&arena);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Every cells/NAME.cell file, every cell in it. */
START_TEST(gradients_of_shipped_cells) {
    DIR *dir = opendir("cells");
    ck_assert_msg(dir != NULL, "cannot open cells/ (tests run from the repository root)");
    char **names = NULL;
    size_t count = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".cell") != 0) continue;
        names = realloc(names, (count + 1) * sizeof *names);
        ck_assert_ptr_nonnull(names);
        names[count] = malloc(n + sizeof "cells/");
        ck_assert_ptr_nonnull(names[count]);
        snprintf(names[count], n + sizeof "cells/", "cells/%s", e->d_name);
        count++;
    }
    closedir(dir);
    ck_assert_msg(count > 0, "no .cell files in cells/");
    qsort(names, count, sizeof *names, cmp_str);
    GradStats st = {0, 0};
    for (size_t i = 0; i < count; i++) {
        size_t len;
        char *src = read_file(names[i], &len);
        gradcheck_source(names[i], src, len, &st);
        free(src);
        free(names[i]);
    }
    free(names);
    printf("check_ref: %zu cell files, %zu gradients, max relative error %.3g\n", count, st.checked, st.max_err);
}
END_TEST

/* Cells that stress the backward pass's bookkeeping: two outputs that are one node (y is
 * c'), which is also a state's next value; states swapped through leaves; two states with
 * one next value; scalar broadcasting; every binary function; an element-wise-only
 * recurrence; a projection whose matrix product reads values of the same step; and sqrt
 * and log, which get positive draws. */
static const char edge_src[] =
    "cell twice(x[I]) -> h, m, c, y {\n"
    "    state h[H], c[H]\n"
    "    param W[H, I], U[H, H], b[H], v[H]\n"
    "    m = tanh(W @ x + U @ h + b)\n"
    "    c' = 0.5 * c + m / (2 + m * m) - min(m, v) + max(c, 0.1 * m)\n"
    "    h' = sigmoid(-m) * c' + clamp(h, -0.3, 0.3) + softplus(h) - abs(v * h) + exp(0.5 * m)\n"
    "    y = c'\n"
    "}\n"
    "cell swap(x[I]) -> a {\n"
    "    state a[H], b[H]\n"
    "    param W[H, I], u[H]\n"
    "    a' = b\n"
    "    b' = relu(W @ x + u * a) + hardsigmoid(4 * a) + square(b) + sin(a) * cos(b)\n"
    "}\n"
    "cell proj(x[I]) -> h {\n"
    "    state h[P], c[H]\n"
    "    param W[H, I], U[H, P], P_h[P, H], b[H]\n"
    "    c' = tanh(W @ x + U @ h + b) + c\n"
    "    h' = P_h @ (tanh(c') * sigmoid(U @ h))\n"
    "}\n"
    "cell shared(x[I]) -> a, b {\n"
    "    state a[H], b[H]\n"
    "    param W[H, I], U[H, H]\n"
    "    a' = tanh(W @ x + U @ (a - b))\n"
    "    b' = a'\n"
    "}\n"
    "cell clamped(x[I]) -> h {\n"   /* bounds with lo > hi: clamp's value is lo or hi, and so is its gradient */
    "    state h[H]\n"
    "    param W[H, I], lo[H], hi[H]\n"
    "    h' = clamp(tanh(W @ x) + h, lo + 0.5, hi - 0.5) + 0.1 * h\n"
    "}\n"
    "cell domain(x[I]) -> h {\n"
    "    state h[H]\n"
    "    param W[H, I], u[H], b[H]\n"
    "    h' = sqrt(W @ x + u * h + b) + log(1 + h / 2) / 4\n"
    "}\n";

START_TEST(gradients_of_edge_cells) {
    GradStats st = {0, 0};
    gradcheck_source("edge", edge_src, sizeof edge_src - 1, &st);
    printf("check_ref: edge cells, %zu gradients, max relative error %.3g\n", st.checked, st.max_err);
}
END_TEST

/* ---- malformed problems -------------------------------------------------------- */

START_TEST(malformed_problems) {
    Arena arena;
    arena_init(&arena);
    const IrCell *c = ir_find_cell(tu_compile(&arena, "gru", gru_src, sizeof gru_src - 1), "gru");
    ck_assert_ptr_nonnull(c);
    Rng rng = {5};
    GradProblem g;
    grad_problem_init(&g, c, &rng, 0);
    const double *const *dy = (const double *const *)g.dy, *const *dhT = (const double *const *)g.dhT;

    /* The well-formed problem works, also with every result skipped. */
    ck_assert_int_eq(ref_forward(&g.rp, g.y, g.hT), 0);
    ck_assert_int_eq(ref_forward(&g.rp, NULL, NULL), 0);
    ck_assert_int_eq(ref_backward(&g.rp, dy, dhT, g.dx, g.dh0, g.dparams), 0);
    ck_assert_int_eq(ref_backward(&g.rp, NULL, NULL, NULL, NULL, NULL), 0);

    RefProblem p = g.rp;
    p.x = NULL;
    ck_assert_int_eq(ref_forward(&p, g.y, g.hT), -1);
    ck_assert_int_eq(ref_backward(&p, dy, dhT, g.dx, g.dh0, g.dparams), -1);
    p = g.rp;
    p.cell = NULL;
    ck_assert_int_eq(ref_forward(&p, g.y, g.hT), -1);
    p = g.rp;
    p.dimval = NULL;
    ck_assert_int_eq(ref_forward(&p, g.y, g.hT), -1);
    p = g.rp;
    p.T = -1;
    ck_assert_int_eq(ref_backward(&p, dy, dhT, g.dx, g.dh0, g.dparams), -1);
    p = g.rp;
    p.N = -1;
    ck_assert_int_eq(ref_forward(&p, g.y, g.hT), -1);
    int64_t bad[2] = {1, 4}; /* longer than T = 3 */
    p = g.rp;
    p.lengths = bad;
    ck_assert_int_eq(ref_forward(&p, g.y, g.hT), -1);
    bad[1] = -1;
    ck_assert_int_eq(ref_backward(&p, dy, dhT, g.dx, g.dh0, g.dparams), -1);
    p = g.rp;
    p.params = NULL;
    ck_assert_int_eq(ref_forward(&p, g.y, g.hT), -1);
    ck_assert_int_eq(ref_forward(NULL, g.y, g.hT), -1);

    grad_problem_free(&g);
    arena_free(&arena);
}
END_TEST

static Suite *ref_suite(void) {
    Suite *s = suite_create("ref");
    TCase *tc = tcase_create("ref");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lstm_matches_textbook);
    tcase_add_test(tc, gru_matches_textbook);
    tcase_add_test(tc, variable_lengths);
    tcase_add_test(tc, gradients_of_shipped_cells);
    tcase_add_test(tc, gradients_of_edge_cells);
    tcase_add_test(tc, malformed_problems);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(ref_suite());
}
