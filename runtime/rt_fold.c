/* The projection fold at run time (ir/fold_projection.h; by the rule, rnncc_model_desc.fold or RNNCC_FOLD):
 * the model runs the folded cell, whose state z is the projection's operand, and this file keeps the user's
 * terms around it: V_k = U_k P before each forward (in fp16 and bf16 straight into the 16-bit copy; none where the model
 * keeps it and U, P are unchanged), U_k s_0 into the
 * hoisted products' first-step columns (so that neither backend's step changes), and s_T = P z_T after the loop
 * (s_0 where a sequence has no step).
 * The backward mirrors it: dz_T = P^T dhT seeds the folded state, the entry columns' adjoint A_k (gathered
 * from the hoisted product's adjoint) gives dh0 = sum_k U_k^T A_k, and the weight gradients map back
 * (dU_k += dV_k P^T + A_k^T s_0, dP += sum_k U_k^T dV_k + dhT^T z_T; where T N is small, through the columns
 * without dV: rt_fold_by_columns). ir/fold_exec.c does all of it on the CPU. Key idea: every addition here is a
 * dense GEMM (fp32 data) and, where sequences differ in length, a tiny column kernel. */
#include <stdlib.h>
#include <string.h>

#include "ir/fold_rule.h"
#include "rt_internal.h"

_Static_assert(RNNCC_FP32 == 0 && RNNCC_TF32X3 == 4, "ir_fold_products_of reads rnncc_precision's values");

/* The rule (ir/fold_rule.h) for this model: its precision, V's flops at the largest of its layers' dimensions, and
 * whether it keeps V (desc->keep_derived_weights). Sets *by, and *why_not where the model runs as written. */
static rnncc_status fold_rule(rnncc_model *m, const IrFold *f, const char **by, const char **why_not) {
    double flops = 0;
    for (int i = 0; i < (m->layers > 1 ? 2 : 1); i++) {
        const double v = ir_fold_derived_flops(f, m->dimval[i]);
        if (v > flops) flops = v;
    }
    char text[160];
    *why_not = ir_fold_rule(ir_fold_products_of(m->precision), rnncc_precision_name(m->precision), flops, m->keep_asked, text,
                            sizeof text);
    *by = arena_printf(&m->arena, "%s", text);
    return *by ? RNNCC_OK : rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
}

rnncc_status rt_fold_choose(rnncc_model *m) {
    const char *env = getenv("RNNCC_FOLD");
    if (env && *env && strcmp(env, "0") != 0 && strcmp(env, "1") != 0)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "the environment variable RNNCC_FOLD is '%.64s'; it must be 0 or 1", env);
    rnncc_fold ask = m->fold_asked;
    const char *by = "desc->fold";
    if (ask == RNNCC_FOLD_AUTO && env && *env) { /* the environment forces AUTO models only */
        ask = *env == '1' ? RNNCC_FOLD_ON : RNNCC_FOLD_OFF;
        by = *env == '1' ? "RNNCC_FOLD=1" : "RNNCC_FOLD=0";
    }
    IrFold *f = arena_alloc(&m->arena, sizeof *f);
    if (!f) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    const IrCell *c = ir_fold_projection(&m->arena, m->cell, f);
    if (!c) { /* forced on: rnncc_model_backend says why not; by the rule or off: nothing to say */
        if (ask == RNNCC_FOLD_ON) m->fold_by = by, m->fold_why_not = f->why_not;
        return RNNCC_OK;
    }
    if (ask == RNNCC_FOLD_OFF) return m->fold_by = by, m->fold_why_not = "forced off", RNNCC_OK;
    if (ask == RNNCC_FOLD_AUTO) { /* the rule (bench/NOTES.md sections 82 and 83) */
        const char *why_not = NULL;
        RT_TRY(fold_rule(m, f, &by, &why_not));
        if (why_not) return m->fold_by = by, m->fold_why_not = why_not, RNNCC_OK;
    }
    m->fold_by = by;
    Diags d;
    diag_init(&d, &m->arena, c->name, NULL, 0);
    Plan *p = sched_plan(&m->arena, c, &d);
    IrRef *entry = arena_array(&m->arena, (size_t)f->nderived + 1, sizeof *entry);
    if (!p || !entry || p->nbuffers > RNN_MAX_BUFFERS) return m->fold_why_not = "the folded cell does not schedule", RNNCC_OK;
    if (!ir_fold_entries(p, f, entry))
        return m->fold_why_not = "a product of the state is summed with no hoisted product to carry h0's entry", RNNCC_OK;
    if (!ir_fold_pack_like(&m->arena, p, m->plan, f)) /* the user's offsets (rnncc_model_param_info) as unfolded */
        return m->fold_why_not = "the folded cell would pack the cell's parameters at other offsets", RNNCC_OK;
    m->cell = c, m->plan = p, m->fold = f, m->fold_entry = entry;
    return RNNCC_OK;
}

int64_t rt_fold_rows(const rnncc_model *m, int which) {
    int64_t most = 0;
    for (int i = 0; m->fold && i < 2; i++) {
        const PlanLayout *L = i == 0 ? m->layout[0] : m->layout[1] ? m->layout[1] : m->layout[0];
        const int64_t Ps = L->param_rows[m->fold->proj], Hs = L->param_cols[m->fold->proj];
        int64_t U = 0; /* every U_k's rows: a run's entry goes in one GEMM */
        for (int k = 0; k < m->fold->nderived; k++) U += L->param_rows[m->fold->derived_from[k]];
        const int64_t n = which == 0 ? Hs : which == 1 ? U : which == 2 ? Ps : Ps * Hs + U * Ps; /* 3: P, then every U_k */
        if (n > most) most = n;
    }
    return most;
}

/* C (column-major, ldc) = op(A) op(B), beta 0 or 1, on lane's handle and stream (cublasSetStream drops the
 * handle's workspace, so the lane's own is set again: a captured pass must not allocate). In fp32 without tensor
 * cores where the model's products are fp32 or tf32x3; where they are tf32 or 16-bit, in tf32 (the step GEMMs
 * round their operands at least so far). */
static rnncc_status fold_gemm(rnncc_model *m, int lane, cublasOperation_t oa, cublasOperation_t ob, int64_t M, int64_t N,
                           int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, int add) {
    const float one = 1.f, beta = add ? 1.f : 0.f;
    const int fast = ir_fold_products_of(m->precision) == IR_FOLD_TENSOR_CORES;
    cublasHandle_t h = m->cublas[lane];
    RT_CUBLAS(m, cublasSetStream(h, m->streams[lane]));
    RT_CUBLAS(m, cublasSetWorkspace(h, m->cublas_ws[lane], RT_CUBLAS_WS));
    RT_CUBLAS(m, cublasGemmEx(h, oa, ob, (int)M, (int)N, (int)K, &one, A, CUDA_R_32F, (int)lda, B, CUDA_R_32F, (int)ldb, &beta, C,
                              CUDA_R_32F, (int)ldc, fast ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC,
                              CUBLAS_GEMM_DEFAULT));
    return RNNCC_OK;
}

/* Starts side work of b's on lane 1, after everything issued on lane 0 so far, for rt_fold_join to wait for: *side is b
 * on lane 1's stream and cuBLAS handle, its pointers as they are (a unit on lane 0 whose pass leaves lane 1 idle:
 * RtBind.aside; the callers check that the work reads no lane scratch). */
static rnncc_status fork_aside(RtBind *b, RtBind *side) {
    RT_TRY(rt_fork_lanes(b->m));
    b->aside_pending = 1;
    *side = *b;
    side->lane = 1;
    side->stream = b->m->streams[1];
    side->blas = b->m->cublas[1];
    return RNNCC_OK;
}

rnncc_status rt_fold_join(RtBind *b) {
    if (!b->aside_pending) return RNNCC_OK;
    b->aside_pending = 0;
    return rt_join_lanes(b->m);
}

/* The derived weights from k on whose U_k lie back to back in L (ir_fold_pack_like packs them so) as their V_k
 * do: returns the first past them, their rows summed into R. One GEMM then does them all. */
static int run_end(const IrFold *f, const PlanLayout *L, int k, int64_t *R) {
    const int64_t *off = L->param_offset, Ps = L->param_rows[f->proj], Hs = L->param_cols[f->proj];
    const int64_t U0 = off[f->derived_from[k]], V0 = off[f->user->nparams + k];
    int j = k + 1;
    for (*R = L->param_rows[f->derived_from[k]]; j < f->nderived; j++) {
        if (off[f->derived_from[j]] != U0 + *R * Ps || off[f->user->nparams + j] != V0 + *R * Hs) break;
        *R += L->param_rows[f->derived_from[j]];
    }
    return j;
}

/* The buffer of entry k's columns: the output of the hoisted GEMM that carries h0's entry for U_k. */
static int entry_buffer(const rnncc_model *m, int k) { return m->plan->gemms[m->plan->node[m->fold_entry[k]].gemm].out_buffer; }

/* As run_end, where also the entries' columns lie back to back in one buffer (LSTMP's: the hoisted [W_i; ...; W_o]
 * GEMM's four blocks): one GEMM, one column kernel. */
static int entry_run_end(const rnncc_model *m, const PlanLayout *L, int k, int64_t *R) {
    const IrRef a0 = m->fold_entry[k];
    int64_t all;
    const int end = run_end(m->fold, L, k, &all), buf0 = entry_buffer(m, k);
    int j = k + 1;
    for (*R = L->param_rows[m->fold->derived_from[k]]; j < end; j++) {
        if (entry_buffer(m, j) != buf0 || L->block_row[m->fold_entry[j]] != L->block_row[a0] + *R) break;
        *R += L->param_rows[m->fold->derived_from[j]];
    }
    return j;
}

/* The post program's buffer of P z at every step (the projected node's GEMM), or -1 where the folded plan does not
 * run that product after the loop. */
static int projected_buffer(const rnncc_model *m) {
    const IrRef at = m->fold->projected;
    if (at == IR_NONE || at >= m->cell->nnodes) return -1;
    const int g = m->plan->node[at].gemm;
    return g >= 0 && m->plan->gemms[g].program == SCHED_POST ? m->plan->gemms[g].out_buffer : -1;
}

/* The plan GEMM whose weights are exactly the run of V_k from k (R rows; run_end) and whose operand is the folded
 * state, or -1. */
static int run_gemm(const rnncc_model *m, const PlanLayout *L, int k, int64_t R) {
    const Plan *p = m->plan;
    for (int j = 0; j < p->ngemms; j++) {
        const IrNode *op = &m->cell->nodes[p->gemms[j].operand];
        if (sched_gemm_param(p, j) == m->fold->user->nparams + k && L->gemm_rows[j] == R && op->op == IR_STATE &&
            op->index == m->fold->state)
            return j;
    }
    return -1;
}

int rt_fold_by_columns(const rnncc_model *m, int64_t T, int64_t N) {
    /* not in tf32x3, whose fold GEMMs are FFMA's (fold_gemm) */
    if (!m->fold || m->precision == RNNCC_TF32X3) return 0;
    const IrFold *f = m->fold;
    const double TN = (double)T * (double)N;
    for (int u = 0; u < m->nunits; u++) {
        const PlanLayout *L = m->units[u].layout;
        const double Ps = (double)L->param_rows[f->proj], Hs = (double)L->param_cols[f->proj];
        int64_t R;
        for (int k = 0, j; k < f->nderived; k = j) {
            j = run_end(f, L, k, &R);
            if (run_gemm(m, L, k, R) < 0) return 0;
            /* through the columns: Y = P Z, dU += dG Y^T, D = U^T dG, dP += D Z^T; as written: dV = dG Z^T, then
             * dU += dV P^T and dP += U^T dV */
            if (TN * (2 * Ps * Hs + 2 * (double)R * Ps) >= (double)R * Hs * TN + 2 * (double)R * Ps * Hs) return 0;
        }
    }
    return 1;
}

/* The post program's GEMM y = P z (the projected node's) whose weight gradient the map through the columns carries
 * in its dP product, or -1: in the forward direction, where that GEMM multiplies exactly P by the folded state's
 * next value (so its operand at step t is the state's slot t + 1, Z's), into a buffer of P's rows alone. */
static int post_in_map(const RtBind *b) {
    const rnncc_model *m = b->m;
    if (!m->fold || !b->fold_cols || b->unit->dir != 0) return -1;
    const int pb = projected_buffer(m);
    if (pb < 0) return -1;
    const PlanLayout *L = b->unit->layout;
    const int j = m->plan->node[m->fold->projected].gemm, p = m->fold->proj;
    const int64_t Ps = L->param_rows[p], Hs = L->param_cols[p];
    if (m->plan->gemms[j].operand != m->cell->states[m->fold->state].next || sched_gemm_param(m->plan, j) != p ||
        L->gemm_rows[j] != Ps || L->gemm_cols[j] != Hs || L->buffer_width[pb] != Ps)
        return -1;
    const int out = rt_post_reads_dy(b, j); /* or dy itself, packed as D is */
    return out < 0 || b->ldy[out] == Ps ? j : -1;
}

int rt_fold_skips_gemm(const RtBind *b, int j) {
    const rnncc_model *m = b->m;
    if (!b->fold_cols) return 0;
    if (j == post_in_map(b)) return 1;
    const PlanLayout *L = b->unit->layout;
    int64_t R;
    for (int k = 0, e; k < m->fold->nderived; k = e) {
        e = run_end(m->fold, L, k, &R);
        if (run_gemm(m, L, k, R) == j) return 1;
    }
    return 0;
}

rnncc_status rt_fold_derive(rnncc_model *m) {
    if (!m->fold || (m->keep_derived && m->derived_fresh)) return RNNCC_OK; /* V as kept (the 16-bit copy's too) */
    const IrFold *f = m->fold;
    const int half = rt_half(m);
    for (int u = 0; u < m->nunits; u++) {
        const PlanLayout *L = m->units[u].layout;
        float *w = m->weights + m->units[u].weight_offset;
        const float *P = w + L->param_offset[f->proj];
        const int64_t Ps = L->param_rows[f->proj], Hs = L->param_cols[f->proj];
        int64_t R;
        for (int k = 0, j; k < f->nderived; k = j) { /* V [R][Hs] = U [R][Ps] P [Ps][Hs]: column-major V^T = P^T U^T */
            j = run_end(f, L, k, &R);
            const int64_t Uo = L->param_offset[f->derived_from[k]], Vo = L->param_offset[f->user->nparams + k];
            if (half) { /* the copy's U and P (rt_half_begin rounded them) into the copy's V, rounded once */
                unsigned short *w16 = (unsigned short *)m->half_weights + m->units[u].weight_offset;
                RT_TRY(rt_gemm_half_out(m, 0, m->streams[0], CUBLAS_OP_N, CUBLAS_OP_N, Hs, R, Ps,
                                        w16 + L->param_offset[f->proj], Hs, w16 + Uo, Ps, w16 + Vo, Hs, 0));
            } else {
                RT_TRY(fold_gemm(m, 0, CUBLAS_OP_N, CUBLAS_OP_N, Hs, R, Ps, P, Hs, w + Uo, Ps, w + Vo, Hs, 0));
            }
        }
    }
    return RNNCC_OK;
}

static rnncc_status launch_columns(rnncc_model *m, cudaStream_t stream, int which, RnnFoldColumns a) {
    void *args[] = {&a};
    const int64_t slices = (a.rows + CG_BLOCK_SIZE - 1) / CG_BLOCK_SIZE; /* a thread a row (convert.cuh) */
    cudaLaunchConfig_t cfg = {.gridDim = {(unsigned)a.N, (unsigned)(slices < 1 ? 1 : slices > 65535 ? 65535 : slices), 1},
                              .blockDim = {CG_BLOCK_SIZE, 1, 1}, .stream = stream};
    return rt_launch_convert(m, &cfg, m->fold_columns[which], args, "fold column");
}

/* A product of the fold's on the bound unit's lane: in the 16-bit modes by rt_gemm, 16-bit products as the plan's
 * (on the twins given; where NULL, the weights' copy or the operand rounded into the lane's scratch), else
 * fold_gemm's. */
static rnncc_status lane_gemm(RtBind *b, cublasOperation_t oa, cublasOperation_t ob, int64_t M, int64_t N, int64_t K,
                              const float *A, int64_t lda, const unsigned short *A16, const float *B, int64_t ldb,
                              const unsigned short *B16, float *C, int64_t ldc, int add) {
    if (!rt_half(b->m)) return fold_gemm(b->m, b->lane, oa, ob, M, N, K, A, lda, B, ldb, C, ldc, add);
    return rt_gemm(b->m, b->lane, b->stream, oa, ob, M, N, K, A, lda, B, ldb, C, ldc, add, A16, B16, NULL);
}

rnncc_status rt_fold_entry(RtBind *b) {
    rnncc_model *m = b->m;
    if (!m->fold || !b->fold_s0 || b->r->N == 0) return RNNCC_OK;
    const IrFold *f = m->fold;
    const PlanLayout *L = b->unit->layout;
    const float *w = m->weights + b->unit->weight_offset;
    const int64_t N = b->r->N, Ps = L->param_rows[f->proj];
    int64_t R;
    for (int k = 0, j; k < f->nderived; k = j) {
        j = entry_run_end(m, L, k, &R);
        const float *U = w + L->param_offset[f->derived_from[k]];
        IrRef at = m->fold_entry[k];
        int buf = entry_buffer(m, k);
        float *cols = rt_buffer_at(b, b->bufs, buf, 0);
        const int64_t ld = L->buffer_width[buf];
        if (!b->lengths) { /* every sequence's first step in one run of N columns (step T-1 in reverse): added there */
            float *first = cols + (b->unit->dir ? b->r->T - 1 : 0) * N * ld + L->block_row[at];
            RT_TRY(lane_gemm(b, CUBLAS_OP_T, CUBLAS_OP_N, R, N, Ps, U, Ps, NULL, b->fold_s0, Ps, b->fold_s016, first, ld, 1));
            continue;
        }
        /* add [N][R] = s_0 [N][Ps] U^T: column-major add^T = U s_0^T, U [R][Ps] read as Ps x R transposed; then each
         * sequence's first step's column (its length's) gets its own */
        RT_TRY(lane_gemm(b, CUBLAS_OP_T, CUBLAS_OP_N, R, N, Ps, U, Ps, NULL, b->fold_s0, Ps, b->fold_s016, b->fold_add, R, 0));
        RT_TRY(launch_columns(m, b->stream, 0,
                              (RnnFoldColumns){.add = b->fold_add, .buf = cols, .lengths = b->lengths, .ld = ld,
                                               .row0 = L->block_row[at], .rows = R, .N = (int)N, .T = (int)b->r->T,
                                               .reverse = b->unit->dir}));
    }
    return RNNCC_OK;
}

int rt_fold_final_from_post(const rnncc_model *m) { return m->fold && projected_buffer(m) >= 0; }

rnncc_status rt_fold_final(RtBind *b) {
    rnncc_model *m = b->m;
    if (!m->fold || !b->fold_sT) return RNNCC_OK;
    const PlanLayout *L = b->unit->layout;
    const int64_t N = b->r->N, T = b->r->T, Ps = L->param_rows[m->fold->proj], Hs = L->param_cols[m->fold->proj];
    const int pb = projected_buffer(m);
    const float *P = m->weights + b->unit->weight_offset + L->param_offset[m->fold->proj];
    if (T > 0 && pb >= 0) { /* s_T = P z_T is the post program's product at each sequence's last step: its column
                             * (the post buffers' columns go by step, so the last is at len - 1 in both directions;
                             * or the output's, where the product went there: rt_post_direct), s_0 where a
                             * sequence has no step */
        int group, out = rt_post_direct(b, m->plan->node[m->fold->projected].gemm, &group);
        RnnFoldColumns a = {.add = b->fold_sT, .buf = rt_buffer_at(b, b->bufs, pb, 0), .src = b->fold_s0,
                            .lengths = b->lengths, .ld = L->buffer_width[pb], .row0 = L->block_row[m->fold->projected],
                            .rows = Ps, .N = (int)N, .T = (int)T, .reverse = 1};
        if (out >= 0) a.buf = b->y[out], a.ld = b->ldy[out], a.row0 = 0;
        return launch_columns(m, b->stream, 2, a); /* s_0 where a sequence has no step, in the same launch (in place,
                                                    * where hT is h0) */
    }
    /* else (no product P z after the loop: the fold drops it where no output reads it) s_T [N][Ps] = z_T [N][Hs] P^T:
     * column-major s_T^T = P z_T^T, P [Ps][Hs] read as Hs x Ps transposed; with lengths added onto s_0 where a sequence has no step
     * (its z_T is z_0 = 0) and zeros elsewhere, written first: so s_0 is read before anything writes s_T, which may
     * be it (hT is h0) */
    const int first = T == 0 || b->lengths;
    if (first)
        RT_TRY(launch_columns(m, b->stream, 1,
                              (RnnFoldColumns){.src = b->fold_s0, .dst = b->fold_sT, .lengths = b->lengths, .rows = Ps,
                                               .N = (int)N, .T = (int)T, .zero_stepped = T > 0}));
    if (T == 0) return RNNCC_OK;
    return fold_gemm(m, b->lane, CUBLAS_OP_T, CUBLAS_OP_N, Ps, N, Hs, P, Hs, b->fold_z, Hs, b->fold_sT, Ps, first);
}

rnncc_status rt_fold_seed(RtBind *b, const float *dhT, float *dz) {
    rnncc_model *m = b->m;
    if (!m->fold || !dhT || b->r->T == 0) return RNNCC_OK; /* T = 0: the folded state's adjoint reaches nothing */
    const PlanLayout *L = b->unit->layout;
    const int64_t Ps = L->param_rows[m->fold->proj], Hs = L->param_cols[m->fold->proj];
    const float *P = m->weights + b->unit->weight_offset + L->param_offset[m->fold->proj];
    RtBind side = *b;
    if (b->aside) RT_TRY(fork_aside(b, &side)); /* beside the slots' zeroing and the post program's backward; joined
                                                 * before the first step */
    /* dz [N][Hs] = dhT [N][Ps] P: column-major dz^T = P^T dhT^T, P [Ps][Hs] read as Hs x Ps (a sequence with no
     * step gets one too, which flows only to its z_0, a constant) */
    return fold_gemm(m, side.lane, CUBLAS_OP_N, CUBLAS_OP_N, Hs, b->r->N, Ps, P, Hs, dhT, Ps, dz, Hs, 0);
}

/* A_k, the adjoint of entry k's columns (of the hoisted product's adjoint, or its 16-bit twin where there is
 * one: every kernel writes the twin), into b->fold_add as [N][R]. */
static rnncc_status gather(RtBind *b, int k, int64_t R) {
    rnncc_model *m = b->m;
    const PlanLayout *L = b->unit->layout;
    IrRef at = m->fold_entry[k];
    int buf = entry_buffer(m, k);
    return launch_columns(m, b->stream, 2,
                          (RnnFoldColumns){.add = b->fold_add, .buf = rt_buffer_at(b, b->dbufs, buf, 0),
                                           .buf16 = rt_dbuf16_at(b, buf, 0), .lengths = b->lengths, .ld = L->buffer_width[buf],
                                           .row0 = L->block_row[at], .rows = R, .N = (int)b->r->N, .T = (int)b->r->T,
                                           .reverse = b->unit->dir, .bf16 = m->precision == RNNCC_BF16});
}

/* Whether every entry run's adjoint has its 16-bit twin (rt_fold_dh0's 16-bit products then round nothing into a
 * lane's scratch). */
static int dh0_twinned(const RtBind *b) {
    int64_t R;
    for (int k = 0, j; k < b->m->fold->nderived; k = j) {
        j = entry_run_end(b->m, b->unit->layout, k, &R);
        if (!rt_dbuf16_at(b, entry_buffer(b->m, k), 0)) return 0;
    }
    return 1;
}

int rt_fold_dh0_aside(const RtBind *b) {
    return b->m->fold && b->aside && b->unit->dir == 0 && !rt_hoisted_groups(b->m->plan) &&
           (!rt_half(b->m) || dh0_twinned(b));
}

/* rt_fold_dh0's products and columns, on b's lane. */
static rnncc_status dh0_on(RtBind *b, const float *dhT, float *dh0) {
    rnncc_model *m = b->m;
    const IrFold *f = m->fold;
    const PlanLayout *L = b->unit->layout;
    const float *w = m->weights + b->unit->weight_offset;
    const int64_t N = b->r->N, T = b->r->T, Ps = L->param_rows[f->proj];
    int64_t R;
    for (int k = 0, j; T > 0 && k < f->nderived; k = j) { /* dh0 [N][Ps] (+)= A_k [N][R] U_k [R][Ps] */
        j = entry_run_end(m, L, k, &R);
        const float *U = w + L->param_offset[f->derived_from[k]];
        if (b->unit->dir == 0) { /* A_k: the adjoint's first N columns, where every sequence's first step lies (zero
                                  * for one without a step), read in place: in the 16-bit modes its twin with the
                                  * weights' 16-bit copy */
            const int buf = entry_buffer(m, k), row0 = (int)L->block_row[m->fold_entry[k]];
            const unsigned short *A16 = rt_dbuf16_at(b, buf, 0);
            RT_TRY(lane_gemm(b, CUBLAS_OP_N, CUBLAS_OP_N, Ps, N, R, U, Ps, NULL, rt_buffer_at(b, b->dbufs, buf, 0) + row0,
                             L->buffer_width[buf], A16 ? A16 + row0 : NULL, dh0, Ps, k > 0));
            continue;
        }
        RT_TRY(gather(b, k, R));
        RT_TRY(fold_gemm(m, b->lane, CUBLAS_OP_N, CUBLAS_OP_N, Ps, N, R, U, Ps, b->fold_add, R, dh0, Ps, k > 0));
    }
    if (T > 0 && (!b->lengths || !dhT)) return RNNCC_OK; /* no sequence without a step, or nothing to add there */
    return launch_columns(m, b->stream, 1,
                          (RnnFoldColumns){.src = dhT, .dst = dh0, .lengths = b->lengths, .rows = Ps, .N = (int)N, .T = (int)T,
                                           .accumulate = T > 0});
}

rnncc_status rt_fold_dh0(RtBind *b, const float *dhT, float *dh0) {
    if (!b->m->fold || !dh0) return RNNCC_OK;
    RtBind side = *b;
    if (rt_fold_dh0_aside(b)) RT_TRY(fork_aside(b, &side)); /* beside the hoisted program's backward; joined as the
                                                             * unit ends */
    return dh0_on(&side, dhT, dh0);
}

/* Zeroes the derived weights' gradient region of the bound unit in dw: one memset for those back to back. */
static rnncc_status zero_derived(RtBind *b, float *dw) {
    const PlanLayout *L = b->unit->layout;
    const int nu = b->m->fold->user->nparams, nd = b->m->fold->nderived;
    for (int k = 0, j; k < nd; k = j) {
        int64_t n = L->param_rows[nu + k] * L->param_cols[nu + k];
        for (j = k + 1; j < nd && L->param_offset[nu + j] == L->param_offset[nu + k] + n; j++)
            n += L->param_rows[nu + j] * L->param_cols[nu + j];
        RT_CUDA(b->m, cudaMemsetAsync(dw + b->unit->weight_offset + L->param_offset[nu + k], 0, (size_t)n * sizeof(float),
                                      b->stream));
    }
    return RNNCC_OK;
}

/* Whether the bound unit maps V's gradient through the columns in 16-bit products: its forward then keeps P and the
 * U_k as 16-bit twins alone (rt_fold_keep), rounded as the weights' 16-bit copy rounds them, and the map multiplies
 * those. */
static int keeps_twins(const RtBind *b) { return b->fold_cols && rt_half(b->m); }

/* A product of the map through the columns into its workspace (ldc rows of P), added to what is there where beta1:
 * a 16-bit result where h16 (the operands' twins given, fp32 accumulation rounded once), else fp32 (lane_gemm). */
static rnncc_status map_product(RtBind *b, int h16, cublasOperation_t oa, cublasOperation_t ob, int64_t M, int64_t N, int64_t K,
                                const float *A, int64_t lda, const unsigned short *A16, const float *B, int64_t ldb,
                                const unsigned short *B16, void *C, int64_t ldc, int beta1) {
    if (h16) return rt_gemm_half_out(b->m, b->lane, b->stream, oa, ob, M, N, K, A16, lda, B16, ldb, C, ldc, beta1);
    return lane_gemm(b, oa, ob, M, N, K, A, lda, A16, B, ldb, B16, C, ldc, beta1);
}

/* Whether the map through the columns runs in 16-bit products: the 16-bit modes, every run's dG twinned, and Z (the
 * state's slots). */
static int map_h16(const RtBind *b) {
    const rnncc_model *m = b->m;
    if (!keeps_twins(b) || !b->w16_reserve) return 0;
    int64_t R;
    for (int k = 0, j; k < m->fold->nderived; k = j) {
        j = run_end(m->fold, b->unit->layout, k, &R);
        const SchedGemm *g = &m->plan->gemms[run_gemm(m, b->unit->layout, k, R)];
        if (!rt_operand16(b, g->operand, 0) || !rt_dbuf16_at(b, g->out_buffer, 0)) return 0;
    }
    return 1;
}

/* A copy of n values from src (NULL: zeros) into the map's Y or D at at: 16-bit where h16, else fp32. */
static RnnStateCopy map_copy(int h16, char *at, int64_t n, const float *src) {
    return (RnnStateCopy){.src = src, .dst = h16 ? NULL : (float *)at, .dst16 = h16 ? (unsigned short *)at : NULL, .n = n};
}

/* D's rows before its first product: with the post program's GEMM carried (post_in_map), its adjoint A (the post's,
 * [T N][Ps]; the user's dy where rt_post_reads_dy) one step down, so that D's row block s holds A's step s - 1 (block
 * 0 zeros, block T A's last step plus dhT), and the first product adds into it; else block T alone, dhT (zeros where
 * NULL). A's twin where it has one. */
static rnncc_status map_seed_d(RtBind *b, RnnStateCopies *a, int jp, const float *dhT, char *Dc, int h16) {
    const int64_t N = b->r->N, TN = b->r->T * N, Ps = b->unit->layout->param_rows[b->m->fold->proj], es = h16 ? 2 : 4;
    char *last = Dc + TN * Ps * es;
    RnnStateCopy c = map_copy(h16, last, N * Ps, dhT);
    if (jp < 0) return dhT ? rt_copy_add(b->m, b->stream, a, c) : RNNCC_OK;
    const int ob = b->m->plan->gemms[jp].out_buffer;
    const int out = rt_post_reads_dy(b, jp);
    const unsigned short *A16 = out >= 0 ? NULL : rt_dbuf16_at(b, ob, 0);
    const float *A = out >= 0 ? b->dy[out] : rt_buffer_at(b, b->dbufs, ob, 0);
    if (A16) A = NULL; /* the twin, which every kernel writes (the fp32 values not where rt_twins_only) */
    RT_TRY(rt_copy_add(b->m, b->stream, a, map_copy(h16, Dc, N * Ps, NULL)));
    RnnStateCopy mid = map_copy(h16, Dc + N * Ps * es, (TN - N) * Ps, A);
    mid.src16 = A16;
    RT_TRY(rt_copy_add(b->m, b->stream, a, mid));
    c.src = A ? A + (TN - N) * Ps : NULL, c.src16 = A16 ? A16 + (TN - N) * Ps : NULL, c.plus = dhT;
    return rt_copy_add(b->m, b->stream, a, c);
}

/* The map's Y [steps 1 .. T-1][N][Ps] = Z [TN - N][Hs] P^T (b's unit's states Z, the first run's operand) on lane
 * on's stream: column-major Y^T = P Z^T, P read as Hs x Ps transposed. */
static rnncc_status map_y(RtBind *b, RtBind *on, int h16, const float *P, const unsigned short *P16, char *Yc) {
    const IrFold *f = b->m->fold;
    const PlanLayout *L = b->unit->layout;
    const int64_t N = b->r->N, TN = b->r->T * N, Ps = L->param_rows[f->proj], Hs = L->param_cols[f->proj];
    int64_t R, ldz;
    run_end(f, L, 0, &R);
    const SchedGemm *g = &b->m->plan->gemms[run_gemm(b->m, L, 0, R)];
    const float *Z = rt_operand(b, g->operand, 0, 0, &ldz);
    const unsigned short *Z16 = rt_operand16(b, g->operand, 0);
    return map_product(on, h16, CUBLAS_OP_T, CUBLAS_OP_N, Ps, TN - N, Hs, P, Hs, P16, Z + N * ldz, ldz,
                       Z16 ? Z16 + N * ldz : NULL, Yc + N * Ps * (h16 ? 2 : 4), Ps, 0);
}

/* The map through the columns (rt_fold_by_columns: dV is not formed). Y, step by step the projected state the step
 * multiplied (P z_{t-1}; at step 0 the user's s_0, whose U_k s_0 the entry added: so dU_k += dG_k^T Y carries the
 * entry's A_k^T s_0, A_k being dG_k's step-0 rows), and D = dG U, with the user's dhT after its T N rows (so that
 * dP += D^T Z, over Z's T + 1 slots, carries dhT^T z_T) and, where post_in_map, the post GEMM's adjoint added a step
 * down (so that the same product carries the post's dP += dy^T z, z_t being Z's slot t + 1; that GEMM is then
 * skipped): both [T N + N][Ps] in the workspace, 16-bit where dG and Z have twins in the 16-bit modes (products of
 * the twins and the kept P and U_k; no rounding launch), else fp32 (rounded as GEMM operands are in the 16-bit
 * modes). s_0, dhT and the post's adjoint enter in one launch. The dP products come first, then proj_done (where not
 * NULL) is recorded, then Y's and dU's; where y_on is not NULL, Y is formed first on y_on's lane (events[7]). */
static rnncc_status map_columns(RtBind *b, RtBind *y_on, const float *dhT, float *dwu, cudaEvent_t proj_done) {
    rnncc_model *m = b->m;
    const IrFold *f = m->fold;
    const PlanLayout *L = b->unit->layout;
    const int64_t N = b->r->N, TN = b->r->T * N, Ps = L->param_rows[f->proj], Hs = L->param_cols[f->proj];
    float *dP = dwu + L->param_offset[f->proj];
    /* the forward's P and U_k (rt_fold_keep), not the live weights: fp32 copies, or (fold_w_kept NULL) in the 16-bit
     * modes as the forward's products rounded them, in the reserve's 16-bit copy of the weights */
    const float *P = b->fold_w_kept;
    const unsigned short *w16 = keeps_twins(b) ? b->w16_reserve : NULL, *P16 = w16 ? w16 + L->param_offset[f->proj] : NULL;
    int64_t R, ldz;
    const int h16 = map_h16(b), jp = post_in_map(b);
    const int64_t rows = TN + N, es = h16 ? 2 : 4; /* Y's and D's, and their elements' bytes */
    char *Yc = (char *)b->fold_cols, *Dc = Yc + rows * Ps * es;
    RnnStateCopies a = {.count = 0};
    RT_TRY(rt_copy_add(m, b->stream, &a, map_copy(h16, Yc, N * Ps, b->fold_s0_kept)));
    RT_TRY(map_seed_d(b, &a, jp, dhT, Dc, h16));
    RT_TRY(rt_copy_states(m, b->stream, &a));
    if (y_on) { /* Y on y_on's lane first (its rows 0 .. N-1: the copy above, on b's) */
        RT_TRY(map_y(b, y_on, h16, P, P16, Yc));
        RT_CUDA(m, cudaEventRecord(m->events[7], y_on->stream));
    }
    /* dP's products first (where the map runs beside the unit's GEMMs, a GEMM adding into dP waits for proj_done),
     * then Y's and dU's */
    for (int pass = 0; pass < 2; pass++) {
        int64_t u_at = Ps * Hs; /* the next U_k's among the fp32 copies (back to back after P) */
        for (int k = 0, j; k < f->nderived; u_at += R * Ps, k = j) {
            j = run_end(f, L, k, &R);
            const SchedGemm *g = &m->plan->gemms[run_gemm(m, L, k, R)];
            const float *Z = rt_operand(b, g->operand, 0, 0, &ldz), *dG = rt_buffer_at(b, b->dbufs, g->out_buffer, 0);
            const unsigned short *Z16 = rt_operand16(b, g->operand, 0), *dG16 = rt_dbuf16_at(b, g->out_buffer, 0);
            const int64_t W = L->buffer_width[g->out_buffer];
            if (pass == 0) {
                const float *U = P ? P + u_at : NULL;
                const unsigned short *U16 = w16 ? w16 + L->param_offset[f->derived_from[k]] : NULL;
                /* D [TN][Ps] = dG [TN][R] U [R][Ps]: column-major D^T = U^T dG^T, U read as Ps x R; the first run's
                 * added to the post's adjoint map_seed_d put there */
                RT_TRY(map_product(b, h16, CUBLAS_OP_N, CUBLAS_OP_N, Ps, TN, R, U, Ps, U16, dG, W, dG16, Dc, Ps, k == 0 && jp >= 0));
                /* dP [Ps][Hs] += D^T Z: column-major dP^T += Z^T D; the first run's over z_T too (dhT, the post's) */
                RT_TRY(lane_gemm(b, CUBLAS_OP_N, CUBLAS_OP_T, Hs, Ps, k == 0 && (dhT || jp >= 0) ? rows : TN, Z, ldz, Z16,
                                 (const float *)Dc, Ps, h16 ? (const unsigned short *)Dc : NULL, dP, Hs, 1));
                continue;
            }
            float *dU = dwu + L->param_offset[f->derived_from[k]];
            if (k == 0 && y_on) RT_CUDA(m, cudaStreamWaitEvent(b->stream, m->events[7], 0));
            else if (k == 0) RT_TRY(map_y(b, b, h16, P, P16, Yc));
            /* dU [R][Ps] += dG^T [R][TN] Y [TN][Ps]: column-major dU^T += Y^T dG (dG [TN][R] at ld W) */
            RT_TRY(lane_gemm(b, CUBLAS_OP_N, CUBLAS_OP_T, Ps, R, TN, (const float *)Yc, Ps,
                             h16 ? (const unsigned short *)Yc : NULL, dG, W, dG16, dU, Ps, 1));
        }
        if (pass == 0 && proj_done) RT_CUDA(m, cudaEventRecord(proj_done, b->stream));
    }
    return RNNCC_OK; /* V's gradient region: never written here, zero as the weights call's start left it */
}

/* Whether plan GEMM j's weights overlap parameter param's in the bound unit's layout. */
static int gemm_touches(const RtBind *b, int j, int param) {
    const PlanLayout *L = b->unit->layout;
    const int64_t at = L->param_offset[sched_gemm_param(b->m->plan, j)], n = L->gemm_rows[j] * L->gemm_cols[j];
    return at < L->param_offset[param] + L->param_rows[param] * L->param_cols[param] && L->param_offset[param] < at + n;
}

int rt_fold_touches_proj(const RtBind *b, int j) { return gemm_touches(b, j, b->m->fold->proj); }

rnncc_status rt_fold_wgrad_aside(RtBind *b, const float *dhT, float *dw) {
    rnncc_model *m = b->m;
    if (!m->fold || !b->aside || b->lane != 0 || b->r->T == 0 || b->r->N == 0 || !b->fold_cols) return RNNCC_OK;
    if (rt_half(m) && !map_h16(b)) return RNNCC_OK; /* its products would round operands into a lane's scratch */
    for (int j = 0; j < m->plan->ngemms; j++) /* no GEMM of the unit's adds into a U_k's gradient (the map's) */
        for (int k = 0; !rt_fold_skips_gemm(b, j) && k < m->fold->nderived; k++)
            if (gemm_touches(b, j, m->fold->derived_from[k])) return RNNCC_OK;
    RtBind side;
    RT_TRY(fork_aside(b, &side)); /* after the call's zeroing of dw and its roundings */
    return map_columns(&side, b, dhT, dw + b->unit->weight_offset, m->events[6]);
}

rnncc_status rt_fold_wgrad(RtBind *b, const float *dhT, float *dw, int zero_first) {
    rnncc_model *m = b->m;
    if (!m->fold) return RNNCC_OK;
    if (zero_first) return zero_derived(b, dw);
    const IrFold *f = m->fold;
    const PlanLayout *L = b->unit->layout;
    float *dwu = dw + b->unit->weight_offset, *dP = dwu + L->param_offset[f->proj];
    const int64_t N = b->r->N, T = b->r->T, Ps = L->param_rows[f->proj], Hs = L->param_cols[f->proj];
    if (T > 0 && N > 0 && b->fold_cols) return map_columns(b, NULL, dhT, dwu, NULL);
    const float *P = b->fold_w_kept, *U = P + Ps * Hs; /* the forward's (rt_fold_keep), not the live weights */
    int64_t R;
    for (int k = 0, j; T > 0 && k < f->nderived; U += R * Ps, k = j) { /* the kept U_k lie back to back */
        j = run_end(f, L, k, &R);
        float *dU = dwu + L->param_offset[f->derived_from[k]];
        const float *dV = dwu + L->param_offset[f->user->nparams + k];
        /* dU [R][Ps] += dV [R][Hs] P^T: column-major dU^T += P dV^T, P read as Hs x Ps transposed */
        RT_TRY(fold_gemm(m, b->lane, CUBLAS_OP_T, CUBLAS_OP_N, Ps, R, Hs, P, Hs, dV, Hs, dU, Ps, 1));
        /* dP [Ps][Hs] += U^T dV: column-major dP^T += dV^T U, U [R][Ps] read as Ps x R transposed */
        RT_TRY(fold_gemm(m, b->lane, CUBLAS_OP_N, CUBLAS_OP_T, Hs, Ps, R, dV, Hs, U, Ps, dP, Hs, 1));
    }
    for (int k = 0, j; T > 0 && k < f->nderived; k = j) {
        j = entry_run_end(m, L, k, &R);
        float *dU = dwu + L->param_offset[f->derived_from[k]];
        /* dU += A^T s_0: column-major dU^T (Ps x R) += s_0^T (Ps x N) A (N x R), A [N][R] read as R x N transposed */
        RT_TRY(gather(b, k, R));
        RT_TRY(fold_gemm(m, b->lane, CUBLAS_OP_N, CUBLAS_OP_T, Ps, R, N, b->fold_s0_kept, Ps, b->fold_add, R, dU, Ps, 1));
    }
    /* dP += dhT^T z_T: column-major dP^T (Hs x Ps) += z_T^T (Hs x N) dhT (N x Ps); z_T is the folded state's last
     * slot (each sequence's own final value; z_0 = 0 where it has no step) */
    if (T > 0 && dhT)
        RT_TRY(fold_gemm(m, b->lane, CUBLAS_OP_N, CUBLAS_OP_T, Hs, Ps, N, rt_state_slot(b, f->state, T), Hs, dhT, Ps, dP, Hs, 1));
    return zero_derived(b, dw);
}

rnncc_status rt_fold_keep(RtBind *b, RnnStateCopies *a) {
    rnncc_model *m = b->m;
    if (!m->fold || (!b->fold_w_kept && !keeps_twins(b))) return RNNCC_OK;
    /* in the 16-bit modes through the columns the map reads them in the reserve's 16-bit copy of the weights, which
     * the forward writes unless the model keeps a copy of its own: then rounded into it here */
    if (keeps_twins(b) && !m->half_kept) return RNNCC_OK;
    const PlanLayout *L = b->unit->layout;
    const float *w = m->weights + b->unit->weight_offset;
    int64_t at = 0;
    for (int k = -1; k < m->fold->nderived; k++) { /* P, then each U_k: fp32 copies back to back, or 16-bit in place */
        const int param = k < 0 ? m->fold->proj : m->fold->derived_from[k];
        const int64_t n = L->param_rows[param] * L->param_cols[param];
        RnnStateCopy c = {.src = w + L->param_offset[param], .n = n};
        if (keeps_twins(b)) c.dst16 = (unsigned short *)b->w16_reserve + L->param_offset[param];
        else c.dst = b->fold_w_kept + at;
        RT_TRY(rt_copy_add(m, b->stream, a, c));
        at += n;
    }
    return RNNCC_OK;
}
