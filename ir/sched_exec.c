/* CPU executor of a plan, mirroring the GPU runtime's buffers and indexing exactly, forward
 * and backward. Key ideas: every value is read from where the plan says it lives (a GEMM
 * result, a stored buffer, a register of the current group), so a wrong plan gives a wrong
 * answer here; the backward recomputes each group's values from what the forward kept (the
 * training layout: every step's GEMM results, stored values and states) and sends each
 * adjoint to where its value came from, accumulating, as the generated backward kernels do. */
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
    double **buf;          /* per plan buffer: hoisted [T*N][W]; step and post [T][N][W] (every step kept) */
    double **state;        /* per state: [T+1][N][S], slot t read by step t */
    double *const *y;
    double **reg;          /* per node: the current column's group values */
    int64_t *len;          /* per node: vector length */
    /* backward */
    double **dbuf;         /* adjoints, shaped as buf; step value buffers are per step too */
    double **dstate;       /* per state: [2][N][S]: the adjoint of the state entering step t (dprev), and of step t's result (dnext) */
    int dcur;              /* which half is dprev */
    double *dx;            /* [T][N][I] */
    double **acc;          /* per vector parameter: [N][n] */
    double **dreg;         /* per node: the current column's adjoints */
    const double *const *dy;
    const SchedEntry *entry; /* addends to hoisted products at each sequence's first step */
    int nentries;
} Exec;

void sched_pack_params(const PlanLayout *L, const double *const *params, double *packed) {
    const IrCell *c = L->plan->cell;
    memset(packed, 0, (size_t)L->packed_size * sizeof *packed);
    for (int k = 0; k < c->nparams; k++)
        memcpy(packed + L->param_offset[k], params[k], (size_t)(L->param_rows[k] * L->param_cols[k]) * sizeof *packed);
}

static int64_t seq_len(const Exec *e, int64_t n) { return e->p->lengths ? e->p->lengths[n] : e->p->T; }

/* Column of a value of program prog for sequence n at position pos and step t (step and post
 * values: the step's columns, t*N+n). */
static int64_t column(const Exec *e, SchedProgram prog, int64_t pos, int64_t t, int64_t n) {
    return (prog == SCHED_HOIST ? pos : t) * e->p->N + n;
}

static double *state_at(const Exec *e, int k, int64_t t, int64_t n) {
    return e->state[k] + (t * e->p->N + n) * e->len[e->cell->states[k].node];
}

/* Where node r's value for (pos, t, n) lives in memory, or NULL for registers, params, consts. */
static double *home(const Exec *e, double *const *bufs, IrRef r, int64_t pos, int64_t t, int64_t n) {
    const IrNode *node = &e->cell->nodes[r];
    const SchedNode *s = &e->plan->node[r];
    if (node->op == IR_MATVEC) {
        const SchedGemm *g = &e->plan->gemms[s->gemm];
        int b = g->out_buffer;
        return bufs[b] + column(e, g->program, pos, t, n) * e->L->buffer_width[b] + e->L->block_row[r];
    }
    if (s->buffer >= 0) return bufs[s->buffer] + column(e, s->program, pos, t, n) * e->len[r];
    return NULL;
}

/* Reads element j of node r while running a group (prog, k) for (pos, t, n). */
static double read(const Exec *e, IrRef r, SchedProgram prog, int k, int64_t pos, int64_t t, int64_t n, int64_t j) {
    const IrNode *node = &e->cell->nodes[r];
    const SchedNode *s = &e->plan->node[r];
    switch (node->op) {
    case IR_INPUT: return e->p->x[(pos * e->p->N + n) * e->len[r] + j];
    case IR_STATE: return state_at(e, node->index, t, n)[j];
    case IR_PARAM: return e->packed[e->L->param_offset[node->index] + j];
    case IR_CONST: return node->value;
    default:
        if (node->op != IR_MATVEC && s->program == prog && s->group == k) return e->reg[r][j];
        double *h = home(e, e->buf, r, pos, t, n);
        if (!h) abort(); /* computed in another group but not stored: a plan bug */
        return h[j];
    }
}

/* Computes group g's nodes for one column into registers (and stores the stored ones). */
static void compute_column(Exec *e, const SchedGroup *g, int64_t pos, int64_t t, int64_t n, int store) {
    const IrCell *c = e->cell;
    for (int i = 0; i < g->nnodes; i++) {
        IrRef r = g->nodes[i];
        const IrNode *node = &c->nodes[r];
        for (int64_t j = 0; j < e->len[r]; j++) {
            double a[3] = {0, 0, 0};
            for (int q = 0; q < ir_ops[node->op].arity; q++) {
                IrRef arg = node->args[q];
                a[q] = read(e, arg, g->program, g->index, pos, t, n, c->nodes[arg].shape.kind == IR_SCALAR ? 0 : j);
            }
            e->reg[r][j] = ir_op_eval(node->op, a[0], a[1], a[2]);
        }
        double *h = store ? home(e, e->buf, r, pos, t, n) : NULL;
        if (h) memcpy(h, e->reg[r], (size_t)e->len[r] * sizeof(double));
    }
}

/* Group g (a step or a post group) over step t's columns. */
static void run_step_columns(Exec *e, const SchedGroup *g, int64_t t) {
    const RefProblem *p = e->p;
    for (int64_t n = 0; n < p->N; n++) {
        int64_t len = seq_len(e, n);
        int active = t < len;
        int64_t pos = e->reverse ? len - 1 - t : t;
        if (active) {
            compute_column(e, g, pos, t, n, 1);
        } else { /* an ended sequence stores zeros, so later GEMMs never read stale values */
            for (int i = 0; i < g->nnodes; i++) {
                double *h = home(e, e->buf, g->nodes[i], pos, t, n);
                if (h) memset(h, 0, (size_t)e->len[g->nodes[i]] * sizeof(double));
            }
        }
        for (int w = 0; w < g->nwrites; w++) {
            const SchedWrite *wr = &g->writes[w];
            int64_t d = e->len[wr->node];
            for (int64_t j = 0; j < d; j++) {
                if (wr->kind == WRITE_STATE) {
                    state_at(e, wr->index, t + 1, n)[j] =
                        active ? read(e, wr->node, g->program, g->index, pos, t, n, j) : state_at(e, wr->index, t, n)[j];
                } else if (e->y && e->y[wr->index]) {
                    int64_t at = active ? pos : t;
                    e->y[wr->index][(at * p->N + n) * d + j] = active ? read(e, wr->node, g->program, g->index, pos, t, n, j) : 0;
                }
            }
        }
    }
}

static void run_group(Exec *e, const SchedGroup *g, int64_t t) {
    const RefProblem *p = e->p;
    if (g->program == SCHED_HOIST) {
        for (int64_t pos = 0; pos < p->T; pos++)
            for (int64_t n = 0; n < p->N; n++) compute_column(e, g, pos, 0, n, 1);
        return;
    }
    if (g->program == SCHED_POST) { /* after the loop, every step's columns as the step did them */
        for (int64_t tt = 0; tt < p->T; tt++) run_step_columns(e, g, tt);
        return;
    }
    run_step_columns(e, g, t);
}

/* The GEMM's operand for column (pos, t, n): a pointer to its K values. */
static const double *operand(const Exec *e, IrRef r, int64_t pos, int64_t t, int64_t n) {
    const IrNode *node = &e->cell->nodes[r];
    if (node->op == IR_INPUT) return e->p->x + (pos * e->p->N + n) * e->len[r];
    if (node->op == IR_STATE) return state_at(e, node->index, t, n);
    return home(e, e->buf, r, pos, t, n);
}

/* Columns of a GEMM of program prog at step t: (pos, n) pairs; hoisted and post GEMMs cover all T*N. */
static int64_t gemm_cols(const Exec *e, SchedProgram prog) { return prog == SCHED_STEP ? e->p->N : e->p->T * e->p->N; }

/* GEMM column col of program prog at step t as (pos, t, n): a hoisted GEMM's are positions', a post
 * GEMM's steps' (its operands are step or post values), a step GEMM's step t's. */
static void gemm_col(const Exec *e, SchedProgram prog, int64_t col, int64_t t, int64_t *pos, int64_t *tt, int64_t *n) {
    *pos = prog == SCHED_HOIST ? col / e->p->N : 0;
    *tt = prog == SCHED_POST ? col / e->p->N : t;
    *n = col % e->p->N;
}

/* out[col][r] = sum_k W[r][k] * operand[col][k], W the GEMM's contiguous weight block. */
static void run_gemm(Exec *e, int j, int64_t t) {
    const SchedGemm *g = &e->plan->gemms[j];
    const PlanLayout *L = e->L;
    int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer];
    const double *w = e->packed + L->param_offset[sched_gemm_param(e->plan, j)];
    for (int64_t col = 0; col < gemm_cols(e, g->program); col++) {
        int64_t pos, tt, n;
        gemm_col(e, g->program, col, t, &pos, &tt, &n);
        const double *op = operand(e, g->operand, pos, tt, n);
        double *out = e->buf[g->out_buffer] + column(e, g->program, pos, tt, n) * W;
        for (int64_t r = 0; r < M; r++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += w[r * K + k] * op[k];
            out[r] = acc;
        }
    }
}

static void run_program(Exec *e, SchedProgram prog, int64_t t) {
    for (int k = 0; k <= e->plan->phases[prog]; k++) {
        for (int i = 0; i < e->plan->ngroups; i++)
            if (e->plan->groups[i].program == prog && e->plan->groups[i].index == k) run_group(e, &e->plan->groups[i], t);
        for (int j = 0; j < e->plan->ngemms; j++)
            if (e->plan->gemms[j].program == prog && e->plan->gemms[j].phase == k) run_gemm(e, j, t);
    }
}

/* ---- backward ------------------------------------------------------------------------------ */

/* Sends adjoint contribution v for element j of node r (read by a group of prog for (pos, t, n))
 * to where r's value came from: a register of the group, a GEMM result's adjoint, a stored
 * value's adjoint, the state adjoint, dx, or a parameter's accumulator. */
static void route(Exec *e, IrRef r, SchedProgram prog, int k, int64_t pos, int64_t t, int64_t n, int64_t j, double v) {
    const IrNode *node = &e->cell->nodes[r];
    const SchedNode *s = &e->plan->node[r];
    switch (node->op) {
    case IR_CONST: return;
    case IR_INPUT: e->dx[(pos * e->p->N + n) * e->len[r] + j] += v; return;
    case IR_STATE: e->dstate[node->index][(e->dcur * e->p->N + n) * e->len[r] + j] += v; return;
    case IR_PARAM: e->acc[node->index][n * e->len[r] + j] += v; return;
    default:
        if (node->op != IR_MATVEC && s->program == prog && s->group == k) { e->dreg[r][j] += v; return; }
        home(e, e->dbuf, r, pos, t, n)[j] += v;
    }
}

static double *dnext_at(Exec *e, int k, int64_t n) {
    return e->dstate[k] + ((1 - e->dcur) * e->p->N + n) * e->len[e->cell->states[k].node];
}

/* The backward of group g for one column: recompute, seed, sweep the nodes in reverse. */
static void backward_column(Exec *e, const SchedGroup *g, int64_t pos, int64_t t, int64_t n) {
    const IrCell *c = e->cell;
    compute_column(e, g, pos, t, n, 0);
    for (int i = 0; i < g->nnodes; i++) {
        IrRef r = g->nodes[i];
        double *h = e->plan->node[r].stored ? home(e, e->dbuf, r, pos, t, n) : NULL;
        for (int64_t j = 0; j < e->len[r]; j++) e->dreg[r][j] = h ? h[j] : 0;
    }
    for (int w = 0; w < g->nwrites; w++) {
        const SchedWrite *wr = &g->writes[w];
        for (int64_t j = 0; j < e->len[wr->node]; j++) {
            double seed = wr->kind == WRITE_STATE ? dnext_at(e, wr->index, n)[j]
                        : e->dy && e->dy[wr->index] ? e->dy[wr->index][(pos * e->p->N + n) * e->len[wr->node] + j] : 0;
            route(e, wr->node, g->program, g->index, pos, t, n, j, seed);
        }
    }
    for (int i = g->nnodes; i-- > 0;) {
        IrRef r = g->nodes[i];
        const IrNode *node = &c->nodes[r];
        for (int64_t j = 0; j < e->len[r]; j++) {
            double a[3] = {0, 0, 0}, d[3];
            int64_t at[3] = {j, j, j};
            for (int q = 0; q < ir_ops[node->op].arity; q++) {
                IrRef arg = node->args[q];
                if (c->nodes[arg].shape.kind == IR_SCALAR) at[q] = 0;
                a[q] = read(e, arg, g->program, g->index, pos, t, n, at[q]);
            }
            ir_op_deriv(node->op, a[0], a[1], a[2], e->reg[r][j], d);
            for (int q = 0; q < ir_ops[node->op].arity; q++)
                route(e, node->args[q], g->program, g->index, pos, t, n, at[q], e->dreg[r][j] * d[q]);
        }
    }
}

static void backward_group(Exec *e, const SchedGroup *g, int64_t t) {
    const RefProblem *p = e->p;
    for (int64_t n = 0; n < p->N; n++) {
        int64_t len = seq_len(e, n);
        if (g->program == SCHED_HOIST) { /* one thread per (n, j) walks every position of its sequence */
            for (int64_t pos = 0; pos < len; pos++) backward_column(e, g, pos, 0, n);
            continue;
        }
        if (g->program == SCHED_POST) { /* every step its sequence ran; an ended one's columns send nothing */
            for (int64_t tt = 0; tt < len; tt++) backward_column(e, g, e->reverse ? len - 1 - tt : tt, tt, n);
            continue;
        }
        if (t < len) {
            backward_column(e, g, e->reverse ? len - 1 - t : t, t, n);
            continue;
        }
        /* an ended sequence: its state was carried, so is the state's adjoint */
        for (int w = 0; w < g->nwrites; w++) {
            const SchedWrite *wr = &g->writes[w];
            if (wr->kind != WRITE_STATE) continue;
            int64_t d = e->len[wr->node];
            for (int64_t j = 0; j < d; j++)
                e->dstate[wr->index][(e->dcur * p->N + n) * d + j] += dnext_at(e, wr->index, n)[j];
        }
    }
}

/* d(operand) += W^T d(out) for every column of GEMM j at step t. */
static void backward_gemm_data(Exec *e, int j, int64_t t) {
    const SchedGemm *g = &e->plan->gemms[j];
    const PlanLayout *L = e->L;
    int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer];
    const double *w = e->packed + L->param_offset[sched_gemm_param(e->plan, j)];
    for (int64_t col = 0; col < gemm_cols(e, g->program); col++) {
        int64_t pos, tt, n;
        gemm_col(e, g->program, col, t, &pos, &tt, &n);
        const double *dout = e->dbuf[g->out_buffer] + column(e, g->program, pos, tt, n) * W;
        for (int64_t k = 0; k < K; k++) {
            double acc = 0;
            for (int64_t r = 0; r < M; r++) acc += w[r * K + k] * dout[r];
            route(e, g->operand, SCHED_NONE, -1, pos, tt, n, k, acc);
        }
    }
}

/* dW += sum over every column and step of d(out) operand^T, into dw (the packed gradient). */
static void backward_gemm_weights(Exec *e, int j, double *dw) {
    const SchedGemm *g = &e->plan->gemms[j];
    const PlanLayout *L = e->L;
    int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer];
    double *d = dw + L->param_offset[sched_gemm_param(e->plan, j)];
    int64_t steps = g->program == SCHED_STEP ? e->p->T : 1;
    for (int64_t t = 0; t < steps; t++)
        for (int64_t col = 0; col < gemm_cols(e, g->program); col++) {
            int64_t pos, tt, n;
            gemm_col(e, g->program, col, t, &pos, &tt, &n);
            const double *dout = e->dbuf[g->out_buffer] + column(e, g->program, pos, tt, n) * W;
            const double *op = operand(e, g->operand, pos, tt, n);
            for (int64_t r = 0; r < M; r++)
                for (int64_t k = 0; k < K; k++) d[r * K + k] += dout[r] * op[k];
        }
}

static void backward_program(Exec *e, SchedProgram prog, int64_t t) {
    for (int k = e->plan->phases[prog]; k >= 0; k--) {
        for (int i = 0; i < e->plan->ngroups; i++)
            if (e->plan->groups[i].program == prog && e->plan->groups[i].index == k) backward_group(e, &e->plan->groups[i], t);
        for (int j = 0; k > 0 && j < e->plan->ngemms; j++)
            if (e->plan->gemms[j].program == prog && e->plan->gemms[j].phase == k - 1) backward_gemm_data(e, j, t);
    }
}

/* ---- set-up ---------------------------------------------------------------------------------- */

static int setup(Exec *e, const PlanLayout *L, const RefProblem *p, int reverse, int backward) {
    const Plan *plan = L->plan;
    const IrCell *c = plan->cell;
    if (!p || p->cell != c || !p->x || !p->params || p->T < 0 || p->N < 0) return -1;
    for (int d = 0; d < c->ndims; d++)
        if (p->dimval[d] != L->dimval[d]) return -1;
    for (int64_t n = 0; p->lengths && n < p->N; n++)
        if (p->lengths[n] < 0 || p->lengths[n] > p->T) return -1;
    int64_t T = p->T, N = p->N;
    *e = (Exec){.L = L, .plan = plan, .cell = c, .p = p, .reverse = reverse};
    e->packed = malloc((size_t)L->packed_size * sizeof *e->packed + 8);
    e->buf = calloc((size_t)plan->nbuffers + 1, sizeof *e->buf);
    e->state = calloc((size_t)c->nstates + 1, sizeof *e->state);
    e->reg = calloc((size_t)c->nnodes + 1, sizeof *e->reg);
    e->len = calloc((size_t)c->nnodes + 1, sizeof *e->len);
    if (!e->packed || !e->buf || !e->state || !e->reg || !e->len) return -1;
    sched_pack_params(L, p->params, e->packed);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        e->len[i] = c->nodes[i].shape.kind == IR_MATRIX ? 0 : ir_node_len(c, i, L->dimval);
        if (ir_op_is_elementwise(c->nodes[i].op) && !(e->reg[i] = calloc((size_t)e->len[i] + 1, sizeof(double)))) return -1;
    }
    for (int b = 0; b < plan->nbuffers; b++)
        if (!(e->buf[b] = calloc((size_t)(T * N * L->buffer_width[b]) + 1, sizeof(double)))) return -1;
    for (int k = 0; k < c->nstates; k++) {
        int64_t n = N * e->len[c->states[k].node];
        if (!(e->state[k] = calloc((size_t)((T + 1) * n) + 1, sizeof(double)))) return -1;
        if (p->h0 && p->h0[k]) memcpy(e->state[k], p->h0[k], (size_t)n * sizeof(double));
    }
    if (!backward) return 0;
    e->dbuf = calloc((size_t)plan->nbuffers + 1, sizeof *e->dbuf);
    e->dstate = calloc((size_t)c->nstates + 1, sizeof *e->dstate);
    e->acc = calloc((size_t)c->nparams + 1, sizeof *e->acc);
    e->dreg = calloc((size_t)c->nnodes + 1, sizeof *e->dreg);
    e->dx = calloc((size_t)(T * N * ir_shape_numel(&c->inputs[0].shape, L->dimval)) + 1, sizeof(double));
    if (!e->dbuf || !e->dstate || !e->acc || !e->dreg || !e->dx) return -1;
    for (int b = 0; b < plan->nbuffers; b++)
        if (!(e->dbuf[b] = calloc((size_t)(T * N * L->buffer_width[b]) + 1, sizeof(double)))) return -1;
    for (int k = 0; k < c->nstates; k++)
        if (!(e->dstate[k] = calloc((size_t)(2 * N * e->len[c->states[k].node]) + 1, sizeof(double)))) return -1;
    for (int k = 0; k < c->nparams; k++)
        if (!(e->acc[k] = calloc((size_t)(N * L->param_rows[k]) + 1, sizeof(double)))) return -1;
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (ir_op_is_elementwise(c->nodes[i].op) && !(e->dreg[i] = calloc((size_t)e->len[i] + 1, sizeof(double)))) return -1;
    return 0;
}

static void free_ptrs(double **v, int n) {
    for (int i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

static void teardown(Exec *e) {
    const IrCell *c = e->cell;
    if (!c) return;
    free_ptrs(e->buf, e->plan->nbuffers);
    free_ptrs(e->dbuf, e->plan->nbuffers);
    free_ptrs(e->state, c->nstates);
    free_ptrs(e->dstate, c->nstates);
    free_ptrs(e->reg, (int)c->nnodes);
    free_ptrs(e->dreg, (int)c->nnodes);
    free_ptrs(e->acc, c->nparams);
    free(e->packed);
    free(e->len);
    free(e->dx);
}

/* The value (or with d, the adjoint) of entry i's product for sequence n at its first step, or NULL
 * where the sequence has no step. */
static double *entry_at(const Exec *e, double *const *bufs, int i, int64_t n) {
    int64_t len = seq_len(e, n);
    return len > 0 ? home(e, bufs, e->entry[i].product, e->reverse ? len - 1 : 0, 0, n) : NULL;
}

static void forward(Exec *e) {
    run_program(e, SCHED_HOIST, 0);
    for (int i = 0; i < e->nentries; i++)
        for (int64_t n = 0, rows = e->len[e->entry[i].product]; n < e->p->N; n++) {
            double *v = entry_at(e, e->buf, i, n);
            for (int64_t r = 0; v && r < rows; r++) v[r] += e->entry[i].add[n * rows + r];
        }
    for (int64_t t = 0; t < e->p->T; t++) run_program(e, SCHED_STEP, t);
    run_program(e, SCHED_POST, 0);
}

/* Each state's value after each sequence's last step into hT (per state [N][S]; NULL entries skipped). */
static void copy_finals(const Exec *e, double *const *hT) {
    for (int k = 0; k < e->cell->nstates && hT; k++)
        if (hT[k]) memcpy(hT[k], state_at(e, k, e->p->T, 0), (size_t)(e->p->N * e->len[e->cell->states[k].node]) * sizeof(double));
}

/* Whether every entry names a hoisted product. */
static int entries_ok(const Plan *plan, const SchedEntry *entry, int n) {
    for (int i = 0; i < n; i++)
        if (entry[i].product >= plan->cell->nnodes || plan->cell->nodes[entry[i].product].op != IR_MATVEC ||
            plan->node[entry[i].product].program != SCHED_HOIST || !entry[i].add)
            return 0;
    return 1;
}

int sched_exec_forward(const PlanLayout *L, const RefProblem *p, int reverse, double *const *y, double *const *hT) {
    return sched_exec_forward_entries(L, p, reverse, NULL, 0, y, hT);
}

int sched_exec_forward_entries(const PlanLayout *L, const RefProblem *p, int reverse, const SchedEntry *entry, int nentries,
                               double *const *y, double *const *hT) {
    Exec e = {0};
    if (!entries_ok(L->plan, entry, nentries)) return -1;
    int rc = setup(&e, L, p, reverse, 0);
    e.entry = entry, e.nentries = nentries;
    if (rc == 0) {
        e.y = y;
        forward(&e);
        copy_finals(&e, hT);
    }
    teardown(&e);
    return rc;
}

int sched_exec_backward(const PlanLayout *L, const RefProblem *p, int reverse, const double *const *dy,
                        const double *const *dhT, double *dx, double *const *dh0, double *const *dparams) {
    return sched_exec_backward_entries(L, p, reverse, NULL, 0, dy, dhT, dx, dh0, dparams, NULL);
}

int sched_exec_backward_entries(const PlanLayout *L, const RefProblem *p, int reverse, const SchedEntry *entry, int nentries,
                                const double *const *dy, const double *const *dhT, double *dx, double *const *dh0,
                                double *const *dparams, double *const *hT) {
    Exec e = {0};
    if (!entries_ok(L->plan, entry, nentries)) return -1;
    int rc = setup(&e, L, p, reverse, 1);
    if (rc != 0) { teardown(&e); return rc; }
    e.entry = entry, e.nentries = nentries;
    const IrCell *c = e.cell;
    const Plan *plan = e.plan;
    int64_t T = p->T, N = p->N;
    forward(&e);
    copy_finals(&e, hT);
    e.dy = dy;
    backward_program(&e, SCHED_POST, 0); /* its adjoints enter the step backward as dy does */
    e.dcur = 0; /* dstate half 1 - dcur is dnext: the adjoint of the last step's result, dhT */
    for (int k = 0; k < c->nstates; k++)
        if (dhT && dhT[k]) memcpy(dnext_at(&e, k, 0), dhT[k], (size_t)(N * e.len[c->states[k].node]) * sizeof(double));
    for (int64_t t = T - 1; t >= 0; t--) {
        for (int k = 0; k < c->nstates; k++) /* dprev starts at zero every step */
            memset(e.dstate[k] + e.dcur * N * e.len[c->states[k].node], 0, (size_t)(N * e.len[c->states[k].node]) * sizeof(double));
        backward_program(&e, SCHED_STEP, t);
        e.dcur = 1 - e.dcur;
    }
    for (int i = 0; i < nentries; i++) /* the step backward has made the first steps' adjoints whole */
        for (int64_t n = 0, rows = e.len[entry[i].product]; entry[i].adjoint && n < N; n++) {
            const double *d = entry_at(&e, e.dbuf, i, n);
            for (int64_t r = 0; r < rows; r++) entry[i].adjoint[n * rows + r] = d ? d[r] : 0;
        }
    backward_program(&e, SCHED_HOIST, 0);
    for (int k = 0; dh0 && k < c->nstates; k++)
        if (dh0[k]) memcpy(dh0[k], dnext_at(&e, k, 0), (size_t)(N * e.len[c->states[k].node]) * sizeof(double));
    if (dx) memcpy(dx, e.dx, (size_t)(T * N * ir_shape_numel(&c->inputs[0].shape, L->dimval)) * sizeof(double));
    if (dparams) {
        double *dw = calloc((size_t)L->packed_size + 1, sizeof *dw);
        if (!dw) { teardown(&e); return -1; }
        for (int j = 0; j < plan->ngemms; j++) backward_gemm_weights(&e, j, dw);
        for (int k = 0; k < c->nparams; k++) {
            if (!dparams[k]) continue;
            int64_t n = L->param_rows[k] * L->param_cols[k];
            if (c->params[k].shape.kind == IR_VECTOR) /* vectors: the accumulators summed over sequences */
                for (int64_t s = 0; s < N; s++)
                    for (int64_t i = 0; i < n; i++) dw[L->param_offset[k] + i] += e.acc[k][s * n + i];
            memcpy(dparams[k], dw + L->param_offset[k], (size_t)n * sizeof(double));
        }
        free(dw);
    }
    teardown(&e);
    return 0;
}
