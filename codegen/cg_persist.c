/* The persistent backend's kernel: the whole step loop of one layer in one cooperative launch
 * (contract in codegen/cg.h, design in docs/backends.md).
 * Key idea: block s owns elements [L*s/G, L*(s+1)/G) of every length-L quantity, so it
 * computes the rows of every step GEMM that produce its own units and keeps those weight
 * rows in shared memory for all steps; the fused element-wise code is the same generated
 * body the per-step kernels run (cg_forward.c), looped over the block's units; blocks meet
 * only at grid barriers where one block needs what another computed. The tile it emits is
 * cg_persist_plan.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_gen.h"

/* A step GEMM's operand (adjoint 1: its adjoint's home) as a pointer expression at this step,
 * and its column stride. */
static void operand_expr(Gen *g, const SchedGemm *gm, int adjoint, char *expr, size_t size, char *ld, size_t ldsize) {
    const IrNode *n = &g->c->nodes[gm->operand];
    const char *buf = adjoint ? "a.dbuf" : "a.buf";
    if (n->op == IR_STATE) {
        snprintf(expr, size, "%s[%d]", adjoint ? "a.dstate_prev" : "a.state_prev", n->index);
        cg_dim_code(g->c, n->shape.dims[0], ld, ldsize);
    } else if (n->op == IR_MATVEC) { /* another step GEMM's result */
        int b = g->plan->gemms[g->plan->node[gm->operand].gemm].out_buffer;
        snprintf(expr, size, "%s[%d] + %lld", buf, b, (long long)g->L->block_row[gm->operand]);
        snprintf(ld, ldsize, "%lld", (long long)g->L->buffer_width[b]);
    } else { /* a stored value */
        int b = g->plan->node[gm->operand].buffer;
        snprintf(expr, size, "%s[%d]", buf, b);
        snprintf(ld, ldsize, "%lld", (long long)g->L->buffer_width[b]);
    }
}

/* "[U_i; U_f] @ h" (forward) or "[U_i; U_f]^T @ d(G1)" (backward): what GEMM q computes. */
static void put_gemm(Gen *g, const CgPersist *P, const SchedGemm *gm, int j, StrBuf *what) {
    sb_puts(what, "[");
    for (int b = 0; b < gm->nproducts; b++)
        sb_printf(what, "%s%s", b ? "; " : "", g->c->params[g->c->nodes[g->c->nodes[gm->products[b]].args[0]].index].name);
    if (P->backward) {
        sb_printf(what, "]^T @ d(G%d) -> d(", j);
        cg_put_value(g->c, gm->operand, what);
        sb_puts(what, ")");
    } else {
        sb_puts(what, "] @ ");
        cg_put_value(g->c, gm->operand, what);
    }
}

/* Split K: opens `for each block r of this block's cluster { sr, its first element lr and its
 * element count nr` of a quantity cols long (the caller closes it); note: the loop's comment, or NULL. */
static void open_cluster_blocks(StrBuf *out, const CgPersist *P, long long cols, const char *note) {
    if (note) cg_open(out, "for (int r = 0; r < %d; r++) {  // %s", P->cluster, note);
    else cg_open(out, "for (int r = 0; r < %d; r++) {", P->cluster);
    cg_emit(out, "const int sr = s - rnn_rank + r, lr = (int)(%lldLL * sr / G), nr = (int)(%lldLL * (sr + 1) / G) - lr;", cols,
            cols);
}

/* Setup of GEMM q: its row map (forward: the stacked rows producing this block's units;
 * backward: this block's elements of the operand) and its weight rows in shared memory. */
static void emit_gemm_setup(Gen *g, const CgPersist *P, int qi) {
    const CgPersistGemm *q = &P->gemms[qi];
    const SchedGemm *gm = &g->plan->gemms[q->gemm];
    StrBuf *out = g->out;
    StrBuf rows = {0}, starts = {0}, what = {0};
    put_gemm(g, P, gm, q->gemm, &what);
    cg_emit(out, "// G%d%s = %s: the rows of this block's %s (at most %lld), kept for every step", q->gemm,
            P->backward ? "^T" : "", sb_str(&what), P->backward ? "operand elements" : "units", (long long)q->rows);
    if (cg_persist_copies_columns(P, q, g->L->gemm_cols[q->gemm])) /* 16-bit, copied as W lies */
        cg_emit(out, "unsigned short *const w%d = (unsigned short *)(rnn_smem + %lld);  // [%lld k][%lld rows] 16-bit, as W lies",
                q->gemm, (long long)q->w_off, (long long)q->kc, (long long)q->passes * 8 * q->rw);
    else if (P->half)
        cg_emit(out, "unsigned short *const w%d = (unsigned short *)(rnn_smem + %lld);  // [%lld rows][%lld] 16-bit", q->gemm,
                (long long)q->w_off, (long long)q->passes * 8 * q->rw, (long long)q->ldw);
    else
        cg_emit(out, "float *const w%d = rnn_smem + %lld;  // [%lld rows][%lld]", q->gemm, (long long)q->w_off,
                (long long)q->passes * 8 * q->rw, (long long)q->ldw);
    cg_emit(out, "int *const map%d = (int *)(rnn_smem + %lld);  // local row -> %s", q->gemm, (long long)q->map_off,
            P->backward ? "operand element" : "stacked row");
    if (P->backward) {
        cg_emit(out, "const int lo%d = (int)(%lldLL * s / G), rows%d = (int)(%lldLL * (s + 1) / G) - lo%d;", q->gemm,
                (long long)g->L->gemm_cols[q->gemm], q->gemm, (long long)g->L->gemm_cols[q->gemm], q->gemm);
        if (P->split) { /* the cluster's blocks' elements, block r's at r * ro (-1: none) */
            long long ro = (long long)q->ro;
            char note[80];
            snprintf(note, sizeof note, "the cluster's blocks' elements, block r's at r * %lld", ro);
            open_cluster_blocks(out, P, (long long)g->L->gemm_cols[q->gemm], note);
            cg_emit(out, "for (int u = threadIdx.x; u < %lld; u += blockDim.x) map%d[r * %lld + u] = u < nr ? lr + u : -1;", ro,
                    q->gemm, ro);
            cg_close(out, NULL);
            cg_emit(out, "const int rnn_kr%d = min(%lld, %lld - rnn_rank * %lld);  // this block's part of K: from rnn_rank * %lld",
                    q->gemm, (long long)q->K, (long long)q->kfull, (long long)q->K, (long long)q->K);
        } else {
            cg_emit(out, "for (int u = threadIdx.x; u < rows%d; u += blockDim.x) map%d[u] = lo%d + u;", q->gemm, q->gemm,
                    q->gemm);
        }
    } else {
        for (int b = 0; b < gm->nproducts; b++) {
            sb_printf(&rows, "%s%lld", b ? ", " : "", (long long)cg_persist_block_rows(g->L, gm, b));
            sb_printf(&starts, "%s%lld", b ? ", " : "", (long long)g->L->block_row[gm->products[b]]);
        }
        cg_emit(out, "int rows%d = 0;", q->gemm);
        if (q->res_cap) {
            if (!q->fuse) /* else the group reads the partial sums (rnn_red_sum) */
                cg_emit(out, "float *const rnn_res%d = rnn_smem + %lld;  // results [%d sequences][%lld rows]", q->gemm,
                        (long long)q->res_off, q->res_cap, (long long)q->passes * 8 * q->rw);
            cg_emit(out, "int res%d[%d];  // per stacked block: its own row j's local row, minus j", q->gemm, gm->nproducts);
        }
        cg_open(out, "{");
        cg_emit(out, "const int R[%d] = {%s}, B[%d] = {%s};  // each stacked block's rows and first row", gm->nproducts,
                sb_str(&rows), gm->nproducts, sb_str(&starts));
        cg_open(out, "for (int b = 0; b < %d; b++) {", gm->nproducts);
        cg_emit(out, "const int lo = (int)((long long)R[b] * s / G), hi = (int)((long long)R[b] * (s + 1) / G);");
        cg_emit(out, "for (int u = lo + (int)threadIdx.x; u < hi; u += blockDim.x) map%d[rows%d + u - lo] = B[b] + u;",
                q->gemm, q->gemm);
        if (q->res_cap) cg_emit(out, "res%d[b] = rows%d - lo;", q->gemm, q->gemm);
        cg_emit(out, "rows%d += hi - lo;", q->gemm);
        cg_close(out, NULL);
        cg_close(out, NULL);
    }
    if (rows.failed || starts.failed || what.failed) out->failed = 1;
    sb_free(&rows);
    sb_free(&starts);
    sb_free(&what);
}

/* Loads GEMM q's rows into shared memory, zero beyond the block's rows and K, with asynchronous
 * copies (every thread's in flight at once: one load after another cost small_b4 120 us a launch,
 * bench/NOTES.md section 14); 16 bytes a copy where rows are whole 16-byte pieces. Backward: row r
 * is column map[r] of the row-major weights, read with consecutive threads on consecutive columns.
 * With round (tf32; after rnn_cp_wait_all, emit_prologue) the same loop instead rounds to tf32 what
 * this thread copied: the thread's own copies are the only ones it may read unsynchronised. 16-bit
 * weights come from the runtime's rounded copy (args.params16); where a copy cannot move 16 bytes
 * (the backward's columns, rows not whole 8-half pieces) each thread loads 8 halves at once, then
 * stores them. The backward's columns, where the weights' rows are whole 16-byte pieces, go through
 * rnn_load_transposed instead (16-byte loads, stores free of bank conflicts, tf32 rounded as stored:
 * a copy or a 2-byte load an element cost 17-29 us a launch, bench/NOTES.md section 23), or, 16-bit
 * weights held in registers whose every block's columns are whole pieces, as they lie through
 * rnn_copy_columns16, transposed on their way into registers (cg_persist_copies_columns; section 120). */
static void emit_gemm_load(Gen *g, const CgPersist *P, int qi, int round) {
    const CgPersistGemm *q = &P->gemms[qi];
    StrBuf *out = g->out;
    long long woff = (long long)g->L->param_offset[sched_gemm_param(g->plan, q->gemm)];
    long long rp = (long long)q->passes * 8 * q->rw, ldw = (long long)q->ldw, K = (long long)q->K;
    long long cols = (long long)g->L->gemm_cols[q->gemm];
    /* row starts are whole 16-byte pieces in shared memory (ldw and w_off are) and, forward, in global
     * memory when K is (the packed weights start at multiples of 16 floats: ir/sched.h) */
    long long piece = P->half ? 8 : 4, per = !P->backward && K % piece == 0 ? piece : 1;
    const char *src = P->half ? "args.params16" : "args.params";
    const int as_they_lie = cg_persist_copies_columns(P, q, cols); /* [kc][rp], transposed into registers */
    if (P->split) { /* the cluster's blocks' columns for this block's part of K (the plan's condition: 16-byte pieces) */
        if (round) return; /* rounded as it was stored */
        long long ro = (long long)q->ro;
        open_cluster_blocks(out, P, cols, NULL);
        if (as_they_lie)
            cg_emit(out, "rnn_copy_columns16(w%d, %lld, (int)(r * %lld), r == %d ? %lld - r * %lld : %lld, %s + %lld + "
                         "(long long)rnn_rank * %lld, %lld, rnn_kr%d, %lld, lr, nr);",
                    q->gemm, rp, ro, P->cluster - 1, rp, ro, ro, src, woff, K * cols, cols, q->gemm, (long long)q->kc);
        else
            cg_emit(out, "rnn_load_transposed<%d>(w%d + (long long)r * %lld, %lld, r == %d ? %lld - r * %lld : %lld, %s + %lld + "
                         "(long long)rnn_rank * %lld, %lld, rnn_kr%d, lr, nr);",
                    P->products == CG_TF32, q->gemm, ro * ldw, ldw, P->cluster - 1, rp, ro, ro, src, woff, K * cols, cols,
                    q->gemm);
        cg_close(out, NULL);
        return;
    }
    if (as_they_lie) {
        if (!round)
            cg_emit(out, "rnn_copy_columns16(w%d, %lld, 0, %lld, %s + %lld, %lld, %lld, %lld, lo%d, rows%d);  // [%lld][%lld]: k down",
                q->gemm, rp, rp, src, woff, cols, K, (long long)q->kc, q->gemm, q->gemm, (long long)q->kc, rp);
        return;
    }
    if (P->backward && cg_persist_rows_in_pieces(P, cols)) { /* rows of 16-byte pieces: rnn_load_transposed */
        if (!round)
            cg_emit(out, "rnn_load_transposed<%d>(w%d, %lld, %lld, %s + %lld, %lld, %lld, lo%d, rows%d);",
                    P->products == CG_TF32, q->gemm, ldw, rp, src, woff, cols, K, q->gemm, q->gemm);
        return; /* with round: rounded as it was stored */
    }
    if (P->half && per == 1) { /* halves one at a time: 8 loads in flight a thread */
        cg_open(out, "for (int e0 = threadIdx.x; e0 < %lld; e0 += 8 * blockDim.x) {", rp * ldw);
        cg_emit(out, "unsigned short v[8];");
        cg_emit(out, "int at[8];  // where v[u] goes, or -1");
        cg_emit(out, "#pragma unroll");
        cg_open(out, "for (int u = 0; u < 8; u++) {");
        cg_emit(out, "const int e = e0 + u * (int)blockDim.x;");
        if (P->backward) cg_emit(out, "const int k = e / %lld, r = e - k * %lld;", rp, rp);
        else cg_emit(out, "const int r = e / %lld, k = e - r * %lld;", ldw, ldw);
        cg_emit(out, "const bool in = e < %lld && r < rows%d && k < %lld;", rp * ldw, q->gemm, K);
        cg_emit(out, "at[u] = e < %lld ? r * %lld + k : -1;", rp * ldw, ldw);
        if (P->backward)
            cg_emit(out, "v[u] = in ? %s[%lld + (long long)k * %lld + map%d[r]] : (unsigned short)0;", src, woff, cols, q->gemm);
        else
            cg_emit(out, "v[u] = in ? %s[%lld + (long long)map%d[r] * %lld + k] : (unsigned short)0;", src, woff, q->gemm, K);
        cg_close(out, NULL);
        cg_emit(out, "#pragma unroll");
        cg_emit(out, "for (int u = 0; u < 8; u++) if (at[u] >= 0) w%d[at[u]] = v[u];", q->gemm);
        cg_close(out, NULL);
        return;
    }
    cg_open(out, "for (int e = threadIdx.x; e < %lld; e += blockDim.x) {", rp * ldw / per);
    if (P->backward) cg_emit(out, "const int k = e / %lld, r = e - k * %lld;", rp, rp);
    else cg_emit(out, "const int r = e / %lld, k = (e - r * %lld) * %lld;", ldw / per, ldw / per, per);
    if (round && per == 1) {
        cg_emit(out, "w%d[r * %lld + k] = rnn_to_tf32(w%d[r * %lld + k]);", q->gemm, ldw, q->gemm, ldw);
    } else if (round) {
        cg_emit(out, "for (int i = 0; i < %lld; i++) w%d[r * %lld + k + i] = rnn_to_tf32(w%d[r * %lld + k + i]);", per,
                q->gemm, ldw, q->gemm, ldw);
    } else {
        cg_emit(out, "const bool in = r < rows%d && k < %lld;", q->gemm, K);
        if (P->backward)
            cg_emit(out, "rnn_cp4(&w%d[r * %lld + k], %s + (in ? %lld + (long long)k * %lld + map%d[r] : 0), in ? 4 : 0);",
                    q->gemm, ldw, src, woff, cols, q->gemm);
        else
            cg_emit(out, "rnn_cp%lld(&w%d[r * %lld + k], %s + (in ? %lld + (long long)map%d[r] * %lld + k : 0), in ? %lld : 0);",
                    per == 1 ? 4LL : 16LL, q->gemm, ldw, src, woff, q->gemm, K, per == 1 ? 4LL : 16LL);
    }
    cg_close(out, NULL);
}

void cg_persist_result_expr(const CgPersistGemm *q, const CgPersist *P, int block, const char *global, char *expr,
                            size_t size) {
    const long long rp = (long long)q->passes * 8 * q->rw;
    if (q->fuse) /* every sequence of the class in one pass */
        snprintf(expr, size, "rnn_red_sum(rnn_red, %d, %lld, (int)n, res%d[%d] + j)", 4 * P->nw,
                 (long long)cg_persist_red_ld(8 * (int64_t)q->rw, P->mma), q->gemm, block);
    else if (q->res_cap >= 64) /* the classes of 8 sequences a lane keep 64 at most: the rest from global memory */
        snprintf(expr, size, "(n < %d ? rnn_res%d[n * %lld + res%d[%d] + j] : %s)", q->res_cap, q->gemm, rp, q->gemm,
                 block, global);
    else
        snprintf(expr, size, "rnn_res%d[n * %lld + res%d[%d] + j]", q->gemm, rp, q->gemm, block);
}

enum { FIRST_WRITER_NONE = -1 }; /* first_adjoint_writer: nothing writes the slot whole first */

/* How many write state k's adjoint slot in a step of the persistent backward (the step groups
 * reading the state, the step GEMMs multiplying it), and (*first) who first, in the step's order
 * (group K, the transposed GEMMs of phase K-1, ..., group 0): a group (its index in plan->groups:
 * its home store covers the state, since no group's width differs from its states'), a GEMM (-2 -
 * its index in P->gemms: its rows are the state's), or FIRST_WRITER_NONE. None counted (0) where a
 * group's width differs from its states' (cg_persist_states_cross_blocks) or past the 64th state
 * (Gen.fresh_states' bits). */
static int adjoint_writers(const Gen *g, const CgPersist *P, int k, int *first) {
    const Plan *p = g->plan;
    const IrCell *c = g->c;
    *first = FIRST_WRITER_NONE;
    if (k >= 64 || cg_persist_states_cross_blocks(g->L)) return 0;
    IrRef state = IR_NONE;
    for (uint32_t r = 0; r < c->nnodes && state == IR_NONE; r++)
        if (c->nodes[r].op == IR_STATE && c->nodes[r].index == k) state = r;
    int n = 0;
    for (int ph = p->phases[SCHED_STEP]; state != IR_NONE && ph >= 0; ph--) {
        int gi = cg_persist_find_group(p, SCHED_STEP, ph);
        if (gi >= 0 && cg_group_reads(c, &p->groups[gi], state) && !n++) *first = gi;
        for (int qi = 0; ph > 0 && qi < P->ngemms; qi++) {
            const SchedGemm *gm = &p->gemms[P->gemms[qi].gemm];
            if (gm->phase == ph - 1 && gm->operand == state && !n++) *first = -2 - qi;
        }
    }
    return n;
}

/* Who writes state k's adjoint slot first in a step (adjoint_writers). Where no sequence ends
 * (a.lengths NULL), that writer stores where it added and the slot is not zeroed a step ahead
 * (bench/NOTES.md section 62): an ended sequence's carry adds to the slot before the GEMMs do. */
static int first_adjoint_writer(const Gen *g, const CgPersist *P, int k) {
    int first;
    adjoint_writers(g, P, k, &first);
    return first;
}

/* Does the thread's first item of the group writing state k take its seed d(k') from a register
 * (rnn_seed<k>), which the slot's one writer in the step before set for that item (where no
 * sequence ends: the register says so)? On tensor cores (FFMA kernels' registers are spent), where
 * that writer is a group (the same item's store) or a GEMM whose clusters split K (the exchange's
 * entry threadIdx.x is that item: persist.cuh rnn_split.mine); bench/NOTES.md section 63. */
static int seeded_state(const Gen *g, const CgPersist *P, int k) {
    int first;
    if (!P->backward || !P->mma || adjoint_writers(g, P, k, &first) != 1) return 0;
    return first >= 0 || P->split;
}

/* Does forward GEMM qi keep its sums in shared memory in training too, stored for the backward only
 * after the block's arrival at the step's end (late_sums_store)? Where its group adds them up itself (fuse), the
 * steps meet at a barrier (its arrival's release would otherwise wait for those stores) and no
 * later product of the step reuses the partial sums' area before that (bench/NOTES.md section 69). */
static int sums_stored_late(const Plan *p, const CgPersist *P, int qi) {
    if (P->backward || P->flags || !P->gemms[qi].fuse) return 0;
    for (int k = 0; k < P->ngemms; k++)
        if (p->gemms[P->gemms[k].gemm].phase > p->gemms[P->gemms[qi].gemm].phase) return 0;
    return 1;
}

/* Where GEMM qi's sums are stored late (sums_stored_late): step t's, stored from rnn_red into its
 * training step buffer (none in inference: buf_step 0) after the block's arrival at the step's end. */
static void late_sums_store(Gen *g, const CgPersist *P, int qi) {
    const CgPersistGemm *q = &P->gemms[qi];
    const int b = g->plan->gemms[q->gemm].out_buffer;
    cg_emit(g->out, "if (args.buf_step[%d]) rnn_red_store(rnn_red, %d, %lld, rows%d, args.N, args.buf[%d] + t * args.buf_step[%d], %lld, map%d);"
                    "  // step t's G%d's sums, for the backward (rnn_red holds them until the next product)",
            b, 4 * P->nw, (long long)cg_persist_red_ld(8 * (int64_t)q->rw, P->mma), q->gemm, b, b,
            (long long)g->L->buffer_width[b], q->gemm, q->gemm);
}

/* One step's share of GEMM q: forward, its result rows; backward, d(operand) += W^T d(result). */
static void emit_gemm_step(Gen *g, const CgPersist *P, int qi) {
    const CgPersistGemm *q = &P->gemms[qi];
    const SchedGemm *gm = &g->plan->gemms[q->gemm];
    /* the operand (backward: its adjoint's home) and the result (backward: its adjoint) */
    char op[EXPR_SIZE], ldop[NAME_SIZE], res[NAME_SIZE], ldres[NAME_SIZE];
    operand_expr(g, gm, P->backward, op, sizeof op, ldop, sizeof ldop);
    snprintf(res, sizeof res, "%s[%d]", P->backward ? "a.dbuf" : "a.buf", gm->out_buffer);
    snprintf(ldres, sizeof ldres, "%lld", (long long)g->L->buffer_width[gm->out_buffer]);
    const char *x = P->backward ? res : op, *ldx = P->backward ? ldres : ldop;  /* multiplied */
    const char *o = P->backward ? op : res, *ldo = P->backward ? ldop : ldres;  /* written */
    StrBuf what = {0};
    put_gemm(g, P, gm, q->gemm, &what);
    cg_emit(g->out, "// G%d%s: %s", q->gemm, P->backward ? "^T" : "", sb_str(&what));
    if (what.failed) g->out->failed = 1;
    sb_free(&what);
    char kept[NAME_SIZE] = "NULL", flagged[NAME_SIZE] = "NULL, 0u";
    if (q->res_cap && !q->fuse) snprintf(kept, sizeof kept, "rnn_res%d", q->gemm);
    const IrNode *operand = &g->c->nodes[gm->operand];
    if (!P->backward && operand->op == IR_STATE && cg_persist_flagged(g, operand->index)) /* the launch's first step: X */
        snprintf(flagged, sizeof flagged, "t > args.t ? rnn_flags_prev%d : NULL, (unsigned)t", operand->index);
    else if (!P->backward && g->plan->node[gm->operand].buffer >= 0 &&
             cg_persist_buffer_flagged(g, g->plan->node[gm->operand].buffer)) /* this step's, every step */
        snprintf(flagged, sizeof flagged, "rnn_bflags%d, (unsigned)t + 1u", g->plan->node[gm->operand].buffer);
    char x16[NAME_SIZE], ld16[NAME_SIZE];
    if (q->x16) { /* its 16-bit twin at this step (emit_step_view) */
        if (P->backward) snprintf(x16, sizeof x16, "a.dbuf16[%d]", gm->out_buffer);
        else if (operand->op == IR_STATE) snprintf(x16, sizeof x16, "rnn_x16_%d", operand->index);
        else snprintf(x16, sizeof x16, "rnn_b16_%d", g->plan->node[gm->operand].buffer);
        x = x16;
        if (!P->backward && operand->op != IR_STATE) { /* the twin's rows are K long */
            snprintf(ld16, sizeof ld16, "%lld", (long long)q->K);
            ldx = ld16;
        }
    }
    char prec[40] = ""; /* persist.cuh's RNN_TF32 .. RNN_BF16, and whether X is 16-bit; then the sums' stride */
    if (P->mma) snprintf(prec, sizeof prec, ", %d, %d", (int)P->products, q->direct ? 2 : q->x16); /* XH (persist.cuh rnn_mv_mma) */
    snprintf(prec + strlen(prec), sizeof prec - strlen(prec), ", %lld", (long long)cg_persist_red_ld(8 * (int64_t)q->rw, P->mma));
    char wfrag[40] = ""; /* the weights from registers (rnn_wfrag, rnn_ffrag): their steps, and the registers */
    if (q->wregs) {
        snprintf(prec + strlen(prec), sizeof prec - strlen(prec), ", %d", q->wregs);
        if (q->waves) snprintf(prec + strlen(prec), sizeof prec - strlen(prec), ", %d", q->waves); /* rnn_mv_mma's WS */
        snprintf(wfrag, sizeof wfrag, "%s, &rnn_wf%d", P->split ? "" : ", nullptr", q->gemm);
    }
    /* results read only from shared memory: stored for the sequences past res_cap, and in training; or,
     * where the next group adds up the partial sums it reads itself (fuse), none kept, and none stored
     * in inference */
    char kept_only[NAME_SIZE + 64] = "RNN_TO_OUT";
    if (sums_stored_late(g->plan, P, qi)) {
        snprintf(kept_only, sizeof kept_only, "RNN_IN_RED");
        cg_emit(g->out, "// K%d adds up the partial sums it reads itself (rnn_red_sum); in training they are stored after "
                        "this block's arrival at the step's end", gm->phase + 1);
    } else if (q->fuse) {
        snprintf(kept_only, sizeof kept_only, "args.buf_step[%d] == 0 ? RNN_IN_RED : RNN_TO_OUT", gm->out_buffer);
        cg_emit(g->out, "// K%d adds up the partial sums it reads itself (rnn_red_sum)", gm->phase + 1);
    } else if (q->kept_only) {
        snprintf(kept_only, sizeof kept_only, "args.buf_step[%d] == 0 ? RNN_KEPT_ONLY : RNN_TO_OUT", gm->out_buffer);
    }
    char K[NAME_SIZE], xk[EXPR_SIZE + 64], map[NAME_SIZE], split[16] = "";
    snprintf(K, sizeof K, "%lld", (long long)q->K);
    snprintf(xk, sizeof xk, "%s", x);
    snprintf(map, sizeof map, "map%d", q->gemm);
    if (P->split) { /* this block's part of K; its own rows' map; the exchange (persist.cuh rnn_split_finish) */
        snprintf(K, sizeof K, "rnn_kr%d", q->gemm);
        snprintf(xk, sizeof xk, "%s + rnn_rank * %lld", x, (long long)q->K);
        snprintf(map, sizeof map, "map%d + rnn_rank * %lld", q->gemm, (long long)q->ro);
        snprintf(split, sizeof split, ", &rnn_sp");
        cg_emit(g->out, "rnn_sp.ro = %lld, rnn_sp.rows = rows%d;  // this GEMM's exchange", (long long)q->ro, q->gemm);
    }
    /* backward: added to the operand's adjoint, or stored where this GEMM writes a state's slot first and no sequence ends */
    const char *acc = !P->backward ? "0"
                      : operand->op == IR_STATE && first_adjoint_writer(g, P, operand->index) == -2 - qi ? "a.lengths != NULL"
                                                                                                    : "1";
    cg_emit(g->out, "rnn_mv_%s<%d, %d%s>(w%d, %lld, rows%d, %d, %s, %lld, %lld, %s, %s, a.N, %s, rnn_xs, rnn_red, %s, %s, %s, %s, %s, %d, %s%s%s);",
            P->mma ? "mma" : "t", q->rw, P->nw, prec, q->gemm, (long long)q->ldw, q->gemm, q->passes, K, (long long)q->kc,
            (long long)q->chunks, xk, ldx, flagged, o, ldo, map, acc, kept, q->fuse ? 0 : q->res_cap, kept_only, split,
            wfrag);
    if (P->backward && operand->op == IR_STATE && seeded_state(g, P, operand->index))
        cg_emit(g->out, "rnn_seed%d = rnn_sp.mine, rnn_seed%d_set = rnn_sp.mine_set;  // step t-1's seed d(%s') of the first item",
                operand->index, operand->index, g->c->states[operand->index].name);
}

/* Which of this block's items a scope takes: all, the thread's first only, or the rest. */
typedef enum { OWN_ALL, OWN_FIRST, OWN_OTHERS } OwnItems;

/* The suffix of the names emit_first_items gives a quantity of length dim (code): the dimension's
 * name (RNN_DIM_H: H), or its literal. */
static const char *dim_suffix(const char *dim) { return strncmp(dim, "RNN_DIM_", 8) == 0 ? dim + 8 : dim; }

/* Does every thread of the persistent kernel being emitted take at most one item of a quantity of
 * dimension jdim: its batch class bounded (seqs_max; the prologue traps on more) and so many sequences
 * times a block's elements (at most ceil(dim / blocks)) within its threads? Then its item loops run
 * once and hold no code for a second item (a flashrnn fp16 inference step -8%: bench/NOTES.md section 110). */
static int one_item(const Gen *g, int jdim) {
    const CgPersist *P = g->unit;
    int64_t dim = g->L->dimval[jdim];
    return P && P->seqs_max > 0 && P->seqs_max * ((dim + P->blocks - 1) / P->blocks) <= 32 * P->warps;
}

/* Opens `{ j0, nj; for each of this block's items i (which of them: which): n, j` over a quantity
 * of dimension jdim: elements [dim*s/G, dim*(s+1)/G) of every sequence. The caller closes both with
 * close_own_items, given what this returns. Where each thread has one item at most (one_item),
 * OWN_ALL takes the first alone, in `do { } while (0)` (the bodies' `continue` ends it; returns 1),
 * and OWN_OTHERS, which would take none, is not asked for. j0, nj and the thread's first item's n
 * and j come from emit_first_items' registers, not from divisions every step (bench/NOTES.md
 * section 41; the backward: section 51). */
static int open_own_items(const Gen *g, StrBuf *out, int jdim, OwnItems which) {
    char dim[NAME_SIZE];
    const char *x = dim_suffix(cg_dim_code(g->c, jdim, dim, sizeof dim));
    int once = which == OWN_ALL && one_item(g, jdim);
    cg_open(out, "{");
    if (which == OWN_FIRST || once) cg_emit(out, "const int nj = rnn_nj_%s;", x); /* its element: rnn_j1_X */
    else cg_emit(out, "const int j0 = rnn_j0_%s, nj = rnn_nj_%s;", x, x);
    if (which == OWN_FIRST) {
        cg_emit(out, "const long long i = threadIdx.x;");
        cg_open(out, "if (i < (long long)a.N * nj) {");
    } else if (once) {
        cg_emit(out, "const long long i = threadIdx.x;  // one item a thread at most: its first");
        cg_open(out, "if (i < (long long)a.N * nj) do {");
    } else {
        cg_open(out, "for (long long i = threadIdx.x%s; i < (long long)a.N * nj; i += blockDim.x) {",
                which == OWN_OTHERS ? " + blockDim.x" : "");
    }
    if (which == OWN_FIRST || once) {
        cg_emit(out, "const long long n = rnn_n1_%s;  // the sequence", x);
        cg_emit(out, "const int j = rnn_j1_%s;  // the element", x);
    } else if (which == OWN_ALL) {
        cg_emit(out, "const long long n = i == threadIdx.x ? rnn_n1_%s : i / nj;  // the sequence", x);
        cg_emit(out, "const int j = i == threadIdx.x ? rnn_j1_%s : j0 + (int)(i %% nj);  // the element", x);
    } else {
        cg_emit(out, "const long long n = i / nj;  // the sequence");
        cg_emit(out, "const int j = j0 + (int)(i %% nj);  // the element");
    }
    return once;
}

/* Closes what open_own_items opened; opened is what it returned. */
static void close_own_items(StrBuf *out, int opened) {
    cg_close(out, opened ? " while (0);" : NULL);
    cg_close(out, NULL);
}

/* The dimension of the n-th length a kernel's steps run over (step groups' lengths, then, in the
 * backward, whose steps zero their states' adjoints, the states' lengths), or -1 for none. */
static int step_length(Gen *g, int backward, int n) {
    const Plan *p = g->plan;
    if (n < p->ngroups) return p->groups[n].program == SCHED_STEP ? cg_group_jdim(g, n) : -1;
    return backward && n < p->ngroups + g->c->nstates ? g->c->states[n - p->ngroups].shape.dims[0] : -1;
}

/* step_length's n-th, or -1 where an earlier one had the same dimension. */
static int own_length(Gen *g, int backward, int n) {
    const int dim = step_length(g, backward, n);
    for (int e = 0; dim >= 0 && e < n; e++)
        if (step_length(g, backward, e) == dim) return -1;
    return dim;
}

/* Before the step loop: for each length its steps run over (own_length), the block's first element
 * and count (rnn_j0_X, rnn_nj_X) and the thread's first item (sequence rnn_n1_X, element rnn_j1_X),
 * the same at every step, so that no step divides for them between its barrier and its loads, nor
 * after its GEMMs (bench/NOTES.md section 41; the backward: section 51). */
static void emit_first_items(Gen *g, int backward) {
    char d[NAME_SIZE];
    for (int n = 0; n < g->plan->ngroups + (backward ? g->c->nstates : 0); n++) {
        int jdim = own_length(g, backward, n);
        if (jdim < 0) continue;
        cg_dim_code(g->c, jdim, d, sizeof d);
        const char *x = dim_suffix(d);
        cg_emit(g->out, "// this block's elements of %s and this thread's first item over them, the same every step "
                        "(decoded once)", d);
        cg_emit(g->out, "const int rnn_j0_%s = (int)((long long)%s * s / G), rnn_nj_%s = (int)((long long)%s * (s + 1) / G) - rnn_j0_%s;",
                x, d, x, d, x);
        cg_emit(g->out, "const long long rnn_n1_%s = rnn_nj_%s ? threadIdx.x / rnn_nj_%s : 0;", x, x, x);
        cg_emit(g->out, "const int rnn_j1_%s = rnn_j0_%s + (rnn_nj_%s ? (int)(threadIdx.x %% rnn_nj_%s) : 0);", x, x, x, x);
    }
}

/* Opens `if (sequence n runs at this step) {` with its position and column where the body uses
 * them. The caller closes it. */
static void open_live_item(const Gen *g) {
    cg_emit(g->out, "const int len = a.lengths ? a.lengths[n] : a.T;");
    cg_open(g->out, "if (a.t < len) {");
    if (g->uses_col) {
        cg_emit(g->out, "const int pos = a.reverse ? len - 1 - a.t : a.t;");
        cg_emit(g->out, "const long long col = (long long)pos * a.N + n;");
    }
}

/* Step group gi over this block's units and every sequence (backward: its backward). */
static int emit_group(Gen *g, int gi, int backward) {
    int jdim = cg_group_jdim(g, gi);
    if (jdim < 0) return 0;
    StrBuf body = {0};
    int indent = g->out->indent + 2;
    if (backward ? !cg_emit_backward_body(g, gi, &body, indent) : (cg_group_begin(g, gi), !cg_emit_forward_body(g, gi, &body, indent)))
        return 0;
    StrBuf *out = g->out;
    cg_emit(out, "// K%d%s over this block's units", g->plan->groups[gi].index, backward ? "'s backward" : "");
    cg_emit(out, "RNN_STAGGER(a.t, %d);  // (RNN_STAGGER_ON only: persist.cuh)", gi);
    int once = open_own_items(g, out, jdim, OWN_ALL);
    if (backward) cg_emit_backward_step_item(g, gi, &body);
    else cg_emit_step_item(g, gi, &body);
    close_own_items(out, once);
    cg_emit(out, "RNN_PROF(4);");
    sb_free(&body);
    return 1;
}

/* Is r a value a step group reads that no step computes (a hoisted result, an input, a state)?
 * In the backward, whose groups recompute the forward's values, the step GEMMs' results too: the
 * forward stored them, and nothing writes them during the backward. */
static int from_before_the_step(const Gen *g, IrRef r, int backward) {
    const IrNode *n = &g->c->nodes[r];
    const SchedNode *s = &g->plan->node[r];
    if (n->op == IR_INPUT || n->op == IR_STATE) return 1;
    if (n->op == IR_MATVEC) return backward || g->plan->gemms[s->gemm].program == SCHED_HOIST;
    return n->op != IR_CONST && n->op != IR_PARAM && s->buffer >= 0 && s->program == SCHED_HOIST;
}

enum { CG_FIRST_MAX = 16 }; /* values a step group loads early for its first item (registers) */

/* What emit_prefetch does with the thread's first item's values: a forward's step picks its
 * registers and declares them where it loads them (FIRST_FORWARD); a persistent backward picks them
 * once, declared before the step loop, and loads them for the loop's first step
 * (FIRST_BACKWARD_PICK), then each step t loads step t-1's into them (FIRST_BACKWARD). */
typedef enum { FIRST_FORWARD, FIRST_BACKWARD_PICK, FIRST_BACKWARD } FirstMode;

/* For this block's items of step group gi, the values it reads that were there before the step
 * (hoisted results, inputs, states; backward: the forward values it recomputes from and the
 * outputs' adjoints, not the other adjoints). The thread's first item's (and its parameters), at
 * most CG_FIRST_MAX, go into registers q<K>_<local> (Gen.first; a backward's output adjoints
 * qy<K>_<local>, Gen.first_seed) that the item's body takes: the step's GEMMs hide their trips to
 * memory (bench/NOTES.md sections 39 and 61). The rest it prefetches into L1, so that the loads
 * after the GEMMs find them on chip; into *rest where given (emitted after the barrier, whose
 * acquire may drop L1's lines), else after the first item's loads. A forward's first item takes a
 * state only where every group's width is its states' (not cg_persist_states_cross_blocks): only
 * then did this block itself store that element at step t-1, so that the arrival's __syncthreads
 * orders the store before this early load (else another block may still be storing it: wide51 at
 * H = 2, P = 16 read a stale c). Nothing writes a forward value during the backward.
 * FIRST_BACKWARD_PICK declares the registers into *decl_at. Returns whether it emitted anything. */
static int emit_prefetch(Gen *g, int gi, FirstMode mode, StrBuf *rest, StrBuf *decl_at) {
    const SchedGroup *grp = &g->plan->groups[gi];
    const IrCell *c = g->c;
    StrBuf *out = g->out;
    char expr[EXPR_SIZE], gbuf[GUARD_SIZE], q[NAME_SIZE];
    int jdim = cg_group_jdim(g, gi), backward = mode != FIRST_FORWARD;
    if (jdim < 0) return 0;
    int64_t J = cg_group_width(g->L, gi);
    cg_group_begin(g, gi);
    StrBuf body = {0}, first = {0}, decl = {0};
    CgIssued issued = {0}; /* the first item's registers (at most CG_FIRST_MAX: never full) */
    body.indent = out->indent + 2;
    first.indent = out->indent + 3;
    int nfirst = 0, all_first = 1, foreign_states = !backward && cg_persist_states_cross_blocks(g->L);
    for (int i = 0; i < grp->nnodes; i++) {
        const IrNode *n = &c->nodes[grp->nodes[i]];
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            IrRef r = n->args[a];
            int before = from_before_the_step(g, r, backward);
            if (g->computed[r] || g->loaded[r] || (!before && c->nodes[r].op != IR_PARAM)) continue;
            g->loaded[r] = 1;
            StrBuf what = {0};
            cg_value_expr(g, r, 0, expr, sizeof expr, &what);
            const char *gd = cg_guard(g, r, J, gbuf, sizeof gbuf);
            int take = mode == FIRST_BACKWARD ? g->first[r] == gi + 1
                       : !g->first[r] && nfirst < CG_FIRST_MAX && !(foreign_states && c->nodes[r].op == IR_STATE);
            if (take) {
                nfirst++;
                cg_first_name(g, gi, r, q, sizeof q);
                if (mode != FIRST_BACKWARD) { /* picked here, declared by the caller or below */
                    g->first[r] = gi + 1;
                    sb_printf(&decl, "%s%s = 0.0f", decl.len ? ", " : "", q);
                }
                cg_issued_add(g, &issued, 'q', r);
                cg_emit(&first, "%s%s = %s;  // %s", gd, q, expr, sb_str(&what));
            } else if (before) {
                all_first = 0;
            }
            if (before) cg_emit(&body, "%srnn_prefetch(&%s);  // %s", gd, expr, sb_str(&what));
            sb_free(&what);
        }
    }
    /* a backward's seeds from the outputs' adjoints (given before the pass; else from DRAM on the
     * step's path: bench/NOTES.md section 61) */
    for (int w = 0; backward && w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        if (wr->kind != WRITE_OUTPUT || c->nodes[wr->node].op == IR_CONST) continue;
        const char *gd = cg_guard(g, wr->node, J, gbuf, sizeof gbuf);
        g->uses_col = 1; /* open_live_item declares col */
        cg_output_adjoint(wr->index, expr, sizeof expr);
        int take = mode == FIRST_BACKWARD ? g->first_seed[wr->node] : nfirst < CG_FIRST_MAX;
        if (take) {
            nfirst++;
            cg_first_seed_name(g, gi, wr->node, q, sizeof q);
            if (mode != FIRST_BACKWARD) { /* picked here */
                g->first_seed[wr->node] = 1;
                sb_printf(&decl, "%s%s = 0.0f", decl.len ? ", " : "", q);
            }
            cg_emit(&first, "%sif (a.dy[%d]) %s = %s;  // d(output %s)", gd, wr->index, q, expr, c->outputs[wr->index].name);
        } else {
            all_first = 0;
        }
        cg_emit(&body, "%sif (a.dy[%d]) rnn_prefetch(&%s);  // d(output %s)", gd, wr->index, expr, c->outputs[wr->index].name);
    }
    if (first.len) {
        cg_emit(out, "// K%d's values from before the step for this thread's first item, loaded while %s", grp->index,
                mode == FIRST_BACKWARD_PICK ? "the loop starts (each step loads the next one's while its GEMMs run)"
                : rest                      ? "the other blocks arrive and the GEMMs run"
                                            : "the GEMMs run");
        if (mode == FIRST_FORWARD) cg_emit(out, "float %s;", sb_str(&decl));
        else if (mode == FIRST_BACKWARD_PICK) sb_puts(decl_at, sb_str(&decl));
        open_own_items(g, out, jdim, OWN_FIRST);
        open_live_item(g);
        sb_putn(out, sb_str(&first), first.len);
        cg_close(out, NULL);
        cg_close(out, NULL);
        cg_issued_emit(g, &issued);
        cg_close(out, NULL);
    }
    OwnItems which = first.len && all_first ? OWN_OTHERS : OWN_ALL;
    int others = body.len && !(which == OWN_OTHERS && one_item(g, jdim)); /* else no thread has another item */
    if (others) {
        StrBuf *dst = rest ? rest : out;
        dst->indent = out->indent;
        g->out = dst; /* open_live_item writes to g->out */
        cg_emit(dst, "// K%d's values from before the step%s, into L1 while the GEMMs run", grp->index,
                which == OWN_OTHERS ? " for this thread's other items" : "");
        int once = open_own_items(g, dst, jdim, which);
        open_live_item(g);
        sb_putn(dst, sb_str(&body), body.len);
        cg_close(dst, NULL);
        close_own_items(dst, once);
        g->out = out;
    }
    int emitted = first.len || others;
    if (body.failed || first.failed || decl.failed) out->failed = 1;
    sb_free(&body);
    sb_free(&first);
    sb_free(&decl);
    return emitted;
}

/* Emits a grid barrier unless the block is right after one. */
static void barrier(Gen *g, int *synced, const char *why) {
    if (*synced) return;
    cg_emit(g->out, "rnn_grid_sync(args.sync, ++epoch);  // %s", why);
    *synced = 1;
}

/* Does a step GEMM of the persistent forward being emitted stage state k's 16-bit twin? */
static int staged16(const Gen *g, int k) {
    const CgPersist *P = g->persist;
    for (int qi = 0; P && qi < P->ngemms; qi++) {
        const IrNode *n = &g->c->nodes[g->plan->gemms[P->gemms[qi].gemm].operand];
        if (P->gemms[qi].x16 && n->op == IR_STATE && n->index == k) return 1;
    }
    return 0;
}

/* The kernel's opening: signature, contract check, row maps, weights into shared memory. */
static int emit_prologue(Gen *g, const CgPersist *P, const char *kname) {
    StrBuf *out = g->out;
    cg_emit(out, "extern \"C\" __global__ void __launch_bounds__(%d, 1) %s(const RnnArgs args)", 32 * P->warps, kname);
    cg_open(out, "{");
    cg_emit(out, "const int s = blockIdx.x, G = gridDim.x;");
    cg_emit(out, "if (G != %d || blockDim.x != %d) __trap();  // the launch contract (codegen/cg.h)", P->blocks,
            32 * P->warps);
    cg_emit(out, "if (args.state_wrap < 0 || (args.state_wrap & (args.state_wrap - 1))) __trap();  // state slots: 0 or a "
                 "power of two (codegen/cg.h)");
    if (P->seqs_max > 0) /* a fused product's group reads the partial sums of one pass of sequences; one_item */
        cg_emit(out, "if (args.N > %lld) __trap();  // its batch class's batches only (codegen/cg.h)", (long long)P->seqs_max);
    if (P->half) /* cg_twin_bf16 */
        cg_emit(out, "if (args.bf16 != %d) __trap();  // its 16-bit twins are %s's (codegen/cg_gen.h cg_twin_bf16)",
                P->products == CG_BF16, P->products == CG_BF16 ? "bf16" : "fp16");
    cg_emit(out, "RNN_PROF_START();  // (RNN_PROFILE only: persist.cuh)");
    emit_first_items(g, P->backward);
    if (!P->ngemms) return 1;
    cg_emit(out, "extern __shared__ float4 rnn_smem4[];");
    cg_emit(out, "float *const rnn_smem = (float *)rnn_smem4;");
    if (P->half) cg_emit(out, "if (!args.params16) __trap();  // 16-bit weights: the runtime's rounded copy (codegen/cg.h)");
    for (int k = 0; k < g->c->nstates; k++)
        if (staged16(g, k))
            cg_emit(out, "if (!args.state16[%d]) __trap();  // state %s is staged from its 16-bit twin (codegen/cg.h)", k,
                    g->c->states[k].name);
    if (cg_persist_uses_words(g->L, P))
        cg_emit(out, "if (!args.flags) __trap();  // flagged words, or 16-bit twins in their slots (codegen/cg.h)");
    for (int qi = 0; P->backward && qi < P->ngemms; qi++) { /* once a buffer */
        int b = g->plan->gemms[P->gemms[qi].gemm].out_buffer, seen = 0;
        for (int e = 0; e < qi; e++) seen |= P->gemms[e].x16 && g->plan->gemms[P->gemms[e].gemm].out_buffer == b;
        if (P->gemms[qi].x16 && !seen)
            cg_emit(out, "if (!args.dbuf16[%d]) __trap();  // d(G%d) is staged from its 16-bit twin (codegen/cg.h)", b,
                    P->gemms[qi].gemm);
    }
    if (P->split) cg_emit(out, "const int rnn_rank = (int)rnn_cluster_rank();  // this block's place in its cluster");
    for (int qi = 0; qi < P->ngemms; qi++) emit_gemm_setup(g, P, qi);
    cg_emit(out, "__syncthreads();  // the row maps are complete");
    for (int qi = 0; qi < P->ngemms; qi++) emit_gemm_load(g, P, qi, 0);
    cg_emit(out, "rnn_cp_commit();");
    cg_emit(out, "rnn_cp_wait_all();  // this thread's copies of the weights have landed");
    for (int qi = 0; P->products == CG_TF32 && qi < P->ngemms; qi++) emit_gemm_load(g, P, qi, 1);
    cg_emit(out, "float *const rnn_xs = rnn_smem + %lld;  // %d staging tile%s [%d][up to %lld + pad] (%lld floats)",
            (long long)P->fixed_floats, P->tiles, P->tiles > 1 ? "s" : "", 4 * P->nw, (long long)P->kc_max,
            (long long)P->xs_floats);
    cg_emit(out, "float *const rnn_red = rnn_xs + %lld;  // partial sums [%d][%d][%lld]", (long long)P->xs_floats, P->warps,
            4 * P->nw, (long long)cg_persist_red_ld(P->rpp_max, P->mma));
    if (P->split) {
        cg_emit(out, "rnn_split rnn_sp = {rnn_smem + %lld, 0, 0, 0u, 0.0f, 0};  // exchange areas [2][%d][%d][ro] (persist.cuh)",
                (long long)P->xch_off, P->cluster, 4 * P->nw);
        cg_emit(out, "rnn_split_init();  // clusters of %d split K: no block writes into another before it runs", P->cluster);
    } else if (P->cluster > 1) {
        cg_emit(out, "rnn_cluster_init(rnn_xs, %lld);  // clusters of %d share the staged operand (persist.cuh)",
                (long long)P->xs_floats, P->cluster);
    }
    cg_emit(out, "__syncthreads();");
    for (int qi = 0; qi < P->ngemms; qi++) {
        const CgPersistGemm *q = &P->gemms[qi];
        if (!q->wregs) continue;
        if (!P->mma) {
            cg_emit(out, "// G%d's weights: each lane's of the first %d steps of its k loop, in registers for every step", q->gemm,
                    q->wregs);
            cg_emit(out, "rnn_ffrag<%d, %d> rnn_wf%d;", q->wregs, q->rw, q->gemm);
            cg_emit(out, "rnn_ffrag_load<%d, %d, %d>(rnn_wf%d, w%d, %lld, %lld);", q->wregs, q->rw, P->nw, q->gemm, q->gemm,
                    (long long)q->ldw, (long long)q->kc);
            continue;
        }
        cg_emit(out, "// G%d's weights: each warp's A fragments of its share of K, in registers for every step", q->gemm);
        cg_emit(out, "rnn_wfrag<%d, %d, %s> rnn_wf%d;", q->wregs, cg_persist_mma_tiles(q->rw), P->half ? "uint4" : "float4", q->gemm);
        const long long rp = (long long)q->passes * 8 * q->rw; /* the copied weights' row pitch: the block's rows */
        if (cg_persist_copies_columns(P, q, g->L->gemm_cols[q->gemm]))
            cg_emit(out, "rnn_wfrag_load_t<%d, %d>(rnn_wf%d, w%d, %lld, %lld);  // from [%lld][%lld], transposed", q->wregs, q->rw,
                    q->gemm, q->gemm, rp, (long long)q->kc, (long long)q->kc, rp);
        else
            cg_emit(out, "rnn_wfrag_load<%d, %d, %d>(rnn_wf%d, w%d, %lld, %lld);", q->wregs, q->rw, (int)P->products, q->gemm,
                    q->gemm, (long long)q->ldw, (long long)q->kc);
    }
    cg_emit(out, "RNN_PROF(5);");
    if (!P->flags) cg_emit(out, "unsigned epoch = 0;  // grid barriers passed");
    return 1;
}

int cg_persist_flagged(const Gen *g, int k) { return g->persist && g->persist->flags && cg_state_multiplied(g->plan, k); }

int cg_persist_flagged16(const Gen *g, int k) { return cg_persist_flagged(g, k) && staged16(g, k); }

int cg_persist_buffer_flagged(const Gen *g, int b) { return g->persist && g->persist->flags && cg_flagged_buffer(g->L, b); }

/* The buffer of forward GEMM qi's operand where it is a value staged from its 16-bit twin (a later
 * phase's, cg_flagged_buffer: the twin in its flagged words' slots); else -1. */
static int value_twin(const Plan *p, const CgPersist *P, int qi) {
    const IrRef operand = p->gemms[P->gemms[qi].gemm].operand;
    return !P->backward && P->gemms[qi].x16 && p->cell->nodes[operand].op != IR_STATE ? p->node[operand].buffer : -1;
}

int cg_persist_buffer16(const Gen *g, int b) {
    for (int qi = 0; g->persist && qi < g->persist->ngemms; qi++)
        if (value_twin(g->plan, g->persist, qi) == b) return 1;
    return 0;
}

int cg_persist_uses_words(const PlanLayout *L, const CgPersist *P) {
    if (P->backward) return 0;
    if (P->flags) return 1;
    for (int qi = 0; qi < P->ngemms; qi++)
        if (value_twin(L->plan, P, qi) >= 0) return 1;
    return 0;
}

/* The phase of the first step GEMM multiplying buffer b (for a comment). */
static int buffer_phase(const Plan *p, int b) {
    for (int j = 0; j < p->ngemms; j++)
        if (p->gemms[j].program == SCHED_STEP && p->node[p->gemms[j].operand].buffer == b) return p->gemms[j].phase;
    return -1;
}

/* Step t's view of the arguments: the per-step kernels' arguments at step t. */
static void emit_step_view(Gen *g, int backward, int counted) {
    const IrCell *c = g->c;
    const Plan *p = g->plan;
    StrBuf *out = g->out;
    char d[NAME_SIZE];
    cg_emit(out, "RnnArgs a = args;  // this step's view: the per-step kernels' arguments at step t");
    if (counted) cg_emit(out, "RNN_PROF_STEP();");
    cg_emit(out, "a.t = t;");
    /* a mask, not a division by a value known only at run time: that division sat on every
     * inference step's critical path, before the barrier (bench/NOTES.md section 50) */
    if (c->nstates) { /* the state slots' offsets; a cell without states has none (NVRTC warns of unused ones) */
        cg_emit(out, "const long long sp = args.state_wrap ? t & (args.state_wrap - 1) : t;  // a power of two (codegen/cg.h)");
        cg_emit(out, "const long long sn = args.state_wrap ? (t + 1) & (args.state_wrap - 1) : t + 1;");
    }
    for (int k = 0; k < c->nstates; k++) {
        cg_dim_code(c, c->states[k].shape.dims[0], d, sizeof d);
        cg_emit(out, "a.state_prev[%d] = args.state_prev[%d] + sp * args.N * %s;  // state %s", k, k, d, c->states[k].name);
        cg_emit(out, "a.state_next[%d] = (float *)args.state_prev[%d] + sn * args.N * %s;", k, k, d);
        if (g->twins && cg_state_multiplied(p, k))
            cg_emit(out, "if (args.state16[%d]) a.state16[%d] = args.state16[%d] + sn * args.N * %s;  // its twin's slot", k, k, k,
                    d);
        if (staged16(g, k))
            cg_emit(out, "const unsigned short *const rnn_x16_%d = args.state16[%d] + sp * args.N * %s;  // the twin this step "
                         "stages", k, k, d);
        if (backward) {
            cg_emit(out, "a.dstate_prev[%d] = args.dstate_prev[%d] + (t %% 3) * args.N * %s;  // d(%s): slot t %% 3", k, k,
                    d, c->states[k].name);
            cg_emit(out, "a.dstate_next[%d] = args.dstate_prev[%d] + ((t + 1) %% 3) * args.N * %s;", k, k, d);
        }
    }
    for (int k = 0; k < c->nstates; k++) { /* the flagged words' slots (cg_persist_flag_words) */
        if (!cg_persist_flagged(g, k)) continue;
        const long long S = (long long)ir_shape_numel(&c->states[k].shape, g->L->dimval);
        const long long at = 2 * (long long)cg_persist_flag_words_before(g->L, k);
        /* a state staged in 16 bits: 4-byte words, at the start of its slots of 8-byte words */
        const int w16 = cg_persist_flagged16(g, k);
        const char *type = w16 ? "unsigned" : "unsigned long long", *cast = w16 ? "(unsigned *)(" : "", *end = w16 ? ")" : "";
        cg_emit(out, "%s *const rnn_flags_next%d = %sargs.flags + (%lldLL + ((t + 1) & 1) * %lldLL) * args.N%s;"
                     "  // state %s, flagged for step t+1%s", type, k, cast, at, S, end, c->states[k].name,
                w16 ? " (16-bit words)" : "");
        cg_emit(out, "const %s *const rnn_flags_prev%d = %sargs.flags + (%lldLL + (t & 1) * %lldLL) * args.N%s;", type, k,
                cast, at, S, end);
    }
    for (int b = 0; b < p->nbuffers; b++) {
        const long long W = (long long)g->L->buffer_width[b], at = 2 * (long long)cg_persist_flag_words_before(g->L, c->nstates + b);
        if (cg_persist_buffer_flagged(g, b)) /* 8-byte words (with flags asked for, the plan stages no value from 16 bits) */
            cg_emit(out, "unsigned long long *const rnn_bflags%d = args.flags + (%lldLL + (t & 1) * %lldLL) * args.N;"
                         "  // buffer %d, flagged for this step's phase %d", b, at, W, b, buffer_phase(g->plan, b));
        else if (cg_persist_buffer16(g, b)) /* without flags its slots hold its 16-bit twin, which the phase's GEMMs stage */
            cg_emit(out, "unsigned short *const rnn_b16_%d = (unsigned short *)(args.flags + %lldLL * args.N);"
                         "  // buffer %d's 16-bit twin, in its flagged words' slots, for this step's phase %d", b, at, b,
                    buffer_phase(g->plan, b));
    }
    for (int b = 0; b < p->nbuffers; b++) {
        if (p->buffers[b].program != SCHED_STEP) continue;
        cg_emit(out, "a.buf[%d] = args.buf[%d] + t * args.buf_step[%d];", b, b, b);
        if (!backward && g->twins && cg_value_twinned(p, b))
            cg_emit(out, "if (args.buf16[%d]) a.buf16[%d] = args.buf16[%d] + t * args.buf_step[%d];  // its twin", b, b, b, b);
        if (backward) cg_emit(out, "a.dbuf[%d] = args.dbuf[%d] + t * args.buf_step[%d];", b, b, b);
        if (backward && g->twins && cg_adjoint_twinned(p, b))
            cg_emit(out, "if (args.dbuf16[%d]) a.dbuf16[%d] = args.dbuf16[%d] + t * args.buf_step[%d];", b, b, b, b);
    }
}

static int emit_forward_steps(Gen *g, const CgPersist *P) {
    const Plan *p = g->plan;
    StrBuf *out = g->out;
    int K = p->phases[SCHED_STEP], synced = 1; /* the step starts after the previous one's barrier */
    cg_open(out, "for (int t = args.t; t < args.t_end; t++) {");
    emit_step_view(g, 0, 1);
    /* the step groups' values from before the step: each thread's first item's into registers while
     * the barrier's other blocks arrive (its own block's values: the arrival's __syncthreads orders
     * their stores of step t-1 before; states only where no group's width differs from theirs, as
     * emit_prefetch says), the rest into L1 after the barrier, whose acquire may drop
     * L1's lines; the step's GEMMs hide their latency (bench/NOTES.md section 48) */
    StrBuf rest = {0};
    int barrier_here = !P->flags && P->ngemms;
    if (P->flags)
        cg_emit(out, "// no barrier: step t-1's states arrive as flagged words, each saying itself that it has (persist.cuh)");
    else if (barrier_here)
        cg_emit(out, "// this block arrived at step t-1's end (below; at the launch's first step, no step before): the view "
                     "above ran while the others arrive");
    for (int gi = 0; P->ngemms && gi < p->ngroups; gi++)
        if (p->groups[gi].program == SCHED_STEP) emit_prefetch(g, gi, FIRST_FORWARD, barrier_here ? &rest : NULL, NULL);
    if (barrier_here) {
        cg_emit(out, "if (t > args.t) rnn_grid_wait(args.sync, ++epoch);  // step t-1 is complete everywhere");
        sb_putn(out, sb_str(&rest), rest.len);
    }
    if (rest.failed) out->failed = 1;
    sb_free(&rest);
    for (int k = 0; k <= K; k++) {
        int gi = cg_persist_find_group(p, SCHED_STEP, k), gemms_here = 0;
        for (int qi = 0; qi < P->ngemms; qi++) gemms_here += p->gemms[P->gemms[qi].gemm].phase == k;
        if (gi >= 0) {
            if (k > 0 && cg_persist_reads_foreign_rows(g->L, gi, k - 1)) barrier(g, &synced, "this group reads rows other blocks computed");
            else if (k > 0) cg_emit(out, "// K%d reads only the rows this block computed (rnn_mv ended with __syncthreads)", k);
            if (!emit_group(g, gi, 0)) return 0;
            synced = 0;
        }
        if (!gemms_here) continue;
        char why[64];
        snprintf(why, sizeof why, "the phase-%d GEMMs read every block's results", k);
        if (P->flags && k > 0) /* flags_allowed: they stage this step's flagged words */
            cg_emit(out, "// no barrier: the phase-%d GEMMs stage this step's values as flagged words, each saying itself that it has arrived", k);
        else
            barrier(g, &synced, why);
        for (int qi = 0; qi < P->ngemms; qi++)
            if (p->gemms[P->gemms[qi].gemm].phase == k) emit_gemm_step(g, P, qi);
        synced = 0;
    }
    if (barrier_here) { /* at the step's end, so that the next step's view is computed while the others arrive */
        cg_emit(out, "if (t + 1 < args.t_end) rnn_grid_arrive(args.sync);  // this block is done with step t");
        for (int qi = 0; qi < P->ngemms; qi++) /* after the arrival, the last step's too */
            if (sums_stored_late(p, P, qi)) late_sums_store(g, P, qi);
    }
    cg_close(out, NULL);
    memset(g->first, 0, (g->c->nnodes + 1u) * sizeof *g->first); /* the registers were this kernel's */
    return 1;
}

/* The step group whose values from before the step a persistent backward fetches a step ahead:
 * its first group (it opens the step, so its own step leaves no time to fetch them; a later group
 * runs after a barrier of its step, whose acquire would drop L1's lines), where a step GEMM follows
 * it and no barrier opens the step (its acquire polls invalidate L1: bench/NOTES.md section 14);
 * else -1. */
static int backward_fetched_group(const Gen *g, const CgPersist *P) {
    const Plan *p = g->plan;
    int K = p->phases[SCHED_STEP], gemms = 0;
    for (int qi = 0; qi < P->ngemms; qi++) {
        int phase = p->gemms[P->gemms[qi].gemm].phase;
        gemms += phase >= 0 && phase < K; /* emit_backward_steps emits it after group phase + 1 */
    }
    return gemms && !cg_persist_states_cross_blocks(g->L) ? cg_persist_find_group(p, SCHED_STEP, K) : -1;
}

/* Before the step loop: the first item's registers of group gi (emit_prefetch) declared, and loaded
 * for the loop's first step, t_end-1. */
static void emit_backward_first_loads(Gen *g, int gi) {
    StrBuf *out = g->out;
    StrBuf scope = {0}, decl = {0};
    scope.indent = out->indent;
    g->out = &scope;
    cg_open(&scope, "if (args.t_end > args.t) {  // the first step's");
    cg_emit(&scope, "const int t = args.t_end - 1;");
    emit_step_view(g, 1, 0);
    emit_prefetch(g, gi, FIRST_BACKWARD_PICK, NULL, &decl);
    cg_close(&scope, NULL);
    g->out = out;
    if (decl.len) cg_emit(out, "float %s;  // the first item's values of K%d's step (each step loads the next one's)", sb_str(&decl),
                          g->plan->groups[gi].index);
    sb_putn(out, sb_str(&scope), scope.len);
    if (scope.failed || decl.failed) out->failed = 1;
    sb_free(&scope);
    sb_free(&decl);
}

/* Inside the barrier before the step's transposed GEMMs (between its arrival and its wait), or after
 * it: the values that step t-1's group gi (backward_fetched_group) reads from before the step, the
 * first item's into its registers and the rest into L1, landing while the barrier and the GEMMs run.
 * The view of step t-1 in a scope of its own. */
static void emit_backward_prefetch(Gen *g, int gi) {
    StrBuf *out = g->out;
    StrBuf scope = {0}; /* kept only if the group reads such a value */
    scope.indent = out->indent;
    g->out = &scope;
    cg_open(&scope, "if (t > args.t) {  // step t-1's values from before it, landing while the barrier and this step's GEMMs run");
    cg_emit(&scope, "const int t_prev = t - 1;");
    cg_open(&scope, "{");
    cg_emit(&scope, "const int t = t_prev;");
    emit_step_view(g, 1, 0);
    int any = emit_prefetch(g, gi, FIRST_BACKWARD, NULL, NULL);
    cg_close(&scope, NULL);
    cg_close(&scope, NULL);
    g->out = out;
    if (scope.failed) out->failed = 1;
    else if (any) sb_putn(out, sb_str(&scope), scope.len);
    sb_free(&scope);
}

/* The backward: steps t_end-1 down to t; per step, as the per-step backward (codegen/cg.h),
 * group k's backward then d(operand) += W^T d(result) of the phase k-1 GEMMs, k = K..0. State
 * adjoints rotate through three slots of dstate_prev[k] ([N][S] each): step t adds to slot
 * t % 3, reads slot (t+1) % 3, and zeroes slot (t+2) % 3 (the next step's, last read a step ago);
 * where a slot has a first writer (first_adjoint_writer), only with a.lengths: without, that writer
 * stores. */
static int emit_backward_steps(Gen *g, const CgPersist *P) {
    const Plan *p = g->plan;
    const IrCell *c = g->c;
    StrBuf *out = g->out;
    char d[NAME_SIZE];
    int K = p->phases[SCHED_STEP], synced = 1, cross = cg_persist_states_cross_blocks(g->L), prefetched = 0;
    int fetched = backward_fetched_group(g, P); /* its values a step ahead, after the step's first barrier */
    /* the first item's into registers on tensor cores only: FFMA backwards hold 240-250 registers already
     * (a random cell's spilled: bench/NOTES.md section 61); theirs are prefetched into L1 alone */
    if (fetched >= 0 && P->mma) emit_backward_first_loads(g, fetched);
    g->seed_states = 0;
    for (int k = 0; k < c->nstates; k++) {
        if (!seeded_state(g, P, k)) continue;
        g->seed_states |= 1ull << k;
        cg_emit(out, "float rnn_seed%d = 0.0f;  // step t-1's seed d(%s') of this thread's first item, set at step t by its "
                     "slot's one writer (where no sequence ends)", k, c->states[k].name);
        cg_emit(out, "int rnn_seed%d_set = 0;", k);
    }
    cg_open(out, "for (int t = args.t_end - 1; t >= args.t; t--) {");
    emit_step_view(g, 1, 1);
    if (cross) /* else every block reads only the state adjoints it added itself */
        cg_emit(out, "if (t < args.t_end - 1) rnn_grid_sync(args.sync, ++epoch);  // step t+1 is complete everywhere");
    for (int pass = 0; pass < 2; pass++) { /* the slots no first writer stores to, then (pass 1) those it does */
        int any = 0;
        for (int k = 0; k < c->nstates; k++) {
            if ((first_adjoint_writer(g, P, k) != FIRST_WRITER_NONE) != pass) continue;
            if (!any++) {
                if (!pass) cg_emit(out, "// the next step's state adjoints start at zero (this block's elements)");
                else cg_open(out, "if (args.lengths) {  // the next step's state adjoints its first writers add to "
                                  "(where none ends, they store)");
            }
            cg_dim_code(c, c->states[k].shape.dims[0], d, sizeof d);
            int once = open_own_items(g, out, c->states[k].shape.dims[0], OWN_ALL);
            cg_emit(out, "args.dstate_prev[%d][((t + 2) %% 3) * args.N * %s + n * %s + j] = 0.0f;", k, d, d);
            close_own_items(out, once);
        }
        if (pass && any) cg_close(out, NULL);
    }
    for (int k = K; k >= 0; k--) {
        int gi = cg_persist_find_group(p, SCHED_STEP, k);
        if (gi >= 0) {
            g->fresh_states = 0;
            for (int st = 0; st < c->nstates; st++)
                if (first_adjoint_writer(g, P, st) == gi) g->fresh_states |= 1ull << st;
            int ok = emit_group(g, gi, 1);
            g->fresh_states = 0;
            if (!ok) return 0;
            synced = 0;
        }
        int gemms = 0, mismatch = 0, prev = k > 0 ? cg_persist_find_group(p, SCHED_STEP, k - 1) : -1;
        for (int qi = 0; qi < P->ngemms; qi++) {
            const SchedGemm *gm = &p->gemms[P->gemms[qi].gemm];
            if (k == 0 || gm->phase != k - 1) continue;
            if (!gemms++) {
                if (fetched >= 0 && !prefetched && !synced) {
                    /* the next step's values from before it are the forward's: loaded between the barrier's
                     * arrival and its wait, which then hides their issue (bench/NOTES.md section 108) */
                    cg_emit(out, "rnn_grid_arrive(args.sync);  // the barrier below: step t-1's values load while this block waits");
                    emit_backward_prefetch(g, fetched);
                    cg_emit(out, "rnn_grid_wait(args.sync, ++epoch);  // the transposed GEMMs read every block's adjoints");
                    prefetched = synced = 1;
                } else {
                    barrier(g, &synced, "the transposed GEMMs read every block's adjoints");
                }
            }
            if (fetched >= 0 && !prefetched++) emit_backward_prefetch(g, fetched);
            emit_gemm_step(g, P, qi);
            synced = 0;
            if (prev >= 0 && cg_node_len(g, gm->operand) != cg_group_width(g->L, prev)) mismatch = 1;
        }
        if (mismatch) barrier(g, &synced, "the group before reads operand adjoints other blocks added to");
    }
    cg_close(out, NULL);
    g->seed_states = 0;
    return 1;
}

int cg_emit_persist_kernel(Gen *g, const CgPersist *P) {
    char kname[NAME_SIZE];
    g->persist = P->backward ? NULL : P;
    g->unit = P;
    StrBuf *out = g->out;
    if (cg_persist_kernel_name(g->plan, P->backward, kname, sizeof kname) < 0) return 0;
    if (P->backward) {
        cg_emit(out, "// ---- %s: steps a.t_end-1 down to a.t of the step program's backward in one launch", kname);
        cg_emit(out, "// (persistent backend). %d blocks of %d threads, all co-resident (cooperative launch). Block s",
                P->blocks, 32 * P->warps);
        cg_emit(out, "// owns elements [L*s/G, L*(s+1)/G) of every length-L quantity: its units of each group and,");
        cg_emit(out, "// of each step GEMM's operand, the elements whose adjoint it sums over W's columns, whose");
        cg_emit(out, "// transposed weights stay in shared memory for every step.");
    } else {
        cg_emit(out, "// ---- %s: steps a.t .. a.t_end-1 of the step program in one launch (persistent backend)", kname);
        cg_emit(out, "// %d blocks of %d threads, all co-resident (cooperative launch). Block s owns elements", P->blocks,
                32 * P->warps);
        cg_emit(out, "// [L*s/G, L*(s+1)/G) of every length-L quantity: its units of each group and, of each step");
        cg_emit(out, "// GEMM, the rows producing them, whose weights stay in shared memory for every step.");
    }
    if (!emit_prologue(g, P, kname)) return 0;
    if (!(P->backward ? emit_backward_steps(g, P) : emit_forward_steps(g, P))) return 0;
    cg_emit(out, "RNN_PROF_END();  // (RNN_PROFILE only)");
    if (P->cluster > 1)
        cg_emit(out, "rnn_cluster_exit();  // no block leaves while its cluster may still %s", P->split ? "write to it" : "signal it");
    cg_close(out, NULL);
    return 1;
}

int cg_emit_persistent(Arena *arena, const Plan *plan, const PlanLayout *layout, const CgPersist *P, StrBuf *out,
                       Diags *diags) {
    Gen g;
    if (!cg_gen_init(&g, arena, plan, layout, out, diags)) return 0;
    g.twins = P->twins;
    char kname[NAME_SIZE], dims[EXPR_SIZE] = "";
    const IrCell *c = plan->cell;
    for (int d = 0, n = 0; d < c->ndims; d++)
        if (c->dims[d].name && n < (int)sizeof dims)
            n += snprintf(dims + n, sizeof dims - n, " %s=%lld", c->dims[d].name, (long long)layout->dimval[d]);
    if (cg_persist_kernel_name(plan, P->backward, kname, sizeof kname) < 0) {
        diag_error(diags, c->loc, "cannot generate code for cell '%s': its name is too long", c->name);
        return 0;
    }
    cg_emit(out, "// Generated by rnncc from cell %s (dimensions:%s). Do not edit.", c->name, *dims ? dims : " none");
    cg_emit(out, "// The persistent backend's %s unit: %s runs the whole step loop of one layer in one launch",
            P->backward ? "backward" : "forward", kname);
    char cl[48];
    cg_emit(out, "// (%d blocks%s, %lld bytes of shared memory each, %d sequences a matrix-product pass, %s products);",
            P->blocks, cg_persist_in_clusters(P, cl), (long long)P->smem, 4 * P->nw, cg_products_name(P->products));
    cg_emit(out, "// the hoisted program runs %s it. codegen/cg.h has the launch contract.", P->backward ? "after" : "before");
    cg_emit(out, "%s", "");
    cg_emit_preamble(&g);
    if (P->split) {
        cg_emit(out, "#define RNN_SPLIT %d  // blocks per cluster, splitting K (persist.cuh)", P->cluster);
        /* the split's exchange without the cluster's meeting, where the products load straight: its
         * barriers would slow every release fence of a staged unit (persist.cuh rnn_split_finish) */
        if (P->direct) cg_emit(out, "%s", "#define RNN_SPLIT_ASYNC 1  // the exchange by st.async (persist.cuh)");
    } else if (P->cluster > 1) cg_emit(out, "#define RNN_CLUSTER %d  // blocks per cluster (persist.cuh)", P->cluster);
    if (P->warps != CG_PERSIST_WARPS) cg_emit(out, "#define RNN_WARPS %d  // warps a block (persist.cuh)", P->warps);
    sb_puts(out, cg_persist_text);
    cg_emit(out, "%s", "");
    int errors = diags->nerrors;
    if (!cg_emit_persist_kernel(&g, P)) {
        if (diags->nerrors == errors)
            diag_error(diags, c->loc, "cannot generate the persistent kernel of cell '%s'", c->name);
        return 0;
    }
    if (out->failed) {
        diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory while generating code for cell '%s'", c->name);
        return 0;
    }
    return 1;
}
