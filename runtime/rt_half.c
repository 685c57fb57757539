/* GEMM operands in 16 bits for the reduced-precision modes (RNNCC_FP16, RNNCC_BF16): what cuDNN's
 * TENSOR_OP_MATH_ALLOW_CONVERSION does with fp32 data. Key idea: the data stay fp32 everywhere (the
 * caller's tensors, states, buffers, element-wise math, GEMM outputs); only a GEMM's inputs are
 * rounded, into the workspace, just before it: the weights once a forward (rt_half_begin; in training
 * into the reserve, where the backward reads the same copy; or once until they change, into the
 * model's own copy), in training layer 0's input once a pass into the reserve (rt_half_input), every
 * other operand into its lane's scratch (rt_half_operand), by the generated unit's rnncc_to_f16/bf16,
 * unless the kernel that wrote it also wrote its 16-bit twin (RnnArgs.state16, dbuf16): the
 * multiplied states and the adjoints of GEMM results, which every step GEMM, the backward's input
 * GEMMs and the weight gradients then read as they are. Here too, for every precision: rt_copy_states,
 * a unit's states (and their twins) staged in one launch. */
#include <string.h>

#include "rt_internal.h"

/* codegen/convert.cuh's kernels are bounded at 256 threads a block */
_Static_assert(CG_BLOCK_SIZE == 256, "convert.cuh's __launch_bounds__(256) must match CG_BLOCK_SIZE");

int rt_half(const rnncc_model *m) { return m->precision == RNNCC_FP16 || m->precision == RNNCC_BF16; }

rnncc_status rt_launch_convert(rnncc_model *m, const cudaLaunchConfig_t *cfg, cudaKernel_t kernel, void **args,
                               const char *what) {
    if (!kernel)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: this model's conversion unit holds no %s kernel (rt_convert_needs)", what);
    RT_CUDA(m, cudaLaunchKernelExC(cfg, (const void *)kernel, args));
    RT_CUDA(m, cudaGetLastError());
    return RNNCC_OK;
}

rnncc_status rt_launch_columns(rnncc_model *m, cudaStream_t stream, cudaKernel_t kernel, void **args, int64_t per,
                               int64_t cols) {
    int64_t x = (per + CG_BLOCK_SIZE * CG_CONVERT_ITEMS - 1) / (CG_BLOCK_SIZE * CG_CONVERT_ITEMS);
    if (x > CG_MAX_GRID_BLOCKS) x = CG_MAX_GRID_BLOCKS;
    int64_t y = CG_MAX_GRID_BLOCKS / x;
    if (y > cols) y = cols;
    cudaLaunchConfig_t cfg = {.gridDim = {(unsigned)x, (unsigned)y, 1}, .blockDim = {CG_BLOCK_SIZE, 1, 1}, .stream = stream};
    return rt_launch_convert(m, &cfg, kernel, args, "conversion");
}

/* Converts the rows x cols matrix src (column-major, leading dimension ld) into dst, packed
 * (rt_launch_columns's grid; vec4: four elements an item). */
static rnncc_status convert(rnncc_model *m, cudaStream_t stream, const float *src, int64_t ld, int64_t rows, int64_t cols,
                            void *dst) {
    if (rows <= 0 || cols <= 0) return RNNCC_OK;
    long long lld = ld, lrows = rows, lcols = cols;
    int vec4 = rows % 4 == 0 && (cols == 1 || ld % 4 == 0) && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 8 == 0;
    void *args[] = {&src, &lld, &lrows, &lcols, &dst, &vec4};
    return rt_launch_columns(m, stream, m->to_half[m->precision == RNNCC_BF16], args, vec4 ? rows / 4 : rows, cols);
}

rnncc_status rt_half_round_weights(rnncc_model *m, cudaStream_t stream, void *dst) {
    return convert(m, stream, m->weights, m->weight_count, m->weight_count, 1, dst);
}

int rt_copy_blocks(RnnStateCopies *a) {
    const int64_t most = CG_MAX_GRID_BLOCKS / RNN_STATE_COPIES; /* a copy's blocks: so all of them fit one grid */
    int blocks = 0;
    for (int i = 0; i < a->count; i++) { /* four floats a thread; the kernel's blocks stride over the rest */
        int64_t x = (a->c[i].n / 4 + CG_BLOCK_SIZE - 1) / CG_BLOCK_SIZE;
        a->c[i].block0 = blocks;
        a->c[i].blocks = (int)(x < 1 ? 1 : x > most ? most : x);
        blocks += a->c[i].blocks;
    }
    return blocks;
}

rnncc_status rt_copy_add(rnncc_model *m, cudaStream_t stream, RnnStateCopies *a, RnnStateCopy c) {
    if (c.n <= 0) return RNNCC_OK;
    if (a->count == RNN_STATE_COPIES) {
        RT_TRY(rt_copy_states(m, stream, a));
        a->count = 0;
    }
    a->c[a->count++] = c;
    return RNNCC_OK;
}

rnncc_status rt_copy_states(rnncc_model *m, cudaStream_t stream, const RnnStateCopies *a) {
    if (a->count <= 0) return RNNCC_OK;
    RnnStateCopies copy = *a;
    const int blocks = rt_copy_blocks(&copy);
    void *args[] = {&copy};
    cudaLaunchConfig_t cfg = {.gridDim = {(unsigned)blocks, 1, 1}, .blockDim = {CG_BLOCK_SIZE, 1, 1}, .stream = stream};
    const cudaKernel_t stage = m->stage_states[m->precision == RNNCC_BF16];
    return rt_launch_convert(m, &cfg, stage, args, "state staging");
}

void *rt_half_copy_in(const RtRegions *r, char *holder) { return rt_align16(holder + r->half_weights); }

rnncc_status rt_half_begin(rnncc_model *m, const RtRegions *r, char *ws, char *reserve, RtHalfWeights weights) {
    m->half_weights = NULL;
    m->half_x = NULL;
    for (int l = 0; l < 2; l++)
        for (int w = 0; w < 2; w++) m->half_scratch[l][w] = r->half_ops[l][w] ? ws + r->half_ops[l][w] : NULL; /* 0: the lengths' place */
    m->half_len[0] = r->half_len[0];
    m->half_len[1] = r->half_len[1];
    if (!rt_half(m) || weights == RT_HALF_NO_WEIGHTS) return RNNCC_OK;
    if (weights == RT_HALF_KEPT && m->half_train_copy && m->half_train_copy != (m->half_kept ? 2 : 1))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "rnncc_model_keep_derived_weights changed since the training forward: its backward would read a "
                       "16-bit copy of the weights that forward did not write; run the forward again");
    /* the model's own copy (cudaMalloc's: aligned), or the pass's, 16-byte aligned (persistent kernels
     * copy weight rows from it 16 bytes at a time): in training the reserve's (rt_regions), which the
     * forward fills and its backward reads as it is; in inference the workspace's */
    const int kept = m->half_kept && weights != RT_HALF_CONVERT_HERE;
    char *holder = r->reserve ? reserve : ws;
    m->half_weights = kept ? m->half_kept : rt_half_copy_in(r, holder);
    if (weights == RT_HALF_KEPT || (kept && m->derived_fresh)) return RNNCC_OK; /* the copy it reads holds them */
    if (weights == RT_HALF_CONVERT_HERE || !m->fold) return rt_half_round_weights(m, m->streams[0], m->half_weights);
    for (int u = 0; u < m->nunits; u++) { /* the forward's: each unit's but V, which rt_fold_derive writes next */
        const float *w = m->weights + m->units[u].weight_offset;
        unsigned short *d = (unsigned short *)m->half_weights + m->units[u].weight_offset;
        int64_t n = m->units[u].layout->packed_size, lo = n, hi = n;
        if (!ir_fold_derived_range(m->fold, m->units[u].layout, &lo, &hi)) lo = hi = n;
        RT_TRY(convert(m, m->streams[0], w, lo, lo, 1, d));
        RT_TRY(convert(m, m->streams[0], w + hi, n - hi, n - hi, 1, d + hi));
    }
    return RNNCC_OK;
}

/* Whether a forward rounds x in the launch that stages layer 0's initial states (layer 0 runs on one
 * lane, which its hoisted GEMMs follow), not on stream 0 before two directions' lanes fork. */
static int x_with_states(const rnncc_model *m) { return m->dirs == 1; }

rnncc_status rt_half_input(rnncc_model *m, const RtRegions *r, char *ws, char *reserve, const float *x, int forward) {
    m->half_x = NULL;
    if (!rt_half(m) || !x) return RNNCC_OK;
    m->half_x_src = x;
    m->half_x_len = r->T * r->N * ir_shape_numel(&m->cell->inputs[0].shape, m->dimval[0]);
    m->half_x = rt_align16((r->reserve ? reserve : ws) + r->half_x); /* 16-byte aligned, as the weights' copy */
    return forward && !x_with_states(m) ? convert(m, m->streams[0], x, m->half_x_len, m->half_x_len, 1, m->half_x)
                                        : RNNCC_OK;
}

/* a unit's states take at most RNN_MAX_STATES copies: x's always has its place after them, and a
 * persistent forward's zeros (rt_persist_zeros) theirs */
_Static_assert(RNN_STATE_COPIES >= RNN_MAX_STATES + 3, "RnnStateCopies holds the states, x's copy and two zeroings");

void rt_half_x_copy(rnncc_model *m, RnnStateCopies *a) {
    if (m->half_x && x_with_states(m)) a->c[a->count++] = (RnnStateCopy){.src = m->half_x_src, .dst16 = m->half_x, .n = m->half_x_len};
}

const unsigned short *rt_half_params(const rnncc_model *m, int64_t off) {
    return m->half_weights ? (const unsigned short *)m->half_weights + off : NULL;
}

void rt_half_end(rnncc_model *m) {
    m->half_weights = NULL;
    m->half_x = NULL;
    memset(m->half_scratch, 0, sizeof m->half_scratch);
}

rnncc_status rt_half_operand(rnncc_model *m, int lane, int which, cudaStream_t stream, const float *p, int64_t ld,
                             int64_t rows, int64_t cols, const unsigned short *twin, const void **out, int64_t *ldout) {
    if (twin) { /* written by the kernel that wrote p */
        *out = twin;
        *ldout = ld;
        return RNNCC_OK;
    }
    if (m->half_weights && p >= m->weights && p < m->weights + m->weight_count) { /* converted at the pass's start */
        *out = (const uint16_t *)m->half_weights + (p - m->weights);
        *ldout = ld;
        return RNNCC_OK;
    }
    if (m->half_x && p >= m->half_x_src && rows <= ld && cols > 0 &&
        (p - m->half_x_src) + (cols - 1) * ld + rows <= m->half_x_len) { /* a block of x, rounded by the forward */
        *out = (const uint16_t *)m->half_x + (p - m->half_x_src);
        *ldout = ld;
        return RNNCC_OK;
    }
    int64_t n = rows * cols;
    void *dst = m->half_scratch[lane][which];
    if (!dst || n > m->half_len[which])
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "internal: a %lld x %lld GEMM operand has no 16-bit scratch (%lld elements)",
                       (long long)rows, (long long)cols, (long long)m->half_len[which]);
    *out = dst;
    *ldout = rows;
    return convert(m, stream, p, ld, rows, cols, dst);
}
