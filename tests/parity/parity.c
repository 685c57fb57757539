/* parity: runs one case written by tests/parity/export.py through rnncc, forward and
 * backward, and compares every result with PyTorch's nn.LSTM / nn.GRU on the same weights.
 * Key idea: the criterion is the exact function, PyTorch in float64 (y64, hT64, ..., grad64_*):
 * rnncc passes when max|rnncc - torch64| / max|torch64| <= 1e-5 for outputs and final states
 * and <= 1e-4 for gradients. PyTorch's own float32 results are compared too, for information
 * (bound 5e-5, PyTorch's own cuDNN-vs-CPU tolerance), as is PyTorch float32 against float64;
 * they decide nothing, since rnncc need not round as cuDNN does. Every rnncc parameter is
 * filled from PyTorch's tensors through one mapping table, and every gradient slice of
 * PyTorch's is compared with exactly one rnncc parameter gradient through the same table.
 *
 *   parity [--cells DIR] CASE_DIR       (DIR holds <cell>.cell; default "cells")
 *
 * Exit status: 0 all passed, 1 any failure or bad input, 2 usage, 77 no CUDA device. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnncc.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_SKIP = 77 };
enum { MAX_KEYS = 4096, MAX_DIMS = 4, MAX_STATES = 2, MAX_LAYERS = 64, MAX_GATES = 4, MAX_OUTPUTS = 8 };
static const double BOUND_FWD = 1e-5;  /* rnncc vs PyTorch float64: outputs and final states (decides) */
static const double BOUND_GRAD = 1e-4; /* rnncc vs PyTorch float64: gradients (decides) */
static const double BOUND_FP32 = 5e-5; /* rnncc vs PyTorch float32 (informational: decides nothing) */

/* The two PyTorch results of each tensor: REF64 decides, REF32 informs. */
enum { REF64 = 0, REF32 = 1 };

/* ---- where each rnncc parameter comes from ------------------------------------------- */

/* PyTorch stacks the gates' rows: weight_ih_l{k} is [gate 0; gate 1; ...], H rows each. */
typedef enum Source {
    SRC_W_IH,     /* rows of weight_ih_l{k}{_reverse} */
    SRC_W_HH,     /* rows of weight_hh_l{k}{_reverse} */
    SRC_BIAS_SUM, /* bias_ih + bias_hh of the gate (its gradient is either one's: they are equal) */
    SRC_BIAS_IH,  /* bias_ih of the gate alone */
    SRC_BIAS_HH,  /* bias_hh of the gate alone */
} Source;

/* PyTorch's four tensors of a layer and direction, in this order everywhere below. */
static const char *const kind_name[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};

typedef struct Map {
    const char *param; /* the name in the .cell file */
    Source src;
    int gate;          /* which H-row block */
} Map;

typedef struct CellSpec {
    const char *name;
    int ngates, nstates; /* states in declaration order: h, then c for the LSTM */
    /* export.py's names per state: initial, final, final's cotangent, initial's gradient */
    const char *state_tensor[MAX_STATES][4];
    const Map *map;
    int nmap;
} CellSpec;
enum { ST_INIT, ST_FINAL, ST_DFINAL, ST_DINIT };

/* nn.LSTM: gates i, f, g, o. */
static const Map lstm_map[] = {
    {"W_i", SRC_W_IH, 0},     {"W_f", SRC_W_IH, 1},     {"W_g", SRC_W_IH, 2},     {"W_o", SRC_W_IH, 3},
    {"U_i", SRC_W_HH, 0},     {"U_f", SRC_W_HH, 1},     {"U_g", SRC_W_HH, 2},     {"U_o", SRC_W_HH, 3},
    {"b_i", SRC_BIAS_SUM, 0}, {"b_f", SRC_BIAS_SUM, 1}, {"b_g", SRC_BIAS_SUM, 2}, {"b_o", SRC_BIAS_SUM, 3},
};
/* nn.GRU: gates r, z, n; n's two biases stay apart (b_hn is multiplied by r). */
static const Map gru_map[] = {
    {"W_r", SRC_W_IH, 0},     {"W_z", SRC_W_IH, 1},     {"W_n", SRC_W_IH, 2},
    {"U_r", SRC_W_HH, 0},     {"U_z", SRC_W_HH, 1},     {"U_n", SRC_W_HH, 2},
    {"b_r", SRC_BIAS_SUM, 0}, {"b_z", SRC_BIAS_SUM, 1}, {"b_in", SRC_BIAS_IH, 2}, {"b_hn", SRC_BIAS_HH, 2},
};
static const CellSpec cells[] = {
    {"lstm", 4, 2, {{"h0", "hT", "dhT", "dh0"}, {"c0", "cT", "dcT", "dc0"}}, lstm_map, sizeof lstm_map / sizeof lstm_map[0]},
    {"gru", 3, 1, {{"h0", "hT", "dhT", "dh0"}, {NULL, NULL, NULL, NULL}}, gru_map, sizeof gru_map / sizeof gru_map[0]},
};

/* ---- the manifest: `key = value` lines, '#' comments --------------------------------- */

typedef struct Manifest {
    const char *dir;
    char *key[MAX_KEYS], *val[MAX_KEYS];
    int n;
} Manifest;

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

static int manifest_read(const char *dir, Manifest *m) {
    char path[4096], line[4096];
    m->dir = dir;
    m->n = 0;
    snprintf(path, sizeof path, "%s/manifest", dir);
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "parity: error: cannot open %s (run tests/parity/export.py first)\n", path); return 0; }
    int lineno = 0, ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line), *eq = strchr(s, '=');
        if (*s == 0 || *s == '#') continue;
        if (!eq) { fprintf(stderr, "parity: error: %s:%d: expected 'key = value'\n", path, lineno); ok = 0; break; }
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        for (int i = 0; i < m->n; i++)
            if (strcmp(m->key[i], k) == 0) { fprintf(stderr, "parity: error: %s:%d: '%s' given twice\n", path, lineno, k); ok = 0; }
        if (ok && m->n == MAX_KEYS) { fprintf(stderr, "parity: error: %s: more than %d keys\n", path, MAX_KEYS); ok = 0; }
        if (ok) {
            m->key[m->n] = strdup(k);
            m->val[m->n] = strdup(v);
            if (!m->key[m->n] || !m->val[m->n]) { fprintf(stderr, "parity: error: out of memory\n"); ok = 0; }
            m->n++;
        }
    }
    fclose(f);
    return ok;
}

static void manifest_free(Manifest *m) {
    for (int i = 0; i < m->n; i++) { free(m->key[i]); free(m->val[i]); }
    m->n = 0;
}

static const char *manifest_get(const Manifest *m, const char *key) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) return m->val[i];
    return NULL;
}

static int manifest_int(const Manifest *m, const char *key, long lo, long hi, int *out) {
    const char *v = manifest_get(m, key);
    if (!v) { fprintf(stderr, "parity: error: %s/manifest has no '%s'\n", m->dir, key); return 0; }
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "parity: error: %s/manifest: '%s' must be an integer in %ld..%ld, not '%s'\n", m->dir, key, lo, hi, v);
        return 0;
    }
    *out = (int)x;
    return 1;
}

/* ---- tensors: raw little-endian float32 or float64 files -------------------------------- */

typedef struct Tensor {
    double *v;  /* the values, widened to double */
    int64_t n;
    int ndim, f64;
    int64_t dim[MAX_DIMS];
} Tensor;

/* Loads tensor `name`: its manifest line is `tensor.<name> = <file> [float32|float64] <dims>`
 * (no type word: float32). Checks that its shape is exactly the ndim dims in want, and when
 * need_f32 that it is float32 (what rnncc is given must be exactly what PyTorch was given). */
static int tensor_load(const Manifest *m, const char *name, int ndim, const int64_t *want, int need_f32, Tensor *t) {
    char key[256], file[1024], word[32], path[4096];
    memset(t, 0, sizeof *t);
    snprintf(key, sizeof key, "tensor.%s", name);
    const char *v = manifest_get(m, key);
    if (!v) { fprintf(stderr, "parity: error: %s/manifest has no '%s' (re-export the case with tests/parity/export.py)\n", m->dir, key); return 0; }
    int used = 0;
    if (sscanf(v, "%1023s%n", file, &used) != 1 || strstr(file, "..") || strchr(file, '/')) {
        fprintf(stderr, "parity: error: %s/manifest: bad file name in '%s = %s'\n", m->dir, key, v);
        return 0;
    }
    const char *p = v + used;
    int wused = 0;
    if (sscanf(p, " %31[a-z0-9]%n", word, &wused) == 1 && (word[0] < '0' || word[0] > '9')) {
        if (strcmp(word, "float64") == 0) t->f64 = 1;
        else if (strcmp(word, "float32") != 0) {
            fprintf(stderr, "parity: error: %s/manifest: '%s = %s': the type must be float32 or float64\n", m->dir, key, v);
            return 0;
        }
        p += wused;
    }
    if (need_f32 && t->f64) {
        fprintf(stderr, "parity: error: %s/manifest: '%s' must be float32 (rnncc and PyTorch both take it as is)\n", m->dir, name);
        return 0;
    }
    t->n = 1;
    for (;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || t->ndim == MAX_DIMS || __builtin_mul_overflow(t->n, (int64_t)d, &t->n)) {
            fprintf(stderr, "parity: error: %s/manifest: bad shape in '%s = %s'\n", m->dir, key, v);
            return 0;
        }
        t->dim[t->ndim++] = d;
        p = end;
    }
    int match = t->ndim == ndim;
    for (int i = 0; match && i < ndim; i++) match = t->dim[i] == want[i];
    if (!match) {
        fprintf(stderr, "parity: error: %s: '%s' has shape [", m->dir, name);
        for (int i = 0; i < t->ndim; i++) fprintf(stderr, "%s%lld", i ? " " : "", (long long)t->dim[i]);
        fprintf(stderr, "]; expected [");
        for (int i = 0; i < ndim; i++) fprintf(stderr, "%s%lld", i ? " " : "", (long long)want[i]);
        fprintf(stderr, "]\n");
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s", m->dir, file);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "parity: error: cannot open %s\n", path); return 0; }
    int size = t->f64 ? 8 : 4;
    t->v = malloc((size_t)t->n * sizeof(double) + sizeof(double));
    int ok = t->v != NULL;
    for (int64_t i = 0; ok && i < t->n; i++) {
        unsigned char b[8];
        if (fread(b, 1, (size_t)size, f) != (size_t)size) { ok = 0; break; }
        uint64_t u = 0;
        for (int k = size - 1; k >= 0; k--) u = u << 8 | b[k];
        if (t->f64) {
            memcpy(&t->v[i], &u, sizeof u);
        } else {
            uint32_t u32 = (uint32_t)u;
            float x;
            memcpy(&x, &u32, sizeof x);
            t->v[i] = x;
        }
    }
    if (ok && fgetc(f) != EOF) ok = 0;
    fclose(f);
    if (!ok) {
        fprintf(stderr, "parity: error: %s must hold exactly %lld %s values (%lld bytes)\n", path, (long long)t->n,
                t->f64 ? "float64" : "float32", (long long)t->n * size);
        free(t->v);
        t->v = NULL;
        return 0;
    }
    return 1;
}

/* Loads PyTorch's two results of one tensor: `<name>64` (float64 run) and `<name>` (float32 run). */
static int tensor_load_pair(const Manifest *m, const char *name, const char *name64, int ndim, const int64_t *want, Tensor pair[2]) {
    return tensor_load(m, name64, ndim, want, 0, &pair[REF64]) && tensor_load(m, name, ndim, want, 0, &pair[REF32]);
}

/* ---- the case ----------------------------------------------------------------------- */

typedef struct Case {
    const CellSpec *spec;
    int I, H, T, N, layers, dirs, backward;
    int *lengths;                                 /* NULL: every sequence has T steps */
    /* what rnncc and PyTorch are both given (float32) */
    Tensor x, h0[MAX_STATES], dy, dhT[MAX_STATES];
    Tensor w[MAX_LAYERS][2][4];                   /* weight_ih, weight_hh, bias_ih, bias_hh per layer, direction */
    /* PyTorch's results, [REF64] and [REF32] */
    Tensor y[2], hT[MAX_STATES][2];
    Tensor dx[2], dh0[MAX_STATES][2];             /* only when backward */
    Tensor gw[MAX_LAYERS][2][4][2];               /* grad of w[l][d][j]; only when backward */
} Case;

static void case_free(Case *c) {
    free(c->lengths);
    free(c->x.v);
    free(c->dy.v);
    for (int r = 0; r < 2; r++) {
        free(c->y[r].v);
        free(c->dx[r].v);
    }
    for (int k = 0; k < MAX_STATES; k++) {
        free(c->h0[k].v);
        free(c->dhT[k].v);
        for (int r = 0; r < 2; r++) { free(c->hT[k][r].v); free(c->dh0[k][r].v); }
    }
    for (int l = 0; l < MAX_LAYERS; l++)
        for (int d = 0; d < 2; d++)
            for (int j = 0; j < 4; j++) {
                free(c->w[l][d][j].v);
                for (int r = 0; r < 2; r++) free(c->gw[l][d][j][r].v);
            }
}

/* Reads the manifest's sizes and every tensor, checking each shape. */
static int case_load(const Manifest *m, Case *c) {
    const char *cell = manifest_get(m, "cell");
    if (!cell) { fprintf(stderr, "parity: error: %s/manifest has no 'cell'\n", m->dir); return 0; }
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        if (strcmp(cells[i].name, cell) == 0) c->spec = &cells[i];
    if (!c->spec) { fprintf(stderr, "parity: error: %s/manifest: unknown cell '%s' (lstm or gru)\n", m->dir, cell); return 0; }
    int bidir;
    if (!manifest_int(m, "I", 1, 1 << 20, &c->I) || !manifest_int(m, "H", 1, 1 << 20, &c->H) ||
        !manifest_int(m, "T", 0, 1 << 20, &c->T) || !manifest_int(m, "N", 1, 1 << 20, &c->N) ||
        !manifest_int(m, "layers", 1, MAX_LAYERS, &c->layers) || !manifest_int(m, "bidirectional", 0, 1, &bidir))
        return 0;
    if (!manifest_get(m, "backward")) {
        fprintf(stderr, "parity: error: %s/manifest has no 'backward': written by an older export.py, without the float64 "
                "reference; re-export the case with tests/parity/export.py\n", m->dir);
        return 0;
    }
    if (!manifest_int(m, "backward", 0, 1, &c->backward)) return 0;
    c->dirs = bidir ? 2 : 1;
    const char *len = manifest_get(m, "lengths");
    if (!len) { fprintf(stderr, "parity: error: %s/manifest has no 'lengths'\n", m->dir); return 0; }
    if (strcmp(len, "none") != 0) {
        c->lengths = calloc((size_t)c->N, sizeof *c->lengths);
        if (!c->lengths) { fprintf(stderr, "parity: error: out of memory\n"); return 0; }
        const char *p = len;
        for (int n = 0; n < c->N; n++) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v > c->T) {
                fprintf(stderr, "parity: error: %s/manifest: lengths must be 'none' or %d integers in 0..%d, not '%s'\n",
                        m->dir, c->N, c->T, len);
                return 0;
            }
            c->lengths[n] = (int)v;
            p = end;
        }
        while (*p == ' ') p++;
        if (*p) { fprintf(stderr, "parity: error: %s/manifest: more than N = %d lengths in '%s'\n", m->dir, c->N, len); return 0; }
    }
    int64_t T = c->T, N = c->N, I = c->I, H = c->H, G = c->spec->ngates, units = (int64_t)c->layers * c->dirs;
    const int64_t xs[3] = {T, N, I}, ys[3] = {T, N, c->dirs * H}, ss[3] = {units, N, H};
    char n64[96];
    if (!tensor_load(m, "x", 3, xs, 1, &c->x) || !tensor_load_pair(m, "y", "y64", 3, ys, c->y)) return 0;
    for (int k = 0; k < c->spec->nstates; k++) {
        const char *const *st = c->spec->state_tensor[k];
        snprintf(n64, sizeof n64, "%s64", st[ST_FINAL]);
        if (!tensor_load(m, st[ST_INIT], 3, ss, 1, &c->h0[k]) || !tensor_load_pair(m, st[ST_FINAL], n64, 3, ss, c->hT[k]))
            return 0;
    }
    if (c->backward) {
        if (!tensor_load(m, "dy", 3, ys, 1, &c->dy) || !tensor_load_pair(m, "dx", "dx64", 3, xs, c->dx)) return 0;
        for (int k = 0; k < c->spec->nstates; k++) {
            const char *const *st = c->spec->state_tensor[k];
            snprintf(n64, sizeof n64, "%s64", st[ST_DINIT]);
            if (!tensor_load(m, st[ST_DFINAL], 3, ss, 1, &c->dhT[k]) || !tensor_load_pair(m, st[ST_DINIT], n64, 3, ss, c->dh0[k]))
                return 0;
        }
    }
    for (int l = 0; l < c->layers; l++)
        for (int d = 0; d < c->dirs; d++)
            for (int j = 0; j < 4; j++) {
                char name[64], gname[80], gname64[80];
                snprintf(name, sizeof name, "%s_l%d%s", kind_name[j], l, d ? "_reverse" : "");
                snprintf(gname, sizeof gname, "grad_%s", name);
                snprintf(gname64, sizeof gname64, "grad64_%s", name);
                int64_t in = l == 0 ? I : c->dirs * H;
                int64_t shape[2] = {G * H, j == 0 ? in : H};
                if (!tensor_load(m, name, j < 2 ? 2 : 1, shape, 1, &c->w[l][d][j])) return 0;
                if (c->backward && !tensor_load_pair(m, gname, gname64, j < 2 ? 2 : 1, shape, c->gw[l][d][j])) return 0;
            }
    return 1;
}

static const Map *find_map(const CellSpec *spec, const char *param) {
    for (int i = 0; i < spec->nmap; i++)
        if (strcmp(spec->map[i].param, param) == 0) return &spec->map[i];
    fprintf(stderr, "parity: error: the %s cell has a parameter '%s' with no PyTorch source\n", spec->name, param);
    return NULL;
}

/* Checks that rnncc's parameter (its layer, direction and shape) has a PyTorch slice. */
static const Map *param_source(const Case *c, const rnncc_param_info *info) {
    const Map *map = find_map(c->spec, info->name);
    if (!map) return NULL;
    if (info->layer < 0 || info->layer >= c->layers || info->direction < 0 || info->direction >= c->dirs) {
        fprintf(stderr, "parity: error: rnncc's %s has layer %d, direction %d; the case has %d layers, %d directions\n",
                info->name, info->layer, info->direction, c->layers, c->dirs);
        return NULL;
    }
    const Tensor *w = c->w[info->layer][info->direction];
    int64_t H = c->H;
    int64_t cols = map->src == SRC_W_IH ? w[0].dim[1] : map->src == SRC_W_HH ? w[1].dim[1] : 1;
    if (info->rows != H || info->cols != cols || map->gate < 0 || map->gate >= c->spec->ngates) {
        fprintf(stderr, "parity: error: rnncc's %s (layer %d, direction %d) is [%lld x %lld]; PyTorch's slice is [%lld x %lld]\n",
                info->name, info->layer, info->direction, (long long)info->rows, (long long)info->cols, (long long)H,
                (long long)cols);
        return NULL;
    }
    return map;
}

/* Copies one rnncc parameter's values out of PyTorch's tensors. */
static int fill_param(const Case *c, const rnncc_param_info *info, float *out) {
    const Map *map = param_source(c, info);
    if (!map) return 0;
    const Tensor *w = c->w[info->layer][info->direction];
    int64_t H = c->H, g = map->gate, cols = info->cols;
    for (int64_t r = 0; r < H; r++)
        for (int64_t q = 0; q < cols; q++)
            switch (map->src) {
            case SRC_W_IH: out[r * cols + q] = (float)w[0].v[(g * H + r) * cols + q]; break;
            case SRC_W_HH: out[r * cols + q] = (float)w[1].v[(g * H + r) * cols + q]; break;
            case SRC_BIAS_SUM: out[r] = (float)(w[2].v[g * H + r] + w[3].v[g * H + r]); break; /* one rounding */
            case SRC_BIAS_IH: out[r] = (float)w[2].v[g * H + r]; break;
            case SRC_BIAS_HH: out[r] = (float)w[3].v[g * H + r]; break;
            }
    return 1;
}

/* ---- the comparison ------------------------------------------------------------------ */

/* What rnncc computed, widened to double (NaN where it wrote nothing). */
typedef struct Results {
    double *y, *hT[MAX_STATES];        /* inference forward */
    double *ty, *thT[MAX_STATES];      /* training forward (with a reserve) */
    double *dx, *dh0[MAX_STATES];      /* rnncc_backward_data */
    double *dw;                        /* rnncc_backward_weights: rnncc's packed weight layout */
    int64_t nw;                        /* its size in floats (rnncc_model_weights) */
    rnncc_param_info *info;            /* every parameter: name, layer, direction, shape, offset in dw */
    int ninfo;
} Results;

static void results_free(Results *r) {
    free(r->y); free(r->ty); free(r->dx); free(r->dw);
    for (int k = 0; k < MAX_STATES; k++) { free(r->hT[k]); free(r->thT[k]); free(r->dh0[k]); }
    for (int i = 0; r->info && i < r->ninfo; i++) free((char *)r->info[i].name);
    free(r->info);
    memset(r, 0, sizeof *r);
}

typedef struct Tally {
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

static void print_legend(void) {
    printf("  error = max|a-b|/max|b|; \"vs torch64\" decides (bound %.0e outputs and states, %.0e gradients); \"vs torch32\"\n"
           "  informs (bound %.0e, PyTorch's own cuDNN-vs-CPU tolerance), as does \"torch32 vs 64\" (PyTorch's own float32 error)\n",
           BOUND_FWD, BOUND_GRAD, BOUND_FP32);
    printf("  %-46s %-4s  %-20s  %-16s  %s\n", "result", "", "vs torch64 (bound)", "vs torch32", "torch32 vs 64");
}

/* One line: e64 = rnncc vs PyTorch float64 (decides, against bound), e32 = rnncc vs PyTorch
 * float32 (informs), et = PyTorch float32 vs float64 (informs). NaN fails. */
static void report(Tally *t, const char *label, double bound, double e64, double e32, double et) {
    int ok = e64 <= bound, ok32 = e32 <= BOUND_FP32;
    printf("  %-46s %-4s  %9.2e (%.0e)    %9.2e %-4s    %9.2e%s\n", label, ok ? "ok" : "FAIL", e64, bound, e32,
           ok32 ? "ok" : "over", et, isnan(e64) ? "  (NaN or infinity: an element left unwritten, or an overflow)" : "");
    if (ok) t->passed++;
    else t->failed++;
    if (ok32) t->fp32_ok++;
    else t->fp32_over++;
    double *worst = bound == BOUND_FWD ? &t->worst_fwd : &t->worst_grad;
    *worst = worse(*worst, e64);
    t->worst_fp32 = worse(t->worst_fp32, e32);
    t->worst_torch = worse(t->worst_torch, et);
}

/* A whole tensor: rnncc's got against PyTorch's pair. */
static void compare(Tally *t, const char *label, double bound, const double *got, const Tensor ref[2]) {
    report(t, label, bound, rel_err(got, ref[REF64].v, ref[REF64].n), rel_err(got, ref[REF32].v, ref[REF32].n),
           rel_err(ref[REF32].v, ref[REF64].v, ref[REF64].n));
}

/* Every parameter gradient, sliced out of rnncc's packed buffer at the offsets rnncc reports,
 * against its PyTorch slice through the mapping table. Each H-row block of each of PyTorch's
 * gradient tensors must be compared exactly once. Returns 0 on a malformed layout (an error). */
static int compare_weight_grads(const Case *c, const Results *r, Tally *t) {
    static int cover[MAX_LAYERS][2][4][MAX_GATES];
    memset(cover, 0, sizeof cover);
    int64_t H = c->H;
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
        int js[2], nj = 0;
        switch (map->src) {
        case SRC_W_IH: js[nj++] = 0; break;
        case SRC_W_HH: js[nj++] = 1; break;
        case SRC_BIAS_SUM: js[nj++] = 2; js[nj++] = 3; break; /* d(b_ih + b_hh)/d b_ih = d/d b_hh: both must match */
        case SRC_BIAS_IH: js[nj++] = 2; break;
        case SRC_BIAS_HH: js[nj++] = 3; break;
        }
        double e64 = 0, e32 = 0, et = 0;
        for (int k = 0; k < nj; k++) {
            int64_t at = map->gate * H * info->cols; /* rows [gate*H, gate*H + H) are contiguous */
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
                 src, (long long)(map->gate * H), (long long)(map->gate * H + H));
        report(t, label, BOUND_GRAD, e64, e32, et);
    }
    int ok = 1;
    for (int l = 0; l < c->layers; l++)
        for (int d = 0; d < c->dirs; d++)
            for (int j = 0; j < 4; j++)
                for (int q = 0; q < c->spec->ngates; q++)
                    if (cover[l][d][j][q] != 1) {
                        fprintf(stderr, "parity: error: rows [%lld, %lld) of grad_%s_l%d%s were compared %d times, not once: "
                                "the mapping table does not cover PyTorch's parameters exactly\n",
                                (long long)(q * H), (long long)(q * H + H), kind_name[j], l, d ? "_reverse" : "", cover[l][d][j][q]);
                        ok = 0;
                    }
    return ok;
}

/* Every comparison of one case. Returns 0 when the comparison itself could not be made. */
static int compare_all(const Case *c, const Results *r, Tally *t) {
    print_legend();
    compare(t, "y", BOUND_FWD, r->y, c->y);
    for (int k = 0; k < c->spec->nstates; k++) compare(t, c->spec->state_tensor[k][ST_FINAL], BOUND_FWD, r->hT[k], c->hT[k]);
    char label[64];
    compare(t, "y (training forward)", BOUND_FWD, r->ty, c->y);
    for (int k = 0; k < c->spec->nstates; k++) {
        snprintf(label, sizeof label, "%s (training forward)", c->spec->state_tensor[k][ST_FINAL]);
        compare(t, label, BOUND_FWD, r->thT[k], c->hT[k]);
    }
    if (!c->backward) {
        printf("  gradients: none in this case (backward = 0)\n");
        return 1;
    }
    compare(t, "dx", BOUND_GRAD, r->dx, c->dx);
    for (int k = 0; k < c->spec->nstates; k++) compare(t, c->spec->state_tensor[k][ST_DINIT], BOUND_GRAD, r->dh0[k], c->dh0[k]);
    return compare_weight_grads(c, r, t);
}

/* ---- the GPU run ------------------------------------------------------------------------ */

static void *dev_alloc(const char *what, int64_t floats, int fill_nan) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)(floats > 0 ? floats : 1) * sizeof(float));
    if (e == cudaSuccess && fill_nan) e = cudaMemset(p, 0xff, (size_t)(floats > 0 ? floats : 1) * sizeof(float)); /* all-ones bytes: NaN */
    if (e != cudaSuccess) {
        fprintf(stderr, "parity: error: allocating %s on the device: %s\n", what, cudaGetErrorString(e));
        if (p) cudaFree(p);
        return NULL;
    }
    return p;
}

/* Allocates a device copy of t (float32 values, exact: inputs are float32 files). */
static float *upload(const char *what, const Tensor *t) {
    float *h = malloc((size_t)t->n * sizeof(float) + sizeof(float)), *d = NULL;
    if (!h) { fprintf(stderr, "parity: error: out of memory\n"); return NULL; }
    for (int64_t i = 0; i < t->n; i++) h[i] = (float)t->v[i];
    if ((d = dev_alloc(what, t->n, 0))) {
        cudaError_t e = cudaMemcpy(d, h, (size_t)t->n * sizeof(float), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            fprintf(stderr, "parity: error: cudaMemcpy of %s to the device: %s\n", what, cudaGetErrorString(e));
            cudaFree(d);
            d = NULL;
        }
    }
    free(h);
    return d;
}

static double *download(const void *src, int64_t n) {
    float *h = malloc((size_t)n * sizeof(float) + sizeof(float));
    double *w = malloc((size_t)n * sizeof(double) + sizeof(double));
    cudaError_t e = h && w ? cudaMemcpy(h, src, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost) : cudaSuccess;
    if (!h || !w || e != cudaSuccess) {
        fprintf(stderr, "parity: error: cudaMemcpy from the device: %s\n", h && w ? cudaGetErrorString(e) : "out of memory");
        free(h);
        free(w);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) w[i] = h[i];
    free(h);
    return w;
}

static void print_versions(int device) {
    int rt = 0, drv = 0;
    struct cudaDeviceProp prop;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) snprintf(prop.name, sizeof prop.name, "?");
    printf("  rnncc %s, CUDA runtime %d.%d, driver %d.%d, device %d: %s\n", rnncc_version(), rt / 1000, rt % 1000 / 10,
           drv / 1000, drv % 1000 / 10, device, prop.name);
}

/* Device memory of one run, freed together. */
typedef struct Dev {
    float *x, *h0[MAX_STATES];                   /* inputs */
    float *y, *hT[MAX_STATES], *ty, *thT[MAX_STATES]; /* forward results (NaN-poisoned) */
    float *dy, *dhT[MAX_STATES];                 /* cotangents */
    float *dx, *dh0[MAX_STATES], *dw;            /* gradients (NaN-poisoned) */
    void *ws, *reserve;
} Dev;

static void dev_free(Dev *g) {
    void *all[] = {g->x, g->y, g->ty, g->dy, g->dx, g->dw, g->ws, g->reserve};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) cudaFree(all[i]);
    for (int k = 0; k < MAX_STATES; k++) {
        void *st[] = {g->h0[k], g->hT[k], g->thT[k], g->dhT[k], g->dh0[k]};
        for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
            if (st[i]) cudaFree(st[i]);
    }
}

#define TRY_RNNCC(call)                                                                                            \
    do {                                                                                                           \
        rnncc_status s_ = (call);                                                                                  \
        if (s_ != RNNCC_OK) {                                                                                      \
            fprintf(stderr, "parity: error: %s: %s: %s\n", #call, rnncc_status_string(s_), rnncc_model_error(model)); \
            goto out;                                                                                              \
        }                                                                                                          \
    } while (0)

/* Compiles the cell, fills the model from PyTorch's parameters, runs the inference forward,
 * the training forward and (when the case has them) both backward passes, and copies every
 * result back into r. Returns 0 done, EXIT_SKIP without a CUDA device, EXIT_FAIL on an error. */
static int run_rnncc(const Case *c, const char *cells_dir, Results *r) {
    int status = EXIT_FAIL;
    rnncc_program *prog = NULL;
    rnncc_model *model = NULL;
    Dev g;
    memset(&g, 0, sizeof g);
    float *pbuf = NULL;

    /* Compile the cell: rnncc's own file, not a copy, so the test covers what users run. */
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.cell", cells_dir, c->spec->name);
    rnncc_status s = rnncc_compile_file(path, NULL, &prog);
    if (s != RNNCC_OK) {
        fprintf(stderr, "%sparity: error: compiling %s: %s\n", prog ? rnncc_program_log(prog) : "", path,
                s == RNNCC_ERR_NOT_FOUND ? "cannot open the file (run from the repository root or pass --cells)"
                                         : rnncc_status_string(s));
        goto out;
    }
    char dim_i[32], dim_h[32];
    snprintf(dim_i, sizeof dim_i, "I=%d", c->I);
    snprintf(dim_h, sizeof dim_h, "H=%d", c->H);
    const char *dims[] = {dim_i, dim_h};
    rnncc_model_desc desc = {NULL, dims, 2, c->layers, c->dirs == 2, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
    s = rnncc_model_create(prog, &desc, &model);
    if (s == RNNCC_ERR_NO_GPU) {
        printf("parity: %s; skipped (the manifest, every tensor and %s were read and checked)\n", rnncc_model_error(model), path);
        status = EXIT_SKIP;
        goto out;
    }
    if (s != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_model_create: %s: %s\n", rnncc_status_string(s), rnncc_model_error(model));
        goto out;
    }
    int device = 0;
    cudaGetDevice(&device);
    print_versions(device);

    /* The model's own shape report must match PyTorch's. */
    rnncc_model_sizes sz;
    TRY_RNNCC(rnncc_model_get_sizes(model, &sz));
    int shapes_ok = sz.input == c->I && sz.output == (int64_t)c->dirs * c->H && sz.noutputs >= 1 &&
                    sz.noutputs <= MAX_OUTPUTS && sz.nstates == c->spec->nstates;
    for (int k = 0; shapes_ok && k < sz.nstates; k++) shapes_ok = sz.state_size[k] == c->H;
    if (!shapes_ok) {
        fprintf(stderr, "parity: error: rnncc's model has input %lld, output %lld, %d states; expected %d, %d, %d of size %d\n",
                (long long)sz.input, (long long)sz.output, sz.nstates, c->I, c->dirs * c->H, c->spec->nstates, c->H);
        goto out;
    }

    /* Every parameter of every layer and direction, by name, from PyTorch's tensors. */
    int nparams = rnncc_model_param_count(model);
    if (nparams != c->layers * c->dirs * c->spec->nmap) {
        fprintf(stderr, "parity: error: rnncc's model has %d parameter tensors; expected %d\n", nparams,
                c->layers * c->dirs * c->spec->nmap);
        goto out;
    }
    if (!rnncc_model_weights(model, &r->nw) || !(r->info = calloc((size_t)nparams, sizeof *r->info))) {
        fprintf(stderr, "parity: error: rnncc_model_weights: %s\n", rnncc_model_error(model));
        goto out;
    }
    for (int p = 0; p < nparams; p++) {
        rnncc_param_info info;
        TRY_RNNCC(rnncc_model_param_info(model, p, &info));
        r->info[p] = info;
        if (!(r->info[p].name = strdup(info.name))) { fprintf(stderr, "parity: error: out of memory\n"); goto out; }
        r->ninfo = p + 1;
        free(pbuf);
        if (!(pbuf = malloc((size_t)(info.rows * info.cols) * sizeof(float) + sizeof(float)))) {
            fprintf(stderr, "parity: error: out of memory\n");
            goto out;
        }
        if (!fill_param(c, &info, pbuf)) goto out;
        TRY_RNNCC(rnncc_model_set_param(model, info.name, info.layer, info.direction, pbuf, info.rows * info.cols));
    }

    /* Device data. Every result starts as NaN so anything rnncc does not write fails. */
    int64_t units = (int64_t)c->layers * c->dirs, state_n = units * c->N * c->H, ny = c->y[REF64].n;
    if (!(g.x = upload("x", &c->x)) || !(g.y = dev_alloc("y", ny, 1)) || !(g.ty = dev_alloc("y", ny, 1))) goto out;
    for (int k = 0; k < c->spec->nstates; k++)
        if (!(g.h0[k] = upload("h0", &c->h0[k])) || !(g.hT[k] = dev_alloc("hT", state_n, 1)) ||
            !(g.thT[k] = dev_alloc("hT", state_n, 1)))
            goto out;
    if (c->backward) {
        if (!(g.dy = upload("dy", &c->dy)) || !(g.dx = dev_alloc("dx", c->x.n, 1)) || !(g.dw = dev_alloc("dweights", r->nw, 1)))
            goto out;
        for (int k = 0; k < c->spec->nstates; k++)
            if (!(g.dhT[k] = upload("dhT", &c->dhT[k])) || !(g.dh0[k] = dev_alloc("dh0", state_n, 1))) goto out;
    }
    size_t wsb = 0, wsb_train = 0, rsb = 0;
    TRY_RNNCC(rnncc_workspace_size(model, c->T, c->N, 0, &wsb));
    TRY_RNNCC(rnncc_workspace_size(model, c->T, c->N, 1, &wsb_train));
    TRY_RNNCC(rnncc_reserve_size(model, c->T, c->N, &rsb));
    if (wsb_train > wsb) wsb = wsb_train;
    if (!(g.ws = dev_alloc("the workspace", (int64_t)((wsb + 3) / 4), 0)) ||
        !(g.reserve = dev_alloc("the reserve", (int64_t)((rsb + 3) / 4), 0)))
        goto out;

    /* Inference forward, then the training forward whose reserve the backward passes read. */
    float *ys[MAX_OUTPUTS] = {g.y}, *tys[MAX_OUTPUTS] = {g.ty};
    const float *h0s[MAX_STATES] = {g.h0[0], g.h0[1]};
    float *hTs[MAX_STATES] = {g.hT[0], g.hT[1]}, *thTs[MAX_STATES] = {g.thT[0], g.thT[1]};
    rnncc_io io = {c->T, c->N, g.x, ys, c->lengths, h0s, hTs};
    rnncc_io tio = {c->T, c->N, g.x, tys, c->lengths, h0s, thTs};
    TRY_RNNCC(rnncc_forward(model, &io, g.ws, wsb, NULL, 0, NULL));
    TRY_RNNCC(rnncc_forward(model, &tio, g.ws, wsb, g.reserve, rsb, NULL));
    if (c->backward) {
        const float *dys[MAX_OUTPUTS] = {g.dy}, *dhTs[MAX_STATES] = {g.dhT[0], g.dhT[1]};
        float *dh0s[MAX_STATES] = {g.dh0[0], g.dh0[1]};
        rnncc_grad_io gio = {c->T, c->N, c->lengths, g.x, dys, dhTs, g.dx, dh0s};
        TRY_RNNCC(rnncc_backward_data(model, &gio, g.ws, wsb, g.reserve, rsb, NULL));
        TRY_RNNCC(rnncc_backward_weights(model, &gio, g.dw, RNNCC_WGRAD_SET, g.ws, wsb, g.reserve, rsb, NULL));
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "parity: error: rnncc failed on the device: %s\n", cudaGetErrorString(e));
        goto out;
    }

    if (!(r->y = download(g.y, ny)) || !(r->ty = download(g.ty, ny))) goto out;
    for (int k = 0; k < c->spec->nstates; k++)
        if (!(r->hT[k] = download(g.hT[k], state_n)) || !(r->thT[k] = download(g.thT[k], state_n))) goto out;
    if (c->backward) {
        if (!(r->dx = download(g.dx, c->x.n)) || !(r->dw = download(g.dw, r->nw))) goto out;
        for (int k = 0; k < c->spec->nstates; k++)
            if (!(r->dh0[k] = download(g.dh0[k], state_n))) goto out;
    }
    status = 0;
out:
    dev_free(&g);
    free(pbuf);
    rnncc_model_destroy(model);
    rnncc_program_destroy(prog);
    return status;
}

int main(int argc, char **argv) {
    const char *cells_dir = "cells", *case_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cells") == 0 && i + 1 < argc) cells_dir = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: parity [--cells DIR] CASE_DIR\n"
                   "Runs a case written by tests/parity/export.py (CASE_DIR/manifest) through rnncc, compiling\n"
                   "DIR/<cell>.cell (default DIR: cells): the inference and training forward, backward data and\n"
                   "backward weights. Passes when every result is within max|a-b|/max|b| <= %.0e (y, hT, cT) or\n"
                   "<= %.0e (dx, dh0, dc0, every parameter gradient) of PyTorch in float64. PyTorch's float32\n"
                   "results are compared too, for information only (bound %.0e).\n"
                   "Exit 0 all passed, 1 failure, 2 usage, 77 no CUDA device.\n", BOUND_FWD, BOUND_GRAD, BOUND_FP32);
            return 0;
        } else if (argv[i][0] != '-' && !case_dir) case_dir = argv[i];
        else { fprintf(stderr, "usage: parity [--cells DIR] CASE_DIR\n"); return EXIT_USAGE; }
    }
    if (!case_dir) { fprintf(stderr, "usage: parity [--cells DIR] CASE_DIR\n"); return EXIT_USAGE; }

    int status = EXIT_FAIL, finished = 0;
    Tally t = {0};
    Manifest mf = {0};
    Results r;
    memset(&r, 0, sizeof r);
    static Case c; /* large: static */
    memset(&c, 0, sizeof c);

    if (!manifest_read(case_dir, &mf) || !case_load(&mf, &c)) goto done;
    printf("parity %s: %s, I=%d H=%d T=%d N=%d, %d layer%s%s, lengths %s, %s\n", case_dir, c.spec->name, c.I, c.H, c.T, c.N,
           c.layers, c.layers > 1 ? "s" : "", c.dirs == 2 ? ", bidirectional" : "", manifest_get(&mf, "lengths"),
           c.backward ? "forward and backward" : "forward only");
    const char *tv = manifest_get(&mf, "torch"), *d32 = manifest_get(&mf, "torch_fp32_device"),
               *d64 = manifest_get(&mf, "torch_fp64_device");
    printf("  PyTorch %s: float32 on %s, float64 on %s\n", tv ? tv : "?", d32 ? d32 : "?", d64 ? d64 : "?");

    int rc = run_rnncc(&c, cells_dir, &r);
    if (rc == EXIT_SKIP) {
        status = EXIT_SKIP;
        goto done;
    }
    if (rc == 0 && compare_all(&c, &r, &t)) finished = 1;

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
