/* Internal to codegen/: the generator state and the helpers the forward (cg_forward.c) and
 * backward (cg_backward.c) kernel generators share. Key idea: every value a kernel does not
 * compute itself is read (and its adjoint sent back) through one function, cg_value_expr,
 * which holds the plan's buffer conventions. */
#ifndef RNNCC_CG_GEN_H
#define RNNCC_CG_GEN_H
#include "cg.h"
#include "emit.h"

enum { NAME_SIZE = 256, GUARD_SIZE = NAME_SIZE + 32, EXPR_SIZE = 512 };

typedef struct Gen {
    const Plan *plan;
    const PlanLayout *L;
    const IrCell *c;
    Diags *diags;
    StrBuf *out;          /* where the current kernel's body goes */
    char *computed;       /* per node: computed by the current group */
    char *loaded;         /* per node: a local holds it in the current kernel */
    char *listed;         /* per node, then per GEMM: already named in the kernel's comment */
    char *sent;           /* per node (backward): an adjoint accumulator d<id> exists in the kernel */
    int *first;           /* per node: the step group (index + 1) of a persistent kernel whose first item's
                             value it loads early into a register (cg_first_name; cg_persist.c), which that
                             item's body takes instead of loading it; 0: none */
    char *first_seed;     /* per node a group writes to an output (persistent backward): the thread's first
                             item's adjoint of that output is in register cg_first_seed_name */
    int group;            /* the current group (cg_group_begin) */
    int uses_col;         /* the current body reads or writes at this step's column */
    int post;             /* the current group is the post program's: step and post buffers at column tc */
    int64_t group_width;  /* J of the current group */
    const CgPersist *persist; /* a persistent forward kernel: its step GEMMs' results in shared memory */
    const CgPersist *unit;    /* the persistent kernel being emitted, forward or backward (NULL: a per-step unit) */
    int clear_seeds;      /* per-step backward kernels: zero each dstate_next element read (cg.h) */
    uint64_t fresh_states; /* persistent backward: the states (bit k, k < 64) whose adjoint slot the current group
                             writes first in a step, unzeroed where no sequence ends: their homes read as 0 unless
                             a.lengths (cg_persist.c first_adjoint_writer) */
    uint64_t seed_states; /* persistent backward: the states (bit k) whose seed d(k') the thread's first item takes
                             from register rnn_seed<k> where rnn_seed<k>_set, which the slot's one writer sets
                             (cg_persist.c seeded_state) */
    int twins;            /* 1: kernels write the 16-bit twins of the GEMM inputs they store whole (RnnArgs.state16,
                             dbuf16): every per-step unit (NULL twins skip them), persistent ones when planned so */
    int split_twins;      /* 1: kernels write the tf32x3 split twins of what the next step multiplies (RnnArgs.state3,
                             dbuf3): the per-step units only (NULL twins skip them) */
    int last_line;        /* source line of the last comment, to quote each line once */
    int line_lo, line_hi; /* the source lines the cell's nodes are on, lo..hi (0: none) ... */
    const char **line_at; /* ... and where each starts in diags->src: [line - line_lo] (NULL: no source) */
} Gen;

/* The bf16 argument of the 16-bit twins a kernel stores, as code: the literal of its products' precision in a
 * persistent unit with 16-bit products (its prologue traps on another args.bf16), else "a.bf16". */
static inline const char *cg_twin_bf16(const Gen *g) {
    return g->unit && g->unit->half ? (g->unit->products == CG_BF16 ? "1" : "0") : "a.bf16";
}
/* Whether state k is in a set of states (Gen.fresh_states, Gen.seed_states: bit k, none past the 64th). */
static inline int cg_state_in(uint64_t set, int k) { return k >= 0 && k < 64 && (set >> k & 1); }
/* Whether group grp reads r without computing it (an operand of one of its nodes, or a value it writes). */
int cg_group_reads(const IrCell *c, const SchedGroup *grp, IrRef r);
/* The register of group gi's first-item value of node r (Gen.first): q<K index>_<local>. */
void cg_first_name(const struct Gen *g, int gi, IrRef r, char *buf, size_t size);
/* The register of group gi's first-item adjoint of the output node r writes (Gen.first_seed): qy<K index>_<local>. */
void cg_first_seed_name(const struct Gen *g, int gi, IrRef r, char *buf, size_t size);
/* The adjoint of output w at this step's item (col, j) as code: a.dy[w][col * a.ldy[w] + j] (a backward's
 * seed; its loads in cg_backward.c and cg_persist.c); returns buf. */
const char *cg_output_adjoint(int w, char *buf, size_t size);
/* A node's source name: its declaration's for leaves, its statement's otherwise, or NULL. */
const char *cg_node_name(const IrCell *c, IrRef r);
/* The local holding a node's value (kind 'v': v<id>[_name]) or adjoint (kind 'd': d<id>[_name]);
 * a primed name h' becomes v<id>_h_next. */
void cg_local_name(const IrCell *c, IrRef r, char kind, char *buf, size_t size);
/* A dimension as code: RNN_DIM_<name>, or the literal's digits. */
const char *cg_dim_code(const IrCell *c, int d, char *buf, size_t size);
/* A dimension as text for comments (80 bytes at least). */
const char *cg_dim_text(const IrCell *c, int d, char *buf);
/* A node's vector length with the layout's dimensions. */
int64_t cg_node_len(const Gen *g, IrRef r);
/* Names a value in comments: its source name, else %id. */
void cg_put_value(const IrCell *c, IrRef r, StrBuf *out);
/* A GEMM's stacked rows for comments: "4H" when every block has the same rows, else "M+H". */
void cg_put_rows(const IrCell *c, const SchedGemm *gm, StrBuf *out);
/* Writes a node as an expression over its operands' names ("%17 + b_i", "tanh(c')", "W_i @ x"). */
void cg_put_expr(const IrCell *c, IrRef r, StrBuf *out);
/* Emits `// label   item, item, ...` from newline-separated items (joiner NULL: one a line). */
void cg_emit_list(StrBuf *out, const char *label, const StrBuf *items, const char *joiner);
/* Quotes the source line of node r once, before the first node emitted on it. */
void cg_line_comment(Gen *g, IrRef r);
/* The first and last source lines of a group's nodes (0 when unknown). */
void cg_group_lines(const Gen *g, const SchedGroup *grp, int *lo, int *hi);

/* The expression of the value (adjoint 0) or of the adjoint's home (adjoint 1: dx, dstate_prev,
 * dparam, dbuf) of a node the current group does not compute, and what it is. */
void cg_value_expr(Gen *g, IrRef r, int adjoint, char *expr, size_t size, StrBuf *what);
/* An operand as code: a float literal, or a local's name (loading the value once). */
int cg_operand(Gen *g, IrRef r, char *buf, size_t size);
/* Computes one element-wise node into its local (and, with store, into its buffer when stored). */
int cg_emit_node(Gen *g, IrRef r, int store);
/* The guard for values of node r's length in a kernel J wide: "" when none is needed. */
const char *cg_guard(const Gen *g, IrRef r, int64_t J, char *buf, size_t size);
/* Item i of a group: its nodes, then the values its writes take. */
IrRef cg_item_node(const SchedGroup *grp, int i);
/* Where item start is the group's first of its vector length (*len), opens that length's block (a blank line before
 * all but the first, then its guard's brace if it needs one) and returns 1 (a guard opened: cg_close it) or 0;
 * returns -1, emitting nothing, where an earlier item has that length. */
int cg_open_length(Gen *g, const SchedGroup *grp, int start, int64_t J, int64_t *len);
/* The values item i of a group reads into args (at most 3): a node's arguments, or the value a
 * write takes; returns how many. */
int cg_item_reads(const IrCell *c, const SchedGroup *grp, int i, IrRef args[3]);
/* The element-wise bodies load every value they read before any math, then RNN_ISSUED (the
 * prelude's empty asm) taking the loaded locals, so that the loads go out together: left to
 * the compiler, each sinks to its use, behind the math and the division's slow-path branch
 * before it (bench/NOTES.md section 30). CgIssued holds the locals (node, kind 'v', 'd' or 'o'; 'q':
 * the current group's first-item register, cg_first_name) loaded since the last RNN_ISSUED. */
enum {
    CG_ISSUED_OPERANDS = 16, /* operands one RNN_ISSUED takes */
    CG_ISSUED_MAX = 64       /* locals a CgIssued holds before it must be emitted */
};
typedef struct {
    IrRef ref[CG_ISSUED_MAX];
    char kind[CG_ISSUED_MAX];
    int n;
} CgIssued;
/* Adds local kind<r> to iss (once), emitting the RNN_ISSUED of a list it fills. */
void cg_issued_add(Gen *g, CgIssued *iss, char kind, IrRef r);
/* Emits RNN_ISSUED taking the locals in iss, 16 at most to one (none: nothing), and empties it. */
void cg_issued_emit(Gen *g, CgIssued *iss);
/* Loads every value that the items [start, end) of grp of length len read from memory (a local
 * each, once), adding them to iss. */
void cg_load_reads(Gen *g, const SchedGroup *grp, int start, int end, int64_t len, CgIssued *iss);
/* The dimension whose length is the group's width J, or -1. */
int cg_group_jdim(const Gen *g, int group);

/* Sets up a generator over a laid-out plan writing into out; 0 (reported) on an unusable name or no memory. */
int cg_gen_init(Gen *g, Arena *arena, const Plan *plan, const PlanLayout *layout, StrBuf *out, Diags *diags);
/* The prelude, the bound dimensions and the cell's element-wise ops: what every unit starts with. */
void cg_emit_preamble(Gen *g);
/* Resets the per-kernel state for group gi: which nodes it computes, nothing loaded yet. */
void cg_group_begin(Gen *g, int gi);
/* The forward body of group gi (its nodes and writes for one item) into body, at indent. */
int cg_emit_forward_body(Gen *g, int gi, StrBuf *body, int indent);
/* A step group's item after n and j are set: the ended-sequence branch (`continue`s), pos and
 * col when the body uses them, then the body (from cg_emit_forward_body). */
void cg_emit_step_item(Gen *g, int gi, StrBuf *body);
/* The position and column an item of step t (code: "a.t", or a post kernel's "t") reads, for which
 * ("this step reads", ...) in the comment: `pos` and `col`, from `len` and `n`. */
void cg_emit_position(StrBuf *out, const char *t, const char *which);
/* A post kernel's item i of the steps a.t .. a.t_end-1 decoded into (t, n, j) and its column tc of step and post
 * buffers (J's dimension code jd), forward and backward alike. */
void cg_emit_post_decode(StrBuf *out, const char *jd);
/* In a persistent forward kernel with flags (g->persist): does a step GEMM stage state k, so that each
 * step also stores it as flagged words (rnn_flags_next<k>)? */
int cg_persist_flagged(const Gen *g, int k);
/* ... and does that GEMM stage it in 16 bits, so that its flagged words are 4-byte words of 16-bit
 * values (rnn_flag_put16)? */
int cg_persist_flagged16(const Gen *g, int k);
/* In a persistent forward kernel with flags: is buffer b a later phase's GEMM operand, so that its
 * stores also go out as flagged words (rnn_bflags<b>, cg_flagged_buffer)? */
int cg_persist_buffer_flagged(const Gen *g, int b);
/* In a persistent forward kernel at barriers: is buffer b such an operand staged from 16 bits, so that
 * its stores also go out as its 16-bit twin in its flagged words' slots (rnn_b16_<b>)? */
int cg_persist_buffer16(const Gen *g, int b);
/* In a persistent forward kernel: the expression of GEMM q's result, stacked block `block`, at sequence n
 * and element j of this block's own rows, read from where the block's product left it (shared memory:
 * rnn_res<gemm>, or the warps' partial sums themselves where CgPersistGemm.fuse), from global memory
 * (the expression global) for sequences past the kept ones. */
void cg_persist_result_expr(const CgPersistGemm *q, const CgPersist *P, int block, const char *global, char *expr,
                            size_t size);
/* Emits the persistent kernel, forward or backward as P says (cg_persist.c). Returns 1, or 0 on an error. */
int cg_emit_persist_kernel(Gen *g, const CgPersist *P);
/* The persistent planner's helpers the emitter shares (cg_persist_plan.c): */
/* Rows of stacked block b of GEMM gm (its parameter's rows). */
int64_t cg_persist_block_rows(const PlanLayout *L, const SchedGemm *gm, int b);
/* Floats between two sequences' partial sums of rpp rows (persist.cuh's LDR): rpp padded to 4
 * modulo 16 for the mma product, 8 for FFMA, so that no two lanes share a bank. */
int64_t cg_persist_red_ld(int64_t rpp, int mma);
/* The 16-row tiles of a tensor-core pass of 8*rw rows (persist.cuh rnn_mv_mma's MT). */
int cg_persist_mma_tiles(int rw);
/* Are a backward's weight rows (cols elements) whole 16-byte pieces (rnn_load_transposed)? */
int cg_persist_rows_in_pieces(const CgPersist *P, int64_t cols);
/* Does a backward's GEMM q copy its 16-bit held weights as they lie and transpose them into registers
 * (every block's columns whole 16-byte pieces: rnn_copy_columns16, rnn_wfrag_load_t)? */
int cg_persist_copies_columns(const CgPersist *P, const CgPersistGemm *q, int64_t cols);
/* The plan's group of program prog and index k, or -1. */
int cg_persist_find_group(const Plan *p, int prog, int k);
/* Does group gi read a result of a phase-`phase` step GEMM computed by another block? */
int cg_persist_reads_foreign_rows(const PlanLayout *L, int gi, int phase);
/* Does a step group read or write a state of another length than its J (blocks' shares differ)? */
int cg_persist_states_cross_blocks(const PlanLayout *L);
/* Words a sequence of one slot of each flagged quantity before state k's (k < nstates) or buffer
 * k - nstates's; -1 on overflow. */
int64_t cg_persist_flag_words_before(const PlanLayout *L, int k);
/* " in clusters of C" when P has clusters, else "" (into buf). */
const char *cg_persist_in_clusters(const CgPersist *P, char buf[48]);

/* The backward body of group gi (recompute, seeds, sweep, sends for one item) into body, at indent. */
int cg_emit_backward_body(Gen *g, int gi, StrBuf *body, int indent);
/* A step group's backward item after n and j are set: the ended-sequence branch (`continue`s),
 * pos and col when the body uses them, then the body (from cg_emit_backward_body). */
void cg_emit_backward_step_item(Gen *g, int gi, StrBuf *body);
/* Emits the backward kernel of group gi (cg_backward.c). Returns 1, or 0 on an error. */
int cg_emit_backward_kernel(Gen *g, int gi);

/* The kernel name "rnncc_<cell>_<kind><h|s><k>" of plan group `group` (kind "" forward, "b"
 * backward) into buf; its length, or -1 when it does not fit or group is out of range. */
int cg_name_kernel(const Plan *plan, int group, const char *kind, char *buf, size_t size);
/* A group's work items: N*J, times T for a hoisted forward kernel; -1 on overflow. */
int64_t cg_items(const PlanLayout *layout, int group, int64_t T, int64_t N, int backward);

/* Emits a kernel's body into its own buffer first (so the prologue declares only what the body
 * uses): emit(g, grp, J) with g->out = body at the given indentation. 0 (body freed) on failure. */
int cg_emit_body(Gen *g, StrBuf *out, StrBuf *body, int indent, int (*emit)(Gen *, const SchedGroup *, int64_t),
                 const SchedGroup *grp, int64_t J);
/* Opens a kernel: its signature, RNN_AFTER_PREDECESSOR() (the launch contract, cg.h) and the grid-stride
 * loop over items = items_per_element * J. */
void cg_open_kernel(StrBuf *out, const char *kname, const char *items_per_element, const char *J);

#endif
