/* capture_probe: which CUDA calls made on one thread spoil a stream capture that another thread
 * has under way in thread-local mode (docs/runtime.md, Threads; bench/NOTES.md section 12). For
 * each call: a second thread begins a capture, the main thread makes the call, the capture goes
 * on and ends; prints whether the capture survived. A development tool, not a benchmark.
 *
 *   ./build/bench/capture_probe
 *
 * Exit status: 0, 1 a failure to set up, 77 no GPU. (Repeating the calls that spoil captures
 * while captures run crashed driver 580.159.04; each is made once here.) */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct Probe {
    pthread_barrier_t bar;
    cudaStream_t cap, own;
    float *buf, *dev;
    char *ptx;
    cublasLtHandle_t kept; /* made during a capture, destroyed after it */
} Probe;

enum { CALLS = 15 };

/* The capturing thread: a node before the other thread's call, one after. */
static void *capturer(void *arg) {
    Probe *p = arg;
    cudaStreamBeginCapture(p->cap, cudaStreamCaptureModeThreadLocal);
    cudaMemsetAsync(p->buf, 0, 4096, p->cap);
    pthread_barrier_wait(&p->bar); /* the other thread makes its call */
    pthread_barrier_wait(&p->bar);
    cudaError_t after = cudaMemsetAsync(p->buf, 1, 4096, p->cap);
    cudaGraph_t g = NULL;
    cudaError_t end = cudaStreamEndCapture(p->cap, &g);
    printf("  capture: next call %s, end %s: %s\n", cudaGetErrorName(after), cudaGetErrorName(end),
           g ? "survived" : "SPOILED");
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    return NULL;
}

/* Loads the probe's one-kernel PTX as a library and returns its kernel. */
static cudaError_t load_kernel(Probe *p, cudaLibrary_t *lib, cudaKernel_t *k) {
    cudaError_t e = cudaLibraryLoadData(lib, p->ptx, NULL, NULL, 0, NULL, NULL, 0);
    return e == cudaSuccess ? cudaLibraryGetKernel(k, *lib, "k") : e;
}

/* Makes call `which` (0 .. CALLS-1) on this thread; its name in *name, its status in *e. */
static void make_call(Probe *p, int which, const char **name, cudaError_t *e) {
    static const float host[1024];
    void *q = NULL;
    cudaLibrary_t lib;
    cudaKernel_t k;
    cudaStream_t s;
    cudaEvent_t v;
    void *args[] = {&p->dev};
    *e = cudaSuccess;
    switch (which) {
    case 14: *name = "nothing (the baseline)"; break;
    case 0: *name = "cudaMemcpy host to device"; *e = cudaMemcpy(p->dev, host, 4096, cudaMemcpyHostToDevice); break;
    case 1: *name = "cudaDeviceSynchronize"; *e = cudaDeviceSynchronize(); break;
    case 2: *name = "cudaStreamSynchronize (own stream)"; cudaMemsetAsync(p->dev, 0, 4096, p->own);
            *e = cudaStreamSynchronize(p->own); break;
    case 3: *name = "cudaStreamSynchronize (legacy stream)"; *e = cudaStreamSynchronize(0); break;
    case 4: *name = "cudaEventSynchronize"; cudaEventCreate(&v); cudaEventRecord(v, p->own);
            *e = cudaEventSynchronize(v); cudaEventDestroy(v); break;
    case 5:
        *name = "cudaMalloc, cudaFree";
        *e = cudaMalloc(&q, 1 << 20);
        if (*e == cudaSuccess) *e = cudaFree(q);
        break;
    case 6:
        *name = "cudaMallocAsync, cudaFreeAsync";
        *e = cudaMallocAsync(&q, 1 << 20, p->own);
        if (*e == cudaSuccess) *e = cudaFreeAsync(q, p->own);
        break;
    case 7: *name = "cudaMemset"; *e = cudaMemset(p->dev, 0, 4096); break;
    case 8:
        *name = "cudaMallocHost, cudaFreeHost";
        *e = cudaMallocHost(&q, 4096);
        if (*e == cudaSuccess) *e = cudaFreeHost(q);
        break;
    case 9:
        *name = "cudaStreamCreate, cudaStreamDestroy (with work)";
        *e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        if (*e == cudaSuccess) cudaMemsetAsync(p->dev, 0, 4096, s), *e = cudaStreamDestroy(s);
        break;
    case 10: *name = "cudaLibraryLoadData, launch, cudaLibraryUnload"; *e = load_kernel(p, &lib, &k);
             if (*e == cudaSuccess) {
                 cudaLaunchKernel((const void *)k, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, p->own);
                 cudaStreamSynchronize(p->own);
                 *e = cudaLibraryUnload(lib);
             } break;
    case 11: *name = "cooperative launch"; *e = load_kernel(p, &lib, &k);
             if (*e == cudaSuccess) {
                 cudaLaunchAttribute at = {.id = cudaLaunchAttributeCooperative, .val.cooperative = 1};
                 cudaLaunchConfig_t cfg = {.gridDim = {2, 1, 1}, .blockDim = {32, 1, 1}, .stream = p->own, .attrs = &at, .numAttrs = 1};
                 *e = cudaLaunchKernelExC(&cfg, (const void *)k, args);
                 cudaStreamSynchronize(p->own);
                 cudaLibraryUnload(lib);
             } break;
    case 12: *name = "cublasLtCreate (destroyed after the capture)";
             *e = cublasLtCreate(&p->kept) ? cudaErrorUnknown : cudaSuccess; break;
    case 13: {
        *name = "cublasCreate, cublasDestroy";
        cublasHandle_t h;
        *e = cublasCreate(&h) ? cudaErrorUnknown : cudaSuccess;
        if (*e == cudaSuccess) cublasDestroy(h);
        break;
    }
    }
}

int main(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("capture_probe: no CUDA device\n");
        return 77;
    }
    Probe p = {0};
    nvrtcProgram prog;
    size_t size = 0;
    if (nvrtcCreateProgram(&prog, "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = 1; }", "k.cu", 0, NULL,
                           NULL) != NVRTC_SUCCESS || nvrtcCompileProgram(prog, 0, NULL) != NVRTC_SUCCESS ||
        nvrtcGetPTXSize(prog, &size) != NVRTC_SUCCESS || !(p.ptx = malloc(size)) || nvrtcGetPTX(prog, p.ptx) != NVRTC_SUCCESS)
        return 1;
    nvrtcDestroyProgram(&prog);
    if (cudaMalloc((void **)&p.buf, 4096) != cudaSuccess || cudaMalloc((void **)&p.dev, 4096) != cudaSuccess ||
        cudaStreamCreateWithFlags(&p.cap, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&p.own, cudaStreamNonBlocking) != cudaSuccess)
        return 1;
    for (int which = 0; which < CALLS; which++) {
        const char *name = "";
        cudaError_t e = cudaSuccess;
        pthread_barrier_init(&p.bar, NULL, 2);
        pthread_t t;
        if (pthread_create(&t, NULL, capturer, &p) != 0) return 1;
        pthread_barrier_wait(&p.bar);
        make_call(&p, which, &name, &e);
        printf("%-48s -> %s\n", name, cudaGetErrorName(e));
        fflush(stdout);
        pthread_barrier_wait(&p.bar);
        pthread_join(t, NULL);
        pthread_barrier_destroy(&p.bar);
        if (p.kept) cublasLtDestroy(p.kept), p.kept = NULL;
        cudaGetLastError();
        cudaDeviceSynchronize();
    }
    return 0;
}
