/* host_cost: what an rnncc call costs on the host, beside what its pass costs on the GPU (bench/NOTES.md section 95).
 * Prints (1) one driver question about a pointer, asked as runtime/rt_spans.c asks it (between two capture-mode
 * exchanges) and without the exchanges, on device and on host memory; (2) for the LSTM at deepbench, small_b4 and a
 * tiny size, fp32, tf32 and fp16, inference and training: the GPU's time a pass (events around one call, as bench_rnn
 * times), the host's time a call takes to return (enqueue only) and the wall time a pass back to back (100 calls,
 * one sync). Key idea: work done on the host before a call's first launch is GPU time in the first column and
 * hidden in the third.
 *
 *   make bench && ./build/bench/host_cost      (from the repository root: it reads cells/lstm.cell)
 *
 * Exit status: 0, 1 a failure, 77 no GPU. */
#include <string.h>

#include "common.h"

enum { QUESTIONS = 10000, CALLS = 100 };

/* One question about p: its memory type (as a number, so that the loop's result is used). */
static double ask(const void *p, int exchange) {
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (exchange) cudaThreadExchangeStreamCaptureMode(&mode);
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (exchange) cudaThreadExchangeStreamCaptureMode(&mode);
    if (e != cudaSuccess) cudaGetLastError();
    return (double)a.type;
}

/* Microseconds a question about p takes, over QUESTIONS of them at 64 addresses from p on. */
static double question_us(const float *p, int exchange, double *sink) {
    double t0 = bench_now();
    for (int i = 0; i < QUESTIONS; i++) *sink += ask(p + i % 64, exchange);
    return (bench_now() - t0) / QUESTIONS * 1e6;
}

/* One row: the LSTM at T, N, I = H in prec, inference or training. 0 on success. */
static int row(const char *name, int T, int N, int H, rnncc_precision prec, int training, cudaStream_t stream) {
    char dI[32], dH[32];
    snprintf(dI, sizeof dI, "I=%d", H);
    snprintf(dH, sizeof dH, "H=%d", H);
    const char *dims[2] = {dI, dH};
    rnncc_model *m = bench_model_create("cells/lstm.cell", NULL, dims, 2, 1, 0, prec, RNNCC_FOLD_AUTO, !training);
    RnnccRun r;
    memset(&r, 0, sizeof r);
    uint64_t seed = 1;
    BenchFn fn = training ? bench_rnncc_train : bench_rnncc_infer;
    Timing t;
    int ok = m && bench_rnncc_alloc(&r, m, T, N, training) == 0 && bench_rnncc_random_params(m, 1.0f / 32, &seed) == 0 &&
             bench_rnncc_random_inputs(&r, &seed) == 0 && bench_time(fn, &r, stream, 5, 30, &t) == 0;
    double host = 0, wall = 0;
    for (int i = 0; ok && i < CALLS; i++) {
        double t0 = bench_now();
        ok = fn(&r, stream) == 0;
        host += bench_now() - t0;
        ok = ok && CK_CUDA(cudaStreamSynchronize(stream));
    }
    double t0 = bench_now();
    for (int i = 0; ok && i < CALLS; i++) ok = fn(&r, stream) == 0;
    ok = ok && CK_CUDA(cudaStreamSynchronize(stream));
    wall = bench_now() - t0;
    if (ok)
        printf("| %s (%d, %d, %d) | %s | %s | %.1f | %.1f | %.1f |\n", name, T, N, H, rnncc_precision_name(prec),
               training ? "training" : "inference", t.median_ms * 1e3, host / CALLS * 1e6, wall / CALLS * 1e6);
    else
        printf("| %s (%d, %d, %d) | %s | %s | FAIL | | |\n", name, T, N, H, rnncc_precision_name(prec),
               training ? "training" : "inference");
    bench_rnncc_free(&r);
    rnncc_model_destroy(m);
    return ok ? 0 : 1;
}

int main(void) {
    bench_prog = "host_cost";
    if (!bench_have_gpu(bench_prog)) return EXIT_SKIP;
    static float host[64];
    float *dev = NULL;
    cudaStream_t stream;
    if (!CK_CUDA(cudaMalloc((void **)&dev, 64 * sizeof(float))) || !CK_CUDA(cudaStreamCreate(&stream))) return 1;
    double sink = 0;
    printf("one pointer question (us), as rt_spans.c asks it: device memory %.3f, host memory %.3f; without the "
           "capture-mode exchanges: %.3f, %.3f\n\n",
           question_us(dev, 1, &sink), question_us(host, 1, &sink), question_us(dev, 0, &sink), question_us(host, 0, &sink));
    printf("| config (T, N, I=H) | precision | mode | GPU us a pass (events) | host us a call | us a pass back to back |\n"
           "|---|---|---|---|---|---|\n");
    static const rnncc_precision precs[] = {RNNCC_FP32, RNNCC_TF32, RNNCC_FP16};
    int failed = 0;
    for (int training = 0; training < 2; training++)
        for (int p = 0; p < 3; p++) {
            failed |= row("deepbench", 25, 32, 1024, precs[p], training, stream);
            failed |= row("small_b4", 100, 4, 1024, precs[p], training, stream);
            failed |= row("tiny", 10, 4, 64, precs[p], training, stream);
        }
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return failed || sink < 0;
}
