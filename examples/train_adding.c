/* train_adding: an example that learns. It trains a shipped cell (cells/lstm.cell, or
 * cells/gru.cell) and a linear readout on the adding problem of Hochreiter and Schmidhuber
 * (1997) with rnncc's training API: a forward with a reserve, rnncc_backward_data,
 * rnncc_backward_weights, then Adam on the host over the packed weight buffer. Key idea: the
 * GPU runs only the recurrence; data, readout, loss and optimiser are plain C, so this file
 * is a template for training any cell with rnncc.
 *
 *   make examples && ./build/examples/train_adding [--cell lstm|gru] [--iters N] [--precision P] [CELL_FILE]
 *
 * --precision fp16 or bf16 trains with the GEMMs' inputs in 16 bits, as cuDNN's fp16 training does, and keeps
 * the 16-bit weights as cuDNN's callers do: Adam writes each updated weight in fp32 (the master copy, of which
 * the model reads the biases) and rounded to 16 bits into the model's 16-bit copy (rnncc_model_weights16), so
 * the model rounds no weights a pass.
 *
 * The problem: each sequence has T steps of two inputs, a value uniform in [0, 1) and a
 * marker that is 1 at exactly two steps (one in each half) and 0 elsewhere; the target is
 * the sum of the two marked values. Always predicting the mean, 1, scores a mean squared
 * error of 1/6 (the variance of a sum of two uniforms); a model that learned scores far less.
 *
 * Exit status: 0 when the mean loss of the last 20 batches is below LOSS_BOUND; 1 on any
 * error, or when the loss stays above the bound; 2 on bad arguments; 77 (the conventional
 * "skipped") when there is no CUDA device (the cell still compiles first). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rnncc.h"

/* The model: the cell with I = 2 inputs and H = 32 hidden units, one layer, strict fp32;
 * then pred = w . h_T + b on the host. Batches of N sequences of T steps. */
enum { I = 2, H = 32, N = 64, T = 30 };
enum { EXIT_USAGE = 2, EXIT_SKIP = 77 };
enum { DEFAULT_ITERS = 2000, MAX_ITERS = 1000000, PRINT_EVERY = 50, FINAL_WINDOW = 20 };
static const double LOSS_BOUND = 0.01;   /* the mean of the last FINAL_WINDOW losses must be below */
static const double BASELINE = 1.0 / 6;  /* the loss of always predicting 1 */

/* x rounded to the nearest fp16 (ties to even; subnormals, overflow to infinity, NaN quiet): its bits. */
static uint16_t round_fp16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;      /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;     /* rounds past 65504: infinity */
    if (a < 0x38800000u) {                           /* below 2^-14: a subnormal (or zero), in units of 2^-24 */
        float f;
        memcpy(&f, &a, sizeof f);
        return sign | (uint16_t)lrintf(f * 0x1p24f); /* exact scaling; lrintf rounds ties to even */
    }
    const uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* ties to even at bit 13 */
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

/* x rounded to the nearest bf16 (ties to even; NaN quiet): its bits. */
static uint16_t round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Adam (Kingma and Ba 2015) with its usual constants, and a step size for a small model. */
static const double LR = 1e-2, BETA1 = 0.9, BETA2 = 0.999, ADAM_EPS = 1e-8;

/* Fixed seeds: every run draws the same initial weights and the same batches. */
static const uint64_t INIT_SEED = 20240601, DATA_SEED = 19970101;

/* ---- random numbers: splitmix64 (Steele, Lea and Flood 2014), one state per stream ----------- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1): the top 24 bits, so every value is an exact float. */
static float rng_unit(uint64_t *s) { return (float)(rng_next(s) >> 40) * 0x1.0p-24f; }
/* Uniform in [-k, k). */
static float rng_uniform(uint64_t *s, float k) { return (2 * rng_unit(s) - 1) * k; }
/* Uniform integer in 0..n-1 (n small: the bias of the multiply-shift is below 2^-27). */
static int rng_below(uint64_t *s, int n) { return (int)(((rng_next(s) >> 32) * (uint64_t)n) >> 32); }

/* ---- the data ------------------------------------------------------------------------------- */

/* One batch: x [T][N][I] (channel 0 the value, channel 1 the marker) and target [N]. The first
 * marker falls in steps 0 .. T/2-1, the second in T/2 .. T-1. */
static void make_batch(uint64_t *rng, float *x, float *target) {
    for (int n = 0; n < N; n++) {
        int first = rng_below(rng, T / 2), second = T / 2 + rng_below(rng, T - T / 2);
        double sum = 0;
        for (int t = 0; t < T; t++) {
            float *xt = x + (size_t)(t * N + n) * I;
            xt[0] = rng_unit(rng);
            xt[1] = t == first || t == second ? 1.0f : 0.0f;
            if (t == first || t == second) sum += xt[0];
        }
        target[n] = (float)sum;
    }
}

/* ---- the readout and the loss (host) -------------------------------------------------------- */

/* head holds the readout: w = head[0 .. H-1], b = head[H]. For h [N][H] (the cell's final
 * state) returns the mean squared error L = (1/N) sum_n (pred[n] - target[n])^2 with
 * pred[n] = w . h[n] + b. With dh and dhead non-NULL also the gradients: writing
 * e[n] = dL/dpred[n] = 2 (pred[n] - target[n]) / N,
 *   dL/dh[n][j] = e[n] w[j]   (what the GPU's backward takes as dhT),
 *   dL/dw[j] = sum_n e[n] h[n][j],   dL/db = sum_n e[n]. */
static double readout(const float *h, const float *head, const float *target, float *dh, float *dhead) {
    double loss = 0, dw[H] = {0}, db = 0;
    for (int n = 0; n < N; n++) {
        double pred = head[H];
        for (int j = 0; j < H; j++) pred += (double)head[j] * h[n * H + j];
        double diff = pred - target[n], e = 2 * diff / N;
        loss += diff * diff / N;
        if (!dh) continue;
        for (int j = 0; j < H; j++) {
            dh[n * H + j] = (float)(e * head[j]);
            dw[j] += e * h[n * H + j];
        }
        db += e;
    }
    if (dhead) {
        for (int j = 0; j < H; j++) dhead[j] = (float)dw[j];
        dhead[H] = (float)db;
    }
    return loss;
}

/* The largest disagreement between g[k] and the central difference of the loss in v[k]
 * (k < count), v being h or head (a copy is perturbed, the caller's stays as it was). */
static double worst_difference(float *v, int count, const float *g, const float *h, const float *head,
                               const float *target) {
    double worst = 0;
    for (int k = 0; k < count; k++) {
        float keep = v[k];
        float plus = keep + 0x1.0p-10f, minus = keep - 0x1.0p-10f;
        v[k] = plus;
        double lp = readout(h, head, target, NULL, NULL);
        v[k] = minus;
        double lm = readout(h, head, target, NULL, NULL);
        v[k] = keep;
        double fd = (lp - lm) / ((double)plus - (double)minus);
        double err = fabs(fd - g[k]) / (1e-7 + 1e-6 * fabs(fd));  /* > 1: out of tolerance */
        if (!(err <= worst)) worst = err;                          /* NaN wins */
    }
    return worst;
}

/* Checks every gradient readout() returns (dL/dh, dL/dw, dL/db) against central differences
 * of its own loss. The loss is quadratic in each single value, so a central difference is
 * exact but for rounding (about 1e-13 here): a miss beyond 1e-7 + 1e-6 |g| is a wrong formula,
 * a sign or a factor 2 or 1/N. The GPU's own gradients are checked by the test suite. */
static int check_readout_gradient(const float *h, const float *head, const float *target) {
    float hcopy[N * H], dh[N * H], headcopy[H + 1], dhead[H + 1];
    memcpy(hcopy, h, sizeof hcopy);
    memcpy(headcopy, head, sizeof headcopy);
    readout(h, head, target, dh, dhead);
    double eh = worst_difference(hcopy, N * H, dh, hcopy, head, target);
    double ehead = worst_difference(headcopy, H + 1, dhead, h, headcopy, target);
    printf("readout gradient vs central differences: worst error / tolerance: dh %.2g, dw and db %.2g\n", eh, ehead);
    return eh <= 1 && ehead <= 1;
}

/* ---- the weights and the optimiser (host) --------------------------------------------------- */

/* Every parameter uniform in [-1/sqrt(H), 1/sqrt(H)) (PyTorch's default), drawn in the order of
 * rnncc_model_param_info so that the values do not depend on how the buffer is packed (its
 * padding stays 0); then the forget-gate bias b_f, where the cell has one, set to 1 (Gers et al.
 * 2000): the cell starts out remembering. w is the packed buffer, zeroed by the caller. */
static void init_weights(const rnncc_param_info *info, int count, float *w, uint64_t *rng) {
    const float k = 1 / sqrtf((float)H);
    for (int p = 0; p < count; p++)
        for (int64_t e = 0; e < info[p].rows * info[p].cols; e++) w[info[p].offset + e] = rng_uniform(rng, k);
    for (int p = 0; p < count; p++)
        if (strcmp(info[p].name, "b_f") == 0)
            for (int64_t e = 0; e < info[p].rows * info[p].cols; e++) w[info[p].offset + e] = 1;
}

/* One Adam step over n values: p -= LR * mhat / (sqrt(vhat) + eps), with m and v the running
 * means of g and g^2 and mhat, vhat those corrected for starting at 0. step counts from 1. */
static void adam_step(float *p, const float *g, double *m, double *v, int64_t n, int step) {
    double c1 = 1 - pow(BETA1, step), c2 = 1 - pow(BETA2, step);
    for (int64_t i = 0; i < n; i++) {
        m[i] = BETA1 * m[i] + (1 - BETA1) * g[i];
        v[i] = BETA2 * v[i] + (1 - BETA2) * (double)g[i] * g[i];
        p[i] -= (float)(LR * (m[i] / c1) / (sqrt(v[i] / c2) + ADAM_EPS));
    }
}

static int all_finite(const float *v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static double seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the program ---------------------------------------------------------------------------- */

static void on_diagnostic(void *user, const char *level, const char *text) {
    (void)user;
    (void)level;
    fputs(text, stderr);
}

static int usage(FILE *to) {
    fprintf(to, "usage: train_adding [--cell lstm|gru] [--iters N] [--precision fp32|fp16|bf16] [CELL_FILE]\n"
                "  trains CELL_FILE (default cells/lstm.cell; --cell gru: cells/gru.cell) with I=%d, H=%d\n"
                "  on the adding problem (T=%d, batches of %d) for N iterations (default %d), in strict fp32\n"
                "  or with 16-bit GEMM inputs, Adam writing the model's 16-bit weights too (default fp32)\n",
            I, H, T, N, DEFAULT_ITERS);
    return EXIT_USAGE;
}

/* Error checks: say which call failed and why (the model's message names the argument or the
 * CUDA call), then clean up. */
#define CHECK_RNNCC(call)                                                                         \
    do {                                                                                          \
        rnncc_status s_ = (call);                                                                 \
        if (s_ != RNNCC_OK) {                                                                     \
            fprintf(stderr, "train_adding: %s failed: %s: %s\n", #call, rnncc_status_string(s_),  \
                    rnncc_model_error(model));                                                    \
            goto done;                                                                            \
        }                                                                                         \
    } while (0)
#define CHECK_CUDA(call)                                                                          \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "train_adding: %s failed: %s (%s)\n", #call, cudaGetErrorString(e_),  \
                    cudaGetErrorName(e_));                                                        \
            goto done;                                                                            \
        }                                                                                         \
    } while (0)
#define CHECK_ALLOC(p)                                                                            \
    do {                                                                                          \
        if (!(p)) {                                                                               \
            fprintf(stderr, "train_adding: out of host memory\n");                                \
            goto done;                                                                            \
        }                                                                                         \
    } while (0)

int main(int argc, char **argv) {
    /* Arguments. */
    const char *path = NULL, *cell = NULL;
    long iters = DEFAULT_ITERS;
    rnncc_precision precision = RNNCC_FP32;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--cell") == 0 && a + 1 < argc) {
            cell = argv[++a];
            if (strcmp(cell, "lstm") != 0 && strcmp(cell, "gru") != 0) {
                fprintf(stderr, "train_adding: --cell must be lstm or gru, not '%s'\n", cell);
                return usage(stderr);
            }
        } else if (strcmp(argv[a], "--iters") == 0 && a + 1 < argc) {
            char *end;
            iters = strtol(argv[++a], &end, 10);
            if (*argv[a] == 0 || *end != 0 || iters < 1 || iters > MAX_ITERS) {
                fprintf(stderr, "train_adding: --iters must be an integer in 1..%d, not '%s'\n", MAX_ITERS, argv[a]);
                return usage(stderr);
            }
        } else if (strcmp(argv[a], "--precision") == 0 && a + 1 < argc) {
            const char *v = argv[++a];
            if (strcmp(v, "fp32") == 0) precision = RNNCC_FP32;
            else if (strcmp(v, "fp16") == 0) precision = RNNCC_FP16;
            else if (strcmp(v, "bf16") == 0) precision = RNNCC_BF16;
            else {
                fprintf(stderr, "train_adding: --precision must be fp32, fp16 or bf16, not '%s'\n", v);
                return usage(stderr);
            }
        } else if (strcmp(argv[a], "--cell") == 0 || strcmp(argv[a], "--iters") == 0 ||
                   strcmp(argv[a], "--precision") == 0) {
            fprintf(stderr, "train_adding: %s needs a value\n", argv[a]);
            return usage(stderr);
        } else if (argv[a][0] == '-' && argv[a][1] != 0) {
            fprintf(stderr, "train_adding: unknown option '%s'\n", argv[a]);
            return usage(stderr);
        } else if (!path) {
            path = argv[a];
        } else {
            fprintf(stderr, "train_adding: one cell file at most ('%s' and '%s')\n", path, argv[a]);
            return usage(stderr);
        }
    }
    if (cell && path) {
        fprintf(stderr, "train_adding: give --cell or a cell file, not both\n");
        return usage(stderr);
    }
    if (!path) path = cell && strcmp(cell, "gru") == 0 ? "cells/gru.cell" : "cells/lstm.cell";

    int status = 1;
    rnncc_program *program = NULL;
    rnncc_model *model = NULL;
    rnncc_param_info *info = NULL;
    float *weights = NULL, *dweights = NULL;           /* host copies of the packed buffer */
    uint16_t *weights16 = NULL;                         /* in fp16 and bf16: the weights rounded, host side */
    double *m_w = NULL, *v_w = NULL, *losses = NULL;    /* Adam's moments of the weights */
    float *d_x = NULL, *d_y = NULL, *d_hT = NULL, *d_dhT = NULL, *d_dweights = NULL;
    void *d_workspace = NULL, *d_reserve = NULL;
    static float x[T * N * I], target[N], hT[N * H], dhT[N * H], y_last[N * H];
    float head[H + 1], dhead[H + 1];                    /* the readout w, b and its gradient */
    double m_head[H + 1] = {0}, v_head[H + 1] = {0};    /* Adam's moments of the readout */

    /* 1. Compile the cell file (no GPU needed: a machine without one still checks it). */
    rnncc_compile_options options = {on_diagnostic, NULL};
    rnncc_status s = rnncc_compile_file(path, &options, &program);
    if (s != RNNCC_OK) {
        fprintf(stderr, "train_adding: %s: %s\n", path,
                s == RNNCC_ERR_NOT_FOUND ? "cannot read the file" : rnncc_status_string(s));
        goto done;
    }
    printf("compiled %s (rnncc %s)\n", path, rnncc_version());

    /* 2. The model: I = 2, H = 32, one layer, one direction, in the precision asked for (strict fp32 unless told). */
    const char *dims[] = {"I=2", "H=32"};
    rnncc_model_desc desc = {.cell = NULL, .dims = dims, .ndims = 2, .layers = 1, .bidirectional = 0,
                             .precision = precision, .device = -1};
    s = rnncc_model_create(program, &desc, &model);
    if (s == RNNCC_ERR_NO_GPU) {
        printf("train_adding: SKIPPED: %s; the cell compiled, but training needs a GPU\n",
               rnncc_model_error(model));
        status = EXIT_SKIP;
        goto done;
    }
    CHECK_RNNCC(s);

    /* The readout reads the cell's state 0 and sends dL/dh_T back through dhT[0]. The API
     * numbers states in declaration order but does not name them; lstm.cell and gru.cell
     * both declare h first (`state h[H], c[H]`, `state h[H]`) and output h. Checked here by
     * size and below, on the first batch, by value: state 0's final value must equal the
     * cell's output at the last step. */
    rnncc_model_sizes sizes;
    CHECK_RNNCC(rnncc_model_get_sizes(model, &sizes));
    if (sizes.input != I || sizes.output != H || sizes.nstates < 1 || sizes.state_size[0] != H) {
        fprintf(stderr, "train_adding: %s: this example needs a cell with input size I, output h of size H and h "
                        "as its first state; this one has input %lld, output %lld, %d states, the first of size %lld\n",
                path, (long long)sizes.input, (long long)sizes.output, sizes.nstates,
                (long long)(sizes.nstates > 0 ? sizes.state_size[0] : 0));
        goto done;
    }

    /* 3. Initial weights, on the host, into a copy of the packed buffer; then one copy to the GPU. */
    int64_t nweights = 0;
    float *d_weights = rnncc_model_weights(model, &nweights);
    int nparams = rnncc_model_param_count(model);
    CHECK_ALLOC(info = calloc((size_t)nparams + 1, sizeof *info));
    for (int p = 0; p < nparams; p++) {
        CHECK_RNNCC(rnncc_model_param_info(model, p, &info[p]));
        if (info[p].offset < 0 || info[p].offset + info[p].rows * info[p].cols > nweights) {
            fprintf(stderr, "train_adding: parameter %s lies outside the weight buffer\n", info[p].name);
            goto done;
        }
    }
    CHECK_ALLOC(weights = calloc((size_t)nweights + 1, sizeof *weights));
    CHECK_ALLOC(dweights = calloc((size_t)nweights + 1, sizeof *dweights));
    CHECK_ALLOC(m_w = calloc((size_t)nweights + 1, sizeof *m_w));
    CHECK_ALLOC(v_w = calloc((size_t)nweights + 1, sizeof *v_w));
    CHECK_ALLOC(losses = calloc((size_t)iters, sizeof *losses));
    uint64_t init_rng = INIT_SEED, data_rng = DATA_SEED;
    init_weights(info, nparams, weights, &init_rng);
    for (int j = 0; j < H; j++) head[j] = rng_uniform(&init_rng, 1 / sqrtf((float)H));
    head[H] = 0;
    CHECK_CUDA(cudaMemcpy(d_weights, weights, (size_t)nweights * sizeof(float), cudaMemcpyHostToDevice));
    /* In fp16 and bf16 the model multiplies by 16-bit weights: its own copy, which it rounds from these once here
     * and which Adam writes from then on (below), as a cuDNN caller's optimizer writes the 16-bit weights. */
    uint16_t *d_weights16 = NULL;
    uint16_t (*round16)(float) = precision == RNNCC_BF16 ? round_bf16 : round_fp16;
    if (precision != RNNCC_FP32) {
        int64_t n16 = 0;
        CHECK_RNNCC(rnncc_model_weights16(model, &d_weights16, &n16));
        CHECK_ALLOC(weights16 = calloc((size_t)nweights + 1, sizeof *weights16));
        CHECK_CUDA(cudaMemcpy(weights16, d_weights16, (size_t)n16 * sizeof *weights16, cudaMemcpyDeviceToHost));
        for (int64_t k = 0; k < nweights; k++) /* the model's rounding is this file's */
            if (weights16[k] != round16(weights[k])) {
                fprintf(stderr, "train_adding: FAILED: the model's 16-bit weight %lld is %#x, not %#x (%a rounded)\n",
                        (long long)k, weights16[k], round16(weights[k]), (double)weights[k]);
                goto done;
            }
    }
    int has_bf = 0;
    for (int p = 0; p < nparams; p++) has_bf |= strcmp(info[p].name, "b_f") == 0;
    printf("model: %d parameter tensors, %lld floats packed%s; readout %d + 1\n", nparams, (long long)nweights,
           has_bf ? " (forget-gate bias b_f = 1)" : "", H);

    /* 4. Device buffers, sized once: the graph the forward captures is replayed while they stay. */
    CHECK_CUDA(cudaMalloc((void **)&d_x, sizeof x));
    CHECK_CUDA(cudaMalloc((void **)&d_y, (size_t)T * N * H * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_hT, sizeof hT));
    CHECK_CUDA(cudaMalloc((void **)&d_dhT, sizeof dhT));
    CHECK_CUDA(cudaMalloc((void **)&d_dweights, (size_t)nweights * sizeof(float)));
    size_t workspace_bytes = 0, reserve_bytes = 0;
    CHECK_RNNCC(rnncc_workspace_size(model, T, N, /*training=*/1, &workspace_bytes));
    CHECK_RNNCC(rnncc_reserve_size(model, T, N, &reserve_bytes));
    if (workspace_bytes) CHECK_CUDA(cudaMalloc(&d_workspace, workspace_bytes));
    CHECK_CUDA(cudaMalloc(&d_reserve, reserve_bytes ? reserve_bytes : 1));

    float *outputs[8] = {d_y};       /* output 0 (h, every step); others not wanted */
    float *finals[8] = {d_hT};       /* state 0 (h) at the last step; others not wanted */
    const float *adjoints[8] = {d_dhT}; /* dL/dh_T for state 0; the other states' adjoints are 0 */
    rnncc_io io = {.T = T, .N = N, .x = d_x, .y = outputs, .lengths = NULL, .h0 = NULL, .hT = finals};
    rnncc_grad_io gio = {.T = T, .N = N, .lengths = NULL, .x = d_x, .dy = NULL, .dhT = adjoints,
                         .dx = NULL, .dh0 = NULL};

    /* 5. Training. Each iteration draws a fresh batch, so its loss (taken before the update)
     * measures the model on data it has not seen. */
    printf("training on the adding problem: T = %d, N = %d, Adam lr %g, %ld iterations; "
           "predicting the mean scores %.4f\n", T, N, LR, iters, BASELINE);
    double start = seconds();
    for (int it = 1; it <= iters; it++) {
        make_batch(&data_rng, x, target);
        CHECK_CUDA(cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice));
        /* Training forward on the default stream: the reserve keeps what backward needs. The
         * synchronous cudaMemcpy below waits for it. */
        CHECK_RNNCC(rnncc_forward(model, &io, d_workspace, workspace_bytes, d_reserve, reserve_bytes, NULL));
        CHECK_CUDA(cudaMemcpy(hT, d_hT, sizeof hT, cudaMemcpyDeviceToHost));
        if (it == 1) {
            CHECK_CUDA(cudaMemcpy(y_last, d_y + (size_t)(T - 1) * N * H, sizeof y_last, cudaMemcpyDeviceToHost));
            double worst = 0;
            for (int k = 0; k < N * H; k++) {
                double d = fabs((double)y_last[k] - hT[k]);
                if (!(d <= worst)) worst = d;
            }
            if (!(worst <= 1e-6)) {
                fprintf(stderr, "train_adding: %s: state 0 at the last step differs from the output there by %.3g: "
                                "the readout needs the output h as the first state\n", path, worst);
                goto done;
            }
            if (!check_readout_gradient(hT, head, target)) {
                fprintf(stderr, "train_adding: FAILED: the readout's gradient disagrees with its finite differences\n");
                goto done;
            }
        }
        /* Loss and dL/dh_T on the host, then backward through time on the GPU. */
        double loss = readout(hT, head, target, dhT, dhead);
        losses[it - 1] = loss;
        CHECK_CUDA(cudaMemcpy(d_dhT, dhT, sizeof dhT, cudaMemcpyHostToDevice));
        CHECK_RNNCC(rnncc_backward_data(model, &gio, d_workspace, workspace_bytes, d_reserve, reserve_bytes, NULL));
        CHECK_RNNCC(rnncc_backward_weights(model, &gio, d_dweights, RNNCC_WGRAD_SET, d_workspace, workspace_bytes,
                                           d_reserve, reserve_bytes, NULL));
        CHECK_CUDA(cudaMemcpy(dweights, d_dweights, (size_t)nweights * sizeof(float), cudaMemcpyDeviceToHost));
        if (!isfinite(loss) || !all_finite(dweights, nweights) || !all_finite(dhead, H + 1)) {
            fprintf(stderr, "train_adding: FAILED: iteration %d: the loss (%g) or a gradient is not finite\n", it, loss);
            goto done;
        }
        /* Adam on the host, then the whole packed buffer back in one copy (and in fp16 and bf16 its 16-bit
         * copy: the model reads the biases from the fp32 buffer and multiplies by the 16-bit matrices). */
        adam_step(weights, dweights, m_w, v_w, nweights, it);
        adam_step(head, dhead, m_head, v_head, H + 1, it);
        CHECK_CUDA(cudaMemcpy(d_weights, weights, (size_t)nweights * sizeof(float), cudaMemcpyHostToDevice));
        if (d_weights16) {
            for (int64_t k = 0; k < nweights; k++) weights16[k] = round16(weights[k]);
            CHECK_CUDA(cudaMemcpy(d_weights16, weights16, (size_t)nweights * sizeof *weights16, cudaMemcpyHostToDevice));
        }

        if (it == 1) printf("iter %5d  loss %.5f\n", it, loss);
        if (it % PRINT_EVERY == 0) {
            double sum = 0;
            for (int k = it - PRINT_EVERY; k < it; k++) sum += losses[k];
            printf("iter %5d  loss %.5f (mean of the last %d)\n", it, sum / PRINT_EVERY, PRINT_EVERY);
        }
    }
    double elapsed = seconds() - start;

    /* 6. The verdict: the mean loss over the last batches against the bound. */
    int window = iters < FINAL_WINDOW ? (int)iters : FINAL_WINDOW;
    double final = 0;
    for (long k = iters - window; k < iters; k++) final += losses[k];
    final /= window;
    printf("final loss %.5f (mean of the last %d batches; predicting the mean: %.4f), %.1f s, %.2f ms per iteration\n",
           final, window, BASELINE, elapsed, 1e3 * elapsed / (double)iters);
    if (final < LOSS_BOUND) {  /* false for NaN */
        printf("ok: %s learned the adding problem (loss below %g)\n", path, LOSS_BOUND);
        status = 0;
    } else {
        fprintf(stderr, "train_adding: FAILED: the final loss %.5f is not below %g\n", final, LOSS_BOUND);
    }

done:
    if (d_x) cudaFree(d_x);
    if (d_y) cudaFree(d_y);
    if (d_hT) cudaFree(d_hT);
    if (d_dhT) cudaFree(d_dhT);
    if (d_dweights) cudaFree(d_dweights);
    if (d_workspace) cudaFree(d_workspace);
    if (d_reserve) cudaFree(d_reserve);
    free(info);
    free(weights);
    free(weights16);
    free(dweights);
    free(m_w);
    free(v_w);
    free(losses);
    rnncc_model_destroy(model);
    rnncc_program_destroy(program);
    return status;
}
