/* gemm_layouts: a GEMM C = W B timed with the weights W as rnncc packs them (row-major [M][K], which cuBLAS
 * reads as op T: "tn") and column-major (op N: "nn", as cuDNN's STD algorithm multiplies them), each layout's
 * cuBLASLt heuristic candidates (up to 32) timed back to back, in fp32 (FFMA), tf32, and fp16 (16-bit A and B, fp32
 * C and sums, as rnncc's 16-bit modes multiply) (bench/NOTES.md section 105; runtime/rt_wt.c acts on it). Prints per shape and layout the candidates, the heuristic's first and the best
 * (µs a launch: the median of 5 runs of back-to-back launches). Operands are zeros (in fp16 too): the kernels'
 * speed does not depend on the values.
 *
 *   ./build/bench/gemm_layouts [M,N,K ...]
 *
 * Default shapes: the per-step backend's step GEMMs at large (LSTM 4096 x 256 x 1024, GRU 3072 x 256 x 1024) and
 * fastrnns (2048 and 1536 x 64 x 512), and large's hoisted GEMM (4096 x 25600 x 1024). Exit status: 0, 1 a
 * failure, 77 no GPU. A development tool, not a benchmark. */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { CANDIDATES = 32, ROUNDS = 5 };

typedef struct Shape {
    long M, N, K;
} Shape;

static int lt_ok(cublasStatus_t s, const char *call, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return 1;
    fprintf(stderr, "gemm_layouts: %s failed: %s (bench/gemm_layouts.c:%d)\n", call, cublasGetStatusString(s), line);
    return 0;
}
#define CK_LT(call) lt_ok((call), #call, __LINE__)

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

enum { FP32, TF32, FP16, PRECS };
static const char *const prec_name[PRECS] = {"fp32", "tf32", "fp16"};

/* Times every candidate of one layout (op_a) and precision for shape s; prints a line. 0 on a failure. */
static int time_layout(cublasLtHandle_t lt, cublasOperation_t op_a, Shape s, int prec, const float *A, const float *B,
                       float *C, void *ws, size_t ws_bytes) {
    const cudaDataType_t in = prec == FP16 ? CUDA_R_16F : CUDA_R_32F; /* A and B: zeros either way */
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    const cublasOperation_t op_b = CUBLAS_OP_N;
    int ok = CK_LT(cublasLtMatmulDescCreate(&desc, prec == TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
             CK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a)) &&
             CK_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b)) &&
             CK_LT(op_a == CUBLAS_OP_T ? cublasLtMatrixLayoutCreate(&la, in, s.K, s.M, s.K)
                                       : cublasLtMatrixLayoutCreate(&la, in, s.M, s.K, s.M)) &&
             CK_LT(cublasLtMatrixLayoutCreate(&lb, in, s.K, s.N, s.K)) &&
             CK_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, s.M, s.N, s.M)) && CK_LT(cublasLtMatmulPreferenceCreate(&pref)) &&
             CK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                        sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t cand[CANDIDATES];
    int n = 0;
    if (ok) ok = CK_LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, CANDIDATES, cand, &n));
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (ok) ok = CK_CUDA(cudaEventCreate(&e0)) && CK_CUDA(cudaEventCreate(&e1));
    const double flops = 2.0 * (double)s.M * (double)s.N * (double)s.K;
    const int reps = flops > 1e10 ? 3 : 40; /* runs of a few ms: a hoisted GEMM is one */
    const float alpha = 1, beta = 0;
    float first = -1, best = -1;
    int best_i = -1;
    for (int i = 0; ok && i < n; i++) {
        if (cand[i].state != CUBLAS_STATUS_SUCCESS) continue;
        float us[ROUNDS];
        for (int r = 0; ok && r < ROUNDS; r++) {
            ok = CK_CUDA(cudaEventRecord(e0, 0));
            for (int k = 0; ok && k < reps; k++)
                ok = CK_LT(cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &cand[i].algo, ws, ws_bytes, 0));
            float ms = 0;
            ok = ok && CK_CUDA(cudaEventRecord(e1, 0)) && CK_CUDA(cudaEventSynchronize(e1)) &&
                 CK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            us[r] = 1000 * ms / (float)reps;
        }
        qsort(us, ROUNDS, sizeof us[0], cmp_float);
        if (first < 0) first = us[ROUNDS / 2];
        if (best < 0 || us[ROUNDS / 2] < best) best = us[ROUNDS / 2], best_i = i;
    }
    if (ok)
        printf("%-4s %-4s %6ld x %6ld x %5ld: %2d candidates, the heuristic's first %9.2f us, best %9.2f us (#%d)\n",
               op_a == CUBLAS_OP_T ? "tn" : "nn", prec_name[prec], s.M, s.N, s.K, n, first, best, best_i);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
    return ok;
}

int main(int argc, char **argv) {
    bench_prog = "gemm_layouts";
    Shape shapes[16] = {{4096, 256, 1024}, {3072, 256, 1024}, {2048, 64, 512}, {1536, 64, 512}, {4096, 25600, 1024}};
    int ns = 5;
    if (argc > 1) ns = 0;
    for (int i = 1; i < argc; i++) {
        Shape s;
        char end;
        if (ns == 16 || sscanf(argv[i], "%ld,%ld,%ld%c", &s.M, &s.N, &s.K, &end) != 3 || s.M < 1 || s.N < 1 || s.K < 1 ||
            s.M > 65536 || s.N > 65536 || s.K > 65536) {
            fprintf(stderr, "gemm_layouts: error: a shape is M,N,K (each 1 to 65536, at most 16 shapes), got '%s'\n", argv[i]);
            return 1;
        }
        shapes[ns++] = s;
    }
    if (!bench_have_gpu("gemm_layouts")) return EXIT_SKIP;
    size_t a = 0, b = 0, c = 0; /* the largest operands, in floats */
    for (int i = 0; i < ns; i++) {
        const size_t sa = (size_t)shapes[i].M * shapes[i].K, sb = (size_t)shapes[i].K * shapes[i].N,
                     sc = (size_t)shapes[i].M * shapes[i].N;
        a = sa > a ? sa : a, b = sb > b ? sb : b, c = sc > c ? sc : c;
    }
    float *A = NULL, *B = NULL, *C = NULL;
    void *ws = NULL;
    const size_t ws_bytes = (size_t)32 << 20; /* rnncc's (RT_CUBLAS_WS) */
    cublasLtHandle_t lt = NULL;
    int ok = CK_CUDA(cudaMalloc((void **)&A, a * sizeof(float))) && CK_CUDA(cudaMalloc((void **)&B, b * sizeof(float))) &&
             CK_CUDA(cudaMalloc((void **)&C, c * sizeof(float))) && CK_CUDA(cudaMalloc(&ws, ws_bytes)) &&
             CK_CUDA(cudaMemset(A, 0, a * sizeof(float))) && CK_CUDA(cudaMemset(B, 0, b * sizeof(float))) &&
             CK_LT(cublasLtCreate(&lt));
    for (int round = 0; ok && round < 2; round++) /* twice: the second after every kernel's first load */
        for (int prec = 0; ok && prec < PRECS; prec++)
            for (int i = 0; ok && i < ns; i++)
                ok = time_layout(lt, CUBLAS_OP_T, shapes[i], prec, A, B, C, ws, ws_bytes) &&
                     time_layout(lt, CUBLAS_OP_N, shapes[i], prec, A, B, C, ws, ws_bytes);
    if (lt) cublasLtDestroy(lt);
    cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(ws);
    return ok ? 0 : 1;
}
