/* persist_profile: where one step of the persistent kernels goes, as block 0 sees it: grid
 * barriers, staging the operand, the product, reducing and storing it, the element-wise groups
 * (cycles counted in the kernel, persist.cuh's RNN_PROFILE; a development tool, not a benchmark:
 * the counting itself costs block 0 a little).
 *
 *   RNNCC_PROFILE_PERSIST=1 ./build/bench/persist_profile cells/lstm.cell --dim I=1024 --dim H=1024 -T 100 -N 4 \
 *       [--train] [--precision fp32|tf32|fp16|bf16]
 *
 * Prints µs per step per phase for the forward (and the backward with --train). Exit status:
 * 0, 1 a failure, 2 usage, 77 no GPU. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/common.h"
#include "runtime/rt_internal.h"
#include "runtime/rt_verify.h"

static const char *const phase_names[] = {"grid barriers", "staging", "product", "reduce+store", "element-wise",
                                          "weights (once)"};

int main(int argc, char **argv) {
    static const struct option opts[] = {{"dim", required_argument, 0, 'D'}, {"train", no_argument, 0, 't'},
                                         {"precision", required_argument, 0, 'p'}, {0, 0, 0, 0}};
    const char *dims[8];
    int ndims = 0, train = 0, prec = RNNCC_FP32, c;
    long long T = 100, N = 4;
    while ((c = getopt_long(argc, argv, "T:N:", opts, NULL)) != -1) {
        if (c == 'D' && ndims < 8) dims[ndims++] = optarg;
        else if (c == 'T') T = atoll(optarg);
        else if (c == 'N') N = atoll(optarg);
        else if (c == 't') train = 1;
        else if (c == 'p') { /* the benchmarks' parser and message */
            Prec one;
            int n = 0;
            if (!bench_add_precs("persist_profile", &optarg, 1, &one, &n)) return 2;
            prec = bench_rnncc_precision(one);
        } else return 2;
    }
    if (optind != argc - 1 || T < 1 || N < 1) {
        fprintf(stderr, "usage: RNNCC_PROFILE_PERSIST=1 persist_profile FILE --dim NAME=VALUE... [-T T] [-N N] [--train] [--precision P]\n");
        return 2;
    }
    const char *pp = getenv("RNNCC_PROFILE_PERSIST");
    if (!pp || strcmp(pp, "1") != 0) {
        fprintf(stderr, "persist_profile: set RNNCC_PROFILE_PERSIST=1 (the kernels count cycles only then)\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "persist_profile: no CUDA device\n");
        return 77;
    }
    rnncc_program *p = NULL;
    if (rnncc_compile_file(argv[optind], NULL, &p) != RNNCC_OK) {
        fprintf(stderr, "%s", p ? rnncc_program_log(p) : "cannot compile\n");
        return 1;
    }
    rnncc_model_desc desc = {NULL, dims, ndims, 1, 0, (rnncc_precision)prec, -1, RNNCC_BACKEND_PERSISTENT};
    rnncc_model *m = NULL;
    if (rnncc_model_create(p, &desc, &m) != RNNCC_OK) {
        fprintf(stderr, "persist_profile: %s\n", rnncc_model_error(m));
        return 1;
    }
    RtVerify v = {.T = T, .N = N, .backward = train, .repeat = 20, .seed = 3};
    if (rt_verify(m, &v) != RNNCC_OK) {
        fprintf(stderr, "persist_profile: %s\n", rnncc_model_error(m));
        return 1;
    }
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, m->device);
    printf("%s T=%lld N=%lld: median %.3f ms a pass (%s), %.2f us a step; worst error %.2g\n", argv[optind], T, N,
           v.median_ms, train ? "forward + backward" : "forward", v.median_ms * 1e3 / (double)T, v.worst);
    for (int pass = 0; pass <= train; pass++) {
        const RtPersist *rp = NULL;
        for (int k = 0; k < RT_PERSIST_CLASSES; k++)
            if (m->persist[pass][0][k].state == 1) rp = &m->persist[pass][0][k];
        if (!rp) {
            printf("  %s: no persistent kernel ran\n", pass ? "backward" : "forward");
            continue;
        }
        unsigned long long prof[8];
        void *dptr = NULL;
        size_t bytes = 0;
        if (cudaLibraryGetGlobal(&dptr, &bytes, rp->lib, "rnn_prof") != cudaSuccess ||
            cudaMemcpy(prof, dptr, sizeof prof, cudaMemcpyDeviceToHost) != cudaSuccess) {
            fprintf(stderr, "persist_profile: no counters in the %s kernel\n", pass ? "backward" : "forward");
            return 1;
        }
        double steps = (double)prof[6], us = 1e3 / (double)khz, total = 0;
        printf("  %s (%d blocks, %lld bytes of shared memory): %.0f steps counted, at %d MHz\n",
               pass ? "backward" : "forward", rp->plan.blocks, (long long)rp->plan.smem, steps, khz / 1000);
        for (int k = 0; k < 5; k++) total += (double)prof[k];
        for (int k = 0; k < 5; k++)
            printf("    %-15s %7.2f us a step (%4.1f%%)\n", phase_names[k], (double)prof[k] * us / steps,
                   100.0 * (double)prof[k] / total);
        printf("    %-15s %7.2f us a step\n", "total", total * us / steps);
        printf("    %-15s %7.2f us a launch\n", phase_names[5], (double)prof[5] * us / (steps / (double)T));
    }
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    return 0;
}
