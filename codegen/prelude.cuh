/* rnncc CUDA prelude: float twins of ir/opmath.h's rnn_* helpers (keep the two in step),
 * prepended to every generated translation unit after runtime/rnn_args.h.
 * Key idea: same names, same branches, same edge cases as the double originals; only the
 * precision differs. tests/check_codegen.c compiles this file as C and compares every
 * function here with its double twin on a grid of inputs.
 *
 * Accuracy: CUDA's accurate single-precision functions (expf, tanhf, log1pf, logf, sqrtf,
 * sinf, cosf: at most 2 ulp over their whole range), and rnncc compiles without
 * --use_fast_math. The fast intrinsics lose accuracy where cells live: __expf's error grows
 * with |x| (2 + floor(1.173 |x|) ulp, ~13 ulp at x = 10), __logf's relative error is
 * unbounded near 1, __sinf/__cosf are accurate only on [-pi, pi]. A CPU twin cannot measure
 * their error, so they are not used. The element-wise kernels are memory-bound: the
 * accurate functions cost nothing measurable there.
 *
 * NVRTC compiles this with no #includes: the CUDA math functions are built in. */
#ifndef RNN_DEV
#define RNN_DEV __device__ __forceinline__ /* inline: unused helpers cost nothing and draw no warning */
#endif

/* Every element-wise kernel opens with this. Launched as a programmatic dependent of the kernel
 * before it (the runtime's forward kernels on sm_90 and later: docs/runtime.md), a kernel starts
 * while that one ends and waits here until it has finished and its writes are visible; launched
 * plainly, this returns at once. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define RNN_AFTER_PREDECESSOR() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define RNN_AFTER_PREDECESSOR() ((void)0)
#endif

/* The element-wise bodies load every value they read before computing anything, then
 * RNN_ISSUED("f"(v1), "f"(v2), ...): an empty asm taking the loaded values, which keeps the
 * compiler from sinking each load to its use, behind the math before it (bench/NOTES.md section
 * 30). Nothing on the CPU, where the tests compile the generated units too. */
#if defined(__CUDA_ARCH__)
#define RNN_ISSUED(...) asm volatile("" ::__VA_ARGS__)
#else
#define RNN_ISSUED(...) ((void)0)
#endif

/* sigmoid's quotient: on the GPU __fdividef's (an approximate reciprocal, 2 ulp), since an IEEE
 * division's refinement and slow-path check sat on every persistent step's critical path
 * (bench/NOTES.md section 41: 3% of a flashrnn LSTM step). A denominator past 2^126 gives 0,
 * where the true value is under 2^-126. */
#if defined(__CUDA_ARCH__)
#define RNN_SIGMOID_QUOTIENT(d) __fdividef(1.0f, (d))
#else
#define RNN_SIGMOID_QUOTIENT(d) (1.0f / (d))
#endif
RNN_DEV float rnn_sigmoid(float x) { return RNN_SIGMOID_QUOTIENT(1.0f + expf(-x)); }
RNN_DEV float rnn_tanh(float x) { return tanhf(x); }
RNN_DEV float rnn_relu(float x) { return x > 0 ? x : 0.0f; }
RNN_DEV float rnn_step(float x) { return x > 0 ? 1.0f : 0.0f; }
RNN_DEV float rnn_exp(float x) { return expf(x); }
RNN_DEV float rnn_log(float x) { return logf(x); }
/* log(1 + e^x) without overflow for large x (PyTorch's softplus with beta = 1, no threshold). */
RNN_DEV float rnn_softplus(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
RNN_DEV float rnn_abs(float x) { return fabsf(x); }
RNN_DEV float rnn_sign(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f; }
RNN_DEV float rnn_sqrt(float x) { return sqrtf(x); }
/* Not fminf/fmaxf: the comparison form matches the double twin, NaNs included. */
RNN_DEV float rnn_min(float a, float b) { return a <= b ? a : b; }
RNN_DEV float rnn_max(float a, float b) { return a >= b ? a : b; }
RNN_DEV float rnn_le(float a, float b) { return a <= b ? 1.0f : 0.0f; }
RNN_DEV float rnn_ge(float a, float b) { return a >= b ? 1.0f : 0.0f; }
RNN_DEV float rnn_lt(float a, float b) { return a < b ? 1.0f : 0.0f; }
RNN_DEV float rnn_gt(float a, float b) { return a > b ? 1.0f : 0.0f; }
RNN_DEV float rnn_clamp(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }
RNN_DEV float rnn_inside(float x, float lo, float hi) { return x >= lo && x <= hi ? 1.0f : 0.0f; }
/* PyTorch's hardsigmoid: clamp(x / 6 + 1/2, 0, 1), computed as PyTorch's kernels do,
 * (x + 3) / 6: x + 3 is exact near -3, where x / 6 + 0.5 would cancel (1e-5 relative error). */
RNN_DEV float rnn_hardsigmoid(float x) { return x <= -3 ? 0.0f : x >= 3 ? 1.0f : (x + 3) / 6; }
RNN_DEV float rnn_hardsigmoid_d(float x) { return x > -3 && x < 3 ? 1.0f / 6 : 0.0f; }
RNN_DEV float rnn_sin(float x) { return sinf(x); }
RNN_DEV float rnn_cos(float x) { return cosf(x); }

/* ---- 16-bit twins of GEMM inputs (RNNCC_FP16, RNNCC_BF16; runtime/rt_half.c, RnnArgs) ----
 * One rounding for the generated element-wise kernels' twins and for the conversion kernels
 * (convert.cuh), rnn_twin16: on the GPU the hardware's conversion, on the CPU by the bits, the same
 * values (check_runtime's twin_rounding_on_the_gpu_is_the_cpus), so that the CPU runs of the tests see
 * what the GPU computes. */

/* x's bits (device code, or C and C++ on the CPU). */
RNN_DEV unsigned rnn_bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    union { float f; unsigned u; } v;
    v.f = x;
    return v.u;
#endif
}

/* x rounded to fp16, to nearest even (past 65504 to infinity, NaN kept quiet), as its bits. */
RNN_DEV unsigned short rnn_round_f16(float x) {
    const unsigned u = rnn_bits(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u); /* 65520 and up round to infinity */
    if (a < 0x38800000u) /* under 2^-14: subnormal, m * 2^-24 (the product is exact, rintf rounds to even) */
        return (unsigned short)(sign | (unsigned)rintf(fabsf(x) * 16777216.0f));
    return (unsigned short)(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
}

/* x rounded to bf16, to nearest even (NaN kept quiet), as its bits. */
RNN_DEV unsigned short rnn_round_bf16(float x) {
    const unsigned u = rnn_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* v's 16-bit twin: bf16 when bf16, else fp16. On the GPU by the hardware's conversions (cvt.rn: to nearest
 * even, the same values as rnn_round_f16 and rnn_round_bf16, a NaN as a quiet NaN: one
 * instruction each, where the bits' rounding took a dozen and two branches in a step's critical path); on
 * the CPU by the bits. */
RNN_DEV unsigned short rnn_twin16(float v, int bf16) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short h, b;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(v));
    return bf16 ? b : h;
#else
    return bf16 ? rnn_round_bf16(v) : rnn_round_f16(v);
#endif
}

/* Stores v's 16-bit twin at p: bf16 when bf16, else fp16. */
RNN_DEV void rnn_put16(unsigned short *p, float v, int bf16) { *p = rnn_twin16(v, bf16); }

/* ---- split twins of GEMM inputs (RNNCC_TF32X3; runtime/rt_x3.c, RnnArgs.state3, dbuf3) ----
 * The split's one definition, for the conversion unit's rnncc_to_x3 and the generated kernels' twins. */

/* v rounded to tf32 (10 bits of mantissa; to nearest, ties away from zero, as cvt.rna.tf32.f32, by the
 * bits: any architecture, and C on the CPU), infinities and NaNs as they are. hi = rnn_tf32(v) and
 * lo = rnn_tf32(v - hi) (v - hi is exact) are both tf32 values, so a tensor core takes them as they
 * are, and hi*hi + hi*lo + lo*hi is v*w but for lo*lo and lo's rounding (~2^-22 of it). */
RNN_DEV float rnn_tf32(float v) {
    const unsigned u = rnn_bits(v);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;
#if defined(__CUDA_ARCH__)
    return __uint_as_float((u + 0x1000u) & 0xffffe000u);
#else
    union { unsigned u; float f; } r;
    r.u = (u + 0x1000u) & 0xffffe000u;
    return r.f;
#endif
}

/* v split into d[0], d[part], d[2 part]: hi, hi, lo (pattern 0: a left operand's) or hi, lo, hi (1: a
 * right operand's), so that one GEMM over three times the contraction sums hi*hi + hi*lo + lo*hi. */
RNN_DEV void rnn_x3_put(float *d, long long part, float v, int pattern) {
    const float hi = rnn_tf32(v), lo = rnn_tf32(v - hi);
    d[0] = hi;
    d[part] = pattern ? lo : hi;
    d[2 * part] = pattern ? hi : lo;
}

/* Element i of a column-major operand with columns len long, as a right operand's split twin of one
 * step's n columns: column (i / len) % n (a sequence's, in a step's or in all steps' columns) at
 * d + 3 len ((i / len) % n), its parts len apart. */
RNN_DEV void rnn_x3_twin(float *d, long long i, long long len, long long n, float v) {
    rnn_x3_put(d + 3 * len * ((i / len) % n) + i % len, len, v, 1);
}
