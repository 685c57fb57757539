/* The persistent backend's tile: which rows, passes, chunks, warps, clusters and hand-off a layer's
 * persistent kernel takes (cg_persist_plan and its rules, the knobs' parsers, the tile's words),
 * for cg_persist.c to emit and the runtime to launch (contract in codegen/cg.h, design in
 * docs/backends.md).
 * Key idea: block s owns elements [L*s/G, L*(s+1)/G) of every length-L quantity, so it computes
 * the rows of every step GEMM that produce its own units; the plan sizes that share (rows a pass,
 * sequences a pass, staged chunks, weights held in registers) to the device's shared memory and
 * registers, and says why where the layer does not fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_gen.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Rows of stacked block b of GEMM gm (its parameter's rows). */
int64_t cg_persist_block_rows(const PlanLayout *L, const SchedGemm *gm, int b) {
    const IrCell *c = L->plan->cell;
    return L->param_rows[c->nodes[c->nodes[gm->products[b]].args[0]].index];
}

const char *cg_products_name(CgProducts products) {
    static const char *const names[] = {"fp32 FFMA", "tf32 tensor-core", "fp16 tensor-core", "bf16 tensor-core"};
    return products >= CG_FFMA && products <= CG_BF16 ? names[products] : "unknown";
}

/* The products' input precision in a word: "fp32", "tf32", "fp16" or "bf16". */
static const char *products_precision(CgProducts products) {
    static const char *const names[] = {"fp32", "tf32", "fp16", "bf16"};
    return products >= CG_FFMA && products <= CG_BF16 ? names[products] : "unknown";
}

int cg_persist_nw(int64_t N) { return N <= 4 ? 1 : N <= 8 ? 2 : N <= 16 ? 4 : 8; }

int cg_persist_class(int64_t N) { return N <= 4 ? 0 : N <= 8 ? 1 : N <= 16 ? 2 : N <= 32 ? 3 : 4; }

/* Floats between two sequences' partial sums of rpp rows (persist.cuh's LDR, which the kernels take
 * from here as a template argument, above rnn_mv_finish): rpp padded to 4 modulo 16 for the mma
 * product, 8 for FFMA, so that no two lanes' stores or loads share a bank; at most rpp + 12. */
int64_t cg_persist_red_ld(int64_t rpp, int mma) { return rpp + ((mma ? 4 : 8) - rpp % 16 + 16) % 16; }

/* Registers a thread of an FFMA kernel takes past the weights it holds (weights_in_registers; bench/
 * NOTES.md section 49, ptxas over every shipped cell at 1-64 sequences, H = 256-1024, 4 and 8 warps,
 * clusters, split K): 128 for one step GEMM at most 8 sequences a pass on 8 warps (small_b4's LSTM
 * holds 7 of its 8 steps and 31 of 32 backward; the device measured holding all no faster); 150
 * with more than 8 a pass or on 4 warps (at 128 the peephole LSTM and GRU's split backward spilled
 * 8-20 bytes); 170 with several step GEMMs (mLSTM and LSTMP spilled at 128, LSTMP at 150 too); 190
 * with several step GEMMs at 32 a pass or on 4 warps (random cells of three and four GEMMs at 64
 * sequences on 4 warps spilled holding 96-112, not 64: ptxas's choices there are erratic). */
enum { CG_FFMA_REST = 128, CG_FFMA_REST_MORE = 150, CG_FFMA_REST_TWO = 170, CG_FFMA_REST_MANY = 190 };

/* Columns of K a block's warps take a step, which staging chunks and a split K's parts come in whole:
 * rnn_mv_t, rnn_mv_mma: warps' shares of whole 16-byte loads a quarter-warp (16 k) or, with 16-bit
 * weights, a warp's 32 k a step. */
static int64_t k_grain(const CgPersist *P) { return (P->half ? 32 : 16) * (int64_t)P->warps; }

/* The 16-row tiles of a tensor-core pass of 8*rw rows (persist.cuh rnn_mv_mma's MT). */
int cg_persist_mma_tiles(int rw) { return (rw + 1) / 2; }

/* Are a backward's weight rows (cols elements) whole 16-byte pieces, so that their columns load
 * through rnn_load_transposed? (Split K loads only so.) */
int cg_persist_rows_in_pieces(const CgPersist *P, int64_t cols) { return cols % (16 / (P->half ? 2 : 4)) == 0; }

/* Does a backward's GEMM q (cols operand elements) load its 16-bit weights held in registers as they
 * lie, each block's columns whole 16-byte pieces (every block's first element and count multiples of
 * 8), and transpose them on the way into registers (persist.cuh rnn_copy_columns16, rnn_wfrag_load_t)? */
int cg_persist_copies_columns(const CgPersist *P, const CgPersistGemm *q, int64_t cols) {
    if (!P->backward || !P->half || !P->mma || q->wregs <= 0 || q->passes != 1 || q->chunks != 1 || P->blocks <= 0) return 0;
    return cols % P->blocks == 0 && (cols / P->blocks) % 8 == 0; /* split K: then ro = cols / G, rp = cluster * ro */
}

/* Bytes of dynamic shared memory: fixed part, two staging tiles, the partial sums. */
static int64_t smem_bytes(const CgPersist *P) {
    if (P->ngemms == 0) return 0;
    int64_t np = 4 * (int64_t)P->nw;
    return (P->fixed_floats + P->xs_floats + P->warps * np * cg_persist_red_ld(P->rpp_max, P->mma)) * (int64_t)sizeof(float);
}

/* Does a node of a step group (J wide) take an argument r for which test(L, r, J, arg) holds? */
typedef int (*ArgTest)(const PlanLayout *L, IrRef r, int64_t J, int arg);
static int step_args_any(const PlanLayout *L, ArgTest test, int arg) {
    const Plan *p = L->plan;
    const IrCell *c = p->cell;
    for (int gi = 0; gi < p->ngroups; gi++) {
        const SchedGroup *grp = &p->groups[gi];
        if (grp->program != SCHED_STEP) continue;
        int64_t J = cg_group_width(L, gi);
        for (int i = 0; i < grp->nnodes; i++) {
            const IrNode *n = &c->nodes[grp->nodes[i]];
            for (int a = 0; a < ir_ops[n->op].arity; a++)
                if (test(L, n->args[a], J, arg)) return 1;
        }
    }
    return 0;
}

/* r is a result of GEMM j as long as J (so in the rows the group's block computed). */
static int own_rows_of(const PlanLayout *L, IrRef r, int64_t J, int j) {
    const IrCell *c = L->plan->cell;
    return c->nodes[r].op == IR_MATVEC && L->plan->node[r].gemm == j && ir_node_len(c, r, L->dimval) == J;
}

/* Does a step group read a result of GEMM j as long as its own J (so in the rows its block computed)? */
static int read_in_own_rows(const PlanLayout *L, int j) { return step_args_any(L, own_rows_of, j); }

/* Is every read of GEMM j's results a step group's in the rows its block computed (so from shared
 * memory, for the sequences kept there)? Not where a group of any other program reads them, a
 * group writes one out as it is, or another GEMM multiplies one. */
static int read_only_in_own_rows(const PlanLayout *L, int j) {
    const Plan *p = L->plan;
    const IrCell *c = p->cell;
    for (int k = 0; k < p->ngemms; k++)
        if (c->nodes[p->gemms[k].operand].op == IR_MATVEC && p->node[p->gemms[k].operand].gemm == j) return 0;
    for (int gi = 0; gi < p->ngroups; gi++) {
        const SchedGroup *grp = &p->groups[gi];
        int64_t J = cg_group_width(L, gi);
        for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
            IrRef args[3];
            for (int a = 0, na = cg_item_reads(c, grp, i, args); a < na; a++) {
                if (c->nodes[args[a]].op != IR_MATVEC || p->node[args[a]].gemm != j) continue;
                if (i >= grp->nnodes || grp->program != SCHED_STEP || !own_rows_of(L, args[a], J, j)) return 0;
            }
        }
    }
    return 1;
}

int cg_persist_find_group(const Plan *p, int prog, int k) {
    for (int gi = 0; gi < p->ngroups; gi++)
        if ((int)p->groups[gi].program == prog && p->groups[gi].index == k) return gi;
    return -1;
}

/* Does group gi read, in a node or a write (cg_item_reads), a value r for which test(L, r, J, arg)
 * holds (J: the group's width)? */
static int group_reads_any(const PlanLayout *L, int gi, ArgTest test, int arg) {
    const SchedGroup *grp = &L->plan->groups[gi];
    const int64_t J = cg_group_width(L, gi);
    for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
        IrRef args[3];
        for (int a = 0, na = cg_item_reads(L->plan->cell, grp, i, args); a < na; a++)
            if (test(L, args[a], J, arg)) return 1;
    }
    return 0;
}

/* r is a result of GEMM j. */
static int result_of(const PlanLayout *L, IrRef r, int64_t J, int j) {
    (void)J;
    return L->plan->cell->nodes[r].op == IR_MATVEC && L->plan->node[r].gemm == j;
}

/* Does group gi read a result of GEMM j? */
static int group_reads_gemm(const PlanLayout *L, int gi, int j) { return group_reads_any(L, gi, result_of, j); }

/* A fused step's group (CgPersistGemm.fuse) takes at least this many items a block: with one warp of
 * them (small_b4: 4 sequences x 8 units), that warp adding up every partial sum it reads took longer
 * than rnn_mv_finish's whole block (bench/NOTES.md section 45). */
enum { FUSE_ITEMS = 64 };

/* Can the group after forward GEMM qi's phase add up its warps' partial sums itself
 * (CgPersistGemm.fuse)? Where its results stay on chip only (kept_only), in one pass of rows and, for
 * every batch of the class, of sequences, that group alone reads them and no other product of the
 * step runs between (the partial sums' area, rnn_red, holds the block's last product's); on tensor
 * cores (FFMA products measured no gain), where the class's largest batch gives the group's blocks
 * FUSE_ITEMS items. */
static int sums_left_in_red(const PlanLayout *L, const CgPersist *P, int qi) {
    const Plan *p = L->plan;
    const CgPersistGemm *q = &P->gemms[qi];
    const int phase = p->gemms[q->gemm].phase, next = cg_persist_find_group(p, SCHED_STEP, phase + 1);
    if (P->backward || !P->mma || !q->kept_only || q->passes != 1 || !P->seqs_max || P->seqs_max > 4 * P->nw ||
        next < 0 || !group_reads_gemm(L, next, q->gemm) || P->seqs_max * ceil_div(cg_group_width(L, next), P->blocks) < FUSE_ITEMS)
        return 0;
    for (int k = qi + 1; k < P->ngemms; k++)
        if (p->gemms[P->gemms[k].gemm].phase == phase) return 0; /* a later product of its phase */
    for (int gi = 0; gi < p->ngroups; gi++)
        if (gi != next && group_reads_gemm(L, gi, q->gemm)) return 0;
    return 1;
}

/* The registers a thread holds a k step of a pass of 8*rw rows in: tensor cores, A fragments, 8 a
 * 16-row tile (persist.cuh rnn_wfrag); FFMA, a float4 a row (rnn_ffrag). */
static int64_t step_registers(const CgPersist *P, int rw) { return P->mma ? 8 * cg_persist_mma_tiles(rw) : 4 * rw; }

/* The steps of its k loop whose weights each lane of step GEMM qi could keep in registers
 * (CgPersistGemm.wregs), and their registers in *regs; 0 where it cannot: more than one pass of rows,
 * or chunks. */
static int fragment_steps(const CgPersist *P, int qi, int64_t *regs) {
    const CgPersistGemm *q = &P->gemms[qi];
    *regs = 0;
    if (q->passes != 1 || q->chunks != 1) return 0;
    /* tensor cores: k_grain a step and block; FFMA: 16 a warp's step with at most 8 sequences a pass
     * (a lane's quarter of them every fourth float4), else 4 (persist.cuh rnn_mv_t's KS) */
    const int64_t steps = P->mma ? q->kc / k_grain(P) : q->kc / P->warps / (P->nw <= 2 ? 16 : 4);
    *regs = steps * step_registers(P, q->rw);
    return (int)steps;
}

CgPersistAsk cg_persist_pairs_ask(const CgPersistAsk *fours) {
    CgPersistAsk pairs = *fours;
    pairs.cluster = 2;
    pairs.split = fours->split && fours->N > 16; /* the rule's pairs split K at 17-32 (section 33) */
    return pairs;
}

const char *cg_persist_pairs_reason(const CgPersist *P) {
    return P->backward ? "its clusters of 4 could not split K" : "its clusters of 4 would read the step weights from shared memory";
}

int cg_persist_pairs_serve(const CgPersist *pairs) {
    return pairs->cluster == 2 && (pairs->backward || cg_persist_held_registers(pairs));
}

int cg_persist_fours_yield(Arena *arena, const PlanLayout *layout, const CgPersistAsk *ask, const CgPersist *fours) {
    if (fours->cluster != 4) return 0;
    /* a backward's fours are the rule's to split K (section 58); where they cannot, fours sharing the
     * operand lost by up to 58% (GRU tf32 at H = 1024) and the rule's earlier pairs take it */
    if (fours->backward && (fours->split || !ask->split)) return 0;
    if (!fours->backward && cg_persist_held_registers(fours)) return 0;
    CgPersistAsk pairs = cg_persist_pairs_ask(ask);
    CgPersist planned;
    char why[256];
    return cg_persist_plan(arena, layout, &pairs, &planned, why, sizeof why) && cg_persist_pairs_serve(&planned);
}

/* The rule's staged tile P (planned from ask) on its fewest blocks with the same work, unless blocks_forced or
 * in clusters of 4 (whose yield to pairs, cg_persist_fours_yield, judges the fours as the rule plans them) or
 * planned in other clusters than asked: deepbench's fp16 LSTM training pass 18 us faster on 128 blocks than on
 * the rule's 132, inference 6 (bench/NOTES.md sections 118 and 119), the tiles the search already took. */
static void staged_fewest(const PlanLayout *layout, CgPersistAsk *ask, const CgPersist *P, int blocks_forced) {
    if (blocks_forced || ask->cluster == 4 || P->cluster != (ask->cluster > 1 ? ask->cluster : 1)) return;
    const int fewer = cg_persist_fewer_blocks(layout, ask, P);
    if (fewer) ask->blocks = fewer;
}

int cg_persist_direct_rule(Arena *arena, const PlanLayout *layout, CgPersistAsk *ask, int cluster_forced, int blocks_forced) {
    if ((ask->products != CG_F16 && ask->products != CG_BF16) || (cluster_forced && !ask->backward)) return 0;
    CgPersist staged, d; /* ask's own plan (a backward's, planned first), the direct one */
    char why[256];
    const int backward_planned = ask->backward && cg_persist_plan(arena, layout, ask, &staged, why, sizeof why);
    if (backward_planned && ask->N <= 4 * staged.nw)
        for (int qi = 0; qi < staged.ngemms; qi++)
            if (staged.gemms[qi].waves) { /* one pass staged in waves keeps them (deepbench) */
                staged_fewest(layout, ask, &staged, blocks_forced);
                return 0;
            }
    CgPersistAsk direct = *ask;
    direct.handoff = CG_HANDOFF_DIRECT;
    if (!ask->backward) direct.cluster = 1; /* a backward keeps its clusters splitting K, and its blocks */
    if (!cg_persist_plan(arena, layout, &direct, &d, why, sizeof why) || !d.direct) {
        if (ask->backward ? backward_planned : cg_persist_plan(arena, layout, ask, &staged, why, sizeof why))
            staged_fewest(layout, ask, &staged, blocks_forced);
        return 0;
    }
    const int fewer = blocks_forced || ask->backward ? 0 : cg_persist_fewer_blocks(layout, &direct, &d);
    if (fewer) direct.blocks = fewer;
    *ask = direct;
    return 1;
}

int cg_persist_h100_plan(Arena *arena, const PlanLayout *layout, CgPersistAsk *ask, int by_rule, CgPersist *P, char *why,
                         size_t why_size, int *in_pairs) {
    *in_pairs = 0;
    CgPersistAsk asked = *ask;
    if (asked.cluster == 4 && asked.sms > CG_H100_FOUR_BLOCKS) asked.sms = CG_H100_FOUR_BLOCKS;
    const int fits = cg_persist_plan(arena, layout, &asked, P, why, why_size);
    if (asked.sms != ask->sms && (!fits || P->cluster == 1)) {
        /* as rt_persist_build: planned for the blocks whose clusters are resident, it did not fit or
         * came out without clusters, and without clusters every multiprocessor serves better; the
         * words keep why the clusters were refused */
        char refused[256] = "";
        const char *reason = fits ? strstr(why, "; clusters of") : NULL;
        if (reason) snprintf(refused, sizeof refused, "%s", reason);
        ask->cluster = 1;
        if (!cg_persist_plan(arena, layout, ask, P, why, why_size)) return 0;
        const size_t at = strlen(why);
        if (at < why_size) snprintf(why + at, why_size - at, "%s", refused);
        return 1;
    }
    if (!fits) return 0;
    if (!by_rule || !cg_persist_fours_yield(arena, layout, ask, P)) return 1;
    CgPersistAsk pairs = cg_persist_pairs_ask(ask);
    CgPersist planned;
    char pairs_why[256];
    if (!cg_persist_plan(arena, layout, &pairs, &planned, pairs_why, sizeof pairs_why)) return 1;
    *P = planned;
    snprintf(why, why_size, "%s", pairs_why);
    *ask = pairs;
    *in_pairs = 1;
    return 1;
}

int cg_persist_held_registers(const CgPersist *P) {
    int64_t regs = 0;
    for (int qi = 0; qi < P->ngemms; qi++) regs += P->gemms[qi].wregs * step_registers(P, P->gemms[qi].rw);
    return (int)regs;
}

int cg_persist_twins_staged(const Plan *plan, const CgPersist *P) {
    if (!P->backward || !P->half) return 0;
    for (int qi = 0; qi < P->ngemms; qi++)
        if (cg_adjoint_twinned(plan, plan->gemms[P->gemms[qi].gemm].out_buffer) && !P->gemms[qi].x16) return 0;
    return 1;
}

/* Which step GEMMs keep their weights in registers (CgPersistGemm.wregs): those needing most first,
 * within a budget of what a block of this many warps may take a thread (65536 a multiprocessor, 255
 * at most) past what the rest of the unit takes, less rnn_mv_mma's sums past a pass of 16 sequences
 * (8 registers a 16-row tile and 8 sequences: at 32 a pass, mLSTM's two GEMMs' fragments spilled);
 * or within asked registers (CgPersistAsk.wregs: -1 none). Tensor cores hold all of a GEMM's steps
 * or none; FFMA as many of its first steps as fit. The rest, from ptxas over every shipped cell's
 * forward at 8-32 sequences, H = 640-1024, 4 and 8 warps, tf32 and fp16 (bench/NOTES.md section 47):
 * 127 (so 128 at 4 and 8 warps: deepbench's and small_b4's tf32 fragments), but 150 with several
 * step GEMMs at 32 sequences a pass or on 4 warps, where mLSTM and LSTMP spilled at 127 (LSTM, GRU
 * and peephole never did, nor these two at 8 warps and at most 16 a pass), and 180 in a backward
 * with several (section 64: the backward's rest is larger; one-GEMM backwards held within 127
 * unspilled over every shipped cell at H = 768 and 1024, 4-32 sequences); FFMA: CG_FFMA_REST and
 * the larger ones beside it (section 49). A kernel that spills all the same is built again holding fewer
 * (runtime/rt_persist.c). weights_budget: that budget, before any registers are set aside. */
static int64_t weights_budget(const CgPersist *P) {
    int cap = 65536 / (32 * P->warps), mt = 0;
    if (cap > 255) cap = 255;
    for (int qi = 0; qi < P->ngemms; qi++)
        if (cg_persist_mma_tiles(P->gemms[qi].rw) > mt) mt = cg_persist_mma_tiles(P->gemms[qi].rw);
    const int nt = P->nw / 2; /* 8-sequence tiles a pass */
    const int many = P->ngemms > 1 && (nt > 2 || P->warps < 8); /* several GEMMs at 32 a pass, or on 4 warps */
    /* tensor cores' backward with several GEMMs: 180 (mLSTM fp16 at (16, 1024) spilled at 127, 150 and 170) */
    const int rest = P->mma                      ? (P->ngemms > 1 && P->backward ? 180 : many ? 150 : 127) /* (above) */
                     : many                      ? CG_FFMA_REST_MANY
                     : P->ngemms > 1             ? CG_FFMA_REST_TWO
                     : P->nw > 2 || P->warps < 8 ? CG_FFMA_REST_MORE
                                                 : CG_FFMA_REST;
    /* and on tensor cores the sums of a pass's third 16-row tile (a backward's 40-row pass splitting K in fours:
     * mLSTM fp16 at (16, 1024) spilled holding one GEMM's 96 within 105, section 64) */
    return cap - rest - (P->mma && nt > 2 ? 8 * mt * (nt - 2) : 0) - (P->mma && mt > 2 ? 8 * (mt - 2) * nt : 0);
}
static void weights_in_registers(CgPersist *P, int asked, int reserved) {
    for (int qi = 0; qi < P->ngemms; qi++) P->gemms[qi].wregs = 0;
    int64_t left = asked ? (asked < 0 ? 0 : asked) : weights_budget(P) - reserved;
    for (;;) {
        int best = -1, steps = 0;
        int64_t most = 0, regs = 0;
        for (int qi = 0; qi < P->ngemms; qi++) {
            int k = P->gemms[qi].wregs ? 0 : fragment_steps(P, qi, &regs);
            if (k > 0 && !P->mma && regs > left) { /* FFMA: the first steps that fit */
                const int64_t per = step_registers(P, P->gemms[qi].rw);
                k = (int)(left / per);
                regs = k * per;
            }
            if (k > 0 && regs <= left && regs > most) best = qi, steps = k, most = regs;
        }
        if (best < 0) return;
        P->gemms[best].wregs = steps;
        left -= most;
    }
}

/* Does group gi read a result of a phase-`phase` step GEMM computed by another block? Not when
 * every such stacked block is exactly J long: the block then computed those rows itself. */
int cg_persist_reads_foreign_rows(const PlanLayout *L, int gi, int phase) {
    const Plan *p = L->plan;
    const IrCell *c = p->cell;
    const SchedGroup *grp = &p->groups[gi];
    int64_t J = cg_group_width(L, gi);
    for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
        IrRef args[3];
        int na = cg_item_reads(c, grp, i, args);
        for (int a = 0; a < na; a++) {
            const SchedNode *s = &p->node[args[a]];
            if (c->nodes[args[a]].op != IR_MATVEC) continue;
            const SchedGemm *gm = &p->gemms[s->gemm];
            if (gm->program == SCHED_STEP && gm->phase == phase && ir_node_len(c, args[a], L->dimval) != J) return 1;
        }
    }
    return 0;
}

/* r is a state of another length than J. */
static int state_not_j(const PlanLayout *L, IrRef r, int64_t J, int unused) {
    (void)unused;
    const IrCell *c = L->plan->cell;
    return c->nodes[r].op == IR_STATE && ir_node_len(c, r, L->dimval) != J;
}

/* Does a step group read or write a state of another length than its J? Then the blocks'
 * shares of that state (and of its adjoint) differ between the group (J) and the rest (the
 * state's length). */
int cg_persist_states_cross_blocks(const PlanLayout *L) {
    const Plan *p = L->plan;
    for (int gi = 0; gi < p->ngroups; gi++) {
        const SchedGroup *grp = &p->groups[gi];
        if (grp->program != SCHED_STEP) continue;
        for (int w = 0; w < grp->nwrites; w++)
            if (grp->writes[w].kind == WRITE_STATE &&
                ir_node_len(p->cell, grp->writes[w].node, L->dimval) != cg_group_width(L, gi))
                return 1;
    }
    return step_args_any(L, state_not_j, 0);
}

/* r is an element-wise value of the step that a step group computed over another width than J (so,
 * for some elements, in another block). */
static int foreign_value(const PlanLayout *L, IrRef r, int64_t J, int unused) {
    (void)unused;
    const SchedNode *s = &L->plan->node[r]; /* s->group: the number of the step group computing it */
    if (s->program != SCHED_STEP || s->gemm >= 0) return 0;
    int from = cg_persist_find_group(L->plan, SCHED_STEP, s->group);
    return from < 0 || cg_group_width(L, from) != J;
}

/* Does step group gi read such a value? Within one step only a barrier would guard that. */
static int reads_foreign_values(const PlanLayout *L, int gi) { return group_reads_any(L, gi, foreign_value, 0); }

/* Is step GEMM gm's operand a value of its step that moves as flagged words (cg_flagged_buffer):
 * an element-wise node a later step group computes (not group 0: the plan refuses that), stored whole
 * in a buffer as long as the GEMM's K? */
static int operand_flaggable(const PlanLayout *L, const SchedGemm *gm) {
    const Plan *p = L->plan;
    const SchedNode *s = &p->node[gm->operand];
    IrOp op = p->cell->nodes[gm->operand].op;
    if (op == IR_STATE || op == IR_MATVEC || s->program != SCHED_STEP || s->buffer < 0) return 0;
    int64_t K = L->gemm_cols[gm - p->gemms];
    return s->group >= 1 && s->group <= gm->phase && /* the number of the step group computing it */
           L->buffer_width[s->buffer] == K && ir_node_len(p->cell, gm->operand, L->dimval) == K;
}

/* Can a forward's steps hand off by flagged values (CG_HANDOFF_FLAGS)? When every step GEMM is staged
 * whole from a value that says itself when it has arrived: phase 0's from states (step t-1's flagged
 * words), a later phase's from a value its step computed (that step's flagged words: mLSTM's m,
 * LSTMP's projected input); no group reads another block's rows, values or states; no group 0 before
 * the first GEMMs. Each block writes a part of each multiplied state (their lengths at least the
 * blocks), so a block that has staged step t-1's states knows that every block has left step t-2:
 * two slots a flagged quantity suffice. Clusters stage by multicast bulk copies, which cannot check
 * flags. */
static int flags_allowed(const PlanLayout *L, const CgPersist *P) {
    const Plan *p = L->plan;
    const IrCell *c = p->cell;
    if (P->backward || P->cluster > 1 || P->ngemms == 0) return 0;
    if (cg_persist_find_group(p, SCHED_STEP, 0) >= 0) return 0;
    for (int qi = 0; qi < P->ngemms; qi++) {
        const SchedGemm *gm = &p->gemms[P->gemms[qi].gemm];
        if (P->gemms[qi].chunks != 1) return 0;
        if (gm->phase == 0 ? c->nodes[gm->operand].op != IR_STATE : !operand_flaggable(L, gm)) return 0;
    }
    for (int k = 1; k <= p->phases[SCHED_STEP]; k++) {
        int gi = cg_persist_find_group(p, SCHED_STEP, k);
        if (gi < 0) continue;
        for (int ph = 0; ph < k; ph++)
            if (cg_persist_reads_foreign_rows(L, gi, ph)) return 0;
        if (reads_foreign_values(L, gi)) return 0;
    }
    for (int k = 0; k < c->nstates; k++)
        if (cg_state_multiplied(p, k) && ir_shape_numel(&c->states[k].shape, L->dimval) < P->blocks) return 0;
    return !cg_persist_states_cross_blocks(L);
}

/* Can step GEMM q load its operand straight into its B fragments (CG_HANDOFF_DIRECT; persist.cuh
 * rnn_mv_mma, XH = 2)? From a 16-bit twin (x16: a forward's state, a backward's d(gates)) in one pass
 * of rows and one chunk, with 16-bit tensor-core products, twins written, no flags and no clusters
 * sharing copies (their multicast stages a shared tile; a backward's clusters splitting K load their own
 * part); the weights must also be held in registers (weights_in_registers decides that after
 * direct_registers is set aside). */
static int direct_possible(const CgPersist *P, const CgPersistGemm *q) {
    return P->mma && P->half && P->twins && (P->cluster == 1 || P->split) && !P->flags && q->x16 && q->passes == 1 &&
           q->chunks == 1;
}

/* Registers a thread of step GEMM q holds its B fragments in when it loads its operand straight: a uint4
 * for each of its k steps (kc / k_grain) and 8-sequence tiles of a pass (nw / 2). */
static int64_t fragment_registers(const CgPersist *P, const CgPersistGemm *q) { return q->kc / k_grain(P) * (P->nw / 2) * 4; }

/* Registers a thread of a forward loading operands straight holds its B fragments in, set aside from
 * the weights' budget: the most any step GEMM that can takes; 0 where none can. A backward sets none
 * aside (backward_direct_fits instead). */
static int direct_registers(const CgPersist *P) {
    if (P->backward) return 0;
    int64_t most = 0;
    for (int qi = 0; qi < P->ngemms; qi++) {
        int64_t r = direct_possible(P, &P->gemms[qi]) ? fragment_registers(P, &P->gemms[qi]) : 0;
        if (r > most) most = r;
    }
    return (int)most;
}

/* The step GEMMs of P that load their operand straight (CgPersistGemm.direct). */
static int straight_gemms(const CgPersist *P) {
    int n = 0;
    for (int qi = 0; qi < P->ngemms; qi++) n += P->gemms[qi].direct;
    return n;
}

/* Does a backward's step GEMM q, its weights held in registers as planned without loading straight, have
 * room for its B fragments too? When the weights held and q's fragments take at most 80 registers past
 * the weights' budget: ptxas over the LSTM fp16 backward (bench/NOTES.md section 107) compiled 192 of
 * them against deepbench's budget of 112 (pairs splitting K; fastrnns' 32 a pass alike) and 192 against
 * small_b4's 128 in 248-254 registers unspilled, and spilled 404 bytes at 256 against 128 (H = 1024, 16
 * sequences unclustered). Near the bound ptxas is erratic (192 against 128 spilled 24 bytes at H = 768, 16
 * sequences unclustered): the runtime builds a kernel loading straight that spills again staged. */
static int backward_direct_fits(const CgPersist *P, const CgPersistGemm *q) {
    return cg_persist_held_registers(P) + fragment_registers(P, q) <= weights_budget(P) + 80;
}

int cg_state_multiplied(const Plan *p, int k) {
    for (int j = 0; j < p->ngemms; j++) {
        const IrNode *n = &p->cell->nodes[p->gemms[j].operand];
        if (p->gemms[j].program == SCHED_STEP && n->op == IR_STATE && n->index == k) return 1;
    }
    return 0;
}

int cg_value_twinned(const Plan *p, int b) {
    if (b < 0 || b >= p->nbuffers || p->buffers[b].kind != BUF_VALUE) return 0;
    for (int j = 0; j < p->ngemms; j++)
        if (p->gemms[j].operand == p->buffers[b].node) return 1;
    return 0;
}

int cg_flagged_buffer(const PlanLayout *L, int b) {
    const Plan *p = L->plan;
    for (int j = 0; j < p->ngemms; j++)
        if (p->gemms[j].program == SCHED_STEP && p->gemms[j].phase > 0 && p->node[p->gemms[j].operand].buffer == b &&
            operand_flaggable(L, &p->gemms[j]))
            return 1;
    return 0;
}

/* Words a sequence of one slot of each flagged quantity before state k's (k < nstates) or, k =
 * nstates + b, before buffer b's; nstates + nbuffers: all of them. The one order of the flagged
 * words: the states a step GEMM multiplies, then the flagged buffers, each two such slots; -1 on
 * overflow. */
int64_t cg_persist_flag_words_before(const PlanLayout *L, int k) {
    const IrCell *c = L->plan->cell;
    int64_t words = 0;
    for (int i = 0; i < k && i < c->nstates; i++)
        if (cg_state_multiplied(L->plan, i) &&
            __builtin_add_overflow(words, ir_shape_numel(&c->states[i].shape, L->dimval), &words))
            return -1;
    for (int b = 0; b < k - c->nstates && b < L->plan->nbuffers; b++)
        if (cg_flagged_buffer(L, b) && __builtin_add_overflow(words, L->buffer_width[b], &words)) return -1;
    return words;
}

int64_t cg_persist_flag_words(const PlanLayout *L, int64_t N) {
    int64_t per = cg_persist_flag_words_before(L, L->plan->cell->nstates + L->plan->nbuffers), words;
    return per < 0 || __builtin_mul_overflow(2 * N, per, &words) ? -1 : words;
}

/* Lays out shared memory with staging chunks of at most kc_cap columns (0: all of K at once);
 * with res, room for the forward's step results of the batch class's sequences (at most 64). */
static void lay_out(const PlanLayout *L, CgPersist *P, int64_t kc_cap, int64_t budget, int res) {
    int64_t off = 0;
    P->kc_max = P->rpp_max = P->xs_floats = 0;
    P->tiles = 1;
    for (int k = 0; k < P->ngemms; k++) {
        CgPersistGemm *q = &P->gemms[k];
        int64_t grain = k_grain(P);
        int64_t whole = ceil_div(q->K, grain) * grain;
        q->kc = kc_cap && whole > kc_cap ? ceil_div(kc_cap, grain) * grain : whole;
        q->chunks = ceil_div(q->K, q->kc);
        if (q->chunks > 1) P->tiles = 2;
        q->ldw = q->chunks * q->kc + P->pad;
        q->w_off = off;
        if (off <= budget) off += ceil_div((int64_t)q->passes * 8 * q->rw * q->ldw, P->half ? 2 : 1); /* floats */
        if (q->kc > P->kc_max) P->kc_max = q->kc;
        if (8 * q->rw > P->rpp_max) P->rpp_max = 8 * q->rw;
    }
    for (int k = 0; k < P->ngemms; k++) { /* the staging tiles: the most any GEMM's take ([NP][kc + pad] each) */
        const CgPersistGemm *q = &P->gemms[k];
        int64_t row = q->x16 ? ceil_div(q->kc + P->pad, 2) : q->kc + P->xpad; /* floats: halves padded as the weights' */
        int64_t floats = P->tiles * 4 * (int64_t)P->nw * row;
        if (floats > P->xs_floats) P->xs_floats = floats;
    }
    for (int k = 0; k < P->ngemms && off <= budget; k++) {
        P->gemms[k].map_off = off;
        off += ceil_div(P->gemms[k].rows, 4) * 4;
    }
    for (int k = 0; k < P->ngemms && off <= budget; k++) {
        CgPersistGemm *q = &P->gemms[k];
        q->res_cap = res && !P->backward && read_in_own_rows(L, q->gemm) ? (P->nw_class < 8 ? 4 * P->nw_class : 64) : 0;
        q->kept_only = q->res_cap && read_only_in_own_rows(L, q->gemm);
        q->res_off = off;
        off += (int64_t)q->res_cap * q->passes * 8 * q->rw;
    }
    P->xch_off = off;
    int64_t ro_max = 0; /* the exchange areas, [2][cluster][4*nw][ro]: the largest any GEMM takes */
    for (int k = 0; P->split && k < P->ngemms; k++)
        if (P->gemms[k].ro > ro_max) ro_max = P->gemms[k].ro;
    off += 2 * (int64_t)P->cluster * 4 * P->nw * ro_max;
    P->fixed_floats = off;
}

/* Can blocks in clusters share every staged operand? Bulk copies move whole 16-byte pieces and
 * write only elements below K: a chunk must end at K, or (staged whole) every GEMM's tile rows
 * must have the same length, so the elements past K stay the zeros rnn_cluster_init wrote. */
static int cluster_can_share(const CgPersist *P) {
    if (P->ngemms == 0) return 0; /* nothing staged: nothing to share */
    int tail = 0; /* a GEMM whose staged rows end before the tile's */
    for (int k = 0; k < P->ngemms; k++) {
        if (P->gemms[k].K % (P->gemms[k].x16 ? 8 : 4)) return 0; /* whole 16-byte pieces */
        tail |= P->gemms[k].K != P->gemms[k].chunks * P->gemms[k].kc;
    }
    for (int k = 0; tail && k < P->ngemms; k++) /* then every GEMM's rows must be laid out alike */
        if (P->gemms[k].chunks > 1 || P->gemms[k].K != P->gemms[0].K || P->gemms[k].kc != P->gemms[0].kc ||
            P->gemms[k].x16 != P->gemms[0].x16)
            return 0;
    return 1;
}

/* " in clusters of C" when P has clusters, else "" (into buf). */
const char *cg_persist_in_clusters(const CgPersist *P, char buf[48]) {
    buf[0] = 0;
    if (P->cluster > 1) snprintf(buf, 48, " in clusters of %d%s", P->cluster, P->split ? " splitting K" : "");
    return buf;
}

/* The most rows a pass of P's product takes: 32 (8 a warp's row group, 4 groups), 40 for a tensor-core
 * backward that splits K (one pass of the cluster's rows: clusters of 4 hold 9 rows a block at H = 1024
 * on the 120 blocks whose clusters an H100 holds at once; rnn_mv_mma's fifth row group is half an mma tile). */
static int split_rows_max(const CgPersist *P) { return P->split && P->mma ? 40 : 32; }

/* The waves a step GEMM's operand is staged in (CgPersistGemm.waves): with its weights' fragments in
 * registers (wregs steps of k a warp) the product waits for each wave at its first k step, so the
 * copies must be this block's own (no clusters sharing them: multicast lands whole), not flagged
 * words (polled whole), and the waves whole k steps: 4 where wregs divides by 4, else 2 where by 2.
 * From 16 sequences a pass: at 8, small_b4's forward lost 1% to the waits (bench/NOTES.md section
 * 71). asked (CgPersistAsk.waves): 0 the rule, -1 none, 2 or 4 at most so many. */
static int staging_waves(const CgPersist *P, const CgPersistGemm *q, int asked) {
    if (asked < 0 || !P->mma || q->wregs <= 0 || (P->cluster > 1 && !P->split) || P->flags || q->direct || P->nw < 4) return 0;
    const int w = q->wregs % 4 == 0 ? 4 : q->wregs % 2 == 0 ? 2 : 0;
    return asked > 0 && w > asked ? asked : w;
}

/* cg_persist_plan for clusters of `cluster` blocks (1: none). */
static int plan_for(Arena *arena, const PlanLayout *L, const CgPersistAsk *ask, int cluster, CgPersist *P, char *why,
                    size_t why_size) {
    const Plan *p = L->plan;
    const IrCell *c = p->cell;
    const int64_t N = ask->N;
    const int backward = ask->backward, sms = ask->sms;
    /* with clusters the unit's own shared variables (persist.cuh: barriers) take 64 bytes */
    const int64_t smem_limit = ask->smem_limit - (cluster > 1 ? 64 : 0);
    memset(P, 0, sizeof *P);
    P->backward = backward;
    P->cluster = cluster;
    P->products = ask->products;
    P->mma = ask->products != CG_FFMA;
    P->half = ask->products == CG_F16 || ask->products == CG_BF16;
    P->twins = ask->twins != 0;
    P->split = ask->split && backward && cluster > 1;
    P->pad = P->half ? 32 : P->mma ? 16 : 4; /* RNN_PAD_16, RNN_PAD_MMA, RNN_PAD_FFMA (persist.cuh) */
    P->xpad = P->mma && !P->half ? 16 : 4;
    if (ask->products < CG_FFMA || ask->products > CG_BF16) {
        snprintf(why, why_size, "products %d; the persistent kernel takes fp32, tf32, fp16 or bf16", (int)ask->products);
        return 0;
    }
    P->warps = ask->warps ? ask->warps : CG_PERSIST_WARPS;
    int nw_min = P->mma ? 2 : 1;         /* mma: whole 8-sequence tiles */
    P->nw_class = cg_persist_nw(N);
    P->seqs_max = N <= 32 ? 4 * P->nw_class : 0;
    P->nw = P->nw_class > nw_min ? P->nw_class : nw_min;
    if (ask->nw_max && ask->nw_max < P->nw) P->nw = ask->nw_max > nw_min ? ask->nw_max : nw_min;
    if (why_size) why[0] = 0;
    if (P->warps != 4 && P->warps != 8 && P->warps != 16) {
        snprintf(why, why_size, "%d warps a block; the persistent kernel takes 4, 8 or 16", P->warps);
        return 0;
    }
    if (ask->kc_cap && ask->kc_cap < 256) {
        snprintf(why, why_size, "staging chunks of %lld columns; at least 256", (long long)ask->kc_cap);
        return 0;
    }
    int64_t longest = 1;
    double weights = 0; /* exact up to 2^53, and no overflow past it: only told (MB) and shared out (per block) */
    for (int gi = 0; gi < p->ngroups; gi++)
        if (p->groups[gi].program == SCHED_STEP && cg_group_width(L, gi) > longest) longest = cg_group_width(L, gi);
    for (int j = 0; j < p->ngemms; j++) {
        if (p->gemms[j].program != SCHED_STEP) continue;
        IrOp op = c->nodes[p->gemms[j].operand].op;
        if (op != IR_STATE && op != IR_MATVEC && p->node[p->gemms[j].operand].buffer < 0) {
            snprintf(why, why_size, "step GEMM G%d multiplies a value that has no buffer", j);
            return 0;
        }
        P->ngemms++;
        weights += (double)L->gemm_rows[j] * (double)L->gemm_cols[j];
        if (backward && L->gemm_cols[j] > longest) longest = L->gemm_cols[j]; /* blocks own operand elements */
        for (int b = 0; !backward && b < p->gemms[j].nproducts; b++) /* blocks own result rows */
            if (cg_persist_block_rows(L, &p->gemms[j], b) > longest) longest = cg_persist_block_rows(L, &p->gemms[j], b);
    }
    if (sms < 1 || smem_limit < 1) {
        snprintf(why, why_size, "no device to size the persistent kernel for");
        return 0;
    }
    const int cap = ask->blocks > 0 && ask->blocks < sms ? ask->blocks : sms; /* the fewer-blocks tile's */
    P->blocks = (longest < cap ? (int)longest : cap) / cluster * cluster;
    if (P->blocks < 1) {
        snprintf(why, why_size, "%lld blocks' work does not fill a cluster of %d", (long long)longest, cluster);
        return 0;
    }
    P->gemms = arena_array(arena, (size_t)P->ngemms + 1, sizeof *P->gemms);
    if (!P->gemms) {
        snprintf(why, why_size, "out of memory");
        return 0;
    }
    int64_t k = 0, budget = smem_limit / (int64_t)sizeof(float);
    int oversized = 0; /* a GEMM's rows or K past what any block holds: the layout below is not sized */
    for (int j = 0; j < p->ngemms; j++) {
        if (p->gemms[j].program != SCHED_STEP) continue;
        CgPersistGemm *q = &P->gemms[k++];
        q->gemm = j;
        /* the multiplied operand staged from its 16-bit twin, which the kernel writes (twins): a forward's
         * state (handed off by flags: as 16-bit flagged words, persist.cuh rnn_flag_stage16) or, unless
         * flags are asked for, a later phase's value of the step (cg_flagged_buffer: the twin in its
         * flagged words' slots; with flags its 8-byte words measured faster than 16-bit ones, bench/
         * NOTES.md section 44), a backward's result adjoint where its group alone sends it
         * (cg_adjoint_twinned); where its rows are whole 16-byte pieces (else fp32 rows copy 4 or 16
         * bytes at a time, and clusters can share them) */
        const int out = p->gemms[j].out_buffer;
        const IrOp op = c->nodes[p->gemms[j].operand].op;
        const int value16 = ask->handoff != CG_HANDOFF_FLAGS && operand_flaggable(L, &p->gemms[j]);
        q->x16 = P->half && P->twins &&
                 (backward ? cg_adjoint_twinned(p, out) && L->gemm_rows[j] % 8 == 0 && L->buffer_width[out] % 8 == 0
                           : (op == IR_STATE || value16) && L->gemm_cols[j] % 8 == 0);
        /* forward: this block's result rows times the operand; backward: W^T's rows for this block's
         * operand elements (W's columns) times the result's adjoint */
        q->K = q->kfull = backward ? L->gemm_rows[j] : L->gemm_cols[j];
        if (backward) q->rows = ceil_div(L->gemm_cols[j], P->blocks);
        for (int b = 0; !backward && b < p->gemms[j].nproducts; b++)
            q->rows += ceil_div(cg_persist_block_rows(L, &p->gemms[j], b), P->blocks);
        if (P->split) { /* the cluster's rows, each block's ro apart, for a cluster-th of K in whole grains */
            q->ro = q->rows;
            q->rows = cluster * q->ro;
            q->K = ceil_div(ceil_div(q->kfull, cluster), k_grain(P)) * k_grain(P);
            const char *no = q->kfull <= (cluster - 1) * q->K ? "a block would get no part of it"
                             : q->rows > split_rows_max(P) ? "the cluster's rows take two passes or more"
                             : !cg_persist_rows_in_pieces(P, L->gemm_cols[j]) ? "weight rows not whole 16-byte pieces"
                                                                    : NULL;
            if (no) {
                snprintf(why, why_size, "G%d's K (%lld, %lld rows a block) not split: %s", j, (long long)q->kfull,
                         (long long)q->ro, no);
                return 0;
            }
        }
        q->passes = (int)(q->rows > budget || P->split ? 1 : ceil_div(q->rows > 0 ? q->rows : 1, 32));
        q->rw = (int)ceil_div(q->rows > 0 ? q->rows : 1, 8 * (int64_t)q->passes);
        if (q->rw > split_rows_max(P) / 8 || q->K > budget) { /* more than fits anyway: keep the numbers small */
            oversized = 1;
            q->rw = 4;
            q->passes = (int)(budget / 32 + 1);
        }
    }
    /* the first layout that fits: the operand staged whole (one wait a step) before in chunks, and
     * long chunks before short ones (each chunk is a wait and two block barriers: 16 chunks of
     * 256 cost a 4096-long backward 4.4 us a step of staging, bench/NOTES.md); GEMM results kept
     * in shared memory before not; the batch class's sequences a pass before fewer */
    static const struct { int64_t kc_cap; int res; } tries[] = {{0, 1},    {0, 0},    {2048, 1}, {2048, 0}, {1024, 1},
                                                               {1024, 0}, {512, 1},  {512, 0},  {256, 1},  {256, 0}};
    /* chunks of at most kc_cap asked for: that length first (whole 256s, so every warp's share is
     * whole; an operand no longer is staged whole), then the shorter ones of the list */
    const int64_t asked = ask->kc_cap / 256 * 256;
    for (int fits = 0;; P->nw /= 2) {
        for (int res = 1; asked && res >= 0 && !fits; res--) {
            lay_out(L, P, asked, budget, res);
            fits = P->fixed_floats <= budget && smem_bytes(P) <= smem_limit;
        }
        for (size_t t = 0; t < sizeof tries / sizeof *tries && !fits; t++) {
            if (asked && (!tries[t].kc_cap || tries[t].kc_cap >= asked)) continue;
            lay_out(L, P, tries[t].kc_cap, budget, tries[t].res);
            fits = P->fixed_floats <= budget && smem_bytes(P) <= smem_limit;
        }
        if (fits || P->nw / 2 < nw_min) break;
    }
    const int wsize = P->half ? 2 : 4; /* bytes a weight on chip */
    P->weight_bytes = weights * wsize < 0x1p62 ? (int64_t)(weights * wsize) : INT64_MAX;
    int64_t need = P->fixed_floats > budget ? P->fixed_floats * (int64_t)sizeof(float) : smem_bytes(P);
    P->smem = need;
    if (oversized || need > smem_limit) { /* oversized: what the weights alone ask of a block, the layout unsized */
        snprintf(why, why_size,
                 "step weights %.1f MB need %.0f KB of shared memory per block on %d blocks; a block has %.0f KB",
                 weights * wsize / 1e6, oversized ? weights * wsize / P->blocks / 1024.0 : need / 1024.0, P->blocks,
                 smem_limit / 1024.0);
        return 0;
    }
    if (cluster > 1 && !P->split && !cluster_can_share(P)) {
        snprintf(why, why_size, P->ngemms ? "clusters cannot share the staged operands (lengths not whole 16-byte pieces, "
                                            "or chunks past them)"
                                          : "no step product stages an operand for a cluster to share");
        return 0;
    }
    P->flags = ask->handoff == CG_HANDOFF_FLAGS && flags_allowed(L, P);
    for (int qi = 0; qi < P->ngemms; qi++) P->gemms[qi].fuse = sums_left_in_red(L, P, qi);
    /* operands loaded straight: their B fragments take registers the weights would (asked for explicitly:
     * as asked), and only GEMMs whose weights are then held in registers load so */
    const int direct = ask->handoff == CG_HANDOFF_DIRECT, reserved = direct ? direct_registers(P) : 0;
    weights_in_registers(P, ask->wregs, reserved);
    P->direct = 0;
    for (int qi = 0; qi < P->ngemms; qi++) {
        CgPersistGemm *q = &P->gemms[qi];
        q->direct = direct && direct_possible(P, q) && q->wregs > 0 && (P->backward ? backward_direct_fits(P, q) : reserved > 0);
        P->direct |= q->direct;
    }
    if (reserved && !P->direct) weights_in_registers(P, ask->wregs, 0); /* none loads straight: the registers back */
    for (int qi = 0; qi < P->ngemms; qi++) P->gemms[qi].waves = staging_waves(P, &P->gemms[qi], ask->waves);
    char cl[48];
    int held = 0;
    for (int qi = 0; qi < P->ngemms; qi++) held += P->gemms[qi].wregs > 0;
    char waves[64], staged[96] = "";
    cg_persist_waves_text(P, waves, sizeof waves);
    const int straight = straight_gemms(P);
    if (straight)
        snprintf(staged, sizeof staged, ", %s loaded straight into registers", straight == P->ngemms ? "operands" : "some operands");
    else if (waves[0]) snprintf(staged, sizeof staged, ", operands staged whole%s", waves);
    char fit[64] = "no step weights (an element-wise recurrence)", products[48] = ""; /* IndRNN: none on chip */
    if (P->ngemms) {
        snprintf(fit, sizeof fit, "step weights %.1f MB fit on chip", weights * wsize / 1e6);
        snprintf(products, sizeof products, ", %s products", cg_products_name(P->products));
    }
    snprintf(why, why_size, "%s: %d blocks of %d warps%s, %.0f KB of shared memory each%s%s%s", fit, P->blocks, P->warps,
             cg_persist_in_clusters(P, cl), need / 1024.0, products,
             !held ? "" : held == P->ngemms ? ", weights held in registers" : ", some weights held in registers", staged);
    return 1;
}

int cg_persist_plan(Arena *arena, const PlanLayout *L, const CgPersistAsk *ask, CgPersist *P, char *why,
                    size_t why_size) {
    if (ask->cluster <= 1) return plan_for(arena, L, ask, 1, P, why, why_size);
    if (plan_for(arena, L, ask, ask->cluster, P, why, why_size)) return 1;
    char refused[256], also[256] = "", head[40] = "";
    snprintf(refused, sizeof refused, "%s", why_size ? why : "");
    CgPersistAsk shared = *ask; /* K not split: the cluster shares the staged operand instead, where it can */
    shared.split = 0;
    int planned = ask->split && ask->backward && plan_for(arena, L, &shared, ask->cluster, P, why, why_size);
    if (!planned) {
        if (ask->split && ask->backward && why_size) snprintf(also, sizeof also, "; %s", why);
        if (!plan_for(arena, L, ask, 1, P, why, why_size)) return 0;
        snprintf(head, sizeof head, "clusters of %d refused: ", ask->cluster);
    }
    size_t at = strlen(why); /* why the clusters, or the split, were refused, after what was planned */
    if (at < why_size) snprintf(why + at, why_size - at, "; %s%s%s", head, refused, also);
    return 1;
}

/* Does Q give each block P's work: the same step GEMMs in as many passes and 16-row tiles (8-row
 * groups in FFMA), chunks and sequences a pass, and every step group's items a thread (a batch of N)? */
static int same_work(const PlanLayout *L, const CgPersist *P, const CgPersist *Q, int64_t N) {
    if (Q->ngemms != P->ngemms || Q->cluster != P->cluster || Q->split != P->split || Q->flags != P->flags || Q->direct != P->direct ||
        Q->warps != P->warps || Q->nw != P->nw || Q->kc_max != P->kc_max || Q->tiles != P->tiles)
        return 0;
    for (int qi = 0; qi < P->ngemms; qi++) {
        const CgPersistGemm *a = &P->gemms[qi], *b = &Q->gemms[qi];
        if (a->passes != b->passes || a->chunks != b->chunks ||
            (P->mma ? cg_persist_mma_tiles(a->rw) != cg_persist_mma_tiles(b->rw) : a->rw != b->rw))
            return 0;
    }
    const int64_t threads = 32 * (int64_t)P->warps;
    for (int gi = 0; gi < L->plan->ngroups; gi++) {
        if (L->plan->groups[gi].program != SCHED_STEP) continue;
        int64_t J = cg_group_width(L, gi);
        if (ceil_div(N * ceil_div(J, Q->blocks), threads) != ceil_div(N * ceil_div(J, P->blocks), threads)) return 0;
    }
    return 1;
}

int cg_persist_fewer_blocks(const PlanLayout *L, const CgPersistAsk *ask, const CgPersist *P) {
    if (P->blocks <= P->cluster) return 0;
    Arena scratch;
    arena_init(&scratch);
    char why[256];
    int fewest = 0;
    CgPersistAsk fewer = *ask;
    fewer.cluster = P->cluster; /* as planned (a cluster the plan refused: none) */
    for (int G = P->blocks - P->cluster; G >= P->cluster; G -= P->cluster) { /* the work only grows as G falls */
        CgPersist Q;
        fewer.blocks = G;
        if (!cg_persist_plan(&scratch, L, &fewer, &Q, why, sizeof why) || Q.blocks != G || !same_work(L, P, &Q, ask->N))
            break;
        fewest = G;
    }
    arena_free(&scratch);
    return fewest;
}

int cg_persist_preferred(int64_t N, CgProducts products, int backward, CgOverlap overlap, const CgPersist *planned,
                         char *why, size_t why_size) {
    /* per step, a bidirectional layer's two directions (two streams) and a stack's layers (a
     * wavefront) overlap; persistent kernels, each taking every multiprocessor, run one after the
     * other: at 64 sequences per step wins, at 32 persistent (bench/NOTES.md section 15). A lone
     * backward (its clusters splitting K, cg_persist_split) wins at 20-32 sequences, in every
     * precision, and loses at 48-64 (section 33); one beside another direction or layer keeps 16 */
    const int tensor = products != CG_FFMA;
    int64_t limit = backward ? (overlap == CG_ALONE ? 32 : 16) : overlap != CG_ALONE ? 32 : 64;
    if (N > limit) {
        snprintf(why, why_size, "batch %lld > %lld (%s%s%s), where per-step %s GEMMs win", (long long)N, (long long)limit,
                 products_precision(products), backward ? ", backward" : "",
                 backward ? "" : overlap == CG_BIDIRECTIONAL ? ", bidirectional" : overlap == CG_WAVEFRONT ? ", stacked" : "",
                 tensor ? "tensor-core" : "cuBLAS");
        return 0;
    }
    /* tensor-core forward at 33-64 sequences: only when a pass takes 32 of them (fastrnns, H=512,
     * wins; at H=1024 a tf32 pass takes 16 and loses by 3-39%, bench/NOTES.md section 14) */
    if (tensor && !backward && N > 32 && planned && 4 * planned->nw < 32) {
        snprintf(why, why_size, "batch %lld > 32 (%s) in passes of %d sequences (not 32), where per-step tensor-core GEMMs win",
                 (long long)N, products_precision(products), 4 * planned->nw);
        return 0;
    }
    return 1;
}

int cg_persist_cluster(int64_t N, CgProducts products, int backward, int handoff) {
    /* multicast copies cannot check a flag, nor land in registers */
    if ((handoff == CG_HANDOFF_FLAGS || handoff == CG_HANDOFF_DIRECT) && !backward) return 1;
    /* Measured on an H100 (bench/NOTES.md section 11): pairs sharing the operand gain 5-17% with
     * FFMA products (small_b4, fastrnns, flashrnn; deepbench's inference loses 5%, its training
     * gains 2%) and with tensor-core ones at 16-20 sequences (flashrnn, ds2); they are even at 4
     * and lose at 32 with tensor cores (deepbench). A backward's pairs at 17-32 sequences split K
     * (cg_persist_split; section 33), its fours at 9-16 (section 58: 2-13% a training step against
     * pairs sharing the operand at H = 512-1024 in fp16, bf16 and tf32, level at tf32 H = 1024; fours
     * splitting K lost 10% at deepbench, 3% at ds2's LSTM); a forward's tensor cores take fours since
     * section 52 (below). */
    if (products == CG_FFMA) return 2;
    if (N <= 8) return 1;
    if (backward) return N <= 16 ? 4 : N <= 32 ? 2 : 1;
    /* a forward's fours beat pairs at 9-24 sequences with tensor cores (section 52: 4-12% a step at
     * H = 768-800 in fp16, bf16 and tf32; level at ds2's GRU in tf32) where they hold the step
     * weights in registers as pairs do; where fewer clusters of 4 than of 2 can be resident and the
     * weights move to shared memory (LSTM fp16 at H = 1024: 120 blocks) they lose by half, and the
     * runtime takes pairs again */
    return N <= 24 ? 4 : 1;
}

int cg_persist_split(int64_t N, CgProducts products, int backward) {
    /* bench/NOTES.md sections 32-33: pairs splitting K beat the rule's other tiles at 20-32
     * sequences (deepbench tf32 30.0 against 36.9 us a training step, fp16 22.8 against 25.0) and
     * lose at 16 (flashrnn fp16, +8%) and 64 (fastrnns fp16, +6%); section 58: on tensor cores
     * fours splitting K win at 9-16 (cg_persist_cluster) */
    return backward && N <= 32 && (N > 16 || (products != CG_FFMA && N > 8));
}

int cg_persist_cluster_parse(const char *text) {
    return strcmp(text, "1") == 0 ? 1 : strcmp(text, "2") == 0 ? 2 : strcmp(text, "4") == 0 ? 4 : 0;
}

int cg_persist_warps_parse(const char *text) {
    return strcmp(text, "4") == 0 ? 4 : strcmp(text, "8") == 0 ? 8 : strcmp(text, "16") == 0 ? 16 : 0;
}

/* text as a whole decimal number in [lo, hi], or 0. */
static long long whole_in_range(const char *text, long long lo, long long hi) {
    long long v;
    return ir_parse_int(text, lo, hi, &v) ? v : 0;
}

int64_t cg_persist_chunk_parse(const char *text) { return whole_in_range(text, 256, 65536); }

int cg_persist_handoff_parse(const char *text) {
    return strcmp(text, "flags") == 0     ? CG_HANDOFF_FLAGS
         : strcmp(text, "barrier") == 0   ? CG_HANDOFF_BARRIER
         : strcmp(text, "direct") == 0   ? CG_HANDOFF_DIRECT
                                          : -1;
}

int cg_persist_blocks_parse(const char *text) { return (int)whole_in_range(text, 1, 1024); }

int cg_persist_wregs_parse(const char *text) { return strcmp(text, "0") == 0 ? -1 : (int)whole_in_range(text, 1, 255); }

int cg_persist_waves_parse(const char *text) {
    return strcmp(text, "0") == 0 ? -1 : strcmp(text, "2") == 0 ? 2 : strcmp(text, "4") == 0 ? 4 : 0;
}

int cg_persist_seqs_parse(const char *text) {
    return strcmp(text, "4") == 0 ? 4 : strcmp(text, "8") == 0 ? 8 : strcmp(text, "16") == 0 ? 16
         : strcmp(text, "32") == 0 ? 32 : 0;
}

CgPersistAsk cg_persist_h100_ask(int64_t N, int backward, CgProducts products, int cluster) {
    return (CgPersistAsk){.N = N, .backward = backward, .products = products, .sms = CG_H100_SMS,
                          .smem_limit = CG_H100_SMEM,
                          .cluster = cluster ? cluster : cg_persist_cluster(N, products, backward, CG_HANDOFF_BARRIER),
                          .split = !cluster && cg_persist_split(N, products, backward)};
}

int cg_persist_same_tile(const CgPersist *a, const CgPersist *b) {
    if (a->blocks != b->blocks || a->warps != b->warps || a->cluster != b->cluster || a->split != b->split || a->nw != b->nw ||
        a->ngemms != b->ngemms || a->smem != b->smem || a->flags != b->flags || a->direct != b->direct)
        return 0;
    for (int k = 0; k < a->ngemms; k++)
        if (a->gemms[k].kc != b->gemms[k].kc || a->gemms[k].res_cap != b->gemms[k].res_cap || a->gemms[k].fuse != b->gemms[k].fuse ||
            a->gemms[k].x16 != b->gemms[k].x16) /* a later phase's value's twin is kept only without flags asked */
            return 0;
    return 1;
}

void cg_persist_waves_text(const CgPersist *P, char *buf, size_t size) {
    int n = 0, same = 1;
    for (int qi = 0; qi < P->ngemms; qi++) {
        n += P->gemms[qi].waves > 0;
        same &= P->gemms[qi].waves == P->gemms[0].waves;
    }
    if (!n) snprintf(buf, size, "%s", "");
    else if (same) snprintf(buf, size, " in %d waves", P->gemms[0].waves);
    else snprintf(buf, size, " (%d of %d in waves)", n, P->ngemms);
}

void cg_persist_tile_text(const CgPersist *P, char *buf, size_t size) {
    char cl[48], staged[112], waves[64], rest[48];
    const int direct = straight_gemms(P);
    if (P->tiles == 1) snprintf(rest, sizeof rest, "staged whole");
    else snprintf(rest, sizeof rest, "staged in chunks of %lld", (long long)P->kc_max);
    if (direct && direct == P->ngemms) snprintf(staged, sizeof staged, "operands loaded straight into registers");
    else if (direct) snprintf(staged, sizeof staged, "some operands loaded straight into registers, the others %s", rest);
    else snprintf(staged, sizeof staged, "%s%s", P->tiles == 1 ? "operands " : "", rest);
    cg_persist_waves_text(P, waves, sizeof waves); /* (waves only where staged whole) */
    snprintf(buf, size, "%d blocks of %d warps%s, %d sequences a pass, %s%s%s", P->blocks, P->warps,
             cg_persist_in_clusters(P, cl), 4 * P->nw, staged, waves,
             P->flags ? ", steps handed off by flags" : "");
}

int cg_persist_kernel_name(const Plan *plan, int backward, char *buf, size_t size) {
    if (!plan || !buf || size == 0) return -1;
    int n = snprintf(buf, size, "rnncc_%s_p%s", plan->cell->name, backward ? "b" : "");
    if (n < 0 || (size_t)n >= size) {
        buf[0] = 0;
        return -1;
    }
    return n;
}
