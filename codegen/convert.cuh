/* rnncc operand conversion: fp32 matrices rounded to fp16 or bf16 for the cuBLAS GEMMs of the
 * reduced-precision modes (RNNCC_FP16, RNNCC_BF16; runtime/rt_half.c). Appended to every
 * per-step translation unit after the prelude; NVRTC compiles it with no #includes.
 *
 * A column-major matrix of rows x cols with leading dimension ld becomes a packed one (leading
 * dimension rows) of 16-bit values, rounded to nearest even by the prelude's rnn_round_f16 and
 * rnn_round_bf16 (the generated kernels' twins round alike). Key idea: a conversion is
 * a pass over memory, so each thread moves four consecutive elements of a column with one
 * 16-byte load and one 8-byte store where rows, ld and both pointers allow it (vec4), else one.
 * Compiled by NVRTC only (__CUDACC__): tests/check_codegen.c runs the rest of a unit as C++ on
 * the CPU, where these are not needed (the GPU suite checks the modes against the reference). */
#if defined(__CUDACC__)

#define RNN_CONVERT_KERNEL(name, rnd)                                                                   \
    extern "C" __global__ void __launch_bounds__(256)                                                   \
    name(const float *__restrict__ src, long long ld, long long rows, long long cols,                   \
         unsigned short *__restrict__ dst, int vec4) {                                                  \
        const long long step = (long long)gridDim.x * blockDim.x;                                       \
        if (vec4) {                                                                                     \
            const long long q = rows / 4, n = q * cols;                                                 \
            for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {    \
                const long long c = i / q, r = (i - c * q) * 4;                                         \
                const float4 v = *(const float4 *)(src + c * ld + r);                                   \
                *(uint2 *)(dst + c * rows + r) =                                                        \
                    make_uint2((unsigned)rnd(v.x) | (unsigned)rnd(v.y) << 16,                           \
                               (unsigned)rnd(v.z) | (unsigned)rnd(v.w) << 16);                          \
            }                                                                                           \
            return;                                                                                     \
        }                                                                                               \
        const long long n = rows * cols;                                                                \
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {        \
            const long long c = i / rows, r = i - c * rows;                                             \
            dst[i] = rnd(src[c * ld + r]);                                                              \
        }                                                                                               \
    }

RNN_CONVERT_KERNEL(rnncc_to_f16, rnn_round_f16)
RNN_CONVERT_KERNEL(rnncc_to_bf16, rnn_round_bf16)
#endif
