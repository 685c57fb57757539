/* parity: runs one case written by tests/parity/export.py through rnncc and compares y, hT
 * (and cT) with what PyTorch's nn.LSTM / nn.GRU computed, to max|a-b| / max|b| <= 1e-5.
 * Key idea: every rnncc parameter is filled from PyTorch's tensors through one mapping
 * table and a parameter without a source is an error, so nothing silently stays zero.
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
enum { MAX_KEYS = 512, MAX_DIMS = 4, MAX_STATES = 2, MAX_LAYERS = 64 };
static const double TOLERANCE = 1e-5;

/* ---- where each rnncc parameter comes from ------------------------------------------- */

/* PyTorch stacks the gates' rows: weight_ih_l{k} is [gate 0; gate 1; ...], H rows each. */
typedef enum Source {
    SRC_W_IH,     /* rows of weight_ih_l{k}{_reverse} */
    SRC_W_HH,     /* rows of weight_hh_l{k}{_reverse} */
    SRC_BIAS_SUM, /* bias_ih + bias_hh of the gate */
    SRC_BIAS_IH,  /* bias_ih of the gate alone */
    SRC_BIAS_HH,  /* bias_hh of the gate alone */
} Source;

typedef struct Map {
    const char *param; /* the name in the .cell file */
    Source src;
    int gate;          /* which H-row block */
} Map;

typedef struct CellSpec {
    const char *name;
    int ngates, nstates; /* states in declaration order: h, then c for the LSTM */
    const char *state_tensor[MAX_STATES][2]; /* export.py's names of h0/hT, c0/cT */
    const Map *map;
    int nmap;
} CellSpec;

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
    {"lstm", 4, 2, {{"h0", "hT"}, {"c0", "cT"}}, lstm_map, sizeof lstm_map / sizeof lstm_map[0]},
    {"gru", 3, 1, {{"h0", "hT"}, {NULL, NULL}}, gru_map, sizeof gru_map / sizeof gru_map[0]},
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

/* ---- tensors: raw little-endian float32 files ------------------------------------------ */

typedef struct Tensor {
    float *v;
    int64_t n;
    int ndim;
    int64_t dim[MAX_DIMS];
} Tensor;

/* Loads tensor `name` and checks that its shape is exactly the ndim dims in want. */
static int tensor_load(const Manifest *m, const char *name, int ndim, const int64_t *want, Tensor *t) {
    char key[256], file[1024], path[4096];
    memset(t, 0, sizeof *t);
    snprintf(key, sizeof key, "tensor.%s", name);
    const char *v = manifest_get(m, key);
    if (!v) { fprintf(stderr, "parity: error: %s/manifest has no '%s'\n", m->dir, key); return 0; }
    /* "<file> <dim> <dim> ..." */
    int used = 0;
    if (sscanf(v, "%1023s%n", file, &used) != 1 || strstr(file, "..") || strchr(file, '/')) {
        fprintf(stderr, "parity: error: %s/manifest: bad file name in '%s = %s'\n", m->dir, key, v);
        return 0;
    }
    const char *p = v + used;
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
    t->v = malloc((size_t)t->n * sizeof(float) + sizeof(float));
    int ok = t->v != NULL;
    for (int64_t i = 0; ok && i < t->n; i++) {
        unsigned char b[4];
        if (fread(b, 1, 4, f) != 4) { ok = 0; break; }
        uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        memcpy(&t->v[i], &u, sizeof u);
    }
    if (ok && fgetc(f) != EOF) ok = 0;
    fclose(f);
    if (!ok) {
        fprintf(stderr, "parity: error: %s must hold exactly %lld float32 values (%lld bytes)\n", path, (long long)t->n,
                (long long)t->n * 4);
        free(t->v);
        t->v = NULL;
        return 0;
    }
    return 1;
}

/* ---- the test ----------------------------------------------------------------------- */

typedef struct Case {
    const CellSpec *spec;
    int I, H, T, N, layers, dirs;
    int *lengths;                  /* NULL: every sequence has T steps */
    Tensor x, y, h0[MAX_STATES], hT[MAX_STATES];
    Tensor w[MAX_LAYERS][2][4];    /* weight_ih, weight_hh, bias_ih, bias_hh per layer, direction */
} Case;

static void case_free(Case *c) {
    free(c->lengths);
    free(c->x.v);
    free(c->y.v);
    for (int k = 0; k < MAX_STATES; k++) { free(c->h0[k].v); free(c->hT[k].v); }
    for (int l = 0; l < MAX_LAYERS; l++)
        for (int d = 0; d < 2; d++)
            for (int j = 0; j < 4; j++) free(c->w[l][d][j].v);
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
    if (!tensor_load(m, "x", 3, (int64_t[]){T, N, I}, &c->x)) return 0;
    if (!tensor_load(m, "y", 3, (int64_t[]){T, N, c->dirs * H}, &c->y)) return 0;
    for (int k = 0; k < c->spec->nstates; k++)
        if (!tensor_load(m, c->spec->state_tensor[k][0], 3, (int64_t[]){units, N, H}, &c->h0[k]) ||
            !tensor_load(m, c->spec->state_tensor[k][1], 3, (int64_t[]){units, N, H}, &c->hT[k]))
            return 0;
    static const char *const kind[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int l = 0; l < c->layers; l++)
        for (int d = 0; d < c->dirs; d++)
            for (int j = 0; j < 4; j++) {
                char name[64];
                snprintf(name, sizeof name, "%s_l%d%s", kind[j], l, d ? "_reverse" : "");
                int64_t in = l == 0 ? I : c->dirs * H;
                int64_t shape[2] = {G * H, j == 0 ? in : H};
                if (!tensor_load(m, name, j < 2 ? 2 : 1, shape, &c->w[l][d][j])) return 0;
            }
    return 1;
}

/* Copies one rnncc parameter's values out of PyTorch's tensors. */
static int fill_param(const Case *c, const rnncc_param_info *info, float *out) {
    const Map *map = NULL;
    for (int i = 0; i < c->spec->nmap; i++)
        if (strcmp(c->spec->map[i].param, info->name) == 0) map = &c->spec->map[i];
    if (!map) {
        fprintf(stderr, "parity: error: the %s cell has a parameter '%s' with no PyTorch source\n", c->spec->name, info->name);
        return 0;
    }
    const Tensor *w = c->w[info->layer][info->direction];
    int64_t H = c->H, g = map->gate;
    int64_t cols = map->src == SRC_W_IH ? w[0].dim[1] : map->src == SRC_W_HH ? w[1].dim[1] : 1;
    if (info->rows != H || info->cols != cols) {
        fprintf(stderr, "parity: error: rnncc's %s (layer %d, direction %d) is [%lld x %lld]; PyTorch's slice is [%lld x %lld]\n",
                info->name, info->layer, info->direction, (long long)info->rows, (long long)info->cols, (long long)H,
                (long long)cols);
        return 0;
    }
    for (int64_t r = 0; r < H; r++)
        switch (map->src) {
        case SRC_W_IH: memcpy(out + r * cols, w[0].v + (g * H + r) * cols, (size_t)cols * sizeof(float)); break;
        case SRC_W_HH: memcpy(out + r * cols, w[1].v + (g * H + r) * cols, (size_t)cols * sizeof(float)); break;
        case SRC_BIAS_SUM: out[r] = w[2].v[g * H + r] + w[3].v[g * H + r]; break;
        case SRC_BIAS_IH: out[r] = w[2].v[g * H + r]; break;
        case SRC_BIAS_HH: out[r] = w[3].v[g * H + r]; break;
        }
    return 1;
}

/* Prints one comparison line; returns 1 when max|got - want| / max|want| <= TOLERANCE. */
static int compare(const char *name, const float *got, const Tensor *want) {
    double num = 0, den = 0;
    int nan = 0;
    for (int64_t i = 0; i < want->n; i++) {
        double e = fabs((double)got[i] - (double)want->v[i]);
        if (isnan(e)) nan = 1;
        if (e > num) num = e;
        if (fabs((double)want->v[i]) > den) den = fabs((double)want->v[i]);
    }
    double rel = nan ? NAN : den > 0 ? num / den : num;
    int ok = rel <= TOLERANCE;
    printf("  %-3s %s: max|rnncc - torch| %.3g, max|torch| %.3g, relative %.3g%s\n", name, ok ? "ok  " : "FAIL", num, den,
           rel, nan ? " (NaN: an element was not written or overflowed)" : "");
    return ok;
}

static void *dev_alloc(const char *what, int64_t floats, int fill_nan) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)(floats ? floats : 1) * sizeof(float));
    if (e == cudaSuccess && fill_nan) e = cudaMemset(p, 0xff, (size_t)floats * sizeof(float)); /* all-ones bytes: NaN */
    if (e != cudaSuccess) {
        fprintf(stderr, "parity: error: allocating %s on the device: %s\n", what, cudaGetErrorString(e));
        if (p) cudaFree(p);
        return NULL;
    }
    return p;
}

static int upload(void *dst, const Tensor *t) {
    cudaError_t e = cudaMemcpy(dst, t->v, (size_t)t->n * sizeof(float), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) fprintf(stderr, "parity: error: cudaMemcpy to the device: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess;
}

static float *download(const void *src, int64_t n) {
    float *h = malloc((size_t)n * sizeof(float) + sizeof(float));
    cudaError_t e = h ? cudaMemcpy(h, src, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost) : cudaSuccess;
    if (!h || e != cudaSuccess) {
        fprintf(stderr, "parity: error: cudaMemcpy from the device: %s\n", h ? cudaGetErrorString(e) : "out of memory");
        free(h);
        return NULL;
    }
    return h;
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

int main(int argc, char **argv) {
    const char *cells_dir = "cells", *case_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cells") == 0 && i + 1 < argc) cells_dir = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: parity [--cells DIR] CASE_DIR\n"
                   "Runs a case written by tests/parity/export.py (CASE_DIR/manifest) through rnncc, compiling\n"
                   "DIR/<cell>.cell (default DIR: cells), and compares y, hT (and cT) with PyTorch's to\n"
                   "max|a-b|/max|b| <= 1e-5. Exit 0 all passed, 1 failure, 2 usage, 77 no CUDA device.\n");
            return 0;
        } else if (argv[i][0] != '-' && !case_dir) case_dir = argv[i];
        else { fprintf(stderr, "usage: parity [--cells DIR] CASE_DIR\n"); return EXIT_USAGE; }
    }
    if (!case_dir) { fprintf(stderr, "usage: parity [--cells DIR] CASE_DIR\n"); return EXIT_USAGE; }

    int status = EXIT_FAIL, passed = 0, failed = 0, finished = 0;
    Manifest mf = {0};
    Case c;
    memset(&c, 0, sizeof c);
    rnncc_program *prog = NULL;
    rnncc_model *model = NULL;
    float *dx = NULL, *dy = NULL, *dh0[MAX_STATES] = {0}, *dhT[MAX_STATES] = {0}, *pbuf = NULL;
    void *ws = NULL;

    if (!manifest_read(case_dir, &mf) || !case_load(&mf, &c)) goto done;
    printf("parity %s: %s, I=%d H=%d T=%d N=%d, %d layer%s%s, lengths %s\n", case_dir, c.spec->name, c.I, c.H, c.T, c.N,
           c.layers, c.layers > 1 ? "s" : "", c.dirs == 2 ? ", bidirectional" : "", manifest_get(&mf, "lengths"));

    /* Compile the cell: rnncc's own file, not a copy, so the test covers what users run. */
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.cell", cells_dir, c.spec->name);
    rnncc_status s = rnncc_compile_file(path, NULL, &prog);
    if (s != RNNCC_OK) {
        fprintf(stderr, "%sparity: error: compiling %s: %s\n", prog ? rnncc_program_log(prog) : "", path,
                s == RNNCC_ERR_NOT_FOUND ? "cannot open the file (run from the repository root or pass --cells)"
                                         : rnncc_status_string(s));
        goto done;
    }

    char dim_i[32], dim_h[32];
    snprintf(dim_i, sizeof dim_i, "I=%d", c.I);
    snprintf(dim_h, sizeof dim_h, "H=%d", c.H);
    const char *dims[] = {dim_i, dim_h};
    rnncc_model_desc desc = {NULL, dims, 2, c.layers, c.dirs == 2, RNNCC_FP32, -1};
    s = rnncc_model_create(prog, &desc, &model);
    if (s == RNNCC_ERR_NO_GPU) {
        printf("parity: %s; skipped (the manifest, every tensor and %s were read and checked)\n", rnncc_model_error(model), path);
        status = EXIT_SKIP;
        goto done;
    }
    if (s != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_model_create: %s: %s\n", rnncc_status_string(s), rnncc_model_error(model));
        goto done;
    }
    int device = 0;
    cudaGetDevice(&device);
    print_versions(device);

    /* The model's own shape report must match PyTorch's. */
    rnncc_model_sizes sz;
    if ((s = rnncc_model_get_sizes(model, &sz)) != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_model_get_sizes: %s\n", rnncc_model_error(model));
        goto done;
    }
    int shapes_ok = sz.input == c.I && sz.output == (int64_t)c.dirs * c.H && sz.noutputs >= 1 &&
                    sz.nstates == c.spec->nstates;
    for (int k = 0; shapes_ok && k < sz.nstates; k++) shapes_ok = sz.state_size[k] == c.H;
    if (!shapes_ok) {
        fprintf(stderr, "parity: error: rnncc's model has input %lld, output %lld, %d states; expected %d, %d, %d of size %d\n",
                (long long)sz.input, (long long)sz.output, sz.nstates, c.I, c.dirs * c.H, c.spec->nstates, c.H);
        goto done;
    }

    /* Every parameter of every layer and direction, by name, from PyTorch's tensors. */
    int nparams = rnncc_model_param_count(model);
    if (nparams != c.layers * c.dirs * c.spec->nmap) {
        fprintf(stderr, "parity: error: rnncc's model has %d parameter tensors; expected %d\n", nparams,
                c.layers * c.dirs * c.spec->nmap);
        goto done;
    }
    for (int p = 0; p < nparams; p++) {
        rnncc_param_info info;
        if ((s = rnncc_model_param_info(model, p, &info)) != RNNCC_OK) {
            fprintf(stderr, "parity: error: rnncc_model_param_info(%d): %s\n", p, rnncc_model_error(model));
            goto done;
        }
        free(pbuf);
        if (!(pbuf = malloc((size_t)(info.rows * info.cols) * sizeof(float) + sizeof(float)))) {
            fprintf(stderr, "parity: error: out of memory\n");
            goto done;
        }
        if (!fill_param(&c, &info, pbuf)) goto done;
        s = rnncc_model_set_param(model, info.name, info.layer, info.direction, pbuf, info.rows * info.cols);
        if (s != RNNCC_OK) {
            fprintf(stderr, "parity: error: rnncc_model_set_param(%s, layer %d, direction %d): %s\n", info.name, info.layer,
                    info.direction, rnncc_model_error(model));
            goto done;
        }
    }

    /* Device data. Results start as NaN so anything rnncc does not write fails the comparison. */
    int64_t units = (int64_t)c.layers * c.dirs, state_n = units * c.N * c.H;
    if (!(dx = dev_alloc("x", c.x.n, 0)) || !upload(dx, &c.x) || !(dy = dev_alloc("y", c.y.n, 1))) goto done;
    for (int k = 0; k < c.spec->nstates; k++)
        if (!(dh0[k] = dev_alloc("h0", state_n, 0)) || !upload(dh0[k], &c.h0[k]) || !(dhT[k] = dev_alloc("hT", state_n, 1)))
            goto done;
    size_t wsb = 0;
    if ((s = rnncc_workspace_size(model, c.T, c.N, 0, &wsb)) != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_workspace_size: %s\n", rnncc_model_error(model));
        goto done;
    }
    if (wsb && !(ws = dev_alloc("the workspace", (int64_t)((wsb + 3) / 4), 0))) goto done;
    float *ys[8] = {dy};
    const float *h0s[MAX_STATES] = {dh0[0], dh0[1]};
    float *hTs[MAX_STATES] = {dhT[0], dhT[1]};
    rnncc_io io = {c.T, c.N, dx, ys, c.lengths, h0s, hTs};
    if ((s = rnncc_forward(model, &io, ws, wsb, NULL, 0, NULL)) != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_forward: %s: %s\n", rnncc_status_string(s), rnncc_model_error(model));
        goto done;
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "parity: error: the forward pass failed on the device: %s\n", cudaGetErrorString(e));
        goto done;
    }

    /* Compare. */
    float *got = download(dy, c.y.n);
    if (!got) goto done;
    if (compare("y", got, &c.y)) passed++;
    else failed++;
    free(got);
    for (int k = 0; k < c.spec->nstates; k++) {
        if (!(got = download(dhT[k], state_n))) goto done;
        if (compare(c.spec->state_tensor[k][1], got, &c.hT[k])) passed++;
        else failed++;
        free(got);
    }
    finished = 1;

done:
    if (status != EXIT_SKIP) {
        if (!finished) failed++;  /* the case itself could not run (the error is above) */
        printf("%d passed, %d failed%s\n", passed, failed, finished ? "" : " (the case did not run to the end)");
        status = failed ? EXIT_FAIL : 0;
    }
    if (dx) cudaFree(dx);
    if (dy) cudaFree(dy);
    for (int k = 0; k < MAX_STATES; k++) {
        if (dh0[k]) cudaFree(dh0[k]);
        if (dhT[k]) cudaFree(dhT[k]);
    }
    if (ws) cudaFree(ws);
    free(pbuf);
    rnncc_model_destroy(model);
    rnncc_program_destroy(prog);
    case_free(&c);
    manifest_free(&mf);
    return status;
}
