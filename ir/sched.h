/* The schedule ("plan") of a cell: which matrix products become which GEMMs over which
 * stacked weights, which element-wise nodes fuse into which kernel, what must be stored
 * between kernels, and the packed parameter layout. Backend-neutral: the cuBLAS-per-step
 * runtime, the CPU plan executor and (later) persistent kernels all read the same plan.
 *
 * Execution model. A layer runs two programs. The hoisted program runs once over all
 * T*N columns (every step and sequence at once); the step program runs T times over the
 * N sequences. Each program is a chain of phases:
 *     group 0, GEMMs of phase 0, group 1, GEMMs of phase 1, ..., group K
 * where group k is one fused element-wise kernel (possibly empty) and the GEMMs of phase k
 * read operands that group k (or a leaf) produced. Planned with SCHED_POST_PROGRAM, a third
 * program, the post program, runs once after the step loop over every step's columns (step t's
 * sequence n at column t*N+n): the step products no state depends on (a readout, y = V @ h'),
 * and the element-wise nodes after them that feed outputs only; the step values it reads are kept
 * for every step (SchedBuffer.all_steps). */
#ifndef RNNCC_SCHED_H
#define RNNCC_SCHED_H
#include "ir.h"

typedef enum { SCHED_NONE = -1, SCHED_HOIST = 0, SCHED_STEP = 1, SCHED_POST = 2 } SchedProgram;
enum { SCHED_PROGRAMS = 3 };

/* A program's letter in kernel and group names: H hoisted, K step, P post. */
static inline char sched_program_letter(SchedProgram prog) { return prog == SCHED_HOIST ? 'H' : prog == SCHED_POST ? 'P' : 'K'; }
/* A program's name in dumps and comments: "hoisted", "step" or "post". */
static inline const char *sched_program_name(SchedProgram prog) {
    return prog == SCHED_HOIST ? "hoisted" : prog == SCHED_POST ? "post" : "step";
}

/* Per IR node: where and when it is computed. */
typedef struct SchedNode {
    SchedProgram program; /* SCHED_NONE for leaves (input, state, param, const) */
    int group;            /* element-wise: the group computing it; matvec: its GEMM phase */
    int gemm;             /* matvec: index into Plan.gemms; else -1 */
    int block;            /* matvec: its block (row range) within the GEMM's stack */
    int stored;           /* element-wise: written to a buffer because a later group, a GEMM,
                             or the other program reads it */
    int buffer;           /* stored values and GEMM operands: index into Plan.buffers; else -1 */
} SchedNode;

/* One GEMM: products sharing an operand in the same phase, weights stacked by rows. */
typedef struct SchedGemm {
    SchedProgram program;
    int phase;
    IrRef operand;      /* the vector every product multiplies */
    int nproducts;
    IrRef *products;    /* matvec nodes in row order (parameter declaration order) */
    int stacked;        /* 1: the weights are one contiguous [sum rows, cols] block */
    int out_buffer;     /* index into Plan.buffers of its [columns][rows] result */
} SchedGemm;

/* A step result a group writes: a state's next value or an output, for every sequence
 * still running (finished sequences keep their state and get zeros in the output). Step groups
 * write states and outputs; post groups write the outputs they compute. */
typedef enum { WRITE_STATE, WRITE_OUTPUT } SchedWriteKind;
typedef struct SchedWrite {
    SchedWriteKind kind;
    int index;          /* the state or output */
    IrRef node;         /* the value written */
} SchedWrite;

/* One fused element-wise kernel: its nodes in topological order and the step results it writes.
 * A group may have writes and no nodes (a result that a GEMM or a leaf already holds). */
typedef struct SchedGroup {
    SchedProgram program;
    int index;          /* the group number k within its program */
    int nnodes;
    IrRef *nodes;
    int nwrites;
    SchedWrite *writes;
} SchedGroup;

typedef enum {
    BUF_GEMM_OUT,       /* a GEMM's result: per column, the stacked rows */
    BUF_VALUE,          /* a stored element-wise value (or a GEMM operand built in a group) */
} SchedBufferKind;

/* A device buffer the plan needs besides inputs, outputs, states and parameters.
 * Hoisted and post buffers hold T*N columns, step buffers N (reused every step), or T*N where
 * all_steps. */
typedef struct SchedBuffer {
    SchedBufferKind kind;
    SchedProgram program;
    IrRef node;         /* BUF_VALUE: the node; BUF_GEMM_OUT: the GEMM's first product */
    int gemm;           /* BUF_GEMM_OUT: the GEMM; else -1 */
    int all_steps;      /* a step buffer the post program reads: every step's N columns kept */
} SchedBuffer;

/* A contiguous item of the packed parameter buffer: a stack, a lone parameter, or a run of lone
 * parameters back to back (the projection fold's, where the cell as written stacks them:
 * ir_fold_pack_like), each item aligned to SCHED_PACK_ALIGN. */
typedef struct SchedPackItem {
    int gemm;           /* a stacked GEMM's index, or -1 */
    int param;          /* a lone parameter's index, or -1 */
    const int *run;     /* neither: the run's parameters, in order */
    int nrun;
} SchedPackItem;

typedef struct Plan {
    const IrCell *cell;
    SchedNode *node;            /* [cell->nnodes] */
    SchedGemm *gemms;           /* hoisted GEMMs first (by phase), then step GEMMs, then post GEMMs */
    int ngemms;
    SchedGroup *groups;         /* non-empty groups, hoisted first, each program in order */
    int ngroups;
    SchedBuffer *buffers;
    int nbuffers;
    int phases[SCHED_PROGRAMS]; /* GEMM phases of the hoisted, the step and the post program */
    SchedPackItem *pack;        /* packed layout, in order */
    int npack;
    int *param_gemm;            /* per parameter: the stacked GEMM holding it, or -1 */
    IrRef *param_fold;          /* per parameter: a matvec whose adjoint is the parameter's at every
                                   step (a bias added straight to its sum), so that its gradient is
                                   the sum of the matvec's adjoint columns; else IR_NONE */
    IrRef *sum_root;            /* per node: the node whose adjoint it has at every step: the top of the
                                   additions used once that it reaches, each taking it once (the
                                   LSTM's W_i x and U_i h: their sum), or the node itself */
} Plan;

/* The parameter of GEMM j's first block: its stacked weights start where this parameter does. */
static inline int sched_gemm_param(const Plan *p, int j) {
    const IrCell *c = p->cell;
    return c->nodes[c->nodes[p->gemms[j].products[0]].args[0]].index;
}

/* How many parameters packed item it holds, back to back. */
int sched_pack_count(const Plan *p, const SchedPackItem *it);
/* The b-th of them (a stack's in block order). */
int sched_pack_param(const Plan *p, const SchedPackItem *it, int b);

/* Per parameter of c, Plan.param_fold's value (sched_fold.c); NULL when out of memory. */
IrRef *sched_param_folds(Arena *arena, const IrCell *c);
/* Per node of c, Plan.sum_root's value (sched_fold.c); NULL when out of memory. */
IrRef *sched_sum_roots(Arena *arena, const IrCell *c);

/* Whether plan p has any GEMM or group in program prog. */
int sched_has_program(const Plan *p, SchedProgram prog);
/* Whether GEMM j is a post GEMM of one product whose result only a post group of no nodes copies to an output
 * (a folded LSTMP's y = P z), and no GEMM multiplies: then sets *group and *output, and the product could be
 * written to the output directly where the group's copy is the identity (forward direction, no lengths). */
int sched_post_copy(const Plan *p, int j, int *group, int *output);

/* The GEMM that alone reads the cell's input: the one GEMM whose operand it is, hoisted, where no other node reads
 * it and no group writes it as a result, so that its backward product writes every element of the input's
 * adjoint; -1 where there is none. */
int sched_input_gemm(const Plan *p);

/* Builds the plan of a checked cell; NULL (with an error in diags) if it cannot be scheduled. */
Plan *sched_plan(Arena *arena, const IrCell *cell, Diags *diags);
/* sched_plan with options: SCHED_POST_PROGRAM moves output-only products into the post program
 * (sched_plan passes it; 0 gives the plan with every product of the step in the step). */
enum { SCHED_POST_PROGRAM = 1 };
/* At most this many buffers a plan: the generated kernels' argument block holds that many (runtime/rnn_args.h's
 * RNN_MAX_BUFFERS, which equals it); sched_plan refuses a cell that needs more, at the cell's name. */
enum { SCHED_MAX_BUFFERS = 32 };
Plan *sched_plan_opts(Arena *arena, const IrCell *cell, Diags *diags, unsigned flags);

/* The plan with dimensions bound: sizes and offsets in elements. */
typedef struct PlanLayout {
    const Plan *plan;
    const int64_t *dimval;      /* per cell dimension */
    int64_t *param_offset;      /* per parameter: offset in the packed buffer */
    int64_t *param_rows, *param_cols; /* per parameter (vectors: cols = 1) */
    int64_t packed_size;        /* elements, including alignment padding */
    int64_t *gemm_rows;         /* per GEMM: stacked rows (the M of the GEMM) */
    int64_t *gemm_cols;         /* per GEMM: the operand's length (the K) */
    int64_t *block_row;         /* per IR node (matvecs): first row of its block in its GEMM */
    int64_t *buffer_width;      /* per buffer: elements per column */
    int64_t *acc_offset;        /* per vector parameter: its gradient accumulator's offset in
                                   rows (its [N][rows] block starts at N * acc_offset); -1 for matrices
                                   and folded vectors (Plan.param_fold) */
    int64_t acc_rows;           /* rows of all vector parameters together */
} PlanLayout;

/* Elements between packed items: every item starts at a multiple of this (64 bytes in fp32). */
enum { SCHED_PACK_ALIGN = 16 };

/* Binds dimensions: computes every offset and size. Returns NULL when a size overflows
 * 2^59 elements (reported into diags: its bytes, 8 an element in the double reference, would not fit an
 * int64_t) or memory runs out. */
PlanLayout *sched_layout(Arena *arena, const Plan *plan, const int64_t *dimval, Diags *diags);

/* Writes the plan readably (`rnncc dump --schedule`); with a layout, also offsets and sizes. */
void sched_dump(const Plan *plan, const PlanLayout *layout, StrBuf *out);
/* Writes the plan as Graphviz dot: GEMMs and fused kernels as boxes, data flow as edges. */
void sched_dump_dot(const Plan *plan, StrBuf *out);

#endif
