/* handoff_floor: the floor of a persistent step loop's hand-off, no products, four ways (bench/NOTES.md
 * sections 97-98). Each of G blocks owns its share of H units of N sequences; a step reads the whole 16-bit state
 * of the step before (each of the W warps its share of K = H, for every sequence, in 16-byte loads), adds it up
 * per sequence (a stand-in for the product: every element counts), and writes its units' next values:
 *   barrier   rnncc's hand-off: the block's stores, __syncthreads, thread 0's fence and atomic arrival on one
 *             counter, then every block polls the counter (acquire) and reads the state with plain loads;
 *   sentinel  cuDNN's persistent LSTM's (its SASS, section 97): the state's step slots filled beforehand with a
 *             value no step writes (0xFFFF), each warp polling its own share with relaxed 16-byte loads until no
 *             element holds it; no fence, no counter (each element is its own flag: the memory model needs
 *             nothing more, unlike cuDNN's check of one element a 16-byte load);
 *   flags     rnncc's flags tiles' words (persist.cuh rnn_flag_put16): each 16-bit value beside the 16-bit flag of
 *             the step that reads it in one 4-byte word, in two slots taken in turn (twice the bytes, no fill);
 *   blocks    a flag a block instead of one counter (bench/NOTES.md section 98): the block's stores, __syncthreads,
 *             thread 0's release store of the step's number into the block's own word, then warp 0 of every block
 *             polls all G words (acquire, a lane G/32 of them) and the block reads the state with plain loads: the
 *             barrier's ordering without G atomics on one address.
 * With `staged`, each warp also puts what it read into shared memory and the block meets at __syncthreads
 * before adding it up (the staging of rnncc's products). Prints µs a step (the median of 5 launches of T2
 * steps less that of T1 steps, over T2 - T1) and checks the last step's state against the host's replay. A
 * value or arrival that never comes traps the launch after 2^22 polls (seconds): FAILED, never a hang.
 *
 *   ./build/bench/handoff_floor [--compile-only ARCH] [--serial-polls | --overlap] [--work C] [--groups K] [--steps T1,T2]
 *                               [G,W,N,H ...]
 *
 * The sentinel's and the flags' polls go in rounds: each round loads again, together, every 16-byte load of the lane
 * still unset (as rnncc's rnn_poll_b), so that a round costs one L2 round trip. --serial-polls polls each load until
 * it is set, one after another (a round trip per load still unset when its turn comes): section 98's figures, which
 * grew with the loads a lane (N H / 8 W / 32) and overstated both schemes' floors 2-6 times (bench/NOTES.md section 99).
 * --work C puts each load's value through C dependent FMAs as it is added up (a stand-in for a product's work on it;
 * the sums are unchanged), and --overlap has the unstaged sentinel and flags add each load up as soon as it lands,
 * between rounds of polls, as a product could take its k steps while the rest arrive, where a barrier's loads all
 * wait for the last block (section 99's Next 1). --groups K (2 or 4) takes a step's N sequences in K groups in turn,
 * each group read, added up, written and handed off on its own (its own counter, or words, or slots' polls), so that a
 * group's hand-off travels while the block works on the next group: cuDNN's persistent LSTM's SASS multiplies 8
 * sequences a pass of its step body (24 HMMA.16816 a warp, one n8 tile; bench/NOTES.md section 105). Default: a grid
 * of shapes, one group.
 *
 * --compile-only compiles every kernel the run would build for ARCH (sm_90) with NVRTC, and needs no GPU.
 *
 * Exit status: 0, 1 a failure (a wrong state included), 77 no GPU. A development tool, not a benchmark. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "runtime/rt_nvrtc.h"

/* The kernel; the program prepends G, W, N, H, SCHEME (0 barrier, 1 sentinel, 2 flags, 3 blocks), STAGED, SERIAL_POLLS, WORK
 * and OVERLAP (FloorOpts). Step t reads
 * slot t of `buf` ([T+1][N][H] 16-bit values; flags: slot t % 2 of [2][N][H] 4-byte words, the value low) and
 * writes slot t+1: value (n, j) = mix(sum over k of step t's (n, k), j), never 0xFFFF. */
static const char kernel_text[] =
    "#define KW (H / W)                       /* a warp's share of K */\n"
    "#define PER_CHUNK (SCHEME == 2 ? 4 : 8)  /* values a 16-byte load */\n"
    "#define CPR (KW / PER_CHUNK)             /* a sequence's loads of the warp's share */\n"
    "#define NG (N / GROUPS)                  /* a group's sequences */\n"
    "#define CHUNKS (NG * CPR)                /* its 16-byte loads a step and group */\n"
    "#define PER_LANE ((CHUNKS + 31) / 32)\n"
    "/* loads added up as they land, between rounds of polls (--overlap: the unstaged sentinel and flags in rounds) */\n"
    "#define AS_THEY_LAND (OVERLAP && !STAGED && !SERIAL_POLLS && (SCHEME == 1 || SCHEME == 2))\n"
    "#define SPINS (1u << 22)                 /* polls before giving up: seconds */\n"
    "__device__ __forceinline__ unsigned mix(unsigned s, int j) { return ((s + (unsigned)j) * 2654435761u >> 17) & 0x7fffu; }\n"
    "__device__ __forceinline__ uint4 ld_relaxed(const uint4 *p) {\n"
    "    uint4 v;\n"
    "    asm volatile(\"ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];\" : \"=r\"(v.x), \"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : \"l\"(p) : \"memory\");\n"
    "    return v;\n"
    "}\n"
    "__device__ __forceinline__ bool unset(unsigned w) { return (w & 0xffffu) == 0xffffu || (w >> 16) == 0xffffu; }\n"
    "__device__ __forceinline__ bool any_unset(uint4 v) { return unset(v.x) || unset(v.y) || unset(v.z) || unset(v.w); }\n"
    "__device__ __forceinline__ unsigned flag16(int t) { return 1u + (unsigned)t % 65535u; }\n"
    "__device__ __forceinline__ bool stale(uint4 v, unsigned f) { return (v.x >> 16) != f || (v.y >> 16) != f || (v.z >> 16) != f || (v.w >> 16) != f; }\n"
    "/* does step t's load v still lack a value (the sentinel's 0xFFFF, or a flag of another step)? */\n"
    "__device__ __forceinline__ bool unready(uint4 v, int t) { return SCHEME == 2 ? stale(v, flag16(t)) : any_unset(v); }\n"
    "__device__ __forceinline__ unsigned lows(uint4 v) { return (v.x & 0xffffu) + (v.y & 0xffffu) + (v.z & 0xffffu) + (v.w & 0xffffu); }\n"
    "/* WORK dependent FMAs on a load's value (a stand-in for a product's k step on it); always 0, which the compiler cannot know */\n"
    "__device__ __forceinline__ unsigned work(uint4 v) {\n"
    "    float x = __uint_as_float((v.x & 0x7fffu) | 0x3f800000u);  /* in [1, 2), and stays there */\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < WORK; i++) x = fmaf(x, 0.999f, 0.001f);\n"
    "    return x > 4.0f;\n"
    "}\n"
    "/* step t's load c of this warp in group g: sequence g NG + c / CPR, k = the warp's first + PER_CHUNK (c % CPR) */\n"
    "__device__ __forceinline__ const uint4 *chunk(const void *buf, int t, int g, int c, int warp) {\n"
    "    const long long at = (long long)(g * NG + c / CPR) * H + warp * KW + PER_CHUNK * (c % CPR);\n"
    "    if (SCHEME == 2) return (const uint4 *)((const unsigned *)buf + (long long)(t & 1) * N * H + at);\n"
    "    return (const uint4 *)((const unsigned short *)buf + (long long)t * N * H + at);\n"
    "}\n"
    "/* polls *p with acquires until it reaches want; a lost arrival fails the launch, never hangs it */\n"
    "__device__ __forceinline__ void wait_at_least(const unsigned *p, unsigned want) {\n"
    "    unsigned c, spins = 0;\n"
    "    do {\n"
    "        asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(c) : \"l\"(p) : \"memory\");\n"
    "        if (++spins > SPINS) __trap();\n"
    "    } while (c < want);\n"
    "}\n"
    "__device__ __forceinline__ unsigned halves(uint4 v) { return (v.x & 0xffffu) + (v.x >> 16) + (v.y & 0xffffu) + (v.y >> 16) +\n"
    "                                                         (v.z & 0xffffu) + (v.z >> 16) + (v.w & 0xffffu) + (v.w >> 16); }\n"
    "/* load c's value (and its WORK) added into its sequence's sum */\n"
    "__device__ __forceinline__ void take(unsigned *sum, int c, uint4 v) { atomicAdd(&sum[c / CPR], (SCHEME == 2 ? lows(v) : halves(v)) + work(v)); }\n"
    "extern \"C\" __global__ void __launch_bounds__(32 * W, 1) floor_kernel(void *buf, unsigned *count, int T) {\n"
    "    __shared__ unsigned red[3][N];\n"
    "    extern __shared__ uint4 staged[];  /* STAGED: [W][PER_LANE * 32] */\n"
    "    const int s = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
    "    const int j0 = (int)((long long)H * s / G), nj = (int)((long long)H * (s + 1) / G) - j0;\n"
    "    for (int i = threadIdx.x; i < 3 * N; i += blockDim.x) red[i / N][i % N] = 0;\n"
    "    __syncthreads();\n"
    "    for (int t = 0; t < T; t++)\n"
    "    for (int g = 0; g < GROUPS; g++) {  /* the sequences in GROUPS groups in turn, each handed off on its own */\n"
        "#if SCHEME == 0 || SCHEME == 3\n"
    "        if (t > 0) {  /* group g's step t-1 complete everywhere: G t arrivals on its counter, or every block's word\n"
    "                       * of it (count: [GROUPS][G]) at t */\n"
    "            if (SCHEME == 0 && threadIdx.x == 0) wait_at_least(count + g, (unsigned)G * t);\n"
    "            if (SCHEME == 3 && warp == 0) {\n"
    "                for (int b = lane; b < G; b += 32) wait_at_least(count + g * G + b, (unsigned)t);\n"
    "                __syncwarp();\n"
    "            }\n"
    "            __syncthreads();\n"
    "        }\n"
    "#endif\n"
    "        uint4 v[PER_LANE] = {};\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < PER_LANE; r++) {\n"
    "            const int c = lane + 32 * r;\n"
    "            if (c < CHUNKS) v[r] = SCHEME == 1 || SCHEME == 2 ? ld_relaxed(chunk(buf, t, g, c, warp)) : *chunk(buf, t, g, c, warp);\n"
    "        }\n"
    "#if (SCHEME == 1 || SCHEME == 2) && SERIAL_POLLS  /* each load polled until set, one after another */\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < PER_LANE; r++) {\n"
    "            const int c = lane + 32 * r;\n"
    "            for (unsigned spins = 0; c < CHUNKS && unready(v[r], t);\n"
    "                 v[r] = ld_relaxed(chunk(buf, t, g, c, warp)))\n"
    "                if (++spins > SPINS) __trap();  /* a value never written fails the launch, never hangs it */\n"
    "        }\n"
    "#elif SCHEME == 1 || SCHEME == 2  /* rounds: every load still unset polled again, together (as rnncc's rnn_poll_b) */\n"
    "        for (unsigned spins = 0, missing = 1, done = 0; missing; ) {  /* done: the loads added up (AS_THEY_LAND) */\n"
    "            missing = 0;\n"
    "#pragma unroll\n"
    "            for (int r = 0; r < PER_LANE; r++) {\n"
    "                const int c = lane + 32 * r;\n"
    "                if (c >= CHUNKS || (done >> r & 1u)) continue;\n"
    "                if (unready(v[r], t)) {\n"
    "                    missing = 1;\n"
    "                    v[r] = ld_relaxed(chunk(buf, t, g, c, warp));\n"
    "                } else if (AS_THEY_LAND) {  /* added up as it lands, while the others are polled */\n"
    "                    take(red[t % 3] + g * NG, c, v[r]);\n"
    "                    done |= 1u << r;\n"
    "                }\n"
    "            }\n"
    "            if (++spins > SPINS) __trap();\n"
    "        }\n"
    "#endif\n"
    "#if STAGED\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < PER_LANE; r++) staged[(warp * PER_LANE + r) * 32 + lane] = v[r];\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < PER_LANE; r++) v[r] = staged[(warp * PER_LANE + r) * 32 + lane];\n"
    "#endif\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < PER_LANE; r++) {\n"
    "            const int c = lane + 32 * r;\n"
    "            if (c < CHUNKS && !AS_THEY_LAND) take(red[t % 3] + g * NG, c, v[r]);\n"
    "        }\n"
    "        __syncthreads();\n"
    "        for (int i = threadIdx.x; i < NG * nj; i += blockDim.x) {\n"
    "            const int n = g * NG + i / nj, j = j0 + i % nj;\n"
    "            const unsigned short w = (unsigned short)mix(red[t % 3][n], j);\n"
    "            if (SCHEME == 2) {  /* the value beside the flag of step t+1, which reads it */\n"
    "                unsigned *q = (unsigned *)buf + (long long)((t + 1) & 1) * N * H + (long long)n * H + j;\n"
    "                asm volatile(\"st.relaxed.gpu.global.u32 [%0], %1;\" :: \"l\"(q), \"r\"(flag16(t + 1) << 16 | w) : \"memory\");\n"
    "            } else {\n"
    "                unsigned short *q = (unsigned short *)buf + (long long)(t + 1) * N * H + (long long)n * H + j;\n"
    "                if (SCHEME == 1) asm volatile(\"st.relaxed.gpu.global.u16 [%0], %1;\" :: \"l\"(q), \"h\"(w) : \"memory\");  /* read as it lands */\n"
    "                else *q = w;\n"
    "            }\n"
    "        }\n"
    "        for (int i = threadIdx.x; i < NG; i += blockDim.x) red[(t + 2) % 3][g * NG + i] = 0;  /* used at step t+2, after step t+1's __syncthreads */\n"
    "#if SCHEME == 0\n"
    "        __syncthreads();  /* this block's stores of step t, then its arrival */\n"
    "        if (threadIdx.x == 0) { __threadfence(); atomicAdd(count + g, 1u); }\n"
    "#elif SCHEME == 3\n"
    "        __syncthreads();  /* this block's stores of step t, then its word */\n"
    "        if (threadIdx.x == 0) asm volatile(\"st.release.gpu.global.u32 [%0], %1;\" :: \"l\"(count + g * G + s), \"r\"((unsigned)t + 1u) : \"memory\");\n"
    "#endif\n"
    "    }\n"
    "}\n";

typedef struct Shape {
    int G, W, N, H;
} Shape;

/* How every kernel of a run polls and adds up (the command line's options). */
typedef struct FloorOpts {
    int serial;  /* --serial-polls: each load polled until set, in turn (section 98's way) */
    int work;    /* --work C: C dependent FMAs on each load's value as it is added up */
    int overlap; /* --overlap: the unstaged sentinel and flags add each load up as it lands, between polls */
    int groups;  /* --groups K: a step's sequences in K groups in turn, each handed off on its own (1: all at once) */
} FloorOpts;

/* The host's replay of T steps from slot 0 of state (N x H words): slot T into out. 0 when memory ran out. */
static int replay(const Shape *sh, int T, const unsigned short *first, unsigned short *out) {
    const size_t NH = (size_t)sh->N * sh->H;
    unsigned short *cur = malloc(NH * sizeof *cur), *nxt = malloc(NH * sizeof *nxt);
    if (!cur || !nxt) {
        free(cur), free(nxt);
        fprintf(stderr, "handoff_floor: out of memory for the host's replay\n");
        return 0;
    }
    memcpy(cur, first, NH * sizeof *cur);
    for (int t = 0; t < T; t++) {
        for (int n = 0; n < sh->N; n++) {
            unsigned sum = 0;
            for (int k = 0; k < sh->H; k++) sum += cur[(size_t)n * sh->H + k];
            for (int j = 0; j < sh->H; j++) nxt[(size_t)n * sh->H + j] = (unsigned short)(((sum + (unsigned)j) * 2654435761u >> 17) & 0x7fffu);
        }
        unsigned short *x = cur;
        cur = nxt, nxt = x;
    }
    memcpy(out, cur, NH * sizeof *out);
    free(cur), free(nxt);
    return 1;
}

enum { SCHEMES = 4 }; /* barrier, sentinel, flags, blocks */
static const char *const scheme_names[SCHEMES] = {"barrier", "sentinel", "flags", "blocks"};

/* The counter's words: one a group, or (blocks) a word a block and group. */
static size_t counter_words(const Shape *sh, int scheme, int groups) { return (size_t)groups * (scheme == 3 ? (size_t)sh->G : 1); }

/* The dynamic shared memory of a staged kernel: [W][PER_LANE * 32] 16-byte words. */
static size_t staged_bytes(const Shape *sh, int scheme, int staged) {
    return staged ? (size_t)sh->W * ((size_t)sh->N * (sh->H / sh->W) / (scheme == 2 ? 4 : 8) + 31) / 32 * 32 * 16 : 0;
}

/* The bytes of the state's slots: T + 1 slots of 16-bit values, or two of 4-byte flagged words. */
static size_t state_bytes(const Shape *sh, int scheme, int T) {
    const size_t NH = (size_t)sh->N * sh->H;
    return scheme == 2 ? 2 * NH * sizeof(unsigned) : (size_t)(T + 1) * NH * sizeof(unsigned short);
}

/* Compiles the kernel for one shape, scheme and the run's options into res (a CUBIN for arch); 0 on failure (reported). */
static int compile(const Shape *sh, int scheme, int staged, const FloorOpts *o, const char *arch, RtNvrtcResult *res) {
    char head[320];
    snprintf(head, sizeof head, "#define G %d\n#define W %d\n#define N %d\n#define H %d\n#define SCHEME %d\n#define STAGED %d\n"
             "#define SERIAL_POLLS %d\n#define WORK %d\n#define OVERLAP %d\n#define GROUPS %d\n", sh->G, sh->W, sh->N, sh->H, scheme,
             staged, o->serial, o->work, o->overlap, o->groups);
    size_t len = strlen(head) + sizeof kernel_text;
    char *src = malloc(len);
    if (!src) return 0;
    snprintf(src, len, "%s%s", head, kernel_text);
    RtNvrtcStatus st = rt_nvrtc_compile(src, "handoff_floor.cu", RT_NVRTC_CUBIN, arch, res);
    free(src);
    if (st != RT_NVRTC_OK || (res->log && *res->log)) { /* a warning fails too: the kernel is meant clean */
        fprintf(stderr, "handoff_floor: G=%d W=%d N=%d H=%d scheme %d staged %d: %s\n%s\n", sh->G, sh->W, sh->N, sh->H, scheme,
                staged, st != RT_NVRTC_OK ? res->message : "NVRTC warned", res->log ? res->log : "");
        rt_nvrtc_result_free(res);
        return 0;
    }
    return 1;
}

/* Compiles and loads the kernel for one shape and scheme; 0 on failure (reported). */
static int build(const Shape *sh, int scheme, int staged, const FloorOpts *o, const char *arch, cudaLibrary_t *lib, cudaKernel_t *k) {
    RtNvrtcResult res = {0};
    if (!compile(sh, scheme, staged, o, arch, &res)) return 0;
    int ok = CK_CUDA(cudaLibraryLoadData(lib, res.image, NULL, NULL, 0, NULL, NULL, 0)) &&
             CK_CUDA(cudaLibraryGetKernel(k, *lib, "floor_kernel")) &&
             CK_CUDA(cudaKernelSetAttributeForDevice(*k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     (int)staged_bytes(sh, scheme, staged), 0));
    rt_nvrtc_result_free(&res);
    return ok;
}

/* One launch of T steps from slot 0 (first: its device copy): the other slots filled with 0xFFFF (flags: slot 1
 * zeroed, slot 0 copied again, the kernel having written it), the counter (blocks: the G words) zeroed; its ms into *ms. */
static int launch(cudaKernel_t k, const Shape *sh, int scheme, int staged, int groups, void *state, const void *first,
                  unsigned *count, int T, cudaStream_t st, float *ms) {
    const size_t NH = (size_t)sh->N * sh->H, slot16 = NH * sizeof(unsigned short), slot32 = NH * sizeof(unsigned);
    cudaEvent_t a, b;
    if (!CK_CUDA(cudaEventCreate(&a)) || !CK_CUDA(cudaEventCreate(&b))) return 0;
    void *args[] = {&state, &count, &T};
    cudaLaunchAttribute attr = {.id = cudaLaunchAttributeCooperative, .val.cooperative = 1};
    cudaLaunchConfig_t cfg = {.gridDim = {(unsigned)sh->G, 1, 1}, .blockDim = {32u * (unsigned)sh->W, 1, 1},
                              .dynamicSmemBytes = staged_bytes(sh, scheme, staged), .stream = st, .attrs = &attr, .numAttrs = 1};
    int ok = scheme == 2 ? CK_CUDA(cudaMemcpyAsync(state, first, slot32, cudaMemcpyDeviceToDevice, st)) &&
                               CK_CUDA(cudaMemsetAsync((char *)state + slot32, 0, slot32, st))
                         : CK_CUDA(cudaMemsetAsync((char *)state + slot16, 0xff, (size_t)T * slot16, st));
    ok = ok && CK_CUDA(cudaMemsetAsync(count, 0, counter_words(sh, scheme, groups) * sizeof *count, st)) && CK_CUDA(cudaEventRecord(a, st)) &&
             CK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)k, args)) && CK_CUDA(cudaEventRecord(b, st)) &&
             CK_CUDA(cudaEventSynchronize(b)) && CK_CUDA(cudaEventElapsedTime(ms, a, b));
    cudaEventDestroy(a), cudaEventDestroy(b);
    return ok;
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Times one shape and scheme (µs a step into *us) and checks slot T2 against the replay; 0 on failure. */
static int run_one(const Shape *sh, int scheme, int staged, const FloorOpts *o, int T1, int T2, const char *arch, double *us) {
    const size_t NH = (size_t)sh->N * sh->H;
    cudaLibrary_t lib;
    cudaKernel_t k;
    if (!build(sh, scheme, staged, o, arch, &lib, &k)) return 0;
    unsigned short *first = malloc(NH * sizeof *first), *got = malloc(NH * sizeof *got), *want = malloc(NH * sizeof *want);
    unsigned *words = malloc(NH * sizeof *words), *count = NULL;
    void *state = NULL, *first_dev = NULL;
    cudaStream_t st = NULL;
    int ok = first && got && want && words && CK_CUDA(cudaStreamCreate(&st)) &&
             CK_CUDA(cudaMalloc(&state, state_bytes(sh, scheme, T2))) && CK_CUDA(cudaMalloc(&first_dev, NH * sizeof *words)) &&
             CK_CUDA(cudaMalloc((void **)&count, counter_words(sh, scheme, o->groups) * sizeof *count));
    for (size_t i = 0; ok && i < NH; i++) {
        first[i] = (unsigned short)((i * 40503u) & 0x7fffu);
        words[i] = 1u << 16 | first[i]; /* flags: step 0's flag, 1 */
    }
    ok = ok && CK_CUDA(cudaMemcpy(first_dev, words, NH * sizeof *words, cudaMemcpyHostToDevice)) &&
         (scheme == 2 || CK_CUDA(cudaMemcpy(state, first, NH * sizeof *first, cudaMemcpyHostToDevice)));
    float t1[5], t2[5];
    for (int r = 0; ok && r < 5; r++)
        ok = launch(k, sh, scheme, staged, o->groups, state, first_dev, count, T1, st, &t1[r]) &&
             launch(k, sh, scheme, staged, o->groups, state, first_dev, count, T2, st, &t2[r]);
    if (ok) {
        qsort(t1, 5, sizeof *t1, cmp_float), qsort(t2, 5, sizeof *t2, cmp_float);
        *us = (t2[2] - t1[2]) * 1e3 / (T2 - T1);
        if (scheme == 2) {
            ok = CK_CUDA(cudaMemcpy(words, (unsigned *)state + (size_t)(T2 & 1) * NH, NH * sizeof *words, cudaMemcpyDeviceToHost));
            for (size_t i = 0; ok && i < NH; i++) got[i] = (unsigned short)(words[i] & 0xffffu);
        } else {
            ok = CK_CUDA(cudaMemcpy(got, (unsigned short *)state + (size_t)T2 * NH, NH * sizeof *got, cudaMemcpyDeviceToHost));
        }
    }
    ok = ok && replay(sh, T2, first, want);
    if (ok) {
        size_t bad = 0;
        for (size_t i = 0; i < NH; i++) bad += got[i] != want[i];
        if (bad) {
            fprintf(stderr, "handoff_floor: G=%d W=%d N=%d H=%d %s: %zu of %zu words of the last step wrong\n", sh->G, sh->W, sh->N,
                    sh->H, scheme_names[scheme], bad, NH);
            ok = 0;
        }
    }
    cudaFree(state), cudaFree(first_dev), cudaFree(count);
    if (st) cudaStreamDestroy(st);
    cudaLibraryUnload(lib);
    free(first), free(got), free(want), free(words);
    return ok;
}

int main(int argc, char **argv) {
    bench_prog = "handoff_floor";
    int T1 = 64, T2 = 1088, a = 1;
    FloorOpts o = {.groups = 1};
    const char *compile_only = NULL;
    if (a + 1 < argc && strcmp(argv[a], "--compile-only") == 0) {
        compile_only = argv[a + 1];
        a += 2;
    }
    for (;; a++) {
        if (a < argc && strcmp(argv[a], "--serial-polls") == 0) o.serial = 1;
        else if (a < argc && strcmp(argv[a], "--overlap") == 0) o.overlap = 1;
        else if (a + 1 < argc && strcmp(argv[a], "--work") == 0) {
            char *end;
            const long c = strtol(argv[++a], &end, 10);
            if (*end || end == argv[a] || c < 0 || c > 4096) {
                fprintf(stderr, "handoff_floor: error: --work takes C, FMAs a load, 0-4096\n");
                return 1;
            }
            o.work = (int)c;
        } else if (a + 1 < argc && strcmp(argv[a], "--groups") == 0) {
            o.groups = atoi(argv[++a]);
            if (strcmp(argv[a], "1") && strcmp(argv[a], "2") && strcmp(argv[a], "4")) {
                fprintf(stderr, "handoff_floor: error: --groups takes 1, 2 or 4\n");
                return 1;
            }
        } else break;
    }
    if (o.serial && o.overlap) {
        fprintf(stderr, "handoff_floor: error: --overlap adds up between rounds of polls, which --serial-polls has not\n");
        return 1;
    }
    if (a + 1 < argc && strcmp(argv[a], "--steps") == 0) {
        if (sscanf(argv[a + 1], "%d,%d", &T1, &T2) != 2 || T1 < 1 || T2 <= T1 || T2 > 100000) {
            fprintf(stderr, "handoff_floor: error: --steps takes T1,T2 with 1 <= T1 < T2 <= 100000\n");
            return 1;
        }
        a += 2;
    }
    static const Shape grid[] = {{48, 8, 16, 768},  {96, 8, 16, 768},  {120, 8, 16, 768}, {132, 8, 16, 768},
                                 {128, 8, 4, 1024}, {132, 8, 4, 1024}, {64, 8, 32, 1024}, {128, 8, 32, 1024}};
    Shape asked[64];
    int nshapes = 0;
    for (; a < argc; a++) {
        Shape s;
        if (nshapes == 64 || sscanf(argv[a], "%d,%d,%d,%d", &s.G, &s.W, &s.N, &s.H) != 4 || s.G < 1 || s.G > 1024 ||
            (s.W != 4 && s.W != 8 && s.W != 16) || s.N < 1 || s.N > 64 || s.N % o.groups || s.H < 8 || s.H % (8 * s.W) ||
            (long long)s.N * s.H > 4096LL * s.W) {
            fprintf(stderr, "handoff_floor: error: '%s': a shape is G,W,N,H (G 1-1024, W 4, 8 or 16, N 1-64 and a multiple of "
                            "--groups, H a multiple of 8 W, N H at most 4096 W: a warp's share in 16 loads a lane)\n", argv[a]);
            return 1;
        }
        asked[nshapes++] = s;
    }
    if (compile_only) { /* every kernel the run would build, for that architecture: no GPU */
        const Shape *shapes = nshapes ? asked : grid;
        const int count = nshapes ? nshapes : (int)(sizeof grid / sizeof *grid);
        int built = 0;
        for (int i = 0; i < count; i++)
            for (int v = 0; v < 2 * SCHEMES; v++) {
                RtNvrtcResult res = {0};
                if (!compile(&shapes[i], v / 2, v % 2, &o, compile_only, &res)) return 1;
                rt_nvrtc_result_free(&res);
                built++;
            }
        printf("handoff_floor: %d kernels compiled for %s\n", built, compile_only);
        return 0;
    }
    if (!bench_have_gpu("handoff_floor")) return EXIT_SKIP;
    struct cudaDeviceProp prop;
    if (!CK_CUDA(cudaGetDeviceProperties(&prop, 0))) return 1;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", prop.major, prop.minor);
    const Shape *shapes = nshapes ? asked : grid;
    const int count = nshapes ? nshapes : (int)(sizeof grid / sizeof *grid);
    printf("handoff_floor on %s (%d multiprocessors): µs a step, steps %d to %d, median of 5; sentinel and flags polls %s%s; "
           "%d FMAs a load; sequences in %d group%s a step\n", prop.name, prop.multiProcessorCount, T1, T2,
           o.serial ? "each load's in turn" : "in rounds", o.overlap ? ", unstaged loads added up as they land" : "", o.work, o.groups,
           o.groups > 1 ? "s, each handed off on its own" : "");
    printf("%-22s %10s %10s %10s %10s %10s %10s %10s %10s\n", "G, W, N, H", "barrier", "+staged", "sentinel", "+staged", "flags",
           "+staged", "blocks", "+staged");
    int fail = 0;
    for (int i = 0; i < count; i++) {
        const Shape *sh = &shapes[i];
        char name[48];
        snprintf(name, sizeof name, "%d, %d, %d, %d", sh->G, sh->W, sh->N, sh->H);
        printf("%-22s", name);
        for (int scheme = 0; scheme < SCHEMES; scheme++)
            for (int staged = 0; staged < 2; staged++) {
                double us = 0;
                if (sh->G > prop.multiProcessorCount || !run_one(sh, scheme, staged, &o, T1, T2, arch, &us)) {
                    fail |= sh->G <= prop.multiProcessorCount;
                    printf(" %10s", sh->G > prop.multiProcessorCount ? "(G > SMs)" : "FAILED");
                } else {
                    printf(" %10.3f", us);
                }
                fflush(stdout);
            }
        printf("\n");
    }
    return fail;
}
