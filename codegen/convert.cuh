/* rnncc operand conversion: fp32 matrices rounded to fp16 or bf16 for the cuBLAS GEMMs of the
 * reduced-precision modes (RNNCC_FP16, RNNCC_BF16; runtime/rt_half.c), and every precision's state
 * staging. After the prelude, a unit of its own (cg_emit_convert), the same for every cell, holding
 * what the model launches; NVRTC compiles it with no #includes.
 *
 * The unit defines RNN_CONVERT_BF16 (the 16-bit kernels' rounding: bf16, else fp16), RNN_CONVERT_HALF,
 * RNN_CONVERT_X3 and RNN_CONVERT_FOLD (cg_emit_convert: what the model launches); each kernel stands
 * behind its switch, since NVRTC's time grows with them (all of them: ~0.6 s, which a model's first
 * create waited for; bench/NOTES.md section 102).
 *
 * A column-major matrix of rows x cols with leading dimension ld becomes a packed one (leading
 * dimension rows) of 16-bit values, rounded to nearest even by the prelude's rnn_twin16 (the
 * hardware's conversion, as the generated kernels' twins; on the CPU the bits'). Key idea: a conversion is
 * a pass over memory, so each thread moves four consecutive elements of a column with one
 * 16-byte load and one 8-byte store where rows, ld and both pointers allow it (vec4), else one,
 * for RNN_CONVERT_ITEMS such items a block's width apart (the unit defines it as CG_CONVERT_ITEMS,
 * codegen/cg.h, by which runtime/rt_half.c sizes its grid), the four-element items' loads issued
 * before any of their stores, single elements each loaded and stored in turn;
 * a 2-D grid, x along a column's elements and y over the columns, both grid-stride, so that no
 * index is divided (64-bit division made these two kernels half of a unit's compile time).
 * Beside them, rnncc_states_f16/bf16 stage a layer-direction's states in one launch (RnnStateCopies:
 * its initial states from h0 or zeros with their twins, or its final states; runtime/rt_half.c), and
 * rnncc_fold_entry/final/gather move the projection fold's columns (runtime/rt_fold.c).
 * Compiled by NVRTC only (__CUDACC__). */
#if defined(__CUDACC__)

#define RNN_CONVERT_KERNEL(name, rnd)                                                                   \
    extern "C" __global__ void __launch_bounds__(256)                                                   \
    name(const float *__restrict__ src, long long ld, long long rows, long long cols,                   \
         unsigned short *__restrict__ dst, int vec4) {                                                  \
        const long long per = vec4 ? rows / 4 : rows; /* a thread's items in a column */                \
        const long long stride = (long long)gridDim.x * blockDim.x * RNN_CONVERT_ITEMS;                 \
        for (long long c = blockIdx.y; c < cols; c += gridDim.y) {                                      \
            const float *s = src + c * ld;                                                              \
            unsigned short *d = dst + c * rows;                                                         \
            for (long long r0 = (long long)blockIdx.x * blockDim.x * RNN_CONVERT_ITEMS + threadIdx.x;   \
                 r0 < per; r0 += stride) {                                                              \
                if (vec4) { /* every load of the thread's items before any store */                     \
                    float4 v[RNN_CONVERT_ITEMS];                                                        \
                    _Pragma("unroll") for (int i = 0; i < RNN_CONVERT_ITEMS; i++) {                     \
                        const long long r = r0 + (long long)i * blockDim.x;                             \
                        if (r < per) v[i] = *(const float4 *)(s + 4 * r);                               \
                    }                                                                                   \
                    _Pragma("unroll") for (int i = 0; i < RNN_CONVERT_ITEMS; i++) {                     \
                        const long long r = r0 + (long long)i * blockDim.x;                             \
                        if (r < per)                                                                    \
                            *(uint2 *)(d + 4 * r) =                                                     \
                                make_uint2((unsigned)rnd(v[i].x) | (unsigned)rnd(v[i].y) << 16,         \
                                           (unsigned)rnd(v[i].z) | (unsigned)rnd(v[i].w) << 16);        \
                    }                                                                                   \
                } else {                                                                                \
                    _Pragma("unroll") for (int i = 0; i < RNN_CONVERT_ITEMS; i++) {                     \
                        const long long r = r0 + (long long)i * blockDim.x;                             \
                        if (r < per) d[r] = rnd(s[r]);                                                  \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }

RNN_DEV unsigned short rnn_convert_f16(float v) { return rnn_twin16(v, 0); }
RNN_DEV unsigned short rnn_convert_bf16(float v) { return rnn_twin16(v, 1); }

#if RNN_CONVERT_HALF && RNN_CONVERT_BF16
RNN_CONVERT_KERNEL(rnncc_to_bf16, rnn_convert_bf16)
#elif RNN_CONVERT_HALF
RNN_CONVERT_KERNEL(rnncc_to_f16, rnn_convert_f16)
#endif

/* RNNCC_TF32X3 (runtime/rt_x3.c; the split is the prelude's rnn_x3_put).
 * A column-major rows x cols matrix (leading dimension ld) with its contraction dimension tripled, packed:
 * krows (the dimension runs along the rows): each column becomes 3 * rows values, its parts one after the
 * other; else three packed rows x cols blocks one after the other. The parts: hi, hi, lo (pattern 0: the
 * left operand) or hi, lo, hi (pattern 1: the right), so one GEMM of the two over three times the
 * dimension sums hi*hi + hi*lo + lo*hi. The grid as rnncc_to_f16's: RNN_CONVERT_ITEMS items a thread, four
 * elements an item (16-byte loads and stores) where vec4, the loads before the stores. */
#if RNN_CONVERT_X3
extern "C" __global__ void __launch_bounds__(256)
rnncc_to_x3(const float *__restrict__ src, long long ld, long long rows, long long cols, float *__restrict__ dst,
            int krows, int pattern, int vec4) {
    const long long per = vec4 ? rows / 4 : rows, part = krows ? rows : rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x * RNN_CONVERT_ITEMS;
    for (long long c = blockIdx.y; c < cols; c += gridDim.y) {
        const float *s = src + c * ld;
        float *d = dst + c * (krows ? 3 * rows : rows);
        for (long long r0 = (long long)blockIdx.x * blockDim.x * RNN_CONVERT_ITEMS + threadIdx.x; r0 < per; r0 += stride) {
            if (vec4) {
                float4 v[RNN_CONVERT_ITEMS];
                _Pragma("unroll") for (int i = 0; i < RNN_CONVERT_ITEMS; i++) {
                    const long long r = r0 + (long long)i * blockDim.x;
                    if (r < per) v[i] = *(const float4 *)(s + 4 * r);
                }
                _Pragma("unroll") for (int i = 0; i < RNN_CONVERT_ITEMS; i++) {
                    const long long r = r0 + (long long)i * blockDim.x;
                    if (r < per) {
                        const float4 hi = make_float4(rnn_tf32(v[i].x), rnn_tf32(v[i].y), rnn_tf32(v[i].z), rnn_tf32(v[i].w));
                        const float4 lo = make_float4(rnn_tf32(v[i].x - hi.x), rnn_tf32(v[i].y - hi.y), rnn_tf32(v[i].z - hi.z),
                                                      rnn_tf32(v[i].w - hi.w));
                        *(float4 *)(d + 4 * r) = hi;
                        *(float4 *)(d + part + 4 * r) = pattern ? lo : hi;
                        *(float4 *)(d + 2 * part + 4 * r) = pattern ? hi : lo;
                    }
                }
            } else {
                _Pragma("unroll") for (int i = 0; i < RNN_CONVERT_ITEMS; i++) {
                    const long long r = r0 + (long long)i * blockDim.x;
                    if (r < per) rnn_x3_put(d + r, part, s[r], pattern);
                }
            }
        }
    }
}

#endif

/* A 16-bit twin's value (bf16, else fp16) as a float, by the bits. */
__device__ float rnn_fold_widen(unsigned short h, int bf16) {
    if (bf16) return __uint_as_float((unsigned)h << 16);
    const unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, f = h & 0x3ffu;
    if (e == 31) return __uint_as_float(sign | 0x7f800000u | f << 13);
    if (e == 0) return __uint_as_float(sign) + (sign ? -1.f : 1.f) * (float)f * 5.9604644775390625e-8f; /* f 2^-24 */
    return __uint_as_float(sign | (e + 112) << 23 | f << 13);
}

/* States staged in one launch (RnnStateCopies, runtime/rnn_args.h): the block's copy is the last whose
 * block0 it has reached, and that copy's blocks stride over its floats, four at a time where its
 * length and pointers allow. */
#define RNN_STATES_KERNEL(name, rnd, bf16)                                                              \
    extern "C" __global__ void __launch_bounds__(256) name(RnnStateCopies a) {                          \
        int k = 0;                                                                                      \
        while (k + 1 < a.count && (int)blockIdx.x >= a.c[k + 1].block0) k++;                            \
        const RnnStateCopy c = a.c[k];                                                                  \
        const int vec4 = c.n % 4 == 0 &&                                                                \
                         ((unsigned long long)c.src | (unsigned long long)c.dst | (unsigned long long)c.plus) % 16 == 0 && \
                         ((unsigned long long)c.dst16 | (unsigned long long)c.src16) % 8 == 0;          \
        const long long per = vec4 ? c.n / 4 : c.n, stride = (long long)c.blocks * blockDim.x;          \
        const long long first = (long long)((int)blockIdx.x - c.block0) * blockDim.x + threadIdx.x;      \
        for (long long i = first; i < per; i += stride) {                                               \
            if (vec4) {                                                                                 \
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);                                             \
                if (c.src) v = ((const float4 *)c.src)[i];                                              \
                else if (c.src16) {                                                                     \
                    const uint2 h = ((const uint2 *)c.src16)[i];                                        \
                    v = make_float4(rnn_fold_widen((unsigned short)(h.x & 0xffffu), bf16),              \
                                    rnn_fold_widen((unsigned short)(h.x >> 16), bf16),                  \
                                    rnn_fold_widen((unsigned short)(h.y & 0xffffu), bf16),              \
                                    rnn_fold_widen((unsigned short)(h.y >> 16), bf16));                 \
                }                                                                                       \
                if (c.plus) {                                                                           \
                    const float4 p = ((const float4 *)c.plus)[i];                                       \
                    v.x += p.x, v.y += p.y, v.z += p.z, v.w += p.w;                                     \
                }                                                                                       \
                if (c.dst) ((float4 *)c.dst)[i] = v;                                                    \
                if (c.dst16)                                                                            \
                    ((uint2 *)c.dst16)[i] = make_uint2((unsigned)rnd(v.x) | (unsigned)rnd(v.y) << 16,   \
                                                       (unsigned)rnd(v.z) | (unsigned)rnd(v.w) << 16);  \
            } else {                                                                                    \
                float v = c.src ? c.src[i] : c.src16 ? rnn_fold_widen(c.src16[i], bf16) : 0.f;          \
                if (c.plus) v += c.plus[i];                                                             \
                if (c.dst) c.dst[i] = v;                                                                \
                if (c.dst16) c.dst16[i] = rnd(v);                                                       \
            }                                                                                           \
        }                                                                                               \
    }

#if RNN_CONVERT_BF16
RNN_STATES_KERNEL(rnncc_states_bf16, rnn_convert_bf16, 1)
#else
RNN_STATES_KERNEL(rnncc_states_f16, rnn_convert_f16, 0)
#endif

/* The projection fold (RnnFoldColumns, runtime/rnn_args.h): blockIdx.x a sequence, blockIdx.y a slice of the
 * rows (a thread a row: one block a sequence striding 4096 rows took 10 us at 4 sequences on an H200, each
 * pass a dependent round trip to memory). */
#if RNN_CONVERT_FOLD
#define RNN_FOLD_ROWS(r) for (long long r = (long long)blockIdx.y * blockDim.x + threadIdx.x; r < a.rows; \
                              r += (long long)gridDim.y * blockDim.x)
extern "C" __global__ void __launch_bounds__(256) rnncc_fold_entry(RnnFoldColumns a) {
    const int n = blockIdx.x, len = a.lengths ? a.lengths[n] : a.T;
    if (len <= 0) return;
    float *col = a.buf + ((long long)(a.reverse ? len - 1 : 0) * a.N + n) * a.ld + a.row0;
    RNN_FOLD_ROWS(r) col[r] += a.add[n * a.rows + r];
}

extern "C" __global__ void __launch_bounds__(256) rnncc_fold_final(RnnFoldColumns a) {
    const int n = blockIdx.x, len = a.lengths ? a.lengths[n] : a.T;
    if (len > 0) {
        if (a.zero_stepped) RNN_FOLD_ROWS(r) a.dst[n * a.rows + r] = 0.f;
        return;
    }
    RNN_FOLD_ROWS(r)
        a.dst[n * a.rows + r] = (a.accumulate ? a.dst[n * a.rows + r] : 0.f) + (a.src ? a.src[n * a.rows + r] : 0.f);
}

extern "C" __global__ void __launch_bounds__(256) rnncc_fold_gather(RnnFoldColumns a) {
    const int n = blockIdx.x, len = a.lengths ? a.lengths[n] : a.T;
    const long long col = ((long long)(a.reverse ? len - 1 : 0) * a.N + n) * a.ld + a.row0;
    RNN_FOLD_ROWS(r)
        a.add[n * a.rows + r] = len <= 0 ? (a.src ? a.src[n * a.rows + r] : 0.f)
                                : a.buf16 ? rnn_fold_widen(a.buf16[col + r], a.bf16) : a.buf[col + r];
}
#endif
#endif
