/* Runtime internals shared by the runtime's files: the program and model structures,
 * the checked-call macros, and the device memory regions of a forward pass. */
#ifndef RNNCC_RT_INTERNAL_H
#define RNNCC_RT_INTERNAL_H
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "ir/fold_projection.h"
#include "ir/ir.h"
#include "codegen/cg.h"
#include "ir/sched.h"
#include "rnn_args.h"
#include "rnncc.h"
#include "rt_cache.h"
#include "rt_calls.h"
#include "rt_spans.h"
#include "rt_gemm.h"
#include "rt_nvrtc.h"

struct rnncc_program {
    Arena arena;
    char *source;         /* malloc'd copy */
    size_t len;
    char *name;           /* malloc'd */
    IrModule *module;     /* NULL after errors */
    char *log;            /* malloc'd rendered diagnostics */
};

/* Kernels of one generated translation unit (one per distinct dimension binding). */
typedef struct RtModule {
    cudaLibrary_t lib[2];       /* the unit's forward and backward parts (cg_emit_unit), compiled apart */
    cudaKernel_t *kernels;      /* per plan group */
    cudaKernel_t *bkernels;     /* per plan group: its backward */
} RtModule;

/* One generated source on its way to a CUDA library (rt_build.c): its cache key, then the CUBIN,
 * from the cache or from NVRTC on a thread of its own. */
typedef struct RtBuild {
    RtNvrtcJob job;             /* the source (the caller's, alive until rt_build_free), the target, the name in
                                   NVRTC's messages; the compile where the cache missed (joined by rt_build_wait
                                   or rt_build_free) */
    char key[33];
    int have_key, from_cache;
    void *bin;                  /* malloc'd CUBIN */
    size_t len;
} RtBuild;

/* The persistent kernel of one layout, batch class and pass (codegen/cg.h), built on first use. */
typedef struct RtPersist {
    int state;                  /* 0: not tried; 1: ready; -1: not possible (why says) */
    CgPersist plan;
    cudaLibrary_t lib;
    cudaKernel_t kernel;
    int from_cache;
    char why[512];             /* the plan in words, and why clusters or a split were refused */
    char tile[384];             /* how the tile was chosen, in words ("" before the build) */
    int tried;                  /* tiles the search built and timed (0: none, the rule's or the cached choice) */
    CgPersist rule_plan;        /* the tile the rule plans without a search: what the automatic choice
                                 * judges (cg_persist_preferred), so that it hangs neither on the search's
                                 * pick nor on which batch of the class came first (the rule's own
                                 * clusters, before build's fallback from fours to pairs) */
} RtPersist;

/* Batch classes of the persistent kernel (cg_persist_class). */
enum { RT_PERSIST_CLASSES = CG_PERSIST_CLASSES };

/* One layer-direction: which layout and module it uses and where its weights start. */
typedef struct RtUnit {
    int layer, dir;
    const PlanLayout *layout;
    const RtModule *module;
    int64_t weight_offset;      /* floats from the start of the weight buffer */
} RtUnit;

/* Byte offsets of everything a pass keeps in the workspace or the reserve. Slots are units
 * (layer-directions) in training, directions in inference (reused layer after layer). */
typedef struct RtRegions {
    int training;
    int64_t T, N;
    size_t workspace, reserve;  /* totals in bytes */
    size_t lengths;             /* workspace: [N] ints */
    int64_t flag_words;         /* a persistent forward's flagged state words a lane (cg_persist_flag_words), or 0
                                   where none can run (the cuBLAS backend, or the rule's batch limit) */
    size_t flags[2];            /* workspace, per lane: where those words start (16 bytes more, for alignment) */
    /* 16-bit GEMM operands (RNNCC_FP16, RNNCC_BF16; rt_half.c), else 0: the weights' copy (keep: the
     * reserve in training), and per lane a scratch for each of a GEMM's two operands (workspace; A: only
     * lane 0 in training, for the weight gradients) */
    size_t half_weights;
    size_t half_x;              /* layer 0's input rounded to 16 bits (training: reserve, else workspace; rt_half_input) */
    size_t half_ops[2][2];
    int64_t half_len[2];        /* elements of each scratch A, B (0: none) */
    /* RNNCC_TF32X3 (rt_x3.c), else 0: the weights' split copy (workspace: each pass splits the weights it
     * multiplies), and per lane a scratch of x3_len floats for each of a GEMM's operands */
    size_t x3_weights;
    int64_t x3_weights_len;     /* floats: 3 for each weight of each layer-direction's GEMMs, and 32 a block to align
                                   it (rt_x3_weights_len) */
    size_t x3_ops[2][2];
    int64_t x3_len;
    /* fp32 where the forward runs per step (rt_wt.c), else 0: the step GEMMs' weight blocks transposed (workspace) */
    size_t wt_weights;
    int64_t wt_weights_len;     /* floats (rt_wt_weights_len) */
    int summed;                 /* training where no persistent forward may run (rt_persist_considered), in the
                                   16-bit modes or past 64 sequences: step GEMM results add into their hoisted
                                   partners' columns (rt_sums_values) */
    int slots;
    size_t *buf;                /* [slots][nbuffers]: plan buffers (keep: reserve in training) */
    size_t *state;              /* [slots][nstates]: state slots, T+1 (training) or 2 of [N][S] */
    size_t *layer_out;          /* inference: 2 ping-pong buffers; training: layers - 1 (reserve) */
    /* training only */
    size_t *dbuf;               /* reserve [units][nbuffers]: adjoints shaped like buf */
    /* 16-bit twins (rt_half.c; RnnArgs.state16, dbuf16, buf16), RT_NO_TWIN where none: of the multiplied
     * states' slots (keep, [slots][nstates]), of the adjoints the kernels store whole (reserve,
     * [units][nbuffers]) and of the multiplied values' buffers (keep, [slots][nbuffers]; cg_value_twinned),
     * laid out as their fp32 originals */
    size_t *state16;
    size_t *dbuf16;
    size_t *buf16;
    /* tf32x3's split twins (rt_x3.c; RnnArgs.state3, dbuf3), RT_NO_TWIN where none: one step's columns of
     * the multiplied states (workspace, [slots][nstates]) and of the step buffers' adjoints the kernels
     * store whole (workspace, [units][nbuffers]), 3 floats a value */
    size_t *state3;
    size_t *dbuf3;
    size_t *dparam;             /* reserve [units]: vector-parameter accumulators, acc_rows x N */
    size_t *dstate;             /* workspace [lanes][nstates]: three [N][S] slots (per step: two, ping-pong); a lane
                                   per direction, or per layer parity in a wavefront */
    size_t dx_dir[2];           /* workspace: per direction [T*N][input] input adjoints (bidirectional) */
    size_t fold_z[2], fold_add[2]; /* workspace, per lane, where folded (rt_fold.c): the folded state's final
                                      value [N][S], and the entry's addend [N][rows] */
    size_t fold_s016;           /* workspace, folded in fp16 and bf16: [units][N][rows of P] 16-bit values, each unit's
                                   s_0 rounded by its state launch for the entry's product (rt_fold_entry); else 0 */
    size_t fold_s0;             /* training, folded: reserve [units][N][rows of P], each unit's s_0 (zeros where no h0),
                                   which the weight gradients read */
    size_t fold_w;              /* and [units][rt_fold_rows(m, 3)] floats: the forward's P and U_k (P first, then each
                                   U_k), as the weights call reads no live weight (docs/training.md); 0 (none) in the
                                   16-bit modes through the columns, whose map reads the reserve's 16-bit weights */
    size_t fold_cols;           /* training, where rt_fold_by_columns: workspace 2 x [T*N + N][rows of P] floats, the
                                   weight gradients' projected states Y (s_0 first) and U^T dG (dhT last), fp32 or 16-bit
                                   (rt_fold_wgrad); else 0 */
    size_t layer_dy[2];         /* workspace: adjoints of inner layers' outputs, ping-pong [T][N][D0*dirs] */
} RtRegions;

#define RT_NO_TWIN ((size_t)-1)

/* One layer-direction's pointers for one pass. */
typedef struct RtBind {
    rnncc_model *m;
    const RtRegions *r;
    const RtUnit *unit;
    int slot;
    int lane;                   /* which of the model's two streams (and cuBLAS workspaces) it runs on */
    cudaStream_t stream;
    cublasHandle_t blas;
    int64_t hcol0, hcols;       /* the hoisted program's column window (a wavefront chunk), else 0, T*N */
    int64_t pt0, pt1;           /* the post program's window of steps (a wavefront chunk's), else 0, T */
    const float *x;             /* this layer's input */
    int64_t ldx;
    float *bufs[RNN_MAX_BUFFERS];
    unsigned short *bufs16[RNN_MAX_BUFFERS]; /* their 16-bit twins, or NULL (cg_value_twinned) */
    float *states[RNN_MAX_STATES]; /* slot 0 of each state's slots */
    unsigned short *states16[RNN_MAX_STATES]; /* slot 0 of their 16-bit twins' slots, or NULL (rt_half.c) */
    float *states3[RNN_MAX_STATES]; /* their tf32x3 split twins (two steps' by turns: rt_state_slot3), or NULL (rt_x3.c) */
    float *y[RNN_MAX_OUTPUTS];
    int64_t ldy[RNN_MAX_OUTPUTS];
    const int *lengths;         /* device, or NULL */
    const RtPersist *persist;   /* the persistent kernel running this unit's step loop (forward or
                                   backward, as the pass), or NULL */
    unsigned long long *flags;  /* the lane's flagged state words (a persistent forward with flags) */
    float *final[RNN_MAX_STATES]; /* forward: where the last step writes each state's final value (the
                                     caller's hT block of this unit; RnnArgs.state_final), or NULL */
    const float *fold_s0;       /* forward, folded (rt_fold.c): the user's initial value of the folded state for
                                   this unit (io->h0's block), or NULL */
    float *fold_sT;             /* and where its final value goes (io->hT's block), or NULL */
    float *fold_z, *fold_add;   /* the lane's fold workspaces (RtRegions.fold_z, fold_add), or NULL */
    unsigned short *fold_s016;  /* the unit's s_0 in 16 bits (RtRegions.fold_s016), or NULL */
    float *fold_s0_kept;        /* training: the unit's s_0 in the reserve (RtRegions.fold_s0), or NULL */
    float *fold_w_kept;         /* training: the unit's P and U_k in the reserve (RtRegions.fold_w), or NULL */
    float *fold_cols;           /* training, where rt_fold_by_columns: RtRegions.fold_cols, or NULL */
    int aside;                  /* lane 1 stays idle through this unit (lane 0; one direction, not a wavefront): the
                                   fold's side work goes there (rt_fold_seed, rt_fold_dh0, the weights' map) */
    int aside_pending;          /* work issued on lane 1 that lane 0 has not yet waited for (rt_fold_join) */
    const unsigned short *w16_reserve; /* training in the 16-bit modes: the unit's weights in the reserve's 16-bit copy
                                          (RtRegions.half_weights; what a forward that keeps none writes), else NULL */
    /* backward */
    float *dbufs[RNN_MAX_BUFFERS];
    unsigned short *dbufs16[RNN_MAX_BUFFERS]; /* their 16-bit twins, or NULL */
    float *dbufs3[RNN_MAX_BUFFERS]; /* their tf32x3 split twins (one step's), or NULL */
    float *dstate[RNN_MAX_STATES]; /* three slots of [N][S] (the per-step backward uses two) */
    int dcur;                   /* the half holding the adjoint of the state the current step read */
    float *dparam;
    float *dx;                  /* += the input's adjoint (ld = ldx), or NULL */
    int dx_gemm;                /* backward: the GEMM whose product sets dx (beta 0; not zeroed first) where it alone
                                   writes it (rnncc_model.input_gemm); -1: dx is zeroed, then added to */
    const float *dy[RNN_MAX_OUTPUTS];
} RtBind;

/* The regions slot of layer l, direction d: its unit (training), else the buffers it shares
 * with other layers: one per direction, or one per layer parity in a wavefront. */
int rt_slot(const rnncc_model *m, int training, int l, int d);
/* Whether a unit keeps each shared adjoint once (RnnArgs.dshared): in the forward direction only,
 * where a step's columns are its positions'. */
static inline int rt_shares_adjoints(const RtUnit *unit) { return unit->dir == 0; }
/* Whether the plan has hoisted element-wise groups: their backward kernels loop over whole sequences, so such a
 * layer's hoisted backward cannot be cut into chunks of steps (and may write a hoisted GEMM's adjoint). */
int rt_hoisted_groups(const Plan *p);
/* Whether a unit's step GEMMs add their results into their hoisted partners' columns of the step
 * (RnnArgs.summed; the buffers alias, rt_value_summed): where the regions say so, in the forward
 * direction. */
static inline int rt_sums_values(const RtRegions *r, const RtUnit *unit) { return r->summed && rt_shares_adjoints(unit); }
/* The hoisted buffer whose columns the unit's step buffer b adds into (codegen's cg_value_summed,
 * where rt_sums_values), or -1. */
int rt_value_summed(const RtRegions *r, const RtUnit *unit, int b);
/* Whether step buffer b keeps every step's columns: in training, and where the post program reads it
 * (SchedBuffer.all_steps); step t's then start t*N columns (of the unit's width) after step 0's. */
int rt_buffer_kept(const rnncc_model *m, int training, int b);
/* The buffer whose adjoint unit u's buffer b keeps (codegen's cg_adjoint_shared, where the unit
 * shares adjoints: rt_shares_adjoints), or -1: b's own. */
int rt_adjoint_shared(const rnncc_model *m, int u, int b);
/* Binds layer l, direction d to lane (its stream, cuBLAS workspace and state adjoints): its input,
 * buffers, states and outputs (x: the user's input, y: the user's outputs, used by the first and
 * the last layer). */
void rt_bind(RtBind *b, rnncc_model *m, const RtRegions *r, int l, int d, int lane, const float *x, float *const *y,
             char *ws, char *reserve);
/* State k's slot read by step t (t + 1: the one step t writes). */
float *rt_state_slot(const RtBind *b, int k, int64_t t);
/* Plan buffer bufs[i] (or dbufs[i]) as seen by step t: step buffers are per step in training. */
float *rt_buffer_at(const RtBind *b, float *const *bufs, int i, int64_t t);
/* The output that post GEMM j of the bound unit writes straight into, its copy group then not run, or -1: where only
 * a copy reads its result (sched_post_copy) and the copy is the identity, in the forward direction with no lengths,
 * and the output is wanted; *group, the copy group. */
int rt_post_direct(const RtBind *b, int j, int *group);
/* Its backward's mirror: the output whose adjoint, the last layer's dy as the user gave it, is post GEMM j's adjoint
 * itself, so that the copy group's backward is not run, or -1: the same copy, in the forward direction with no
 * lengths, of the last layer (whose dy the weights call has too), where that dy is given (RtBind.dy). In fp32, tf32
 * and tf32x3 the GEMM's data and weight gradients read dy; in fp16 and bf16 the backward's first launch rounds dy
 * into the adjoint's 16-bit twin (which it then must have, packed as dy), which they read (bench/NOTES.md section 92). */
int rt_post_direct_dy(const RtBind *b, int j, int *group);
/* rt_post_direct_dy's output where post GEMM j's products read dy itself (fp32, tf32, tf32x3), else -1. */
int rt_post_reads_dy(const RtBind *b, int j);
/* Where a GEMM's operand r lives at step t (dbufs: its adjoint), with the distance between columns. */
float *rt_operand(const RtBind *b, IrRef r, int64_t t, int adjoint, int64_t *ld);
/* The 16-bit twin of rt_state_slot(b, k, t), or NULL. */
unsigned short *rt_state_slot16(const RtBind *b, int k, int64_t t);
/* The tf32x3 split twin of state k at step t (two slots by turns, t % 2, so that a step's kernels write
 * step t+1's while its GEMMs may still read step t's), or NULL. */
float *rt_state_slot3(const RtBind *b, int k, int64_t t);
/* The 16-bit twin of rt_operand(b, r, t, 0) (a multiplied state's slot t or a multiplied value's buffer at
 * step t, laid out alike), or NULL. */
const unsigned short *rt_operand16(const RtBind *b, IrRef r, int64_t t);
/* The 16-bit twin of rt_buffer_at(b, b->bufs, i, t), or NULL (always in a persistent forward in inference,
 * whose kernel then writes none). */
unsigned short *rt_buf16_at(const RtBind *b, int i, int64_t t);
/* The 16-bit twin of rt_buffer_at(b, b->dbufs, i, t), or NULL. */
unsigned short *rt_dbuf16_at(const RtBind *b, int i, int64_t t);
/* The split twin (tf32x3) of operand r as step t's GEMM multiplies it, written by step t-1's kernel; NULL: none. */
const float *rt_operand3(const RtBind *b, IrRef r, int64_t t);
/* The weights of GEMM j of the bound unit (base: the weight buffer or a gradient buffer). */
float *rt_gemm_weights(const RtBind *b, float *base, int j);

/* The graph of one forward pass, reused while its arguments stay the same. */
typedef struct RtGraph {
    cudaGraphExec_t exec;
    unsigned char key[320];     /* the arguments the graph was captured with */
    size_t keylen;
    unsigned char seen[320];    /* the arguments of the last direct run: seen twice, they are captured */
    size_t seenlen;
} RtGraph;

/* Chunks of the time axis in a layer wavefront. */
enum { RT_WAVE_CHUNKS = 4 };

/* Bytes of each cuBLAS / cuBLASLt workspace (one per stream lane: a direction, or a layer parity in a wavefront). */
#define RT_CUBLAS_WS ((size_t)32 << 20)
/* The weight blocks a pass has derived into a region of their own (rt_blocks.c: RNNCC_TF32X3's splits, rt_x3.c;
 * fp32 step GEMMs' transposed copies, rt_wt.c; host, grown as needed, freed with the model). A block is its
 * offset in the weights, its packed rows x cols and the GEMM's operation on it; what is derived from it takes
 * copies rows cols floats of its own from `at`, for blocks that overlap (a parameter stacked with another in one
 * GEMM and multiplied alone in another) cannot share one derived copy laid out along columns. */
typedef struct RtBlock {
    int64_t off, rows, cols, at;
    int op;
    int used;                   /* rt_wt.c: the pass multiplies the block's copy (decided where it first met it) */
} RtBlock;
typedef struct RtBlocks {
    RtBlock *block;
    int n, room;
    int64_t used;               /* floats taken from the region this pass */
} RtBlocks;

struct rnncc_model {
    char error[2048];
    int failed;                 /* creation failed: only rnncc_model_error and destroy answer */
    Arena arena;
    char *source;
    const IrCell *cell;         /* the cell that runs: the user's, or its projection fold (RNNCC_FOLD=1, rt_fold.c) */
    const IrCell *api;          /* the cell as written: parameter names and sizes, h0, hT (cell where not folded) */
    const IrFold *fold;         /* the fold (ir/fold_projection.h), or NULL */
    const IrRef *fold_entry;    /* [fold->nderived]: the hoisted products its entry adds into (ir_fold_entries) */
    rnncc_fold fold_asked;      /* rnncc_model_desc.fold */
    int keep_asked;             /* rnncc_model_desc.keep_derived_weights (the fold's rule reads it) */
    const char *fold_by;        /* who chose to fold or not ("the rule: tf32 products", "RNNCC_FOLD=1", "desc->fold"),
                                   where the cell folds or the fold was forced; else NULL */
    const char *fold_why_not;   /* a fold asked for or ruled out, but not run: why (static text), else NULL */
    const Plan *plan;
    int input_gemm;             /* the GEMM whose backward product alone sets the input's adjoint (sched_input_gemm of the
                                   plan that runs; RtBind.dx_gemm), or -1: folded, or none */
    int layers, dirs;
    rnncc_precision precision;
    int device;
    int64_t *dimval[2];         /* layer 0, and layers > 0 */
    const PlanLayout *layout[2];
    RtModule module[2];
    int nmodules;
    cudaLibrary_t convert_lib;  /* the conversion unit of what the model launches (cg_emit_convert, rt_convert_needs):
                                   every mode's state staging, the 16-bit modes' operand conversions, ... */
    cudaKernel_t to_half[2];    /* rnncc_to_f16 or rnncc_to_bf16 in it, by the precision (rt_half.c); the other NULL */
    cudaKernel_t to_x3;         /* rnncc_to_x3 in it (rt_x3.c), RNNCC_TF32X3 only */
    cudaKernel_t stage_states[2]; /* rnncc_states_f16 or rnncc_states_bf16 in it, by the precision (rt_copy_states;
                                     fp32, tf32 and tf32x3 run the first, with no twins); the other NULL */
    cudaKernel_t fold_columns[3]; /* rnncc_fold_entry, rnncc_fold_final, rnncc_fold_gather in it where the model
                                     folds (rt_fold.c) */
    RtUnit *units;              /* [layers * dirs] */
    int nunits;
    int64_t weight_count;
    float *weights;             /* device */
    cublasHandle_t cublas[2];   /* one per stream lane */
    void *cublas_ws[2];         /* device: cuBLAS workspaces, so graph capture never allocates */
    cudaStream_t streams[2];    /* the lanes' streams (directions, or a wavefront's layer parities); captured */
    cudaEvent_t events[8];      /* 0-1: the lanes' fork and join; 2-3: the caller's stream joined; 4: the last
                                   replay on the caller's stream while the model keeps its 16-bit weights
                                   (rnncc_model_keep_derived_weights waits for it before freeing them,
                                   rnncc_model_weights16 before rounding into them); 5: the
                                   legacy stream, which rt_upload's writes wait for; 6: the fold's map on lane 1 has
                                   added into dP, 7: lane 0 has formed the map's Y (rt_fold_wgrad_aside) */
    cudaEvent_t tevents[2];     /* timing GEMM candidates */
    RtGraph graph[3];           /* forward, backward data, backward weights */
    RtGemmCache gemm;           /* cuBLASLt descriptors and timed algorithms per GEMM shape */
    int capturing;              /* a graph capture is under way: no timing, no synchronisation */
    int spoiled_captures;       /* captures another thread's call invalidated (run directly instead) */
    float *ones;                /* device: ones for summing accumulators over sequences */
    unsigned short *ones16;     /* device, in the 16-bit modes: the same ones in the model's 16 bits */
    int64_t ones_len;
    int use_graphs;             /* RNNCC_GRAPHS=0 turns graph capture off */
    int wavefront;              /* unidirectional stacks: layer l+1 runs chunk c while layer l runs c+1
                                   (backward: layer l runs chunk c while layer l+1 runs c-1) */
    cudaEvent_t *wave_events;   /* [layers][RT_WAVE_CHUNKS]: layer l has finished chunk c (either wavefront) */
    RtCache cache;
    char arch[16];
    /* the persistent backend */
    rnncc_backend backend;      /* AUTO, or forced */
    int sms;                    /* multiprocessors */
    int64_t smem_optin;         /* shared memory a block may take */
    int coop;                   /* the device supports cooperative launches */
    int pageable;               /* the device reads pageable host memory (cudaDevAttrPageableMemoryAccess) */
    const void *host_known[8];  /* arrays earlier calls found plain host memory (rt_host_readable asks no more) */
    int host_known_next;        /* the entry host_known's next new one replaces */
    int pdl;                    /* forward element-wise kernels start while the kernel before them
                                   ends (sm_90 and later; RNNCC_PDL=0: off) */
    int cluster_launch;         /* ... and thread-block clusters (compute capability 9.0 and later) */
    unsigned *sync;             /* device: one grid-barrier counter per stream lane */
    RtPersist persist[2][2][RT_PERSIST_CLASSES]; /* per pass (forward, backward), layout, batch class */
    int profile_persist;        /* RNNCC_PROFILE_PERSIST=1: persistent units count cycles (persist.cuh) */
    int persist_stagger;        /* RNNCC_PERSIST_STAGGER=1: persistent units stagger their blocks (a test tool, persist.cuh) */
    int persist_cluster;        /* RNNCC_PERSIST_CLUSTER=1, 2 or 4: blocks per cluster, forced; 0: searched */
    int persist_warps;          /* RNNCC_PERSIST_WARPS=4, 8 or 16: warps a block, forced; 0: searched */
    int persist_split;          /* RNNCC_PERSIST_SPLIT=1 or 0: a backward's clusters split K (CgPersistAsk.split)
                                 * or not, forced; -1: searched (the rule: not) */
    int64_t persist_chunk;      /* RNNCC_PERSIST_CHUNK: staging chunks at most this long, forced; 0: searched */
    int persist_nw;             /* RNNCC_PERSIST_SEQS / 4: sequences per lane a pass at most, forced; 0: searched */
    int persist_handoff;        /* RNNCC_PERSIST_HANDOFF: CG_HANDOFF_FLAGS, _BARRIER or _DIRECT, forced; -1: searched */
    int persist_blocks;         /* RNNCC_PERSIST_BLOCKS: blocks at most (CgPersistAsk.blocks), forced; 0: searched */
    int persist_wregs;          /* RNNCC_PERSIST_WREGS: registers of held weights (CgPersistAsk.wregs); 0: the rule's */
    int persist_waves;          /* RNNCC_PERSIST_WAVES: staging waves at most (CgPersistAsk.waves); 0: the rule's */
    int persist_search;         /* 1 (default): persistent tiles by measurement (rt_tile.c); 0: by rule */
    char device_name[256];      /* the device's name (part of the tile search's cache key) */
    /* 16-bit GEMM operands of the pass being issued (rt_half_begin): the weights' copy (NULL: none this
     * pass), the lanes' scratch for operands A and B, and their lengths in elements */
    void *half_weights;
    void *half_scratch[2][2];
    int64_t half_len[2];
    /* rnncc_model_keep_derived_weights: whether the model keeps what it derives from the weights between
     * passes; whether that is derived from the weights as they are (set by a forward the caller does not
     * capture, cleared by rnncc_model_set_param and rnncc_model_weights_changed); in fp16 and bf16 the
     * weights' 16-bit copy it keeps (device; NULL: rounded into the workspace or reserve every forward) */
    int keep_derived;
    int derived_fresh;
    void *half_kept;
    int half_train_copy;        /* the copy the last training forward wrote: 0 none yet, 1 the reserve's, 2
                                   the kept one, -1 keep changed since (rnncc_backward_data refuses 1 or 2
                                   when the model now reads the other, and -1) */
    /* a pass's layer-0 input x (half_x_len floats from half_x_src) rounded to 16 bits in the reserve or
     * workspace (rt_half_input; NULL: none) */
    const float *half_x_src;
    void *half_x;
    int64_t half_x_len;
    /* RNNCC_TF32X3 (rt_x3.c), the pass being issued (rt_x3_begin): where it splits the weights (NULL: none
     * this pass) and its length in floats, the blocks split so far (RtBlocks: each its own floats, taken in
     * turn), the lanes' scratch for operands A and B and their length in floats */
    float *x3_weights;
    int64_t x3_weights_len;
    RtBlocks x3_split;
    /* fp32 step GEMMs (rt_wt.c), the pass being issued (rt_wt_begin): where it transposes their weight blocks
     * (NULL: none this pass) and its length in floats, the blocks transposed so far */
    float *wt_weights;
    int64_t wt_weights_len;
    RtBlocks wt_blocks;
    int wt_force;               /* RNNCC_WT: 1 always the transposed copy, 0 never, -1 as timed (rt_wt.c) */
    float *x3_scratch[2][2];
    int64_t x3_len;
    int64_t x3_cap;             /* RNNCC_X3_SCRATCH: a scratch's floats at most, forced (tests: many chunks); 0: as sized */
    RtCalls calls;              /* what the training calls on the last training forward's reserve were given */
};

/* Records a formatted message in the model and returns status. */
rnncc_status rt_fail(rnncc_model *m, rnncc_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
rnncc_status rt_cuda_fail(rnncc_model *m, cudaError_t e, const char *call, const char *file, int line);
rnncc_status rt_cublas_fail(rnncc_model *m, cublasStatus_t e, const char *call, const char *file, int line);
/* Writes bytes from host memory src (zeros where src is NULL) to the model's device memory dst on its
 * stream 0, after the work issued before on the legacy and blocking streams, and waits: landed, and
 * after every earlier such write, whichever stream reads them next (on the model's device, whichever
 * is current). Refused (what names the write) while a caller's graph capture holds stream 0. Passes on
 * non-blocking streams must have ended, and on blocking ones too while a blocking stream is captured. */
rnncc_status rt_upload(rnncc_model *m, const char *what, void *dst, const void *src, size_t bytes);

/* Every CUDA and cuBLAS call goes through these: on failure they record the call, its
 * status and file:line in the model and return a status from the enclosing function. */
#define RT_CUDA(m, call)                                                              \
    do {                                                                              \
        cudaError_t rt_e_ = (call);                                                   \
        if (rt_e_ != cudaSuccess) return rt_cuda_fail((m), rt_e_, #call, __FILE__, __LINE__); \
    } while (0)
#define RT_CUBLAS(m, call)                                                            \
    do {                                                                              \
        cublasStatus_t rt_s_ = (call);                                                \
        if (rt_s_ != CUBLAS_STATUS_SUCCESS) return rt_cublas_fail((m), rt_s_, #call, __FILE__, __LINE__); \
    } while (0)
#define RT_TRY(call)                                                                  \
    do {                                                                              \
        rnncc_status rt_st_ = (call);                                                 \
        if (rt_st_ != RNNCC_OK) return rt_st_;                                        \
    } while (0)

/* C = op(A) op(B) (+ C when beta1) in column-major terms, on direction dir's stream and
 * workspace, with the algorithm timed for this shape (see rt_gemm.h). a16, b16: in the 16-bit
 * modes, the operands' twins written by the kernels (laid out as a and b), or NULL: rounded here;
 * b3: in RNNCC_TF32X3, B's split twin (op N; 3K floats a column), or NULL: split here. */
rnncc_status rt_gemm(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc, int beta1,
                     const unsigned short *a16, const unsigned short *b16, const float *b3);
void rt_gemm_cache_free(RtGemmCache *cache);

/* 1 when the model's GEMMs take 16-bit operands (RNNCC_FP16, RNNCC_BF16). */
int rt_half(const rnncc_model *m);
/* Issues a's copies (runtime/rnn_args.h; twins rounded to bf16 in RNNCC_BF16, else fp16) on stream,
 * in one launch of the conversion unit's rnncc_states_f16/bf16. */
rnncc_status rt_copy_states(rnncc_model *m, cudaStream_t stream, const RnnStateCopies *a);
/* Adds copy c to a (nothing where it is empty), issuing a's copies first where a is full. */
rnncc_status rt_copy_add(rnncc_model *m, cudaStream_t stream, RnnStateCopies *a, RnnStateCopy c);
/* Gives each of a's copies its own blocks of that launch's one-dimensional grid (block0, blocks: one
 * at least, at most CG_MAX_GRID_BLOCKS / RNN_STATE_COPIES) and returns the grid's size. */
int rt_copy_blocks(RnnStateCopies *a);
/* The projection fold at run time (rt_fold.c). rt_fold_choose decides (rnncc_model_desc.fold, RNNCC_FOLD,
 * else the rule: products in tf32, fp16 or bf16) and runs the folded cell where the user's folds and has an
 * entry (ir_fold_entries), else leaves the model as it is; an RNNCC_FOLD other than unset, empty, 0 or 1
 * fails the creation. */
rnncc_status rt_fold_choose(rnncc_model *m);
/* The most floats a sequence of the fold's workspaces takes over the layers: which 0, the folded state's
 * final value; 1, the entry's addend (every derived parameter's rows together); 2, the user's state (P's
 * rows); 3 (per unit, not per sequence), P's and every U_k's floats together. */
int64_t rt_fold_rows(const rnncc_model *m, int which);
/* Each layer-direction's derived weights V_k = U_k P on stream 0, after rt_half_begin: in fp32 (tf32 where the
 * products are), or in fp16 and bf16 straight into the 16-bit copy from its U and P, rounded once (the copy is
 * their only reader; V's fp32 place stays as it was); nothing where not folded, or where the model keeps what it
 * derives and U and P have not changed since (rnncc_model_keep_derived_weights: V, or its copy, as kept). */
rnncc_status rt_fold_derive(rnncc_model *m);
/* Waits on b's lane (0) for the work rt_fold_seed, rt_fold_dh0 or rt_fold_wgrad_aside left on lane 1
 * (RtBind.aside_pending), where there is some. */
rnncc_status rt_fold_join(RtBind *b);
/* The entry: U_k s_0 added into the hoisted products' first-step columns, after the hoisted program of the
 * chunk that holds them; nothing where not folded or s_0 is NULL. */
rnncc_status rt_fold_entry(RtBind *b);
/* The folded state's final value for the user, P z_T (s_0 where a sequence has no step): the post program's product
 * at each sequence's last step where it runs one (rt_fold_final_from_post), else a GEMM of z_T (RtBind.fold_z). */
rnncc_status rt_fold_final(RtBind *b);
/* 1 where rt_fold_final takes the user's final state from the post program's product (the step kernels then need
 * not write z_T), 0 where it multiplies z_T or the model is not folded. */
int rt_fold_final_from_post(const rnncc_model *m);
/* Training: adds to a the copies of the unit's P and U_k into the reserve (RtBind.fold_w_kept), which rt_fold_wgrad
 * reads; where the 16-bit modes map through the columns, none but where the model keeps its own 16-bit weights: P and
 * the U_k rounded into the reserve's copy, at their offsets (RtBind.w16_reserve), which the map reads. */
rnncc_status rt_fold_keep(RtBind *b, RnnStateCopies *a);
/* The backward's seed of the folded state: P^T dhT into its adjoint slot dz (written whole: nothing zeroes it); on
 * lane 1 where b->aside (b->aside_pending then set: rt_fold_join before the first step). */
rnncc_status rt_fold_seed(RtBind *b, const float *dhT, float *dz);
/* The user's dh0 of the folded state: sum_k U_k^T A_k (A_k: the entry columns' adjoint), dhT where a sequence
 * has no step. On lane 1 where rt_fold_dh0_aside (b->aside_pending then set: rt_fold_join before the unit ends). */
rnncc_status rt_fold_dh0(RtBind *b, const float *dhT, float *dh0);
/* Whether rt_fold_dh0 goes on lane 1, issued right after the step loop beside the hoisted program's backward: where
 * b->aside, A_k is read in place (the forward direction) and the plan has no hoisted element-wise groups (whose
 * backward could write A_k's buffer). */
int rt_fold_dh0_aside(const RtBind *b);
/* The weight gradients' map, on b's lane after the bound unit's GEMMs (dw: the caller's, whole): dU_k += dV_k P^T
 * + A_k^T s_0, dP += sum_k U_k^T dV_k + dhT^T z_T; then V's gradient region zeroed (its weights are derived), but
 * through the columns, where nothing writes it. With zero_first, only that zeroing (before the GEMMs, where they add
 * into the caller's gradients). */
rnncc_status rt_fold_wgrad(RtBind *b, const float *dhT, float *dw, int zero_first);
/* The map through the columns on lane 1, forked from lane 0 before the unit's GEMMs, where it reads no lane scratch
 * (every operand twinned, or fp32 data): its dP products first, then events[6], then dU once lane 0 has formed Y
 * (first on lane 0, then events[7]: the two lanes' chains nearer in length). Where it went there
 * b->aside_pending is set: lane 0 then waits on events[6] before a GEMM that adds into P's gradient
 * (rt_fold_touches_proj) and joins lane 1 after the unit (rt_fold_join); else the unit's map must run on lane 0 after
 * its GEMMs (rt_fold_wgrad). */
rnncc_status rt_fold_wgrad_aside(RtBind *b, const float *dhT, float *dw);
/* Whether plan GEMM j's weight gradient adds into the bound unit's P's (so follows the map's dP products). */
int rt_fold_touches_proj(const RtBind *b, int j);
/* Whether a training pass of T x N maps V's gradient through the columns (not in tf32x3; each run of U_k one GEMM's
 * rows, and fewer flops than forming dV and mapping it: T N < 4 H at P = H/2): the weights pass then skips the GEMM
 * that would form dV (rt_fold_skips_gemm) and rt_fold_wgrad forms dU and dP from the adjoint dG and the states Z
 * directly, dU += dG (P Z)^T, dP += (U^T dG) Z^T (in the 16-bit modes in 16-bit products, on dG's and Z's twins, P Z
 * and U^T dG written in 16 bits), s_0 as P Z's step-0 columns and dhT after U^T dG's last (the entry's and z_T's terms
 * in the same two products). */
int rt_fold_by_columns(const rnncc_model *m, int64_t T, int64_t N);
/* Whether the bound unit's weights pass skips plan GEMM j (its weights are V's, mapped through the columns). */
int rt_fold_skips_gemm(const RtBind *b, int j);
/* Whether the bound unit's backward kernels store the adjoints they twin as twins alone
 * (RnnArgs.twins_only): in the 16-bit modes, per step, and in a persistent backward that stages
 * every twinned adjoint from its twin (one that stages fp32 rows reads the fp32 copy; every reader
 * after the loop takes the twin). */
static inline int rt_twins_only(const RtBind *b) {
    return rt_half(b->m) && (!b->persist || cg_persist_twins_staged(b->m->plan, &b->persist->plan));
}
/* Launches kernel, one of the conversion unit's (rt_convert_needs chose which it holds), on cfg with args;
 * a kernel the unit lacks (NULL) fails the call naming what (an internal error), never a launch. */
rnncc_status rt_launch_convert(rnncc_model *m, const cudaLaunchConfig_t *cfg, cudaKernel_t kernel, void **args,
                               const char *what);
/* Launches a kernel of the conversion unit over cols columns of per items each (rt_half.c): a 2-D grid, x
 * along a column (CG_CONVERT_ITEMS items a thread), y over the columns, both grid-stride and together at
 * most CG_MAX_GRID_BLOCKS blocks; the 16-bit conversions' and RNNCC_TF32X3's split. */
rnncc_status rt_launch_columns(rnncc_model *m, cudaStream_t stream, cudaKernel_t kernel, void **args, int64_t per,
                               int64_t cols);
/* 1 when the model's cuBLAS GEMMs take split tf32 operands (RNNCC_TF32X3; rt_x3.c). */
int rt_x3(const rnncc_model *m);
/* The floats of a lane's scratch for one GEMM operand in RNNCC_TF32X3 (rt_regions): a chunk of the largest
 * operand split (rt_x3.c says which chunks), or less where RNNCC_X3_SCRATCH says, but one column at least. */
int64_t rt_x3_scratch_len(const rnncc_model *m, int64_t T, int64_t N, int training);
/* The floats of the weights' split in RNNCC_TF32X3 (rt_regions): 3 for each weight of each GEMM of each
 * layer-direction, as its pass may split every block on its own, and 32 a block, each aligned to 128 bytes. */
int64_t rt_x3_weights_len(const rnncc_model *m);
/* Where a pass's derivation of weight block (off, rows, cols, op) lies in a region of len floats: its earlier place
 * (*fresh 0) or the next, recorded (*fresh 1); -1 region spent, -2 no host memory; *block its record until the next call. */
int64_t rt_blocks_at(RtBlocks *s, int64_t off, int64_t rows, int64_t cols, int op, int copies, int64_t len, int *fresh,
                     RtBlock **block);
/* The floats a region takes for copies floats an element of every weight block some GEMM of every layer-direction
 * multiplies where keep(program) (NULL: every GEMM), with 32 a block to align each (rt_blocks_at). */
int64_t rt_blocks_len(const rnncc_model *m, int copies, int (*keep)(SchedProgram));
/* Points model m at a pass's split-operand regions of ws (RNNCC_TF32X3; else nothing); no weights split yet. */
void rt_x3_begin(rnncc_model *m, const RtRegions *r, char *ws);
/* The floats of the step GEMMs' transposed weights (rt_wt.c) for batches of N: each weight block of each
 * layer-direction's step GEMMs, where the precision is fp32 and no persistent forward may run; else 0. */
int64_t rt_wt_weights_len(const rnncc_model *m, int64_t N);
/* Points model m at a pass's region of transposed weights in ws (else nothing); none transposed yet. */
void rt_wt_begin(rnncc_model *m, const RtRegions *r, char *ws);
/* Whether a step GEMM's transposed copy pays over a pass of T steps: op N on the copy (nn_ms a launch) against op T
 * on the packed M x K block (tn_ms; either untimed: <= 0), its copy's cost (8 M K bytes at 1 TB/s) included. */
int rt_wt_pays(float tn_ms, float nn_ms, int64_t T, int64_t M, int64_t K);
/* *wt: step GEMM j's weights w ([M][K]) transposed (column-major, ld M) once a pass on is's stream where that pays
 * (rt_wt_pays on both layouts' timed GEMMs; b, ldb, c, ldc, beta1 the product's), else NULL: multiply w as it is. */
rnncc_status rt_wt_weights(RtBind *is, int j, const float *w, int64_t M, int64_t K, int64_t N, const float *b, int64_t ldb,
                           const float *c, int64_t ldc, int beta1, const float **wt);
/* The chunks of an M x N x K product in RNNCC_TF32X3 with len floats a split operand: *kc of the contraction
 * (K whole where the left operand is split already, a_split: the weights), *nc of the output's columns; each
 * chunk's split operands fit len ((3 *kc) x M where the left is split here, (3 *kc) x *nc the right), cut to
 * multiples of 32 where cut; 0 where len cannot hold one column. */
void rt_x3_chunks(int64_t M, int64_t N, int64_t K, int a_split, int64_t len, int64_t *kc, int64_t *nc);
/* What a split product issues (rt_x3_product): the split of a column-major rows x cols matrix (rnncc_to_x3's
 * layout: krows, the contraction along its rows; pattern 0 (hi, hi, lo), 1 (hi, lo, hi)) and a tf32 GEMM as
 * rt_gemm_lt's; the runtime's run on a lane's stream, a test's on the host. */
typedef struct RtX3Issue {
    rnncc_status (*split)(void *ctx, const float *src, int64_t ld, int64_t rows, int64_t cols, float *dst, int krows,
                          int pattern);
    rnncc_status (*gemm)(void *ctx, int opa, int opb, int64_t M, int64_t N, int64_t K, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float *c, int64_t ldc, int beta1);
    void *ctx;
} RtX3Issue;
/* C = op(A) op(B) (+ C where beta1) as split products in chunks (rt_x3_chunks) through is: A split already
 * where a3 is not NULL (the weights' split: op T along its rows, 3K a column; op N three M x K blocks), else
 * chunk by chunk into sa; B split already where b3 is not NULL and the contraction is whole (op N: 3K floats
 * a column, as the kernels' twins), else chunk by chunk into sb; each at most len floats.
 * RNNCC_ERR_UNSUPPORTED where len holds no column. */
rnncc_status rt_x3_product(const RtX3Issue *is, int opa, int opb, int64_t M, int64_t N, int64_t K, const float *a,
                           int64_t lda, const float *a3, const float *b, int64_t ldb, const float *b3, float *c,
                           int64_t ldc, int beta1, float *sa, float *sb, int64_t len);
/* C = op(A) op(B) (+ C where beta1) in RNNCC_TF32X3: both inputs split (the weights once a pass, the others
 * into the lane's scratch, in chunks of columns or of the contraction where they exceed it), one tf32 GEMM
 * over three times the contraction; a product with one column or row in fp32 (a bias's sum). */
rnncc_status rt_x3_gemm(rnncc_model *m, int lane, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                        const float *a, int64_t lda, const float *b, int64_t ldb, const float *b3, float *c, int64_t ldc,
                        int beta1);
/* The cuBLASLt product rt_gemm issues once its operands are what cuBLAS multiplies (16-bit copies, split
 * ones or fp32), computed as precision says (the algorithm timed per shape and precision, rt_gemm.h). */
rnncc_status rt_gemm_lt(rnncc_model *m, int lane, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N, int64_t K,
                        const void *a, int64_t lda, const void *b, int64_t ldb, float *c, int64_t ldc, int beta1,
                        rnncc_precision precision);
/* *ms: the timed ms a launch of rt_gemm_lt's product for these arguments (a new shape timed now where create is set), nothing
 * computed; 0 a new shape without create, -1 one left untimed (the streams capturing, one candidate, no scratch memory). */
rnncc_status rt_gemm_lt_time(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N,
                             int64_t K, const void *a, int64_t lda, const void *b, int64_t ldb, const float *c, int64_t ldc,
                             int beta1, rnncc_precision precision, int create, float *ms);
/* C = op(A) op(B) (+ C where beta1) in the 16-bit modes with 16-bit operands and a 16-bit result (fp32
 * accumulation, rounded once), on lane dir: for a product whose only reader takes it in 16 bits (a folded cell's V). */
rnncc_status rt_gemm_half_out(rnncc_model *m, int dir, cudaStream_t stream, int opa, int opb, int64_t M, int64_t N,
                              int64_t K, const unsigned short *a, int64_t lda, const unsigned short *b, int64_t ldb,
                              unsigned short *c, int64_t ldc, int beta1);

/* What a pass does with the weights' 16-bit copy (rt_half_begin). */
typedef enum RtHalfWeights {
    RT_HALF_NO_WEIGHTS, /* none: the pass multiplies activations only (the weight gradients) */
    RT_HALF_CONVERT,    /* rounds the weights into it (a forward; in training it is kept in the reserve) */
    RT_HALF_CONVERT_HERE, /* as RT_HALF_CONVERT, into the pass's regions even where the model keeps a copy
                             (the tile search's probes, which must not touch a copy passes may read) */
    RT_HALF_KEPT,       /* reads the forward's copy from the reserve (a backward: none converted) */
} RtHalfWeights;
/* Points the model at a pass's 16-bit operand regions of ws and reserve (rt_half), or at the model's
 * kept copy of the weights (rnncc_model_keep_derived_weights); with RT_HALF_CONVERT, issues the
 * conversion of the weights on stream 0 (before the pass forks its lanes), unless the kept copy is
 * fresh. */
rnncc_status rt_half_begin(rnncc_model *m, const RtRegions *r, char *ws, char *reserve, RtHalfWeights weights);
/* Issues on stream the rounding of every fp32 weight of the model into dst (weight_count 16-bit values, at their
 * offsets): rt_half_begin's, and rnncc_model_weights16's into the kept copy. */
rnncc_status rt_half_round_weights(rnncc_model *m, cudaStream_t stream, void *dst);
/* The pass's own 16-bit copy of the weights in holder (the reserve in training, else the workspace), 16-byte aligned:
 * where rt_half_begin writes it unless the model keeps one. */
void *rt_half_copy_in(const RtRegions *r, char *holder);
/* p rounded up to a multiple of 16 bytes (regions a caller's workspace holds, sized 16 bytes more,
 * that kernels read 16 bytes at a time). */
static inline char *rt_align16(char *p) { return (char *)(((uintptr_t)p + 15) & ~(uintptr_t)15); }
/* In a pass of the 16-bit modes, points the model at layer 0's input x rounded to 16 bits (in the
 * reserve in training, else in the workspace), which every GEMM multiplying x then reads (the hoisted
 * one, in training the weight gradients); nothing otherwise. A forward rounds it: with layer 0's
 * initial states where one lane runs layer 0 (rt_half_x_copy), else here on stream 0, before the
 * lanes fork; a backward (forward 0) reads its forward's. */
rnncc_status rt_half_input(rnncc_model *m, const RtRegions *r, char *ws, char *reserve, const float *x, int forward);
/* Adds x's rounding to a's copies (layer 0's initial states) where the pass's forward rounds it there. */
void rt_half_x_copy(rnncc_model *m, RnnStateCopies *a);
/* Forgets the pass's 16-bit operand regions (before the workspace they point into is freed). */
void rt_half_end(rnncc_model *m);
/* The 16-bit form of GEMM operand p (rows x cols, leading dimension ld): its twin (laid out as p),
 * the weights' copy, or p converted on stream into lane's scratch which (0: A, 1: B), packed;
 * *out and *ldout say where. */
rnncc_status rt_half_operand(rnncc_model *m, int lane, int which, cudaStream_t stream, const float *p, int64_t ld,
                             int64_t rows, int64_t cols, const unsigned short *twin, const void **out, int64_t *ldout);
/* The weights' 16-bit copy of this pass from float offset off of the packed weights (RnnArgs.params16),
 * or NULL when the pass has none. */
const unsigned short *rt_half_params(const rnncc_model *m, int64_t off);

/* T at least 0 and N in 1 .. 2^31-1, else an error naming the one that is not (before anything reads N
 * entries of io->lengths). */
rnncc_status rt_check_sizes(rnncc_model *m, int64_t T, int64_t N);
/* Computes the regions of a forward pass of T steps over N sequences. */
rnncc_status rt_regions(rnncc_model *m, int64_t T, int64_t N, int training, RtRegions *r);
void rt_regions_free(RtRegions *r);

/* The per-step units of every layout (forward and backward parts) and the conversion unit (the
 * 16-bit modes' conversions, every mode's state staging), generated and set building at once
 * (rt_build_start), builds[] holding at least RT_MODULE_BUILDS; the caller may do other work
 * before rt_modules_finish. */
enum { RT_MODULE_BUILDS = 5 };
typedef struct RtModuleBuilds {
    RtBuild build[RT_MODULE_BUILDS];
    StrBuf src[RT_MODULE_BUILDS];
    int n;
} RtModuleBuilds;
rnncc_status rt_modules_start(rnncc_model *m, RtModuleBuilds *mb);
/* Waits for rt_modules_start's builds and loads them (unless abandon: then only waits and frees);
 * every module's kernels afterwards, or the first failure. Always frees mb. */
rnncc_status rt_modules_finish(rnncc_model *m, RtModuleBuilds *mb, int abandon);
/* Launches generated element-wise kernel fn on stream: as a programmatic dependent of the kernel
 * before it when dependent and the model allows it (rnncc_model.pdl), else plainly. */
rnncc_status rt_launch_group(rnncc_model *m, const void *fn, unsigned blocks, void **args, cudaStream_t stream,
                             int dependent);
void rt_module_unload(RtModule *mod);

/* The kernel arguments of step t (hoisted: of the window) of a bound unit, as the per-step
 * kernels take them. */
void rt_args(const RtBind *is, SchedProgram prog, int64_t t, RnnArgs *a);
/* What model m's per-step layer-directions overlap with (cg_persist_preferred's overlap). */
CgOverlap rt_overlap(const rnncc_model *m);
/* Chooses the backend of a pass (backward: a backward pass) over N sequences: *out is the
 * persistent kernel of each layout (built on first use), or NULLs for cuBLAS per step; why (may
 * be NULL) says why in words. */
/* May a pass (backward: a backward pass) over a batch of N run persistent at all, before any kernel is
 * planned? Not with the cuBLAS backend, nor in automatic mode beyond the rule's batch limits
 * (cg_persist_preferred without a plan); rule says why not. */
int rt_persist_considered(const rnncc_model *m, int64_t N, int backward, char *rule, size_t rule_size);
rnncc_status rt_persist_choose(rnncc_model *m, int64_t N, int backward, const RtPersist *out[2], char *why,
                               size_t why_size);
/* Plans the persistent kernel ask describes for layout li into *P and generates its source into src,
 * with the architecture it compiles for in arch: 1; 0 (why says) where it has no plan; -1 where
 * generating failed (m's error says why). */
int rt_persist_source(rnncc_model *m, int li, const CgPersistAsk *ask, CgPersist *P, StrBuf *src, char arch[20],
                      char *why, size_t why_size);
/* Builds (plans, generates, compiles through the cache, loads) the persistent kernel of layout li
 * for what ask says; a grid whose clusters cannot all be resident is planned again on the blocks
 * that can, then without clusters, as is one whose clusters (not forced) do not build.
 * Afterwards p->state is 1 (ready) or -1 with p->why. */
rnncc_status rt_persist_build(rnncc_model *m, int li, const CgPersistAsk *ask, RtPersist *p);
/* Builds the persistent kernel of layout li with the tile a measured search finds fastest for what
 * base asks (its forced fields kept; runtime/rt_tile.c), or with the search's choice cached on disk
 * for this device and kernel. As rt_persist_build afterwards, with p->tile saying how it chose. */
rnncc_status rt_tile_search(rnncc_model *m, int li, const CgPersistAsk *base, RtPersist *p);
/* Launches a bound unit's persistent backward kernel over all its steps (its state adjoints
 * prepared: rt_backward.c; its zeros staged as rt_persist_launch's). */
rnncc_status rt_persist_backward_launch(RtBind *b);
/* Launches the persistent forward kernel for steps t0 .. t1-1 of a bound unit (after its hoisted program),
 * whose zeros (rt_persist_zeros) the caller staged before it on its stream. */
rnncc_status rt_persist_launch(RtBind *is, int64_t t0, int64_t t1);
/* Adds to a the zeros a bound unit's persistent kernel starts from (its lane's barrier counter, its
 * flagged words), so that they join the unit's staging launch (rt_copy_add). */
rnncc_status rt_persist_zeros(RtBind *b, RnnStateCopies *a);
/* Launches a bound unit's persistent kernel cooperatively with arguments a (buf_step and sync set
 * here), its zeros staged before it as above. */
rnncc_status rt_persist_run(RtBind *b, RnnArgs *a);
void rt_persist_unload(rnncc_model *m);
/* Starts building source for arch (NULL: m->arch): from the cache unless fresh, else compiled by
 * NVRTC on a thread of its own (or, when none can be made, by rt_build_wait). */
void rt_build_start(rnncc_model *m, RtBuild *b, const char *source, const char *arch, int fresh);
/* Waits for b's compile (caching its CUBIN); a failure is recorded in m with NVRTC's report, again
 * at every later wait. */
rnncc_status rt_build_wait(rnncc_model *m, RtBuild *b);
/* Waits for b, loads its CUBIN as *lib and runs get(m, ctx) to look up its kernels; a cached binary
 * the driver refuses is compiled afresh once. */
rnncc_status rt_build_load(rnncc_model *m, RtBuild *b, rnncc_status (*get)(rnncc_model *, void *), void *ctx,
                           cudaLibrary_t *lib);
/* Joins b's worker if it still runs, frees its CUBIN and result. */
void rt_build_free(RtBuild *b);
/* Loads a generated source's library, built for arch (NULL: the device's, m->arch), and runs
 * get(m, ctx) to look up its kernels (rt_build_start then rt_build_load: a miss compiles on a worker
 * that this call waits for). */
rnncc_status rt_module_library(rnncc_model *m, const char *source, const char *arch,
                               rnncc_status (*get)(rnncc_model *, void *), void *ctx, cudaLibrary_t *lib, int *from_cache);
/* A monotonic clock in milliseconds. */
double rt_now_ms(void);
/* The CG_CONVERT_* bits of what model m's conversion unit holds: what it launches (precision, fold). */
unsigned rt_convert_needs(const rnncc_model *m);

/* Issues one whole forward pass on the model's streams (captured into a graph by the caller,
 * or run directly). */
rnncc_status rt_issue_forward(rnncc_model *m, const rnncc_io *io, const RtRegions *r, char *ws, char *reserve);
/* Makes stream's later work wait for the model's streams' work (and the reverse, before). */
rnncc_status rt_join_user_stream(rnncc_model *m, cudaStream_t user, int before);
/* Makes stream 1's later work wait for stream 0's work so far (fork), or the reverse (join). */
rnncc_status rt_fork_lanes(rnncc_model *m);
rnncc_status rt_join_lanes(rnncc_model *m);
/* A wavefront's chunks of T steps (at most RT_WAVE_CHUNKS, none empty), and chunk c's steps t0 .. t1-1. */
int64_t rt_wave_chunks(int64_t T);
void rt_wave_chunk(int64_t T, int64_t c, int64_t *t0, int64_t *t1);
/* Whether the backward of a model's per-step layers runs as a wavefront (rt_backward.c). */
int rt_backward_waves(const rnncc_model *m);

/* Which of the model's streams is in a capture (rnncc's own, or a caller's it joined) into
 * *capturing: its index, or -1 for none. */
rnncc_status rt_streams_capturing(rnncc_model *m, int *capturing);

/* Takes and releases the process-wide lock held around each graph capture and each creation or
 * destruction of cuBLAS handles (rt_lock.c says why). */
void rt_exclusive_begin(void);
void rt_exclusive_end(void);

/* Whether g has run (captured, or directly) with the arguments key: its buffers were judged then (overlap and
 * reachability, rt_spans.c: the checks run for new keys only). */
int rt_graph_knows(const RtGraph *g, const void *key, size_t keylen);
/* Runs issue(ctx) on the model's streams after the caller's stream's work: directly for new arguments
 * (or graphs off), else through graph g, captured on a repeated key (directly if spoiled) and replayed. */
rnncc_status rt_run(rnncc_model *m, RtGraph *g, const void *key, size_t keylen, rnncc_status (*issue)(void *),
                    void *ctx, cudaStream_t stream);

#endif
