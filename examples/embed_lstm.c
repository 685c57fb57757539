/* embed_lstm: the smallest complete host program around rnncc. It compiles an LSTM cell
 * from a string, loads weights by name, runs it on the GPU and checks the result against
 * the textbook LSTM written out in plain C. Key idea: only runtime/rnncc.h and the CUDA
 * runtime API are used, so this file is a template for embedding the JIT in a program.
 *
 *   make examples && ./build/examples/embed_lstm
 *
 * Exit status: 0 when the GPU agrees with the CPU to 1e-5, 1 on any error or mismatch,
 * 77 (the conventional "skipped") when there is no CUDA device. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnncc.h"

/* The cell, exactly as cells/lstm.cell (PyTorch's nn.LSTM, gate order i, f, g, o). */
static const char lstm_source[] =
    "cell lstm(x[I]) -> h {\n"
    "    state h[H], c[H]\n"
    "    param W_i[H, I], W_f[H, I], W_g[H, I], W_o[H, I]\n"
    "    param U_i[H, H], U_f[H, H], U_g[H, H], U_o[H, H]\n"
    "    param b_i[H], b_f[H], b_g[H], b_o[H]\n"
    "\n"
    "    i = sigmoid(W_i @ x + U_i @ h + b_i)\n"
    "    f = sigmoid(W_f @ x + U_f @ h + b_f)\n"
    "    g = tanh(W_g @ x + U_g @ h + b_g)\n"
    "    o = sigmoid(W_o @ x + U_o @ h + b_o)\n"
    "    c' = f * c + i * g\n"
    "    h' = o * tanh(c')\n"
    "}\n";

enum { I = 4, H = 8, T = 5, N = 2 };
enum { EXIT_SKIP = 77 };
static const double TOLERANCE = 1e-5;

/* Host copies of every tensor. Matrices are row-major: W[r][k] is W[r * cols + k]. */
typedef struct Lstm {
    float W[4][H * I];  /* W_i, W_f, W_g, W_o */
    float U[4][H * H];  /* U_i, U_f, U_g, U_o */
    float b[4][H];      /* b_i, b_f, b_g, b_o */
} Lstm;
static const char *const gate_names[4] = {"i", "f", "g", "o"};

/* Deterministic values: the 32-bit LCG of Numerical Recipes (x' = 1664525 x + 1013904223
 * mod 2^32), its top 24 bits mapped to [-scale, scale). Every run, every machine, the same. */
static uint32_t lcg_state = 12345;
static float lcg_uniform(float scale) {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return ((float)(lcg_state >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
}
static void fill(float *v, int n, float scale) {
    for (int k = 0; k < n; k++) v[k] = lcg_uniform(scale);
}

/* Diagnostics from the cell compiler arrive here, already rendered with file:line:col. */
static void on_diagnostic(void *user, const char *level, const char *text) {
    (void)user;
    (void)level;
    fputs(text, stderr);
}

static double sigmoid(double v) { return 1 / (1 + exp(-v)); }

/* The textbook LSTM in double precision: y [T][N][H]; h and c hold h0, c0 on entry and
 * the final states on return. */
static void cpu_lstm(const Lstm *p, const float *x, double *y, double h[N][H], double c[N][H]) {
    for (int t = 0; t < T; t++) {
        for (int n = 0; n < N; n++) {
            const float *xt = x + (t * N + n) * I;
            double gate[4][H];
            for (int q = 0; q < 4; q++)
                for (int r = 0; r < H; r++) {
                    double sum = p->b[q][r];
                    for (int k = 0; k < I; k++) sum += (double)p->W[q][r * I + k] * xt[k];
                    for (int k = 0; k < H; k++) sum += (double)p->U[q][r * H + k] * h[n][k];
                    gate[q][r] = q == 2 ? tanh(sum) : sigmoid(sum);  /* g uses tanh */
                }
            for (int r = 0; r < H; r++) {
                c[n][r] = gate[1][r] * c[n][r] + gate[0][r] * gate[2][r];  /* c' = f c + i g */
                h[n][r] = gate[3][r] * tanh(c[n][r]);                      /* h' = o tanh(c') */
                y[(t * N + n) * H + r] = h[n][r];
            }
        }
    }
}

/* max |gpu - cpu| over n values; NaN if any value is NaN (so it fails every bound). */
static double max_abs_diff(const float *gpu, const double *cpu, int n) {
    double worst = 0;
    for (int k = 0; k < n; k++) {
        double d = fabs((double)gpu[k] - cpu[k]);
        if (isnan(d)) return NAN;
        if (d > worst) worst = d;
    }
    return worst;
}

static void print_matrix(const char *title, const float *v, int rows, int cols) {
    printf("%s\n", title);
    for (int r = 0; r < rows; r++) {
        printf("  ");
        for (int k = 0; k < cols; k++) printf(" %9.6f", v[r * cols + k]);
        printf("\n");
    }
}

/* Error checks: print what failed and why, then clean up. The model's own message (from
 * rnncc_model_error) names the argument or the CUDA call that went wrong. */
#define CHECK_RNNCC(call)                                                                         \
    do {                                                                                          \
        rnncc_status s_ = (call);                                                                 \
        if (s_ != RNNCC_OK) {                                                                     \
            fprintf(stderr, "embed_lstm: %s failed: %s: %s\n", #call, rnncc_status_string(s_),    \
                    rnncc_model_error(model));                                                    \
            goto done;                                                                            \
        }                                                                                         \
    } while (0)
#define CHECK_CUDA(call)                                                                          \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "embed_lstm: %s failed: %s (%s)\n", #call, cudaGetErrorString(e_),    \
                    cudaGetErrorName(e_));                                                        \
            goto done;                                                                            \
        }                                                                                         \
    } while (0)

int main(void) {
    int status = 1;
    rnncc_program *program = NULL;
    rnncc_model *model = NULL;
    float *d_x = NULL, *d_y = NULL, *d_h0 = NULL, *d_c0 = NULL, *d_hT = NULL, *d_cT = NULL;
    void *d_workspace = NULL;
    static Lstm p;
    float x[T * N * I], h0[N * H], c0[N * H], y[T * N * H], hT[N * H], cT[N * H];

    /* 1. Compile the cell source. Errors arrive through the callback (and the program log). */
    rnncc_compile_options options = {on_diagnostic, NULL};
    rnncc_status s = rnncc_compile_string(lstm_source, strlen(lstm_source), "lstm.cell", &options, &program);
    if (s != RNNCC_OK) {
        fprintf(stderr, "embed_lstm: compiling the cell failed: %s\n", rnncc_status_string(s));
        goto done;
    }
    printf("compiled the lstm cell (rnncc %s)\n", rnncc_version());

    /* 2. Instantiate it on the GPU: bind I and H, one layer, one direction, strict fp32.
     * This is where a machine without a GPU finds out (RNNCC_ERR_NO_GPU). */
    const char *dims[] = {"I=4", "H=8"};
    rnncc_model_desc desc = {.cell = NULL, .dims = dims, .ndims = 2, .layers = 1, .bidirectional = 0,
                             .precision = RNNCC_FP32, .device = -1};
    s = rnncc_model_create(program, &desc, &model);
    if (s == RNNCC_ERR_NO_GPU) {
        printf("embed_lstm: %s; skipping the GPU run (the cell compiled fine)\n", rnncc_model_error(model));
        status = EXIT_SKIP;
        goto done;
    }
    CHECK_RNNCC(s);

    /* 3. Weights, by name: layer 0, direction 0. W_* in +-0.5, U_* in +-0.3, b_* in +-0.1. */
    for (int q = 0; q < 4; q++) {
        char name[8];
        fill(p.W[q], H * I, 0.5f);
        snprintf(name, sizeof name, "W_%s", gate_names[q]);
        CHECK_RNNCC(rnncc_model_set_param(model, name, 0, 0, p.W[q], H * I));
        fill(p.U[q], H * H, 0.3f);
        snprintf(name, sizeof name, "U_%s", gate_names[q]);
        CHECK_RNNCC(rnncc_model_set_param(model, name, 0, 0, p.U[q], H * H));
        fill(p.b[q], H, 0.1f);
        snprintf(name, sizeof name, "b_%s", gate_names[q]);
        CHECK_RNNCC(rnncc_model_set_param(model, name, 0, 0, p.b[q], H));
    }
    /* Inputs x [T][N][I] and initial states h0, c0 [layers*dirs = 1][N][H]. */
    fill(x, T * N * I, 1.0f);
    fill(h0, N * H, 0.5f);
    fill(c0, N * H, 0.5f);

    /* 4. Device buffers. States are passed in the order the cell declares them: h, then c. */
    CHECK_CUDA(cudaMalloc((void **)&d_x, sizeof x));
    CHECK_CUDA(cudaMalloc((void **)&d_y, sizeof y));
    CHECK_CUDA(cudaMalloc((void **)&d_h0, sizeof h0));
    CHECK_CUDA(cudaMalloc((void **)&d_c0, sizeof c0));
    CHECK_CUDA(cudaMalloc((void **)&d_hT, sizeof hT));
    CHECK_CUDA(cudaMalloc((void **)&d_cT, sizeof cT));
    CHECK_CUDA(cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_h0, h0, sizeof h0, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_c0, c0, sizeof c0, cudaMemcpyHostToDevice));
    size_t workspace_bytes = 0;
    CHECK_RNNCC(rnncc_workspace_size(model, T, N, /*training=*/0, &workspace_bytes));
    if (workspace_bytes) CHECK_CUDA(cudaMalloc(&d_workspace, workspace_bytes));

    /* 5. Forward (inference: no reserve) on the default stream, then wait for it. */
    float *outputs[1] = {d_y};
    const float *initial[2] = {d_h0, d_c0};
    float *final[2] = {d_hT, d_cT};
    rnncc_io io = {.T = T, .N = N, .x = d_x, .y = outputs, .lengths = NULL, .h0 = initial, .hT = final};
    CHECK_RNNCC(rnncc_forward(model, &io, d_workspace, workspace_bytes, NULL, 0, NULL));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(y, d_y, sizeof y, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hT, d_hT, sizeof hT, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(cT, d_cT, sizeof cT, cudaMemcpyDeviceToHost));
    for (int t = 0; t < T; t++) {
        char title[32];
        snprintf(title, sizeof title, "y[t=%d] (N x H):", t);
        print_matrix(title, y + t * N * H, N, H);
    }
    print_matrix("hT (N x H):", hT, N, H);
    print_matrix("cT (N x H):", cT, N, H);

    /* 6. The same LSTM on the CPU, from the very same float values. */
    static double ref_y[T * N * H];
    double ref_h[N][H], ref_c[N][H];
    for (int n = 0; n < N; n++)
        for (int r = 0; r < H; r++) {
            ref_h[n][r] = h0[n * H + r];
            ref_c[n][r] = c0[n * H + r];
        }
    cpu_lstm(&p, x, ref_y, ref_h, ref_c);
    double err_y = max_abs_diff(y, ref_y, T * N * H);
    double err_h = max_abs_diff(hT, &ref_h[0][0], N * H);
    double err_c = max_abs_diff(cT, &ref_c[0][0], N * H);
    printf("max |gpu - cpu|: y %.3g, hT %.3g, cT %.3g\n", err_y, err_h, err_c);
    if (err_y <= TOLERANCE && err_h <= TOLERANCE && err_c <= TOLERANCE) {  /* false for NaN */
        printf("ok: the GPU agrees with the CPU within %.0e\n", TOLERANCE);
        status = 0;
    } else {
        fprintf(stderr, "embed_lstm: FAILED: a difference exceeds %.0e\n", TOLERANCE);
    }

done:
    if (d_x) cudaFree(d_x);
    if (d_y) cudaFree(d_y);
    if (d_h0) cudaFree(d_h0);
    if (d_c0) cudaFree(d_c0);
    if (d_hT) cudaFree(d_hT);
    if (d_cT) cudaFree(d_cT);
    if (d_workspace) cudaFree(d_workspace);
    rnncc_model_destroy(model);
    rnncc_program_destroy(program);
    return status;
}
