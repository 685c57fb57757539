/* GEMMs through cuBLASLt with the algorithm chosen by timing: per distinct shape (operations,
 * sizes, leading dimensions, pointer alignment, beta, precision), the heuristic's candidates
 * are timed once, on scratch output, and the fastest kept for the model's lifetime. In the
 * 16-bit modes the operands come rounded (rt_half.c), in RNNCC_TF32X3 split into tf32 parts (rt_x3.c);
 * C and the accumulation stay fp32. */
#ifndef RNNCC_RT_GEMM_H
#define RNNCC_RT_GEMM_H
#include <cublasLt.h>
#include <stdint.h>

typedef struct RtGemmKey {
    int opa, opb;              /* cublasOperation_t */
    int64_t m, n, k, lda, ldb, ldc;
    int align_a, align_b, align_c; /* bytes: the largest power of two dividing the pointer, at most 256 */
    int beta1;                 /* beta is 1 (accumulate) rather than 0 */
    int precision;             /* rnncc_precision: compute type, and 16-bit A and B for FP16 and BF16 */
} RtGemmKey;

typedef struct RtGemmEntry {
    RtGemmKey key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    int tuned;                 /* the algorithm was chosen by timing (else: the heuristic's first) */
    float ms;                  /* its time when tuned */
    int candidates;
} RtGemmEntry;

typedef struct RtGemmCache {
    cublasLtHandle_t lt;
    RtGemmEntry *entries;
    int n, cap;
} RtGemmCache;

#endif
