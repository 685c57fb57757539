# bench/knockout/flagsc.sed: a persistent forward unit planned in clusters (one step GEMM whose
# operand is the state h's 16-bit twin, staged whole; N <= 32, H = RNN_DIM_H) made one that hands h on
# by 16-bit flagged words instead of the grid barrier: the element-wise code also stores h' as flagged
# words (rnn_flag_put16) in a module array; each block of a cluster polls its share of the step's
# sequences (rank + C*i) and pushes their values into every block of the cluster through distributed
# shared memory, and the cluster meets; no grid barrier but one at the start, after each block has
# flagged its words of the first step's state. Forward units (RNNCC_KNOCKOUT_FORWARD=1). Its results
# are real: `rnncc run` checks them. bench/NOTES.md section 67. Its knockouts (results wrong): a copy
# that also defines RNN_FLAGSC_NOPOLL (one round of loads), _NOSYNC (no cluster meeting), _LOCAL (this
# block's tile only), _NOLOAD (no loads) or _BACKOFF (ns between rounds) after the RNN_CLUSTER line, e.g.
# (cat flagsc.sed; echo 's/^#define RNN_CLUSTER [0-9]* *\/\/.*/&\n#define RNN_FLAGSC_NOPOLL 1/') > nopoll.sed
/^#define RNN_CLUSTER [0-9]* *\/\//a\
__device__ unsigned rnn_fw[2][32 * RNN_DIM_H]; /* knockout flagsc: h as 16-bit flagged words, two slots */
/^\/\* Stages columns n0 \.\. n0+NP-1, elements 0 \.\. KC-1 of a flagged operand/i\
/* knockout flagsc: rnn_flag_stage16 in clusters: this block polls its columns n = rank + C*i and\
 * writes them into tile 0 of every block of the cluster; then the cluster meets. */\
RNN_DEV void rnn_flag_stage16c(unsigned short *xs, const unsigned *F, unsigned flag, int N, int K, int n0, int NP, int KC,\
                               int lds) {\
    enum { U = 8 };\
    const unsigned want = rnn_flag16(flag), arrived = want << 16;\
    const int rank = (int)rnn_cluster_rank(), q = KC / 4, mine = (NP - rank + RNN_CLUSTER - 1) / RNN_CLUSTER;\
    const int fours = mine * q;\
    const bool whole = (K & 3) == 0 && (((unsigned long long)F) & 15) == 0;\
    unsigned peer[RNN_CLUSTER];\
    _Pragma("unroll") for (int c = 0; c < RNN_CLUSTER; c++)\
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer[c]) : "r"(rnn_smem_addr(xs)), "r"(c));\
    for (int e0 = threadIdx.x; e0 < fours; e0 += U * RNN_P_THREADS) {\
        unsigned v[U][4];\
        const unsigned *src[U];\
        int kv[U], nv[U];\
        _Pragma("unroll") for (int u = 0; u < U; u++) {\
            const int e = e0 + u * RNN_P_THREADS, i = e / q, k = (e - i * q) * 4, n = rank + RNN_CLUSTER * i;\
            const int ok = e < fours && n0 + n < N && k < K;\
            src[u] = ok ? F + (long long)(n0 + n) * K + k : NULL;\
            kv[u] = k;\
            nv[u] = e < fours ? n : -1;\
            v[u][0] = v[u][1] = v[u][2] = v[u][3] = arrived;\
#ifdef RNN_FLAGSC_NOLOAD\
            src[u] = NULL; /* a knockout: nothing loaded */\
#endif\
        }\
        _Pragma("unroll") for (int u = 0; u < U; u++) rnn_flag_load16(v[u], src[u], kv[u], K, whole);\
        for (;;) {\
            int missing = 0;\
            _Pragma("unroll") for (int u = 0; u < U; u++) missing |= src[u] && !rnn_flag_all16(v[u], want);\
            if (!missing) break;\
#ifdef RNN_FLAGSC_NOPOLL\
            break; /* a knockout: one round of loads, whatever they hold */\
#endif\
#ifdef RNN_FLAGSC_BACKOFF\
            __nanosleep(RNN_FLAGSC_BACKOFF); /* a variant: a pause before the next round */\
#endif\
            _Pragma("unroll") for (int u = 0; u < U; u++)\
                if (src[u] && !rnn_flag_all16(v[u], want)) rnn_flag_load16(v[u], src[u], kv[u], K, whole);\
        }\
        _Pragma("unroll") for (int u = 0; u < U; u++) {\
            if (nv[u] < 0) continue;\
            const unsigned off = 2u * (unsigned)(nv[u] * lds + kv[u]);\
            const unsigned lo = (v[u][0] & 0xffffu) | (v[u][1] << 16), hi = (v[u][2] & 0xffffu) | (v[u][3] << 16);\
#ifdef RNN_FLAGSC_LOCAL\
            *(uint2 *)(xs + off / 2) = make_uint2(lo, hi); /* a knockout: into this block only */\
#else\
            _Pragma("unroll") for (int c = 0; c < RNN_CLUSTER; c++)\
                asm volatile("st.shared::cluster.v2.b32 [%0], {%1, %2};" ::"r"(peer[c] + off), "r"(lo), "r"(hi) : "memory");\
#endif\
        }\
    }\
#ifdef RNN_FLAGSC_NOSYNC\
    __syncthreads(); /* a knockout: the block alone */\
#else\
    rnn_cluster_sync();\
#endif\
}\

s/if (F && XH) rnn_flag_stage16((unsigned short \*)xs,/if (F \&\& XH) rnn_flag_stage16c((unsigned short *)xs,/
s/const XT \*const xq = (WS > 0 ? xt : rnn_mv_chunk(xt, xg, ldx, N, K, n0, ch, chunks, NP, KC, lds)) + g/const XT *const xq = (WS > 0 || F ? xt : rnn_mv_chunk(xt, xg, ldx, N, K, n0, ch, chunks, NP, KC, lds)) + g/
/rnn_x16_0, RNN_DIM_H, a\.N, NULL, 0u,/s/rnn_x16_0, RNN_DIM_H, a\.N, NULL, 0u,/rnn_x16_0, RNN_DIM_H, a.N, rnn_fw[t \& 1], (unsigned)t,/
/^ *if (t > args\.t) rnn_grid_arrive(args\.sync);/d
/^ *if (t > args\.t) rnn_grid_wait(args\.sync, ++epoch);/d
s/if (a\.state16\[0\]) rnn_put16(&a\.state16\[0\]\[n \* RNN_DIM_H + j\], \(.*\), \(a\.bf16\|[01]\));  \/\/ its 16-bit twin/&\
                rnn_flag_put16(\&rnn_fw[(t + 1) \& 1][n * RNN_DIM_H + j], \1, t + 1, \2);  \/\/ knockout flagsc/
/^ *unsigned epoch = 0;  \/\/ grid barriers passed/a\
    { /* knockout flagsc: this block's words of the first step's h flagged, the other slot's cleared; one grid barrier */\
        const int j0 = rnn_j0_H, nj = rnn_nj_H;\
        const long long sp0 = args.state_wrap ? args.t & (args.state_wrap - 1) : args.t;\
        for (long long i = threadIdx.x; i < (long long)args.N * nj; i += blockDim.x) {\
            const int n = (int)(i / nj), j = j0 + (int)(i % nj);\
            const unsigned short x = args.state16[0][(sp0 * args.N + n) * RNN_DIM_H + j];\
            rnn_fw[args.t & 1][n * RNN_DIM_H + j] = (rnn_flag16((unsigned)args.t) << 16) | x;\
            rnn_fw[(args.t + 1) & 1][n * RNN_DIM_H + j] = 0u;\
        }\
        rnn_grid_sync(args.sync, ++epoch);\
    }
