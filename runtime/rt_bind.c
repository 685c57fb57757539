/* Binding a layer-direction to memory: which input it reads, where its plan buffers, states,
 * outputs and (in training) adjoints are. Key idea: forward and backward ask this one place,
 * so they can never disagree about where a value lives. */
#include <stdint.h>
#include <string.h>

#include "rt_internal.h"

static int64_t state_len(const rnncc_model *m, int k) { return ir_shape_numel(&m->cell->states[k].shape, m->dimval[0]); }

int rt_slot(const rnncc_model *m, int training, int l, int d) {
    return training ? l * m->dirs + d : m->wavefront ? l % 2 : d;
}

int rt_adjoint_shared(const rnncc_model *m, int u, int b) {
    return rt_shares_adjoints(&m->units[u]) ? cg_adjoint_shared(m->units[u].layout, b) : -1;
}

int rt_value_summed(const RtRegions *r, const RtUnit *unit, int b) {
    return rt_sums_values(r, unit) ? cg_value_summed(unit->layout, b) : -1;
}

void rt_bind(RtBind *b, rnncc_model *m, const RtRegions *r, int l, int d, int lane, const float *x, float *const *y,
             char *ws, char *reserve) {
    const IrCell *c = m->cell;
    char *keep = r->training ? reserve : ws;
    int u = l * m->dirs + d;
    memset(b, 0, sizeof *b);
    b->dx_gemm = -1;
    b->m = m;
    b->r = r;
    b->unit = &m->units[u];
    b->slot = rt_slot(m, r->training, l, d);
    b->lane = lane;
    b->stream = m->streams[b->lane];
    b->blas = m->cublas[b->lane];
    b->hcol0 = 0;
    b->hcols = r->T * r->N;
    b->pt0 = 0;
    b->pt1 = r->T;
    /* 16-byte aligned (the kernel loads two words at once) whatever the caller's workspace is */
    b->flags = r->flag_words ? (unsigned long long *)rt_align16(ws + r->flags[lane]) : NULL;
    b->fold_z = m->fold ? (float *)(ws + r->fold_z[lane]) : NULL;
    b->fold_add = m->fold ? (float *)(ws + r->fold_add[lane]) : NULL;
    b->fold_s016 = r->fold_s016 ? (unsigned short *)(ws + r->fold_s016) + u * r->N * rt_fold_rows(m, 2) : NULL;
    int64_t D0 = ir_node_len(c, c->outputs[0].node, m->dimval[0]);
    int lo_in = r->training ? l - 1 : (l - 1) % 2, lo_out = r->training ? l : l % 2;
    b->x = l == 0 ? x : (const float *)(keep + r->layer_out[lo_in]);
    b->ldx = l == 0 ? ir_shape_numel(&c->inputs[0].shape, m->dimval[0]) : D0 * m->dirs;
    for (int i = 0; i < m->plan->nbuffers; i++) {
        b->bufs[i] = (float *)(keep + r->buf[b->slot * m->plan->nbuffers + i]);
        size_t tw = r->buf16[b->slot * m->plan->nbuffers + i];
        b->bufs16[i] = tw == RT_NO_TWIN ? NULL : (unsigned short *)(keep + tw);
    }
    for (int k = 0; k < c->nstates; k++) {
        b->states[k] = (float *)(keep + r->state[b->slot * c->nstates + k]);
        size_t tw = r->state16[b->slot * c->nstates + k];
        b->states16[k] = tw == RT_NO_TWIN ? NULL : (unsigned short *)(keep + tw);
        size_t t3 = r->state3[b->slot * c->nstates + k];
        b->states3[k] = t3 == RT_NO_TWIN ? NULL : (float *)(ws + t3);
    }
    const int64_t *dv = m->dimval[l > 0];
    for (int o = 0; o < c->noutputs; o++) {
        int64_t D = ir_node_len(c, c->outputs[o].node, dv);
        float *base = l == m->layers - 1 ? (y ? y[o] : NULL) : o == 0 ? (float *)(keep + r->layer_out[lo_out]) : NULL;
        b->y[o] = base ? base + d * D : NULL;
        b->ldy[o] = D * m->dirs;
    }
    if (!r->training) return;
    for (int i = 0; i < m->plan->nbuffers; i++) {
        b->dbufs[i] = (float *)(reserve + r->dbuf[u * m->plan->nbuffers + i]);
        size_t tw = r->dbuf16[u * m->plan->nbuffers + i];
        b->dbufs16[i] = tw == RT_NO_TWIN ? NULL : (unsigned short *)(reserve + tw);
        size_t t3 = r->dbuf3[u * m->plan->nbuffers + i];
        b->dbufs3[i] = t3 == RT_NO_TWIN ? NULL : (float *)(ws + t3);
    }
    for (int k = 0; k < c->nstates; k++) b->dstate[k] = (float *)(ws + r->dstate[b->lane * c->nstates + k]);
    b->dparam = (float *)(reserve + r->dparam[u]);
    b->fold_s0_kept = m->fold ? (float *)(reserve + r->fold_s0) + u * r->N * rt_fold_rows(m, 2) : NULL;
    b->fold_w_kept = m->fold && r->fold_w ? (float *)(reserve + r->fold_w) + u * rt_fold_rows(m, 3) : NULL;
    b->fold_cols = m->fold && r->fold_cols ? (float *)(ws + r->fold_cols) : NULL;
    b->w16_reserve = r->training && rt_half(m) ? (const unsigned short *)rt_half_copy_in(r, reserve) + b->unit->weight_offset
                                                : NULL;
}

int rt_post_direct(const RtBind *b, int j, int *group) {
    int out;
    if (!sched_post_copy(b->m->plan, j, group, &out) || b->unit->dir != 0 || b->lengths || !b->y[out]) return -1;
    return out;
}

int rt_post_direct_dy(const RtBind *b, int j, int *group) {
    int out;
    if (!sched_post_copy(b->m->plan, j, group, &out) || b->unit->dir != 0 || b->lengths ||
        b->unit->layer != b->m->layers - 1 || !b->dy[out])
        return -1;
    const int ob = b->m->plan->gemms[j].out_buffer; /* 16-bit modes: dy rounded into the adjoint's twin, packed alike */
    return !rt_half(b->m) || (b->dbufs16[ob] && b->ldy[out] == b->unit->layout->buffer_width[ob]) ? out : -1;
}

int rt_post_reads_dy(const RtBind *b, int j) {
    int group;
    return rt_half(b->m) ? -1 : rt_post_direct_dy(b, j, &group);
}

float *rt_state_slot(const RtBind *b, int k, int64_t t) {
    int64_t n = b->r->N * state_len(b->m, k);
    return b->states[k] + (b->r->training ? t : t % 2) * n;
}

int rt_buffer_kept(const rnncc_model *m, int training, int b) { return training || m->plan->buffers[b].all_steps; }

/* Elements from a buffer's start to step t's copy (0 for hoisted, post or reused buffers); the unit's own
 * width, as a post GEMM reads the steps' columns as one (inference slots are the widest layer's). */
static int64_t buffer_step(const RtBind *b, int i, int64_t t) {
    if (b->m->plan->buffers[i].program != SCHED_STEP || !rt_buffer_kept(b->m, b->r->training, i)) return 0;
    return t * b->r->N * b->unit->layout->buffer_width[i];
}

float *rt_buffer_at(const RtBind *b, float *const *bufs, int i, int64_t t) { return bufs[i] + buffer_step(b, i, t); }

unsigned short *rt_buf16_at(const RtBind *b, int i, int64_t t) {
    /* none in a persistent forward in inference: its stores would lengthen every step's hand-off, which
     * waits for a block's stores, more than a conversion after the loop costs (bench/NOTES.md section 88) */
    return b->bufs16[i] && (b->r->training || !b->persist) ? b->bufs16[i] + buffer_step(b, i, t) : NULL;
}

unsigned short *rt_dbuf16_at(const RtBind *b, int i, int64_t t) {
    return b->dbufs16[i] ? b->dbufs16[i] + buffer_step(b, i, t) : NULL;
}

unsigned short *rt_state_slot16(const RtBind *b, int k, int64_t t) {
    return b->states16[k] ? b->states16[k] + (rt_state_slot(b, k, t) - b->states[k]) : NULL;
}

const unsigned short *rt_operand16(const RtBind *b, IrRef r, int64_t t) {
    const IrNode *n = &b->m->cell->nodes[r];
    if (n->op == IR_STATE) return rt_state_slot16(b, n->index, t);
    const int i = b->m->plan->node[r].buffer; /* a value, which the kernel that stored it twinned (cg_value_twinned) */
    return n->op != IR_INPUT && n->op != IR_MATVEC && i >= 0 ? rt_buf16_at(b, i, t) : NULL;
}

float *rt_state_slot3(const RtBind *b, int k, int64_t t) {
    return b->states3[k] ? b->states3[k] + (t % 2) * 3 * b->r->N * state_len(b->m, k) : NULL;
}

const float *rt_operand3(const RtBind *b, IrRef r, int64_t t) {
    const IrNode *n = &b->m->cell->nodes[r];
    return n->op == IR_STATE && t > 0 ? rt_state_slot3(b, n->index, t) : NULL; /* step 0's state: staged, not split */
}

float *rt_operand(const RtBind *b, IrRef r, int64_t t, int adjoint, int64_t *ld) {
    const rnncc_model *m = b->m;
    const IrNode *n = &m->cell->nodes[r];
    const SchedNode *s = &m->plan->node[r];
    const PlanLayout *L = b->unit->layout;
    float *const *bufs = adjoint ? b->dbufs : b->bufs;
    switch (n->op) {
    case IR_INPUT: *ld = b->ldx; return adjoint ? b->dx : (float *)b->x;
    case IR_STATE:
        *ld = state_len(m, n->index);
        return adjoint ? b->dstate[n->index] + b->dcur * b->r->N * *ld : rt_state_slot(b, n->index, t);
    case IR_MATVEC: {
        int i = m->plan->gemms[s->gemm].out_buffer;
        *ld = L->buffer_width[i];
        return rt_buffer_at(b, bufs, i, t) + L->block_row[r];
    }
    default:
        *ld = L->buffer_width[s->buffer];
        return rt_buffer_at(b, bufs, s->buffer, t);
    }
}

float *rt_gemm_weights(const RtBind *b, float *base, int j) {
    return base + b->unit->weight_offset + b->unit->layout->param_offset[sched_gemm_param(b->m->plan, j)];
}
