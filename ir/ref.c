/* The double-precision reference interpreter: runs a cell over a batch of sequences and
 * differentiates it, with plain loops over steps, sequences, nodes and elements.
 * Key idea: a step evaluates the nodes in id order (operands come first); backward keeps
 * every step's node values (a tape) and replays the nodes in reverse, adding adjoints. */
#include "ref.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* The problem with its sizes worked out and checked. A step's node values live in one
 * buffer of `step` doubles, node i at off[i]; parameter nodes have no slot (they are read
 * from the problem's params, and their adjoints go straight to per-parameter sums). */
typedef struct Ctx {
    const RefProblem *p;
    const IrCell *cell;
    size_t T, N, I;    /* steps, sequences, input length */
    size_t *len;       /* per node: its number of elements (1 for scalars) */
    size_t *off;       /* per node: its offset in a step buffer */
    size_t *slen;      /* per state: its length */
    size_t *olen;      /* per output: its length */
    size_t *plen;      /* per parameter: its number of elements */
    size_t step;       /* doubles in a step buffer */
} Ctx;

/* Like ir_shape_numel, but checks the dimension indices and values and the product's overflow. */
static int numel(const IrCell *c, const int64_t *dimval, const IrShape *s, size_t *out) {
    int rank = s->kind == IR_SCALAR ? 0 : s->kind == IR_VECTOR ? 1 : s->kind == IR_MATRIX ? 2 : -1;
    if (rank < 0) return -1;
    size_t n = 1;
    for (int i = 0; i < rank; i++) {
        int d = s->dims[i];
        if (d < 0 || d >= c->ndims || dimval[d] < 1) return -1;
        if (!c->dims[d].name && dimval[d] != c->dims[d].literal) return -1;
        if (__builtin_mul_overflow(n, dimval[d], &n)) return -1;
    }
    *out = n;
    return 0;
}

static int is_scalar(const Ctx *c, IrRef r) { return c->cell->nodes[r].shape.kind == IR_SCALAR; }

/* Element e of operand r of an element-wise node: scalars broadcast. */
static size_t at(const Ctx *c, IrRef r, size_t e) { return is_scalar(c, r) ? 0 : e; }

/* The value of node r in the step buffer v. */
static const double *val(const Ctx *c, const double *v, IrRef r) {
    const IrNode *nd = &c->cell->nodes[r];
    return nd->op == IR_PARAM ? c->p->params[nd->index] : v + c->off[r];
}

/* The adjoint of node r: in the step's adjoint buffer g, or the parameter's sum in gp. */
static double *adj(const Ctx *c, double *g, double *const *gp, IrRef r) {
    const IrNode *nd = &c->cell->nodes[r];
    return nd->op == IR_PARAM ? gp[nd->index] : g + c->off[r];
}

static void ctx_free(Ctx *c) { free(c->len); }

/* Checks one node against the cell's tables and the sizes of its operands. */
static int check_node(const Ctx *c, IrRef i) {
    const IrCell *cell = c->cell;
    const IrNode *nd = &cell->nodes[i];
    if ((unsigned)nd->op >= IR_OP_COUNT) return -1;
    for (int j = 0; j < ir_ops[nd->op].arity; j++)
        if (nd->args[j] >= i) return -1; /* operands come first (and IR_NONE is out) */
    switch (nd->op) {
    case IR_INPUT:
        return nd->index == 0 && c->len[i] == c->I ? 0 : -1;
    case IR_STATE:
        return nd->index >= 0 && nd->index < cell->nstates && c->len[i] == c->slen[nd->index] ? 0 : -1;
    case IR_PARAM:
        return nd->index >= 0 && nd->index < cell->nparams && c->len[i] == c->plen[nd->index] ? 0 : -1;
    case IR_CONST:
        return 0;
    case IR_MATVEC: {
        const IrNode *w = &cell->nodes[nd->args[0]], *u = &cell->nodes[nd->args[1]];
        if (w->op != IR_PARAM || w->shape.kind != IR_MATRIX || u->shape.kind == IR_MATRIX) return -1;
        size_t rows = (size_t)c->p->dimval[w->shape.dims[0]], cols = (size_t)c->p->dimval[w->shape.dims[1]];
        return nd->shape.kind == IR_VECTOR && c->len[i] == rows && c->len[nd->args[1]] == cols ? 0 : -1;
    }
    default:
        if (!ir_op_is_elementwise(nd->op) || nd->shape.kind == IR_MATRIX) return -1;
        for (int j = 0; j < ir_ops[nd->op].arity; j++) {
            IrRef a = nd->args[j];
            if (cell->nodes[a].shape.kind == IR_MATRIX) return -1;
            if (!is_scalar(c, a) && c->len[a] != c->len[i]) return -1;
        }
        return 0;
    }
}

/* Validates the problem and works out every size; on failure frees what it took. */
static int ctx_init(Ctx *c, const RefProblem *p) {
    memset(c, 0, sizeof *c);
    if (!p || !p->cell || !p->dimval || !p->x || p->T < 0 || p->N < 0) return -1;
    const IrCell *cell = p->cell;
    if (cell->ninputs != 1 || !cell->inputs || cell->nstates < 0 || cell->nparams < 0 ||
        cell->noutputs < 0 || cell->ndims < 0 || (cell->nnodes && !cell->nodes) ||
        (cell->nstates && !cell->states) || (cell->nparams && !cell->params) ||
        (cell->noutputs && !cell->outputs))
        return -1;
    if (cell->nparams && !p->params) return -1;
    for (int k = 0; k < cell->nparams; k++)
        if (!p->params[k]) return -1;
    if (p->lengths)
        for (int64_t n = 0; n < p->N; n++)
            if (p->lengths[n] < 0 || p->lengths[n] > p->T) return -1;
    c->p = p;
    c->cell = cell;
    c->T = (size_t)p->T;
    c->N = (size_t)p->N;

    size_t nsizes = (size_t)cell->nnodes * 2 + (size_t)cell->nstates + (size_t)cell->noutputs +
                    (size_t)cell->nparams + 1;
    c->len = calloc(nsizes, sizeof *c->len);
    if (!c->len) return -1;
    c->off = c->len + cell->nnodes;
    c->slen = c->off + cell->nnodes;
    c->olen = c->slen + cell->nstates;
    c->plen = c->olen + cell->noutputs;

    size_t tn, scratch;
    if (numel(cell, p->dimval, &cell->inputs[0].shape, &c->I) ||
        __builtin_mul_overflow(c->T, c->N, &tn) || __builtin_mul_overflow(tn, c->I, &scratch))
        goto bad;
    for (int k = 0; k < cell->nstates; k++)
        if (cell->states[k].shape.kind != IR_VECTOR ||
            numel(cell, p->dimval, &cell->states[k].shape, &c->slen[k]) ||
            __builtin_mul_overflow(c->N, c->slen[k], &scratch))
            goto bad;
    for (int k = 0; k < cell->nparams; k++)
        if (numel(cell, p->dimval, &cell->params[k].shape, &c->plen[k])) goto bad;
    for (IrRef i = 0; i < cell->nnodes; i++) {
        const IrNode *nd = &cell->nodes[i];
        if (numel(cell, p->dimval, &nd->shape, &c->len[i]) || check_node(c, i)) goto bad;
        c->off[i] = c->step;
        if (nd->op != IR_PARAM && __builtin_add_overflow(c->step, c->len[i], &c->step)) goto bad;
    }
    for (int k = 0; k < cell->nstates; k++) {
        IrRef next = cell->states[k].next;
        if (next >= cell->nnodes || c->len[next] != c->slen[k]) goto bad;
    }
    for (int j = 0; j < cell->noutputs; j++) {
        IrRef r = cell->outputs[j].node;
        if (r >= cell->nnodes || __builtin_mul_overflow(tn, c->len[r], &scratch)) goto bad;
        c->olen[j] = c->len[r];
    }
    return 0;
bad:
    ctx_free(c);
    return -1;
}

static size_t seq_len(const Ctx *c, size_t n) {
    return c->p->lengths ? (size_t)c->p->lengths[n] : c->T;
}

/* Evaluates every node of one step of sequence n at time t into v; state k's current value
 * is in s[k]. */
static void eval_step(const Ctx *c, double *v, size_t t, size_t n, const double *const *s) {
    const IrCell *cell = c->cell;
    for (IrRef i = 0; i < cell->nnodes; i++) {
        const IrNode *nd = &cell->nodes[i];
        double *out = v + c->off[i];
        switch (nd->op) {
        case IR_INPUT:
            memcpy(out, c->p->x + (t * c->N + n) * c->I, c->I * sizeof *out);
            break;
        case IR_STATE:
            memcpy(out, s[nd->index], c->len[i] * sizeof *out);
            break;
        case IR_PARAM:
            break;
        case IR_CONST:
            for (size_t e = 0; e < c->len[i]; e++) out[e] = nd->value;
            break;
        case IR_MATVEC: {
            const double *w = val(c, v, nd->args[0]), *u = val(c, v, nd->args[1]);
            size_t rows = c->len[i], cols = c->len[nd->args[1]];
            for (size_t r = 0; r < rows; r++) {
                double sum = 0;
                for (size_t k = 0; k < cols; k++) sum += w[r * cols + k] * u[k];
                out[r] = sum;
            }
            break;
        }
        default: { /* element-wise */
            int arity = ir_ops[nd->op].arity;
            for (size_t e = 0; e < c->len[i]; e++) {
                double a[3] = {0, 0, 0};
                for (int j = 0; j < arity; j++) a[j] = val(c, v, nd->args[j])[at(c, nd->args[j], e)];
                out[e] = ir_op_eval(nd->op, a[0], a[1], a[2]);
            }
            break;
        }
        }
    }
}

int ref_forward(const RefProblem *p, double *const *y, double *const *hT) {
    Ctx c;
    if (ctx_init(&c, p)) return -1;
    const IrCell *cell = c.cell;
    int rc = -1;
    /* One step buffer, then every state's current value for all sequences ([N][S] each). */
    size_t total = c.step, sz;
    for (int k = 0; k < cell->nstates; k++)
        if (__builtin_mul_overflow(c.N, c.slen[k], &sz) || __builtin_add_overflow(total, sz, &total))
            goto out;
    double *buf = calloc(total + 1, sizeof *buf);
    double **cur = calloc((size_t)cell->nstates + 1, sizeof *cur);
    const double **s = calloc((size_t)cell->nstates + 1, sizeof *s);
    if (!buf || !cur || !s) goto done;
    double *v = buf, *next = buf + c.step;
    for (int k = 0; k < cell->nstates; k++) {
        cur[k] = next;
        next += c.N * c.slen[k];
        if (p->h0 && p->h0[k]) memcpy(cur[k], p->h0[k], c.N * c.slen[k] * sizeof *cur[k]);
    }

    for (size_t t = 0; t < c.T; t++) {
        for (size_t n = 0; n < c.N; n++) {
            size_t tn = t * c.N + n;
            if (t >= seq_len(&c, n)) { /* padding: y is 0, the state is carried */
                for (int j = 0; j < cell->noutputs; j++)
                    if (y && y[j]) memset(y[j] + tn * c.olen[j], 0, c.olen[j] * sizeof *y[j]);
                continue;
            }
            for (int k = 0; k < cell->nstates; k++) s[k] = cur[k] + n * c.slen[k];
            eval_step(&c, v, t, n, s);
            for (int j = 0; j < cell->noutputs; j++)
                if (y && y[j])
                    memcpy(y[j] + tn * c.olen[j], val(&c, v, cell->outputs[j].node), c.olen[j] * sizeof *y[j]);
            /* The step read the states into v, so overwriting them now is safe. */
            for (int k = 0; k < cell->nstates; k++)
                memcpy(cur[k] + n * c.slen[k], val(&c, v, cell->states[k].next), c.slen[k] * sizeof *cur[k]);
        }
    }
    for (int k = 0; k < cell->nstates; k++)
        if (hT && hT[k]) memcpy(hT[k], cur[k], c.N * c.slen[k] * sizeof *hT[k]);
    rc = 0;
done:
    free(buf);
    free(cur);
    free(s);
out:
    ctx_free(&c);
    return rc;
}

/* Adds the adjoint g of element-wise or matvec node i (values in v) into its operands'. */
static void backprop_node(const Ctx *c, const double *v, double *g, double *const *gp, IrRef i) {
    const IrNode *nd = &c->cell->nodes[i];
    const double *gi = g + c->off[i];
    if (nd->op == IR_MATVEC) { /* y = W u:  dW += dy u^T,  du += W^T dy */
        const double *w = val(c, v, nd->args[0]), *u = val(c, v, nd->args[1]);
        double *gw = adj(c, g, gp, nd->args[0]), *gu = adj(c, g, gp, nd->args[1]);
        size_t rows = c->len[i], cols = c->len[nd->args[1]];
        for (size_t r = 0; r < rows; r++)
            for (size_t k = 0; k < cols; k++) {
                gw[r * cols + k] += gi[r] * u[k];
                gu[k] += w[r * cols + k] * gi[r];
            }
        return;
    }
    int arity = ir_ops[nd->op].arity;
    const double *y = v + c->off[i];
    for (size_t e = 0; e < c->len[i]; e++) {
        double a[3] = {0, 0, 0}, d[3];
        for (int j = 0; j < arity; j++) a[j] = val(c, v, nd->args[j])[at(c, nd->args[j], e)];
        ir_op_deriv(nd->op, a[0], a[1], a[2], y[e], d);
        /* A broadcast scalar operand gets the sum over elements (constants drop it anyway). */
        for (int j = 0; j < arity; j++) adj(c, g, gp, nd->args[j])[at(c, nd->args[j], e)] += gi[e] * d[j];
    }
}

int ref_backward(const RefProblem *p, const double *const *dy, const double *const *dhT,
                 double *dx, double *const *dh0, double *const *dparams) {
    Ctx c;
    if (ctx_init(&c, p)) return -1;
    const IrCell *cell = c.cell;
    int rc = -1;
    /* Sizes: the tape [T][N][step], a step's adjoints, the parameters' adjoint sums, and
     * per state: the adjoint flowing into the step, the one flowing out, and zeros (h0). */
    size_t tapelen, total, sz;
    if (__builtin_mul_overflow(c.T * c.N, c.step, &tapelen) ||
        __builtin_add_overflow(tapelen, c.step, &total))
        goto out;
    for (int k = 0; k < cell->nparams; k++)
        if (__builtin_add_overflow(total, c.plen[k], &total)) goto out;
    for (int k = 0; k < cell->nstates; k++)
        if (__builtin_mul_overflow(c.slen[k], 3, &sz) || __builtin_add_overflow(total, sz, &total))
            goto out;
    double *buf = calloc(total + 1, sizeof *buf);
    double **gp = calloc((size_t)cell->nparams + 1, sizeof *gp);
    double **sin = calloc((size_t)cell->nstates + 1, sizeof *sin);
    double **sout = calloc((size_t)cell->nstates + 1, sizeof *sout);
    const double **zeros = calloc((size_t)cell->nstates + 1, sizeof *zeros);
    const double **s = calloc((size_t)cell->nstates + 1, sizeof *s);
    if (!buf || !gp || !sin || !sout || !zeros || !s) goto done;
    double *tape = buf, *g = buf + tapelen, *next = g + c.step;
    for (int k = 0; k < cell->nparams; k++) {
        gp[k] = next;
        next += c.plen[k];
    }
    for (int k = 0; k < cell->nstates; k++) {
        sin[k] = next;
        sout[k] = next + c.slen[k];
        zeros[k] = next + 2 * c.slen[k];
        next += 3 * c.slen[k];
    }

    /* Forward, keeping every step on the tape; a step reads its states from the previous
     * step's `next` nodes, or from h0. */
    for (size_t n = 0; n < c.N; n++) {
        for (size_t t = 0; t < seq_len(&c, n); t++) {
            for (int k = 0; k < cell->nstates; k++) {
                if (t > 0) s[k] = val(&c, tape + ((t - 1) * c.N + n) * c.step, cell->states[k].next);
                else if (p->h0 && p->h0[k]) s[k] = p->h0[k] + n * c.slen[k];
                else s[k] = zeros[k];
            }
            eval_step(&c, tape + (t * c.N + n) * c.step, t, n, s);
        }
    }

    /* Backward, each sequence from its last step to its first (padded steps pass the state
     * adjoint through unchanged, and their y does not depend on anything). */
    if (dx) memset(dx, 0, c.T * c.N * c.I * sizeof *dx);
    for (size_t n = 0; n < c.N; n++) {
        for (int k = 0; k < cell->nstates; k++) {
            if (dhT && dhT[k]) memcpy(sin[k], dhT[k] + n * c.slen[k], c.slen[k] * sizeof *sin[k]);
            else memset(sin[k], 0, c.slen[k] * sizeof *sin[k]);
        }
        for (size_t t = seq_len(&c, n); t-- > 0;) {
            size_t tn = t * c.N + n;
            const double *v = tape + tn * c.step;
            memset(g, 0, c.step * sizeof *g);
            for (int k = 0; k < cell->nstates; k++) memset(sout[k], 0, c.slen[k] * sizeof *sout[k]);
            /* Seeds: add, never overwrite (one node may be several states' and outputs'). */
            for (int k = 0; k < cell->nstates; k++) {
                double *a = adj(&c, g, gp, cell->states[k].next);
                for (size_t e = 0; e < c.slen[k]; e++) a[e] += sin[k][e];
            }
            for (int j = 0; j < cell->noutputs; j++) {
                if (!dy || !dy[j]) continue;
                double *a = adj(&c, g, gp, cell->outputs[j].node);
                for (size_t e = 0; e < c.olen[j]; e++) a[e] += dy[j][tn * c.olen[j] + e];
            }
            for (IrRef i = cell->nnodes; i-- > 0;) {
                const IrNode *nd = &cell->nodes[i];
                const double *gi = g + c.off[i];
                switch (nd->op) {
                case IR_INPUT:
                    if (dx)
                        for (size_t e = 0; e < c.I; e++) dx[tn * c.I + e] += gi[e];
                    break;
                case IR_STATE:
                    for (size_t e = 0; e < c.len[i]; e++) sout[nd->index][e] += gi[e];
                    break;
                case IR_PARAM: /* its adjoint went straight into gp */
                case IR_CONST:
                    break;
                default:
                    backprop_node(&c, v, g, gp, i);
                }
            }
            for (int k = 0; k < cell->nstates; k++) memcpy(sin[k], sout[k], c.slen[k] * sizeof *sin[k]);
        }
        for (int k = 0; k < cell->nstates; k++)
            if (dh0 && dh0[k]) memcpy(dh0[k] + n * c.slen[k], sin[k], c.slen[k] * sizeof *sin[k]);
    }
    for (int k = 0; k < cell->nparams; k++)
        if (dparams && dparams[k]) memcpy(dparams[k], gp[k], c.plen[k] * sizeof *gp[k]);
    rc = 0;
done:
    free(buf);
    free(gp);
    free(sin);
    free(sout);
    free(zeros);
    free(s);
out:
    ctx_free(&c);
    return rc;
}
