/* rnncc persistent-kernel helpers (codegen/cg_persist.c emits the kernels that call them),
 * appended to the prelude of a translation unit that has a persistent kernel.
 * Key idea: one block owns a fixed slice of every recurrent GEMM's rows for the whole
 * sequence, keeps those weight rows in shared memory, and meets the other blocks only at a
 * grid barrier; the matrix product below is the block's share of one step's GEMM. */

/* Where each block spends its cycles, by phase, summed over steps and launches: built only when
 * the unit defines RNN_PROFILE (RNNCC_PROFILE_PERSIST=1 at run time; bench/persist_profile reads
 * rnn_prof, a row a block for the first RNN_PROF_BLOCKS). Slots: 0 grid barriers, 1 staging the
 * operand, 2 the product, 3 reducing and storing it, 4 the element-wise groups, 5 loading the
 * weights, 6 steps. Every block's thread 0 counts into shared memory and adds its counts to its row
 * once, at the kernel's end (RNN_PROF_END): a global read-modify-write at each mark would charge a
 * trip to L2 to the phase after it. A block that waits least at the barriers is the one the others
 * wait for (bench/NOTES.md sections 58-59: block 0's counts alone misled; counting in every block
 * also moves the blocks' timing, section 59). */
#ifdef RNN_PROFILE
#define RNN_PROF_BLOCKS 1024
__device__ unsigned long long rnn_prof[RNN_PROF_BLOCKS][8];
__shared__ unsigned long long rnn_prof_acc[8];
__shared__ long long rnn_prof_last;
#define RNN_PROF_START()                                                            \
    do {                                                                            \
        if (threadIdx.x == 0) {                                                     \
            for (int k_ = 0; k_ < 8; k_++) rnn_prof_acc[k_] = 0;                    \
            rnn_prof_last = clock64();                                              \
        }                                                                           \
    } while (0)
#define RNN_PROF(k)                                                                 \
    do {                                                                            \
        if (threadIdx.x == 0) {                                                     \
            const long long rnn_now_ = clock64();                                   \
            rnn_prof_acc[k] += (unsigned long long)(rnn_now_ - rnn_prof_last);      \
            rnn_prof_last = rnn_now_;                                               \
        }                                                                           \
    } while (0)
#define RNN_PROF_STEP() do { if (threadIdx.x == 0) rnn_prof_acc[6]++; } while (0)
#define RNN_PROF_END()                                                              \
    do {                                                                            \
        if (threadIdx.x == 0 && blockIdx.x < RNN_PROF_BLOCKS)                       \
            for (int k_ = 0; k_ < 8; k_++) rnn_prof[blockIdx.x][k_] += rnn_prof_acc[k_]; \
    } while (0)
#else
#define RNN_PROF_START() ((void)0)
#define RNN_PROF(k) ((void)0)
#define RNN_PROF_STEP() ((void)0)
#define RNN_PROF_END() ((void)0)
#endif

/* Blocks staggered to expose hand-off races (a test tool): where the unit defines RNN_STAGGER_ON
 * (RNNCC_PERSIST_STAGGER=1 at run time), every step group opens with RNN_STAGGER(t, k), which makes
 * every fifth block by (block, step, group) sleep ~4 us before the group, each thread on its own (no
 * ordering added): that block's stores of the group come late, so a block that reads them before
 * their hand-off reads the step before's values where the usual timing hides it (bench/NOTES.md
 * section 75). Otherwise nothing. */
#ifdef RNN_STAGGER_ON
#define RNN_STAGGER(t, k)                                                           \
    do {                                                                            \
        if ((blockIdx.x * 7u + (unsigned)(t) * 3u + (unsigned)(k)) % 5u == 0u) __nanosleep(4000); \
    } while (0)
#else
#define RNN_STAGGER(t, k) ((void)0)
#endif

/* Grid-wide barrier of a cooperative launch (all blocks co-resident), in two halves so that a
 * block may issue loads of its own values between them: rnn_grid_arrive, then rnn_grid_wait
 * returns once every block has arrived at barrier number epoch (1, 2, ... within one launch).
 * *count is zero at launch. Thread 0 of each block arrives with a release (after the block's
 * __syncthreads, so it releases the whole block's writes, and the block's threads see each
 * other's); the block's last thread waits with acquire loads, and the closing __syncthreads
 * passes that on, so global writes before the barrier are visible to every thread after it. Not
 * thread 0: its warp issues its items' loads between the halves only after the arrival's release
 * has waited for the block's stores, and a poll from that warp came back after those loads (from
 * DRAM); polling from any other warp took 0.24 us off a flashrnn step (bench/NOTES.md section 67).
 * The counter may wrap: the comparison is modular. */
RNN_DEV void rnn_grid_arrive(unsigned *count) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
}
RNN_DEV void rnn_grid_wait(unsigned *count, unsigned epoch) {
    if (threadIdx.x == blockDim.x - 1) {
        const unsigned target = epoch * gridDim.x;
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
        } while ((int)(v - target) < 0);
    }
    __syncthreads();
    RNN_PROF(0);
}
/* Both halves: the whole barrier. */
RNN_DEV void rnn_grid_sync(unsigned *count, unsigned epoch) {
    rnn_grid_arrive(count);
    rnn_grid_wait(count, epoch);
}

/* The shared-memory address (state space .shared) of a generic pointer into shared memory. */
RNN_DEV unsigned rnn_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* Asynchronous copies global -> shared (sm_80+): 4 bytes (src_bytes 0: zero fill), 16 bytes. */
RNN_DEV void rnn_cp4(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(rnn_smem_addr(dst)), "l"(src), "r"(src_bytes) : "memory");
}
RNN_DEV void rnn_cp16(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(rnn_smem_addr(dst)), "l"(src), "r"(src_bytes)
                 : "memory");
}
/* Four 8x8 blocks of 16-bit values, transposed (ldmatrix .x4 .trans): lane 8m + q gives the address of
 * row q of block m (16 bytes, 16-byte aligned); lane (g, t) gets, in word m, block m's column g at rows
 * 2t (low half) and 2t+1. */
RNN_DEV uint4 rnn_ldsm_t(const unsigned short *p) {
    uint4 v;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(rnn_smem_addr(p))
                 : "memory");
    return v;
}
RNN_DEV void rnn_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
RNN_DEV void rnn_cp_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
RNN_DEV void rnn_cp_wait_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

/* Thread-block clusters: with RNN_CLUSTER > 1 (the unit defines it; the kernel is launched in
 * clusters of that many blocks) the staged operand is fetched from L2 once per cluster, not once
 * per block. Block r of a cluster copies rows r, r+C, ... of a tile with bulk copies multicast to
 * the same place in every block's shared memory, and each block's rnn_full[b] counts the bytes
 * arriving in its tile b; a block that has read tile b arrives on every block's rnn_empty[b], and
 * a copy into tile b waits until all have (so no block overwrites what another still reads).
 * rnn_uses[b]: the uses of tile b whose data a block has waited for (the barriers' phases). */
#ifndef RNN_CLUSTER
#define RNN_CLUSTER 1
#endif
#ifndef RNN_SPLIT /* or clusters that split a backward's K (below, rnn_split) */
#define RNN_SPLIT 1
#endif
#ifndef RNN_SPLIT_ASYNC /* 1: their exchange by st.async on transaction barriers (rnn_split_finish) */
#define RNN_SPLIT_ASYNC 0
#endif
#if RNN_CLUSTER > 1 || RNN_SPLIT > 1
/* This block's place in its cluster. */
RNN_DEV unsigned rnn_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
/* The cluster's blocks meet: their shared-memory writes before it (distributed ones too) are
 * visible after it. */
RNN_DEV void rnn_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/* Traps unless the kernel runs in clusters of `size` blocks (the launch contract, codegen/cg.h). */
RNN_DEV void rnn_cluster_check(unsigned size) {
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    if (n != size) __trap();
}
#endif
#if RNN_CLUSTER > 1
__shared__ __align__(8) unsigned long long rnn_full[2], rnn_empty[2];
__shared__ unsigned rnn_uses[2];
/* Waits until the phase of parity `parity` of the barrier at shared address bar has completed
 * (acquiring at cluster scope: the empty barriers' arrivals come from other blocks). */
RNN_DEV void rnn_bar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
#endif

/* The kernel's start with clusters (else nothing): checks the cluster size, zeroes the staging
 * tiles (floats of them at xs: bulk copies never write a tile's padding), sets up the barriers
 * and meets the cluster's other blocks before any copy may reach this block. */
RNN_DEV void rnn_cluster_init(float *xs, int floats) {
#if RNN_CLUSTER > 1
    rnn_cluster_check(RNN_CLUSTER);
    for (int e = threadIdx.x; e < floats; e += blockDim.x) xs[e] = 0.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* the zeros before the copy engine's writes */
    if (threadIdx.x == 0) {
        for (int b = 0; b < 2; b++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(rnn_smem_addr(&rnn_full[b])) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(rnn_smem_addr(&rnn_empty[b])), "n"(RNN_CLUSTER)
                         : "memory");
            rnn_uses[b] = 0;
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    rnn_cluster_sync();
#endif
}

/* The kernel's end with clusters (else nothing): no block leaves while another may still arrive
 * on its barriers or write into its shared memory (split K). */
RNN_DEV void rnn_cluster_exit() {
#if RNN_CLUSTER > 1 || RNN_SPLIT > 1
    rnn_cluster_sync();
#endif
}

/* A backward whose clusters split K (RNN_SPLIT > 1; the unit defines it, RNN_CLUSTER stays 1 and the
 * kernel is launched in clusters of RNN_SPLIT blocks): block r of a cluster keeps the transposed
 * weights of the cluster's operand elements for the r-th part of K and stages only that part of the
 * result adjoint, so a block takes in 1/RNN_SPLIT of what it would alone (the staging's limit,
 * bench/NOTES.md sections 28 and 31). Its partial sums of each block's elements go to that block's
 * exchange area through distributed shared memory, and the owner adds them up (rnn_split_finish).
 * xch: [2][RNN_SPLIT][NP][ro] floats (two areas, used in turn); ro: elements a block owns at most,
 * the stride of the cluster's rows (block r's at r*ro); rows: this block's own; uses: exchanges so far;
 * mine: the last exchange's sum of entry threadIdx.x of its first pass (sequence threadIdx.x / rows,
 * own row threadIdx.x % rows: the thread's first item of a group as wide as the operand), where it
 * was stored, not added (acc 0), with mine_set 1; else mine_set 0. */
struct rnn_split {
    float *xch;
    int ro, rows;
    unsigned uses;
    float mine;
    int mine_set;
    unsigned xph; /* RNN_SPLIT_ASYNC: the phase each area's transaction barrier waits for next (bit b) */
};
/* The kernel's start with split K: checks the cluster size, then meets the cluster, so that no block
 * writes into another's shared memory before it runs. */
#if RNN_SPLIT > 1 && RNN_SPLIT_ASYNC
/* RNN_SPLIT_ASYNC: each block's exchange areas' transaction barriers (two, in turn) */
__shared__ __align__(8) unsigned long long rnn_xbar[2];
#endif
RNN_DEV void rnn_split_init() {
#if RNN_SPLIT > 1
    rnn_cluster_check(RNN_SPLIT);
#if RNN_SPLIT_ASYNC
    if (threadIdx.x == 0) {
        for (int b = 0; b < 2; b++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(rnn_smem_addr(&rnn_xbar[b])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#endif
    rnn_cluster_sync();
#endif
}

/* Asks for the line holding *p in this multiprocessor's L1 (no wait, no fault). */
RNN_DEV void rnn_prefetch(const float *p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }

/* v + the dot product of w and x, in the order x, y, z, w. */
RNN_DEV float rnn_fma4(float4 w, float4 x, float v) {
    v = fmaf(w.x, x.x, v);
    v = fmaf(w.y, x.y, v);
    v = fmaf(w.z, x.z, v);
    return fmaf(w.w, x.w, v);
}

/* Warps of a persistent block (the unit defines RNN_WARPS when it takes 4 or 16), and its threads. */
#ifndef RNN_WARPS
#define RNN_WARPS 8
#endif
#define RNN_P_THREADS (32 * RNN_WARPS)
/* Floats of padding after each row of weights and of the staged operand: 4 for the FFMA product
 * (eight rows a lane group apart start 4 banks apart), 16 for the mma one (rows g and g+1 start
 * half the banks apart, so a quarter-warp's 16-byte loads of two rows never collide). */
#define RNN_PAD_FFMA 4
#define RNN_PAD_MMA 16
/* 16-bit weights (rnn_mv_mma with RNN_F16 or RNN_BF16): 32 halves (64 bytes) after each row, for
 * the same reason as RNN_PAD_MMA, and after each row of an operand staged in 16 bits; operand rows
 * staged as floats take RNN_PAD_FFMA (lanes read 32 bytes a column, so columns g and g+1 must start
 * 16 bytes apart modulo 128). */
#define RNN_PAD_16 32

/* The hand-off by flagged values (CgPersist.flags; bench/NOTES.md section 17). A step's state
 * result that the next step multiplies is also stored as one 8-byte word, the value's bits low and
 * the flag of the step that reads it high (step t reads flag t; the slots are zeroed before each
 * launch, and flags start at 1). The word is written and read whole (single-copy atomic), so a
 * reader that sees the flag sees the value: no grid barrier between steps, no counter, one trip to
 * L2. Two slots, alternating by step, suffice: a block can write step t+1's word only after every
 * block has staged all of step t-1's (it needed all of step t's, which each block writes after
 * staging step t-1's; the plan has every block write a part of each such state). A later phase's
 * operand of the step (mLSTM's m) moves the same way, flag t+1 in slot t % 2 (bench/NOTES.md
 * section 44). The reuse of a slot rests on order within each block: its relaxed loads of the slot
 * complete (the polling loop waits on their values, and __syncthreads follows the staging) before
 * any of its threads stores the word that lets another block move on. */
RNN_DEV void rnn_flag_put(unsigned long long *w, float v, unsigned flag) {
    const unsigned long long word = ((unsigned long long)flag << 32) | __float_as_uint(v);
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(w), "l"(word) : "memory");
}
RNN_DEV unsigned long long rnn_flag_get(const unsigned long long *w) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(w) : "memory");
    return v;
}

/* The flagged words of a state staged from its 16-bit twin (CgPersist.flags with a 16-bit staged
 * operand, CgPersistGemm.x16): one 4-byte word a value, its 16 bits (rnn_put16's rounding) low and
 * the 16-bit flag of the step that reads it high, rnn_flag16 (never 0, the zeroed slots' value, and
 * never step t-2's, the slot's last), so a step's state moves in half the bytes of 8-byte words. */
RNN_DEV unsigned rnn_flag16(unsigned flag) { return 1u + flag % 65535u; }
RNN_DEV void rnn_flag_put16(unsigned *w, float v, unsigned flag, int bf16) {
    const unsigned word = (rnn_flag16(flag) << 16) | rnn_twin16(v, bf16);
    asm volatile("st.relaxed.gpu.global.b32 [%0], %1;" ::"l"(w), "r"(word) : "memory");
}

/* Operands loaded straight into the B fragments (CgPersist.direct; bench/NOTES.md section 100): after
 * the grid barrier each warp loads its own share of K of a pass's sequences from the operand's 16-bit
 * twin into the registers its products read, instead of the block staging the whole operand in shared
 * memory and meeting at __syncthreads (what cuDNN's persistent LSTM does, section 97). */
/* 16 bytes at p, relaxed at the GPU's scope (not from a line L1 may hold of a step before): one load
 * where whole (p 16-byte aligned), else four (p 4-byte aligned: the kernel traps otherwise). */
RNN_DEV uint4 rnn_ld_b16(const unsigned short *p, bool whole) {
    uint4 v;
    if (whole) {
        asm volatile("ld.relaxed.gpu.global.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    } else {
        const unsigned *q = (const unsigned *)p;
        asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v.x) : "l"(q) : "memory");
        asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v.y) : "l"(q + 1) : "memory");
        asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v.z) : "l"(q + 2) : "memory");
        asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v.w) : "l"(q + 3) : "memory");
    }
    return v;
}
/* A warp's B fragments of KI k steps of KS and NT 8-sequence tiles (rnn_mv_mma, XH = 2) straight from a
 * 16-bit operand at X (sequence n at X + n*ldx, K elements): lane (g, q) takes 16 bytes at sequence
 * n0 + 8j + g, elements k0 + KS ki .. + 7 (k0: its warp's share and quarter), zeros past N and K (ldx, k0 and
 * K multiples of 8: the plan's x16), all issued at once; 16 bytes a load where X is 16-byte aligned, else 4. */
template <int KI, int NT, int KS>
RNN_DEV void rnn_load_b(uint4 (&b)[KI][NT], const unsigned short *X, long long ldx, int N, int K, int n0, int k0) {
    const int g = (threadIdx.x & 31) >> 2;
    const unsigned short *const x = X + (long long)(n0 + g) * ldx + k0;
    const bool whole = (((unsigned long long)X) & 15) == 0;
    if (((unsigned long long)X) & 3) __trap(); /* the plan's twins: 4-byte aligned at least */
#pragma unroll
    for (int ki = 0; ki < KI; ki++)
#pragma unroll
        for (int j = 0; j < NT; j++)
            b[ki][j] = n0 + g + 8 * j < N && k0 + KS * ki < K ? rnn_ld_b16(x + 8 * j * ldx + KS * ki, whole) : make_uint4(0u, 0u, 0u, 0u);
}

/* Loads the four flagged words at src (none where src is NULL; words past K: not loaded), at once
 * where whole (16-byte aligned); does each of the four carry flag want (rnn_flag16)? */
RNN_DEV void rnn_flag_load16(unsigned v[4], const unsigned *src, int k, int K, bool whole) {
    if (!src) return;
    if (whole) {
        asm volatile("ld.relaxed.gpu.global.v4.b32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]) : "l"(src) : "memory");
        return;
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
        if (k + i < K) asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v[i]) : "l"(src + i) : "memory");
}
RNN_DEV bool rnn_flag_all16(const unsigned v[4], unsigned want) {
    return (v[0] >> 16) == want && (v[1] >> 16) == want && (v[2] >> 16) == want && (v[3] >> 16) == want;
}

/* rnn_flag_stage for 16-bit flagged words (F: column n's words at F + n*K) into tile 0 of xs
 * ([NP][lds] halves): zeros past N and K; waits for each word to carry flag's rnn_flag16. A thread
 * loads four words at once (16-byte aligned F and K a multiple of 4; one at a time otherwise) and
 * has up to 8 fours in flight before it waits for any; the fours still missing a word are asked
 * again together, one trip to L2 a round. Without clusters only (the plan). */
RNN_DEV void rnn_flag_stage16(unsigned short *xs, const unsigned *F, unsigned flag, int N, int K, int n0, int NP, int KC,
                              int lds) {
#if RNN_CLUSTER > 1
    __trap(); /* the plan hands off by flags only without clusters (codegen/cg_persist_plan.c) */
#endif
    enum { U = 8 }; /* fours of words a thread has in flight */
    const unsigned want = rnn_flag16(flag), arrived = want << 16; /* arrived: a zero that needs no wait */
    const int fours = NP * KC / 4;
    const bool whole = (K & 3) == 0 && (((unsigned long long)F) & 15) == 0;
    for (int e0 = threadIdx.x; e0 < fours; e0 += U * RNN_P_THREADS) {
        unsigned v[U][4];
        const unsigned *src[U];
        int kv[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = 4 * (e0 + u * RNN_P_THREADS), n = e / KC, k = e - n * KC;
            const int ok = e < 4 * fours && n0 + n < N && k < K;
            src[u] = ok ? F + (long long)(n0 + n) * K + k : NULL;
            kv[u] = k;
            v[u][0] = v[u][1] = v[u][2] = v[u][3] = arrived;
        }
#pragma unroll
        for (int u = 0; u < U; u++) rnn_flag_load16(v[u], src[u], kv[u], K, whole);
        for (;;) { /* the fours still missing a word asked again at once: one trip to L2 a round */
            int missing = 0;
#pragma unroll
            for (int u = 0; u < U; u++) missing |= src[u] && !rnn_flag_all16(v[u], want);
            if (!missing) break;
#ifdef RNN_FLAG_BACKOFF
            __nanosleep(RNN_FLAG_BACKOFF);
#endif
#pragma unroll
            for (int u = 0; u < U; u++)
                if (src[u] && !rnn_flag_all16(v[u], want)) rnn_flag_load16(v[u], src[u], kv[u], K, whole);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = 4 * (e0 + u * RNN_P_THREADS), n = e / KC, k = e - n * KC;
            if (e < 4 * fours) /* 8-byte aligned: k a multiple of 4, lds even */
                *(uint2 *)(xs + n * lds + k) =
                    make_uint2((v[u][0] & 0xffffu) | (v[u][1] << 16), (v[u][2] & 0xffffu) | (v[u][3] << 16));
        }
    }
}

/* Stages columns n0 .. n0+NP-1, elements 0 .. KC-1 of a flagged operand (column n's words at
 * F + n*K) into tile 0 of xs ([NP][lds]), as rnn_mv_stage stages a whole operand: zeros past N and
 * K; waits for each word to carry flag. A thread loads two words at once (16-byte aligned F and even
 * K; one at a time for odd K) and has up to 8 pairs in flight before it waits for any; the pairs
 * still missing a word are asked again together, one trip to L2 a round. More than 8 pairs a
 * thread take more rounds (large operands: where flags lose). Without clusters only (the plan). */
RNN_DEV void rnn_flag_stage(float *xs, const unsigned long long *F, unsigned flag, int N, int K, int n0, int NP, int KC,
                            int lds) {
#if RNN_CLUSTER > 1
    __trap(); /* the plan hands off by flags only without clusters (codegen/cg_persist_plan.c) */
#endif
    enum { U = 8 }; /* pairs of words a thread has in flight */
    const int pairs = NP * KC / 2, even = (K & 1) == 0;
    const unsigned long long arrived = (unsigned long long)flag << 32; /* a zero that needs no wait */
    for (int e0 = threadIdx.x; e0 < pairs; e0 += U * RNN_P_THREADS) {
        unsigned long long lo[U], hi[U];
        const unsigned long long *src[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = 2 * (e0 + u * RNN_P_THREADS), n = e / KC, k = e - n * KC;
            const int ok = e < 2 * pairs && n0 + n < N && k < K;
            src[u] = ok ? F + (long long)(n0 + n) * K + k : NULL;
            lo[u] = hi[u] = arrived;
            if (ok && even) {
                asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];" : "=l"(lo[u]), "=l"(hi[u]) : "l"(src[u]) : "memory");
            } else if (ok) {
                lo[u] = rnn_flag_get(src[u]);
                if (k + 1 < K) hi[u] = rnn_flag_get(src[u] + 1);
            }
        }
        for (;;) { /* the pairs still missing a word asked again at once: one trip to L2 a round */
            int missing = 0;
#pragma unroll
            for (int u = 0; u < U; u++) missing |= (unsigned)(lo[u] >> 32) != flag || (unsigned)(hi[u] >> 32) != flag;
            if (!missing) break;
#ifdef RNN_FLAG_BACKOFF
            __nanosleep(RNN_FLAG_BACKOFF);
#endif
#pragma unroll
            for (int u = 0; u < U; u++) {
                if ((unsigned)(lo[u] >> 32) == flag && (unsigned)(hi[u] >> 32) == flag) continue;
                const int e = 2 * (e0 + u * RNN_P_THREADS), k = e - e / KC * KC;
                if (even) {
                    asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];" : "=l"(lo[u]), "=l"(hi[u]) : "l"(src[u]) : "memory");
                } else {
                    lo[u] = rnn_flag_get(src[u]);
                    if (k + 1 < K) hi[u] = rnn_flag_get(src[u] + 1);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = 2 * (e0 + u * RNN_P_THREADS), n = e / KC, k = e - n * KC;
            if (e < 2 * pairs) {
                xs[n * lds + k] = __uint_as_float((unsigned)lo[u]);
                xs[n * lds + k + 1] = __uint_as_float((unsigned)hi[u]);
            }
        }
    }
}

/* Whether X's rows (ldx elements apart, K long) copy as 16-byte pieces. */
template <typename T>
RNN_DEV bool rnn_rows_whole16(const T *X, long long ldx, int K) {
    constexpr int V = 16 / sizeof(T); /* elements a 16-byte copy */
    return ldx % V == 0 && K % V == 0 && (((unsigned long long)X) & 15) == 0;
}

/* Wave v of rnn_stage_copies' S, in pieces of PV elements: 16-byte copies (PV = 16 / sizeof(T)),
 * or one element each (PV = 1). Each branch spells out its source: with it hoisted into one pointer,
 * NVRTC compiled the one-group tiles to other code than the loops this replaced (bench/NOTES.md
 * section 72); as written, those units' machine code is unchanged. */
template <int S, int PV, typename T>
RNN_DEV void rnn_stage_wave(T *xs, const T *X, long long ldx, int N, int K, int n0, int k0, int NP, int KC, int lds, int v) {
    const int kw = KC / RNN_WARPS, L = kw / S, q = L / PV, row = RNN_WARPS * q; /* a warp's share, its wave's part */
    if (PV > 1 && RNN_P_THREADS % row == 0) {
        /* a thread's pieces all lie at one place of their rows (dn rows apart): one address, stepped by
         * constants, and a loop of known length (unrolled; the general loop below costs ~20 instructions
         * a copy: bench/NOTES.md section 108) */
        const int dn = RNN_P_THREADS / row, n1 = (int)threadIdx.x / row, r = (int)threadIdx.x - n1 * row;
        const int k = (r / q) * (kw - L) + v * L + r * PV;
        const bool kin = k0 + k < K;
        const T *src = X + (long long)(n0 + n1) * ldx + k0 + k;
        T *dst = xs + n1 * lds + k;
        if (NP % dn == 0 && kin && n0 + NP <= N) { /* every piece in range (a whole pass): no checks */
#pragma unroll
            for (int i = 0; i < NP / dn; i++) rnn_cp16(dst + i * dn * lds, src + (long long)i * dn * ldx, 16);
            return;
        }
#pragma unroll
        for (int i = 0; i < (NP + dn - 1) / dn; i++)
            if (NP % dn == 0 || n1 + i * dn < NP) {
                const int ok = kin && n0 + n1 + i * dn < N;
                rnn_cp16(dst + i * dn * lds, ok ? src + (long long)i * dn * ldx : X, ok ? 16 : 0);
            }
        return;
    }
    for (int e = threadIdx.x; e < NP * row; e += RNN_P_THREADS) {
        /* piece r of row n: warp r / q's segment (with S = 1, kw - L = 0: the row's pieces in order) */
        const int n = e / row, r = e - n * row, k = (r / q) * (kw - L) + v * L + r * PV;
        const int ok = n0 + n < N && k0 + k < K;
        if (PV > 1) rnn_cp16(xs + n * lds + k, ok ? X + (long long)(n0 + n) * ldx + k0 + k : X, ok ? 16 : 0);
        else if (sizeof(T) == 4) rnn_cp4(xs + n * lds + k, ok ? X + (long long)(n0 + n) * ldx + k0 + k : X, ok ? 4 : 0);
        else xs[n * lds + k] = ok ? X[(long long)(n0 + n) * ldx + k0 + k] : (T)0;
    }
}

/* Starts copying columns n0 .. n0+NP-1, elements k0 .. k0+KC-1 of X (column n at X + n*ldx, K
 * elements, N columns; T: float, or unsigned short for a 16-bit twin) into this block's xs
 * ([NP][lds]), zeros outside, as S commit groups: wave v holds the v-th S-th of every warp's share
 * of the KC columns (KC / RNN_WARPS each), so that a product whose warps take their shares
 * (rnn_mv_mma) can start on a wave while the later ones land (rnn_wave_wait; S = 1: one group).
 * 16-byte copies where whole (rnn_rows_whole16), else 4 bytes, or 16-bit values one at a time (a
 * cp.async moves 4 bytes at least). */
template <int S, typename T>
RNN_DEV void rnn_stage_copies(T *xs, const T *X, long long ldx, int N, int K, int n0, int k0, int NP, int KC, int lds,
                              bool whole) {
    for (int v = 0; v < S; v++) {
        if (whole) rnn_stage_wave<S, 16 / sizeof(T)>(xs, X, ldx, N, K, n0, k0, NP, KC, lds, v);
        else rnn_stage_wave<S, 1>(xs, X, ldx, N, K, n0, k0, NP, KC, lds, v);
        rnn_cp_commit();
    }
}

/* Starts copying columns n0 .. n0+NP-1, elements k0 .. k0+KC-1 of X (column n at X + n*ldx, K
 * elements, N columns; T: float, or unsigned short for a 16-bit twin) into tile b of xs ([NP][lds]
 * each): with clusters and 16-byte aligned rows, this block's share of them multicast to the
 * cluster (rows past N and elements past K keep what they hold: the plan makes sure that is zeros
 * or columns nobody keeps); else all of them into this block only (rnn_stage_copies in one group). */
template <typename T>
RNN_DEV void rnn_mv_stage(T *xs, int b, const T *X, long long ldx, int N, int K, int n0, int k0, int NP, int KC, int lds) {
    xs += b * NP * lds;
#if RNN_CLUSTER > 1
    constexpr int V = 16 / sizeof(T); /* elements a 16-byte copy */
    /* rnn_rows_whole16 spelled out: through the helper NVRTC compiled a clustered unit (GRU fp32 at 32
     * sequences) to other machine code than before (bench/sametext.sh; bench/NOTES.md section 72) */
    const bool whole = ldx % V == 0 && K % V == 0 && (((unsigned long long)X) & 15) == 0;
    const unsigned full = rnn_smem_addr(&rnn_full[b]), uses = rnn_uses[b];
    if (whole) {
        const int nn = N - n0 < NP ? N - n0 : NP, kn = K - k0 < KC ? K - k0 : KC;
        if (threadIdx.x == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(full), "r"(nn * kn * (int)sizeof(T))
                         : "memory");
        const int n = (int)rnn_cluster_rank() + RNN_CLUSTER * (int)threadIdx.x;
        if (n < nn) {
            if (uses > 0) rnn_bar_wait(rnn_smem_addr(&rnn_empty[b]), (uses - 1) & 1); /* every block has read it */
            asm volatile("fence.proxy.async.global;" ::: "memory"); /* X was written by ordinary stores */
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                         " [%0], [%1], %2, [%3], %4;" ::"r"(rnn_smem_addr(xs + n * lds)),
                         "l"(X + (long long)(n0 + n) * ldx + k0), "r"(kn * (int)sizeof(T)), "r"(full),
                         "h"((unsigned short)((1u << RNN_CLUSTER) - 1))
                         : "memory");
        }
        return;
    }
    /* this block's copies only; still a use of tile b (its barriers keep their phases in step) */
    if (uses > 0) rnn_bar_wait(rnn_smem_addr(&rnn_empty[b]), (uses - 1) & 1);
    if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(full) : "memory"); /* no bytes to count */
    rnn_stage_copies<1>(xs, X, ldx, N, K, n0, k0, NP, KC, lds, false); /* rows not whole 16-byte pieces */
#else
    rnn_stage_copies<1>(xs, X, ldx, N, K, n0, k0, NP, KC, lds, rnn_rows_whole16(X, ldx, K));
#endif
}

/* Chunk c of a pass over sequences n0 .., whose chunk 0 rnn_mv_stage started into tile 0 of xs
 * (two tiles of NP*lds floats when chunks > 1): starts staging chunk c+1 into the other tile,
 * waits for chunk c and returns its tile. Every thread of the block must call it (it ends with a
 * __syncthreads); the caller's rnn_mv_release(c & 1) after reading the tile lets it be refilled. */
template <typename T>
RNN_DEV const T *rnn_mv_chunk(T *xs, const T *X, long long ldx, int N, int K, int n0, int c, int chunks, int NP, int KC,
                              int lds) {
    if (c + 1 < chunks) {
        rnn_mv_stage(xs, (c + 1) & 1, X, ldx, N, K, n0, (c + 1) * KC, NP, KC, lds);
        rnn_cp_wait_one();
    } else {
        rnn_cp_wait_all();
    }
#if RNN_CLUSTER > 1
    rnn_bar_wait(rnn_smem_addr(&rnn_full[c & 1]), rnn_uses[c & 1] & 1);
#endif
    __syncthreads();
#if RNN_CLUSTER > 1
    if (threadIdx.x == 0) rnn_uses[c & 1]++; /* read again only after the next __syncthreads */
#endif
    RNN_PROF(1);
    return xs + (c & 1) * NP * lds;
}

/* Before k step ki of a product on a tile staged in S waves (rnn_stage_copies<S>): at the first k
 * step of each wave, waits until this thread's copies of it have landed, then for the block's (a
 * __syncthreads). */
template <int KI, int S>
RNN_DEV void rnn_wave_wait(int ki) {
    constexpr int KV = KI / S; /* k steps a wave */
    if (ki % KV != 0) return;
    switch (S - 1 - ki / KV) { /* wave groups still allowed in flight */
    case 0: rnn_cp_wait_all(); break;
    case 1: rnn_cp_wait_one(); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    }
    __syncthreads();
    if (ki == 0) RNN_PROF(1);
}

/* After every thread of the block has read tile b (this starts with a __syncthreads): it may be
 * refilled; with clusters, tells every block of the cluster so. */
RNN_DEV void rnn_mv_release(int b) {
    __syncthreads();
#if RNN_CLUSTER > 1
    if (threadIdx.x < RNN_CLUSTER) {
        unsigned peer;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer) : "r"(rnn_smem_addr(&rnn_empty[b])), "r"(threadIdx.x));
        /* relaxed: the loads of the tile returned their values before the __syncthreads above, so no
         * later write can reach them; a release would also wait for this thread's global stores
         * (measured: 0.5-0.8 us a step slower, bench/NOTES.md section 11) */
        asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(peer) : "memory");
    }
#endif
}

/* The partial sums' row stride, LDR (ldr; a template argument of rnn_mv_t and rnn_mv_mma): the
 * floats between two sequences' partial sums of a pass's RPP rows in red ([RNN_WARPS][NP][ldr]),
 * which codegen/cg_persist_plan.c's cg_persist_red_ld gives and sizes red by: RPP padded so that
 * neither the products' stores into red nor rnn_mv_finish's loads (consecutive threads on consecutive rows)
 * collide in a bank, ldr % 16 == 4 for the mma product (lanes t = 0..3 store sequences 2t and
 * 2t+1, rows g = 0..7), 8 for the FFMA one (quarters q = 0..3 store sequences j*4 + q). */

/* kept_only of rnn_mv_t, rnn_mv_mma and rnn_mv_finish: RNN_TO_OUT (0) writes every result to out
 * (and the kept sequences' to sres); RNN_KEPT_ONLY (1) only to sres for the kept sequences (nothing
 * else reads them: an inference step's buffer); RNN_IN_RED (2, one pass over all the sequences)
 * writes nothing. Either way the warps' partial sums stay in red until the block's next product
 * (rnn_mv_finish only reads them), so a step whose element-wise code adds up the ones it reads
 * itself (rnn_red_sum; codegen/cg.h CgPersistGemm.fuse) has its product write them only where
 * another program reads them (training) and skip the sums in inference. */
enum { RNN_TO_OUT = 0, RNN_KEPT_ONLY = 1, RNN_IN_RED = 2 };

/* The sum over the warps of the partial sums in red ([RNN_WARPS][np][ldr]) of sequence n, local row
 * r of a pass: rnn_mv_finish's result, and a fused group's (the same bits either way). */
RNN_DEV float rnn_red_sum(const float *red, int np, int ldr, int n, int r) {
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < RNN_WARPS; w++) v += red[(w * np + n) * ldr + r];
    return v;
}

/* A fused product's sums (rnn_red_sum; one pass over every sequence) of sequences n < N and local
 * rows r < rows, stored as rnn_mv_finish stores them (row rowmap[r] of column n at out + n*ldo;
 * consecutive threads, consecutive rows): a training forward's step output for the backward, stored
 * after the block's arrival at the end of the step, so that the release does not wait for it (bench/NOTES.md
 * sections 69 and 99). */
RNN_DEV void rnn_red_store(const float *red, int np, int ldr, int rows, int N, float *out, long long ldo, const int *rowmap) {
    for (int e = threadIdx.x; e < rows * N; e += RNN_P_THREADS) {
        const int n = e / rows, r = e - n * rows;
        out[(long long)n * ldo + rowmap[r]] = rnn_red_sum(red, np, ldr, n, r);
    }
}

/* The end of one pass of a block's matrix product: red [RNN_WARPS][NP][ldr] holds the warps'
 * partial sums of rows p*RPP .. and sequences n0 ..; adds them up and writes them (see rnn_mv_t):
 * consecutive threads take consecutive rows, so that the stores into out of a block's runs of
 * consecutive rows coalesce.
 * Every thread of the block must call it; it starts and ends with a __syncthreads (RNN_IN_RED: it
 * returns after the first). With clusters,
 * where another pass follows, the cluster meets (arriving before the sums, waiting after them)
 * before that pass's copies into tile 0: without it, compute-sanitizer racecheck reports those
 * copies against the reads of the pass before (8 sequences a pass, more than 8 sequences;
 * bench/NOTES.md section 25), though the empty barriers order them as they order the reuse
 * between chunks, which racecheck passes. The arrive is relaxed, as rnn_mv_release's: the tile's
 * loads returned their values before the __syncthreads above; a release arrive would also wait
 * for this thread's global stores (measured: +8.5% a step at ds2 LSTM tf32). With sp (a backward
 * whose clusters split K), rnn_split_finish does the work instead. */
RNN_DEV void rnn_split_finish(const float *red, int RPP, int ldr, int NP, int n0, int N, float *out, long long ldo,
                              const int *rowmap, int acc, rnn_split *sp);
RNN_DEV void rnn_mv_finish(const float *red, int RPP, int ldr, int NP, int p, int passes, int rows, int n0, int N, float *out,
                           long long ldo, const int *rowmap, int acc, float *sres, int res_cap, int kept_only,
                           rnn_split *sp) {
    __syncthreads();
    if (kept_only == RNN_IN_RED) {
        RNN_PROF(3);
        return;
    }
    if (RNN_SPLIT > 1 && sp) {
        rnn_split_finish(red, RPP, ldr, NP, n0, N, out, ldo, rowmap, acc, sp);
        return;
    }
#if RNN_CLUSTER > 1
    const bool more = n0 + NP < N || p + 1 < passes; /* the same in every block of the cluster */
    if (more) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); /* no memory order: above */
#endif
    for (int e = threadIdx.x; e < RPP * NP; e += RNN_P_THREADS) { /* consecutive threads, consecutive rows */
        const int n = e / RPP, r = e - n * RPP, lr = p * RPP + r;
        if (lr < rows && n0 + n < N) {
            const float v = rnn_red_sum(red, NP, ldr, n, r);
            const bool kept = sres && n0 + n < res_cap;
            if (!kept || kept_only == RNN_TO_OUT) {
                float *o = out + (long long)(n0 + n) * ldo + rowmap[lr];
                *o = acc ? *o + v : v;
            }
            if (kept) sres[(n0 + n) * passes * RPP + lr] = v;
        }
    }
    __syncthreads();
#if RNN_CLUSTER > 1
    if (more) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
    RNN_PROF(3);
}

/* rnn_mv_finish with split K (one pass of the cluster's rows; rowmap: this block's own rows'): the
 * warps' sums of every block's rows go to that block's exchange area, the cluster meets (or each block
 * waits for its parts: RNN_SPLIT_ASYNC, below), and each block adds up the parts of its own rows and
 * writes them. Consecutive threads take consecutive rows, so a block's stores into another's area are
 * runs. The two areas are used in turn: a block writes an area again only after the meeting (or the
 * wait) that follows its owner's reads of it. */
RNN_DEV void rnn_split_finish(const float *red, int RPP, int ldr, int NP, int n0, int N, float *out, long long ldo,
                              const int *rowmap, int acc, rnn_split *sp) {
#if RNN_SPLIT > 1
    /* With RNN_SPLIT_ASYNC, where every block's area takes parts (each block then waits on parts from
     * every other), the parts go by st.async, each counted on its owner's transaction barrier for this
     * area, which the owner arms with the bytes its area takes and waits on: no meeting of the cluster
     * (whose release arrive waits for every load and store of the thread in flight). An area is written
     * again two exchanges on, after its writer has waited for the exchange between, whose parts its
     * owner sent only after reading this one (the __syncthreads closing this function). Elsewhere (a
     * block owning none of a pass's rows, or no RNN_SPLIT_ASYNC), distributed stores and the cluster's
     * meeting. The codegen asks for it only where the unit's products load their operands straight
     * (cg_persist.c): a kernel holding any mbarrier has each release fence (the grid barrier's arrive,
     * the cluster's) compiled as MEMBAR.ALL.CTA before MEMBAR.ALL.GPU, which cost a staged deepbench
     * backward far more than the meetings saved (bench/NOTES.md section 109). */
    const int ro = sp->ro, rank = (int)rnn_cluster_rank(), b = (int)(sp->uses & 1);
    float *const x = sp->xch + b * RNN_SPLIT * NP * ro;
    const bool async = RNN_SPLIT_ASYNC && RPP > (RNN_SPLIT - 1) * ro; /* the same in every block of the cluster */
#if RNN_SPLIT_ASYNC
    const unsigned bar = rnn_smem_addr(&rnn_xbar[b]);
#else
    const unsigned bar = 0; /* no barriers: async is false */
#endif
    if (async && threadIdx.x == 0) { /* the bytes this block's area takes: every block's part of its rows */
        const int nv = N - n0 < NP ? N - n0 : NP, left = RPP - rank * ro, mine = left < ro ? left : ro;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(RNN_SPLIT * nv * mine * 4)
                     : "memory");
    }
    for (int e = threadIdx.x; e < RPP * NP; e += RNN_P_THREADS) {
        const int n = e / RPP, r = e - n * RPP, owner = r / ro, u = r - owner * ro;
        if (owner < RNN_SPLIT && n0 + n < N) {
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < RNN_WARPS; w++) v += red[(w * NP + n) * ldr + r];
            unsigned peer;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                         : "=r"(peer) : "r"(rnn_smem_addr(x + (rank * NP + n) * ro + u)), "r"(owner));
            if (async) {
                unsigned peer_bar;
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer_bar) : "r"(bar), "r"(owner));
                asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                             ::"r"(peer), "r"(__float_as_uint(v)), "r"(peer_bar) : "memory");
            } else {
                asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(peer), "f"(v) : "memory");
            }
        }
    }
    if (async) {
        const unsigned parity = (sp->xph >> b) & 1u;
        for (unsigned done = 0; !done;)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        sp->xph ^= 1u << b;
    } else {
        rnn_cluster_sync();
    }
    if (n0 == 0) sp->mine_set = 0;
    for (int e = threadIdx.x; e < sp->rows * NP; e += RNN_P_THREADS) {
        const int n = e / sp->rows, u = e - n * sp->rows;
        if (n0 + n < N) {
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < RNN_SPLIT; k++) v += x[(k * NP + n) * ro + u];
            float *o = out + (long long)(n0 + n) * ldo + rowmap[u];
            *o = acc ? *o + v : v;
            if (!acc && n0 == 0 && e == threadIdx.x) sp->mine = v, sp->mine_set = 1;
        }
    }
    sp->uses++;
    __syncthreads();
    RNN_PROF(3);
#endif
}

/* A lane's weights for the first KI steps of rnn_mv_t's k loop (RW rows, a float4 each a step) of
 * one pass of a block's rows, held in registers for every step of the kernel (codegen/cg.h
 * CgPersistGemm.wregs), so that those steps read only the operand from shared memory. */
template <int KI, int RW> struct rnn_ffrag { float4 w[KI > 0 ? KI : 1][RW]; };

/* Before the step loop (every thread, after the weights have landed): this lane's first KI steps of
 * rnn_mv_t's first pass of rows for K staged whole (KC columns, KC / RNN_WARPS a warp; NW: as
 * rnn_mv_t's, which sets the lane's k), from the weights W on chip (ldw floats a row), into fr. */
template <int KI, int RW, int NW>
RNN_DEV void rnn_ffrag_load(rnn_ffrag<KI, RW> &fr, const float *W, int ldw, int KC) {
    constexpr int SPLIT = NW <= 2, KS = SPLIT ? 16 : 4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float *wp = W + (lane & 7) * ldw + warp * (KC / RNN_WARPS) + (SPLIT ? (lane >> 3) * 4 : 0);
#pragma unroll
    for (int ki = 0; ki < KI; ki++)
#pragma unroll
        for (int i = 0; i < RW; i++) fr.w[ki][i] = *(const float4 *)(wp + i * 8 * ldw + ki * KS);
}

/* The block's share of one GEMM: for r < rows and n < N,
 *     out[n*ldo + rowmap[r]] (=, or += when acc) = sum_{k < K} W[r*ldw + k] * X[n*ldx + k]
 * W: the block's rows in shared memory, zero beyond rows and K up to RP = passes*8*RW rows and
 * KP = chunks*KC columns (ldw = KP + RNN_PAD_FFMA; KC a multiple of 16*RNN_WARPS). X: global. xs: two
 * staging tiles [4*NW][KC + RNN_PAD_FFMA]; red: [RNN_WARPS][4*NW][LDR] partial sums (LDR: above rnn_mv_finish). Warp w sums k in its share
 * (KC / RNN_WARPS) of each KC chunk. A 16-byte shared load is served a quarter-warp at a time, so the quarters must not
 * fetch the same words: with NW <= 2 (at most 8 sequences a pass), lane (rg, kq) = (lane % 8,
 * lane / 8) keeps rows i*8 + rg and every column, its quarter kq taking every fourth float4 of
 * the warp's k (the quarters' sums meet by shuffles); with more sequences, lane (rg, ng) keeps
 * rows i*8 + rg and columns j*4 + ng over all of the warp's k. sres (or NULL): a copy of the
 * results of sequences n < res_cap at sres[n * passes*8*RW + r], for the block's element-wise
 * code; kept_only (RNN_TO_OUT, RNN_KEPT_ONLY or RNN_IN_RED: above rnn_red_sum) says which of them
 * are written at all. F (or NULL): X's flagged copy, staged instead with rnn_flag_stage (flag; only with chunks
 * == 1). sp (a backward with split K, else NULL): the rows are the cluster's, W and X this block's
 * part of K, and rnn_split_finish ends each pass (rowmap: this block's own rows'). With KI > 0, the
 * first KI steps of each lane's k loop take their weights from fr (rnn_ffrag_load's, before the step
 * loop), the rest from W: one pass of rows, K staged whole (the kernel traps otherwise). Every thread
 * of the block must call it; it ends with a __syncthreads. */
template <int RW, int NW, int LDR, int KI = 0>
RNN_DEV void rnn_mv_t(const float *W, int ldw, int rows, int passes, int K, int KC, int chunks, const float *X,
                      long long ldx, int N, const unsigned long long *F, unsigned flag, float *xs, float *red,
                      float *out, long long ldo, const int *rowmap, int acc, float *sres, int res_cap, int kept_only,
                      rnn_split *sp = nullptr, const rnn_ffrag<KI, RW> *fr = nullptr) {
    constexpr int NP = 4 * NW, RPP = 8 * RW, SPLIT = NW <= 2, NC = SPLIT ? NP : NW; /* NC: columns a lane keeps */
    constexpr int KS = SPLIT ? 16 : 4; /* k a step of a lane's loop */
    static_assert(LDR >= RPP, "rnn_mv_t: a pass's partial sums fit their stride");
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, rg = lane & 7, q = lane >> 3;
    const int lds = KC + RNN_PAD_FFMA, kw = KC / RNN_WARPS, k0 = SPLIT ? q * 4 : 0;
    if (KI > 0 && (passes != 1 || chunks != 1 || kw < KI * KS || !fr)) __trap(); /* fr's contract (above) */
    for (int p = 0; p < passes; p++) {
        for (int n0 = 0; n0 < N; n0 += NP) {
            float sum[RW][NC];
#pragma unroll
            for (int i = 0; i < RW; i++)
#pragma unroll
                for (int j = 0; j < NC; j++) sum[i][j] = 0.0f;
            if (F) rnn_flag_stage(xs, F, flag, N, K, n0, NP, KC, lds); /* staged whole (chunks == 1) */
            else rnn_mv_stage(xs, 0, X, ldx, N, K, n0, 0, NP, KC, lds);
            for (int c = 0; c < chunks; c++) {
                const float *wp = W + (p * RPP + rg) * ldw + c * KC + warp * kw;
                const float *xp = rnn_mv_chunk(xs, X, ldx, N, K, n0, c, chunks, NP, KC, lds) + warp * kw;
                if (!SPLIT) xp += q * lds;
                /* one k step: the operand's values at kk, and the products with the weights' w */
                auto step = [&](const float4 (&w)[RW], int kk) {
                    float4 x[NC];
#pragma unroll
                    for (int j = 0; j < NC; j++) x[j] = *(const float4 *)(xp + j * (SPLIT ? 1 : 4) * lds + kk);
#pragma unroll
                    for (int i = 0; i < RW; i++)
#pragma unroll
                        for (int j = 0; j < NC; j++) sum[i][j] = rnn_fma4(w[i], x[j], sum[i][j]);
                };
                if constexpr (KI > 0) {
#pragma unroll
                    for (int ki = 0; ki < KI; ki++) step(fr->w[ki], k0 + ki * KS);
                }
#pragma unroll 2
                for (int kk = k0 + KI * KS; kk < kw; kk += KS) {
                    float4 w[RW];
#pragma unroll
                    for (int i = 0; i < RW; i++) w[i] = *(const float4 *)(wp + i * 8 * ldw + kk);
                    step(w, kk);
                }
                rnn_mv_release(c & 1); /* the tile is refilled two chunks later */
                RNN_PROF(2);
            }
            if (SPLIT) { /* the four quarters' sums of each row and column, into quarter 0 */
#pragma unroll
                for (int i = 0; i < RW; i++)
#pragma unroll
                    for (int j = 0; j < NC; j++) {
                        sum[i][j] += __shfl_xor_sync(0xffffffffu, sum[i][j], 8);
                        sum[i][j] += __shfl_xor_sync(0xffffffffu, sum[i][j], 16);
                    }
                if (q == 0)
#pragma unroll
                    for (int i = 0; i < RW; i++)
#pragma unroll
                        for (int j = 0; j < NC; j++) red[(warp * NP + j) * LDR + i * 8 + rg] = sum[i][j];
            } else {
#pragma unroll
                for (int i = 0; i < RW; i++)
#pragma unroll
                    for (int j = 0; j < NC; j++) red[(warp * NP + j * 4 + q) * LDR + i * 8 + rg] = sum[i][j];
            }
            rnn_mv_finish(red, RPP, LDR, NP, p, passes, rows, n0, N, out, ldo, rowmap, acc, sres, res_cap, kept_only, sp);
        }
    }
}

/* x rounded to tf32 (10 mantissa bits, to nearest, ties away), as a float. */
RNN_DEV float rnn_to_tf32(float x) {
    unsigned u;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
    return __uint_as_float(u);
}

/* Loads columns lo .. lo+rows-1 of the row-major K x cols matrix wg (T: float, or 16-bit values as
 * unsigned short), transposed, into ws [rp][ldw]: ws[r*ldw + k] = wg[k*cols + lo + r] (rounded to
 * tf32 with ROUND, floats only), zeros for rows r >= rows up to rp and for k >= K up to ldw. The
 * backward's weights: each block takes a narrow strip of columns of every row. 16-byte loads (cols a
 * multiple of 16 / sizeof(T) and wg 16-byte aligned: the plan's condition), U of them in flight a
 * thread, consecutive threads on consecutive k, so that a warp's stores into one row of ws fill
 * consecutive words (no bank conflicts; a 2-byte value a thread down a column would collide).
 * Every thread of the block calls it; the caller's __syncthreads publishes ws. */
template <int ROUND, typename T>
RNN_DEV void rnn_load_transposed(T *ws, int ldw, int rp, const T *wg, long long cols, int K, int lo, int rows) {
    constexpr int V = 16 / sizeof(T), U = 8;
    static_assert(!ROUND || sizeof(T) == 4, "rnn_load_transposed: tf32 rounding of floats only");
    const int pad = ldw - K, a0 = lo - lo % V, pieces = rows > 0 ? (lo + rows - a0 + V - 1) / V : 0, total = pieces * K;
    for (int e = threadIdx.x; e < (rp - rows) * ldw; e += RNN_P_THREADS) ws[rows * ldw + e] = (T)0;
    for (int e = threadIdx.x; e < rows * pad; e += RNN_P_THREADS) {
        const int r = e / pad;
        ws[r * ldw + K + e - r * pad] = (T)0;
    }
    for (int e0 = threadIdx.x; e0 < total; e0 += U * RNN_P_THREADS) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) { /* every load in flight before the first store */
            const int e = e0 + u * RNN_P_THREADS, p = e / K, k = e - p * K;
            if (e < total) v[u] = *(const uint4 *)(wg + (long long)k * cols + a0 + p * V);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * RNN_P_THREADS, p = e / K, k = e - p * K, c0 = a0 + p * V - lo;
            if (e >= total) continue;
            const T *x = (const T *)&v[u];
#pragma unroll
            for (int i = 0; i < V; i++)
                if (c0 + i >= 0 && c0 + i < rows) {
                    T y = x[i];
                    if (ROUND) y = (T)rnn_to_tf32((float)y);
                    ws[(c0 + i) * ldw + k] = y;
                }
        }
    }
}

/* Columns lo .. lo+rows-1 of the row-major K x cols matrix of 16-bit values wg, as they lie, into
 * columns c0 .. c0+rw-1 of ws [KC][rp]: ws[k*rp + c0 + r] = wg[k*cols + lo + r], zeros for r >= rows
 * up to rw and for k >= K up to KC. 16-byte copies (lo, rows, rw, c0 and rp multiples of 8, cols too,
 * wg 16-byte aligned: the plan's condition, codegen cg_persist_copies_columns), which the caller
 * commits, waits for and publishes; rnn_wfrag_load_t then transposes them into A fragments. A
 * backward's held weights: the strip a block takes of each row of W moves as it lies, with no 2-byte
 * transposing stores (rnn_load_transposed's; bench/NOTES.md section 120). */
RNN_DEV void rnn_copy_columns16(unsigned short *ws, int rp, int c0, int rw, const unsigned short *wg, long long cols, int K,
                                int KC, int lo, int rows) {
    const int pieces = rw / 8;
    for (int e = threadIdx.x; e < KC * pieces; e += RNN_P_THREADS) {
        const int k = e / pieces, p = e - k * pieces;
        const bool in = k < K && p * 8 < rows;
        rnn_cp16(ws + (long long)k * rp + c0 + p * 8, in ? wg + (long long)k * cols + lo + p * 8 : wg, in ? 16 : 0);
    }
}

/* c += a b on tensor cores: one m16n8k8 tf32 product of a warp (PTX ISA, "mma.m16n8k8"): lane
 * (g, t) = (lane / 4, lane % 4) holds a = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4] (row-major
 * 16x8), b = B[t][g], B[t+4][g] (8x8) and c = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]. */
RNN_DEV void rnn_mma_tf32(float c[4], float a0, float a1, float a2, float a3, float b0, float b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(__float_as_uint(a0)), "r"(__float_as_uint(a1)), "r"(__float_as_uint(a2)), "r"(__float_as_uint(a3)),
                   "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
}

/* lo and hi rounded to fp16 (bf16 when BF), to nearest even, packed: lo in the low 16 bits. */
template <int BF>
RNN_DEV unsigned rnn_pack16(float lo, float hi) {
    unsigned d;
    if (BF) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

/* c += a b on tensor cores: one m16n8k16 product of a warp with fp16 (bf16 when BF) inputs and fp32
 * sums (PTX ISA, "mma.m16n8k16"): lane (g, t) = (lane / 4, lane % 4) holds, two elements a register
 * (the lower k in the low half), a = A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..] (row-major
 * 16x16), b = B[2t..][g], B[2t+8..][g] (16x8) and c as rnn_mma_tf32. */
template <int BF>
RNN_DEV void rnn_mma16(float c[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    if (BF)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* A lane's A fragments of a pass's MT 16-row tiles: 16 bytes (V: float4 or uint4) at w (its row g,
 * its k) and 8 rows below, each tile's 16 rows apart (ld elements a row); zeros for rows past RPP
 * (RW odd: the last tile's lower 8 rows). */
template <int MT, int RPP, typename V, typename E>
RNN_DEV void rnn_mma_a(V a[MT][2], const E *w, int ld) {
#pragma unroll
    for (int i = 0; i < MT; i++) {
        a[i][0] = *(const V *)(w + i * 16 * ld);
        a[i][1] = V{}; /* rows past RPP (RW odd) */
        if (i * 16 + 8 < RPP) a[i][1] = *(const V *)(w + (i * 16 + 8) * ld);
    }
}

/* A warp's A fragments (rnn_mma_a's, V: uint4 for 16-bit weights, float4 for tf32) of one pass of a
 * block's rows over the warp's whole share of K: KI steps of rnn_mv_mma's k loop, held in registers
 * for every step of the kernel (codegen/cg.h CgPersistGemm.wregs), so that a step's product reads
 * only its operand from shared memory. */
template <int PREC> struct rnn_wv { typedef uint4 T; };
template <> struct rnn_wv<1> { typedef float4 T; }; /* RNN_TF32 (below) */
template <int KI, int MT, typename V> struct rnn_wfrag { V a[KI > 0 ? KI : 1][MT][2]; };

/* rnn_mv_mma's k loop over a warp's share (kw) of one chunk: step(a, kk) at each k step of KS, the
 * weights' A fragments a from fr (KI > 0: all KI steps, unrolled; with WS > 0, each step after
 * rnn_wave_wait<KI, WS>(ki)) or read from shared memory at wp (ldw elements a row; the loop
 * unrolled U times). */
template <int KI, int MT, int RPP, int KS, int U, int WS, typename V, typename E, typename S>
RNN_DEV void rnn_mma_k(const rnn_wfrag<KI, MT, V> *fr, const E *wp, int ldw, int kw, S &step) {
    if constexpr (KI > 0) {
#pragma unroll
        for (int ki = 0; ki < KI; ki++) {
            if constexpr (WS > 0) rnn_wave_wait<KI, WS>(ki);
            step(fr->a[ki], ki * KS);
        }
    } else {
#pragma unroll U
        for (int kk = 0; kk < kw; kk += KS) {
            V a[MT][2];
            rnn_mma_a<MT, RPP>(a, wp + kk, ldw);
            step(a, kk);
        }
    }
}

/* rnn_mv_t on tensor cores, fp32 sums, with PREC's inputs: RNN_TF32 (W already rounded to tf32 by
 * rnn_to_tf32, ldw = KP + RNN_PAD_MMA floats, tiles [NP][KC + RNN_PAD_MMA]) or RNN_F16 / RNN_BF16 (W:
 * 16-bit values, the runtime's rounded copy of the parameters, RnnArgs.params16, ldw = KP +
 * RNN_PAD_16 halves, KC a multiple of 32*RNN_WARPS, tiles [NP][KC + RNN_PAD_FFMA] rounded to 16 bits
 * as they are read). Same contract otherwise, except: NW even (NP = 4*NW sequences a pass, whole
 * 8-column tiles). A pass's RPP = 8*RW rows take (RW+1)/2 16-row tiles; with RW odd the last tile's
 * lower 8 rows are zeros in registers, not in memory. Since the order of a dot product's terms is
 * free, each lane reads its A and B values as 16-byte loads of consecutive physical k: tf32, warp w
 * sums k in its share of each chunk 16 at a time as two m16n8k8 products, logical k = t, t+4 of the
 * first and of the second being physical k = 4t, 4t+1 and 4t+2, 4t+3; 16 bits, 32 at a time as two
 * m16n8k16 products, lane t reading physical k = 8t .. 8t+7 of a row (16 bytes) or a column (32
 * bytes), its first product taking 8t .. 8t+3 as logical k = 2t, 2t+1, 2t+8, 2t+9, the second 8t+4
 * .. 8t+7. */
enum { RNN_TF32 = 1, RNN_F16 = 2, RNN_BF16 = 3 }; /* codegen/cg.h's CgProducts */
static_assert(RNN_TF32 == 1, "rnn_wv<1> (above) is tf32's");
template <int XH> struct rnn_staged { typedef float T; };          /* an operand staged as floats */
template <> struct rnn_staged<1> { typedef unsigned short T; };    /* or as its 16-bit twin */
template <> struct rnn_staged<2> { typedef unsigned short T; };    /* or loaded from it (rnn_load_b) */
/* With XH (16-bit products only), X is the operand's 16-bit twin (RnnArgs.state16; a backward's
 * dbuf16), staged as it is into tiles [NP][KC + RNN_PAD_16] halves (half the bytes from L2; the B
 * fragments read as they are, rows 64 bytes past 128s as the weights'), and F (or NULL) its 16-bit
 * flagged words (rnn_flag_stage16); without, F (or NULL) holds 8-byte flagged words (rnn_flag_stage).
 * With XH = 2 (CgPersist.direct: KI > 0, no waves, RNN_CLUSTER 1 (a backward's clusters splitting K
 * load their own parts), F NULL), nothing is staged: each warp loads its share of X straight into its
 * B fragments (rnn_load_b). */
/* With KI > 0, the weights' A fragments come from fr (rnn_wfrag_load's, before the step loop), not
 * from W: one pass of rows, K staged whole, KI steps of KS a warp (the kernel traps otherwise).
 * With WS > 0 (codegen/cg.h CgPersistGemm.waves: KI > 0, this block's own copies, no flagged
 * words), the tile is staged in WS waves (rnn_stage_copies), so that the product runs on the first
 * while the others land. */
template <int RW, int NW, int PREC, int XH, int LDR, int KI = 0, int WS = 0>
RNN_DEV void rnn_mv_mma(const void *W, int ldw, int rows, int passes, int K, int KC, int chunks, const void *X,
                        long long ldx, int N, const void *F, unsigned flag, float *xs, float *red,
                        float *out, long long ldo, const int *rowmap, int acc, float *sres, int res_cap, int kept_only,
                        rnn_split *sp = nullptr,
                        const rnn_wfrag<KI, (RW + 1) / 2, typename rnn_wv<PREC>::T> *fr = nullptr) {
    constexpr int NP = 4 * NW, RPP = 8 * RW, MT = (RW + 1) / 2, NT = NP / 8, H = PREC != RNN_TF32, BF = PREC == RNN_BF16;
    constexpr int KS = H ? 32 : 16; /* k a step of the two products */
    static_assert(WS == 0 || (KI > 0 && KI % WS == 0 && RNN_CLUSTER == 1), "rnn_mv_mma: waves of whole k steps, copies of its own");
    static_assert(LDR >= RPP, "rnn_mv_mma: a pass's partial sums fit their stride");
    static_assert(NW % 2 == 0, "rnn_mv_mma: whole 8-sequence tiles");
    static_assert(!XH || H, "rnn_mv_mma: 16-bit operands with 16-bit products only");
    static_assert(XH != 2 || (KI > 0 && WS == 0 && RNN_CLUSTER == 1), "rnn_mv_mma: operands loaded straight with held weights, no clusters sharing copies");
    constexpr int KP = XH == 2 ? KI : 1; /* k steps of B fragments loaded straight */
    typedef typename rnn_staged<XH>::T XT;
    XT *const xt = (XT *)xs;
    const XT *const xg = (const XT *)X;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tk = (lane & 3) * (KS / 4);
    const int lds = KC + (XH ? RNN_PAD_16 : H ? RNN_PAD_FFMA : RNN_PAD_MMA), kw = KC / RNN_WARPS;
    if (KI > 0 && (passes != 1 || chunks != 1 || kw != KI * KS || !fr)) __trap(); /* fr's contract (above) */
    if (WS > 0 && F) __trap(); /* flagged words are staged in one go (the plan gives them no waves) */
    if (XH == 2 && F) __trap(); /* loaded from the twin, not flagged words */
    for (int p = 0; p < passes; p++) {
        for (int n0 = 0; n0 < N; n0 += NP) {
            float c[2][MT][NT][4]; /* two independent sums per tile: twice the mma in flight */
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int i = 0; i < MT; i++)
#pragma unroll
                    for (int j = 0; j < NT; j++) c[h][i][j][0] = c[h][i][j][1] = c[h][i][j][2] = c[h][i][j][3] = 0.0f;
            uint4 bq[KP][NT]; /* XH = 2: the pass's B fragments, loaded straight */
            if constexpr (XH == 2) rnn_load_b<KP, NT, KS>(bq, xg, ldx, N, K, n0, warp * kw + tk);
            else if (F && XH) rnn_flag_stage16((unsigned short *)xs, (const unsigned *)F, flag, N, K, n0, NP, KC, lds); /* whole */
            else if (F) rnn_flag_stage(xs, (const unsigned long long *)F, flag, N, K, n0, NP, KC, lds); /* (chunks == 1) */
            else if (WS > 0) rnn_stage_copies<(WS > 0 ? WS : 1)>(xt, xg, ldx, N, K, n0, 0, NP, KC, lds, rnn_rows_whole16(xg, ldx, K));
            else rnn_mv_stage(xt, 0, xg, ldx, N, K, n0, 0, NP, KC, lds);
            for (int ch = 0; ch < chunks; ch++) {
                const long long w0 = (long long)(p * RPP + g) * ldw + ch * KC + warp * kw + tk; /* elements */
                /* with WS > 0 (chunks == 1), the k loop waits for the tile (rnn_wave_wait) */
                const XT *const xq = (XH == 2 || WS > 0 ? xt : rnn_mv_chunk(xt, xg, ldx, N, K, n0, ch, chunks, NP, KC, lds)) + g * lds + warp * kw + tk;
                const float *const xp = (const float *)xq; /* XH = 0 */
                if constexpr (H) {
                    /* one k step: the operand's B fragments at kk, and the products with the weights' a */
                    auto step = [&](const uint4 (&a)[MT][2], int kk) {
                        uint4 b[NT];
#pragma unroll
                        for (int j = 0; j < NT; j++) {
                            if (XH == 2) {
                                b[j] = bq[kk / KS][j]; /* kk constant: KI > 0 unrolls the k loop */
                            } else if (XH) {
                                b[j] = *(const uint4 *)(xq + j * 8 * lds + kk);
                            } else {
                                const float4 x0 = *(const float4 *)(xp + j * 8 * lds + kk), x1 = *(const float4 *)(xp + j * 8 * lds + kk + 4);
                                b[j] = make_uint4(rnn_pack16<BF>(x0.x, x0.y), rnn_pack16<BF>(x0.z, x0.w),
                                                  rnn_pack16<BF>(x1.x, x1.y), rnn_pack16<BF>(x1.z, x1.w));
                            }
                        }
#pragma unroll
                        for (int i = 0; i < MT; i++)
#pragma unroll
                            for (int j = 0; j < NT; j++) {
                                rnn_mma16<BF>(c[0][i][j], a[i][0].x, a[i][1].x, a[i][0].y, a[i][1].y, b[j].x, b[j].y);
                                rnn_mma16<BF>(c[1][i][j], a[i][0].z, a[i][1].z, a[i][0].w, a[i][1].w, b[j].z, b[j].w);
                            }
                    };
                    rnn_mma_k<KI, MT, RPP, KS, 2, WS>(fr, (const unsigned short *)W + w0, ldw, kw, step);
                } else {
                    auto step = [&](const float4 (&a)[MT][2], int kk) {
                        float4 b[NT];
#pragma unroll
                        for (int j = 0; j < NT; j++) {
                            const float4 x = *(const float4 *)(xp + j * 8 * lds + kk);
                            b[j] = make_float4(rnn_to_tf32(x.x), rnn_to_tf32(x.y), rnn_to_tf32(x.z), rnn_to_tf32(x.w));
                        }
#pragma unroll
                        for (int i = 0; i < MT; i++)
#pragma unroll
                            for (int j = 0; j < NT; j++) {
                                rnn_mma_tf32(c[0][i][j], a[i][0].x, a[i][1].x, a[i][0].y, a[i][1].y, b[j].x, b[j].y);
                                rnn_mma_tf32(c[1][i][j], a[i][0].z, a[i][1].z, a[i][0].w, a[i][1].w, b[j].z, b[j].w);
                            }
                    };
                    /* unrolled 4: a warp is mostly alone on its scheduler; loads of later k in flight hide latency */
                    rnn_mma_k<KI, MT, RPP, KS, 4, WS>(fr, (const float *)W + w0, ldw, kw, step);
                }
                if constexpr (XH != 2) rnn_mv_release(ch & 1); /* the tile is refilled two chunks later (XH = 2: no tile) */
                RNN_PROF(2);
            }
            const int col = 2 * (lane & 3);
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    float *r0 = red + (warp * NP + j * 8 + col) * LDR + i * 16 + g, *r8 = r0 + 8;
                    r0[0] = c[0][i][j][0] + c[1][i][j][0];
                    r0[LDR] = c[0][i][j][1] + c[1][i][j][1];
                    if (i * 16 + 8 < RPP) {
                        r8[0] = c[0][i][j][2] + c[1][i][j][2];
                        r8[LDR] = c[0][i][j][3] + c[1][i][j][3];
                    }
                }
            rnn_mv_finish(red, RPP, LDR, NP, p, passes, rows, n0, N, out, ldo, rowmap, acc, sres, res_cap, kept_only, sp);
        }
    }
}

/* Before the step loop (every thread of the block, after the weights have landed and been rounded):
 * this warp's A fragments of rnn_mv_mma's first pass of rows for K staged whole (KC columns, KC /
 * RNN_WARPS a warp), from the weights W on chip (ldw elements a row), into fr. */
template <int KI, int RW, int PREC>
RNN_DEV void rnn_wfrag_load(rnn_wfrag<KI, (RW + 1) / 2, typename rnn_wv<PREC>::T> &fr, const void *W, int ldw, int KC) {
    constexpr int MT = (RW + 1) / 2, RPP = 8 * RW, KS = PREC != RNN_TF32 ? 32 : 16;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long w0 = (long long)(lane >> 2) * ldw + warp * (KC / RNN_WARPS) + (lane & 3) * (KS / 4);
#pragma unroll
    for (int ki = 0; ki < KI; ki++) {
        if constexpr (PREC != RNN_TF32) rnn_mma_a<MT, RPP>(fr.a[ki], (const unsigned short *)W + w0 + ki * KS, ldw);
        else rnn_mma_a<MT, RPP>(fr.a[ki], (const float *)W + w0 + ki * KS, ldw);
    }
}

/* rnn_wfrag_load's fragments (16-bit weights) from ws [KC][rp] as rnn_copy_columns16 leaves it (k down,
 * the product's row r across): rnn_ldsm_t hands lane (g, t) column g of an 8x8 block at its rows 2t and
 * 2t+1, so four blocks whose rows q = 0 .. 7 lie at k = 8(q/2) + 2m + q%2 (block m) give it row g's k =
 * 8t .. 8t+7, the physical k rnn_mma_a reads from a row of W (rnn_mv_mma's order): the same fragments. */
template <int KI, int RW>
RNN_DEV void rnn_wfrag_load_t(rnn_wfrag<KI, (RW + 1) / 2, uint4> &fr, const unsigned short *ws, int rp, int KC) {
    constexpr int MT = (RW + 1) / 2, RPP = 8 * RW, KS = 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, m = lane >> 3, q = lane & 7;
    const unsigned short *const w0 = ws + (long long)(warp * (KC / RNN_WARPS) + 8 * (q >> 1) + 2 * m + (q & 1)) * rp;
#pragma unroll
    for (int ki = 0; ki < KI; ki++)
#pragma unroll
        for (int i = 0; i < MT; i++) {
            const unsigned short *const p = w0 + (long long)ki * KS * rp + i * 16;
            fr.a[ki][i][0] = rnn_ldsm_t(p);
            fr.a[ki][i][1] = uint4{}; /* rows past RPP (RW odd) */
            if (i * 16 + 8 < RPP) fr.a[ki][i][1] = rnn_ldsm_t(p + 8);
        }
}
