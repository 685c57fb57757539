/* Where a forward pass keeps things: the workspace (scratch) and the reserve (kept for the
 * backward pass). Key idea: inference keeps one step of every per-step buffer and two state
 * slots per direction; training keeps every step of them, per layer and direction. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "rt_internal.h"

enum { ALIGN = 256 };

typedef struct Sizer { size_t at; int ok; } Sizer;

/* Takes n floats at the current position (256-byte aligned) and returns their offset. */
static size_t take(Sizer *z, int64_t n) {
    size_t at = (z->at + ALIGN - 1) / ALIGN * ALIGN, bytes;
    if (n < 0 || __builtin_mul_overflow((size_t)n, sizeof(float), &bytes) || __builtin_add_overflow(at, bytes, &z->at))
        z->ok = 0;
    return at;
}

/* Takes n 16-bit values (a twin or a rounded copy: half as many floats, rounded up). */
static size_t take16(Sizer *z, int64_t n) { return take(z, n < 0 ? n : n / 2 + n % 2); }

static int64_t mul3(int64_t a, int64_t b, int64_t c, int *ok) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r)) { *ok = 0; return 0; }
    return r;
}

void rt_regions_free(RtRegions *r) {
    free(r->buf);
    free(r->state);
    free(r->layer_out);
    free(r->dbuf);
    free(r->dparam);
    free(r->dstate);
    free(r->state16);
    free(r->dbuf16);
    free(r->buf16);
    free(r->state3);
    free(r->dbuf3);
    memset(r, 0, sizeof *r);
}

rnncc_status rt_check_sizes(rnncc_model *m, int64_t T, int64_t N) {
    if (T < 0) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "T is %lld; it must be at least 0", (long long)T);
    if (N < 1 || N > INT32_MAX)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "N is %lld; it must be at least 1 and below 2^31", (long long)N);
    return RNNCC_OK;
}

rnncc_status rt_regions(rnncc_model *m, int64_t T, int64_t N, int training, RtRegions *r) {
    const Plan *p = m->plan;
    const IrCell *c = m->cell;
    memset(r, 0, sizeof *r);
    RT_TRY(rt_check_sizes(m, T, N));
    int ok = 1;
    if (mul3(T, N, 1, &ok) > INT32_MAX || !ok)
        return rt_fail(m, RNNCC_ERR_OVERFLOW, "T*N = %lld*%lld exceeds 2^31-1 columns", (long long)T, (long long)N);
    const int columns = training && rt_fold_by_columns(m, T, N); /* the fold's map through the columns (rt_fold.c) */
    r->training = training;
    r->T = T;
    r->N = N;
    r->slots = training ? m->nunits : m->wavefront ? 2 : m->dirs;
    r->buf = calloc((size_t)r->slots * (size_t)(p->nbuffers + 1), sizeof *r->buf);
    r->state = calloc((size_t)r->slots * (size_t)(c->nstates + 1), sizeof *r->state);
    r->layer_out = calloc((size_t)m->layers + 1, sizeof *r->layer_out);
    r->dbuf = calloc((size_t)m->nunits * (size_t)(p->nbuffers + 1), sizeof *r->dbuf);
    r->dparam = calloc((size_t)m->nunits + 1, sizeof *r->dparam);
    int lanes = m->wavefront ? 2 : m->dirs; /* the state adjoints' owners: rt_bind's lanes */
    r->dstate = calloc((size_t)lanes * (size_t)(c->nstates + 1), sizeof *r->dstate);
    r->state16 = malloc((size_t)r->slots * (size_t)(c->nstates + 1) * sizeof *r->state16);
    r->dbuf16 = malloc((size_t)m->nunits * (size_t)(p->nbuffers + 1) * sizeof *r->dbuf16);
    r->buf16 = malloc((size_t)r->slots * (size_t)(p->nbuffers + 1) * sizeof *r->buf16);
    r->state3 = malloc((size_t)r->slots * (size_t)(c->nstates + 1) * sizeof *r->state3);
    r->dbuf3 = malloc((size_t)m->nunits * (size_t)(p->nbuffers + 1) * sizeof *r->dbuf3);
    if (!r->state3 || !r->dbuf3 || !r->state16 || !r->dbuf16 || !r->buf16 || !r->buf || !r->state || !r->layer_out ||
        !r->dbuf || !r->dparam || !r->dstate) {
        rt_regions_free(r);
        return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    }
    for (int i = 0; i < r->slots * (c->nstates + 1); i++) r->state16[i] = r->state3[i] = RT_NO_TWIN;
    for (int i = 0; i < m->nunits * (p->nbuffers + 1); i++) r->dbuf16[i] = r->dbuf3[i] = RT_NO_TWIN;
    for (int i = 0; i < r->slots * (p->nbuffers + 1); i++) r->buf16[i] = RT_NO_TWIN;
    Sizer ws = {0, 1}, rs = {0, 1};
    Sizer *keep = training ? &rs : &ws;
    r->lengths = take(&ws, N); /* ints are float-sized */
    /* flagged words of states and buffers, where a persistent forward may run (backend and rule): the
     * most any layer takes, 8 bytes, two floats, each, and 16 bytes to align them (rt_bind) */
    int persistent = rt_persist_considered(m, N, 0, NULL, 0);
    r->flag_words = 0;
    for (int u = 0; persistent && u < m->nunits && r->flag_words >= 0; u++) {
        int64_t words = cg_persist_flag_words(m->units[u].layout, N);
        r->flag_words = words < 0 ? -1 : words > r->flag_words ? words : r->flag_words;
    }
    /* step results added into their hoisted partners' columns (rt_sums_values) in training, where no
     * persistent forward may run; not on fp32 GEMM operands (fp32, tf32) at 64 sequences or fewer,
     * where the GEMM's read of those columns cost more than the element-wise kernels saved
     * (bench/NOTES.md section 35) */
    r->summed = training && !persistent && (rt_half(m) || N > 64);
    if (r->flag_words < 0) ok = 0;
    for (int d = 0; d < lanes && r->flag_words > 0; d++) r->flags[d] = take(&ws, mul3(r->flag_words, 2, 1, &ok) + 4);
    for (int s = 0; s < r->slots; s++) {
        for (int b = 0; b < p->nbuffers; b++) {
            int64_t width = 0;
            for (int u = 0; u < m->nunits; u++) /* inference: the widest of the layers sharing the slot */
                if (rt_slot(m, training, m->units[u].layer, m->units[u].dir) == s && m->units[u].layout->buffer_width[b] > width)
                    width = m->units[u].layout->buffer_width[b];
            /* a step buffer holds one step's N columns, reused, unless every step's are kept (rt_buffer_kept) */
            int64_t cols = p->buffers[b].program == SCHED_STEP && !rt_buffer_kept(m, training, b) ? N : T * N;
            int a = training ? rt_value_summed(r, &m->units[s], b) : -1; /* a < b: b's step copies are a's step columns */
            r->buf[s * p->nbuffers + b] = a >= 0 ? r->buf[s * p->nbuffers + a] : take(keep, mul3(cols, width, 1, &ok));
            if (rt_half(m) && cg_value_twinned(p, b)) /* a multiplied value's 16-bit twin, laid out alike */
                r->buf16[s * p->nbuffers + b] = take16(keep, mul3(cols, width, 1, &ok));
        }
        for (int k = 0; k < c->nstates; k++) {
            int64_t S = ir_shape_numel(&c->states[k].shape, m->dimval[0]);
            int64_t n = mul3(training ? T + 1 : 2, N, S, &ok);
            r->state[s * c->nstates + k] = take(keep, n);
            r->state16[s * c->nstates + k] = rt_half(m) && cg_state_multiplied(p, k) ? take16(keep, n) : RT_NO_TWIN;
            /* its split twin: two steps' columns by turns (rt_state_slot3), as a state may be written in its
             * step's first group, before that step's GEMMs have read the twin of its last value */
            r->state3[s * c->nstates + k] = rt_x3(m) && cg_state_multiplied(p, k) ? take(&ws, mul3(6, N, S, &ok)) : RT_NO_TWIN;
        }
    }
    int64_t D0 = ir_node_len(c, c->outputs[0].node, m->dimval[0]) * m->dirs;
    int nout = training ? m->layers - 1 : (m->layers > 2 ? 2 : m->layers - 1);
    for (int l = 0; l < nout; l++) r->layer_out[l] = take(keep, mul3(T, N, D0, &ok));
    if (training) { /* what the backward pass adds */
        /* in the 16-bit modes where no persistent backward may run (rt_twins_only), the adjoints the
         * kernels twin are stored as twins alone: no fp32 buffer (its pointer is the twin's, for the
         * kernels' index arithmetic; nothing reads through it) */
        int twins_only = rt_half(m) && !rt_persist_considered(m, N, 1, NULL, 0);
        for (int u = 0; u < m->nunits; u++) {
            const PlanLayout *L = m->units[u].layout;
            for (int b = 0; b < p->nbuffers; b++) {
                int64_t n = mul3(T * N, L->buffer_width[b], 1, &ok);
                int a = rt_adjoint_shared(m, u, b), twinned = rt_half(m) && cg_adjoint_twinned(p, b);
                size_t *d = &r->dbuf[u * p->nbuffers + b], *d16 = &r->dbuf16[u * p->nbuffers + b];
                if (a >= 0) { /* kept in buffer a's (a < b), twins and all */
                    *d = r->dbuf[u * p->nbuffers + a];
                    *d16 = r->dbuf16[u * p->nbuffers + a];
                    r->dbuf3[u * p->nbuffers + b] = r->dbuf3[u * p->nbuffers + a];
                    continue;
                }
                if (rt_x3(m) && cg_adjoint_split_twinned(L, b, rt_shares_adjoints(&m->units[u]))) /* one step's columns */
                    r->dbuf3[u * p->nbuffers + b] = take(&ws, mul3(3 * N, L->buffer_width[b], 1, &ok));
                *d16 = twinned ? take16(&rs, n) : RT_NO_TWIN;
                *d = twinned && twins_only ? *d16 : take(&rs, n);
            }
            r->dparam[u] = take(&rs, mul3(L->acc_rows, N, 1, &ok));
        }
        for (int d = 0; d < lanes; d++)
            for (int k = 0; k < c->nstates; k++)
                r->dstate[d * c->nstates + k] = take(&ws, mul3(3, N, ir_shape_numel(&c->states[k].shape, m->dimval[0]), &ok));
        int64_t in = ir_shape_numel(&c->inputs[0].shape, m->dimval[0]);
        if (m->layers > 1 && D0 > in) in = D0;
        for (int d = 0; d < m->dirs; d++) r->dx_dir[d] = take(&ws, mul3(T, N, in, &ok));
        for (int l = 0; l < 2 && l < m->layers - 1; l++) r->layer_dy[l] = take(&ws, mul3(T, N, D0, &ok));
    }
    if (rt_half(m)) { /* 16-bit GEMM operands (rt_half.c): the weights, and the largest operand A and B of a pass */
        int64_t len[2] = {0, 0};
        for (int u = 0; u < m->nunits; u++)
            for (int j = 0; j < p->ngemms; j++) {
                int64_t M = m->units[u].layout->gemm_rows[j], K = m->units[u].layout->gemm_cols[j];
                int64_t cols = training || p->gemms[j].program != SCHED_STEP ? T * N : N;
                int64_t a = training ? mul3(T * N, K, 1, &ok) : 0;  /* the weight gradients' activations */
                int64_t b = mul3(cols, training && M > K ? M : K, 1, &ok); /* an operand, or an output's adjoint */
                if (a > len[0]) len[0] = a;
                if (b > len[1]) len[1] = b;
            }
        if (columns) { /* the fold's map through the columns rounds Y (A) and D (B) where dG has no twin, and Z (A)
                        * where it has none, T N + N rows each (D's and Z's last N: dhT and z_T) */
            const int64_t wide = rt_fold_rows(m, 2) > rt_fold_rows(m, 0) ? rt_fold_rows(m, 2) : rt_fold_rows(m, 0);
            const int64_t y = mul3(T * N + N, wide, 1, &ok);
            if (y > len[0]) len[0] = y;
            if (y > len[1]) len[1] = y;
        }
        /* + 16 bytes: rt_half_begin aligns it (a caller's ws need not be); in training in the reserve,
         * where the backward finds the forward's copy and converts none (rt_half_begin) */
        r->half_weights = take16(keep, m->weight_count + 8);
        /* layer 0's input, which the forward rounds and its hoisted GEMM reads, and in training the weight
         * gradients too, from the reserve (+ 16 bytes: rt_half_input aligns it) */
        r->half_x = take16(training ? &rs : &ws, mul3(T, N, ir_shape_numel(&c->inputs[0].shape, m->dimval[0]), &ok) + 8);
        for (int d = 0; d < lanes; d++)
            for (int w = 0; w < 2; w++)
                if (len[w] > 0 && (w == 1 || d == 0)) r->half_ops[d][w] = take16(&ws, len[w]);
        r->half_len[0] = len[0];
        r->half_len[1] = len[1];
    }
    if (rt_x3(m)) { /* split GEMM operands (rt_x3.c): the weights, and per lane a scratch for B (and A, on
                     * lane 0 in training: the weight gradients' activations) */
        r->x3_len = rt_x3_scratch_len(m, T, N, training);
        r->x3_weights_len = rt_x3_weights_len(m);
        r->x3_weights = take(&ws, r->x3_weights_len);
        for (int d = 0; d < lanes; d++)
            for (int w = 0; w < 2; w++)
                if (w == 1 || (d == 0 && training)) r->x3_ops[d][w] = take(&ws, r->x3_len);
    }
    r->wt_weights_len = rt_wt_weights_len(m, N); /* fp32 step GEMMs' weights transposed (rt_wt.c) */
    if (r->wt_weights_len) r->wt_weights = take(&ws, r->wt_weights_len);
    if (m->fold && rt_half(m)) r->fold_s016 = take16(&ws, mul3(m->nunits, N, rt_fold_rows(m, 2), &ok));
    for (int d = 0; m->fold && d < lanes; d++) { /* the fold's final value and entry addend (rt_fold.c) */
        r->fold_z[d] = take(&ws, mul3(N, rt_fold_rows(m, 0), 1, &ok));
        r->fold_add[d] = take(&ws, mul3(N, rt_fold_rows(m, 1), 1, &ok));
    }
    if (m->fold && training) {
        r->fold_s0 = take(&rs, mul3(m->nunits, N, rt_fold_rows(m, 2), &ok));
        /* none where the 16-bit modes map through the columns: the map reads the reserve's 16-bit weights (rt_fold_keep) */
        if (!(columns && rt_half(m))) r->fold_w = take(&rs, mul3(m->nunits, rt_fold_rows(m, 3), 1, &ok));
        if (columns) r->fold_cols = take(&ws, mul3(2 * (T * N + N), rt_fold_rows(m, 2), 1, &ok)); /* Y and D, fp32 at most */
    }
    if (!ok || !ws.ok || !rs.ok) {
        rt_regions_free(r);
        return rt_fail(m, RNNCC_ERR_OVERFLOW, "the buffers for T = %lld and N = %lld overflow", (long long)T, (long long)N);
    }
    r->workspace = ws.at;
    r->reserve = training ? rs.at : 0;
    return RNNCC_OK;
}

rnncc_status rnncc_workspace_size(const rnncc_model *m, int64_t T, int64_t N, int training, size_t *bytes) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    if (!bytes) return rt_fail((rnncc_model *)m, RNNCC_ERR_INVALID_ARGUMENT, "bytes is NULL");
    if (training != 0 && training != 1)
        return rt_fail((rnncc_model *)m, RNNCC_ERR_INVALID_ARGUMENT, "training must be 0 or 1, not %d", training);
    RtRegions r;
    RT_TRY(rt_regions((rnncc_model *)m, T, N, training, &r));
    *bytes = r.workspace;
    rt_regions_free(&r);
    return RNNCC_OK;
}

rnncc_status rnncc_reserve_size(const rnncc_model *m, int64_t T, int64_t N, size_t *bytes) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    if (!bytes) return rt_fail((rnncc_model *)m, RNNCC_ERR_INVALID_ARGUMENT, "bytes is NULL");
    RtRegions r;
    RT_TRY(rt_regions((rnncc_model *)m, T, N, 1, &r));
    *bytes = r.reserve;
    rt_regions_free(&r);
    return RNNCC_OK;
}
