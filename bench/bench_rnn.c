/* bench_rnn: rnncc against every cuDNN RNN algorithm (the v8 C API) on LSTM and GRU, on the
 * same weights, inputs and device buffers; outputs (and gradients, where rnncc has a backward
 * pass) must agree before anything is timed. Key idea: one host copy of every parameter,
 * written into each library's layout (cuDNN's weight space through cudnnGetRNNWeightParams,
 * rnncc's through rnncc_model_set_param by name), so a layout slip shows up as a mismatch.
 *
 *   make bench && ./build/bench/bench_rnn --config fastrnns --cell lstm --precision fp32,tf32
 *
 * Exit status: 0 all rows agree, 1 a failure or a mismatch (printed), 2 usage, 77 no GPU. */
#include <cudnn.h>
#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* ---- what is measured ---------------------------------------------------------------------- */

enum { NALGO = 4 };
static const cudnnRNNAlgo_t algo_ids[NALGO] = {CUDNN_RNN_ALGO_STANDARD, CUDNN_RNN_ALGO_PERSIST_STATIC,
                                               CUDNN_RNN_ALGO_PERSIST_DYNAMIC, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H};
static const char *const algo_short[NALGO] = {"STD", "PS", "PD", "PSH"};
static const char *const algo_long[NALGO] = {"STANDARD", "PERSIST_STATIC", "PERSIST_DYNAMIC", "PERSIST_STATIC_SMALL_H"};

/* Where each rnncc parameter lives in cuDNN's weight space: linear layer lin (cuDNN's
 * linLayerID), its matrix (bias = 0) or its bias (bias = 1). cuDNN biases not listed are zero
 * (rnncc's LSTM biases are bias_ih + bias_hh, so cuDNN's recurrent biases stay 0; GRU: b_r, b_z
 * are folded the same way, b_in and b_hn are n's input and recurrent biases). */
typedef struct ParamMap {
    const char *name;
    int lin, bias;
} ParamMap;
static const ParamMap lstm_map[] = {
    {"W_i", 0, 0}, {"W_f", 1, 0}, {"W_g", 2, 0}, {"W_o", 3, 0}, {"U_i", 4, 0}, {"U_f", 5, 0},
    {"U_g", 6, 0}, {"U_o", 7, 0}, {"b_i", 0, 1}, {"b_f", 1, 1}, {"b_g", 2, 1}, {"b_o", 3, 1},
};
static const ParamMap gru_map[] = {
    {"W_r", 0, 0}, {"W_z", 1, 0}, {"W_n", 2, 0}, {"U_r", 3, 0}, {"U_z", 4, 0},
    {"U_n", 5, 0}, {"b_r", 0, 1}, {"b_z", 1, 1}, {"b_in", 2, 1}, {"b_hn", 5, 1},
};

typedef struct CellDef {
    const char *name;         /* also cells/NAME.cell */
    cudnnRNNMode_t mode;
    int gates, nstates;
    const ParamMap *map;
    int nmap;
} CellDef;
static const CellDef cell_defs[] = {
    {"lstm", CUDNN_LSTM, 4, 2, lstm_map, (int)(sizeof lstm_map / sizeof lstm_map[0])},
    {"gru", CUDNN_GRU, 3, 1, gru_map, (int)(sizeof gru_map / sizeof gru_map[0])},
};
enum { NCELLS = (int)(sizeof cell_defs / sizeof cell_defs[0]) };

/* Agreement bounds, max|a - b| / max|b| per tensor. Outputs: as the issue sets them for fp32 and
 * tf32 (tf32x3: five times fp32's, its products err ten times as much); fp16/bf16 are checked against
 * cuDNN's strict-fp32 STANDARD run on the same rounded values. Gradients (BPTT sums over T*N terms) get
 * looser bounds. */
static const double out_tol[NPREC] = {1e-4, 1e-2, 3e-2, 1e-1, 5e-4};
static const double grad_tol[NPREC] = {1e-3, 3e-2, 1e-1, 2e-1, 5e-3};

/* ---- options ------------------------------------------------------------------------------------ */

typedef struct Options {
    const Config *configs[MAX_CONFIGS];
    int nconfigs;
    int steps;                      /* --steps: every configuration's T (0: its own) */
    Config stepped[MAX_CONFIGS];    /* the configurations with that T, named NAME@T (configs points here) */
    char stepped_names[MAX_CONFIGS][48];
    const CellDef *cells[NCELLS];
    int ncells;
    Prec precs[NPREC];
    int nprecs;
    int use_algo[NALGO];
    int do_infer, do_train;
    int repeat, warmup, quick, jit;
    double budget_s;
    const char *markdown, *summary, *cells_dir;
    cudnnRNNDataLayout_t layout;
    cudnnMathType_t tf32_math;
    cudnnDataType_t half_math_prec;
    uint64_t seed;
    double input_scale; /* x is uniform in [-input_scale, input_scale] (1: the default) */
} Options;

/* ---- results -------------------------------------------------------------------------------------- */

typedef enum St { ST_NONE, ST_OK, ST_NA, ST_BAD, ST_FAIL, ST_SKIP, ST_MISMATCH } St;
typedef struct Res {
    St st;
    Timing t;
    int conv; /* the run was under TENSOR_OP_MATH_ALLOW_CONVERSION: cuDNN may compute in fp16 from fp32 data */
} Res;
typedef struct Row {
    const Config *cfg;
    const CellDef *cell;
    Prec prec;
    int training, case_id;
    Res algo[NALGO], rnncc; /* algo: per algorithm, the faster passing run of its math modes (tf32: two) */
    Res given16;            /* fp16 and bf16 training: rnncc given 16-bit weights, as cuDNN is (rnncc_model_weights16) */
    Res plain[NALGO];       /* per algorithm, the run under the first math mode alone (the only one but for tf32, fp16) */
    double err;      /* rnncc vs the reference; NAN: none */
    double algo_err; /* the worst cuDNN algorithm that agreed with the reference; NAN: none */
    double tol;
    char ref[24];    /* which run is the reference */
    double gflop;    /* per call */
} Row;

typedef struct Bench {
    Options o;
    cudnnHandle_t h;
    cudaStream_t stream;
    cudnnDropoutDescriptor_t drop;
    void *drop_states;
    int *seqlen_dev, *seqlen_host;
    int seqlen_cap;
    Row *rows;
    int nrows, caprows, ncases;
    int failures;
    double t0;
    FILE *md, *summary;
    char jit_lines[4][384];
    int njit;
} Bench;

/* ---- checked cuDNN calls -------------------------------------------------------------------------- */

static void cudnn_message(cudnnStatus_t s, char *buf, size_t size) {
    char last[512] = "";
    cudnnGetLastErrorString(last, sizeof last);
    snprintf(buf, size, "%s%s%s", cudnnGetErrorString(s), last[0] ? ": " : "", last);
}

static int cudnn_ok(cudnnStatus_t s, const char *call, const char *file, int line) {
    if (s == CUDNN_STATUS_SUCCESS) return 1;
    char msg[640];
    cudnn_message(s, msg, sizeof msg);
    fprintf(stderr, "bench_rnn: %s:%d: error: %s failed: %s\n", file, line, call, msg);
    return 0;
}
#define CK_CUDNN(call) cudnn_ok((call), #call, __FILE__, __LINE__)

/* A set-up call that cuDNN may legitimately refuse for a configuration (a NOT_SUPPORTED or
 * BAD_PARAM status): 0 with the reason in why; any other failure is printed and gives -1. */
static int cudnn_try(cudnnStatus_t s, const char *call, char *why, size_t size, const char *file, int line) {
    if (s == CUDNN_STATUS_SUCCESS) return 1;
    int cat = (int)s / 1000 * 1000;
    if (cat == CUDNN_STATUS_NOT_SUPPORTED || cat == CUDNN_STATUS_BAD_PARAM) {
        char msg[400];
        cudnn_message(s, msg, sizeof msg);
        const char *paren = strchr(call, '(');
        snprintf(why, size, "%.*s: %s", paren ? (int)(paren - call) : (int)strlen(call), call, msg);
        return 0;
    }
    return cudnn_ok(s, call, file, line) ? 1 : -1;
}

/* ---- host data: one copy of everything, in float --------------------------------------------------- */

typedef struct Host {
    const Config *cfg;
    const CellDef *cell;
    int dirs, units, nlin;
    int64_t nx, ny, nh;            /* elements of x, y, one state tensor [units][N][H] */
    float *x, *hx, *cx, *dy, *dhy, *dcy;
    float **mat, **bias;           /* [unit * nlin + lin] */
    int64_t *canon_off, canon_n;   /* the dweights comparison layout: per unit, per map entry */
} Host;

static int64_t lin_rows(const Host *h) { return h->cfg->H; }
static int64_t lin_cols(const Host *h, int unit, int lin) {
    int layer = unit / h->dirs;
    if (lin >= h->cell->gates) return h->cfg->H;
    return layer == 0 ? h->cfg->I : (int64_t)h->cfg->H * h->dirs;
}
static int64_t entry_size(const Host *h, int unit, const ParamMap *e) {
    return e->bias ? lin_rows(h) : lin_rows(h) * lin_cols(h, unit, e->lin);
}

static void host_free(Host *h) {
    free(h->x); free(h->hx); free(h->cx); free(h->dy); free(h->dhy); free(h->dcy);
    for (int i = 0; h->mat && i < h->units * h->nlin; i++) { free(h->mat[i]); free(h->bias[i]); }
    free(h->mat); free(h->bias); free(h->canon_off);
    memset(h, 0, sizeof *h);
}

static float *host_random(int64_t n, float k, uint64_t *seed) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (v) bench_fill(v, n, k, seed);
    return v;
}

static int host_init(Host *h, const Config *cfg, const CellDef *cell, uint64_t seed, double input_scale) {
    memset(h, 0, sizeof *h);
    h->cfg = cfg;
    h->cell = cell;
    h->dirs = cfg->bidir ? 2 : 1;
    h->units = cfg->layers * h->dirs;
    h->nlin = 2 * cell->gates;
    h->nx = (int64_t)cfg->T * cfg->N * cfg->I;
    h->ny = (int64_t)cfg->T * cfg->N * cfg->H * h->dirs;
    h->nh = (int64_t)h->units * cfg->N * cfg->H;
    float k = 1.0f / sqrtf((float)cfg->H);
    int ok = (h->x = host_random(h->nx, (float)input_scale, &seed)) && (h->hx = host_random(h->nh, 1, &seed)) &&
             (h->dy = host_random(h->ny, 1, &seed)) && (h->dhy = host_random(h->nh, 1, &seed));
    if (ok && cell->nstates == 2) ok = (h->cx = host_random(h->nh, 1, &seed)) && (h->dcy = host_random(h->nh, 1, &seed));
    ok = ok && (h->mat = calloc((size_t)(h->units * h->nlin), sizeof *h->mat)) &&
         (h->bias = calloc((size_t)(h->units * h->nlin), sizeof *h->bias)) &&
         (h->canon_off = calloc((size_t)(h->units * cell->nmap), sizeof *h->canon_off));
    for (int u = 0; ok && u < h->units; u++)
        for (int l = 0; ok && l < h->nlin; l++) {
            int i = u * h->nlin + l, mapped_bias = 0;
            for (int e = 0; e < cell->nmap; e++) mapped_bias |= cell->map[e].bias && cell->map[e].lin == l;
            ok = (h->mat[i] = host_random(lin_rows(h) * lin_cols(h, u, l), k, &seed)) &&
                 (h->bias[i] = host_random(lin_rows(h), mapped_bias ? k : 0, &seed)); /* unmapped biases: 0 */
        }
    for (int u = 0; ok && u < h->units; u++)
        for (int e = 0; e < cell->nmap; e++) {
            h->canon_off[u * cell->nmap + e] = h->canon_n;
            h->canon_n += entry_size(h, u, &cell->map[e]);
        }
    if (!ok) {
        fprintf(stderr, "bench_rnn: error: out of host memory\n");
        host_free(h);
        return -1;
    }
    return 0;
}

/* ---- storage types: float, half, bfloat16 ---------------------------------------------------------- */

static uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0)); /* inf, NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                                   /* rounds to inf */
    if (a < 0x38800000u) {                                 /* below 2^-14: a half subnormal (or 0) */
        float v;
        memcpy(&v, &a, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(v * 16777216.0f)); /* exact scaling, round to even */
    }
    uint32_t h = ((a >> 23) - 112) << 10 | (a >> 13 & 0x3ffu), rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++; /* a carry into the exponent is right */
    return (uint16_t)(sign | h);
}

static float half_to_float(uint16_t v) {
    int e = v >> 10 & 0x1f, m = v & 0x3ff;
    float f = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
    return v & 0x8000 ? -f : f;
}

static uint16_t float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(x >> 16 | 0x40u);
    return (uint16_t)((x + 0x7fffu + (x >> 16 & 1)) >> 16);
}

static float bf16_to_float(uint16_t v) {
    uint32_t x = (uint32_t)v << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static size_t type_size(cudnnDataType_t t) { return t == CUDNN_DATA_FLOAT ? 4 : 2; }

static void round_through(float *v, int64_t n, cudnnDataType_t t) {
    for (int64_t i = 0; v && i < n; i++)
        v[i] = t == CUDNN_DATA_HALF ? half_to_float(float_to_half(v[i]))
             : t == CUDNN_DATA_BFLOAT16 ? bf16_to_float(float_to_bf16(v[i])) : v[i];
}

/* Copies n floats to device memory of type t. */
static int upload(void *dev, const float *src, int64_t n, cudnnDataType_t t) {
    if (t == CUDNN_DATA_FLOAT) return CK_CUDA(cudaMemcpy(dev, src, (size_t)n * 4, cudaMemcpyHostToDevice));
    uint16_t *tmp = malloc((size_t)(n > 0 ? n : 1) * 2);
    if (!tmp) { fprintf(stderr, "bench_rnn: error: out of host memory\n"); return 0; }
    for (int64_t i = 0; i < n; i++) tmp[i] = t == CUDNN_DATA_HALF ? float_to_half(src[i]) : float_to_bf16(src[i]);
    int ok = CK_CUDA(cudaMemcpy(dev, tmp, (size_t)n * 2, cudaMemcpyHostToDevice));
    free(tmp);
    return ok;
}

/* Copies n values of type t from device memory into floats. */
static int download(float *dst, const void *dev, int64_t n, cudnnDataType_t t) {
    if (t == CUDNN_DATA_FLOAT) return CK_CUDA(cudaMemcpy(dst, dev, (size_t)n * 4, cudaMemcpyDeviceToHost));
    uint16_t *tmp = malloc((size_t)(n > 0 ? n : 1) * 2);
    if (!tmp) { fprintf(stderr, "bench_rnn: error: out of host memory\n"); return 0; }
    int ok = CK_CUDA(cudaMemcpy(tmp, dev, (size_t)n * 2, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; ok && i < n; i++) dst[i] = t == CUDNN_DATA_HALF ? half_to_float(tmp[i]) : bf16_to_float(tmp[i]);
    free(tmp);
    return ok;
}

/* ---- device buffers shared by both libraries ---------------------------------------------------- */

typedef struct Dev {
    cudnnDataType_t t;
    void *x, *y, *hx, *cx, *hy, *cy, *dy, *dhy, *dcy, *dx, *dhx, *dcx;
} Dev;

static void dev_free(Dev *d) {
    void *p[] = {d->x, d->y, d->hx, d->cx, d->hy, d->cy, d->dy, d->dhy, d->dcy, d->dx, d->dhx, d->dcx};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) cudaFree(p[i]);
    memset(d, 0, sizeof *d);
}

static int dev_init(Dev *d, const Host *h, cudnnDataType_t t) {
    memset(d, 0, sizeof *d);
    d->t = t;
    size_t e = type_size(t);
    int lstm = h->cell->nstates == 2;
    int ok = CK_CUDA(cudaMalloc(&d->x, (size_t)h->nx * e)) && CK_CUDA(cudaMalloc(&d->dx, (size_t)h->nx * e)) &&
             CK_CUDA(cudaMalloc(&d->y, (size_t)h->ny * e)) && CK_CUDA(cudaMalloc(&d->dy, (size_t)h->ny * e)) &&
             CK_CUDA(cudaMalloc(&d->hx, (size_t)h->nh * e)) && CK_CUDA(cudaMalloc(&d->hy, (size_t)h->nh * e)) &&
             CK_CUDA(cudaMalloc(&d->dhy, (size_t)h->nh * e)) && CK_CUDA(cudaMalloc(&d->dhx, (size_t)h->nh * e));
    if (ok && lstm)
        ok = CK_CUDA(cudaMalloc(&d->cx, (size_t)h->nh * e)) && CK_CUDA(cudaMalloc(&d->cy, (size_t)h->nh * e)) &&
             CK_CUDA(cudaMalloc(&d->dcy, (size_t)h->nh * e)) && CK_CUDA(cudaMalloc(&d->dcx, (size_t)h->nh * e));
    ok = ok && upload(d->x, h->x, h->nx, t) && upload(d->hx, h->hx, h->nh, t) && upload(d->dy, h->dy, h->ny, t) &&
         upload(d->dhy, h->dhy, h->nh, t);
    if (ok && lstm) ok = upload(d->cx, h->cx, h->nh, t) && upload(d->dcy, h->dcy, h->nh, t);
    if (!ok) dev_free(d);
    return ok ? 0 : -1;
}

/* NaN in every element (0xff bytes are NaN in float, half and bfloat16): what a run does not
 * write stays NaN and fails the comparison. */
static int poison_outputs(const Dev *d, const Host *h) {
    size_t e = type_size(d->t);
    return CK_CUDA(cudaMemset(d->y, 0xff, (size_t)h->ny * e)) && CK_CUDA(cudaMemset(d->hy, 0xff, (size_t)h->nh * e)) &&
           (!d->cy || CK_CUDA(cudaMemset(d->cy, 0xff, (size_t)h->nh * e)));
}
static int poison_grads(const Dev *d, const Host *h) {
    size_t e = type_size(d->t);
    return CK_CUDA(cudaMemset(d->dx, 0xff, (size_t)h->nx * e)) && CK_CUDA(cudaMemset(d->dhx, 0xff, (size_t)h->nh * e)) &&
           (!d->dcx || CK_CUDA(cudaMemset(d->dcx, 0xff, (size_t)h->nh * e)));
}

/* Host copies of one run's results. */
typedef struct Out {
    float *y, *hy, *cy;          /* forward */
    float *dx, *dhx, *dcx, *dw;  /* backward; dw in the canonical layout */
} Out;

static void out_free(Out *o) {
    free(o->y); free(o->hy); free(o->cy); free(o->dx); free(o->dhx); free(o->dcx); free(o->dw);
    memset(o, 0, sizeof *o);
}

static int out_alloc(Out *o, const Host *h) {
    memset(o, 0, sizeof *o);
    size_t f = sizeof(float);
    o->y = malloc((size_t)h->ny * f); o->hy = malloc((size_t)h->nh * f); o->cy = malloc((size_t)h->nh * f);
    o->dx = malloc((size_t)h->nx * f); o->dhx = malloc((size_t)h->nh * f); o->dcx = malloc((size_t)h->nh * f);
    o->dw = malloc((size_t)h->canon_n * f);
    if (!o->y || !o->hy || !o->cy || !o->dx || !o->dhx || !o->dcx || !o->dw) {
        fprintf(stderr, "bench_rnn: error: out of host memory\n");
        out_free(o);
        return -1;
    }
    return 0;
}

static int download_outputs(Out *o, const Dev *d, const Host *h) {
    return download(o->y, d->y, h->ny, d->t) && download(o->hy, d->hy, h->nh, d->t) &&
           (!d->cy || download(o->cy, d->cy, h->nh, d->t));
}
static int download_grads(Out *o, const Dev *d, const Host *h) {
    return download(o->dx, d->dx, h->nx, d->t) && download(o->dhx, d->dhx, h->nh, d->t) &&
           (!d->dcx || download(o->dcx, d->dcx, h->nh, d->t));
}

/* Worst per-tensor error of a against the reference r; names the worst tensor. */
static double cmp_outputs(const Out *a, const Out *r, const Host *h, const char **what) {
    double e = bench_rel_err(a->y, r->y, h->ny), w;
    *what = "y";
    if (!((w = bench_rel_err(a->hy, r->hy, h->nh)) <= e)) { e = w; *what = "hy"; }
    if (h->cell->nstates == 2 && !((w = bench_rel_err(a->cy, r->cy, h->nh)) <= e)) { e = w; *what = "cy"; }
    return e;
}
static double cmp_grads(const Out *a, const Out *r, const Host *h, const char **what) {
    double e = bench_rel_err(a->dx, r->dx, h->nx), w;
    *what = "dx";
    if (!((w = bench_rel_err(a->dhx, r->dhx, h->nh)) <= e)) { e = w; *what = "dhx"; }
    if (h->cell->nstates == 2 && !((w = bench_rel_err(a->dcx, r->dcx, h->nh)) <= e)) { e = w; *what = "dcx"; }
    for (int u = 0; u < h->units; u++)
        for (int k = 0; k < h->cell->nmap; k++) {
            const ParamMap *m = &h->cell->map[k];
            int64_t off = h->canon_off[u * h->cell->nmap + k];
            if (!((w = bench_rel_err(a->dw + off, r->dw + off, entry_size(h, u, m))) <= e)) { e = w; *what = m->name; }
        }
    return e;
}

/* ---- cuDNN: one algorithm set up for one configuration -------------------------------------------- */

typedef struct Algo {
    Bench *b;
    const Host *h;
    const Dev *d;
    int idx;
    cudnnRNNDescriptor_t rnn;
    cudnnRNNDataDescriptor_t xd, yd;
    cudnnTensorDescriptor_t hd, md, bd;
    size_t wbytes, work_bytes, reserve_bytes;
    void *w, *dw, *work, *reserve;
    int can_train;
    char why[512], why_train[512];
    double build_s;
} Algo;

static void algo_free(Algo *a) {
    if (a->rnn) cudnnDestroyRNNDescriptor(a->rnn);
    if (a->xd) cudnnDestroyRNNDataDescriptor(a->xd);
    if (a->yd) cudnnDestroyRNNDataDescriptor(a->yd);
    if (a->hd) cudnnDestroyTensorDescriptor(a->hd);
    if (a->md) cudnnDestroyTensorDescriptor(a->md);
    if (a->bd) cudnnDestroyTensorDescriptor(a->bd);
    cudaFree(a->w); cudaFree(a->dw); cudaFree(a->work); cudaFree(a->reserve);
    memset(a, 0, sizeof *a);
}

/* Element count of a descriptor cuDNN filled (documented as {1, rows, cols} for matrices and
 * {1, rows, 1} for biases), checking its type and, when last >= 0, that it is packed with that
 * innermost dimension. */
static int64_t desc_numel(cudnnTensorDescriptor_t t, int64_t last, cudnnDataType_t want, const char *what) {
    cudnnDataType_t dt;
    int nb = 0, dims[8] = {0}, strides[8] = {0};
    if (!CK_CUDNN(cudnnGetTensorNdDescriptor(t, 8, &dt, &nb, dims, strides))) return -1;
    int64_t n = 1;
    for (int i = 0; i < nb; i++) n *= dims[i];
    if (nb < 1 || nb > 8 || dt != want || (last >= 0 && (dims[nb - 1] != last || strides[nb - 1] != 1))) {
        fprintf(stderr, "bench_rnn: error: cuDNN describes %s as %d dims [%d %d %d] strides [%d %d %d] of type %d; "
                        "expected type %d", what, nb, dims[0], dims[1], dims[2], strides[0], strides[1], strides[2], (int)dt,
                (int)want);
        if (last >= 0) fprintf(stderr, ", packed, innermost dimension %lld", (long long)last);
        fprintf(stderr, "\n");
        return -1;
    }
    return n;
}

/* Writes the host weights into space (upload = 1) or reads space's mapped parameters into the
 * canonical layout canon (upload = 0; for weight gradients). 0 on success. */
static int cudnn_weights(Algo *a, void *space, int upload_dir, float *canon) {
    const Host *h = a->h;
    cudnnDataType_t t = a->d->t;
    for (int u = 0; u < h->units; u++)
        for (int l = 0; l < h->nlin; l++) {
            void *maddr = NULL, *baddr = NULL;
            if (!CK_CUDNN(cudnnGetRNNWeightParams(a->b->h, a->rnn, u, a->wbytes, space, l, a->md, &maddr, a->bd, &baddr)))
                return -1;
            if (!maddr || !baddr) {
                fprintf(stderr, "bench_rnn: error: cudnnGetRNNWeightParams(pseudo-layer %d, linLayerID %d) gave no %s\n", u,
                        l, maddr ? "bias (expected with CUDNN_RNN_DOUBLE_BIAS)" : "matrix");
                return -1;
            }
            char what[64];
            snprintf(what, sizeof what, "the matrix of pseudo-layer %d linLayerID %d", u, l);
            int64_t rows = lin_rows(h), cols = lin_cols(h, u, l);
            if (desc_numel(a->md, cols, t, what) != rows * cols) {
                fprintf(stderr, "bench_rnn: error: %s does not hold %lld x %lld values\n", what, (long long)rows, (long long)cols);
                return -1;
            }
            snprintf(what, sizeof what, "the bias of pseudo-layer %d linLayerID %d", u, l);
            if (desc_numel(a->bd, -1, t, what) != rows) {
                fprintf(stderr, "bench_rnn: error: %s does not hold %lld values\n", what, (long long)rows);
                return -1;
            }
            if (upload_dir) {
                if (!upload(maddr, h->mat[u * h->nlin + l], rows * cols, t) || !upload(baddr, h->bias[u * h->nlin + l], rows, t))
                    return -1;
                continue;
            }
            for (int k = 0; k < h->cell->nmap; k++) {
                const ParamMap *m = &h->cell->map[k];
                if (m->lin != l) continue;
                float *dst = canon + h->canon_off[u * h->cell->nmap + k];
                if (!download(dst, m->bias ? baddr : maddr, m->bias ? rows : rows * cols, t)) return -1;
            }
        }
    return 0;
}

/* Sets up algorithm idx with data type t and math type mt: 1 ready (a->can_train says whether
 * training is), 0 refused (a->why says why), -1 failed (printed). */
static int algo_setup(Algo *a, Bench *b, const Host *h, const Dev *d, int idx, cudnnMathType_t mt, cudnnDataType_t math_prec) {
    memset(a, 0, sizeof *a);
    a->b = b;
    a->h = h;
    a->d = d;
    a->idx = idx;
    const Config *c = h->cfg;
    cudnnDataType_t t = d->t;
    uint32_t aux = b->o.layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED ? CUDNN_RNN_PADDED_IO_DISABLED
                                                                           : CUDNN_RNN_PADDED_IO_ENABLED;
    int r;
    if (!CK_CUDNN(cudnnCreateRNNDescriptor(&a->rnn)) || !CK_CUDNN(cudnnCreateRNNDataDescriptor(&a->xd)) ||
        !CK_CUDNN(cudnnCreateRNNDataDescriptor(&a->yd)) || !CK_CUDNN(cudnnCreateTensorDescriptor(&a->hd)) ||
        !CK_CUDNN(cudnnCreateTensorDescriptor(&a->md)) || !CK_CUDNN(cudnnCreateTensorDescriptor(&a->bd)))
        return -1;
#define TRY(call) if ((r = cudnn_try((call), #call, a->why, sizeof a->why, __FILE__, __LINE__)) != 1) return r
    TRY(cudnnSetRNNDescriptor_v8(a->rnn, algo_ids[idx], h->cell->mode, CUDNN_RNN_DOUBLE_BIAS,
                                 c->bidir ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, t, math_prec, mt,
                                 c->I, c->H, c->H, c->layers, b->drop, aux));
    TRY(cudnnSetRNNDataDescriptor(a->xd, t, b->o.layout, c->T, c->N, c->I, b->seqlen_host, NULL));
    TRY(cudnnSetRNNDataDescriptor(a->yd, t, b->o.layout, c->T, c->N, c->H * h->dirs, b->seqlen_host, NULL));
    int dims[3] = {h->units, c->N, c->H}, strides[3] = {c->N * c->H, c->H, 1};
    TRY(cudnnSetTensorNdDescriptor(a->hd, t, 3, dims, strides));
    if (algo_ids[idx] == CUDNN_RNN_ALGO_PERSIST_DYNAMIC) { /* compiles its kernels at run time */
        double t0 = bench_now();
        TRY(cudnnBuildRNNDynamic(b->h, a->rnn, c->N));
        a->build_s = bench_now() - t0;
    }
    TRY(cudnnGetRNNWeightSpaceSize(b->h, a->rnn, &a->wbytes));
    size_t ws_inf = 0, rs_inf = 0, ws_tr = 0;
    TRY(cudnnGetRNNTempSpaceSizes(b->h, a->rnn, CUDNN_FWD_MODE_INFERENCE, a->xd, &ws_inf, &rs_inf));
#undef TRY
    a->work_bytes = ws_inf;
    if (b->o.do_train) {
        r = cudnn_try(cudnnGetRNNTempSpaceSizes(b->h, a->rnn, CUDNN_FWD_MODE_TRAINING, a->xd, &ws_tr, &a->reserve_bytes),
                      "cudnnGetRNNTempSpaceSizes(TRAINING)", a->why_train, sizeof a->why_train, __FILE__, __LINE__);
        if (r < 0) return -1;
        a->can_train = r == 1;
        if (ws_tr > a->work_bytes) a->work_bytes = ws_tr;
    }
    if (!CK_CUDA(cudaMalloc(&a->w, a->wbytes)) || !CK_CUDA(cudaMalloc(&a->work, a->work_bytes ? a->work_bytes : 16)))
        return -1;
    if (a->can_train && (!CK_CUDA(cudaMalloc(&a->dw, a->wbytes)) ||
                         !CK_CUDA(cudaMalloc(&a->reserve, a->reserve_bytes ? a->reserve_bytes : 16))))
        return -1;
    if (!CK_CUDA(cudaMemset(a->w, 0, a->wbytes))) return -1;
    if (cudnn_weights(a, a->w, 1, NULL) != 0) return -1;
    return 1;
}

/* One inference forward, or one training step (forward in training mode + backward data +
 * backward weights): 1 done, 0 refused by cuDNN (why says why: a configuration it accepted at
 * set-up may still be refused here), -1 failed (printed). */
static int infer_run(Algo *a, char *why, size_t n) {
    const Dev *d = a->d;
    return cudnn_try(cudnnRNNForward(a->b->h, a->rnn, CUDNN_FWD_MODE_INFERENCE, a->b->seqlen_dev, a->xd, d->x, a->yd, d->y,
                                     a->hd, d->hx, d->hy, a->hd, d->cx, d->cy, a->wbytes, a->w, a->work_bytes, a->work, 0,
                                     NULL),
                     "cudnnRNNForward(INFERENCE)", why, n, __FILE__, __LINE__);
}

static int train_run(Algo *a, char *why, size_t n) {
    const Dev *d = a->d;
    cudnnHandle_t h = a->b->h;
    int r = cudnn_try(cudnnRNNForward(h, a->rnn, CUDNN_FWD_MODE_TRAINING, a->b->seqlen_dev, a->xd, d->x, a->yd, d->y, a->hd,
                                      d->hx, d->hy, a->hd, d->cx, d->cy, a->wbytes, a->w, a->work_bytes, a->work,
                                      a->reserve_bytes, a->reserve),
                      "cudnnRNNForward(TRAINING)", why, n, __FILE__, __LINE__);
    if (r == 1)
        r = cudnn_try(cudnnRNNBackwardData_v8(h, a->rnn, a->b->seqlen_dev, a->yd, d->y, d->dy, a->xd, d->dx, a->hd, d->hx,
                                              d->dhy, d->dhx, a->hd, d->cx, d->dcy, d->dcx, a->wbytes, a->w, a->work_bytes,
                                              a->work, a->reserve_bytes, a->reserve),
                      "cudnnRNNBackwardData_v8()", why, n, __FILE__, __LINE__);
    /* ADD: the mode cuDNN's v8 backward weights supports; rnncc is timed with RNNCC_WGRAD_ADD too */
    if (r == 1)
        r = cudnn_try(cudnnRNNBackwardWeights_v8(h, a->rnn, CUDNN_WGRAD_MODE_ADD, a->b->seqlen_dev, a->xd, d->x, a->hd, d->hx,
                                                 a->yd, d->y, a->wbytes, a->dw, a->work_bytes, a->work, a->reserve_bytes,
                                                 a->reserve),
                      "cudnnRNNBackwardWeights_v8()", why, n, __FILE__, __LINE__);
    return r;
}

/* The timed calls (BenchFn): ctx is an Algo, on the handle's stream. A refusal here, after the
 * same call succeeded in the check, is a failure. */
static int cudnn_infer(void *ctx, cudaStream_t s) {
    char why[640];
    (void)s;
    int r = infer_run(ctx, why, sizeof why);
    if (r == 0) fprintf(stderr, "bench_rnn: error: %s\n", why);
    return r == 1 ? 0 : -1;
}

static int cudnn_train(void *ctx, cudaStream_t s) {
    char why[640];
    (void)s;
    int r = train_run(ctx, why, sizeof why);
    if (r == 0) fprintf(stderr, "bench_rnn: error: %s\n", why);
    return r == 1 ? 0 : -1;
}

/* ---- rnncc on the same buffers --------------------------------------------------------------------- */

/* Checks the model's parameter list against the cuDNN mapping and loads the host weights. */
static int rnncc_load(rnncc_model *m, const Host *h) {
    const CellDef *cell = h->cell;
    int np = rnncc_model_param_count(m);
    if (np != h->units * cell->nmap) {
        fprintf(stderr, "bench_rnn: error: the %s model has %d parameter tensors; the cuDNN mapping expects %d x %d: "
                        "did cells/%s.cell change?\n", cell->name, np, h->units, cell->nmap, cell->name);
        return -1;
    }
    for (int i = 0; i < np; i++) {
        rnncc_param_info info;
        if (!CK_RNNCC(m, rnncc_model_param_info(m, i, &info))) return -1;
        int k = 0;
        while (k < cell->nmap && strcmp(cell->map[k].name, info.name) != 0) k++;
        int u = info.layer * h->dirs + info.direction;
        if (k == cell->nmap || u < 0 || u >= h->units) {
            fprintf(stderr, "bench_rnn: error: the %s model's parameter '%s' (layer %d, direction %d) has no place in "
                            "cuDNN's weight space: did cells/%s.cell change?\n", cell->name, info.name, info.layer,
                    info.direction, cell->name);
            return -1;
        }
        const ParamMap *e = &cell->map[k];
        int64_t want_rows = lin_rows(h), want_cols = e->bias ? 1 : lin_cols(h, u, e->lin);
        if (info.rows != want_rows || info.cols != want_cols) {
            fprintf(stderr, "bench_rnn: error: rnncc's %s (layer %d, direction %d) is %lld x %lld; cuDNN's is %lld x %lld\n",
                    info.name, info.layer, info.direction, (long long)info.rows, (long long)info.cols, (long long)want_rows,
                    (long long)want_cols);
            return -1;
        }
        const float *src = e->bias ? h->bias[u * h->nlin + e->lin] : h->mat[u * h->nlin + e->lin];
        if (!CK_RNNCC(m, rnncc_model_set_param(m, info.name, info.layer, info.direction, src, info.rows * info.cols)))
            return -1;
    }
    return 0;
}

/* rnncc's weight gradients (its packed layout) into the canonical layout. */
static int rnncc_read_dw(rnncc_model *m, const RnnccRun *r, const Host *h, float *canon) {
    float *all = malloc((size_t)r->nweights * sizeof(float));
    if (!all) { fprintf(stderr, "bench_rnn: error: out of host memory\n"); return -1; }
    int ok = CK_CUDA(cudaMemcpy(all, r->dweights, (size_t)r->nweights * sizeof(float), cudaMemcpyDeviceToHost));
    int np = rnncc_model_param_count(m);
    for (int i = 0; ok && i < np; i++) {
        rnncc_param_info info;
        if (!(ok = CK_RNNCC(m, rnncc_model_param_info(m, i, &info)))) break;
        int k = 0;
        while (k < h->cell->nmap && strcmp(h->cell->map[k].name, info.name) != 0) k++;
        int u = info.layer * h->dirs + info.direction;
        int64_t n = info.rows * info.cols;
        if (k == h->cell->nmap || info.offset < 0 || info.offset + n > r->nweights) {
            fprintf(stderr, "bench_rnn: error: rnncc parameter '%s' at offset %lld does not fit the weight buffer\n", info.name,
                    (long long)info.offset);
            ok = 0;
            break;
        }
        memcpy(canon + h->canon_off[u * h->cell->nmap + k], all + info.offset, (size_t)n * sizeof(float));
    }
    free(all);
    return ok ? 0 : -1;
}

/* One rnncc training pass checked (dweights zeroed and the gradient buffers poisoned first): its gradients'
 * worst error against ref (*what: in which), or -1 where a call failed. */
static double rnncc_train_checked(RnnccRun *rr, const Dev *df, const Host *h, Out *got, const Out *ref,
                                  cudaStream_t stream, const char **what) {
    if (!CK_CUDA(cudaMemset(rr->dweights, 0, (size_t)rr->nweights * sizeof(float))) || !poison_grads(df, h) ||
        bench_rnncc_train(rr, stream) != 0 || !CK_CUDA(cudaStreamSynchronize(stream)) || !download_grads(got, df, h) ||
        rnncc_read_dw(rr->m, rr, h, got->dw) != 0)
        return -1;
    return cmp_grads(got, ref, h, what);
}

/* ---- one configuration, cell and precision: two rows (inference, training) --------------------------- */

/* A result as a table cell. "+conv" marks a run under ALLOW_CONVERSION that ran (timed, BAD or
 * FAIL): "0.634+conv". */
static const char *st_text(const Res *r, char *buf, size_t size) {
    const char *conv = r->conv ? "+conv" : "";
    switch (r->st) {
    case ST_OK: snprintf(buf, size, "%.3f%s", r->t.median_ms, conv); break;
    case ST_NA: snprintf(buf, size, "n/a"); break;
    case ST_BAD: snprintf(buf, size, "BAD%s", conv); break;
    case ST_FAIL: snprintf(buf, size, "FAIL%s", conv); break;
    case ST_SKIP: snprintf(buf, size, "skip"); break;
    case ST_MISMATCH: snprintf(buf, size, "MISMATCH"); break;
    default: snprintf(buf, size, "-"); break;
    }
    return buf;
}

/* The fastest passing result of res[NALGO] (-1: none); no_conv leaves out runs under ALLOW_CONVERSION. */
static int best_of(const Res *res, int no_conv) {
    int best = -1;
    for (int i = 0; i < NALGO; i++)
        if (res[i].st == ST_OK && !(no_conv && res[i].conv) && (best < 0 || res[i].t.median_ms < res[best].t.median_ms))
            best = i;
    return best;
}

/* The best cuDNN algorithm, and the best computing in the precision asked for (tf32: not down-converted to fp16). */
static int best_algo(const Row *r) { return best_of(r->algo, 0); }
static int best_plain(const Row *r) { return best_of(r->plain, 1); }

/* Result b of res[] as "0.634 PS", "0.634 PS+conv" where it ran under ALLOW_CONVERSION. */
static const char *best_text(const Res *res, int b, int digits, char *buf, size_t size) {
    snprintf(buf, size, "%.*f %s%s", digits, res[b].t.median_ms, algo_short[b], res[b].conv ? "+conv" : "");
    return buf;
}

static const char *mode_name(const Row *r) { return r->training ? "train" : "infer"; }

/* rnncc given 16-bit weights (Row.given16) as "0.341 (0.99)", its ratio to the best cuDNN run; "-" where not
 * measured (inference, fp32 and tf32), "n/a" where rnncc's own training row did not pass, else why not ("FAIL"). */
static const char *given16_text(const Row *r, int digits, char *buf, size_t size) {
    int b = best_algo(r);
    if (r->given16.st == ST_NONE) snprintf(buf, size, "-");
    else if (r->given16.st != ST_OK) st_text(&r->given16, buf, size);
    else if (b < 0) snprintf(buf, size, "%.*f", digits, r->given16.t.median_ms);
    else snprintf(buf, size, "%.*f (%.2f)", digits, r->given16.t.median_ms, r->given16.t.median_ms / r->algo[b].t.median_ms);
    return buf;
}

/* best no-conv, rn/nc: the best cuDNN run without ALLOW_CONVERSION, and rnncc over it */
static void print_row_header(FILE *f) {
    fprintf(f, "%-12s %-4s %-4s %-5s %11s %11s %11s %11s  %-15s %9s %7s  %-12s %7s %8s %8s %7s %6s %9s %-16s %s\n",
            "config", "cell", "prec", "mode", "STD", "PS", "PD", "PSH", "best cuDNN", "rnncc", "rn/best", "best no-conv",
            "rn/nc", "us/st-cu", "us/st-rn", "TFLOP/s", "%peak", "err", "ref", "w16 (rn/best)");
}

static void print_row(FILE *f, const Row *r) {
    char a[NALGO][32], rn[32], best[40] = "-", ratio[16] = "-", nc[40] = "-", ratio_nc[16] = "-", uc[16] = "-",
         ur[16] = "-", tf[16] = "-", pk[16] = "-", err[24] = "-";
    for (int i = 0; i < NALGO; i++) st_text(&r->algo[i], a[i], sizeof a[i]);
    st_text(&r->rnncc, rn, sizeof rn);
    int b = best_algo(r), bp = best_plain(r);
    double T = r->cfg->T;
    if (b >= 0) {
        best_text(r->algo, b, 3, best, sizeof best);
        snprintf(uc, sizeof uc, "%.1f", r->algo[b].t.median_ms * 1e3 / T);
    }
    if (bp >= 0) best_text(r->plain, bp, 3, nc, sizeof nc);
    if (r->rnncc.st == ST_OK) {
        double ms = r->rnncc.t.median_ms, tflops = r->gflop / ms;
        snprintf(ur, sizeof ur, "%.1f", ms * 1e3 / T);
        snprintf(tf, sizeof tf, "%.2f", tflops);
        snprintf(pk, sizeof pk, "%.1f%%", 100 * tflops / prec_peak_tflops[r->prec]);
        if (b >= 0) snprintf(ratio, sizeof ratio, "%.2f", ms / r->algo[b].t.median_ms);
        if (bp >= 0) snprintf(ratio_nc, sizeof ratio_nc, "%.2f", ms / r->plain[bp].t.median_ms);
    }
    if (!isnan(r->err)) snprintf(err, sizeof err, "%.1e%s", r->err, r->err <= r->tol ? "" : "!");
    char w16[40];
    given16_text(r, 3, w16, sizeof w16);
    fprintf(f, "%-12s %-4s %-4s %-5s %11s %11s %11s %11s  %-15s %9s %7s  %-12s %7s %8s %8s %7s %6s %9s %-16s %s\n",
            r->cfg->name, r->cell->name, prec_names[r->prec], mode_name(r), a[0], a[1], a[2], a[3], best, rn, ratio, nc,
            ratio_nc, uc, ur, tf, pk, err, r->ref, w16);
}

static void markdown_header(FILE *f) {
    fprintf(f, "| config (T, N, I=H, layers, dirs) | cell | precision | mode | STD ms | PS ms | PD ms | PSH ms | best cuDNN "
               "| rnncc ms | rnncc / best | best cuDNN without conversion | rnncc / best without conversion | µs/step cuDNN "
               "| µs/step rnncc | rnncc TFLOP/s | %% of GEMM peak | max err | reference | max err among cuDNN algorithms "
               "| rnncc ms given 16-bit weights (rnncc / best) |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void markdown_row(FILE *f, const Row *r) {
    char a[NALGO][32], rn[32], best[40];
    for (int i = 0; i < NALGO; i++) st_text(&r->algo[i], a[i], sizeof a[i]);
    st_text(&r->rnncc, rn, sizeof rn);
    int b = best_algo(r), bp = best_plain(r);
    const Config *c = r->cfg;
    fprintf(f, "| %s (%d, %d, %d, %d, %d) | %s | %s | %s | %s | %s | %s | %s | ", c->name, c->T, c->N, c->H, c->layers,
            c->bidir ? 2 : 1, r->cell->name, prec_names[r->prec], r->training ? "training" : "inference", a[0], a[1], a[2],
            a[3]);
    fprintf(f, "%s | ", b >= 0 ? best_text(r->algo, b, 3, best, sizeof best) : "n/a");
    fprintf(f, "%s | ", rn);
    if (r->rnncc.st == ST_OK && b >= 0) fprintf(f, "%.2f | ", r->rnncc.t.median_ms / r->algo[b].t.median_ms);
    else fprintf(f, "n/a | ");
    fprintf(f, "%s | ", bp >= 0 ? best_text(r->plain, bp, 3, best, sizeof best) : "n/a");
    if (r->rnncc.st == ST_OK && bp >= 0) fprintf(f, "%.2f | ", r->rnncc.t.median_ms / r->plain[bp].t.median_ms);
    else fprintf(f, "n/a | ");
    if (b >= 0) fprintf(f, "%.1f | ", r->algo[b].t.median_ms * 1e3 / c->T);
    else fprintf(f, "n/a | ");
    if (r->rnncc.st == ST_OK) {
        double tflops = r->gflop / r->rnncc.t.median_ms;
        fprintf(f, "%.1f | %.2f | %.1f%% | ", r->rnncc.t.median_ms * 1e3 / c->T, tflops,
                100 * tflops / prec_peak_tflops[r->prec]);
    } else {
        fprintf(f, "n/a | n/a | n/a | ");
    }
    if (isnan(r->err)) fprintf(f, "n/a | %s | ", r->ref);
    else fprintf(f, "%.1e%s | %s | ", r->err, r->err <= r->tol ? "" : " (over the bound)", r->ref);
    if (isnan(r->algo_err)) fprintf(f, "n/a | ");
    else fprintf(f, "%.1e | ", r->algo_err);
    fprintf(f, "%s |\n", given16_text(r, 3, best, sizeof best));
}

static int new_row(Bench *b) {
    if (b->nrows == b->caprows) {
        int cap = b->caprows ? 2 * b->caprows : 64;
        Row *n = realloc(b->rows, (size_t)cap * sizeof *n);
        if (!n) { fprintf(stderr, "bench_rnn: error: out of host memory\n"); exit(1); }
        b->rows = n;
        b->caprows = cap;
    }
    Row *r = &b->rows[b->nrows];
    memset(r, 0, sizeof *r);
    r->err = r->algo_err = NAN;
    return b->nrows++;
}

static double forward_gflop(const Config *c, const CellDef *cell) {
    int dirs = c->bidir ? 2 : 1;
    double f = 0;
    for (int l = 0; l < c->layers; l++) {
        double in = l == 0 ? c->I : (double)c->H * dirs;
        f += dirs * 2.0 * c->T * c->N * cell->gates * (double)c->H * (in + c->H);
    }
    return f / 1e9;
}

static void log_timing(const Row *r, const char *who, const Timing *t) {
    printf("  %s %s %s %s %-5s %9.3f ms  (min %.3f, max %.3f, %d runs; %.1f us/step)\n", r->cfg->name, r->cell->name,
           prec_names[r->prec], mode_name(r), who, t->median_ms, t->min_ms, t->max_ms, t->runs,
           t->median_ms * 1e3 / r->cfg->T);
    fflush(stdout);
}

/* A disagreement: counted, and printed so that nobody can miss it. */
static void loud(Bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void loud(Bench *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    b->failures++;
    printf("\n*** ");
    vprintf(fmt, ap);
    printf(" ***\n\n");
    fflush(stdout);
    va_end(ap);
}

static int seqlen_setup(Bench *b, const Config *c) {
    if (c->N > b->seqlen_cap) {
        cudaFree(b->seqlen_dev);
        free(b->seqlen_host);
        b->seqlen_dev = NULL;
        b->seqlen_host = malloc((size_t)c->N * sizeof(int));
        if (!b->seqlen_host || !CK_CUDA(cudaMalloc((void **)&b->seqlen_dev, (size_t)c->N * sizeof(int)))) return -1;
        b->seqlen_cap = c->N;
    }
    for (int n = 0; n < c->N; n++) b->seqlen_host[n] = c->T; /* every sequence full length */
    return CK_CUDA(cudaMemcpy(b->seqlen_dev, b->seqlen_host, (size_t)c->N * sizeof(int), cudaMemcpyHostToDevice)) ? 0 : -1;
}

/* The compact table: one line per case, inference / training side by side. */
static void summary_head(Bench *b, FILE *f) {
    fprintf(f, "\n== bench_rnn: ms per sequence, inference / training; ratio = rnncc / best cuDNN (< 1: rnncc faster); "
               "+conv = cuDNN ran under TENSOR_OP_MATH_ALLOW_CONVERSION (fp16 from fp32 data); "
               "ratio no-conv = rnncc / best cuDNN without it; train w16 = rnncc's training given 16-bit weights, as "
               "cuDNN is (rnncc_model_weights16: no weights rounded a pass), and its ratio\n");
    for (int i = 0; i < b->njit; i++) fprintf(f, "%s\n", b->jit_lines[i]);
    fprintf(f, "%-12s %-4s %-4s %-30s %-15s %-11s %-13s %-17s %s\n", "config", "cell", "prec", "best cuDNN inf / train",
            "rnncc inf / train", "ratio", "ratio no-conv", "err inf / train", "train w16 (ratio)");
}

static void summary_case(FILE *f, const Row *inf, const Row *tr) {
    const Row *r = inf ? inf : tr, *pair[2] = {inf, tr};
    char cu[2][40], rn[2][32], ra[2][16], rp[2][16], er[2][16];
    for (int k = 0; k < 2; k++) {
        const Row *x = pair[k];
        snprintf(cu[k], sizeof cu[k], "-"); snprintf(rn[k], sizeof rn[k], "-");
        snprintf(ra[k], sizeof ra[k], "-"); snprintf(rp[k], sizeof rp[k], "-"); snprintf(er[k], sizeof er[k], "-");
        if (!x) continue;
        int bi = best_algo(x), bp = best_plain(x);
        if (bi >= 0) best_text(x->algo, bi, 2, cu[k], sizeof cu[k]);
        else if (x->algo[0].st == ST_SKIP) snprintf(cu[k], sizeof cu[k], "skip");
        else snprintf(cu[k], sizeof cu[k], "n/a");
        st_text(&x->rnncc, rn[k], sizeof rn[k]);
        if (x->rnncc.st == ST_OK) snprintf(rn[k], sizeof rn[k], "%.2f", x->rnncc.t.median_ms);
        if (x->rnncc.st == ST_OK && bi >= 0) snprintf(ra[k], sizeof ra[k], "%.2f", x->rnncc.t.median_ms / x->algo[bi].t.median_ms);
        if (x->rnncc.st == ST_OK && bp >= 0) snprintf(rp[k], sizeof rp[k], "%.2f", x->rnncc.t.median_ms / x->plain[bp].t.median_ms);
        if (!isnan(x->err)) snprintf(er[k], sizeof er[k], "%.0e%s", x->err, x->err <= x->tol ? "" : "!");
    }
    char c1[96], c2[80], c3[40], c5[40], c4[48];
    snprintf(c1, sizeof c1, "%s / %s", cu[0], cu[1]);
    snprintf(c2, sizeof c2, "%s / %s", rn[0], rn[1]);
    snprintf(c3, sizeof c3, "%s/%s", ra[0], ra[1]);
    snprintf(c5, sizeof c5, "%s/%s", rp[0], rp[1]);
    snprintf(c4, sizeof c4, "%s / %s", er[0], er[1]);
    char c6[40] = "-";
    if (tr) given16_text(tr, 2, c6, sizeof c6);
    fprintf(f, "%-12s %-4s %-4s %-30s %-15s %-11s %-13s %-17s %s\n", r->cfg->name, r->cell->name, prec_names[r->prec], c1,
            c2, c3, c5, c4, c6);
    fflush(f);
}

/* Appends a finished case to the markdown and summary files at once, so that a run stopped
 * part-way keeps what it measured. */
static void record_case(Bench *b, const Row *ri, const Row *rt) {
    if (b->md) {
        if (ri) markdown_row(b->md, ri);
        if (rt) markdown_row(b->md, rt);
        fflush(b->md);
    }
    if (b->summary) summary_case(b->summary, ri, rt);
}

/* Runs every selected algorithm and rnncc for one case and appends its rows. */
static void run_case(Bench *b, const Config *cfg, const CellDef *cell, Prec p, uint64_t seed) {
    const Options *o = &b->o;
    int ii = o->do_infer ? new_row(b) : -1, it = o->do_train ? new_row(b) : -1; /* indices: new_row may move rows */
    Row *ri = ii >= 0 ? &b->rows[ii] : NULL, *rt = it >= 0 ? &b->rows[it] : NULL;
    Row *rows[2] = {ri, rt};
    int case_id = b->ncases++;
    for (int k = 0; k < 2; k++) {
        if (!rows[k]) continue;
        Row *r = rows[k];
        r->case_id = case_id;
        r->cfg = cfg;
        r->cell = cell;
        r->prec = p;
        r->training = k;
        r->gflop = forward_gflop(cfg, cell) * (k ? 3 : 1);
        r->tol = k ? grad_tol[p] : out_tol[p];
        snprintf(r->ref, sizeof r->ref, "-");
        for (int i = 0; i < NALGO; i++) r->algo[i].st = r->plain[i].st = o->use_algo[i] ? ST_NONE : ST_SKIP;
        r->rnncc.st = ST_NONE;
    }
    int half = p == PREC_FP16 || p == PREC_BF16;
    cudnnDataType_t t = p == PREC_FP16 ? CUDNN_DATA_HALF : p == PREC_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    /* tf32x3: rnncc's fp32-accuracy mode on tensor cores, beside cuDNN's fp32 (FMA) */
    cudnnMathType_t mt = p == PREC_FP32 || p == PREC_TF32X3 ? CUDNN_FMA_MATH : p == PREC_TF32 ? o->tf32_math : CUDNN_TENSOR_OP_MATH;
    cudnnDataType_t math_prec = half ? o->half_math_prec : CUDNN_DATA_FLOAT;
    char label[96];
    snprintf(label, sizeof label, "%s %s %s", cfg->name, cell->name, prec_names[p]);

    if (o->budget_s > 0 && bench_now() - b->t0 > o->budget_s) {
        printf("%s: skipped: the time budget of %.0f s is spent\n", label, o->budget_s);
        for (int k = 0; k < 2; k++)
            if (rows[k]) {
                for (int i = 0; i < NALGO; i++) rows[k]->algo[i].st = rows[k]->plain[i].st = ST_SKIP;
                rows[k]->rnncc.st = ST_SKIP;
            }
        record_case(b, ri, rt);
        return;
    }
    printf("== %s: T=%d N=%d I=%d H=%d layers=%d %s\n", label, cfg->T, cfg->N, cfg->I, cfg->H, cfg->layers,
           cfg->bidir ? "bidirectional" : "unidirectional");
    fflush(stdout);

    Host h = {0};
    Dev df = {0}, dh = {0};
    Out ref = {0}, got = {0};
    int have_ref = 0, have_gref = 0;
    rnncc_model *m = NULL;
    RnnccRun rr = {0};
    Algo a = {0};
    int fatal = 0; /* the whole case failed: mark what did not run */
    if (seqlen_setup(b, cfg) != 0 || host_init(&h, cfg, cell, seed, b->o.input_scale) != 0) { fatal = 1; goto done; }
    if (half) { /* both libraries see exactly the values the half type can hold */
        round_through(h.x, h.nx, t); round_through(h.hx, h.nh, t); round_through(h.cx, h.nh, t);
        round_through(h.dy, h.ny, t); round_through(h.dhy, h.nh, t); round_through(h.dcy, h.nh, t);
        for (int i = 0; i < h.units * h.nlin; i++) {
            round_through(h.mat[i], lin_rows(&h) * lin_cols(&h, i / h.nlin, i % h.nlin), t);
            round_through(h.bias[i], lin_rows(&h), t);
        }
    }
    if (out_alloc(&ref, &h) != 0 || out_alloc(&got, &h) != 0 || dev_init(&df, &h, CUDNN_DATA_FLOAT) != 0) { fatal = 1; goto done; }
    if (half && dev_init(&dh, &h, t) != 0) { fatal = 1; goto done; }

    /* fp16/bf16: the reference is cuDNN's strict-fp32 STANDARD on the same rounded values */
    if (half && ri) {
        int s = algo_setup(&a, b, &h, &df, 0, CUDNN_FMA_MATH, CUDNN_DATA_FLOAT);
        if (s != 1 || !poison_outputs(&df, &h) || cudnn_infer(&a, b->stream) != 0 || !CK_CUDA(cudaStreamSynchronize(b->stream)) ||
            !download_outputs(&ref, &df, &h)) {
            printf("*** %s: the fp32 reference run (cuDNN STANDARD, FMA math) failed%s%s ***\n", label, s == 0 ? ": " : "",
                   s == 0 ? a.why : "");
            b->failures++;
            fatal = 1;
            goto done;
        }
        have_ref = 1;
        snprintf(ri->ref, sizeof ri->ref, "cuDNN STD fp32");
        algo_free(&a);
    }
    if (half && rt) { /* and its gradients; else the first cuDNN algorithm that trains is the reference */
        char why[640] = "";
        int s = algo_setup(&a, b, &h, &df, 0, CUDNN_FMA_MATH, CUDNN_DATA_FLOAT);
        if (s == 1 && !a.can_train) snprintf(why, sizeof why, "%s", a.why_train);
        if (s == 0) snprintf(why, sizeof why, "%s", a.why);
        if (s == 1 && a.can_train && CK_CUDA(cudaMemset(a.dw, 0, a.wbytes)) && poison_grads(&df, &h) &&
            train_run(&a, why, sizeof why) > 0 && CK_CUDA(cudaStreamSynchronize(b->stream)) && download_grads(&ref, &df, &h) &&
            cudnn_weights(&a, a.dw, 0, ref.dw) == 0) {
            have_gref = 1;
            snprintf(rt->ref, sizeof rt->ref, "cuDNN STD fp32");
        } else {
            printf("  %s: the fp32 gradient reference (cuDNN STANDARD, FMA math) did not run%s%s: the first algorithm that "
                   "trains is the reference\n", label, why[0] ? ": " : "", why);
        }
        algo_free(&a);
    }

    /* rnncc, on the float buffers cuDNN uses too (fp16, bf16: holding the half-rounded values; rnncc
     * rounds its GEMM inputs to 16 bits, RNNCC_FP16 and RNNCC_BF16) */
    {
        char dI[32], dH[32], file[1024];
        snprintf(dI, sizeof dI, "I=%d", cfg->I);
        snprintf(dH, sizeof dH, "H=%d", cfg->H);
        snprintf(file, sizeof file, "%s/%s.cell", o->cells_dir, cell->name);
        const char *dims[2] = {dI, dH};
        m = bench_model_create(file, NULL, dims, 2, cfg->layers, cfg->bidir, bench_rnncc_precision(p), RNNCC_FOLD_AUTO, 0);
        rr.x = df.x; rr.y = df.y; rr.dy = df.dy; rr.dx = df.dx;
        rr.h0[0] = df.hx; rr.hT[0] = df.hy; rr.dhT[0] = df.dhy; rr.dh0[0] = df.dhx;
        rr.h0[1] = df.cx; rr.hT[1] = df.cy; rr.dhT[1] = df.dcy; rr.dh0[1] = df.dcx;
        int ok = m && rnncc_load(m, &h) == 0 && bench_rnncc_alloc(&rr, m, cfg->T, cfg->N, o->do_train) == 0;
        if (ok && (rr.sz.nstates != cell->nstates || rr.sz.input != cfg->I || rr.sz.output != (int64_t)cfg->H * h.dirs)) {
            fprintf(stderr, "bench_rnn: error: the rnncc %s model has %d states, input %lld, output %lld; expected %d, %d, %lld\n",
                    cell->name, rr.sz.nstates, (long long)rr.sz.input, (long long)rr.sz.output, cell->nstates, cfg->I,
                    (long long)cfg->H * h.dirs);
            ok = 0;
        }
        if (ok) {
            rnncc_backend be;
            char why[640];
            if (rnncc_model_backend(m, cfg->N, &be, why, sizeof why) == RNNCC_OK) printf("   rnncc backend: %s\n", why);
            else printf("   rnncc backend: %s\n", rnncc_model_error(m));
            if (o->do_train) {
                if (rnncc_model_backward_backend(m, cfg->N, &be, why, sizeof why) != RNNCC_OK)
                    snprintf(why, sizeof why, "%s", rnncc_model_error(m));
                printf("   rnncc backward backend: %s\n", why);
            }
        }
        if (!ok) {
            printf("*** %s: rnncc could not be set up (see the error above) ***\n", label);
            b->failures++;
            if (ri) ri->rnncc.st = ST_FAIL;
            if (rt) rt->rnncc.st = ST_FAIL;
            rnncc_model_destroy(m);
            m = NULL;
        }
    }

    /* every cuDNN algorithm: set up, check against the reference, time. For tf32 each algorithm
     * runs under every math mode that can put it on tensor cores (DEFAULT lets cuDNN choose; the
     * persistent algorithms need TENSOR_OP_MATH_ALLOW_CONVERSION), and the faster passing run is kept
     * in algo[], marked conv where it was the ALLOW_CONVERSION run (cuDNN may have computed in fp16);
     * plain[] keeps the first math mode's run alone. fp16 likewise: half data, then the float data
     * (holding the same values) under ALLOW_CONVERSION, as a tf32 row's +conv run. */
    cudnnMathType_t maths[2] = {mt, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION};
    int nmaths = (p == PREC_TF32 && mt != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) || p == PREC_FP16 ? 2 : 1;
    for (int vi = 0; vi < NALGO * nmaths; vi++) {
        int i = vi / nmaths, mi = vi % nmaths, conv = maths[mi] == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
        const Dev *dc = half && !conv ? &dh : &df;
        if (!o->use_algo[i]) continue;
        Res keep[2] = {ri ? ri->algo[i] : (Res){0}, rt ? rt->algo[i] : (Res){0}}; /* mi > 0: the first math mode's run */
        if (mi > 0) printf("  cuDNN %s with TENSOR_OP_MATH_ALLOW_CONVERSION:\n", algo_long[i]);
        int s = algo_setup(&a, b, &h, dc, i, maths[mi], conv ? CUDNN_DATA_FLOAT : math_prec);
        if (s <= 0) {
            printf("  cuDNN %s: %s%s\n", algo_long[i], s == 0 ? "n/a: " : "FAILED (see above)", s == 0 ? a.why : "");
            if (s < 0) b->failures++;
            for (int k = 0; k < 2; k++) {
                if (!rows[k]) continue;
                if (!(mi > 0 && keep[k].st == ST_OK)) /* else an earlier math mode's passing run stands */
                    rows[k]->algo[i] = (Res){.st = s == 0 ? ST_NA : ST_FAIL, .conv = conv};
                if (mi == 0) rows[k]->plain[i] = rows[k]->algo[i];
            }
            algo_free(&a);
            continue;
        }
        if (a.build_s > 0) printf("  cuDNN %s: cudnnBuildRNNDynamic took %.2f s\n", algo_long[i], a.build_s);
        char who[16]; /* for the log */
        snprintf(who, sizeof who, "%s%s", algo_short[i], conv ? "+conv" : "");
        for (int k = 0; k < 2; k++) /* this run's result replaces algo[i] in every branch below */
            if (rows[k]) rows[k]->algo[i].conv = conv;
        if (ri) {
            char why[640] = "";
            int r = poison_outputs(dc, &h) ? infer_run(&a, why, sizeof why) : -1;
            if (r == 0) {
                printf("  cuDNN %s: n/a: %s\n", algo_long[i], why);
                ri->algo[i].st = ST_NA;
            } else if (r < 0 || !CK_CUDA(cudaStreamSynchronize(b->stream)) || !download_outputs(&got, dc, &h)) {
                ri->algo[i].st = ST_FAIL;
                b->failures++;
            } else if (!have_ref) { /* this run is the reference: swap its outputs in */
                float *s1 = ref.y, *s2 = ref.hy, *s3 = ref.cy;
                ref.y = got.y; ref.hy = got.hy; ref.cy = got.cy;
                got.y = s1; got.hy = s2; got.cy = s3;
                have_ref = 1;
                snprintf(ri->ref, sizeof ri->ref, "cuDNN %s", who);
                ri->algo[i].st = ST_OK;
            } else {
                const char *what;
                double e = cmp_outputs(&got, &ref, &h, &what);
                double bound = out_tol[p];
                if (e <= bound && !(e <= ri->algo_err)) ri->algo_err = e; /* a run over the bound is a MISMATCH, below */
                if (e <= bound) {
                    ri->algo[i].st = ST_OK;
                } else {
                    ri->algo[i].st = ST_BAD;
                    char name[96];
                    snprintf(name, sizeof name, "cuDNN %s%s", algo_long[i], conv ? " with TENSOR_OP_MATH_ALLOW_CONVERSION" : "");
                    loud(b, "MISMATCH: %s inference: %s disagrees with the reference in %s: %.3g > %.0e", label, name, what, e,
                         bound);
                }
            }
            if (ri->algo[i].st == ST_OK) {
                if (bench_time(cudnn_infer, &a, b->stream, o->warmup, o->repeat, &ri->algo[i].t) != 0) {
                    ri->algo[i].st = ST_FAIL;
                    b->failures++;
                } else {
                    log_timing(ri, who, &ri->algo[i].t);
                }
            }
        }
        if (rt) {
            char why[640] = "";
            int r = a.can_train && CK_CUDA(cudaMemset(a.dw, 0, a.wbytes)) && poison_grads(dc, &h) ? train_run(&a, why, sizeof why)
                  : a.can_train ? -1 : 0;
            if (r == 0) {
                printf("  cuDNN %s training: n/a: %s\n", algo_long[i], a.can_train ? why : a.why_train);
                rt->algo[i].st = ST_NA;
            } else if (r < 0 || !CK_CUDA(cudaStreamSynchronize(b->stream)) || !download_grads(&got, dc, &h) ||
                       cudnn_weights(&a, a.dw, 0, got.dw) != 0) {
                rt->algo[i].st = ST_FAIL;
                b->failures++;
            } else if (!have_gref) { /* this run is the gradient reference: swap its gradients in */
                float *s1 = ref.dx, *s2 = ref.dhx, *s3 = ref.dcx, *s4 = ref.dw;
                ref.dx = got.dx; ref.dhx = got.dhx; ref.dcx = got.dcx; ref.dw = got.dw;
                got.dx = s1; got.dhx = s2; got.dcx = s3; got.dw = s4;
                have_gref = 1;
                snprintf(rt->ref, sizeof rt->ref, "cuDNN %s", who);
                rt->algo[i].st = ST_OK;
            } else {
                const char *what;
                double e = cmp_grads(&got, &ref, &h, &what);
                if (e <= grad_tol[p] && !(e <= rt->algo_err)) rt->algo_err = e;
                if (e <= grad_tol[p]) {
                    rt->algo[i].st = ST_OK;
                } else {
                    rt->algo[i].st = ST_BAD;
                    char name[96];
                    snprintf(name, sizeof name, "cuDNN %s%s", algo_long[i], conv ? " with TENSOR_OP_MATH_ALLOW_CONVERSION" : "");
                    loud(b, "MISMATCH: %s training: %s disagrees with the reference in %s: %.3g > %.0e", label, name, what, e,
                         grad_tol[p]);
                }
            }
            if (rt->algo[i].st == ST_OK) {
                if (bench_time(cudnn_train, &a, b->stream, o->warmup, o->repeat, &rt->algo[i].t) != 0) {
                    rt->algo[i].st = ST_FAIL;
                    b->failures++;
                } else {
                    log_timing(rt, who, &rt->algo[i].t);
                }
            }
        }
        algo_free(&a);
        for (int k = 0; k < 2; k++) {
            Row *r = rows[k];
            if (!r) continue;
            if (mi == 0) /* the first math mode: its run is the plain one */
                r->plain[i] = r->algo[i];
            else if (keep[k].st == ST_OK && (r->algo[i].st != ST_OK || keep[k].t.median_ms <= r->algo[i].t.median_ms))
                r->algo[i] = keep[k]; /* the earlier math mode's run passed and was not slower: it stands */
            else if (keep[k].st == ST_OK)
                printf("  cuDNN %s%s: TENSOR_OP_MATH_ALLOW_CONVERSION is faster: %.3f %s+conv is kept, against %.3f %s "
                       "without conversion\n", algo_long[i], k ? " training" : "", r->algo[i].t.median_ms, algo_short[i],
                       keep[k].t.median_ms, algo_short[i]);
        }
    }

    /* rnncc: must agree with the reference before it is timed. Inference keeps its 16-bit weights, as
     * cuDNN's fp16 rows are given theirs (rnncc_model_keep_derived_weights; for an LSTM or GRU no effect in
     * fp32 and tf32); training rounds them every forward, as a training loop whose weights change every step must */
    if (m && ri) {
        const char *what = "y";
        if (!CK_RNNCC(m, rnncc_model_keep_derived_weights(m, 1))) {
            ri->rnncc.st = ST_FAIL;
            b->failures++;
        } else if (!have_ref) {
            printf("*** %s inference: no cuDNN algorithm ran, so rnncc cannot be checked: not timed ***\n", label);
            ri->rnncc.st = ST_FAIL;
            b->failures++;
        } else if (!poison_outputs(&df, &h) || bench_rnncc_infer(&rr, b->stream) != 0 ||
                   !CK_CUDA(cudaStreamSynchronize(b->stream)) || !download_outputs(&got, &df, &h)) {
            ri->rnncc.st = ST_FAIL;
            b->failures++;
        } else {
            ri->err = cmp_outputs(&got, &ref, &h, &what);
            if (ri->err <= out_tol[p]) {
                ri->rnncc.st = ST_OK;
            } else {
                ri->rnncc.st = ST_MISMATCH;
                loud(b, "MISMATCH: %s inference: %s: rnncc disagrees with the reference in %s: %.3g > %.0e: not timed", label,
                     ri->ref, what, ri->err, out_tol[p]);
            }
        }
        if (ri->rnncc.st == ST_OK) {
            if (bench_time(bench_rnncc_infer, &rr, b->stream, o->warmup, o->repeat, &ri->rnncc.t) != 0) {
                ri->rnncc.st = ST_FAIL;
                b->failures++;
            } else {
                log_timing(ri, "rnncc", &ri->rnncc.t);
            }
        }
    }
    if (m && rt) {
        int pr = CK_RNNCC(m, rnncc_model_keep_derived_weights(m, 0)) ? bench_rnncc_probe_training(&rr, b->stream) : -1;
        const char *what = "dx";
        if (pr == 0) {
            printf("  rnncc training: n/a: %s\n", rr.why_no_training);
            rt->rnncc.st = ST_NA;
        } else if (pr < 0) {
            rt->rnncc.st = ST_FAIL;
            b->failures++;
        } else if (!have_gref) {
            printf("*** %s training: no cuDNN algorithm ran, so rnncc cannot be checked: not timed ***\n", label);
            rt->rnncc.st = ST_FAIL;
            b->failures++;
        } else if ((rt->err = rnncc_train_checked(&rr, &df, &h, &got, &ref, b->stream, &what)) < 0) {
            rt->err = NAN;
            rt->rnncc.st = ST_FAIL;
            b->failures++;
        } else {
            if (rt->err <= grad_tol[p]) {
                rt->rnncc.st = ST_OK;
            } else {
                rt->rnncc.st = ST_MISMATCH;
                loud(b, "MISMATCH: %s training: %s: rnncc's gradients disagree with the reference in %s: %.3g > %.0e: not timed",
                     label, rt->ref, what, rt->err, grad_tol[p]);
            }
        }
        if (rt->rnncc.st == ST_OK) {
            if (bench_time(bench_rnncc_train, &rr, b->stream, o->warmup, o->repeat, &rt->rnncc.t) != 0) {
                rt->rnncc.st = ST_FAIL;
                b->failures++;
            } else {
                log_timing(rt, "rnncc", &rt->rnncc.t);
            }
        }
        /* the same given 16-bit weights, as cuDNN's fp16 and bf16 rows are: rnncc_model_weights16, for a training
         * loop whose optimizer writes them (nothing rounded a pass); checked again, then timed */
        if (rt->rnncc.st != ST_OK && (p == PREC_FP16 || p == PREC_BF16)) {
            rt->given16.st = ST_NA; /* not run: the rnncc column says why */
        } else if (p == PREC_FP16 || p == PREC_BF16) {
            uint16_t *w16 = NULL;
            double e = CK_RNNCC(m, rnncc_model_weights16(m, &w16, NULL))
                           ? rnncc_train_checked(&rr, &df, &h, &got, &ref, b->stream, &what) : -1;
            if (e < 0) {
                rt->given16.st = ST_FAIL;
                b->failures++;
            } else if (e > grad_tol[p]) {
                rt->given16.st = ST_MISMATCH;
                loud(b, "MISMATCH: %s training given 16-bit weights: %s: rnncc's gradients disagree with the reference in "
                     "%s: %.3g > %.0e: not timed", label, rt->ref, what, e, grad_tol[p]);
            } else if (bench_time(bench_rnncc_train, &rr, b->stream, o->warmup, o->repeat, &rt->given16.t) != 0) {
                rt->given16.st = ST_FAIL;
                b->failures++;
            } else {
                rt->given16.st = ST_OK;
                log_timing(rt, "rnncc, 16-bit weights given", &rt->given16.t);
            }
        }
    }

done:
    if (fatal) {
        printf("*** %s: failed (see the errors above) ***\n", label);
        b->failures++;
        for (int k = 0; k < 2; k++)
            if (rows[k]) {
                for (int i = 0; i < NALGO; i++)
                    if (rows[k]->algo[i].st == ST_NONE) rows[k]->algo[i].st = rows[k]->plain[i].st = ST_FAIL;
                if (rows[k]->rnncc.st == ST_NONE) rows[k]->rnncc.st = ST_FAIL;
            }
    }
    /* anything neither run nor refused did not happen: say so */
    for (int k = 0; k < 2; k++)
        if (rows[k] && rows[k]->rnncc.st == ST_NONE) rows[k]->rnncc.st = m ? ST_FAIL : ST_NA;
    algo_free(&a);
    bench_rnncc_free(&rr);
    rnncc_model_destroy(m);
    dev_free(&df);
    dev_free(&dh);
    out_free(&ref);
    out_free(&got);
    host_free(&h);
    cudaGetLastError(); /* a sticky error would already have been reported */
    print_row_header(stdout);
    for (int k = 0; k < 2; k++)
        if (rows[k]) print_row(stdout, rows[k]);
    fflush(stdout);
    record_case(b, ri, rt);
}

/* ---- JIT compile time: rnncc_model_create against an empty and a filled cache ------------------ */

static void remove_dir(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        char p[1200];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(path);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void measure_jit(Bench *b, const CellDef *cell, const Config *cfg, Prec p, int first_in_process) {
    char file[1024], dI[32], dH0[32], dH1[32];
    snprintf(file, sizeof file, "%s/%s.cell", b->o.cells_dir, cell->name);
    snprintf(dI, sizeof dI, "I=%d", cfg->I);
    /* The cold creations bind H + d0 and H + d1 (multiples of 8 drawn from the clock and the process):
     * sources new to NVRTC, which on the device's CUDA 13 compiles a source it has compiled before, in
     * this process or an earlier one, in ~25 ms instead of ~400 (bench/NOTES.md section 26). */
    unsigned r = (unsigned)time(NULL) * 2654435761u ^ (unsigned)getpid();
    const int d0 = 8 * (1 + (int)(r % 31)), d1 = d0 + 8 * (1 + (int)(r / 31 % 31));
    snprintf(dH0, sizeof dH0, "H=%d", cfg->H + d0);
    snprintf(dH1, sizeof dH1, "H=%d", cfg->H + d1);
    const char *dims0[2] = {dI, dH0}, *dims1[2] = {dI, dH1};
    rnncc_program *prog = NULL;
    double t0 = bench_now();
    rnncc_status s = rnncc_compile_file(file, NULL, &prog);
    double t_parse = bench_now() - t0;
    if (s != RNNCC_OK) {
        fprintf(stderr, "bench_rnn: error: rnncc_compile_file(\"%s\"): %s\n%s", file, rnncc_status_string(s),
                prog ? rnncc_program_log(prog) : "");
        rnncc_program_destroy(prog);
        b->failures++;
        return;
    }
    rnncc_model_desc desc = {.dims = dims0, .ndims = 2, .layers = cfg->layers, .bidirectional = cfg->bidir,
                             .precision = bench_rnncc_precision(p), .device = -1};
    const char *old = getenv("RNNCC_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    char dir1[] = "/tmp/rnncc-bench-cache-XXXXXX", dir2[] = "/tmp/rnncc-bench-cache-XXXXXX";
    double first = NAN, cold = NAN, cached[5];
    int ncached = 0, ok = mkdtemp(dir1) && mkdtemp(dir2);
    if (!ok) fprintf(stderr, "bench_rnn: error: mkdtemp failed: cannot measure the JIT\n");
    for (int run = 0; ok && run < 7; run++) { /* cold at H+d0 (dir1), cold at H+d1 (dir2), cached (dir2) */
        setenv("RNNCC_CACHE_DIR", run == 0 ? dir1 : dir2, 1);
        desc.dims = run == 0 ? dims0 : dims1;
        rnncc_model *m = NULL;
        t0 = bench_now();
        s = rnncc_model_create(prog, &desc, &m);
        double dt = bench_now() - t0;
        if (s != RNNCC_OK) {
            fprintf(stderr, "bench_rnn: error: rnncc_model_create: %s: %s\n", rnncc_status_string(s), m ? rnncc_model_error(m) : "");
            ok = 0;
        } else if (run == 0) first = dt;
        else if (run == 1) cold = dt;
        else cached[ncached++] = dt;
        rnncc_model_destroy(m);
    }
    if (saved) setenv("RNNCC_CACHE_DIR", saved, 1);
    else unsetenv("RNNCC_CACHE_DIR");
    free(saved);
    remove_dir(dir1);
    remove_dir(dir2);
    rnncc_program_destroy(prog);
    if (!ok) {
        b->failures++;
        return;
    }
    qsort(cached, (size_t)ncached, sizeof cached[0], cmp_double);
    double med = cached[ncached / 2];
    char *line = b->jit_lines[b->njit < 4 ? b->njit++ : 3];
    snprintf(line, sizeof b->jit_lines[0],
             "JIT %s (%s shape, %s; H+%d, H+%d: sources new to NVRTC): parse+check %.1f ms; rnncc_model_create: cold "
             "%.0f ms%s, cold %.0f ms, cached %.1f ms (median of %d) [targets: cold < 500 ms %s%s, cached < 10 ms %s]",
             cell->name, cfg->name, prec_names[p], d0, d1, t_parse * 1e3, first * 1e3,
             first_in_process ? " (first in process)" : "", cold * 1e3, med * 1e3, ncached,
             cold < 0.5 && (first_in_process || first < 0.5) ? "met" : "MISSED",
             first_in_process ? (first < 0.5 ? ", first in process met" : ", first in process MISSED") : "",
             med < 0.01 ? "met" : "MISSED");
    printf("%s\n", line);
    fflush(stdout);
}

/* ---- main -------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_rnn [--config NAME]... [--cell lstm|gru]... [--precision fp32|tf32|fp16|bf16|tf32x3]...\n"
            "                 [--algo STD,PS,PD,PSH] [--mode both|inference|training] [--repeat R] [--warmup W]\n"
            "                 [--quick] [--budget SECONDS] [--markdown FILE] [--summary FILE] [--cells-dir DIR]\n"
            "                 [--layout unpacked|packed] [--tf32-math default|tensor_op|allow_conversion]\n"
            "                 [--half-math-prec float|half] [--no-jit] [--seed S] [--input-scale S] [--steps T]\n"
            "Times rnncc against every cuDNN RNN algorithm (v8 C API) on the same weights, inputs and buffers,\n"
            "after checking that their outputs (and gradients) agree. Lists may be comma-separated.\n"
            "Configurations (T, N, I=H):");
    for (int i = 0; i < bench_nconfigs; i++)
        fprintf(f, " %s (%d, %d, %d%s%s)", bench_configs[i].name, bench_configs[i].T, bench_configs[i].N, bench_configs[i].H,
                bench_configs[i].layers > 1 ? ", 2 layers" : "", bench_configs[i].bidir ? ", bidirectional" : "");
    fprintf(f, "; --quick:");
    for (int i = 0; i < bench_nquick; i++) fprintf(f, " %s", bench_quick_configs[i].name);
    fprintf(f, ".\nDefaults: every configuration, lstm and gru, fp32 and tf32, every algorithm, both modes,\n"
               "5 warm-ups and the median of 20 runs. See bench/README.md for every column.\n"
               "Exit status: 0 all agree, 1 a failure or mismatch, 2 usage, 77 no CUDA device.\n");
}

static int parse_num(const char *opt, const char *arg, double lo, double hi, double *out) {
    char *end;
    double v = strtod(arg, &end);
    if (!*arg || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "bench_rnn: error: %s must be a number in %g..%g, not '%s'\n", opt, lo, hi, arg);
        return 0;
    }
    *out = v;
    return 1;
}

/* parse_num for a count: a fraction is refused by name too (it would otherwise be truncated). */
static int parse_whole(const char *opt, const char *arg, double lo, double hi, double *out) {
    if (!parse_num(opt, arg, lo, hi, out)) return 0;
    if (*out != (double)(long long)*out) {
        fprintf(stderr, "bench_rnn: error: %s must be a whole number, not '%s'\n", opt, arg);
        return 0;
    }
    return 1;
}

static int parse_args(int argc, char **argv, Options *o) {
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'}, {"cell", required_argument, 0, 'C'},
        {"precision", required_argument, 0, 'p'}, {"algo", required_argument, 0, 'a'},
        {"mode", required_argument, 0, 'm'}, {"repeat", required_argument, 0, 'r'},
        {"warmup", required_argument, 0, 'w'}, {"quick", no_argument, 0, 'q'},
        {"budget", required_argument, 0, 'B'}, {"markdown", required_argument, 0, 'M'},
        {"summary", required_argument, 0, 'S'}, {"cells-dir", required_argument, 0, 'd'},
        {"layout", required_argument, 0, 'L'}, {"tf32-math", required_argument, 0, 'T'},
        {"half-math-prec", required_argument, 0, 'H'}, {"no-jit", no_argument, 0, 'J'},
        {"seed", required_argument, 0, 's'}, {"input-scale", required_argument, 0, 'X'}, {"steps", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    *o = (Options){.repeat = 20, .warmup = 5, .jit = 1, .cells_dir = "cells", .layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                   .tf32_math = CUDNN_DEFAULT_MATH, .half_math_prec = CUDNN_DATA_FLOAT, .seed = 1, .input_scale = 1, .do_infer = 1, .do_train = 1};
    int algo_given = 0, repeat_given = 0, warmup_given = 0, c;
    double v;
    char *items[64];
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int n = 0;
        if (c == 'c' || c == 'C' || c == 'p' || c == 'a') {
            n = bench_split(optarg, items, 64);
            if (n < 0) { fprintf(stderr, "bench_rnn: error: too many items in '%s'\n", optarg); return 0; }
        }
        switch (c) {
        case 'c':
            if (!bench_add_configs("bench_rnn", items, n, o->configs, &o->nconfigs, MAX_CONFIGS)) return 0;
            break;
        case 'C':
            for (int i = 0; i < n; i++) {
                int k = 0;
                while (k < NCELLS && strcmp(cell_defs[k].name, items[i]) != 0) k++;
                if (k == NCELLS) { fprintf(stderr, "bench_rnn: error: --cell must be lstm or gru, not '%s'\n", items[i]); return 0; }
                int dup = 0;
                for (int j = 0; j < o->ncells; j++) dup |= o->cells[j] == &cell_defs[k];
                if (!dup) o->cells[o->ncells++] = &cell_defs[k];
            }
            break;
        case 'p':
            if (!bench_add_precs("bench_rnn", items, n, o->precs, &o->nprecs)) return 0;
            break;
        case 'a':
            algo_given = 1;
            for (int i = 0; i < n; i++) {
                int k = 0;
                while (k < NALGO && strcmp(algo_short[k], items[i]) != 0 && strcmp(algo_long[k], items[i]) != 0) k++;
                if (k == NALGO) { fprintf(stderr, "bench_rnn: error: --algo takes STD, PS, PD, PSH, not '%s'\n", items[i]); return 0; }
                o->use_algo[k] = 1;
            }
            break;
        case 'm':
            if (strcmp(optarg, "both") == 0) o->do_infer = o->do_train = 1;
            else if (strcmp(optarg, "inference") == 0) { o->do_infer = 1; o->do_train = 0; }
            else if (strcmp(optarg, "training") == 0) { o->do_infer = 0; o->do_train = 1; }
            else { fprintf(stderr, "bench_rnn: error: --mode must be both, inference or training, not '%s'\n", optarg); return 0; }
            break;
        case 'r': if (!parse_whole("--repeat", optarg, 1, 100000, &v)) return 0; o->repeat = (int)v; repeat_given = 1; break;
        case 'w': if (!parse_whole("--warmup", optarg, 0, 10000, &v)) return 0; o->warmup = (int)v; warmup_given = 1; break;
        case 'q': o->quick = 1; break;
        case 'B': if (!parse_num("--budget", optarg, 0, 1e7, &v)) return 0; o->budget_s = v; break;
        case 'M': o->markdown = optarg; break;
        case 'S': o->summary = optarg; break;
        case 'd': o->cells_dir = optarg; break;
        case 'L':
            if (strcmp(optarg, "unpacked") == 0) o->layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
            else if (strcmp(optarg, "packed") == 0) o->layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;
            else { fprintf(stderr, "bench_rnn: error: --layout must be unpacked or packed, not '%s'\n", optarg); return 0; }
            break;
        case 'T':
            if (strcmp(optarg, "default") == 0) o->tf32_math = CUDNN_DEFAULT_MATH;
            else if (strcmp(optarg, "tensor_op") == 0) o->tf32_math = CUDNN_TENSOR_OP_MATH;
            else if (strcmp(optarg, "allow_conversion") == 0) o->tf32_math = CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
            else { fprintf(stderr, "bench_rnn: error: --tf32-math must be default, tensor_op or allow_conversion\n"); return 0; }
            break;
        case 'H':
            if (strcmp(optarg, "float") == 0) o->half_math_prec = CUDNN_DATA_FLOAT;
            else if (strcmp(optarg, "half") == 0) o->half_math_prec = CUDNN_DATA_HALF;
            else { fprintf(stderr, "bench_rnn: error: --half-math-prec must be float or half\n"); return 0; }
            break;
        case 'J': o->jit = 0; break;
        case 's': if (!parse_whole("--seed", optarg, 0, 1e15, &v)) return 0; o->seed = (uint64_t)v; break;
        case 'X': if (!parse_num("--input-scale", optarg, 1e-30, 1e30, &o->input_scale)) return 0; break;
        case 't':
            if (!parse_whole("--steps", optarg, 1, 100000, &v)) return 0;
            o->steps = (int)v;
            break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("bench_rnn (rnncc %s), built against cuDNN %d.%d.%d\n", rnncc_version(), CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL); exit(0);
        default: fprintf(stderr, "bench_rnn: try --help\n"); return 0;
        }
    }
    if (optind != argc) { fprintf(stderr, "bench_rnn: error: unexpected argument '%s'\n", argv[optind]); return 0; }
    if (!o->nconfigs) {
        const Config *list = o->quick ? bench_quick_configs : bench_configs;
        int n = o->quick ? bench_nquick : bench_nconfigs;
        for (int i = 0; i < n; i++) o->configs[o->nconfigs++] = &list[i];
    }
    for (int i = 0; o->steps && i < o->nconfigs; i++) { /* a pass's fixed cost is the intercept over T */
        o->stepped[i] = *o->configs[i];
        o->stepped[i].T = o->steps;
        snprintf(o->stepped_names[i], sizeof o->stepped_names[i], "%s@%d", o->configs[i]->name, o->steps);
        o->stepped[i].name = o->stepped_names[i];
        o->configs[i] = &o->stepped[i];
    }
    if (!o->ncells) { o->cells[0] = &cell_defs[0]; o->cells[1] = &cell_defs[1]; o->ncells = 2; }
    if (!o->nprecs) { o->precs[0] = PREC_FP32; o->precs[1] = PREC_TF32; o->nprecs = 2; }
    if (!algo_given)
        for (int i = 0; i < NALGO; i++) o->use_algo[i] = 1;
    if (o->quick && !repeat_given) o->repeat = 5;
    if (o->quick && !warmup_given) o->warmup = 2;
    return 1;
}

int main(int argc, char **argv) {
    bench_prog = "bench_rnn";
    Bench b;
    memset(&b, 0, sizeof b);
    if (!parse_args(argc, argv, &b.o)) return 2;
    if (!bench_have_gpu("bench_rnn")) return EXIT_SKIP;
    b.t0 = bench_now();
    b.md = bench_open_append(b.o.markdown);
    b.summary = bench_open_append(b.o.summary);

    struct cudaDeviceProp prop;
    int dev = 0, driver = 0, runtime = 0;
    if (!CK_CUDA(cudaGetDevice(&dev)) || !CK_CUDA(cudaGetDeviceProperties(&prop, dev)) || !CK_CUDA(cudaFree(0))) return 1;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    /* a blocking stream: the plain cudaMemset/cudaMemcpy calls (legacy default stream) that poison
     * and fill buffers are ordered with the work on it */
    if (!CK_CUDNN(cudnnCreate(&b.h)) || !CK_CUDA(cudaStreamCreate(&b.stream)) ||
        !CK_CUDNN(cudnnSetStream(b.h, b.stream)))
        return 1;
    size_t drop_bytes = 0;
    if (!CK_CUDNN(cudnnCreateDropoutDescriptor(&b.drop)) || !CK_CUDNN(cudnnDropoutGetStatesSize(b.h, &drop_bytes)) ||
        !CK_CUDA(cudaMalloc(&b.drop_states, drop_bytes ? drop_bytes : 16)) ||
        !CK_CUDNN(cudnnSetDropoutDescriptor(b.drop, b.h, 0.0f, b.drop_states, drop_bytes, 1234)))
        return 1;
    printf("bench_rnn: %s (sm_%d%d, %d SMs), driver %d, CUDA runtime %d; cuDNN %zu (built against %d.%d.%d); rnncc %s\n",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, driver, runtime, cudnnGetVersion(), CUDNN_MAJOR,
           CUDNN_MINOR, CUDNN_PATCHLEVEL, rnncc_version());
    printf("bench_rnn: %d warm-ups, median of %d runs; cuDNN math: fp32 = FMA (no tensor cores), tf32 = %s, fp16/bf16 = "
           "TENSOR_OP with %s math precision; layout %s; backward weights in ADD mode for both libraries\n",
           b.o.warmup, b.o.repeat,
           b.o.tf32_math == CUDNN_DEFAULT_MATH ? "the faster of DEFAULT and TENSOR_OP_ALLOW_CONVERSION (+conv) per algorithm"
           : b.o.tf32_math == CUDNN_TENSOR_OP_MATH ? "the faster of TENSOR_OP and TENSOR_OP_ALLOW_CONVERSION (+conv) per algorithm"
                                                   : "TENSOR_OP_ALLOW_CONVERSION (+conv)",
           b.o.half_math_prec == CUDNN_DATA_FLOAT ? "float" : "half",
           b.o.layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED ? "SEQ_MAJOR_PACKED" : "SEQ_MAJOR_UNPACKED (padded IO)");
    if (b.o.input_scale != 1) printf("bench_rnn: inputs uniform in [-%g, %g] (--input-scale)\n", b.o.input_scale, b.o.input_scale);
    fflush(stdout);

    if (b.o.jit) { /* fp32 for every cell, and fp16 (a unit more: the operand conversions) for the first */
        for (int k = 0; k < b.o.ncells; k++) measure_jit(&b, b.o.cells[k], b.o.configs[0], PREC_FP32, k == 0);
        if (b.o.ncells > 0) measure_jit(&b, b.o.cells[0], b.o.configs[0], PREC_FP16, 0);
    }

    if (b.md) {
        fprintf(b.md, "\n### bench_rnn: %s, cuDNN %zu, rnncc %s, %d warm-ups, median of %d runs (ms per whole sequence)\n\n",
                prop.name, cudnnGetVersion(), rnncc_version(), b.o.warmup, b.o.repeat);
        for (int i = 0; i < b.njit; i++) fprintf(b.md, "- %s\n", b.jit_lines[i]);
        if (b.o.input_scale != 1) fprintf(b.md, "- inputs uniform in [-%g, %g] (--input-scale)\n", b.o.input_scale, b.o.input_scale);
        fprintf(b.md, "\n");
        markdown_header(b.md);
        fflush(b.md);
    }
    if (b.summary) {
        summary_head(&b, b.summary);
        fflush(b.summary);
    }

    /* precision outermost: under a time budget, the last precision is what gets cut */
    for (int pi = 0; pi < b.o.nprecs; pi++)
        for (int ci = 0; ci < b.o.nconfigs; ci++)
            for (int k = 0; k < b.o.ncells; k++) {
                uint64_t seed = b.o.seed * 1000003u + (uint64_t)(ci * 31 + k) * 7919u;
                run_case(&b, b.o.configs[ci], b.o.cells[k], b.o.precs[pi], seed);
            }

    if (b.md) {
        if (b.failures) fprintf(b.md, "\n**bench_rnn: %d failure(s) or mismatch(es): see the log.**\n", b.failures);
        fclose(b.md);
    }
    if (b.summary) {
        if (b.failures) fprintf(b.summary, "bench_rnn: %d FAILURE(S) OR MISMATCH(ES): see the log\n", b.failures);
        fclose(b.summary);
    }
    cudaFree(b.seqlen_dev);
    free(b.seqlen_host);
    cudaFree(b.drop_states);
    cudnnDestroyDropoutDescriptor(b.drop);
    cudnnDestroy(b.h);
    cudaStreamDestroy(b.stream);

    /* the table last: the device tool returns the tail of the output */
    printf("\n== bench_rnn results (ms per whole sequence; n/a = refused or not implemented; err = max|a-b|/max|b| "
           "against the reference, ! = over the bound; TFLOP/s counts 2*flops of every GEMM, training = 3x forward; "
           "%%peak against the measured GEMM ceilings of design/targets.md: fp32 51, tf32 401 TFLOP/s; +conv = cuDNN ran under "
           "TENSOR_OP_MATH_ALLOW_CONVERSION, so may have computed in fp16 from fp32 data; best no-conv, rn/nc = the best "
           "cuDNN without it, and rnncc over that)\n");
    for (int i = 0; i < b.njit; i++) printf("%s\n", b.jit_lines[i]);
    print_row_header(stdout);
    for (int i = 0; i < b.nrows; i++) print_row(stdout, &b.rows[i]);
    if (b.failures) printf("bench_rnn: %d FAILURE(S) OR MISMATCH(ES): see above\n", b.failures);
    free(b.rows);
    return b.failures ? 1 : 0;
}
