/* Biases whose gradient is a sum of a GEMM result's adjoint (see sched.h, Plan.param_fold), and
 * the sums whose terms share one adjoint (Plan.sum_root).
 * Key idea: a vector parameter used once, added straight to a sum whose other terms reach a
 * matvec only through additions used once, has at every step the matvec's adjoint as its own;
 * the matvec's adjoint buffer holds every step's, so the gradient is one sum over its columns
 * after the loop, and the backward kernels keep no per-sequence accumulator for it. Likewise
 * every term of such a sum has the sum's adjoint (the LSTM's W_i x and U_i h). */
#include "sched.h"

static int same_shape(const IrCell *c, IrRef a, IrRef b) {
    const IrShape *x = &c->nodes[a].shape, *y = &c->nodes[b].shape;
    return x->kind == IR_VECTOR && y->kind == IR_VECTOR && x->dims[0] == y->dims[0];
}

/* A matvec among the terms of the sum at add node a (reached through additions used once, each
 * term once), of a's shape and used only there; IR_NONE if there is none. skip: the bias itself. */
static IrRef find_product(const IrCell *c, const uint32_t *uses, IrRef a, IrRef skip) {
    const IrNode *n = &c->nodes[a];
    if (n->args[0] == n->args[1]) return IR_NONE; /* x + x: twice the adjoint */
    for (int i = 0; i < 2; i++) {
        IrRef t = n->args[i];
        if (t == skip || uses[t] != 1 || !same_shape(c, t, a)) continue;
        if (c->nodes[t].op == IR_MATVEC) return t;
        if (c->nodes[t].op == IR_ADD) {
            IrRef r = find_product(c, uses, t, IR_NONE);
            if (r != IR_NONE) return r;
        }
    }
    return IR_NONE;
}

/* Per node: its uses (operands, state writes, outputs) and its last user node (IR_NONE when a
 * state or an output takes it last). 0 when out of memory. */
static int count_uses(Arena *arena, const IrCell *c, uint32_t **uses_out, IrRef **user_out) {
    uint32_t *uses = arena_array(arena, (size_t)c->nnodes + 1, sizeof *uses);
    IrRef *user = arena_array(arena, (size_t)c->nnodes + 1, sizeof *user);
    if (!uses || !user) return 0;
    for (uint32_t i = 0; i < c->nnodes; i++) user[i] = IR_NONE;
    for (uint32_t i = 0; i < c->nnodes; i++)
        for (int a = 0; a < ir_ops[c->nodes[i].op].arity; a++) {
            uses[c->nodes[i].args[a]]++;
            user[c->nodes[i].args[a]] = i;
        }
    for (int k = 0; k < c->nstates; k++) uses[c->states[k].next]++, user[c->states[k].next] = IR_NONE;
    for (int o = 0; o < c->noutputs; o++) uses[c->outputs[o].node]++, user[c->outputs[o].node] = IR_NONE;
    *uses_out = uses;
    *user_out = user;
    return 1;
}

IrRef *sched_sum_roots(Arena *arena, const IrCell *c) {
    IrRef *root = arena_array(arena, (size_t)c->nnodes + 1, sizeof *root), *user;
    uint32_t *uses;
    if (!root || !count_uses(arena, c, &uses, &user)) return NULL;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        IrRef t = i, u;
        /* up through additions that use t once (x + x: twice the adjoint), of t's shape */
        while (uses[t] == 1 && (u = user[t]) != IR_NONE && c->nodes[u].op == IR_ADD &&
               c->nodes[u].args[0] != c->nodes[u].args[1] && same_shape(c, t, u))
            t = u;
        root[i] = t;
    }
    return root;
}

IrRef *sched_param_folds(Arena *arena, const IrCell *c) {
    IrRef *fold = arena_array(arena, (size_t)c->nparams + 1, sizeof *fold), *user;
    uint32_t *uses;
    if (!fold || !count_uses(arena, c, &uses, &user)) return NULL;
    for (int k = 0; k < c->nparams; k++) {
        IrRef pn = c->params[k].node, a = user[pn];
        fold[k] = IR_NONE;
        if (c->params[k].shape.kind != IR_VECTOR || uses[pn] != 1 || a == IR_NONE) continue;
        if (c->nodes[a].op != IR_ADD || !same_shape(c, pn, a)) continue;
        fold[k] = find_product(c, uses, a, pn);
    }
    return fold;
}
