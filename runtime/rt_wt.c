/* fp32 step GEMMs on a transposed (column-major) copy of their row-major weights, whose cuBLASLt kernels ran 4-8% faster
 * on an H100 (bench/NOTES.md sections 105-106). Key idea: both layouts timed once a shape; where the copy pays, each pass
 * transposes the block once into the workspace (the weights may have changed) before its first step GEMM. */
#include "rt_internal.h"

static int is_step(SchedProgram p) { return p == SCHED_STEP; }

int64_t rt_wt_weights_len(const rnncc_model *m, int64_t N) {
    if (m->precision != RNNCC_FP32 || rt_persist_considered(m, N, 0, NULL, 0)) return 0;
    return rt_blocks_len(m, 1, is_step);
}

void rt_wt_begin(rnncc_model *m, const RtRegions *r, char *ws) {
    m->wt_blocks.n = 0;
    m->wt_blocks.used = 0;
    m->wt_weights_len = r->wt_weights_len;
    m->wt_weights = r->wt_weights_len ? (float *)(ws + r->wt_weights) : NULL;
}

int rt_wt_pays(float tn_ms, float nn_ms, int64_t T, int64_t M, int64_t K) {
    if (tn_ms <= 0 || nn_ms <= 0 || nn_ms > 0.98f * tn_ms) return 0; /* within 2%: timing noise, not a layout */
    const double copy_ms = 8.0 * (double)M * (double)K / 1e9; /* read and write M K floats at 1 TB/s */
    return (double)T * (tn_ms - nn_ms) > copy_ms;
}

rnncc_status rt_wt_weights(RtBind *is, int j, const float *w, int64_t M, int64_t K, int64_t N, const float *b, int64_t ldb,
                           const float *c, int64_t ldc, int beta1, const float **wt) {
    rnncc_model *m = is->m;
    *wt = NULL;
    if (!m->wt_weights || m->wt_force == 0 || m->plan->gemms[j].program != SCHED_STEP || w < m->weights ||
        w + M * K > m->weights + m->weight_count)
        return RNNCC_OK;
    int fresh;
    RtBlock *block;
    const int64_t at =
        rt_blocks_at(&m->wt_blocks, w - m->weights, K, M, CUBLAS_OP_T, 1, m->wt_weights_len, &fresh, &block);
    if (at == -2) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    if (at < 0)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: the transposed weights' %lld floats are spent",
                       (long long)m->wt_weights_len);
    float *copy = m->wt_weights + at;
    /* decided once a pass where the pass first meets the block: a later step's GEMM may differ in its key (the
     * output's alignment moves with the step) and be timed anew, but must not change what was transposed */
    if (!fresh) {
        *wt = block->used ? copy : NULL;
        return RNNCC_OK;
    }
    const int timed = m->wt_force != 1; /* RNNCC_WT=1: always the copy */
    float tn = 0, nn = 0;
    if (timed) {
        RT_TRY(rt_gemm_lt_time(m, is->lane, is->stream, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, w, K, b, ldb, c, ldc, beta1,
                               RNNCC_FP32, 1, &tn));
        RT_TRY(rt_gemm_lt_time(m, is->lane, is->stream, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, copy, M, b, ldb, c, ldc, beta1,
                               RNNCC_FP32, 0, &nn));
    }
    /* a shape whose copy was never timed: the copy first (its timing reads it), then its time; none where the
     * packed layout's time is not known (capturing: a copy no replay would multiply) */
    if (!timed || (tn > 0 && (nn == 0 || rt_wt_pays(tn, nn, is->r->T, M, K)))) {
        const float one = 1, zero = 0;
        RT_CUBLAS(m, cublasSgeam(is->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)M, (int)K, &one, w, (int)K, &zero, copy, (int)M,
                                 copy, (int)M));
        if (timed && nn == 0)
            RT_TRY(rt_gemm_lt_time(m, is->lane, is->stream, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, copy, M, b, ldb, c, ldc,
                                   beta1, RNNCC_FP32, 1, &nn));
    }
    /* block stays valid: no rt_blocks_at call since */
    block->used = !timed || rt_wt_pays(tn, nn, is->r->T, M, K);
    if (block->used) *wt = copy;
    return RNNCC_OK;
}
