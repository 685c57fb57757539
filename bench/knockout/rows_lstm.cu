// bench/knockout/rows_lstm.cu: a hand-written persistent backward kernel (not a generated one) for
// bench/NOTES.md section 65: the LSTM in fp16 at H = 1024, N <= 32, fixed lengths, whose clusters of 8
// own their units' gate rows (the step GEMM's K never leaves the cluster: each block pushes its
// columns of d(G1) into its partners' tiles through distributed shared memory) and whose d(h) is
// reduced over the 15 clusters through L2 (fp32 partials, read by the next step's seeds).
// Completed into a unit by hand.sh (the generated unit's prelude in front); launched by the knockout
// build with RNNCC_KNOCKOUT_LAUNCH=120,288,8 (run.sh: the variant FILE.cu@120,288,8). Its options
// (section 65's steps; each correct): ROWS_LDMATRIX, B by `ldmatrix.x4`; ROWS_PUSH16, 16-byte pushes;
// ROWS_FLAGS, a hand-off by the producers' flags instead of the grid barrier. The KO_* macros take
// one piece out each (timing only, results wrong), as the .sed knockouts do.
#define HC 8                 /* blocks a cluster */
#define HNCL 15              /* clusters */
#define HG (HC * HNCL)
#ifndef ROWS_PUSH16
#define HUBP 9               /* units a block at most (1024 / 120 -> 8 or 9) */
#define HPIECE 4             /* halves a push moves: 8 bytes (a block's 72-byte columns a row) */
#else
#define HUBP 10              /* one unit of padding, so that a block's columns are 80 bytes a row */
#define HPIECE 8             /* 16-byte pushes */
#endif
#define HKP (4 * HUBP)       /* a block's columns in the tile: [gate][unit] */
#define HK (HC * HKP)        /* the cluster's K: 288 (320 with ROWS_PUSH16) */
#define HKT (HK / 16)
#define HKS (HK + 8)         /* tile row stride (halves) */
#define HROWS (1024 / HC)    /* 128 d(h) rows a block */
__device__ float rnn_hpart[2 * HNCL * 32 * 1024];
#ifdef ROWS_FLAGS
/* Instead of the grid barrier: block s's steps done in this launch (128 bytes apart); a block waits for
 * the 15 (or 30) blocks whose partials its rows need. The tile is then double-buffered (a partner may
 * push the next step's columns before this block's product is done). */
#define HTILES 2
__device__ unsigned rnn_hflag[HG * 32];
RNN_DEV void rnn_hwait(int ra, int rb, unsigned want) {
    const int i = threadIdx.x;
    if (i < 2 * HNCL && (i < HNCL || rb != ra)) {
        const unsigned *f = rnn_hflag + ((i % HNCL) * HC + (i < HNCL ? ra : rb)) * 32;
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
        } while (v < want);
    }
    __syncthreads();
}
#else
#define HTILES 1
#endif
RNN_DEV unsigned rnn_hrank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
#ifndef KO_CB
RNN_DEV void rnn_hcsync() { asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory"); }
#else
RNN_DEV void rnn_hcsync() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
#endif
RNN_DEV void rnn_hpush8(const void *local, unsigned rank) {
    unsigned addr = rnn_smem_addr(local), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
#if HPIECE == 4
    const unsigned long long v = *(const unsigned long long *)local;
    asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(remote), "l"(v) : "memory");
#else
    const uint4 v = *(const uint4 *)local;
    asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(remote), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
#endif
}
extern "C" __global__ void __launch_bounds__(288, 1) rnncc_lstm_pb(const RnnArgs args)
{
    const int s = blockIdx.x, G = gridDim.x;
    if (G != HG || blockDim.x != 288 || args.N > 32 || args.lengths || args.bf16 || !args.params16) __trap();
    extern __shared__ float4 rnn_smem4[];
    unsigned short *const tile0 = (unsigned short *)rnn_smem4;  // [HTILES][32][HKS]: the cluster's d(G1), 16-bit
    const int rnn_j0_H = (int)((long long)RNN_DIM_H * s / G), rnn_nj_H = (int)((long long)RNN_DIM_H * (s + 1) / G) - rnn_j0_H;
    const long long rnn_n1_H = rnn_nj_H ? threadIdx.x / rnn_nj_H : 0;
    const int rnn_j1_H = rnn_j0_H + (rnn_nj_H ? (int)(threadIdx.x % rnn_nj_H) : 0);
    const int rank = (int)rnn_hrank(), c = s / HC;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gid = lane >> 2, tig = lane & 3;
    for (int e = tid; e < HTILES * 32 * HKS; e += blockDim.x) tile0[e] = 0;
    // A fragments: W^T[row][k], row = rank * 128 + warp * 16 + (gid | gid + 8), k = r' * HKP + b * HUBP + u
    unsigned af[HKT][4];
#pragma unroll
    for (int kt = 0; kt < HKT; kt++) {
        if (warp >= 8) break;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int row = rank * HROWS + warp * 16 + gid + ((q & 1) ? 8 : 0);
            unsigned short h2[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int k = kt * 16 + tig * 2 + ((q & 2) ? 8 : 0) + e;
                const int rr = k / HKP, b = (k % HKP) / HUBP, u = k % HUBP;
                const int sr = c * HC + rr, lr = (int)(1024LL * sr / G), nr = (int)(1024LL * (sr + 1) / G) - lr;
                h2[e] = u < nr ? args.params16[4194304 + (long long)(b * 1024 + lr + u) * 1024 + row] : (unsigned short)0;
            }
            af[kt][q] = (unsigned)h2[0] | ((unsigned)h2[1] << 16);
        }
    }
    rnn_hcsync();  // every tile zeroed before any partner pushes into it
    unsigned epoch = 0;
#ifdef ROWS_FLAGS
    const int rnn_ra = rnn_j0_H / HROWS, rnn_rb = (rnn_j0_H + rnn_nj_H - 1) / HROWS;  // the ranks making this block's rows
    if (tid == 0) rnn_hflag[s * 32] = 0;
    rnn_grid_sync(args.sync, ++epoch);  // every flag zeroed before any is set
#endif
    float q1_v15 = 0.0f, q1_v16 = 0.0f, q1_v11_b_i = 0.0f, q1_v20 = 0.0f, q1_v21 = 0.0f, q1_v12_b_f = 0.0f, q1_v25 = 0.0f, q1_v26 = 0.0f, q1_v13_b_g = 0.0f, q1_v30 = 0.0f, q1_v31 = 0.0f, q1_v14_b_o = 0.0f, q1_v2_c = 0.0f, qy1_v39_h_next = 0.0f;
    float rnn_seed1 = 0.0f;
    int rnn_seed1_set = 0;
#define HAND_VIEW(T_) \
        RnnArgs a = args; \
        const int rnn_tv = (T_); \
        a.t = rnn_tv; \
        { const int t = rnn_tv; \
        const long long sp = args.state_wrap ? t & (args.state_wrap - 1) : t; \
        const long long sn = args.state_wrap ? (t + 1) & (args.state_wrap - 1) : t + 1; \
        a.state_prev[0] = args.state_prev[0] + sp * args.N * RNN_DIM_H; \
        a.state_next[0] = (float *)args.state_prev[0] + sn * args.N * RNN_DIM_H; \
        if (args.state16[0]) a.state16[0] = args.state16[0] + sn * args.N * RNN_DIM_H; \
        a.dstate_prev[0] = args.dstate_prev[0] + (t % 3) * args.N * RNN_DIM_H; \
        a.dstate_next[0] = args.dstate_prev[0] + ((t + 1) % 3) * args.N * RNN_DIM_H; \
        a.state_prev[1] = args.state_prev[1] + sp * args.N * RNN_DIM_H; \
        a.state_next[1] = (float *)args.state_prev[1] + sn * args.N * RNN_DIM_H; \
        a.dstate_prev[1] = args.dstate_prev[1] + (t % 3) * args.N * RNN_DIM_H; \
        a.dstate_next[1] = args.dstate_prev[1] + ((t + 1) % 3) * args.N * RNN_DIM_H; \
        a.buf[1] = args.buf[1] + t * args.buf_step[1]; \
        a.dbuf[1] = args.dbuf[1] + t * args.buf_step[1]; \
        if (args.dbuf16[1]) a.dbuf16[1] = args.dbuf16[1] + t * args.buf_step[1]; }
#define HAND_FIRST_LOADS \
        { \
            const int nj = rnn_nj_H; \
            const long long i = threadIdx.x; \
            if (i < (long long)a.N * nj) { \
                const long long n = rnn_n1_H; \
                const int j = rnn_j1_H; \
                const int len = a.T; \
                if (a.t < len) { \
                    const int pos = a.reverse ? len - 1 - a.t : a.t; \
                    const long long col = (long long)pos * a.N + n; \
                    q1_v15 = a.buf[0][col * 4096 + j]; \
                    q1_v16 = a.buf[1][n * 4096 + j]; \
                    q1_v11_b_i = a.params[8388608 + j]; \
                    q1_v20 = a.buf[0][col * 4096 + 1024 + j]; \
                    q1_v21 = a.buf[1][n * 4096 + 1024 + j]; \
                    q1_v12_b_f = a.params[8389632 + j]; \
                    q1_v25 = a.buf[0][col * 4096 + 2048 + j]; \
                    q1_v26 = a.buf[1][n * 4096 + 2048 + j]; \
                    q1_v13_b_g = a.params[8390656 + j]; \
                    q1_v30 = a.buf[0][col * 4096 + 3072 + j]; \
                    q1_v31 = a.buf[1][n * 4096 + 3072 + j]; \
                    q1_v14_b_o = a.params[8391680 + j]; \
                    q1_v2_c = a.state_prev[1][n * RNN_DIM_H + j]; \
                    if (a.dy[0]) qy1_v39_h_next = a.dy[0][col * a.ldy[0] + j]; \
                } \
            } \
            RNN_ISSUED("f"(q1_v15), "f"(q1_v16), "f"(q1_v11_b_i), "f"(q1_v20), "f"(q1_v21), "f"(q1_v12_b_f), "f"(q1_v25), "f"(q1_v26), "f"(q1_v13_b_g), "f"(q1_v30), "f"(q1_v31), "f"(q1_v14_b_o), "f"(q1_v2_c)); \
        }
    if (args.t_end > args.t) {
        HAND_VIEW(args.t_end - 1)
        HAND_FIRST_LOADS
    }
    for (int t = args.t_end - 1; t >= args.t; t--) {
        HAND_VIEW(t)
        unsigned short *const tile = tile0 + (HTILES > 1 ? (t & 1) : 0) * 32 * HKS;
        const float *const part_in = rnn_hpart + (size_t)((t + 1) & 1) * HNCL * 32 * 1024;
#ifdef ROWS_FLAGS
        if (t < args.t_end - 1) rnn_hwait(rnn_ra, rnn_rb, (unsigned)(args.t_end - 1 - t));
#endif
        {
            const int j0 = rnn_j0_H, nj = rnn_nj_H;
            for (long long i = threadIdx.x; i < (long long)a.N * nj; i += blockDim.x) {
                const long long n = i == threadIdx.x ? rnn_n1_H : i / nj;
                const int j = i == threadIdx.x ? rnn_j1_H : j0 + (int)(i % nj);
#ifdef KO_EW
                { unsigned short *const own = tile + n * HKS + rank * HKP + (j - j0); own[0] = own[HUBP] = own[2 * HUBP] = own[3 * HUBP] = (unsigned short)(t & 7); continue; }
#endif
                const int len = a.T;
                const int pos = a.reverse ? len - 1 - a.t : a.t;
                const long long col = (long long)pos * a.N + n;
                const float v15 = i == threadIdx.x ? q1_v15 : a.buf[0][col * 4096 + j];
                const float v16 = a.summed ? 0.0f : (i == threadIdx.x ? q1_v16 : a.buf[1][n * 4096 + j]);
                const float v11_b_i = i == threadIdx.x ? q1_v11_b_i : a.params[8388608 + j];
                const float v20 = i == threadIdx.x ? q1_v20 : a.buf[0][col * 4096 + 1024 + j];
                const float v21 = a.summed ? 0.0f : (i == threadIdx.x ? q1_v21 : a.buf[1][n * 4096 + 1024 + j]);
                const float v12_b_f = i == threadIdx.x ? q1_v12_b_f : a.params[8389632 + j];
                const float v25 = i == threadIdx.x ? q1_v25 : a.buf[0][col * 4096 + 2048 + j];
                const float v26 = a.summed ? 0.0f : (i == threadIdx.x ? q1_v26 : a.buf[1][n * 4096 + 2048 + j]);
                const float v13_b_g = i == threadIdx.x ? q1_v13_b_g : a.params[8390656 + j];
                const float v30 = i == threadIdx.x ? q1_v30 : a.buf[0][col * 4096 + 3072 + j];
                const float v31 = a.summed ? 0.0f : (i == threadIdx.x ? q1_v31 : a.buf[1][n * 4096 + 3072 + j]);
                const float v14_b_o = i == threadIdx.x ? q1_v14_b_o : a.params[8391680 + j];
                const float v2_c = i == threadIdx.x ? q1_v2_c : a.state_prev[1][n * RNN_DIM_H + j];
                float d17 = 0.0f, d18 = 0.0f, d19_i = 0.0f, d22 = 0.0f, d23 = 0.0f, d24_f = 0.0f, d27 = 0.0f, d28 = 0.0f, d29_g = 0.0f;
                float d32 = 0.0f, d33 = 0.0f, d34_o = 0.0f, d35 = 0.0f, d36 = 0.0f, d37_c_next = 0.0f, d38 = 0.0f, d39_h_next = 0.0f;
                float d2_c = 0.0f, d15 = 0.0f, d16 = 0.0f, d20 = 0.0f, d21 = 0.0f, d25 = 0.0f, d26 = 0.0f, d30 = 0.0f, d31 = 0.0f;
                // seeds: d(h') from the clusters' partials of step t+1 (the launch's first step: the slot)
                if (t == args.t_end - 1) {
                    d39_h_next += a.dstate_next[0][n * RNN_DIM_H + j];
                } else {
                    float sum = 0.0f;
#pragma unroll
#ifndef KO_SEED
                    for (int cc = 0; cc < HNCL; cc++) sum += part_in[(size_t)cc * 32 * 1024 + n * 1024 + j];
#endif
                    d39_h_next += sum;
                }
                d37_c_next += i == threadIdx.x && rnn_seed1_set ? rnn_seed1 : a.dstate_next[1][n * RNN_DIM_H + j];
                if (a.dy[0]) d39_h_next += i == threadIdx.x ? qy1_v39_h_next : a.dy[0][col * a.ldy[0] + j];
                const float v17 = rnn_op_add(v15, v16);
                const float v18 = rnn_op_add(v17, v11_b_i);
                const float v19_i = rnn_op_sigmoid(v18);
                const float v22 = rnn_op_add(v20, v21);
                const float v23 = rnn_op_add(v22, v12_b_f);
                const float v24_f = rnn_op_sigmoid(v23);
                const float v27 = rnn_op_add(v25, v26);
                const float v28 = rnn_op_add(v27, v13_b_g);
                const float v29_g = rnn_op_tanh(v28);
                const float v32 = rnn_op_add(v30, v31);
                const float v33 = rnn_op_add(v32, v14_b_o);
                const float v34_o = rnn_op_sigmoid(v33);
                const float v35 = rnn_op_mul(v24_f, v2_c);
                const float v36 = rnn_op_mul(v19_i, v29_g);
                const float v37_c_next = rnn_op_add(v35, v36);
                const float v38 = rnn_op_tanh(v37_c_next);
                const float v39_h_next = rnn_op_mul(v34_o, v38);
                d34_o += d39_h_next * rnn_dop_mul_0(v34_o, v38, 0.0f, v39_h_next);
                d38 += d39_h_next * rnn_dop_mul_1(v34_o, v38, 0.0f, v39_h_next);
                d37_c_next += d38 * rnn_dop_tanh_0(v37_c_next, 0.0f, 0.0f, v38);
                d35 += d37_c_next * rnn_dop_add_0(v35, v36, 0.0f, v37_c_next);
                d36 += d37_c_next * rnn_dop_add_1(v35, v36, 0.0f, v37_c_next);
                d19_i += d36 * rnn_dop_mul_0(v19_i, v29_g, 0.0f, v36);
                d29_g += d36 * rnn_dop_mul_1(v19_i, v29_g, 0.0f, v36);
                d24_f += d35 * rnn_dop_mul_0(v24_f, v2_c, 0.0f, v35);
                d2_c += d35 * rnn_dop_mul_1(v24_f, v2_c, 0.0f, v35);
                d33 += d34_o * rnn_dop_sigmoid_0(v33, 0.0f, 0.0f, v34_o);
                d32 += d33 * rnn_dop_add_0(v32, v14_b_o, 0.0f, v33);
                d30 += d32 * rnn_dop_add_0(v30, v31, 0.0f, v32);
                d31 += d32 * rnn_dop_add_1(v30, v31, 0.0f, v32);
                d28 += d29_g * rnn_dop_tanh_0(v28, 0.0f, 0.0f, v29_g);
                d27 += d28 * rnn_dop_add_0(v27, v13_b_g, 0.0f, v28);
                d25 += d27 * rnn_dop_add_0(v25, v26, 0.0f, v27);
                d26 += d27 * rnn_dop_add_1(v25, v26, 0.0f, v27);
                d23 += d24_f * rnn_dop_sigmoid_0(v23, 0.0f, 0.0f, v24_f);
                d22 += d23 * rnn_dop_add_0(v22, v12_b_f, 0.0f, v23);
                d20 += d22 * rnn_dop_add_0(v20, v21, 0.0f, v22);
                d21 += d22 * rnn_dop_add_1(v20, v21, 0.0f, v22);
                d18 += d19_i * rnn_dop_sigmoid_0(v18, 0.0f, 0.0f, v19_i);
                d17 += d18 * rnn_dop_add_0(v17, v11_b_i, 0.0f, v18);
                d15 += d17 * rnn_dop_add_0(v15, v16, 0.0f, v17);
                d16 += d17 * rnn_dop_add_1(v15, v16, 0.0f, v17);
                a.dstate_prev[1][n * RNN_DIM_H + j] = d2_c;
                if (i == threadIdx.x) rnn_seed1 = d2_c, rnn_seed1_set = 1;
#ifndef KO_ST
                if (!a.twins_only) a.dbuf[0][col * 4096 + j] = d15;
                if (a.dbuf16[0]) rnn_put16(a.dbuf16[0] + (&a.dbuf[0][col * 4096 + j] - a.dbuf[0]), d15, a.bf16);
                if (!a.dshared && !a.twins_only) a.dbuf[1][n * 4096 + j] = d16;
                if (!a.dshared && a.dbuf16[1]) rnn_put16(a.dbuf16[1] + (&a.dbuf[1][n * 4096 + j] - a.dbuf[1]), d16, a.bf16);
                if (!a.twins_only) a.dbuf[0][col * 4096 + 1024 + j] = d20;
                if (a.dbuf16[0]) rnn_put16(a.dbuf16[0] + (&a.dbuf[0][col * 4096 + 1024 + j] - a.dbuf[0]), d20, a.bf16);
                if (!a.dshared && !a.twins_only) a.dbuf[1][n * 4096 + 1024 + j] = d21;
                if (!a.dshared && a.dbuf16[1]) rnn_put16(a.dbuf16[1] + (&a.dbuf[1][n * 4096 + 1024 + j] - a.dbuf[1]), d21, a.bf16);
                if (!a.twins_only) a.dbuf[0][col * 4096 + 2048 + j] = d25;
                if (a.dbuf16[0]) rnn_put16(a.dbuf16[0] + (&a.dbuf[0][col * 4096 + 2048 + j] - a.dbuf[0]), d25, a.bf16);
                if (!a.dshared && !a.twins_only) a.dbuf[1][n * 4096 + 2048 + j] = d26;
                if (!a.dshared && a.dbuf16[1]) rnn_put16(a.dbuf16[1] + (&a.dbuf[1][n * 4096 + 2048 + j] - a.dbuf[1]), d26, a.bf16);
                if (!a.twins_only) a.dbuf[0][col * 4096 + 3072 + j] = d30;
                if (a.dbuf16[0]) rnn_put16(a.dbuf16[0] + (&a.dbuf[0][col * 4096 + 3072 + j] - a.dbuf[0]), d30, a.bf16);
                if (!a.dshared && !a.twins_only) a.dbuf[1][n * 4096 + 3072 + j] = d31;
                if (!a.dshared && a.dbuf16[1]) rnn_put16(a.dbuf16[1] + (&a.dbuf[1][n * 4096 + 3072 + j] - a.dbuf[1]), d31, a.bf16);
#endif
                // the GEMM's operand into this block's columns of the cluster's tile
                unsigned short *const own = tile + n * HKS + rank * HKP + (j - j0);
                own[0] = rnn_round_f16(d16);
                own[HUBP] = rnn_round_f16(d21);
                own[2 * HUBP] = rnn_round_f16(d26);
                own[3 * HUBP] = rnn_round_f16(d31);
            }
        }
        __syncthreads();
        // push this block's columns (N rows x 2 * HKP bytes) to the 7 partners
#ifndef KO_PUSH
        constexpr int PIECES = HKP / HPIECE;  // a row's pieces of this block's columns
        for (int e = tid; e < a.N * PIECES * (HC - 1); e += blockDim.x) {
            const int pr = e / (a.N * PIECES), ch = e % (a.N * PIECES);
            const int dst = pr >= rank ? pr + 1 : pr;
            const int nn = ch / PIECES, piece = ch % PIECES;
            rnn_hpush8(tile + nn * HKS + rank * HKP + piece * HPIECE, (unsigned)dst);
        }
#endif
        rnn_hcsync();
        if (t > args.t) {
            HAND_VIEW(t - 1)
            HAND_FIRST_LOADS
        }
        // the product: this warp's 16 rows of d(h) over the cluster's K, sums to the partials
        if (warp < 8) {
        float acc[4][4];
#pragma unroll
        for (int nt = 0; nt < 4; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#ifndef KO_MMA
#ifndef ROWS_LDMATRIX
#pragma unroll
        for (int kt = 0; kt < HKT; kt++) {
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const unsigned short *bp = tile + (nt * 8 + gid) * HKS + kt * 16 + tig * 2;
                const unsigned b0 = *(const unsigned *)bp, b1 = *(const unsigned *)(bp + 8);
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(acc[nt][0]), "+f"(acc[nt][1]), "+f"(acc[nt][2]), "+f"(acc[nt][3])
                             : "r"(af[kt][0]), "r"(af[kt][1]), "r"(af[kt][2]), "r"(af[kt][3]), "r"(b0), "r"(b1));
            }
        }
#else  /* B fragments of two 8-sequence tiles a `ldmatrix.x4` (a quarter of the loads) */
#pragma unroll
        for (int kt = 0; kt < HKT; kt++) {
#pragma unroll
            for (int np = 0; np < 2; np++) {
                const int mi = lane >> 3;  // matrix mi: tile 2 * np + (mi >> 1), k half mi & 1
                const unsigned short *rp = tile + ((2 * np + (mi >> 1)) * 8 + (lane & 7)) * HKS + kt * 16 + (mi & 1) * 8;
                unsigned b[4];
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(rnn_smem_addr(rp)));
#pragma unroll
                for (int h = 0; h < 2; h++)
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                                 : "+f"(acc[2 * np + h][0]), "+f"(acc[2 * np + h][1]), "+f"(acc[2 * np + h][2]), "+f"(acc[2 * np + h][3])
                                 : "r"(af[kt][0]), "r"(af[kt][1]), "r"(af[kt][2]), "r"(af[kt][3]), "r"(b[2 * h]), "r"(b[2 * h + 1]));
            }
        }
#endif
#endif
        {
            float *const po = rnn_hpart + ((size_t)(t & 1) * HNCL + c) * 32 * 1024;
            const int jr = rank * HROWS + warp * 16 + gid;
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const int n0 = nt * 8 + tig * 2;
                if (n0 < a.N) po[n0 * 1024 + jr] = acc[nt][0], po[n0 * 1024 + jr + 8] = acc[nt][2];
                if (n0 + 1 < a.N) po[(n0 + 1) * 1024 + jr] = acc[nt][1], po[(n0 + 1) * 1024 + jr + 8] = acc[nt][3];
            }
        }
        }
#if defined(KO_BAR)
        __syncthreads();
#elif defined(ROWS_FLAGS)
        __syncthreads();
        if (tid == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(rnn_hflag + s * 32), "r"((unsigned)(args.t_end - t)) : "memory");
#else
        rnn_grid_sync(args.sync, ++epoch);
#endif
    }
    // the launch's last step's d(h): its clusters' partials summed into its slot
    if (args.t_end > args.t) {
        const int t = args.t;
        const float *const part_in = rnn_hpart + (size_t)(t & 1) * HNCL * 32 * 1024;
#ifdef ROWS_FLAGS
        rnn_hwait(rnn_ra, rnn_rb, (unsigned)(args.t_end - t));
#endif
        float *const slot = args.dstate_prev[0] + (t % 3) * args.N * RNN_DIM_H;
        for (long long i = threadIdx.x; i < (long long)args.N * rnn_nj_H; i += blockDim.x) {
            const long long n = i / rnn_nj_H;
            const int j = rnn_j0_H + (int)(i % rnn_nj_H);
            float sum = 0.0f;
            for (int cc = 0; cc < HNCL; cc++) sum += part_in[(size_t)cc * 32 * 1024 + n * 1024 + j];
            slot[n * RNN_DIM_H + j] = sum;
        }
    }
    rnn_hcsync();
}
