/* Checking a model against the double-precision reference on random data, and timing it:
 * the one piece behind `rnncc run` and the GPU tests (not part of the public API). */
#ifndef RNNCC_RT_VERIFY_H
#define RNNCC_RT_VERIFY_H
#include <stdint.h>

#include "rnncc.h"

typedef struct RtVerify {
    /* what to run */
    int64_t T, N;
    int varlen;         /* random lengths in 0..T (the first sequence full) */
    int random_h0;      /* random initial states instead of zeros */
    int training;       /* run the training-mode forward (with a reserve) */
    int backward;       /* also backward (implies training): check dx, dh0 and every weight gradient */
    int repeat;         /* timed runs after 3 warm-ups (0: one untimed run) */
    int time_only;      /* only time it: no reference, no errors (median_ms alone is filled) */
    uint64_t seed;
    void *stream;       /* cudaStream_t, NULL for the default stream */
    int ws_offset;      /* bytes past cudaMalloc's pointer where the workspace starts (tests of alignment) */
    int rs_offset;      /* and where the reserve starts */
    int nan_workspace;  /* 1: NaN in every float of the workspace too before each checked pass (a pass reading
                           what it has not written shows; every table of tests/check_runtime.c) */
    /* results: max |gpu - ref| / max |ref| per tensor (NaN counts as infinite) */
    double out_err[8], state_err[8], worst;
    double dx_err, dh0_err, dw_err, grad_worst; /* backward: worst over states / parameters */
    char dw_worst_name[64];                     /* the parameter with the largest gradient error */
    char kinks[96];     /* the cell's ops whose derivatives jump (ir_cell_kinks, ", "-separated; "" for none) */
    float median_ms;    /* per forward (with backward: forward + backward data + weights), when repeat > 0 */
} RtVerify;

/* Sets the model's weights to random values (uniform in +-1/sqrt(S), S the first state's
 * size), runs it on random inputs (uniform in +-1) and the reference on the same
 * float-rounded values, and fills the results. */
rnncc_status rt_verify(rnncc_model *m, RtVerify *v);
/* The bound on rt_verify's relative errors in precision p: of outputs and states, or (gradient) of
 * dx, dh0 and the weight gradients. fp16 has tf32's 10-bit mantissa, so tf32's bounds; bf16 has 8 bits. */
double rt_verify_bound(rnncc_precision p, int gradient);

#endif
