/* GEMMs through cuBLASLt with timed algorithm choice (see rt_gemm.h). Key idea: cuBLAS's
 * default heuristic picks slow kernels for the skinny, latency-bound GEMMs of a recurrent
 * step (measured: 27 us instead of ~4 us for [512 x 8 x 128] fp32), so each distinct shape's
 * candidates are timed once, outside any graph capture, and the winner is replayed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* Heuristic candidates asked for; in the timing of candidates (time_candidates): rounds, launches
 * of the probe that sizes a run, the length a run of back-to-back launches aims at (ms), and its
 * most launches. */
enum { CANDIDATES = 8, TUNE_ROUNDS = 5, TUNE_PROBE_REPS = 4, TUNE_MAX_REPS = 20 };
#define TUNE_BATCH_MS 0.3f

static int alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    int al = 256;
    while (al > 1 && a % (uintptr_t)al) al /= 2;
    return al;
}

static rnncc_status lt_fail(rnncc_model *m, cublasStatus_t s, const char *what) {
    return rt_fail(m, RNNCC_ERR_CUBLAS, "cuBLASLt %s failed: %s", what, cublasGetStatusString(s));
}

#define LT(m, call, what)                                          \
    do {                                                           \
        cublasStatus_t lt_s_ = (call);                             \
        if (lt_s_ != CUBLAS_STATUS_SUCCESS) return lt_fail((m), lt_s_, (what)); \
    } while (0)

/* The time per launch of reps back-to-back launches of algo on scratch output, or -1 if it fails. */
static float batch_time(rnncc_model *m, RtGemmEntry *e, const cublasLtMatmulAlgo_t *algo, int reps, const void *a,
                        const void *b, float *scratch, void *ws, size_t wsb, cudaStream_t stream) {
    const float one = 1, zero = 0;
    float ms = -1;
    if (cudaEventRecord(m->tevents[0], stream) != cudaSuccess) return -1;
    for (int r = 0; r < reps; r++)
        if (cublasLtMatmul(m->gemm.lt, e->desc, &one, a, e->la, b, e->lb, e->key.beta1 ? &one : &zero, scratch, e->lc,
                           scratch, e->lc, algo, ws, wsb, stream) != CUBLAS_STATUS_SUCCESS)
            return -1;
    if (cudaEventRecord(m->tevents[1], stream) != cudaSuccess || cudaEventSynchronize(m->tevents[1]) != cudaSuccess ||
        cudaEventElapsedTime(&ms, m->tevents[0], m->tevents[1]) != cudaSuccess)
        return -1;
    return ms / (float)reps;
}

/* Times the n heuristic candidates on scratch output: med[i] is candidate i's time per launch
 * (-1: it does not run); returns the fastest's index, or -1 when none runs. Key idea: a pass
 * replays a step GEMM back to back, so a candidate is timed as runs of back-to-back launches
 * (about TUNE_BATCH_MS long, at most TUNE_MAX_REPS launches, sized by a short warm probe), not
 * one launch at a time: one launch's time is mostly launch latency and noise (the large LSTM's
 * tf32 step GEMM: 27-43 us a launch, 14-27 back to back, where the order of the candidates
 * changes). TUNE_ROUNDS rounds take the candidates in turn, so that a change of clocks falls on
 * all of them, and each is judged by its median round. */
static int time_candidates(rnncc_model *m, RtGemmEntry *e, const cublasLtMatmulHeuristicResult_t *cand, int n,
                           const void *a, const void *b, float *scratch, void *ws, size_t wsb, cudaStream_t stream,
                           float *med) {
    float t[CANDIDATES][TUNE_ROUNDS], first = -1;
    for (int i = 0; i < n; i++) /* a warm-up launch each (its first use: loading, latency); -1: it does not run */
        med[i] = batch_time(m, e, &cand[i].algo, 1, a, b, scratch, ws, wsb, stream);
    for (int i = 0; i < n; i++) { /* a short warm run each: how long a launch takes back to back */
        int probe = med[i] > 4 * TUNE_BATCH_MS ? 1 : TUNE_PROBE_REPS; /* a long GEMM's runs are one launch anyway */
        if (med[i] >= 0) med[i] = batch_time(m, e, &cand[i].algo, probe, a, b, scratch, ws, wsb, stream);
        if (med[i] >= 0 && (first < 0 || med[i] < first)) first = med[i];
    }
    if (first < 0) return -1;
    int reps = (int)ceilf(TUNE_BATCH_MS / first);
    reps = reps < 1 ? 1 : reps > TUNE_MAX_REPS ? TUNE_MAX_REPS : reps;
    for (int r = 0; r < TUNE_ROUNDS; r++)
        for (int i = 0; i < n; i++)
            if (med[i] >= 0 && (t[i][r] = batch_time(m, e, &cand[i].algo, reps, a, b, scratch, ws, wsb, stream)) < 0) med[i] = -1;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (med[i] < 0) continue;
        for (int x = 1; x < TUNE_ROUNDS; x++) /* insertion sort: a handful of numbers */
            for (int y = x; y > 0 && t[i][y] < t[i][y - 1]; y--) {
                float v = t[i][y];
                t[i][y] = t[i][y - 1];
                t[i][y - 1] = v;
            }
        med[i] = t[i][TUNE_ROUNDS / 2];
        if (best < 0 || med[i] < med[best]) best = i;
    }
    return best;
}

/* Creates the descriptors of a new shape and chooses its algorithm (timing when allowed). */
static rnncc_status make_entry(rnncc_model *m, RtGemmEntry *e, const void *a, const void *b, void *ws, size_t wsb,
                               cudaStream_t stream, int may_time) {
    const RtGemmKey *k = &e->key;
    cublasOperation_t opa = (cublasOperation_t)k->opa, opb = (cublasOperation_t)k->opb;
    cudaDataType_t in = k->precision == RNNCC_FP16 ? CUDA_R_16F : k->precision == RNNCC_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    LT(m, cublasLtMatmulDescCreate(&e->desc, k->precision == RNNCC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                   CUDA_R_32F),
       "matmul descriptor");
    LT(m, cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), "TRANSA");
    LT(m, cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), "TRANSB");
    LT(m, cublasLtMatrixLayoutCreate(&e->la, in, opa == CUBLAS_OP_N ? k->m : k->k, opa == CUBLAS_OP_N ? k->k : k->m, k->lda),
       "layout A");
    LT(m, cublasLtMatrixLayoutCreate(&e->lb, in, opb == CUBLAS_OP_N ? k->k : k->n, opb == CUBLAS_OP_N ? k->n : k->k, k->ldb),
       "layout B");
    LT(m, cublasLtMatrixLayoutCreate(&e->lc, k->c16 ? in : CUDA_R_32F, k->m, k->n, k->ldc), "layout C");
    cublasLtMatmulPreference_t pref;
    LT(m, cublasLtMatmulPreferenceCreate(&pref), "preference");
    uint64_t wsmax = wsb;
    uint32_t al[3] = {(uint32_t)k->align_a, (uint32_t)k->align_b, (uint32_t)k->align_c};
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax, sizeof wsmax);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], 4);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], 4);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], 4);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2], 4);
    cublasLtMatmulHeuristicResult_t res[CANDIDATES];
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(m->gemm.lt, e->desc, e->la, e->lb, e->lc, e->lc, pref, CANDIDATES, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) return lt_fail(m, s, "heuristic");
    if (found == 0)
        return rt_fail(m, RNNCC_ERR_CUBLAS, "cuBLASLt has no algorithm for a %lld x %lld x %lld GEMM", (long long)k->m,
                       (long long)k->n, (long long)k->k);
    e->algo = res[0].algo;
    e->candidates = found;
    int capturing = -1;
    if (may_time) RT_TRY(rt_streams_capturing(m, &capturing));
    if (!may_time || capturing >= 0 || found == 1) return RNNCC_OK;
    /* alone on the GPU: a wavefront's or the other direction's work on the other stream would
     * time into the candidates (what it waits for is already issued, so this cannot hang) */
    for (int i = 0; i < 2; i++) RT_CUDA(m, cudaStreamSynchronize(m->streams[i]));
    float *scratch = NULL;
    if (cudaMalloc((void **)&scratch, (size_t)(k->ldc * k->n) * sizeof(float)) != cudaSuccess) {
        cudaGetLastError();
        return RNNCC_OK; /* no room to time: keep the heuristic's choice */
    }
    cudaMemsetAsync(scratch, 0, (size_t)(k->ldc * k->n) * sizeof(float), stream);
    float med[CANDIDATES];
    int best = time_candidates(m, e, res, found, a, b, scratch, ws, wsb, stream, med);
    if (best >= 0) e->algo = res[best].algo;
    cudaFree(scratch);
    cudaGetLastError();
    e->tuned = best >= 0;
    e->ms = best >= 0 ? med[best] : -1;
    return RNNCC_OK;
}

/* The cache's entry of a GEMM (C in fp32 or, where c16, in A and B's 16 bits), made now if its shape is new
 * and create is set (its algorithm timed on scratch output where the streams may be timed), else *out NULL. */
static rnncc_status find_entry(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N,
                               int64_t K, const void *a, int64_t lda, const void *b, int64_t ldb, const void *c,
                               int64_t ldc, int beta1, rnncc_precision precision, int c16, int create, RtGemmEntry **out) {
    RtGemmKey key; /* compared whole (memcmp): zeroed first, padding included, then set field by field */
    memset(&key, 0, sizeof key);
    key.opa = opa, key.opb = opb, key.m = M, key.n = N, key.k = K, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
    key.align_a = alignment(a), key.align_b = alignment(b), key.align_c = alignment(c), key.beta1 = beta1;
    key.precision = precision;
    key.c16 = c16;
    RtGemmCache *cache = &m->gemm;
    RtGemmEntry *e = NULL;
    for (int i = 0; i < cache->n && !e; i++)
        if (memcmp(&cache->entries[i].key, &key, sizeof key) == 0) e = &cache->entries[i];
    if (!e && create) {
        if (cache->n == cache->cap) {
            int cap = cache->cap ? cache->cap * 2 : 16;
            RtGemmEntry *p = realloc(cache->entries, (size_t)cap * sizeof *p);
            if (!p) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
            cache->entries = p;
            cache->cap = cap;
        }
        e = &cache->entries[cache->n];
        memset(e, 0, sizeof *e);
        e->key = key;
        rnncc_status s = make_entry(m, e, a, b, m->cublas_ws[dir], RT_CUBLAS_WS, stream, !m->capturing);
        if (s != RNNCC_OK) return s;
        cache->n++;
    }
    *out = e;
    return RNNCC_OK;
}

/* rt_gemm_lt with C in fp32 or, where c16, in A and B's 16 bits. */
static rnncc_status gemm_lt(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                            const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc, int beta1,
                            rnncc_precision precision, int c16) {
    RtGemmEntry *e;
    RT_TRY(find_entry(m, dir, stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, precision, c16, 1, &e));
    const float one = 1, zero = 0;
    LT(m, cublasLtMatmul(m->gemm.lt, e->desc, &one, a, e->la, b, e->lb, beta1 ? &one : &zero, c, e->lc, c, e->lc, &e->algo,
                         m->cublas_ws[dir], RT_CUBLAS_WS, stream),
       "matmul");
    return RNNCC_OK;
}

rnncc_status rt_gemm_lt_time(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N,
                             int64_t K, const void *a, int64_t lda, const void *b, int64_t ldb, const float *c, int64_t ldc,
                             int beta1, rnncc_precision precision, int create, float *ms) {
    RtGemmEntry *e = NULL;
    *ms = 0;
    RT_TRY(find_entry(m, dir, stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, precision, 0, create, &e));
    if (e) *ms = e->tuned ? e->ms : -1;
    return RNNCC_OK;
}

rnncc_status rt_gemm_lt(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                        const void *a, int64_t lda, const void *b, int64_t ldb, float *c, int64_t ldc, int beta1,
                        rnncc_precision precision) {
    return gemm_lt(m, dir, stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, precision, 0);
}

rnncc_status rt_gemm_half_out(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N,
                              int64_t K, const unsigned short *a, int64_t lda, const unsigned short *b, int64_t ldb,
                              unsigned short *c, int64_t ldc, int beta1) {
    if (!rt_half(m))
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: a GEMM with a 16-bit result in a model without 16-bit products");
    if (M <= 0 || N <= 0 || K <= 0) return RNNCC_OK;
    return gemm_lt(m, dir, stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, m->precision, 1);
}

rnncc_status rt_gemm(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                     const float *a32, int64_t lda, const float *b32, int64_t ldb, float *c, int64_t ldc, int beta1,
                     const unsigned short *a16, const unsigned short *b16, const float *b3) {
    if (M <= 0 || N <= 0 || K <= 0) return RNNCC_OK;
    if (rt_x3(m)) return rt_x3_gemm(m, dir, stream, opa, opb, M, N, K, a32, lda, b32, ldb, b3, c, ldc, beta1);
    const void *a = a32, *b = b32;
    if (rt_half(m)) { /* the operands rounded to 16 bits, packed (the weights: their copy, as laid out) */
        RT_TRY(rt_half_operand(m, dir, 0, stream, a32, lda, opa == CUBLAS_OP_N ? M : K, opa == CUBLAS_OP_N ? K : M, a16, &a,
                                 &lda));
        RT_TRY(rt_half_operand(m, dir, 1, stream, b32, ldb, opb == CUBLAS_OP_N ? K : N, opb == CUBLAS_OP_N ? N : K, b16, &b,
                                 &ldb));
    }
    return rt_gemm_lt(m, dir, stream, opa, opb, M, N, K, a, lda, b, ldb, c, ldc, beta1, m->precision);
}

void rt_gemm_cache_free(RtGemmCache *cache) {
    for (int i = 0; i < cache->n; i++) {
        RtGemmEntry *e = &cache->entries[i];
        cublasLtMatrixLayoutDestroy(e->la);
        cublasLtMatrixLayoutDestroy(e->lb);
        cublasLtMatrixLayoutDestroy(e->lc);
        cublasLtMatmulDescDestroy(e->desc);
    }
    free(cache->entries);
    if (cache->lt) cublasLtDestroy(cache->lt);
    memset(cache, 0, sizeof *cache);
}
