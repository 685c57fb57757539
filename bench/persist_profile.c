/* persist_profile: where one step of the persistent kernels goes, as block 0 sees it (grid
 * barriers, staging the operand, the product, reducing and storing it, the element-wise groups),
 * then the spread over every block and the blocks that wait least at the barriers
 * (cycles counted in the kernel, persist.cuh's RNN_PROFILE; a development tool, not a benchmark:
 * the counting itself costs each block a little).
 *
 *   RNNCC_PROFILE_PERSIST=1 ./build/bench/persist_profile cells/lstm.cell --dim I=1024 --dim H=1024 -T 100 -N 4 \
 *       [--train] [--precision fp32|tf32|fp16|bf16] [--no-check]
 *
 * Prints µs per step per phase for the forward (and the backward with --train). --no-check skips
 * the check against the CPU double reference (minutes at large sizes on the device). Exit status:
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

/* persist.cuh's RNN_PROF_BLOCKS rows of rnn_prof, 8 counts a block. */
enum { PROF_BLOCKS = 1024 };
typedef unsigned long long Counts[8];

/* A block's cycles in every phase of a step but the barriers (c: its counts). */
static double work_of(const Counts c) { return (double)c[1] + (double)c[2] + (double)c[3] + (double)c[4]; }

/* order[0..n) = the indices of v[0..n) from the smallest value to the largest (insertion sort). */
static void sort_by(const double *v, int *order, int n) {
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && v[order[j - 1]] > v[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
}

int main(int argc, char **argv) {
    static const struct option opts[] = {{"dim", required_argument, 0, 'D'}, {"train", no_argument, 0, 't'},
                                         {"precision", required_argument, 0, 'p'}, {"no-check", no_argument, 0, 'n'},
                                         {0, 0, 0, 0}};
    const char *dims[8];
    int ndims = 0, train = 0, check = 1, prec = RNNCC_FP32, c;
    long long T = 100, N = 4;
    while ((c = getopt_long(argc, argv, "T:N:", opts, NULL)) != -1) {
        if (c == 'D' && ndims < 8) dims[ndims++] = optarg;
        else if (c == 'T') T = atoll(optarg);
        else if (c == 'N') N = atoll(optarg);
        else if (c == 't') train = 1;
        else if (c == 'n') check = 0;
        else if (c == 'p') { /* the benchmarks' parser and message */
            Prec one;
            int n = 0;
            if (!bench_add_precs("persist_profile", &optarg, 1, &one, &n)) return 2;
            prec = bench_rnncc_precision(one);
        } else return 2;
    }
    if (optind != argc - 1 || T < 1 || N < 1) {
        fprintf(stderr, "usage: RNNCC_PROFILE_PERSIST=1 persist_profile FILE --dim NAME=VALUE... [-T T] [-N N] [--train] [--precision P] [--no-check]\n");
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
    rnncc_model_desc desc = {NULL, dims, ndims, 1, 0, (rnncc_precision)prec, -1, RNNCC_BACKEND_PERSISTENT, RNNCC_FOLD_AUTO, 0};
    rnncc_model *m = NULL;
    if (rnncc_model_create(p, &desc, &m) != RNNCC_OK) {
        fprintf(stderr, "persist_profile: %s\n", rnncc_model_error(m));
        return 1;
    }
    RtVerify v = {.T = T, .N = N, .backward = train, .repeat = 20, .seed = 3, .time_only = !check};
    if (rt_verify(m, &v) != RNNCC_OK) {
        fprintf(stderr, "persist_profile: %s\n", rnncc_model_error(m));
        return 1;
    }
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, m->device);
    printf("%s T=%lld N=%lld: median %.3f ms a pass (%s), %.2f us a step; ", argv[optind], T, N, v.median_ms,
           train ? "forward + backward" : "forward", v.median_ms * 1e3 / (double)T);
    if (check) printf("worst error %.2g\n", v.worst);
    else printf("not checked (--no-check)\n");
    for (int pass = 0; pass <= train; pass++) {
        const RtPersist *rp = NULL;
        for (int k = 0; k < RT_PERSIST_CLASSES; k++)
            if (m->persist[pass][0][k].state == 1) rp = &m->persist[pass][0][k];
        if (!rp) {
            printf("  %s: no persistent kernel ran\n", pass ? "backward" : "forward");
            continue;
        }
        Counts prof[PROF_BLOCKS];
        const int blocks = rp->plan.blocks < PROF_BLOCKS ? rp->plan.blocks : PROF_BLOCKS;
        void *dptr = NULL;
        size_t bytes = 0;
        if (cudaLibraryGetGlobal(&dptr, &bytes, rp->lib, "rnn_prof") != cudaSuccess || bytes < sizeof(Counts) * (size_t)blocks ||
            cudaMemcpy(prof, dptr, sizeof(Counts) * (size_t)blocks, cudaMemcpyDeviceToHost) != cudaSuccess) {
            fprintf(stderr, "persist_profile: no counters in the %s kernel\n", pass ? "backward" : "forward");
            return 1;
        }
        const double steps = (double)prof[0][6], us = 1e3 / (double)khz;
        printf("  %s (%d blocks, %lld bytes of shared memory): %.0f steps counted, at %d MHz\n",
               pass ? "backward" : "forward", rp->plan.blocks, (long long)rp->plan.smem, steps, khz / 1000);
        const double total = work_of(prof[0]) + (double)prof[0][0];
        printf("   block 0:\n");
        for (int k = 0; k < 5; k++)
            printf("    %-15s %7.2f us a step (%4.1f%%)\n", phase_names[k], (double)prof[0][k] * us / steps,
                   100.0 * (double)prof[0][k] / total);
        printf("    %-15s %7.2f us a step\n", "total", total * us / steps);
        printf("    %-15s %7.2f us a launch\n", phase_names[5], (double)prof[0][5] * us / (steps / (double)T));
        /* every block's phases, and the blocks that wait least at the barriers: the ones the others wait for */
        printf("   its %d blocks, us a step: min / median / max (block)\n", blocks);
        double v[PROF_BLOCKS];
        int order[PROF_BLOCKS];
        for (int k = 0; k < 6; k++) {
            for (int b = 0; b < blocks; b++) v[b] = k < 5 ? (double)prof[b][k] : work_of(prof[b]);
            sort_by(v, order, blocks);
            printf("    %-15s %7.2f / %7.2f / %7.2f (%d)\n", k < 5 ? phase_names[k] : "all but barriers",
                   v[order[0]] * us / steps, v[order[blocks / 2]] * us / steps, v[order[blocks - 1]] * us / steps,
                   order[blocks - 1]);
        }
        for (int b = 0; b < blocks; b++) v[b] = (double)prof[b][0];
        sort_by(v, order, blocks);
        printf("   the %d blocks waiting least at the barriers (us a step: barriers, staging, product, reduce+store, element-wise):\n",
               blocks < 6 ? blocks : 6);
        for (int i = 0; i < blocks && i < 6; i++) {
            const int b = order[i];
            printf("    block %4d (rank %d in its cluster):", b, b % rp->plan.cluster);
            for (int k = 0; k < 5; k++) printf(" %6.2f", (double)prof[b][k] * us / steps);
            printf("\n");
        }
    }
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    return 0;
}
