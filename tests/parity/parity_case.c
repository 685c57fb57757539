/* parity: a case written by tests/parity/export.py: its manifest, its tensor files, its sizes, and the one table
 * from rnncc's parameters to PyTorch's tensors (tests/parity/README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"

const char *const kind_name[KINDS] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"};

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
/* nn.LSTM with proj_size (cells/lstmp.cell): the LSTM's, U_* of P columns, and P_h = weight_hr. */
static const Map lstmp_map[] = {
    {"W_i", SRC_W_IH, 0},     {"W_f", SRC_W_IH, 1},     {"W_g", SRC_W_IH, 2},     {"W_o", SRC_W_IH, 3},
    {"U_i", SRC_W_HH, 0},     {"U_f", SRC_W_HH, 1},     {"U_g", SRC_W_HH, 2},     {"U_o", SRC_W_HH, 3},
    {"b_i", SRC_BIAS_SUM, 0}, {"b_f", SRC_BIAS_SUM, 1}, {"b_g", SRC_BIAS_SUM, 2}, {"b_o", SRC_BIAS_SUM, 3},
    {"P_h", SRC_W_HR, 0},
};
static const CellSpec cells[] = {
    {"lstm", 4, 2, 0, {{"h0", "hT", "dhT", "dh0"}, {"c0", "cT", "dcT", "dc0"}}, {SZ_OUT, SZ_H}, lstm_map,
     sizeof lstm_map / sizeof lstm_map[0]},
    {"gru", 3, 1, 0, {{"h0", "hT", "dhT", "dh0"}, {NULL, NULL, NULL, NULL}}, {SZ_OUT, SZ_OUT}, gru_map,
     sizeof gru_map / sizeof gru_map[0]},
    {"lstmp", 4, 2, 1, {{"h0", "hT", "dhT", "dh0"}, {"c0", "cT", "dcT", "dc0"}}, {SZ_OUT, SZ_H}, lstmp_map,
     sizeof lstmp_map / sizeof lstmp_map[0]},
};

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

int manifest_read(const char *dir, Manifest *m) {
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

void manifest_free(Manifest *m) {
    for (int i = 0; i < m->n; i++) { free(m->key[i]); free(m->val[i]); }
    m->n = 0;
}

const char *manifest_get(const Manifest *m, const char *key) {
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

/* The size of state k of the case's cell: H, or the emitted state's (P with proj_size). */
int state_size(const Case *c, int k) { return c->spec->state_size[k] == SZ_H ? c->H : c->O; }

void case_free(Case *c) {
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
            for (int j = 0; j < KINDS; j++) {
                free(c->w[l][d][j].v);
                for (int r = 0; r < 2; r++) free(c->gw[l][d][j][r].v);
            }
}

/* State k's tensor given to both (export.py's name state_tensor[k][given]) and PyTorch's two results of state_tensor[k]
 * [result], each [L D][N][its size]. */
static int load_state(const Manifest *m, const Case *c, int k, int given, int result, Tensor *in, Tensor out[2]) {
    const char *const *st = c->spec->state_tensor[k];
    const int64_t ss[3] = {(int64_t)c->layers * c->dirs, c->N, state_size(c, k)};
    char n64[96];
    snprintf(n64, sizeof n64, "%s64", st[result]);
    return tensor_load(m, st[given], 3, ss, 1, in) && tensor_load_pair(m, st[result], n64, 3, ss, out);
}

/* Reads the manifest's sizes and every tensor, checking each shape. */
int case_load(const Manifest *m, Case *c) {
    const char *cell = manifest_get(m, "cell");
    if (!cell) { fprintf(stderr, "parity: error: %s/manifest has no 'cell'\n", m->dir); return 0; }
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        if (strcmp(cells[i].name, cell) == 0) c->spec = &cells[i];
    if (!c->spec) { fprintf(stderr, "parity: error: %s/manifest: unknown cell '%s' (lstm, gru or lstmp)\n", m->dir, cell); return 0; }
    int bidir;
    if (!manifest_int(m, "I", 1, 1 << 20, &c->I) || !manifest_int(m, "H", 1, 1 << 20, &c->H) ||
        !manifest_int(m, "T", 0, 1 << 20, &c->T) || !manifest_int(m, "N", 1, 1 << 20, &c->N) ||
        !manifest_int(m, "layers", 1, MAX_LAYERS, &c->layers) || !manifest_int(m, "bidirectional", 0, 1, &bidir))
        return 0;
    if (c->spec->proj) { /* nn.LSTM's proj_size: 0 < P < H */
        if (!manifest_int(m, "P", 1, c->H > 1 ? c->H - 1 : 1, &c->P)) return 0;
        if (c->H < 2) { fprintf(stderr, "parity: error: %s/manifest: proj_size needs H >= 2, not %d\n", m->dir, c->H); return 0; }
    } else if (manifest_get(m, "P")) {
        fprintf(stderr, "parity: error: %s/manifest: 'P' (proj_size) is for cell lstmp, not %s\n", m->dir, cell);
        return 0;
    }
    c->O = c->P ? c->P : c->H;
    c->nkinds = c->spec->proj ? 5 : 4;
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
    int64_t T = c->T, N = c->N, I = c->I, H = c->H, O = c->O, G = c->spec->ngates;
    const int64_t xs[3] = {T, N, I}, ys[3] = {T, N, c->dirs * O};
    if (!tensor_load(m, "x", 3, xs, 1, &c->x) || !tensor_load_pair(m, "y", "y64", 3, ys, c->y)) return 0;
    for (int k = 0; k < c->spec->nstates; k++)
        if (!load_state(m, c, k, ST_INIT, ST_FINAL, &c->h0[k], c->hT[k])) return 0;
    if (c->backward) {
        if (!tensor_load(m, "dy", 3, ys, 1, &c->dy) || !tensor_load_pair(m, "dx", "dx64", 3, xs, c->dx)) return 0;
        for (int k = 0; k < c->spec->nstates; k++)
            if (!load_state(m, c, k, ST_DFINAL, ST_DINIT, &c->dhT[k], c->dh0[k])) return 0;
    }
    for (int l = 0; l < c->layers; l++)
        for (int d = 0; d < c->dirs; d++)
            for (int j = 0; j < c->nkinds; j++) {
                char name[64], gname[80], gname64[80];
                snprintf(name, sizeof name, "%s_l%d%s", kind_name[j], l, d ? "_reverse" : "");
                snprintf(gname, sizeof gname, "grad_%s", name);
                snprintf(gname64, sizeof gname64, "grad64_%s", name);
                int64_t in = l == 0 ? I : c->dirs * O;
                /* weight_ih [G H, in], weight_hh [G H, O], the biases [G H], weight_hr [P, H] */
                int64_t shape[2] = {j == KIND_W_HR ? c->P : G * H, j == KIND_W_IH ? in : j == KIND_W_HH ? O : H};
                int ndim = j == KIND_B_IH || j == KIND_B_HH ? 1 : 2;
                if (!tensor_load(m, name, ndim, shape, 1, &c->w[l][d][j])) return 0;
                if (c->backward && !tensor_load_pair(m, gname, gname64, ndim, shape, c->gw[l][d][j])) return 0;
            }
    return 1;
}

static const Map *find_map(const CellSpec *spec, const char *param) {
    for (int i = 0; i < spec->nmap; i++)
        if (strcmp(spec->map[i].param, param) == 0) return &spec->map[i];
    fprintf(stderr, "parity: error: the %s cell has a parameter '%s' with no PyTorch source\n", spec->name, param);
    return NULL;
}

/* The rows of one block of map's PyTorch tensor: a gate's H, or weight_hr's P. */
int64_t kind_rows(const Case *c, int kind) { return kind == KIND_W_HR ? c->P : c->H; }

int64_t block_rows(const Case *c, const Map *map) { return kind_rows(c, map->src == SRC_W_HR ? KIND_W_HR : KIND_W_IH); }

/* Which of PyTorch's tensors of a layer and direction a source reads (bias sums: both biases). Returns how many. */
int source_kinds(Source src, int js[2]) {
    switch (src) {
    case SRC_W_IH: js[0] = KIND_W_IH; return 1;
    case SRC_W_HH: js[0] = KIND_W_HH; return 1;
    case SRC_BIAS_SUM: js[0] = KIND_B_IH, js[1] = KIND_B_HH; return 2; /* d(b_ih + b_hh)/d b_ih = d/d b_hh: both must match */
    case SRC_BIAS_IH: js[0] = KIND_B_IH; return 1;
    case SRC_BIAS_HH: js[0] = KIND_B_HH; return 1;
    case SRC_W_HR: js[0] = KIND_W_HR; return 1;
    }
    return 0;
}

/* Checks that rnncc's parameter (its layer, direction and shape) has a PyTorch slice. */
const Map *param_source(const Case *c, const rnncc_param_info *info) {
    const Map *map = find_map(c->spec, info->name);
    if (!map) return NULL;
    if (info->layer < 0 || info->layer >= c->layers || info->direction < 0 || info->direction >= c->dirs) {
        fprintf(stderr, "parity: error: rnncc's %s has layer %d, direction %d; the case has %d layers, %d directions\n",
                info->name, info->layer, info->direction, c->layers, c->dirs);
        return NULL;
    }
    const Tensor *w = c->w[info->layer][info->direction];
    int64_t rows = block_rows(c, map);
    int64_t cols = map->src == SRC_W_IH ? w[KIND_W_IH].dim[1] : map->src == SRC_W_HH ? w[KIND_W_HH].dim[1] : map->src == SRC_W_HR ? c->H : 1;
    int gates = map->src == SRC_W_HR ? 1 : c->spec->ngates;
    if (info->rows != rows || info->cols != cols || map->gate < 0 || map->gate >= gates) {
        fprintf(stderr, "parity: error: rnncc's %s (layer %d, direction %d) is [%lld x %lld]; PyTorch's slice is [%lld x %lld]\n",
                info->name, info->layer, info->direction, (long long)info->rows, (long long)info->cols, (long long)rows,
                (long long)cols);
        return NULL;
    }
    return map;
}

/* Copies one rnncc parameter's values out of PyTorch's tensors (a bias sum added in double: the GPU's copy rounds it
 * once to float32, the reference takes it as it is). */
int fill_param(const Case *c, const rnncc_param_info *info, double *out) {
    const Map *map = param_source(c, info);
    if (!map) return 0;
    const Tensor *w = c->w[info->layer][info->direction];
    int64_t H = c->H, g = map->gate, cols = info->cols;
    for (int64_t r = 0; r < info->rows; r++)
        for (int64_t q = 0; q < cols; q++)
            switch (map->src) {
            case SRC_W_IH: out[r * cols + q] = w[KIND_W_IH].v[(g * H + r) * cols + q]; break;
            case SRC_W_HH: out[r * cols + q] = w[KIND_W_HH].v[(g * H + r) * cols + q]; break;
            case SRC_BIAS_SUM: out[r] = w[KIND_B_IH].v[g * H + r] + w[KIND_B_HH].v[g * H + r]; break;
            case SRC_BIAS_IH: out[r] = w[KIND_B_IH].v[g * H + r]; break;
            case SRC_BIAS_HH: out[r] = w[KIND_B_HH].v[g * H + r]; break;
            case SRC_W_HR: out[r * cols + q] = w[KIND_W_HR].v[r * cols + q]; break;
            }
    return 1;
}
