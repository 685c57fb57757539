/* Shared test helpers (see testutil.h).
 * Key idea: tests build problems the same way, so a failure means the code under test, not the harness. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint64_t tu_next(Rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double tu_unif(Rng *r) { return (double)(tu_next(r) >> 11) * 0x1.0p-53 - 0.5; }

void tu_fill(Rng *r, double *v, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) v[i] = lo + (tu_unif(r) + 0.5) * (hi - lo);
}

void *tu_alloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    ck_assert_ptr_nonnull(p);
    return p;
}

char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = tu_alloc((size_t)n + 1, 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

const IrModule *tu_compile(Arena *arena, const char *filename, const char *src, size_t len) {
    Diags diags;
    diag_init(&diags, arena, filename, src, len);
    const IrModule *m = ir_compile(arena, &diags, src, len);
    if (!m) {
        StrBuf sb = {0};
        diag_render(&diags, &sb);
        ck_abort_msg("%s does not compile:\n%s", filename, sb_str(&sb));
    }
    return m;
}

const IrModule *tu_compile_file(Arena *arena, const char *path) {
    size_t len;
    char *text = tu_read_file(path, &len);
    char *copy = arena_strndup(arena, text, len);
    free(text);
    return tu_compile(arena, arena_strdup(arena, path), copy, len);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tu_list_cells(char ***paths) {
    DIR *d = opendir("cells");
    ck_assert_msg(d != NULL, "cannot open cells/ (run from the repository root)");
    int n = 0, cap = 16;
    char **v = tu_alloc((size_t)cap, sizeof *v);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".cell") != 0) continue;
        if (n == cap) v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n] = tu_alloc(l + 7, 1);
        snprintf(v[n++], l + 7, "cells/%s", e->d_name);
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *paths = v;
    return n;
}

void tu_free_list(char **paths, int n) {
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

static int64_t numel(const IrShape *s, const int64_t *dv) { return ir_shape_numel(s, dv); }

void tu_problem(TuProblem *tp, Rng *r, const IrCell *c, int64_t T, int64_t N, int64_t lo, int64_t hi, int varlen) {
    memset(tp, 0, sizeof *tp);
    tp->dimval = tu_alloc((size_t)c->ndims + 1, sizeof(int64_t));
    for (int d = 0; d < c->ndims; d++)
        tp->dimval[d] = !c->dims[d].name ? c->dims[d].literal
                      : lo == hi ? lo : lo + (int64_t)(tu_next(r) % (uint64_t)(hi - lo + 1));
    int64_t I = numel(&c->inputs[0].shape, tp->dimval);
    tp->x = tu_alloc((size_t)(T * N * I), sizeof(double));
    tu_fill(r, tp->x, (size_t)(T * N * I), -0.5, 0.5);
    tp->h0 = tu_alloc((size_t)c->nstates + 1, sizeof(double *));
    for (int k = 0; k < c->nstates; k++) {
        int64_t n = N * numel(&c->states[k].shape, tp->dimval);
        tp->h0[k] = tu_alloc((size_t)n, sizeof(double));
        tu_fill(r, tp->h0[k], (size_t)n, -0.5, 0.5);
    }
    tp->params = tu_alloc((size_t)c->nparams + 1, sizeof(double *));
    for (int k = 0; k < c->nparams; k++) {
        int64_t n = numel(&c->params[k].shape, tp->dimval);
        tp->params[k] = tu_alloc((size_t)n, sizeof(double));
        tu_fill(r, tp->params[k], (size_t)n, -0.5, 0.5);
    }
    if (varlen) {
        tp->lengths = tu_alloc((size_t)N, sizeof(int64_t));
        for (int64_t n = 0; n < N; n++) tp->lengths[n] = (int64_t)(tu_next(r) % (uint64_t)(T + 1));
        tp->lengths[0] = T;
        if (N > 1) tp->lengths[N - 1] = T > 1 ? T / 2 : 0;
    }
    tp->p = (RefProblem){c, tp->dimval, T, N, tp->lengths, tp->x, (const double *const *)tp->h0,
                         (const double *const *)tp->params};
}

void tu_free_arrays(double **a, int n) {
    if (!a) return;
    for (int i = 0; i < n; i++) free(a[i]);
    free(a);
}

void tu_problem_free(TuProblem *tp) {
    const IrCell *c = tp->p.cell;
    tu_free_arrays(tp->h0, c->nstates);
    tu_free_arrays(tp->params, c->nparams);
    free(tp->x);
    free(tp->lengths);
    free(tp->dimval);
    memset(tp, 0, sizeof *tp);
}

int64_t tu_output_len(const TuProblem *tp, int o) {
    const IrCell *c = tp->p.cell;
    return ir_node_len(c, c->outputs[o].node, tp->dimval);
}

int64_t tu_state_len(const TuProblem *tp, int k) { return numel(&tp->p.cell->states[k].shape, tp->dimval); }

double **tu_alloc_outputs(const TuProblem *tp) {
    const IrCell *c = tp->p.cell;
    double **y = tu_alloc((size_t)c->noutputs + 1, sizeof *y);
    for (int o = 0; o < c->noutputs; o++) y[o] = tu_alloc((size_t)(tp->p.T * tp->p.N * tu_output_len(tp, o)), sizeof(double));
    return y;
}

double **tu_alloc_states(const TuProblem *tp) {
    const IrCell *c = tp->p.cell;
    double **h = tu_alloc((size_t)c->nstates + 1, sizeof *h);
    for (int k = 0; k < c->nstates; k++) h[k] = tu_alloc((size_t)(tp->p.N * tu_state_len(tp, k)), sizeof(double));
    return h;
}

void tu_reverse_in_place(double *a, int64_t T, int64_t N, int64_t D, const int64_t *lengths) {
    double *tmp = tu_alloc((size_t)(T * N * D), sizeof(double));
    ref_reverse_sequences(a, tmp, T, N, D, lengths);
    memcpy(a, tmp, (size_t)(T * N * D) * sizeof(double));
    free(tmp);
}

double tu_max_rel_err(const double *a, const double *b, size_t n, double floor) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / (floor + fabs(b[i]));
        if (isnan(e)) return INFINITY;
        if (e > m) m = e;
    }
    return m;
}

int tu_run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    /* CK_VERBOSITY=verbose: each test as it ends, on stdout in TAP ("ok 3 - file:case:test: Passed"),
     * then the normal summary (Check's verbose stdout output comes all at the end, its TAP log at once) */
    const char *verbosity = getenv("CK_VERBOSITY");
    const int verbose = verbosity && strcmp(verbosity, "verbose") == 0;
    if (verbose) srunner_set_tap(sr, "-");
    srunner_run_all(sr, verbose ? CK_NORMAL : CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* Appends printf-style text to buf (of size) at *len; a text that does not fit sets *len to size. */
static void put(char *buf, size_t size, int *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, int *len, const char *fmt, ...) {
    if ((size_t)*len >= size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - (size_t)*len, fmt, ap);
    va_end(ap);
    *len = n < 0 || (size_t)n >= size - (size_t)*len ? (int)size : *len + n;
}

int tu_random_cell(uint64_t seed, char *buf, size_t size) {
    Rng r = {seed * 0x9e3779b97f4a7c15ull + 1};
    int has_c = (int)(tu_next(&r) % 2), gates = 2 + (int)(tu_next(&r) % 4);
    char body[4096], params[2048];
    int bl = 0, pl = 0;
    static const char *const acts[] = {"sigmoid", "tanh"};
    for (int k = 0; k < gates; k++) {
        char v[64], wx[32] = "";
        int pick = (int)(tu_next(&r) % 5);
        if (pick == 1 && has_c) snprintf(v, sizeof v, "c");
        else if (pick == 2 && k > 0) snprintf(v, sizeof v, "g%d", (int)(tu_next(&r) % (uint64_t)k));
        else if (pick == 3 && k > 0) snprintf(v, sizeof v, "(g%d * h)", (int)(tu_next(&r) % (uint64_t)k));
        else if (pick == 4) { /* a product of a product: a GEMM whose operand is another GEMM's result */
            snprintf(v, sizeof v, "(V%d @ h)", k);
            put(params, sizeof params, &pl, "    param V%d[H, H]\n", k);
        } else snprintf(v, sizeof v, "h");
        put(params, sizeof params, &pl, "    param U%d[H, H], b%d[H]\n", k, k);
        if (k == 0 || tu_next(&r) % 4 != 0) {
            put(params, sizeof params, &pl, "    param W%d[H, I]\n", k);
            snprintf(wx, sizeof wx, "W%d @ x + ", k);
        }
        put(body, sizeof body, &bl, "    g%d = %s(%sU%d @ %s + b%d)\n", k, acts[tu_next(&r) % 2], wx, k, v, k);
    }
    char e[512];
    int el = 0;
    put(e, sizeof e, &el, "g0");
    for (int k = 1; k < gates; k++) put(e, sizeof e, &el, " %c g%d", tu_next(&r) % 2 ? '+' : '*', k);
    int a = (int)(tu_next(&r) % (uint64_t)gates), b = (int)(tu_next(&r) % (uint64_t)gates);
    switch (tu_next(&r) % 3) {
    case 0: put(body, sizeof body, &bl, "    h' = (1 - g%d) * h + g%d * tanh(%s)\n", a, a, e); break;
    case 1: put(body, sizeof body, &bl, "    h' = tanh(%s + g%d * h)\n", e, a); break;
    default: put(body, sizeof body, &bl, "    h' = g%d * tanh(%s - h)\n", a, e);
    }
    if (has_c) put(body, sizeof body, &bl, "    c' = g%d * c + (1 - g%d) * tanh(%s)\n", b, b, e);
    if ((size_t)pl >= sizeof params || (size_t)bl >= sizeof body) return -1;
    int n = snprintf(buf, size, "cell rnd%llu(x[I]) -> h {\n    state h[H]%s\n%s\n%s}\n", (unsigned long long)seed,
                     has_c ? ", c[H]" : "", params, body);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int tu_dim_specs(const IrCell *c, int64_t in, int64_t size, int64_t second, char specs[8][32], const char **dims) {
    int n = 0;
    for (int d = 0; d < c->ndims && n < 8; d++) {
        if (!c->dims[d].name) continue;
        int64_t v = d == c->inputs[0].shape.dims[0] ? in : second && d != c->states[0].shape.dims[0] ? second : size;
        snprintf(specs[n], 32, "%s=%lld", c->dims[d].name, (long long)v);
        dims[n] = specs[n];
        n++;
    }
    return n;
}

int tu_random_cell_wide(uint64_t seed, char *buf, size_t size) {
    Rng r = {seed * 0xd1b54a32d192ed03ull + 7};
    const int has_c = (int)(tu_next(&r) % 2), has_s = (int)(tu_next(&r) % 2), gates = 2 + (int)(tu_next(&r) % 4);
    char body[4096], params[4096];
    int bl = 0, pl = 0;
    int unit[8]; /* gate k lies in [0, 1]: a convex weight */
    /* gate 0 is a sigmoid (the next state's convex weight); the others any of these */
    static const char *const acts[] = {"sigmoid(%s)", "tanh(%s)", "hardsigmoid(%s)", "clamp(%s, -1, 1)",
                                       "tanh(relu(%s))", "tanh(softplus(%s))"};
    for (int k = 0; k < gates; k++) {
        char v[96], sum[512];
        int sl = 0;
        const int j = k > 0 ? (int)(tu_next(&r) % (uint64_t)k) : 0;
        switch (tu_next(&r) % 7) { /* the recurrent product's operand */
        case 1: snprintf(v, sizeof v, "%s", has_c ? "c" : "h"); break;
        case 2:
            if (k > 0) snprintf(v, sizeof v, "g%d", j);
            else snprintf(v, sizeof v, "h");
            break;
        case 3:
            if (k > 0) snprintf(v, sizeof v, "(g%d * h)", j);
            else snprintf(v, sizeof v, "h");
            break;
        case 4: /* a product of a product */
            snprintf(v, sizeof v, "(V%d @ h)", k);
            put(params, sizeof params, &pl, "    param V%d[H, H]\n", k);
            break;
        case 5:
            if (k > 0) snprintf(v, sizeof v, "max(h, g%d)", j);
            else snprintf(v, sizeof v, "abs(h)");
            break;
        case 6: snprintf(v, sizeof v, "(h - 0.5 * h * h)"); break;
        default: snprintf(v, sizeof v, "h");
        }
        put(params, sizeof params, &pl, "    param U%d[H, H], b%d[H]\n", k, k);
        if (k == 0 || tu_next(&r) % 4 != 0) {
            put(params, sizeof params, &pl, "    param W%d[H, I]\n", k);
            put(sum, sizeof sum, &sl, "W%d @ x + ", k);
        }
        put(sum, sizeof sum, &sl, "U%d @ %s + b%d", k, v, k);
        if (has_s && tu_next(&r) % 2) { /* the small state, through a [H, P] product */
            put(params, sizeof params, &pl, "    param Q%d[H, P]\n", k);
            put(sum, sizeof sum, &sl, " + Q%d @ s", k);
        }
        if (has_c && tu_next(&r) % 3 == 0) { /* a peephole */
            put(params, sizeof params, &pl, "    param p%d[H]\n", k);
            put(sum, sizeof sum, &sl, " + p%d * c", k);
        }
        const int a = k == 0 ? 0 : (int)(tu_next(&r) % (sizeof acts / sizeof *acts));
        unit[k] = a == 0 || a == 2;
        put(body, sizeof body, &bl, "    g%d = ", k);
        put(body, sizeof body, &bl, acts[a], sum);
        put(body, sizeof body, &bl, "\n");
    }
    char e[512], e2[128];
    int el = 0;
    put(e, sizeof e, &el, "g0");
    for (int k = 1; k < gates; k++) put(e, sizeof e, &el, " %c g%d", "+*-"[tu_next(&r) % 3], k);
    snprintf(e2, sizeof e2, "g%d + g%d", (int)(tu_next(&r) % (uint64_t)gates), (int)(tu_next(&r) % (uint64_t)gates));
    int w = (int)(tu_next(&r) % (uint64_t)gates); /* c's convex weight: a gate in [0, 1] */
    if (!unit[w]) w = 0;
    put(body, sizeof body, &bl, "    h' = (1 - g0) * h + g0 * tanh(%s)\n", e);
    if (has_c) put(body, sizeof body, &bl, "    c' = g%d * c + (1 - g%d) * tanh(%s)\n", w, w, e2);
    if (has_s) {
        if (tu_next(&r) % 2) { /* a product of the step's own result (LSTMP's projection) */
            put(params, sizeof params, &pl, "    param R[P, H]\n");
            put(body, sizeof body, &bl, "    s' = R @ (g%d * tanh(h'))\n", (int)(tu_next(&r) % (uint64_t)gates));
        } else {
            put(params, sizeof params, &pl, "    param Ws[P, I], Us[P, P], bs[P]\n");
            put(body, sizeof body, &bl, "    s' = tanh(Ws @ x + Us @ s + bs)\n");
        }
    }
    const int second = (int)(tu_next(&r) % 3); /* 0: a second output y, a product of the new h; 1: element-wise */
    if (second == 0) {
        put(params, sizeof params, &pl, "    param Y[P, H]\n");
        put(body, sizeof body, &bl, "    y = Y @ h'\n");
    } else if (second == 1)
        put(body, sizeof body, &bl, "    y = g%d * tanh(%s')\n", (int)(tu_next(&r) % (uint64_t)gates), has_c ? "c" : "h");
    if ((size_t)pl >= sizeof params || (size_t)bl >= sizeof body) return -1;
    int n = snprintf(buf, size, "cell wide%llu(x[I]) -> h%s {\n    state h[H]%s%s\n%s\n%s}\n", (unsigned long long)seed,
                     second < 2 ? ", y" : "", has_c ? ", c[H]" : "", has_s ? ", s[P]" : "", params, body);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

const char tu_early_cell[] = "cell early(x[I]) -> h {\n"
                             "    state h[H], c[H]\n"
                             "    param W[H, I], V[H, I], U[H, H]\n"
                             "    c' = tanh(V @ x) + 0.5 * c\n"
                             "    h' = tanh(W @ x + U @ c)\n"
                             "}\n";

const char *const tu_post_cells[TU_NPOST_CELLS] = {
    "cell ro(x[I]) -> y {\n  state h[H]\n  param W[H, I], U[H, H], V[O, H]\n  h' = tanh(W @ x + U @ h)\n  y = V @ h'\n}\n",
    "cell post(x[I]) -> y, h, z {\n  state h[H], c[H]\n"
    "  param W[H, I], U[H, H], V[O, H], b[O], Q[O, H], w[O], R[M, O], X[O, I]\n"
    "  c' = 0.5 * c + tanh(W @ x)\n  h' = tanh(W @ x + U @ h) * c'\n  y = sigmoid(V @ h' + b)\n"
    "  z = R @ tanh(Q @ h' * w + X @ x)\n}\n",
    "cell post2(x[I]) -> h, y {\n  state h[H]\n  param W[H, I], U[H, H], V[O, H], U2[O, H]\n"
    "  h' = tanh(W @ x + U @ h)\n  y = tanh(V @ h' + U2 @ h)\n}\n",
    "cell reuse(x[H]) -> h, y {\n  state h[H]\n  param W[H, H], U[H, H]\n  h' = tanh(W @ x + U @ h)\n  y = U @ h'\n}\n",
    "cell chain(x[I]) -> y, z {\n  state h[H]\n  param W[H, I], U[H, H], V[O, H], R[M, O]\n  h' = tanh(W @ x + U @ h)\n"
    "  y = V @ h'\n  z = R @ y\n}\n",
};

locale_t tu_comma_locale(void) {
    char dir[] = "/tmp/rnncc-locale-XXXXXX", cmd[256];
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp failed");
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 > /dev/null 2>&1", dir);
    int rc = system(cmd);
    setenv("LOCPATH", dir, 1);
    locale_t loc = newlocale(LC_ALL_MASK, "de_DE.UTF-8", (locale_t)0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir); /* the loaded locale stays mapped */
    ck_assert_int_eq(system(cmd), 0);
    unsetenv("LOCPATH");
    ck_assert_msg(loc != (locale_t)0, "no de_DE.UTF-8 locale (localedef exit status %d): run .ci/install-deps (package locales)", rc);
    locale_t old = uselocale(loc); /* not vacuous: the locale does write a comma */
    char text[16];
    snprintf(text, sizeof text, "%g", 0.5);
    uselocale(old);
    ck_assert_str_eq(text, "0,5");
    return loc;
}
