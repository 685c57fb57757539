/* GEMMs through cuBLASLt with the algorithm chosen by timing: per distinct shape (operations,
 * sizes, leading dimensions, pointer alignment, beta, precision), the heuristic's candidates
 * are timed once, on scratch output, and the fastest kept for the model's lifetime. In the
 * 16-bit modes the operands come rounded (rt_half.c), in RNNCC_TF32X3 split into tf32 parts (rt_x3.c);
 * the accumulation stays fp32, and C too but where a product's only reader takes it in 16 bits (a folded
 * cell's V in the 16-bit modes: rt_gemm_half_out). */
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
    int c16;                   /* C is 16-bit as A and B are (beta 0), else fp32 */
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
