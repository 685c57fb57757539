/* Shared pieces of the benchmarks (bench_rnn, custom_cells): configurations, checked CUDA
 * calls, event timing, random data, running an rnncc model through runtime/rnncc.h only.
 * Key idea: every GPU status is checked where it is produced and reported with the call
 * text and file:line; a failed call fails its row, never the silent timing of garbage. */
#ifndef RNNCC_BENCH_COMMON_H
#define RNNCC_BENCH_COMMON_H
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "rnncc.h"

enum { EXIT_SKIP = 77, MAX_CONFIGS = 32 };

/* One benchmark shape: T steps, N sequences, input I, hidden H (I = H in every shipped
 * configuration), layers, bidirectional. */
typedef struct Config {
    const char *name;
    int T, N, I, H, layers, bidir;
} Config;

extern const Config bench_configs[];     /* targets.md's configurations, then fastrnns variants */
extern const int bench_nconfigs;
extern const Config bench_quick_configs[]; /* small shapes for a smoke test */
extern const int bench_nquick;
/* Finds a configuration by name in either list; NULL if none. */
const Config *bench_find_config(const char *name);
/* Appends the named configurations (items, n of them) to configs (*count of max used); on an
 * unknown name or too many, prints "PROG: error: ..." and returns 0. */
int bench_add_configs(const char *prog, char **items, int n, const Config **configs, int *count, int max);

typedef enum Prec { PREC_FP32, PREC_TF32, PREC_FP16, PREC_BF16, PREC_TF32X3, NPREC } Prec;
extern const char *const prec_names[NPREC];
/* Measured GEMM ceilings on the device machine's H100 (design/targets.md): fp32 51, TF32
 * 401, bf16 776 TFLOP/s (fp16 taken as bf16's; tf32x3: a third of TF32's, in fp32 work). */
extern const double prec_peak_tflops[NPREC];
/* rnncc's precision for a benchmark's: fp16 and bf16 are RNNCC_FP16 and RNNCC_BF16 (fp32 data, GEMM
 * inputs rounded to 16 bits, as cuDNN's ALLOW_CONVERSION math); tf32x3 is RNNCC_TF32X3, beside cuDNN in
 * fp32 (FMA math), the cuDNN run whose accuracy it is for. */
rnncc_precision bench_rnncc_precision(Prec p);
/* Appends the named precisions (items, n of them; prec_names) to precs (*count used, at most NPREC),
 * each once; on an unknown name prints "PROG: error: ..." and returns 0. */
int bench_add_precs(const char *prog, char **items, int n, Prec *precs, int *count);

/* ---- checked calls: print the call, the status and file:line; the caller fails its row ---- */
int bench_cuda_ok(cudaError_t e, const char *call, const char *file, int line);
#define CK_CUDA(call) bench_cuda_ok((call), #call, __FILE__, __LINE__)
/* rnncc calls on a model: the model's own message says what went wrong. */
int bench_rnncc_ok(rnncc_status s, const rnncc_model *m, const char *call, const char *file, int line);
#define CK_RNNCC(m, call) bench_rnncc_ok((call), (m), #call, __FILE__, __LINE__)

/* Prints "PROG: no CUDA device (...)" and returns 0 when no device is usable. */
int bench_have_gpu(const char *prog);
extern const char *bench_prog; /* program name for messages */

/* ---- timing ---------------------------------------------------------------------------- */
double bench_now(void); /* host wall clock, seconds */
/* One call of the timed work on stream; 0 when it succeeded (errors already printed). */
typedef int (*BenchFn)(void *ctx, cudaStream_t stream);
typedef struct Timing {
    float median_ms, min_ms, max_ms;
    int runs;
} Timing;
/* warmup untimed calls, then reps calls each between two events on stream, each waited for;
 * fills *t with the median (and spread). 0 on success. */
int bench_time(BenchFn fn, void *ctx, cudaStream_t stream, int warmup, int reps, Timing *t);

/* ---- random data ----------------------------------------------------------------------- */
/* splitmix64; uniform in [-k, k). */
float bench_uniform(uint64_t *state, float k);
void bench_fill(float *v, int64_t n, float k, uint64_t *state);
/* max |a - b| / max |b|; infinity when any value is NaN or infinite; 0 when both are 0. */
double bench_rel_err(const float *a, const float *b, int64_t n);
/* Number of non-finite values in v. */
int64_t bench_count_nonfinite(const float *v, int64_t n);

/* ---- an rnncc model and its buffers -------------------------------------------------------- */
/* Creates a model of the cell in file (NULL on failure, after printing why). dims are
 * "NAME=VALUE" strings; fold and keep as rnncc_model_desc.fold and .keep_derived_weights. */
rnncc_model *bench_model_create(const char *file, const char *cell, const char *const *dims, int ndims, int layers,
                                int bidir, rnncc_precision prec, rnncc_fold fold, int keep);

/* Everything one rnncc forward / training step reads and writes. Device pointers; fields the
 * caller leaves NULL before bench_rnncc_alloc are allocated (and freed) here. */
typedef struct RnnccRun {
    rnncc_model *m;
    rnncc_model_sizes sz;
    int64_t T, N;
    int units;                 /* layers * directions */
    float *x, *y, *dy, *dx;
    float *h0[8], *hT[8], *dhT[8], *dh0[8];
    float *dweights;
    int64_t nweights;
    void *ws, *reserve;
    size_t ws_bytes, reserve_bytes;
    int training;              /* 1: training buffers allocated and rnncc's backward exists */
    char why_no_training[256];
    void *owned[48];           /* what bench_rnncc_alloc allocated, freed by bench_rnncc_free */
    int nowned;
} RnnccRun;
/* Sizes the buffers, allocates what the caller left NULL (want_training: also the reserve,
 * dweights and the gradient buffers). 0 on success. */
int bench_rnncc_alloc(RnnccRun *r, rnncc_model *m, int64_t T, int64_t N, int want_training);
void bench_rnncc_free(RnnccRun *r);
/* Fills the inputs the caller did not supply with random values (x, h0, dy, dhT). */
int bench_rnncc_random_inputs(RnnccRun *r, uint64_t *seed);
/* Sets every parameter of the model to uniform +-k values. */
int bench_rnncc_random_params(rnncc_model *m, float k, uint64_t *seed);
/* BenchFn bodies: ctx is an RnnccRun. Inference = one forward without a reserve; training =
 * forward with the reserve + backward data + backward weights (RNNCC_WGRAD_ADD). */
int bench_rnncc_infer(void *ctx, cudaStream_t stream);
int bench_rnncc_train(void *ctx, cudaStream_t stream);
/* Runs one training step to learn whether rnncc can: 1 yes, 0 not available (r->why_no_training
 * says why: not in this librnncc, or RNNCC_ERR_UNSUPPORTED), -1 a real failure. */
int bench_rnncc_probe_training(RnnccRun *r, cudaStream_t stream);

/* ---- output files ------------------------------------------------------------------------- */
/* Opens path for appending (NULL path: returns NULL); prints why on failure and exits 1. */
FILE *bench_open_append(const char *path);
/* Parses a comma-separated list into items (at most max); returns the count or -1. */
int bench_split(char *s, char **items, int max);

#endif
