/* RNNCC_TF32X3: fp32 data and products with errors near fp32's, on tensor cores. Each input v of a
 * cuBLAS GEMM is split into hi = v rounded to tf32 and lo = (v - hi) rounded to tf32 (codegen/convert.cuh,
 * rnncc_to_x3), the left operand laid out as (hi, hi, lo) and the right as (hi, lo, hi) along the
 * contraction, and one tf32 GEMM over three times the contraction sums hi*hi + hi*lo + lo*hi with fp32
 * accumulation (CUTLASS's "3xTF32"). Key idea: what cuBLAS runs is an ordinary tf32 GEMM, three times the
 * work of a tf32 one and on an H200 2-3 times faster than fp32's FFMA at large batches (bench/NOTES.md
 * section 77). The weights are split once a pass into the workspace (per layer-direction and GEMM, as the
 * pass multiplies them: the forward along their rows, the backward along their columns; each block into
 * floats of its own, as a parameter may be multiplied alone and in a stack), every other
 * operand into its lane's scratch just before its GEMM, in chunks of columns (or of the contraction, for
 * the weight gradients) where it would not fit, but for a step GEMM's right operand that the kernel before
 * it wrote split (its split twin: RnnArgs.state3, dbuf3). The persistent kernels of this mode are fp32's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

int rt_x3(const rnncc_model *m) { return m->precision == RNNCC_TF32X3; }

/* A chunk of a split operand: output columns of a product with the weights, at least RT_X3_COLS where it has
 * them (fewer leave a 1024-row product too few tiles to fill the GPU: the backward's input adjoint, 1024 x 341
 * columns of split 4096-long columns, took twice its time); of the weight gradients' contraction, RT_X3_DEPTH;
 * both rounded down to RT_X3_ALIGN (so that a split column of a chunk stays 128-byte aligned) */
enum { RT_X3_COLS = 2048, RT_X3_DEPTH = 256, RT_X3_ALIGN = 32 };

static int64_t at_most(int64_t a, int64_t b) { return a < b ? a : b; }

int64_t rt_x3_scratch_len(const rnncc_model *m, int64_t T, int64_t N, int training) {
    int64_t len = 0, dim = 1, TN = T * N;
    for (int u = 0; u < m->nunits; u++)
        for (int j = 0; j < m->plan->ngemms; j++) {
            const PlanLayout *L = m->units[u].layout;
            const int64_t rows = L->gemm_rows[j], cols = L->gemm_cols[j];
            const int64_t n = m->plan->gemms[j].program == SCHED_STEP ? N : TN; /* its columns */
            int64_t need = 3 * cols * at_most(n, RT_X3_COLS); /* forward: the right operand's chunk */
            if (rows > dim) dim = rows;
            if (cols > dim) dim = cols;
            if (training) {
                int64_t back = 3 * rows * at_most(n, RT_X3_COLS); /* backward data: the adjoint's */
                int64_t wgrad = 3 * (rows > cols ? rows : cols) * at_most(TN, RT_X3_DEPTH); /* weight gradients' */
                if (back > need) need = back;
                if (wgrad > need) need = wgrad;
            }
            if (need > len) len = need;
        }
    if (m->x3_cap > 0 && m->x3_cap < len) len = m->x3_cap; /* forced smaller: more chunks */
    return len < 3 * dim ? 3 * dim : len; /* a chunk holds one column of any operand split, at least */
}

int64_t rt_x3_weights_len(const rnncc_model *m) { return rt_blocks_len(m, 3, NULL); }

void rt_x3_begin(rnncc_model *m, const RtRegions *r, char *ws) {
    m->x3_split.n = 0;
    m->x3_split.used = 0;
    m->x3_weights_len = r->x3_weights_len;
    m->x3_weights = r->x3_weights ? (float *)(ws + r->x3_weights) : NULL;
    for (int l = 0; l < 2; l++)
        for (int w = 0; w < 2; w++) m->x3_scratch[l][w] = r->x3_ops[l][w] ? (float *)(ws + r->x3_ops[l][w]) : NULL;
    m->x3_len = r->x3_len;
}

/* Splits the column-major rows x cols matrix src (leading dimension ld) into dst (rnncc_to_x3): krows, the
 * contraction runs along its rows; pattern 0: (hi, hi, lo), 1: (hi, lo, hi). */
static rnncc_status split(rnncc_model *m, cudaStream_t stream, const float *src, int64_t ld, int64_t rows, int64_t cols,
                          float *dst, int krows, int pattern) {
    long long lld = ld, lrows = rows, lcols = cols;
    int vec4 = rows % 4 == 0 && (cols == 1 || ld % 4 == 0) && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0;
    void *args[] = {&src, &lld, &lrows, &lcols, &dst, &krows, &pattern, &vec4};
    return rt_launch_columns(m, stream, m->to_x3, args, vec4 ? rows / 4 : rows, cols);
}

/* The left operand split, where it is a block of the weights (packed: its leading dimension its rows):
 * split this pass already (the same block and operation), or now, into floats of its own in the weights'
 * split region (rt_blocks_at); *out NULL where a is not the weights. */
static rnncc_status split_weights(rnncc_model *m, cudaStream_t stream, int opa, int64_t M, int64_t K, const float *a,
                                  int64_t lda, const float **out) {
    *out = NULL;
    if (!m->x3_weights || a < m->weights || a >= m->weights + m->weight_count) return RNNCC_OK;
    const int64_t rows = opa == CUBLAS_OP_N ? M : K, cols = opa == CUBLAS_OP_N ? K : M, off = a - m->weights;
    if (lda != rows || off + rows * cols > m->weight_count)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: a %lld x %lld block of the weights is not packed",
                       (long long)rows, (long long)cols);
    int fresh;
    const int64_t at = rt_blocks_at(&m->x3_split, off, rows, cols, opa, 3, m->x3_weights_len, &fresh, NULL);
    if (at == -2) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    if (at < 0)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: the split weights' %lld floats are spent",
                       (long long)m->x3_weights_len);
    *out = m->x3_weights + at;
    return fresh ? split(m, stream, a, lda, rows, cols, m->x3_weights + at, opa != CUBLAS_OP_N, 0) : RNNCC_OK;
}

void rt_x3_chunks(int64_t M, int64_t N, int64_t K, int a_split, int64_t len, int64_t *kc, int64_t *nc) {
    const int64_t wide = M > N ? M : N;
    *kc = K, *nc = N;
    if (!a_split && 3 * wide * K > len) *kc = len / (3 * wide);
    if (*kc > RT_X3_ALIGN && *kc < K) *kc -= *kc % RT_X3_ALIGN;
    if (*kc > 0 && 3 * *kc * N > len) *nc = len / (3 * *kc);
    if (*nc > RT_X3_ALIGN && *nc < N) *nc -= *nc % RT_X3_ALIGN;
}

rnncc_status rt_x3_product(const RtX3Issue *is, int opa, int opb, int64_t M, int64_t N, int64_t K, const float *a,
                           int64_t lda, const float *a3, const float *b, int64_t ldb, const float *b3, float *c,
                           int64_t ldc, int beta1, float *sa, float *sb, int64_t len) {
    int64_t kc, nc;
    rt_x3_chunks(M, N, K, a3 != NULL, len, &kc, &nc);
    if (kc < 1 || nc < 1) return RNNCC_ERR_UNSUPPORTED;
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
        const int64_t kk = K - k0 < kc ? K - k0 : kc;
        const float *ap = a3;
        int64_t ldap = opa == CUBLAS_OP_N ? M : 3 * K;
        if (!a3) { /* op T: a K x M column-major matrix, the chunk's rows; op N: M x K, its columns */
            if (opa == CUBLAS_OP_N) RT_TRY(is->split(is->ctx, a + k0 * lda, lda, M, kk, sa, 0, 0));
            else RT_TRY(is->split(is->ctx, a + k0, lda, kk, M, sa, 1, 0));
            ap = sa;
            ldap = opa == CUBLAS_OP_N ? M : 3 * kk;
        }
        for (int64_t n0 = 0; n0 < N; n0 += nc) { /* op N: B is K x N, the chunk's rows and columns; op T: N x K */
            const int64_t nn = N - n0 < nc ? N - n0 : nc;
            const float *bp = sb;
            if (b3 && opb == CUBLAS_OP_N && kk == K) bp = b3 + n0 * 3 * K; /* the kernel's twin: whole columns */
            else if (opb == CUBLAS_OP_N) RT_TRY(is->split(is->ctx, b + n0 * ldb + k0, ldb, kk, nn, sb, 1, 1));
            else RT_TRY(is->split(is->ctx, b + k0 * ldb + n0, ldb, nn, kk, sb, 0, 1));
            RT_TRY(is->gemm(is->ctx, opa, opb, M, nn, 3 * kk, ap, ldap, bp, opb == CUBLAS_OP_N ? 3 * kk : nn, c + n0 * ldc, ldc,
                            beta1 || k0 > 0));
        }
    }
    return RNNCC_OK;
}

/* rt_x3_product's issue on the GPU: the split kernel and cuBLASLt's tf32 GEMM on a lane's stream. */
typedef struct GpuIssue { rnncc_model *m; int lane; cudaStream_t stream; } GpuIssue;
static rnncc_status gpu_split(void *ctx, const float *src, int64_t ld, int64_t rows, int64_t cols, float *dst, int krows,
                              int pattern) {
    const GpuIssue *g = ctx;
    return split(g->m, g->stream, src, ld, rows, cols, dst, krows, pattern);
}
static rnncc_status gpu_gemm(void *ctx, int opa, int opb, int64_t M, int64_t N, int64_t K, const float *a, int64_t lda,
                             const float *b, int64_t ldb, float *c, int64_t ldc, int beta1) {
    const GpuIssue *g = ctx;
    return rt_gemm_lt(g->m, g->lane, g->stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, RNNCC_TF32);
}

rnncc_status rt_x3_gemm(rnncc_model *m, int lane, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                        const float *a, int64_t lda, const float *b, int64_t ldb, const float *b3, float *c, int64_t ldc,
                        int beta1) {
    if (M <= 0 || N <= 0 || K <= 0) return RNNCC_OK;
    if (M == 1 || N == 1) /* a sum or a matrix-vector product (a folded bias's gradient): fp32, as it is */
        return rt_gemm_lt(m, lane, stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, RNNCC_FP32);
    const float *a3;
    RT_TRY(split_weights(m, stream, opa, M, K, a, lda, &a3));
    float *sa = m->x3_scratch[lane][0], *sb = m->x3_scratch[lane][1];
    GpuIssue g = {m, lane, stream};
    const RtX3Issue is = {gpu_split, gpu_gemm, &g};
    /* UNSUPPORTED: no chunk fits the scratch (its other failures are the calls', each with its message) */
    rnncc_status s = sb && (a3 || sa) ? rt_x3_product(&is, opa, opb, M, N, K, a, lda, a3, b, ldb, b3, c, ldc, beta1, sa,
                                                      sb, m->x3_len)
                                      : RNNCC_ERR_UNSUPPORTED;
    if (s == RNNCC_ERR_UNSUPPORTED)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: a %lld x %lld x %lld GEMM has no split scratch (%lld floats)",
                       (long long)M, (long long)N, (long long)K, (long long)m->x3_len);
    return s;
}
