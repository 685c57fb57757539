/* Shared pieces of the benchmarks: configurations, checked calls, event timing, random data
 * and an rnncc model's buffers. Key idea: rnncc is driven only through runtime/rnncc.h, as
 * any embedding program would; its backward entry points are weak references, so a library
 * that does not define them yet reports "n/a" instead of failing to link. */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Weak: resolved when librnncc defines them (the Makefile links librnncc whole-archive, so a
 * definition anywhere in it is found), NULL otherwise. */
#pragma weak rnncc_backward_data
#pragma weak rnncc_backward_weights

const char *bench_prog = "bench";

/*                         name           T     N     I     H  layers bidir */
const Config bench_configs[] = {
    {"ds2",          300,  20,  800,  800, 1, 0},
    {"fastrnns",     100,  64,  512,  512, 1, 0},
    {"small_b4",     100,   4, 1024, 1024, 1, 0},
    {"large",        100, 256, 1024, 1024, 1, 0},
    {"deepbench",     25,  32, 1024, 1024, 1, 0},
    {"flashrnn",    1024,  16,  768,  768, 1, 0},
    {"fastrnns_l2",  100,  64,  512,  512, 2, 0},
    {"fastrnns_bi",  100,  64,  512,  512, 1, 1},
};
const int bench_nconfigs = (int)(sizeof bench_configs / sizeof bench_configs[0]);

const Config bench_quick_configs[] = {
    {"quick",     16, 8, 128, 128, 1, 0},
    {"quick_l2",  16, 8, 128, 128, 2, 0},
    {"quick_bi",  16, 8, 128, 128, 1, 1},
};
const int bench_nquick = (int)(sizeof bench_quick_configs / sizeof bench_quick_configs[0]);

const char *const prec_names[NPREC] = {"fp32", "tf32", "fp16", "bf16", "tf32x3"};
const double prec_peak_tflops[NPREC] = {51, 401, 776, 776, 401.0 / 3};

const Config *bench_find_config(const char *name) {
    for (int i = 0; i < bench_nconfigs; i++)
        if (strcmp(bench_configs[i].name, name) == 0) return &bench_configs[i];
    for (int i = 0; i < bench_nquick; i++)
        if (strcmp(bench_quick_configs[i].name, name) == 0) return &bench_quick_configs[i];
    return NULL;
}

/* ---- checked calls ---------------------------------------------------------------------- */

int bench_cuda_ok(cudaError_t e, const char *call, const char *file, int line) {
    if (e == cudaSuccess) return 1;
    fprintf(stderr, "%s: %s:%d: error: %s failed: %s (%s)\n", bench_prog, file, line, call, cudaGetErrorName(e),
            cudaGetErrorString(e));
    return 0;
}

int bench_rnncc_ok(rnncc_status s, const rnncc_model *m, const char *call, const char *file, int line) {
    if (s == RNNCC_OK) return 1;
    fprintf(stderr, "%s: %s:%d: error: %s failed: %s: %s\n", bench_prog, file, line, call, rnncc_status_string(s),
            m ? rnncc_model_error(m) : "");
    return 0;
}

int bench_have_gpu(const char *prog) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        fprintf(stderr, "%s: no CUDA device (%s): nothing to measure\n", prog,
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 0;
    }
    return 1;
}

/* ---- timing ------------------------------------------------------------------------------ */

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int bench_time(BenchFn fn, void *ctx, cudaStream_t stream, int warmup, int reps, Timing *t) {
    memset(t, 0, sizeof *t);
    if (reps < 1) reps = 1;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float *v = calloc((size_t)reps, sizeof *v);
    int rc = -1;
    if (!v) { fprintf(stderr, "%s: error: out of host memory\n", bench_prog); return -1; }
    if (!CK_CUDA(cudaEventCreate(&e0)) || !CK_CUDA(cudaEventCreate(&e1))) goto done;
    for (int i = 0; i < warmup; i++)
        if (fn(ctx, stream) != 0) goto done;
    if (!CK_CUDA(cudaStreamSynchronize(stream))) goto done;
    for (int r = 0; r < reps; r++) {
        if (!CK_CUDA(cudaEventRecord(e0, stream))) goto done;
        if (fn(ctx, stream) != 0) goto done;
        if (!CK_CUDA(cudaEventRecord(e1, stream))) goto done;
        if (!CK_CUDA(cudaEventSynchronize(e1))) goto done;
        if (!CK_CUDA(cudaEventElapsedTime(&v[r], e0, e1))) goto done;
    }
    if (!CK_CUDA(cudaGetLastError())) goto done;
    qsort(v, (size_t)reps, sizeof *v, cmp_float);
    t->median_ms = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
    t->min_ms = v[0];
    t->max_ms = v[reps - 1];
    t->runs = reps;
    rc = 0;
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    free(v);
    return rc;
}

/* ---- random data --------------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

float bench_uniform(uint64_t *state, float k) {
    return (float)(((double)(splitmix(state) >> 11) * 0x1.0p-53 * 2 - 1) * k);
}

void bench_fill(float *v, int64_t n, float k, uint64_t *state) {
    for (int64_t i = 0; i < n; i++) v[i] = bench_uniform(state, k);
}

double bench_rel_err(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) return INFINITY;
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > num) num = d;
        if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
    }
    return den > 0 ? num / den : num;
}

int64_t bench_count_nonfinite(const float *v, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !isfinite(v[i]);
    return bad;
}

/* ---- rnncc ---------------------------------------------------------------------------------- */

rnncc_model *bench_model_create(const char *file, const char *cell, const char *const *dims, int ndims, int layers,
                                int bidir, rnncc_precision prec, rnncc_fold fold, int keep) {
    rnncc_program *prog = NULL;
    rnncc_status s = rnncc_compile_file(file, NULL, &prog);
    if (s != RNNCC_OK) {
        fprintf(stderr, "%s: error: rnncc_compile_file(\"%s\") failed: %s\n%s", bench_prog, file, rnncc_status_string(s),
                prog ? rnncc_program_log(prog) : "");
        rnncc_program_destroy(prog);
        return NULL;
    }
    rnncc_model_desc desc = {.cell = cell, .dims = dims, .ndims = ndims, .layers = layers, .bidirectional = bidir,
                             .precision = prec, .device = -1, .fold = fold, .keep_derived_weights = keep};
    rnncc_model *m = NULL;
    s = rnncc_model_create(prog, &desc, &m);
    rnncc_program_destroy(prog);
    if (s != RNNCC_OK) {
        fprintf(stderr, "%s: error: rnncc_model_create(%s", bench_prog, file);
        for (int i = 0; i < ndims; i++) fprintf(stderr, " %s", dims[i]);
        fprintf(stderr, " layers=%d bidirectional=%d) failed: %s: %s\n", layers, bidir, rnncc_status_string(s),
                m ? rnncc_model_error(m) : "");
        rnncc_model_destroy(m);
        return NULL;
    }
    return m;
}

static int dev_alloc(RnnccRun *r, float **p, int64_t floats) {
    if (*p) return 1; /* the caller's buffer */
    if (r->nowned == (int)(sizeof r->owned / sizeof r->owned[0])) {
        fprintf(stderr, "%s: error: too many buffers\n", bench_prog);
        return 0;
    }
    if (!CK_CUDA(cudaMalloc((void **)p, (size_t)(floats > 0 ? floats : 1) * sizeof(float)))) return 0;
    r->owned[r->nowned++] = *p;
    return 1;
}

static int dev_alloc_bytes(RnnccRun *r, void **p, size_t bytes) {
    if (r->nowned == (int)(sizeof r->owned / sizeof r->owned[0])) {
        fprintf(stderr, "%s: error: too many buffers\n", bench_prog);
        return 0;
    }
    if (!CK_CUDA(cudaMalloc(p, bytes ? bytes : 16))) return 0;
    r->owned[r->nowned++] = *p;
    return 1;
}

int bench_rnncc_alloc(RnnccRun *r, rnncc_model *m, int64_t T, int64_t N, int want_training) {
    r->m = m;
    r->T = T;
    r->N = N;
    if (!CK_RNNCC(m, rnncc_model_get_sizes(m, &r->sz))) return -1;
    if (r->sz.nstates > 8 || r->sz.noutputs < 1) {
        fprintf(stderr, "%s: error: the cell has %d states and %d outputs; the bench handles 1..8 states and >= 1 output\n",
                bench_prog, r->sz.nstates, r->sz.noutputs);
        return -1;
    }
    /* units = layers * directions, read off the parameter list */
    int np = rnncc_model_param_count(m), maxlayer = 0, maxdir = 0;
    for (int i = 0; i < np; i++) {
        rnncc_param_info info;
        if (!CK_RNNCC(m, rnncc_model_param_info(m, i, &info))) return -1;
        if (info.layer > maxlayer) maxlayer = info.layer;
        if (info.direction > maxdir) maxdir = info.direction;
    }
    r->units = (maxlayer + 1) * (maxdir + 1);
    int64_t x_n = T * N * r->sz.input, y_n = T * N * r->sz.output;
    if (!dev_alloc(r, &r->x, x_n) || !dev_alloc(r, &r->y, y_n)) return -1;
    for (int q = 0; q < r->sz.nstates; q++) {
        int64_t n = (int64_t)r->units * N * r->sz.state_size[q];
        if (!dev_alloc(r, &r->h0[q], n) || !dev_alloc(r, &r->hT[q], n)) return -1;
    }
    size_t ws_inf = 0, ws_train = 0;
    if (!CK_RNNCC(m, rnncc_workspace_size(m, T, N, 0, &ws_inf))) return -1;
    r->ws_bytes = ws_inf;
    r->training = 0;
    if (want_training) {
        rnncc_status s1 = rnncc_workspace_size(m, T, N, 1, &ws_train);
        rnncc_status s2 = s1 == RNNCC_OK ? rnncc_reserve_size(m, T, N, &r->reserve_bytes) : s1;
        if (s2 == RNNCC_ERR_UNSUPPORTED) {
            snprintf(r->why_no_training, sizeof r->why_no_training, "%s", rnncc_model_error(m));
        } else if (!CK_RNNCC(m, s2)) {
            return -1;
        } else {
            r->training = 1;
            if (ws_train > r->ws_bytes) r->ws_bytes = ws_train;
            float *w = rnncc_model_weights(m, &r->nweights);
            if (!w || r->nweights <= 0) {
                fprintf(stderr, "%s: error: rnncc_model_weights returned no weights: %s\n", bench_prog, rnncc_model_error(m));
                return -1;
            }
            if (!dev_alloc(r, &r->dweights, r->nweights) || !dev_alloc(r, &r->dy, y_n) || !dev_alloc(r, &r->dx, x_n))
                return -1;
            if (!dev_alloc_bytes(r, &r->reserve, r->reserve_bytes)) return -1;
            for (int q = 0; q < r->sz.nstates; q++) {
                int64_t n = (int64_t)r->units * N * r->sz.state_size[q];
                if (!dev_alloc(r, &r->dhT[q], n) || !dev_alloc(r, &r->dh0[q], n)) return -1;
            }
            if (!CK_CUDA(cudaMemset(r->dweights, 0, (size_t)r->nweights * sizeof(float)))) return -1;
        }
    }
    if (!dev_alloc_bytes(r, &r->ws, r->ws_bytes)) return -1;
    return 0;
}

void bench_rnncc_free(RnnccRun *r) {
    for (int i = 0; i < r->nowned; i++) cudaFree(r->owned[i]);
    r->nowned = 0;
}

/* Uploads n random floats to dev. */
static int upload_random(float *dev, int64_t n, float k, uint64_t *seed) {
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!h) { fprintf(stderr, "%s: error: out of host memory\n", bench_prog); return 0; }
    bench_fill(h, n, k, seed);
    int ok = CK_CUDA(cudaMemcpy(dev, h, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return ok;
}

static int owned(const RnnccRun *r, const void *p) {
    for (int i = 0; i < r->nowned; i++)
        if (r->owned[i] == p) return 1;
    return 0;
}

int bench_rnncc_random_inputs(RnnccRun *r, uint64_t *seed) {
    int64_t T = r->T, N = r->N;
    if (owned(r, r->x) && !upload_random(r->x, T * N * r->sz.input, 1, seed)) return -1;
    for (int q = 0; q < r->sz.nstates; q++) {
        int64_t n = (int64_t)r->units * N * r->sz.state_size[q];
        if (owned(r, r->h0[q]) && !upload_random(r->h0[q], n, 1, seed)) return -1;
        if (r->training && owned(r, r->dhT[q]) && !upload_random(r->dhT[q], n, 1, seed)) return -1;
    }
    if (r->training && owned(r, r->dy) && !upload_random(r->dy, T * N * r->sz.output, 1, seed)) return -1;
    return 0;
}

int bench_rnncc_random_params(rnncc_model *m, float k, uint64_t *seed) {
    int np = rnncc_model_param_count(m);
    for (int i = 0; i < np; i++) {
        rnncc_param_info info;
        if (!CK_RNNCC(m, rnncc_model_param_info(m, i, &info))) return -1;
        int64_t n = info.rows * info.cols;
        float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (!h) { fprintf(stderr, "%s: error: out of host memory\n", bench_prog); return -1; }
        bench_fill(h, n, k, seed);
        int ok = CK_RNNCC(m, rnncc_model_set_param(m, info.name, info.layer, info.direction, h, n));
        free(h);
        if (!ok) return -1;
    }
    return 0;
}

static rnncc_io make_io(const RnnccRun *r, float **ys, const float **h0) {
    for (int o = 0; o < 8; o++) ys[o] = NULL;
    ys[0] = r->y;
    for (int q = 0; q < 8; q++) h0[q] = q < r->sz.nstates ? r->h0[q] : NULL;
    return (rnncc_io){.T = r->T, .N = r->N, .x = r->x, .y = ys, .lengths = NULL, .h0 = h0, .hT = r->hT};
}

static rnncc_grad_io make_grad_io(const RnnccRun *r, const float **dys, const float **dhT) {
    for (int o = 0; o < 8; o++) dys[o] = NULL;
    dys[0] = r->dy;
    for (int q = 0; q < 8; q++) dhT[q] = q < r->sz.nstates ? r->dhT[q] : NULL;
    return (rnncc_grad_io){.T = r->T, .N = r->N, .lengths = NULL, .x = r->x, .dy = dys, .dhT = dhT, .dx = r->dx,
                           .dh0 = r->dh0};
}

int bench_rnncc_infer(void *ctx, cudaStream_t stream) {
    RnnccRun *r = ctx;
    float *ys[8];
    const float *h0[8];
    rnncc_io io = make_io(r, ys, h0);
    return CK_RNNCC(r->m, rnncc_forward(r->m, &io, r->ws, r->ws_bytes, NULL, 0, stream)) ? 0 : -1;
}

int bench_rnncc_train(void *ctx, cudaStream_t stream) {
    RnnccRun *r = ctx;
    float *ys[8];
    const float *h0[8], *dys[8], *dhT[8];
    rnncc_io io = make_io(r, ys, h0);
    rnncc_grad_io g = make_grad_io(r, dys, dhT);
    if (!r->training || !rnncc_backward_data || !rnncc_backward_weights) {
        fprintf(stderr, "%s: error: rnncc training called without training support\n", bench_prog);
        return -1;
    }
    if (!CK_RNNCC(r->m, rnncc_forward(r->m, &io, r->ws, r->ws_bytes, r->reserve, r->reserve_bytes, stream))) return -1;
    if (!CK_RNNCC(r->m, rnncc_backward_data(r->m, &g, r->ws, r->ws_bytes, r->reserve, r->reserve_bytes, stream))) return -1;
    if (!CK_RNNCC(r->m, rnncc_backward_weights(r->m, &g, r->dweights, RNNCC_WGRAD_ADD, r->ws, r->ws_bytes, r->reserve,
                                               r->reserve_bytes, stream)))
        return -1;
    return 0;
}

int bench_rnncc_probe_training(RnnccRun *r, cudaStream_t stream) {
    if (!r->training) {
        if (!r->why_no_training[0]) snprintf(r->why_no_training, sizeof r->why_no_training, "training buffers not allocated");
        return 0;
    }
    if (!rnncc_backward_data || !rnncc_backward_weights) {
        snprintf(r->why_no_training, sizeof r->why_no_training,
                 "this librnncc does not define rnncc_backward_data/rnncc_backward_weights yet");
        r->training = 0;
        return 0;
    }
    float *ys[8];
    const float *h0[8], *dys[8], *dhT[8];
    rnncc_io io = make_io(r, ys, h0);
    rnncc_grad_io g = make_grad_io(r, dys, dhT);
    rnncc_status s = rnncc_forward(r->m, &io, r->ws, r->ws_bytes, r->reserve, r->reserve_bytes, stream);
    if (s == RNNCC_OK) s = rnncc_backward_data(r->m, &g, r->ws, r->ws_bytes, r->reserve, r->reserve_bytes, stream);
    if (s == RNNCC_OK)
        s = rnncc_backward_weights(r->m, &g, r->dweights, RNNCC_WGRAD_ADD, r->ws, r->ws_bytes, r->reserve,
                                   r->reserve_bytes, stream);
    if (s == RNNCC_ERR_UNSUPPORTED) {
        snprintf(r->why_no_training, sizeof r->why_no_training, "RNNCC_ERR_UNSUPPORTED: %s", rnncc_model_error(r->m));
        r->training = 0;
        return 0;
    }
    if (!CK_RNNCC(r->m, s)) return -1;
    if (!CK_CUDA(cudaStreamSynchronize(stream))) return -1;
    return 1;
}

/* ---- output files ------------------------------------------------------------------------------ */

FILE *bench_open_append(const char *path) {
    if (!path) return NULL;
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "%s: error: cannot open '%s' for appending: %s\n", bench_prog, path, strerror(errno));
        exit(1);
    }
    return f;
}

int bench_split(char *s, char **items, int max) {
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok) continue;
        if (n == max) return -1;
        items[n++] = tok;
    }
    return n;
}

int bench_add_configs(const char *prog, char **items, int n, const Config **configs, int *count, int max) {
    for (int i = 0; i < n; i++) {
        const Config *cfg = bench_find_config(items[i]);
        if (!cfg) { fprintf(stderr, "%s: error: unknown configuration '%s' (see --help)\n", prog, items[i]); return 0; }
        if (*count == max) { fprintf(stderr, "%s: error: too many configurations\n", prog); return 0; }
        configs[(*count)++] = cfg;
    }
    return 1;
}

int bench_add_precs(const char *prog, char **items, int n, Prec *precs, int *count) {
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < NPREC && strcmp(prec_names[k], items[i]) != 0) k++;
        if (k == NPREC) {
            fprintf(stderr, "%s: error: --precision must be fp32, tf32, fp16, bf16 or tf32x3, not '%s'\n", prog, items[i]);
            return 0;
        }
        int dup = 0;
        for (int j = 0; j < *count; j++) dup |= precs[j] == (Prec)k;
        if (!dup) precs[(*count)++] = (Prec)k;
    }
    return 1;
}

rnncc_precision bench_rnncc_precision(Prec p) {
    static const rnncc_precision map[NPREC] = {RNNCC_FP32, RNNCC_TF32, RNNCC_FP16, RNNCC_BF16, RNNCC_TF32X3};
    return map[p];
}
