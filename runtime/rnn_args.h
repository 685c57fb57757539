/* The argument block every generated kernel takes, shared verbatim by the C runtime and the
 * CUDA prelude (embedded as a string by the Makefile), so both sides agree on its layout.
 * Key idea: one fixed-size struct passed by value; the plan says which slots a cell uses. */
#ifndef RNNCC_RNN_ARGS_H
#define RNNCC_RNN_ARGS_H

#define RNN_MAX_BUFFERS 32
#define RNN_MAX_STATES 8
#define RNN_MAX_OUTPUTS 8

typedef struct RnnArgs {
    const float *params;                 /* the packed parameter buffer of this layer and direction */
    const float *x;                      /* layer input: column (pos, n) starts at x + (pos*N + n)*ldx */
    long long ldx;
    float *buf[RNN_MAX_BUFFERS];         /* plan buffers: hoisted ones hold T*N columns, step ones N */
    const float *state_prev[RNN_MAX_STATES]; /* per state: [N][S], the value this step reads */
    float *state_next[RNN_MAX_STATES];   /* per state: [N][S], where this step writes the next value */
    float *y[RNN_MAX_OUTPUTS];           /* per output: column (pos, n) at y + (pos*N + n)*ldy */
    long long ldy[RNN_MAX_OUTPUTS];
    const int *lengths;                  /* [N] sequence lengths, or NULL: every sequence has T steps */
    /* backward kernels only: adjoints, each laid out like the value it belongs to */
    float *dbuf[RNN_MAX_BUFFERS];        /* += adjoints of the plan buffers (same columns and widths as buf) */
    float *dstate_prev[RNN_MAX_STATES];  /* += the adjoint of the state value this step read */
    float *dstate_next[RNN_MAX_STATES];  /* the adjoint of this step's state result; a per-step kernel zeroes
                                          * what it read of it, for step t-1 adds to it as its dstate_prev */
    const float *dy[RNN_MAX_OUTPUTS];    /* output adjoints (NULL: zero), column (pos, n) at dy + (pos*N + n)*ldy */
    float *dx;                           /* += input adjoints (NULL: not wanted), column (pos, n) at dx + (pos*N + n)*ldx */
    float *dparam;                       /* += vector-parameter adjoints: parameter p's [N][rows] block at dparam + N*acc_offset[p] */
    int t;                               /* the step's iteration index, 0..T-1 */
    int reverse;                         /* 1: this direction reads positions from each sequence's end */
    int dshared;                         /* backward: 1 where the adjoint of a buffer that another's holds too
                                          * (codegen/cg.h, cg_adjoint_shared) lives in that one's: stored once */
    int twins_only;                      /* backward, 16-bit modes: 1 where an adjoint stored with its 16-bit twin (dbuf16)
                                          * is stored as the twin alone, which all its readers take */
    int summed;                          /* 1 where the step GEMM of a buffer paired with a hoisted one (codegen/cg.h,
                                          * cg_value_summed) added its products into that one's columns: its results
                                          * are read as 0 */
    int T, N;
    /* 16-bit twins (RNNCC_FP16, RNNCC_BF16; runtime/rt_half.c): where a kernel writes a GEMM input
     * whole (a multiplied state's next value, a GEMM result's adjoint that one kernel alone sends),
     * it also writes it rounded to 16 bits (bf16 when bf16 is set, else fp16) at the same index of
     * its twin, so that no GEMM rounds it again. NULL: no twin. state16[k] twins state_next[k]
     * (persistent kernels: slot 0 of the state's slots, as state_prev[k]); dbuf16[b] twins dbuf[b];
     * buf16[b] twins buf[b] where b holds an element-wise value a GEMM multiplies (codegen/cg.h,
     * cg_value_twinned; persistent kernels: step 0's columns, as buf[b]). */
    unsigned short *state16[RNN_MAX_STATES];
    unsigned short *dbuf16[RNN_MAX_BUFFERS];
    unsigned short *buf16[RNN_MAX_BUFFERS];
    /* split twins (RNNCC_TF32X3; runtime/rt_x3.c), per-step kernels only: where a kernel writes a multiplied
     * state's next value or an adjoint a step GEMM multiplies (a step buffer's, or a hoisted one's that keeps
     * it) that it alone stores, it also writes the value split for the GEMM that next multiplies it (its right
     * operand: per column of len values, 3 len floats, hi, lo, hi; prelude's rnn_x3_twin), one step's
     * columns: state3[k] for state_next[k], dbuf3[b] for dbuf[b] (a sequence's column). NULL: none. */
    float *state3[RNN_MAX_STATES];
    float *dbuf3[RNN_MAX_BUFFERS];
    const unsigned short *params16;      /* params rounded to 16 bits, at the same index (persistent kernels
                                          * with 16-bit products read their weights from it), or NULL */
    int bf16;
    /* persistent kernels only (codegen/cg_persist.c): one launch runs steps t .. t_end-1 */
    int t_end;
    int state_wrap;                      /* state slots: step t reads slot t % state_wrap (0: slot t; else a power
                                          * of two, which the kernels take as a mask), from state_prev[k] */
    long long buf_step[RNN_MAX_BUFFERS]; /* floats between consecutive steps' copies of a step buffer (0: reused) */
    unsigned *sync;                      /* the grid barrier's counter, zeroed before each launch */
    unsigned long long *flags;           /* forward with flags: state results as flagged words, zeroed before each launch */
    float *state_final[RNN_MAX_STATES];  /* forward: per state, [N][S], where the pass's last step (t == T-1) also
                                          * writes its next value (the caller's hT), or NULL */
} RnnArgs;

/* The state staging kernels' argument (codegen/convert.cuh, runtime/rt_half.c; every precision): up to
 * RNN_STATE_COPIES copies of n floats, each from src (NULL: from the 16-bit src16, widened, or where that is
 * NULL too zeros), plus plus's where not NULL, to dst and, where dst16 is not NULL, rounded to 16 bits into
 * dst16: a layer-direction's initial states and their twins (with, for layer 0 in the 16-bit modes, its
 * input's 16-bit copy, and for a persistent forward its barrier counter's and flagged words' zeros), or its
 * final states, or a backward's zeroed and seeded adjoints, or the fold's map's columns, in one launch. Copy
 * k takes the blocks block0 .. block0 + blocks - 1 of a one-dimensional grid. */
#define RNN_STATE_COPIES (RNN_MAX_STATES + 3)
typedef struct RnnStateCopy {
    const float *src;
    float *dst;
    unsigned short *dst16;
    long long n;
    int block0, blocks;
    const unsigned short *src16; /* bf16 in rnncc_states_bf16, else fp16 */
    const float *plus;
} RnnStateCopy;
typedef struct RnnStateCopies {
    RnnStateCopy c[RNN_STATE_COPIES];
    int count;
} RnnStateCopies;

/* The projection fold's column kernels (codegen/convert.cuh, runtime/rt_fold.c). Entry: for each sequence n
 * with a step, rows floats of add[n][rows] added into buf at column (pos0 * N + n) * ld + row0, pos0 its
 * first position (len - 1 where reverse). Gather, its adjoint: add[n][rows] = those floats of buf (of its
 * 16-bit twin buf16 where not NULL, bf16 or fp16), where n has no step src's (NULL: 0; each float read and
 * written by one thread, so src may be add itself: h0 and hT one buffer). Final: for each sequence n
 * without a step (every one when T is 0), n's rows floats of src (NULL: zeros) into dst (added where accumulate),
 * as its final state s_T = s_0, or its dh0 += dhT; where zero_stepped, zeros into dst for every other sequence
 * (a GEMM of z_T then adds P z_T into them: s_0 lands before it, so src may be dst itself). */
typedef struct RnnFoldColumns {
    float *add;
    float *buf;
    const unsigned short *buf16;
    const float *src;
    float *dst;
    const int *lengths;
    long long ld, row0, rows;
    int N, T, reverse, bf16, accumulate, zero_stepped;
} RnnFoldColumns;

#endif
