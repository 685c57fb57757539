/* The persistent backend's kernel: the whole step loop of one layer in one cooperative launch
 * (contract in codegen/cg.h, design in docs/backends.md).
 * Key idea: block s owns elements [L*s/G, L*(s+1)/G) of every length-L quantity, so it
 * computes the rows of every step GEMM that produce its own units and keeps those weight
 * rows in shared memory for all steps; the fused element-wise code is the same generated
 * body the per-step kernels run (cg_forward.c), looped over the block's units; blocks meet
 * only at grid barriers where one block needs what another computed. */
#include <stdio.h>
#include <string.h>

#include "cg_gen.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Rows of stacked block b of GEMM gm (its parameter's rows). */
static int64_t block_rows(const PlanLayout *L, const SchedGemm *gm, int b) {
    const IrCell *c = L->plan->cell;
    return L->param_rows[c->nodes[c->nodes[gm->products[b]].args[0]].index];
}

int cg_persist_nw(int64_t N) { return N <= 4 ? 1 : N <= 8 ? 2 : N <= 16 ? 4 : 8; }

/* Bytes of dynamic shared memory: fixed part, two staging tiles, the partial sums. */
static int64_t smem_bytes(const CgPersist *P) {
    if (P->ngemms == 0) return 0;
    int64_t np = 4 * (int64_t)P->nw;
    return (P->fixed_floats + P->tiles * np * (P->kc_max + 4) + 8 * P->rpp_max * np) * (int64_t)sizeof(float);
}

/* Lays out shared memory with staging chunks of at most kc_cap columns (0: all of K at once). */
static void lay_out(CgPersist *P, int64_t kc_cap, int64_t budget) {
    int64_t off = 0;
    P->kc_max = P->rpp_max = 0;
    P->tiles = 1;
    for (int k = 0; k < P->ngemms; k++) {
        CgPersistGemm *q = &P->gemms[k];
        int64_t whole = ceil_div(q->K, 32) * 32;
        q->kc = kc_cap && whole > kc_cap ? kc_cap : whole;
        q->chunks = ceil_div(q->K, q->kc);
        if (q->chunks > 1) P->tiles = 2;
        q->ldw = q->chunks * q->kc + 4;
        q->w_off = off;
        if (off <= budget) off += (int64_t)q->passes * 8 * q->rw * q->ldw;
        if (q->kc > P->kc_max) P->kc_max = q->kc;
        if (8 * q->rw > P->rpp_max) P->rpp_max = 8 * q->rw;
    }
    for (int k = 0; k < P->ngemms && off <= budget; k++) {
        P->gemms[k].map_off = off;
        off += ceil_div(P->gemms[k].rows, 4) * 4;
    }
    P->fixed_floats = off;
}

int cg_persist_plan(Arena *arena, const PlanLayout *L, int64_t N, int sms, int64_t smem_limit, CgPersist *P,
                    char *why, size_t why_size) {
    const Plan *p = L->plan;
    memset(P, 0, sizeof *P);
    P->nw = cg_persist_nw(N);
    if (why_size) why[0] = 0;
    int64_t longest = 1, weights = 0;
    for (int gi = 0; gi < p->ngroups; gi++)
        if (p->groups[gi].program == SCHED_STEP && cg_group_width(L, gi) > longest) longest = cg_group_width(L, gi);
    for (int j = 0; j < p->ngemms; j++) {
        if (p->gemms[j].program != SCHED_STEP) continue;
        P->ngemms++;
        weights += L->gemm_rows[j] * L->gemm_cols[j];
        for (int b = 0; b < p->gemms[j].nproducts; b++)
            if (block_rows(L, &p->gemms[j], b) > longest) longest = block_rows(L, &p->gemms[j], b);
    }
    if (sms < 1 || smem_limit < 1) {
        snprintf(why, why_size, "no device to size the persistent kernel for");
        return 0;
    }
    P->blocks = longest < sms ? (int)longest : sms;
    P->gemms = arena_array(arena, (size_t)P->ngemms + 1, sizeof *P->gemms);
    if (!P->gemms) {
        snprintf(why, why_size, "out of memory");
        return 0;
    }
    int64_t k = 0, budget = smem_limit / (int64_t)sizeof(float);
    for (int j = 0; j < p->ngemms; j++) {
        if (p->gemms[j].program != SCHED_STEP) continue;
        CgPersistGemm *q = &P->gemms[k++];
        q->gemm = j;
        q->K = L->gemm_cols[j];
        for (int b = 0; b < p->gemms[j].nproducts; b++) q->rows += ceil_div(block_rows(L, &p->gemms[j], b), P->blocks);
        q->passes = (int)(q->rows > budget ? 1 : ceil_div(q->rows > 0 ? q->rows : 1, 32));
        q->rw = (int)ceil_div(q->rows > 0 ? q->rows : 1, 8 * (int64_t)q->passes);
        if (q->rw > 4 || q->K > budget) { /* more than fits anyway: keep the numbers small */
            q->rw = 4;
            q->passes = (int)(budget / 32 + 1);
        }
    }
    /* the operand staged whole (one wait a step) when that fits, else in chunks of 256 */
    lay_out(P, 0, budget);
    if (P->fixed_floats > budget || smem_bytes(P) > smem_limit) lay_out(P, 256, budget);
    P->weight_bytes = weights * (int64_t)sizeof(float);
    int64_t need = P->fixed_floats > budget ? P->fixed_floats * (int64_t)sizeof(float) : smem_bytes(P);
    P->smem = need;
    if (need > smem_limit) {
        snprintf(why, why_size,
                 "step weights %.1f MB need %.0f KB of shared memory per block on %d blocks; a block has %.0f KB",
                 weights * 4 / 1e6, need / 1024.0, P->blocks, smem_limit / 1024.0);
        return 0;
    }
    snprintf(why, why_size, "step weights %.1f MB fit on chip: %d blocks, %.0f KB of shared memory each",
             weights * 4 / 1e6, P->blocks, need / 1024.0);
    return 1;
}

int cg_persist_preferred(int64_t N, int tf32, char *why, size_t why_size) {
    int64_t limit = tf32 ? 20 : 64;
    if (N <= limit) return 1;
    snprintf(why, why_size, "batch %lld > %lld (%s), where per-step %s GEMMs win", (long long)N, (long long)limit,
             tf32 ? "tf32" : "fp32", tf32 ? "tensor-core" : "cuBLAS");
    return 0;
}

int cg_persist_kernel_name(const Plan *plan, char *buf, size_t size) {
    if (!plan || !buf || size == 0) return -1;
    int n = snprintf(buf, size, "rnncc_%s_p", plan->cell->name);
    if (n < 0 || (size_t)n >= size) {
        buf[0] = 0;
        return -1;
    }
    return n;
}

/* ---- emission ------------------------------------------------------------------------- */

/* Does group gi read a result of a phase-`phase` step GEMM computed by another block? Not when
 * every such stacked block is exactly J long: the block then computed those rows itself. */
static int reads_foreign_rows(const Gen *g, int gi, int phase) {
    const SchedGroup *grp = &g->plan->groups[gi];
    int64_t J = cg_group_width(g->L, gi);
    for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
        IrRef r = cg_item_node(grp, i);
        const IrNode *n = &g->c->nodes[r];
        IrRef args[3];
        int na = 0;
        if (i < grp->nnodes) for (int a = 0; a < ir_ops[n->op].arity; a++) args[na++] = n->args[a];
        else args[na++] = r;
        for (int a = 0; a < na; a++) {
            const SchedNode *s = &g->plan->node[args[a]];
            if (g->c->nodes[args[a]].op != IR_MATVEC) continue;
            const SchedGemm *gm = &g->plan->gemms[s->gemm];
            if (gm->program == SCHED_STEP && gm->phase == phase && cg_node_len(g, args[a]) != J) return 1;
        }
    }
    return 0;
}

/* The operand of a step GEMM as a pointer expression and its column stride. */
static void operand_expr(Gen *g, const SchedGemm *gm, char *expr, size_t size, char *ld, size_t ldsize) {
    const IrCell *c = g->c;
    const IrNode *n = &c->nodes[gm->operand];
    char d[NAME_SIZE];
    cg_dim_code(c, n->shape.dims[0], d, sizeof d);
    if (n->op == IR_STATE) snprintf(expr, size, "a.state_prev[%d]", n->index);
    else snprintf(expr, size, "a.buf[%d]", g->plan->node[gm->operand].buffer);
    snprintf(ld, ldsize, "%s", d);
}

/* Setup of GEMM q: its row map (stacked rows this block owns) and its weight rows in shared memory. */
static void emit_gemm_setup(Gen *g, const CgPersist *P, int qi) {
    const CgPersistGemm *q = &P->gemms[qi];
    const SchedGemm *gm = &g->plan->gemms[q->gemm];
    StrBuf *out = g->out;
    StrBuf rows = {0}, starts = {0};
    for (int b = 0; b < gm->nproducts; b++) {
        sb_printf(&rows, "%s%lld", b ? ", " : "", (long long)block_rows(g->L, gm, b));
        sb_printf(&starts, "%s%lld", b ? ", " : "", (long long)g->L->block_row[gm->products[b]]);
    }
    StrBuf what = {0};
    sb_puts(&what, "[");
    for (int b = 0; b < gm->nproducts; b++)
        sb_printf(&what, "%s%s", b ? "; " : "", g->c->params[g->c->nodes[g->c->nodes[gm->products[b]].args[0]].index].name);
    sb_puts(&what, "] @ ");
    cg_put_value(g->c, gm->operand, &what);
    cg_emit(out, "// G%d = %s: the rows of this block's units (at most %lld), kept for every step", q->gemm, sb_str(&what),
            (long long)q->rows);
    cg_emit(out, "float *const w%d = rnn_smem + %lld;  // [%lld rows][%lld]", q->gemm, (long long)q->w_off,
            (long long)q->passes * 8 * q->rw, (long long)q->ldw);
    cg_emit(out, "int *const map%d = (int *)(rnn_smem + %lld);  // local row -> stacked row", q->gemm, (long long)q->map_off);
    cg_emit(out, "int rows%d = 0;", q->gemm);
    cg_open(out, "{");
    cg_emit(out, "const int R[%d] = {%s}, B[%d] = {%s};  // each stacked block's rows and first row", gm->nproducts,
            sb_str(&rows), gm->nproducts, sb_str(&starts));
    cg_open(out, "for (int b = 0; b < %d; b++) {", gm->nproducts);
    cg_emit(out, "const int lo = (int)((long long)R[b] * s / G), hi = (int)((long long)R[b] * (s + 1) / G);");
    cg_emit(out, "for (int u = lo + (int)threadIdx.x; u < hi; u += blockDim.x) map%d[rows%d + u - lo] = B[b] + u;", q->gemm,
            q->gemm);
    cg_emit(out, "rows%d += hi - lo;", q->gemm);
    cg_close(out, NULL);
    cg_close(out, NULL);
    if (rows.failed || starts.failed || what.failed) out->failed = 1;
    sb_free(&rows);
    sb_free(&starts);
    sb_free(&what);
}

static void emit_gemm_load(Gen *g, const CgPersist *P, int qi) {
    const CgPersistGemm *q = &P->gemms[qi];
    StrBuf *out = g->out;
    int64_t woff = g->L->param_offset[sched_gemm_param(g->plan, q->gemm)];
    cg_open(out, "for (int e = threadIdx.x; e < %lld; e += blockDim.x) {", (long long)q->passes * 8 * q->rw * q->ldw);
    cg_emit(out, "const int r = e / %lld, k = e - r * %lld;", (long long)q->ldw, (long long)q->ldw);
    cg_emit(out, "w%d[e] = r < rows%d && k < %lld ? args.params[%lld + (long long)map%d[r] * %lld + k] : 0.0f;", q->gemm,
            q->gemm, (long long)q->K, (long long)woff, q->gemm, (long long)q->K);
    cg_close(out, NULL);
}

static void emit_gemm_step(Gen *g, const CgPersist *P, int qi) {
    const CgPersistGemm *q = &P->gemms[qi];
    const SchedGemm *gm = &g->plan->gemms[q->gemm];
    char x[EXPR_SIZE], ld[NAME_SIZE];
    operand_expr(g, gm, x, sizeof x, ld, sizeof ld);
    cg_emit(g->out, "rnn_mv_t<%d, %d>(w%d, %lld, rows%d, %d, %lld, %lld, %lld, %s, %s, a.N, rnn_xs, rnn_red, a.buf[%d], %lld, map%d, 0);",
            q->rw, P->nw, q->gemm, (long long)q->ldw, q->gemm, q->passes, (long long)q->K, (long long)q->kc,
            (long long)q->chunks, x, ld, gm->out_buffer, (long long)g->L->buffer_width[gm->out_buffer], q->gemm);
}

/* Step group gi over this block's units and every sequence. */
static int emit_group(Gen *g, int gi) {
    char jd[NAME_SIZE];
    int jdim = cg_group_jdim(g, gi);
    if (jdim < 0) return 0;
    cg_dim_code(g->c, jdim, jd, sizeof jd);
    cg_group_begin(g, gi);
    StrBuf body = {0};
    if (!cg_emit_forward_body(g, gi, &body, g->out->indent + 2)) return 0;
    StrBuf *out = g->out;
    cg_emit(out, "// K%d over this block's units", g->plan->groups[gi].index);
    cg_open(out, "{");
    cg_emit(out, "const int j0 = (int)((long long)%s * s / G), nj = (int)((long long)%s * (s + 1) / G) - j0;", jd, jd);
    cg_open(out, "for (long long i = threadIdx.x; i < (long long)a.N * nj; i += blockDim.x) {");
    cg_emit(out, "const long long n = i / nj;  // the sequence");
    cg_emit(out, "const int j = j0 + (int)(i %% nj);  // the element");
    cg_emit_step_item(g, gi, &body);
    cg_close(out, NULL);
    cg_close(out, NULL);
    sb_free(&body);
    return 1;
}

static int find_group(const Plan *p, int prog, int k) {
    for (int gi = 0; gi < p->ngroups; gi++)
        if ((int)p->groups[gi].program == prog && p->groups[gi].index == k) return gi;
    return -1;
}

int cg_emit_persist_kernel(Gen *g, const CgPersist *P) {
    const Plan *p = g->plan;
    const IrCell *c = g->c;
    StrBuf *out = g->out;
    char kname[NAME_SIZE], d[NAME_SIZE];
    if (cg_persist_kernel_name(p, kname, sizeof kname) < 0) return 0;
    int K = p->phases[SCHED_STEP], sync = P->ngemms > 0;
    cg_emit(out, "// ---- %s: steps a.t .. a.t_end-1 of the step program in one launch (persistent backend)", kname);
    cg_emit(out, "// %d blocks of %d threads, all co-resident (cooperative launch). Block s owns elements", P->blocks,
            CG_PERSIST_THREADS);
    cg_emit(out, "// [L*s/G, L*(s+1)/G) of every length-L quantity: its units of each group and, of each step");
    cg_emit(out, "// GEMM, the rows producing them, whose weights stay in shared memory for every step.");
    cg_emit(out, "extern \"C\" __global__ void __launch_bounds__(%d, 1) %s(const RnnArgs args)", CG_PERSIST_THREADS, kname);
    cg_open(out, "{");
    cg_emit(out, "const int s = blockIdx.x, G = gridDim.x;");
    cg_emit(out, "if (G != %d || blockDim.x != %d) __trap();  // the launch contract (codegen/cg.h)", P->blocks,
            CG_PERSIST_THREADS);
    if (P->ngemms) {
        cg_emit(out, "extern __shared__ float4 rnn_smem4[];");
        cg_emit(out, "float *const rnn_smem = (float *)rnn_smem4;");
    }
    for (int qi = 0; qi < P->ngemms; qi++) emit_gemm_setup(g, P, qi);
    if (P->ngemms) {
        cg_emit(out, "__syncthreads();  // the row maps are complete");
        for (int qi = 0; qi < P->ngemms; qi++) emit_gemm_load(g, P, qi);
        cg_emit(out, "float *const rnn_xs = rnn_smem + %lld;  // %d staging tile%s [%d][%lld]", (long long)P->fixed_floats,
                P->tiles, P->tiles > 1 ? "s" : "", 4 * P->nw, (long long)P->kc_max + 4);
        cg_emit(out, "float *const rnn_red = rnn_xs + %lld;  // partial sums [8][%lld][%d]",
                P->tiles * 4 * P->nw * ((long long)P->kc_max + 4), (long long)P->rpp_max, 4 * P->nw);
        cg_emit(out, "__syncthreads();");
        cg_emit(out, "unsigned epoch = 0;");
    }
    cg_open(out, "for (int t = args.t; t < args.t_end; t++) {");
    cg_emit(out, "RnnArgs a = args;  // this step's view: the per-step kernels' arguments at step t");
    cg_emit(out, "a.t = t;");
    cg_emit(out, "const long long sp = args.state_wrap ? t %% args.state_wrap : t;");
    cg_emit(out, "const long long sn = args.state_wrap ? (t + 1) %% args.state_wrap : t + 1;");
    for (int k = 0; k < c->nstates; k++) {
        cg_dim_code(c, c->states[k].shape.dims[0], d, sizeof d);
        cg_emit(out, "a.state_prev[%d] = args.state_prev[%d] + sp * args.N * %s;  // state %s", k, k, d, c->states[k].name);
        cg_emit(out, "a.state_next[%d] = (float *)args.state_prev[%d] + sn * args.N * %s;", k, k, d);
    }
    for (int b = 0; b < p->nbuffers; b++)
        if (p->buffers[b].program == SCHED_STEP) cg_emit(out, "a.buf[%d] = args.buf[%d] + t * args.buf_step[%d];", b, b, b);
    if (sync) cg_emit(out, "if (t > args.t) rnn_grid_sync(args.sync, ++epoch);  // step t-1 is complete everywhere");
    for (int k = 0; k <= K; k++) {
        int gi = find_group(p, SCHED_STEP, k);
        int gemms_here = 0;
        for (int qi = 0; qi < P->ngemms; qi++) gemms_here += p->gemms[P->gemms[qi].gemm].phase == k;
        if (gi >= 0) {
            if (!emit_group(g, gi)) return 0;
            if (gemms_here) cg_emit(out, "rnn_grid_sync(args.sync, ++epoch);  // K%d's results feed the GEMMs", k);
        }
        for (int qi = 0; qi < P->ngemms; qi++)
            if (p->gemms[P->gemms[qi].gemm].phase == k) emit_gemm_step(g, P, qi);
        int next = k < K ? find_group(p, SCHED_STEP, k + 1) : -1;
        if (gemms_here && next >= 0) {
            if (reads_foreign_rows(g, next, k))
                cg_emit(out, "rnn_grid_sync(args.sync, ++epoch);  // K%d reads rows other blocks computed", k + 1);
            else
                cg_emit(out, "// K%d reads only the rows this block computed (rnn_mv ended with __syncthreads)", k + 1);
        }
    }
    cg_close(out, NULL);
    cg_close(out, NULL);
    return 1;
}

int cg_emit_persistent(Arena *arena, const Plan *plan, const PlanLayout *layout, const CgPersist *P, StrBuf *out,
                       Diags *diags) {
    Gen g;
    if (!cg_gen_init(&g, arena, plan, layout, out, diags)) return 0;
    char kname[NAME_SIZE], dims[EXPR_SIZE] = "";
    const IrCell *c = plan->cell;
    for (int d = 0, n = 0; d < c->ndims; d++)
        if (c->dims[d].name && n < (int)sizeof dims)
            n += snprintf(dims + n, sizeof dims - n, " %s=%lld", c->dims[d].name, (long long)layout->dimval[d]);
    if (cg_persist_kernel_name(plan, kname, sizeof kname) < 0) {
        diag_error(diags, c->loc, "cannot generate code for cell '%s': its name is too long", c->name);
        return 0;
    }
    cg_emit(out, "// Generated by rnncc from cell %s (dimensions:%s). Do not edit.", c->name, *dims ? dims : " none");
    cg_emit(out, "// The persistent backend's unit: %s runs the whole step loop of one layer in one launch", kname);
    cg_emit(out, "// (%d blocks, %lld bytes of shared memory each, %d sequences a matrix-product pass); the", P->blocks,
            (long long)P->smem, 4 * P->nw);
    cg_emit(out, "// hoisted program runs before it. codegen/cg.h has the launch contract.");
    cg_emit(out, "%s", "");
    cg_emit_preamble(&g);
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
