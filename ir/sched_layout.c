/* Binding a plan's dimensions: packed parameter offsets, GEMM shapes, buffer widths.
 * Key idea: every size is computed once here with overflow checks; executors only read it. */
#include <string.h>

#include "sched.h"

#define MAX_ELEMS ((int64_t)1 << 59) /* elements: their bytes, 8 a double in the reference, stay in an int64_t */

typedef struct { Diags *diags; const IrCell *cell; int ok; } Checked;

static int64_t mul(Checked *ck, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > MAX_ELEMS) {
        if (ck->ok) diag_error(ck->diags, (SrcLoc){0, 0, 1}, "cell '%s': a size overflows with these dimensions", ck->cell->name);
        ck->ok = 0;
        return 0;
    }
    return r;
}

static int64_t add(Checked *ck, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r) || r > MAX_ELEMS) {
        if (ck->ok) diag_error(ck->diags, (SrcLoc){0, 0, 1}, "cell '%s': a size overflows with these dimensions", ck->cell->name);
        ck->ok = 0;
        return 0;
    }
    return r;
}

static int64_t align_up(Checked *ck, int64_t v) {
    return mul(ck, add(ck, v, SCHED_PACK_ALIGN - 1) / SCHED_PACK_ALIGN, SCHED_PACK_ALIGN);
}

PlanLayout *sched_layout(Arena *arena, const Plan *plan, const int64_t *dimval, Diags *diags) {
    const IrCell *c = plan->cell;
    Checked ck = {diags, c, 1};
    PlanLayout *L = arena_alloc(arena, sizeof *L);
    if (!L) return NULL;
    L->plan = plan;
    int64_t *dv = arena_array(arena, (size_t)c->ndims + 1, sizeof *dv);
    L->param_offset = arena_array(arena, c->nparams + 1u, sizeof(int64_t));
    L->param_rows = arena_array(arena, c->nparams + 1u, sizeof(int64_t));
    L->param_cols = arena_array(arena, c->nparams + 1u, sizeof(int64_t));
    L->gemm_rows = arena_array(arena, plan->ngemms + 1u, sizeof(int64_t));
    L->gemm_cols = arena_array(arena, plan->ngemms + 1u, sizeof(int64_t));
    L->block_row = arena_array(arena, c->nnodes + 1u, sizeof(int64_t));
    L->buffer_width = arena_array(arena, plan->nbuffers + 1u, sizeof(int64_t));
    L->acc_offset = arena_array(arena, c->nparams + 1u, sizeof(int64_t));
    if (!dv || !L->param_offset || !L->param_rows || !L->param_cols || !L->gemm_rows || !L->gemm_cols ||
        !L->block_row || !L->buffer_width || !L->acc_offset)
        return NULL;
    for (int d = 0; d < c->ndims; d++) {
        dv[d] = c->dims[d].name ? dimval[d] : c->dims[d].literal;
        if (dv[d] <= 0 || dv[d] > INT32_MAX) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "cell '%s': dimension %s must be bound to a positive value below 2^31",
                       c->name, c->dims[d].name ? c->dims[d].name : "(literal)");
            return NULL;
        }
    }
    L->dimval = dv;
    for (int k = 0; k < c->nparams; k++) {
        const IrShape *s = &c->params[k].shape;
        L->param_rows[k] = dv[s->dims[0]];
        L->param_cols[k] = s->kind == IR_MATRIX ? dv[s->dims[1]] : 1;
        int accumulated = s->kind != IR_MATRIX && plan->param_fold[k] == IR_NONE;
        L->acc_offset[k] = accumulated ? L->acc_rows : -1;
        if (accumulated) L->acc_rows = add(&ck, L->acc_rows, L->param_rows[k]);
    }
    int64_t off = 0;
    for (int i = 0; i < plan->npack; i++) {
        off = align_up(&ck, off);
        const SchedPackItem *it = &plan->pack[i];
        for (int b = 0; b < sched_pack_count(plan, it); b++) {
            int k = sched_pack_param(plan, it, b);
            L->param_offset[k] = off;
            off = add(&ck, off, mul(&ck, L->param_rows[k], L->param_cols[k]));
        }
    }
    L->packed_size = align_up(&ck, off);
    for (int j = 0; j < plan->ngemms; j++) {
        const SchedGemm *g = &plan->gemms[j];
        int64_t rows = 0;
        for (int b = 0; b < g->nproducts; b++) {
            L->block_row[g->products[b]] = rows;
            rows = add(&ck, rows, L->param_rows[c->nodes[c->nodes[g->products[b]].args[0]].index]);
        }
        L->gemm_rows[j] = rows;
        L->gemm_cols[j] = ir_node_len(c, g->operand, dv);
    }
    for (int b = 0; b < plan->nbuffers; b++) {
        const SchedBuffer *buf = &plan->buffers[b];
        L->buffer_width[b] = buf->kind == BUF_GEMM_OUT ? L->gemm_rows[buf->gemm] : ir_node_len(c, buf->node, dv);
    }
    return ck.ok ? L : NULL;
}
