/* CPU executor of a plan, mirroring the GPU runtime's buffers and indexing exactly.
 * Key idea: every value is read from where the plan says it lives (a GEMM result, a stored
 * buffer, a register of the current group), so a wrong plan gives a wrong answer here. */
#include <stdlib.h>
#include <string.h>

#include "sched_exec.h"

typedef struct Exec {
    const PlanLayout *L;
    const Plan *plan;
    const IrCell *cell;
    const RefProblem *p;
    int reverse;
    double *packed;
    double **buf;          /* per plan buffer */
    double **prev, **next; /* per state: [N][S] */
    double *const *y;
    double **reg;          /* per node: registers of the current column (group-local values) */
    int64_t *len;          /* per node: vector length */
} Exec;

void sched_pack_params(const PlanLayout *L, const double *const *params, double *packed) {
    const IrCell *c = L->plan->cell;
    memset(packed, 0, (size_t)L->packed_size * sizeof *packed);
    for (int k = 0; k < c->nparams; k++)
        memcpy(packed + L->param_offset[k], params[k], (size_t)(L->param_rows[k] * L->param_cols[k]) * sizeof *packed);
}

/* The column index of buffer storage for a value of program prog, for sequence n at position pos. */
static int64_t column(const Exec *e, SchedProgram prog, int64_t pos, int64_t n) {
    return prog == SCHED_HOIST ? pos * e->p->N + n : n;
}

/* Reads element j of node r for (pos, n) while running a group of program prog and index k. */
static double read(const Exec *e, IrRef r, SchedProgram prog, int k, int64_t pos, int64_t n, int64_t j) {
    const IrNode *node = &e->cell->nodes[r];
    const SchedNode *s = &e->plan->node[r];
    switch (node->op) {
    case IR_INPUT: return e->p->x[(pos * e->p->N + n) * e->len[r] + j];
    case IR_STATE: return e->prev[node->index][n * e->len[r] + j];
    case IR_PARAM: return e->packed[e->L->param_offset[node->index] + j];
    case IR_CONST: return node->value;
    case IR_MATVEC: {
        const SchedGemm *g = &e->plan->gemms[s->gemm];
        int64_t w = e->L->buffer_width[g->out_buffer];
        return e->buf[g->out_buffer][column(e, g->program, pos, n) * w + e->L->block_row[r] + j];
    }
    default:
        if (s->program == prog && s->group == k) return e->reg[r][j];
        /* computed elsewhere: it must have been stored */
        if (s->buffer < 0) abort();
        return e->buf[s->buffer][column(e, s->program, pos, n) * e->len[r] + j];
    }
}

/* Runs group g for sequence n at position pos (hoisted: column pos*N + n). */
static void run_group_column(Exec *e, const SchedGroup *g, int64_t pos, int64_t n) {
    const IrCell *c = e->cell;
    for (int i = 0; i < g->nnodes; i++) {
        IrRef r = g->nodes[i];
        const IrNode *node = &c->nodes[r];
        int arity = ir_ops[node->op].arity;
        for (int64_t j = 0; j < e->len[r]; j++) {
            double a[3] = {0, 0, 0};
            for (int q = 0; q < arity; q++) {
                IrRef arg = node->args[q];
                a[q] = read(e, arg, g->program, g->index, pos, n, c->nodes[arg].shape.kind == IR_SCALAR ? 0 : j);
            }
            double v = ir_op_eval(node->op, a[0], a[1], a[2]);
            e->reg[r][j] = v;
            if (e->plan->node[r].stored)
                e->buf[e->plan->node[r].buffer][column(e, g->program, pos, n) * e->len[r] + j] = v;
        }
    }
}

static void run_group(Exec *e, const SchedGroup *g, int64_t t) {
    const IrCell *c = e->cell;
    const RefProblem *p = e->p;
    if (g->program == SCHED_HOIST) {
        for (int64_t pos = 0; pos < p->T; pos++)
            for (int64_t n = 0; n < p->N; n++) run_group_column(e, g, pos, n);
        return;
    }
    for (int64_t n = 0; n < p->N; n++) {
        int64_t len = p->lengths ? p->lengths[n] : p->T;
        int active = t < len;
        int64_t pos = e->reverse ? len - 1 - t : t;
        if (active) run_group_column(e, g, pos, n);
        for (int w = 0; w < g->nwrites; w++) {
            const SchedWrite *wr = &g->writes[w];
            int64_t d = e->len[wr->node];
            for (int64_t j = 0; j < d; j++) {
                if (wr->kind == WRITE_STATE) {
                    e->next[wr->index][n * d + j] =
                        active ? read(e, wr->node, g->program, g->index, pos, n, j) : e->prev[wr->index][n * d + j];
                } else if (e->y && e->y[wr->index]) {
                    int64_t at = active ? pos : t;
                    e->y[wr->index][(at * p->N + n) * d + j] =
                        active ? read(e, wr->node, g->program, g->index, pos, n, j) : 0;
                }
            }
        }
    }
    (void)c;
}

/* out[col][r] = sum_k W[r][k] * operand[col][k], W the GEMM's contiguous weight block. */
static void run_gemm(Exec *e, int j) {
    const SchedGemm *g = &e->plan->gemms[j];
    const IrCell *c = e->cell;
    const PlanLayout *L = e->L;
    int64_t cols = g->program == SCHED_HOIST ? e->p->T * e->p->N : e->p->N;
    int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer];
    const double *w = e->packed + L->param_offset[c->nodes[c->nodes[g->products[0]].args[0]].index];
    double *out = e->buf[g->out_buffer];
    for (int64_t col = 0; col < cols; col++) {
        /* a column (pos, n) is col = pos*N + n in the hoisted program, n in the step program */
        int64_t pos = g->program == SCHED_HOIST ? col / e->p->N : 0, n = g->program == SCHED_HOIST ? col % e->p->N : col;
        for (int64_t r = 0; r < M; r++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += w[r * K + k] * read(e, g->operand, SCHED_NONE, -1, pos, n, k);
            out[col * W + r] = acc;
        }
    }
}

static void run_program(Exec *e, SchedProgram prog, int64_t t) {
    for (int k = 0; k <= e->plan->phases[prog]; k++) {
        for (int i = 0; i < e->plan->ngroups; i++)
            if (e->plan->groups[i].program == prog && e->plan->groups[i].index == k) run_group(e, &e->plan->groups[i], t);
        for (int j = 0; j < e->plan->ngemms; j++)
            if (e->plan->gemms[j].program == prog && e->plan->gemms[j].phase == k) run_gemm(e, j);
    }
}

int sched_exec_forward(const PlanLayout *L, const RefProblem *p, int reverse, double *const *y, double *const *hT) {
    const Plan *plan = L->plan;
    const IrCell *c = plan->cell;
    if (!p || p->cell != c || !p->x || !p->params || p->T < 0 || p->N < 0) return -1;
    for (int d = 0; d < c->ndims; d++)
        if (p->dimval[d] != L->dimval[d]) return -1;
    if (p->lengths)
        for (int64_t n = 0; n < p->N; n++)
            if (p->lengths[n] < 0 || p->lengths[n] > p->T) return -1;
    Exec e = {.L = L, .plan = plan, .cell = c, .p = p, .reverse = reverse, .y = y};
    int rc = -1;
    e.packed = malloc((size_t)L->packed_size * sizeof *e.packed + 1);
    e.buf = calloc((size_t)plan->nbuffers + 1, sizeof *e.buf);
    e.prev = calloc((size_t)c->nstates + 1, sizeof *e.prev);
    e.next = calloc((size_t)c->nstates + 1, sizeof *e.next);
    e.reg = calloc((size_t)c->nnodes + 1, sizeof *e.reg);
    e.len = calloc((size_t)c->nnodes + 1, sizeof *e.len);
    if (!e.packed || !e.buf || !e.prev || !e.next || !e.reg || !e.len) goto out;
    sched_pack_params(L, p->params, e.packed);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        e.len[i] = c->nodes[i].shape.kind == IR_MATRIX ? 0 : ir_node_len(c, i, L->dimval);
        if (ir_op_is_elementwise(c->nodes[i].op) && !(e.reg[i] = malloc((size_t)e.len[i] * sizeof(double) + 1))) goto out;
    }
    for (int b = 0; b < plan->nbuffers; b++) {
        int64_t cols = plan->buffers[b].program == SCHED_HOIST ? p->T * p->N : p->N;
        if (!(e.buf[b] = calloc((size_t)(cols * L->buffer_width[b]) + 1, sizeof(double)))) goto out;
    }
    for (int k = 0; k < c->nstates; k++) {
        int64_t n = p->N * e.len[c->states[k].node];
        e.prev[k] = calloc((size_t)n + 1, sizeof(double));
        e.next[k] = calloc((size_t)n + 1, sizeof(double));
        if (!e.prev[k] || !e.next[k]) goto out;
        if (p->h0 && p->h0[k]) memcpy(e.prev[k], p->h0[k], (size_t)n * sizeof(double));
    }
    run_program(&e, SCHED_HOIST, 0);
    for (int64_t t = 0; t < p->T; t++) {
        run_program(&e, SCHED_STEP, t);
        double **swap = e.prev;
        e.prev = e.next;
        e.next = swap;
    }
    for (int k = 0; k < c->nstates && hT; k++)
        if (hT[k]) memcpy(hT[k], e.prev[k], (size_t)(p->N * e.len[c->states[k].node]) * sizeof(double));
    rc = 0;
out:
    for (int b = 0; e.buf && b < plan->nbuffers; b++) free(e.buf[b]);
    for (int k = 0; e.prev && e.next && k < c->nstates; k++) { free(e.prev[k]); free(e.next[k]); }
    for (uint32_t i = 0; e.reg && i < c->nnodes; i++) free(e.reg[i]);
    free(e.packed); free(e.buf); free(e.prev); free(e.next); free(e.reg); free(e.len);
    return rc;
}
