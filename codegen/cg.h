/* CUDA code generation: one translation unit per (cell, bound dimensions) holding, per plan
 * group (ir/sched.h), one element-wise forward kernel and one backward kernel. The GEMMs
 * between the kernels are not generated: the runtime runs them through cuBLAS.
 *
 * The translation unit, in order: a header comment (with a `// rnncc-kernels: ...` line
 * listing the forward kernels in launch order, and `// rnncc-backward-kernels: ...` the
 * backward kernels in group order), the prelude (runtime/rnn_args.h and
 * codegen/prelude.cuh, embedded by the Makefile as cg_prelude_text), the bound dimensions
 * as `#define RNN_DIM_<name> <value>`, one `rnn_op_<op>` device function per element-wise
 * op the cell uses (and `rnn_dop_<op>_<i>`, its partial derivatives, for the backward pass),
 * then the forward kernels, then (after the line CG_BACKWARD_MARK) the backward kernels. The
 * runtime compiles the two halves as separate NVRTC programs at once (cg_emit_unit's parts); the
 * state staging `rnncc_states_f16/bf16` of every precision, the operand conversions `rnncc_to_f16`
 * and `rnncc_to_bf16` the reduced-precision GEMMs read, tf32x3's split and the projection fold's
 * column moves (codegen/convert.cuh) are a unit of their own, the same for every cell, holding what
 * the model launches (cg_emit_convert).
 *
 * Launch contract (the runtime launches exactly this; the CPU executor follows the same):
 *   - Names: hoisted group k is `rnncc_<cell>_h<k>`, step group k is `rnncc_<cell>_s<k>`
 *     (cg_kernel_name). Each is `extern "C" __global__ void NAME(const RnnArgs a)`.
 *   - Shape: 1-D. blockDim = (CG_BLOCK_SIZE, 1, 1) (kernels carry
 *     __launch_bounds__(CG_BLOCK_SIZE); a smaller block also works), gridDim =
 *     (cg_grid_blocks(items), 1, 1) with items = cg_group_items(). Kernels loop grid-stride
 *     over their items, so any grid of at least one block computes the same result.
 *   - Items: a step group has N*J, item i = (n, j) = (i / J, i % J); a hoisted group has
 *     T*N*J, item i = (col, j) = (i / J, i % J). J = cg_group_width(): the group's widest
 *     vector; nodes and writes of shorter vectors are skipped where j >= their length.
 *   - Order: the hoisted program once per layer and direction: for k = 0.. its group k
 *     kernel (if any), then its phase-k GEMMs. Then for t = 0..T-1 the step program: for
 *     k = 0.. step group k (if any), then the step GEMMs of phase k. Same stream, in order.
 *   - Every kernel's first statement is RNN_AFTER_PREDECESSOR() (codegen/prelude.cuh), so the
 *     runtime may launch it as a programmatic dependent of the kernel before it (on sm_90 and
 *     later it does so for the forward's kernels): it waits there until that kernel's writes are
 *     visible.
 *   - RnnArgs: params, x/ldx, buf[] (plan buffers; GEMM results column-major per column:
 *     column c of buffer B at buf[B] + c * buffer_width[B]), state_prev/state_next (the
 *     runtime swaps them between steps), y/ldy, lengths (NULL: all T; each in 0..T, the
 *     runtime checks), t, reverse, T, N. Hoisted kernels read only params, x, ldx, buf, T, N.
 *   - Step semantics per (n, j): len = lengths ? lengths[n] : T. If t >= len the sequence
 *     has ended: state_next = state_prev for every state this group writes,
 *     y[o][(t*N + n)*ldy[o] + j] = 0 for every output it writes, and 0 into every value the
 *     group stores (so kept step buffers never hold stale values); nothing else is read.
 *     Else pos = reverse ? len-1-t : t, col = pos*N + n, and the group's nodes are computed
 *     reading x and hoisted buffers at column col, step buffers at column n.
 *   - y[o] may be NULL (an output nobody reads): nothing is written to it.
 *   - The post program (plans with SCHED_POST_PROGRAM, ir/sched.h): post group k is `rnncc_<cell>_p<k>`, backward `rnncc_<cell>_bp<k>`. It runs after
 *     the step program, over the steps a.t .. a.t_end-1 (the whole loop, or a wavefront's chunk):
 *     its group k kernel, then its phase-k GEMMs over those steps' columns. Items (a.t_end - a.t)*N*J,
 *     item i = (t, n, j) with t = a.t + i / J / N, n = i / J % N; tc = t*N + n is its column of step
 *     buffers (each kept for every step from buf[B], as in training) and post buffers (T*N columns);
 *     x, y and hoisted buffers at col as in a step. Past a sequence's end: zeros into its outputs at
 *     row tc and into the values it stores; no state is read or written. Its backward runs first,
 *     before the step program's (its adjoints enter the step backward as dy does): items as the
 *     forward's, past a sequence's end nothing sent; but where the group reads a vector parameter
 *     (cg_post_backward_walks) items N*J, each thread walking t = a.t .. min(a.t_end, len)-1 of its
 *     sequence as a hoisted kernel walks positions, parameter accumulators outside that loop. No split
 *     twin (dbuf3) for what it sends.
 *
 * Backward contract (ir/sched_exec.c's backward_group is the executable specification):
 *   - Names: `rnncc_<cell>_bh<k>` / `rnncc_<cell>_bs<k>` (cg_backward_kernel_name), same
 *     signature, block and grid rules as the forward. Items: N*J for both kinds
 *     (cg_backward_group_items), item i = (n, j) = (i / J, i % J).
 *   - Order: for t = T-1 down to 0 the step program backward: dstate_prev is zero (the
 *     runtime's before step T-1, then step t+1's kernels': each zeroes the dstate_next elements
 *     it read, RnnArgs.dstate_next), then for k = K..0: step group k's backward kernel (if any), then the data
 *     backward of the step GEMMs of phase k-1 (d operand += W^T d result, for the columns of
 *     step t); then dstate_prev becomes the next iteration's dstate_next. Then the hoisted
 *     program backward likewise, once. Weight gradients (dW += d result operand^T over every
 *     kept column) and the sums of the vector-parameter accumulators (and of a folded bias's
 *     GEMM-result adjoint over every column, Plan.param_fold) are the runtime's.
 *   - RnnArgs as in the forward (the forward's kept values: buf of step t, state_prev of
 *     step t), plus dbuf[] (laid out like buf, step buffers offset to step t like buf; all
 *     zero before the backward starts: kernels and GEMM backwards only add, except that a
 *     kernel that alone sends a value's adjoint writes it; nothing is written at an ended
 *     sequence's columns; a buffer one kernel alone stores every element of, cg_adjoint_twinned,
 *     is not zeroed where every sequence runs all T steps), dstate_next (read; per-step kernels then zero it), dstate_prev (+=), dy (NULL:
 *     zero; stride ldy), dx (+=, zeroed by the runtime; NULL: not wanted; stride ldx), dparam
 *     (+=; parameter p's [N][rows] accumulator at dparam + N * layout->acc_offset[p]; none
 *     for folded parameters, whose acc_offset is -1).
 *   - Step kernel per (n, j): if t >= len: dstate_prev[k] += dstate_next[k] for every state
 *     the group writes, nothing else. Else the group's values are recomputed as in the
 *     forward (pos, col as there); each computed value gets an adjoint, starting from its
 *     dbuf element if it is stored, else 0; the writes seed them: state k's write adds
 *     dstate_next[k][n*S + j], output o's adds dy[o][col*ldy[o] + j]; the nodes are swept
 *     last to first, each adding d(value) * rnn_dop_<op>_<q>(a, b, c, y) to operand q's
 *     adjoint (literals and folded parameters have none). The adjoint of a value read, not
 *     computed, is added to its home (written, where no other group and no GEMM reads the
 *     value): dx[col*ldx + j] (input), dstate_prev[k][n*S + j] (state), dparam[N*acc_offset
 *     + n*rows + j] (vector parameter, unless folded), dbuf[B][column*W + block_row + j] (GEMM
 *     result) or dbuf[B][column*D + j] (stored value), column = col for hoisted buffers, n for
 *     step ones.
 *   - Hoisted kernel per (n, j): for pos = 0..len-1 (padding skipped), col = pos*N + n, the
 *     same without seeds. One thread owns sequence n's columns and accumulators, so every
 *     += of either kind touches memory no other thread does: no atomics.
 */
#ifndef RNNCC_CG_H
#define RNNCC_CG_H
#include <stddef.h>
#include <stdint.h>

#include "ir/sched.h"

/* Threads per block of every generated kernel. */
enum { CG_BLOCK_SIZE = 256 };
/* The largest grid cg_grid_blocks returns (the grid-stride loop covers the rest). */
enum { CG_MAX_GRID_BLOCKS = 65535 };
/* Items (four elements each where aligned) a thread of the conversion kernels moves at once
 * (codegen/convert.cuh, cg_emit_convert); a conversion's grid covers a column in blocks of
 * CG_BLOCK_SIZE * CG_CONVERT_ITEMS items. */
enum { CG_CONVERT_ITEMS = 4 };

/* The prelude text: runtime/rnn_args.h then codegen/prelude.cuh (generated by the Makefile). */
extern const char cg_prelude_text[];

/* The parts of a per-step unit cg_emit_unit writes: header, prelude, dimensions and ops always,
 * then the forward kernels, the backward kernels (after CG_BACKWARD_MARK), or both. */
enum { CG_UNIT_FORWARD = 1, CG_UNIT_BACKWARD = 2, CG_UNIT_WHOLE = 3 };
/* The line that opens a unit's backward kernels. */
#define CG_BACKWARD_MARK "// ==== the backward kernels: adjoints, from the forward's kept values (codegen/cg.h)"

/* Writes the parts (CG_UNIT_*) of the CUDA translation unit of a laid-out plan into out; the
 * whole unit is the forward part followed by the backward part's text from CG_BACKWARD_MARK on.
 * arena holds scratch memory. Byte-identical for the same plan, layout and source text
 * (diags->src, when set, is quoted in comments, line by line). Returns 1, or 0 with the reason
 * in diags (a name that is not a plain identifier, a constant that is not a finite float, out of memory). */
int cg_emit_unit(Arena *arena, const Plan *plan, const PlanLayout *layout, int parts, StrBuf *out, Diags *diags);
/* cg_emit_unit of the whole unit, forward and backward kernels (the name is historical). */
int cg_emit_forward(Arena *arena, const Plan *plan, const PlanLayout *layout, StrBuf *out, Diags *diags);
/* What a model's conversion unit holds (cg_emit_convert's what): the state staging always, in bf16's
 * rounding or else fp16's (CG_CONVERT_BF16); fp32 -> 16-bit operand conversions (CG_CONVERT_HALF, that
 * rounding's kernel alone), RNNCC_TF32X3's split (CG_CONVERT_X3), the projection fold's columns (CG_CONVERT_FOLD).
 * A model builds only what it launches: the whole unit took ~0.6 s of NVRTC, a model's first create on a
 * fresh machine (bench/NOTES.md section 102). */
enum { CG_CONVERT_BF16 = 1, CG_CONVERT_HALF = 2, CG_CONVERT_X3 = 4, CG_CONVERT_FOLD = 8, CG_CONVERT_ALL = 15 };
/* Writes the conversion unit of what (CG_CONVERT_* bits; prelude and codegen/convert.cuh): rnncc_states_f16 or
 * rnncc_states_bf16, and as asked rnncc_to_f16 or rnncc_to_bf16, rnncc_to_x3, rnncc_fold_entry/final/gather;
 * the same text for every cell and dimension. Returns 0 when out ran out of memory or what has other bits. */
int cg_emit_convert(StrBuf *out, unsigned what);

/* Writes the kernel name of plan->groups[group] into buf. Returns the name's length, or -1
 * when group is out of range or the name does not fit in size bytes (NUL included). */
int cg_kernel_name(const Plan *plan, int group, char *buf, size_t size);
/* J of plan->groups[group]: its largest vector length (nodes and writes), in elements. */
int64_t cg_group_width(const PlanLayout *layout, int group);
/* The group's work items: N*J for a step group, T*N*J for a hoisted one; -1 on overflow
 * or bad arguments. */
int64_t cg_group_items(const PlanLayout *layout, int group, int64_t T, int64_t N);
/* Blocks of CG_BLOCK_SIZE threads for items work items: ceil(items / CG_BLOCK_SIZE),
 * at least 1, at most CG_MAX_GRID_BLOCKS. */
unsigned cg_grid_blocks(int64_t items);

/* Writes the backward kernel name of plan->groups[group] into buf (rnncc_<cell>_bs<k> or
 * _bh<k>). Returns the name's length, or -1 as cg_kernel_name. */
int cg_backward_kernel_name(const Plan *plan, int group, char *buf, size_t size);
/* Does a step GEMM multiply state k? Each step then stores it whole: as flagged words (persistent
 * kernels with flags) and, in the 16-bit modes, with its 16-bit twin (RnnArgs.state16). */
int cg_state_multiplied(const Plan *plan, int k);
/* Is buffer b an element-wise value that a GEMM multiplies? The kernel that stores it then writes its 16-bit
 * twin too (RnnArgs.buf16, the same index), so that no GEMM rounds it (the post program's product of every
 * step's values, the weight gradients' activations, a later phase's per-step product). */
int cg_value_twinned(const Plan *plan, int b);
/* Is buffer b a GEMM result whose adjoint one backward kernel alone stores, every element, so
 * that it can write the adjoint's 16-bit twin (RnnArgs.dbuf16) for the GEMMs that multiply it? */
int cg_adjoint_twinned(const Plan *plan, int b);
/* The first buffer a < b whose adjoint holds b's, row for row (every GEMM result in b has a partner in
 * a with the same adjoint, Plan.sum_root, at the same rows, sent by the same kernel; both stored
 * whole, cg_adjoint_twinned), or -1. Where a step's columns are its positions' (the forward
 * direction), the runtime points b's adjoint at a's and sets RnnArgs.dshared, and the kernels
 * store it once (the LSTM's: 4 of 8 floats a unit a step, and half its adjoint memory). */
int cg_adjoint_shared(const PlanLayout *layout, int b);
/* cg_adjoint_shared's a where a is hoisted and b a step buffer, else -1. In training's forward
 * direction, where the runtime's rule says so (no persistent forward may run; 16-bit GEMM inputs or
 * more than 64 sequences: runtime/rt_regions.c), b's step GEMM adds its products into a's columns
 * of the step (cuBLAS beta = 1) and sets RnnArgs.summed, and the kernels read b's results as 0: one
 * stored sum instead of two terms (the LSTM's: 4 of 8 floats a unit a step read, and kept). */
int cg_value_summed(const PlanLayout *layout, int b);
/* Does buffer b's adjoint get a tf32x3 split twin (RnnArgs.dbuf3, one step's columns)? Where it is twinned
 * and a step GEMM's Wᵀ product multiplies it: a step buffer's (but not one the post program reads, whose
 * kernels send every step's adjoint before the loop), or, where adjoints are shared (`shared`:
 * RnnArgs.dshared), a hoisted one's that keeps a step buffer's (cg_adjoint_shared). */
int cg_adjoint_split_twinned(const PlanLayout *layout, int b, int shared);
/* The backward kernel's work items: N*J, but T*N*J for a post group that sums no parameter's adjoint (T: its
 * window's steps; cg_post_backward_walks); -1 on overflow or bad arguments. */
int64_t cg_backward_group_items(const PlanLayout *layout, int group, int64_t T, int64_t N);
/* Whether plan->groups[group]'s backward kernel walks the steps of a sequence a thread: a post group that reads a
 * vector parameter, whose adjoint it sums over them (else a post backward kernel takes a thread a (t, n, j)). */
int cg_post_backward_walks(const Plan *plan, int group);

/* ---- the persistent backend (codegen/cg_persist_plan.c, cg_persist.c; docs/backends.md) ----------
 * A unit of its own (cg_emit_persistent) holds one kernel: forward `rnncc_<cell>_p` runs steps
 * a.t .. a.t_end-1 of the step program, backward `rnncc_<cell>_pb` runs the step program's
 * backward for steps a.t_end-1 down to a.t. Either is launched cooperatively with exactly
 * CgPersist.blocks blocks of 32 * CgPersist.warps threads in clusters of CgPersist.cluster blocks
 * and CgPersist.smem bytes of dynamic shared memory, for a batch of its class (at most
 * CgPersist.seqs_max sequences where a product is fused: the kernel traps past it); a.sync points to a zeroed counter; with
 * CgPersist.flags (or any value twin there, cg_persist_uses_words: then not necessarily zeroed),
 * a.flags points to cg_persist_flag_words(layout, N) zeroed 8-byte words, 16-byte
 * aligned (state k's two slots of [N][S] after those of the multiplied states before it, then
 * flagged buffer b's two slots of [N][buffer_width[b]], cg_flagged_buffer); state k of step t is read from slot
 * t % a.state_wrap (slot t when 0; else a power of two: the kernel traps otherwise) of
 * state_prev[k] (slots of [N][S] one after the other) and
 * written to the next slot; step buffer b of step t is buf[b] + t * buf_step[b] (dbuf[b] too).
 * The forward runs after the hoisted program (the per-step unit's kernels and cuBLAS); the
 * backward before the hoisted program's backward, with the per-step backward's arguments
 * (above) except: dstate_prev[k] points to three [N][S] slots, step t reads the adjoint of its
 * state result from slot (t+1) % 3 and adds to slot t % 3; with a.lengths it zeroes slot
 * (t+2) % 3, without, each slot's first writer in the step stores instead (cg_persist.c
 * first_adjoint_writer); slot t_end % 3 holds the adjoint of the last result and slot
 * (t_end-1) % 3 zeros at launch.
 * Block s owns, of every quantity of length L (a group's J, each stacked block of a step GEMM,
 * in the backward each step GEMM's operand), the elements [L*s/G, L*(s+1)/G). a.params must be
 * 16-byte aligned (the forward copies weight rows 16 bytes at a time where K is a multiple of 4;
 * the runtime's are: a cudaMalloc'd buffer, each layer at a multiple of SCHED_PACK_ALIGN floats).
 * With 16-bit products (CgPersist.half) the weights come from a.params16 instead, the parameters
 * rounded at the same indices, 16-byte aligned (rows copied 16 bytes at a time where K is a
 * multiple of 8); a forward GEMM with CgPersistGemm.x16 stages state k from a.state16[k], its
 * twin's slots laid out as state_prev[k]'s (same wrap), slot a.t already holding the rounded
 * state; a backward one stages its result's adjoint from a.dbuf16[b] (b its out buffer, laid out
 * as dbuf[b]; the kernel writes it before it reads it); a forward one on a later phase's value
 * (cg_flagged_buffer) stages that value's twin, which the kernel writes each step into slot 0 of
 * the value's flagged-word slots at a.flags ([N][width] halves; cg_persist_uses_words); the kernel
 * traps where any is NULL. */
/* Warps of a persistent block unless asked otherwise (CgPersistAsk.warps: 4, 8 or 16). */
enum { CG_PERSIST_WARPS = 8 };
/* The H100 (SXM) the CLI sizes persistent kernels for when no device is asked: its
 * multiprocessors and the shared memory one block may take (227 KB). */
enum { CG_H100_SMS = 132, CG_H100_SMEM = 232448 };
/* The blocks of the clusters of 4 an H100 holds at once at one block a multiprocessor: 30 clusters
 * (cudaOccupancyMaxActiveClusters on an H100 and an H200; bench/NOTES.md section 52). */
enum { CG_H100_FOUR_BLOCKS = 120 };

/* One step GEMM as the persistent kernel keeps it on chip. */
typedef struct CgPersistGemm {
    int gemm;               /* index into Plan.gemms */
    int64_t K;              /* the operand's length (backward: the result's, the stacked rows); with split K,
                             * the part a block takes (whole staging grains: block r's starts at r*K) */
    int64_t kfull;          /* the operand's whole length (K without split K) */
    int64_t rows;           /* rows a block owns at most (backward: operand elements); with split K, the
                             * cluster's: split*ro */
    int64_t ro;             /* split K: operand elements a block owns at most, the stride of the cluster's
                             * blocks' rows (rnn_split_finish) */
    int rw, passes;         /* register rows per lane (1..4; 5 in a tensor-core pass of a split K), and passes of 8*rw rows */
    int64_t kc, chunks;     /* columns of K staged at once, and how many chunks cover K */
    int64_t ldw;            /* elements (floats, or halves with 16-bit weights) per weight row in shared
                             * memory (chunks*kc + pad) */
    int64_t w_off, map_off; /* floats from the start of shared memory: the weights, the row map */
    int64_t res_off;        /* forward: the results of sequences n < res_cap, [res_cap][passes*8*rw] */
    int res_cap;            /* forward: sequences whose results also stay in shared memory (0: none) */
    int kept_only;          /* forward, res_cap > 0: nothing reads the results but this block's step
                             * groups (read_only_in_own_rows), so a step buffer reused from step to step
                             * (inference) is not written for the sequences kept */
    int fuse;               /* forward on tensor cores, kept_only, one pass of rows and of the class's
                             * sequences: only the group right after its phase reads the results, with no
                             * product between, and it has enough items (sums_left_in_red), so that group
                             * adds up the warps' partial sums itself (persist.cuh rnn_red_sum), and in
                             * inference the product skips its own sums (RNN_IN_RED); in training too where
                             * it is the step's last product and a barrier hands off (its sums stored
                             * after the block's arrival at the step's end: cg_persist.c sums_stored_late) */
    int wregs;              /* one pass of rows, staged whole: on tensor cores (forward or backward) each warp
                             * keeps the A fragments of its share of K in registers for every step (persist.cuh
                             * rnn_wfrag: wregs steps of its k loop, all of them), so a step's product reads only
                             * the operand from shared memory; with FFMA (forward or backward) each lane keeps
                             * its weights of the first wregs steps of its k loop (rnn_ffrag, 4 registers a row
                             * and step); 0: the weights are read from shared memory every step
                             * (weights_in_registers' register budget) */
    int waves;              /* on tensor cores with wregs, where the block stages its own copies (no clusters
                             * sharing them, or a backward's clusters splitting K), no flagged words and 16
                             * sequences a pass or more: the operand's copies in so many commit groups (2 or
                             * 4; persist.cuh rnn_stage_copies), the product starting on the first while the
                             * others land (bench/NOTES.md section 71); 0: staged in one go */
    int x16;                /* 16-bit products: the multiplied operand is staged from its 16-bit twin
                             * (half the bytes), not from its fp32 value: forward, a state
                             * (RnnArgs.state16; with flags, 16-bit flagged words) or, with no flags
                             * asked for, a later phase's value of the step (its twin in its slots
                             * at a.flags, cg_flagged_buffer); backward, the result's adjoint
                             * (RnnArgs.dbuf16; cg_adjoint_twinned); where K and its stride are
                             * multiples of 8 */
    int direct;             /* with CgPersist.direct: 1 when each warp loads its share of the operand's 16-bit
                             * twin (a forward's state, a backward's d(gates)) straight into its B fragments
                             * (persist.cuh rnn_mv_mma, XH = 2: x16, one pass of rows, one chunk, weights held
                             * in registers); 0: staged */
} CgPersistGemm;

/* How a persistent kernel's products run: FFMA in strict fp32, or on tensor cores (`mma`, fp32 sums)
 * with tf32 inputs (weights on chip in fp32) or 16-bit ones (fp16 or bf16 weights on chip, half the
 * bytes: RnnArgs.params16; the staged operand rounded as it is read). The values are rnncc.h's
 * precisions' (RNNCC_FP32 .. RNNCC_BF16), whose products these are. */
typedef enum CgProducts { CG_FFMA = 0, CG_TF32 = 1, CG_F16 = 2, CG_BF16 = 3 } CgProducts;
/* The products of a persistent kernel of a model in precision (rnncc.h's rnncc_precision): its own value,
 * but RNNCC_TF32X3's (4), whose persistent kernels run fp32's FFMA (only its cuBLAS GEMMs split inputs). */
static inline CgProducts cg_products_of(int precision) { return precision == 4 ? CG_FFMA : (CgProducts)precision; }
/* The products' name: "fp32 FFMA", "tf32 tensor-core", "fp16 tensor-core" or "bf16 tensor-core". */
const char *cg_products_name(CgProducts products);

/* What a persistent kernel is planned for: a batch, a direction, a precision and a device. */
typedef struct CgPersistAsk {
    int64_t N;              /* sequences in the batch (it sets the batch class, cg_persist_class) */
    int backward;           /* 0: the forward kernel; 1: the backward */
    CgProducts products;    /* FFMA, or tensor cores in tf32, fp16 or bf16 */
    int cluster;            /* blocks per thread-block cluster sharing the staged operand (1, 2, 4) */
    int sms;                /* blocks that may run at once, one per multiprocessor */
    int64_t smem_limit;     /* bytes of shared memory one block may take */
    /* the tile (0: the default); the runtime's search (runtime/rt_tile.c) tries others */
    int warps;              /* warps a block: 4, 8 or 16 (0: CG_PERSIST_WARPS) */
    int64_t kc_cap;         /* staging chunks of at most this many columns (>= 256; whole 256s are taken,
                             * then the shorter of 2048 ... 256 that fit; 0: the operand whole when it
                             * fits, else the longest of 2048 ... 256 that fits) */
    int nw_max;             /* sequences per lane a pass at most (1, 2, 4, 8; tf32 takes at least 2; 0: the
                             * batch class's) */
    int handoff;            /* how a forward's steps meet: CG_HANDOFF_BARRIER (0), or CG_HANDOFF_FLAGS or
                             * CG_HANDOFF_DIRECT where the plan allows it; a backward's operand: staged, or
                             * CG_HANDOFF_DIRECT */
    int twins;              /* 1: the kernel writes the 16-bit twins of the GEMM inputs it stores whole
                             * (RnnArgs.state16, dbuf16; the 16-bit modes), 0: it has no code for them */
    int split;              /* 1: a backward's clusters split K instead of sharing the staged operand
                             * (CgPersist.split; where the plan allows it) */
    int blocks;             /* blocks at most (0: sms; the search's fewer-blocks tile, cg_persist_fewer_blocks) */
    int wregs;              /* registers a thread the step weights it holds may take (CgPersistGemm.wregs):
                             * 0 the rule's budget (weights_in_registers: 128 at 4 and 8 warps, 105 with several
                             * step GEMMs at 32 sequences a pass or on 4 warps; FFMA 127, 105, 85 or 65 by the
                             * unit's shape; none at 16), -1 none, 1 to 255 at most so many (past the budget a
                             * kernel may spill: the runtime then builds it again holding fewer) */
    int waves;              /* the staging waves a step GEMM's operand may take (CgPersistGemm.waves): 0 the
                             * rule's, -1 none, 2 or 4 at most so many */
} CgPersistAsk;

/* How a persistent forward's steps meet (CgPersistAsk.handoff; bench/NOTES.md sections 17, 44): at
 * a grid barrier, then each block stages the states it multiplies; or, with flags, each state result
 * is also stored as a flagged word that the next step stages as soon as it carries the step's flag,
 * and a later phase's operand (mLSTM's m) as one that the same step's next phase stages so (where the
 * plan allows it: step GEMMs staged whole, phase 0's on states, no clusters, no group reading another
 * block's units). Flags win at small batches (small_b4) and lose where the operand is large (twice
 * the bytes staged). Direct: at a grid barrier, then nothing staged: each warp loads its share of K of
 * the operand's 16-bit twin straight into the registers its products read (where the plan allows it:
 * 16-bit products, weights held in registers, no clusters; bench/NOTES.md section 100); a backward so
 * loads its d(gates) too, in clusters splitting K as well (section 107). The tile search tries all three. */
enum { CG_HANDOFF_BARRIER = 0, CG_HANDOFF_FLAGS = 1, CG_HANDOFF_DIRECT = 2 };

/* The persistent kernel's shape for one layout, device, batch class and direction. */
typedef struct CgPersist {
    int backward;           /* 0: the forward kernel; 1: the backward */
    int blocks;             /* G: one per multiprocessor at most, a multiple of cluster */
    int warps;              /* warps a block (4, 8, 16): they split each chunk's K; the unit defines RNN_WARPS */
    int cluster;            /* blocks per cluster (launched so: cudaLaunchAttributeClusterDimension);
                             * > 1: the unit defines RNN_CLUSTER and must be built for sm_90a */
    int nw;                 /* sequences per lane in a matrix-product pass (1, 2, 4, 8): 4*nw a pass */
    int nw_class;           /* cg_persist_nw(N) of its batch class: batches of at most 4*nw_class sequences,
                             * but for 8 (the class of 17-32 sequences and the one over 32, seqs_max); nw
                             * may be smaller or larger */
    int64_t seqs_max;       /* the most sequences of its class (cg_persist_class): 4*nw_class, or 0 for
                             * the class of batches over 32 sequences, which has no bound; a kernel
                             * of a bounded class traps on a batch past it (a fused product, CgPersistGemm.fuse,
                             * and items taken one a thread, cg_persist.c one_item, count on it) */
    CgProducts products;    /* CgPersistAsk.products */
    int mma;                /* 1: the products on tensor cores (`mma`, rnn_mv_mma); 0: FFMA (rnn_mv_t) */
    int half;               /* 1: 16-bit weights on chip (fp16 or bf16 products): ldw counts halves */
    int twins;              /* CgPersistAsk.twins */
    int pad;                /* elements after each weight row (RNN_PAD_MMA, _FFMA or _16: persist.cuh) */
    int xpad;               /* floats after each staged fp32 operand row (RNN_PAD_MMA for tf32, else _FFMA;
                             * a 16-bit one takes RNN_PAD_16 halves) */
    int ngemms;             /* step GEMMs */
    CgPersistGemm *gemms;   /* [ngemms] in Plan order */
    int64_t fixed_floats;   /* shared memory before the staging tiles: weights and row maps */
    int64_t kc_max, rpp_max;/* the largest staging chunk and 8*rw */
    int tiles;              /* staging tiles: 1 when every operand is staged whole, else 2 */
    int64_t xs_floats;      /* shared memory of the staging tiles, the largest any GEMM's take */
    int64_t smem;           /* bytes of dynamic shared memory */
    int64_t weight_bytes;   /* the step GEMMs' weights, all blocks together */
    int flags;              /* forward: 1 when step t's state results reach step t+1, and a later phase's
                             * operands that phase, as flagged words (a.flags, persist.cuh rnn_flag_put)
                             * instead of through grid barriers */
    int direct;             /* 1 when some step GEMM loads its operand straight into its fragments
                             * (CgPersistGemm.direct; CG_HANDOFF_DIRECT asked for) */
    int split;              /* backward in clusters: 1 when block r of a cluster keeps the cluster's rows for
                             * the r-th part of K and stages only that part (the unit defines RNN_SPLIT,
                             * not RNN_CLUSTER; persist.cuh rnn_split_finish), 0 when the cluster shares
                             * the staged operand */
    int64_t xch_off;        /* split: floats from the start of shared memory to the exchange areas,
                             * [2][cluster][4*nw][ro] floats */
} CgPersist;

/* 8-byte words a persistent forward with flags needs at a.flags for a batch of N: two slots of
 * [N][S] for every state a step GEMM multiplies, then of [N][width] for every flagged buffer; -1 on
 * overflow. */
int64_t cg_persist_flag_words(const PlanLayout *layout, int64_t N);
/* Is buffer b a later phase's step-GEMM operand that a forward with flags stores as flagged words
 * too (8-byte words, slot t % 2, flag t + 1) for that phase to stage as they arrive? */
int cg_flagged_buffer(const PlanLayout *layout, int b);
/* Does the persistent kernel P read or write a.flags: a forward with flags, or one staging such a
 * buffer from its 16-bit twin, which lives in the buffer's slots there (slot 0, [N][width] halves)? */
int cg_persist_uses_words(const PlanLayout *layout, const CgPersist *P);
/* Sequences per lane for a batch of N: 1, 2, 4 or 8 (a plan may take fewer). */
int cg_persist_nw(int64_t N);
/* The batch class of N sequences, whose batches share one persistent kernel: 0 .. CG_PERSIST_CLASSES-1
 * for at most 4, 8, 16 or 32 sequences, or more. */
enum { CG_PERSIST_CLASSES = 5 };
int cg_persist_class(int64_t N);
/* Plans the persistent kernel for what ask says. A cluster that cannot split K (ask.split) shares the
 * staged operand instead, why then ending "; G1's K (...) not split: <the reason>"; a cluster the
 * layout cannot share (an operand length not a multiple of 4, or staged in chunks that overhang it)
 * plans with clusters of 1, why then ending "; clusters of C refused: <the reason>".
 * Returns 1 when it fits; else 0. Either way why says it in words ("step weights 18.9 MB need
 * 290 KB of shared memory per block ..."). */
int cg_persist_plan(Arena *arena, const PlanLayout *layout, const CgPersistAsk *ask, CgPersist *out, char *why,
                    size_t why_size);
/* What a layer-direction's per-step form overlaps with: nothing, the other direction of its layer
 * (two streams), or its neighbouring layers (a unidirectional stack's wavefront). */
typedef enum CgOverlap { CG_ALONE, CG_BIDIRECTIONAL, CG_WAVEFRONT } CgOverlap;
/* The automatic choice between the backends for a pass (backward: a backward pass) over a batch
 * of N whose persistent kernel fits (measured on an H100, bench/NOTES.md sections 10, 14 and 15):
 * the persistent kernel up to 64 sequences alone and 32 where per-step layers overlap (overlap;
 * persistent kernels take the GPU in turn), on tensor cores above 32 only when the planned kernel
 * (planned; NULL: not planned yet, answered as if it passed 32) takes 32 sequences a pass; its
 * backward up to 32 sequences alone, 16 where per-step layers overlap. Returns 1 for persistent;
 * why says the rule in words. */
int cg_persist_preferred(int64_t N, CgProducts products, int backward, CgOverlap overlap, const CgPersist *planned, char *why,
                         size_t why_size);
/* Registers a thread of P's kernel the step weights it holds in registers take (CgPersistGemm.wregs;
 * 0: none). */
int cg_persist_held_registers(const CgPersist *P);
/* Does backward kernel P (16-bit products) stage every twinned result adjoint it multiplies from its
 * 16-bit twin (CgPersistGemm.x16), so that no fp32 copy of a twinned adjoint is read in its pass
 * (RnnArgs.twins_only may be 1)? 0 for a forward or fp32/tf32 products. */
int cg_persist_twins_staged(const Plan *plan, const CgPersist *P);
/* Does fours, the rule's tile in clusters of 4 planned from ask, yield to pairs (cg_persist_pairs_ask)?
 * A forward's where it holds no step weights in registers and pairs would hold some (bench/NOTES.md
 * section 52); a backward's where ask splits K and fours could not (section 58), the pairs planning
 * in pairs. */
int cg_persist_fours_yield(Arena *arena, const PlanLayout *layout, const CgPersistAsk *ask, const CgPersist *fours);
/* The rule's pairs in place of fours asked for: clusters of 2, splitting K where a backward's pairs
 * do by rule (17-32 sequences). */
CgPersistAsk cg_persist_pairs_ask(const CgPersistAsk *fours);
/* Why a pass of P's direction (forward or backward) takes pairs for the rule's fours, in words ("its
 * clusters of 4 ..."). */
const char *cg_persist_pairs_reason(const CgPersist *P);
/* Do pairs planned for the rule's yielding fours serve (cg_persist_fours_yield): in clusters of 2, and a
 * forward's holding step weights in registers? */
int cg_persist_pairs_serve(const CgPersist *pairs);
/* cg_persist_plan of ask as the runtime builds it on an H100 (rt_persist.c): clusters of 4 on the
 * CG_H100_FOUR_BLOCKS blocks whose clusters it holds at once, or on every multiprocessor without
 * clusters (ask->cluster becomes 1) where those do not fit or come out without clusters; where the
 * size is the rule's (by_rule), pairs (ask->cluster becomes 2, *in_pairs 1) where
 * cg_persist_fours_yield. Used by rnncc dump and emit. */
int cg_persist_h100_plan(Arena *arena, const PlanLayout *layout, CgPersistAsk *ask, int by_rule, CgPersist *P, char *why,
                         size_t why_size, int *in_pairs);
/* The rule's operands loaded straight into registers (CG_HANDOFF_DIRECT) for ask, a pass whose hand-off
 * nothing forces: with fp16 or bf16 products, where the plan then loads some operand so, ask becomes
 * that tile and 1 is returned, else 0 and ask is left alone. A forward (not with its cluster forced) goes
 * unclustered on the fewest blocks that keep a block's work (unless blocks_forced): the searched tile at
 * flashrnn, fastrnns and H = 1024 with 4 and 16 sequences, ahead of the fours' multicast staging in every
 * row measured (bench/NOTES.md sections 100 and 102). A backward keeps its clusters splitting K and its
 * blocks (section 107, training passes: flashrnn's LSTM -10%, small_b4 -4.5%, ds2 -2.5%), except where its
 * barrier plan stages one pass of sequences in waves, which the product already overlaps (deepbench's
 * LSTM and GRU, fp16 and bf16: +1% loading straight). Where 0 is returned (staged), ask goes on its fewest
 * blocks with the same work, unless blocks_forced, in clusters of 4, or planned without the clusters asked
 * (section 119: deepbench's fp16 training pass 18 us faster). The runtime's rule without a search, and rnncc dump's. */
int cg_persist_direct_rule(Arena *arena, const PlanLayout *layout, CgPersistAsk *ask, int cluster_forced, int blocks_forced);
/* The fewer-blocks tile of P planned from ask: the fewest blocks (a multiple of its cluster) that
 * leave each block the same work (every step GEMM's passes and 16-row tiles, or 8-row groups in FFMA,
 * chunks, sequences a pass, and every step group's items a thread), so that fewer blocks stage the
 * operand and meet at the barrier for the same product (bench/NOTES.md section 41: 2-5% on LSTMs whose
 * rows fill the tiles; section 100: a flashrnn backward forced to its fewest, 14%); 0 where none does. */
int cg_persist_fewer_blocks(const PlanLayout *layout, const CgPersistAsk *ask, const CgPersist *P);
/* Blocks per thread-block cluster for a pass over a batch of N by default, measured on an H100
 * (bench/NOTES.md sections 11 and 52): pairs for FFMA products; for tensor-core ones a forward's
 * fours at 9-24 sequences and a backward's fours at 9-16, pairs at 17-32; none for a forward asked to hand off by
 * flags or to load operands directly (handoff: CG_HANDOFF_*), which clusters cannot. The runtime takes pairs where the fours
 * would read the step weights from shared memory and pairs would not (rt_persist.c). */
int cg_persist_cluster(int64_t N, CgProducts products, int backward, int handoff);
/* Does the rule's tile of a pass over a batch of N with `products` have its clusters split K
 * (CgPersistAsk.split)? A backward's at 17-32 sequences, on tensor cores at 9-32 (bench/NOTES.md
 * sections 32-33 and 58). */
int cg_persist_split(int64_t N, CgProducts products, int backward);
/* A cluster size given as text ("1", "2" or "4": RNNCC_PERSIST_CLUSTER, rnncc emit --cluster); 0 for
 * anything else. */
int cg_persist_cluster_parse(const char *text);
/* Warps a block given as text ("4", "8" or "16": RNNCC_PERSIST_WARPS, rnncc emit --warps); 0 for
 * anything else. */
int cg_persist_warps_parse(const char *text);
/* A staging chunk bound given as text (256 to 65536: RNNCC_PERSIST_CHUNK, rnncc emit --chunk); 0 for
 * anything else. */
int64_t cg_persist_chunk_parse(const char *text);
/* Sequences a pass at most given as text ("4", "8", "16" or "32": RNNCC_PERSIST_SEQS, rnncc emit
 * --seqs); 0 for anything else. */
int cg_persist_seqs_parse(const char *text);
/* A hand-off given as text ("flags", "barrier" or "direct": RNNCC_PERSIST_HANDOFF, rnncc emit
 * --handoff): CG_HANDOFF_FLAGS, CG_HANDOFF_BARRIER or CG_HANDOFF_DIRECT; -1 for anything else. */
int cg_persist_handoff_parse(const char *text);
/* A cap on the blocks given as text (1 to 1024: RNNCC_PERSIST_BLOCKS, rnncc emit --blocks; more than
 * the device's multiprocessors plans them all); 0 for anything else. */
int cg_persist_blocks_parse(const char *text);
/* A cap on the registers of held weights given as text ("0" to "255": RNNCC_PERSIST_WREGS, rnncc emit
 * --wregs), as CgPersistAsk.wregs takes it: -1 for "0" (none), R for R; 0 for anything else. */
int cg_persist_wregs_parse(const char *text);
/* A cap on the staging waves given as text ("0", "2" or "4": RNNCC_PERSIST_WAVES, rnncc emit
 * --waves), as CgPersistAsk.waves takes it: -1 for "0" (none), 2 or 4; 0 for anything else. */
int cg_persist_waves_parse(const char *text);
/* What the parsers above take, in words, for the messages that refuse other values (the
 * environment variables' in runtime/rt_model.c, rnncc emit's options in compiler/cli_emit.c). */
#define CG_PERSIST_CLUSTER_VALUES "1, 2 or 4"
#define CG_PERSIST_WARPS_VALUES "4, 8 or 16"
#define CG_PERSIST_CHUNK_VALUES "a number from 256 to 65536"
#define CG_PERSIST_SEQS_VALUES "4, 8, 16 or 32"
#define CG_PERSIST_HANDOFF_VALUES "flags, barrier or direct"
#define CG_PERSIST_BLOCKS_VALUES "a number from 1 to 1024"
#define CG_PERSIST_WREGS_VALUES "a number from 0 to 255"
#define CG_PERSIST_WAVES_VALUES "0, 2 or 4"
/* The request for a pass over a batch of N on an H100 (CG_H100_*), in clusters of cluster blocks
 * (0: cg_persist_cluster's rule, split as cg_persist_split says): what the CLI plans without a GPU. */
CgPersistAsk cg_persist_h100_ask(int64_t N, int backward, CgProducts products, int cluster);
/* Do a and b plan the same kernel shape (blocks, warps, cluster, sequences a pass, chunks, results
 * kept, operands staged from 16 bits, flags)? The tile search runs each shape once. */
int cg_persist_same_tile(const CgPersist *a, const CgPersist *b);
/* P's tile in words ("132 blocks of 8 warps in clusters of 2, 16 sequences a pass, operands staged
 * whole", "... staged whole in 4 waves" where CgPersistGemm.waves), into buf. */
void cg_persist_tile_text(const CgPersist *P, char *buf, size_t size);
/* " in W waves" when every step GEMM's operand is staged in W waves (CgPersistGemm.waves), " (n of
 * m in waves)" when some are, else "", into buf. */
void cg_persist_waves_text(const CgPersist *P, char *buf, size_t size);
/* Writes the persistent kernel's name (rnncc_<cell>_p, backward rnncc_<cell>_pb) into buf; its
 * length, or -1. */
int cg_persist_kernel_name(const Plan *plan, int backward, char *buf, size_t size);
/* Writes the persistent unit of a planned kernel (P->backward says which): prelude, dimensions,
 * ops, helpers, kernel.
 * Returns 1, or 0 with the reason in diags. */
int cg_emit_persistent(Arena *arena, const Plan *plan, const PlanLayout *layout, const CgPersist *P, StrBuf *out,
                       Diags *diags);
/* The persistent helpers (codegen/persist.cuh, embedded by the Makefile). */
extern const char cg_persist_text[];
/* The conversion kernels (codegen/convert.cuh, embedded by the Makefile), the body of cg_emit_convert's
 * unit, each behind the RNN_CONVERT_* switch the unit defines. */
extern const char cg_convert_text[];

#endif
