/* Tests for the scheduler (ir/sched*.c): the plan's shape per shipped cell, the packed
 * layout, golden plan dumps, and the CPU plan executor against the reference for every cell.
 * Key idea: the executor reads every value from where the plan puts it, so agreement with
 * the reference to 1e-12 checks grouping, storing and packing together. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/sched.h"
#include "../ir/sched_exec.h"
#include "testutil.h"

/* c's plan, with sched_plan_opts' flags (SCHED_POST_PROGRAM) */
static const Plan *plan_opts(Arena *a, const IrCell *c, unsigned flags) {
    Diags d;
    diag_init(&d, a, c->name, NULL, 0);
    const Plan *p = sched_plan_opts(a, c, &d, flags);
    ck_assert_msg(p != NULL, "cell %s did not schedule", c->name);
    return p;
}

static const Plan *plan_of(Arena *a, const IrCell *c) { return plan_opts(a, c, 0); }

static const IrCell *cell_of_file(Arena *a, const char *path) { return tu_compile_file(a, path)->cells[0]; }

static const IrCell *cell_of_text(Arena *a, const char *text) {
    return tu_compile(a, "test.cell", arena_strdup(a, text), strlen(text))->cells[0];
}

static int count_gemms(const Plan *p, SchedProgram prog) {
    int n = 0;
    for (int j = 0; j < p->ngemms; j++) n += p->gemms[j].program == prog;
    return n;
}

static int count_groups(const Plan *p, SchedProgram prog) {
    int n = 0;
    for (int i = 0; i < p->ngroups; i++) n += p->groups[i].program == prog;
    return n;
}

static const char *param_of(const IrCell *c, IrRef matvec) { return c->params[c->nodes[c->nodes[matvec].args[0]].index].name; }

static int param_index(const IrCell *c, const char *name) {
    for (int k = 0; k < c->nparams; k++)
        if (strcmp(c->params[k].name, name) == 0) return k;
    ck_abort_msg("no parameter %s", name);
    return -1;
}

/* ---- plan shapes ----------------------------------------------------------------- */

START_TEST(lstm_plan) {
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_file(&a, "cells/lstm.cell");
    const Plan *p = plan_of(&a, c);
    ck_assert_int_eq(count_gemms(p, SCHED_HOIST), 1);
    ck_assert_int_eq(count_gemms(p, SCHED_STEP), 1);
    ck_assert_int_eq(count_groups(p, SCHED_STEP), 1);
    ck_assert_int_eq(count_groups(p, SCHED_HOIST), 0);
    ck_assert_int_eq(p->phases[SCHED_STEP], 1);
    const SchedGemm *h = &p->gemms[0], *s = &p->gemms[1];
    ck_assert_int_eq(h->nproducts, 4);
    ck_assert_int_eq(s->nproducts, 4);
    ck_assert(h->stacked && s->stacked);
    ck_assert_int_eq(c->nodes[h->operand].op, IR_INPUT);
    ck_assert_int_eq(c->nodes[s->operand].op, IR_STATE);
    const char *wn[] = {"W_i", "W_f", "W_g", "W_o"}, *un[] = {"U_i", "U_f", "U_g", "U_o"};
    for (int b = 0; b < 4; b++) {
        ck_assert_str_eq(param_of(c, h->products[b]), wn[b]);
        ck_assert_str_eq(param_of(c, s->products[b]), un[b]);
    }
    /* nothing stored: everything between the GEMMs stays in registers */
    for (uint32_t i = 0; i < c->nnodes; i++) ck_assert(!p->node[i].stored);
    ck_assert_int_eq(p->nbuffers, 2);
    /* packed layout: [W_i; W_f; W_g; W_o] is weight_ih_l0 at offset 0, [U_*] weight_hh_l0 next */
    int64_t dv[2];
    dv[ir_find_dim(c, "I")] = 5; dv[ir_find_dim(c, "H")] = 7;
    Diags d; diag_init(&d, &a, "lstm", NULL, 0);
    const PlanLayout *L = sched_layout(&a, p, dv, &d);
    ck_assert_ptr_nonnull(L);
    for (int b = 0; b < 4; b++) {
        ck_assert_int_eq(L->param_offset[param_index(c, wn[b])], b * 7 * 5);
        ck_assert_int_eq(L->param_offset[param_index(c, un[b])], 144 + b * 7 * 7); /* 140 aligned up to 16 */
    }
    ck_assert_int_eq(L->gemm_rows[0], 28);
    ck_assert_int_eq(L->gemm_cols[0], 5);
    ck_assert_int_eq(L->gemm_cols[1], 7);
    arena_free(&a);
}
END_TEST

START_TEST(gru_plan) {
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_file(&a, "cells/gru.cell");
    const Plan *p = plan_of(&a, c);
    ck_assert_int_eq(count_gemms(p, SCHED_HOIST), 1);
    ck_assert_int_eq(count_gemms(p, SCHED_STEP), 1);
    ck_assert_int_eq(p->gemms[1].nproducts, 3);
    ck_assert_str_eq(param_of(c, p->gemms[1].products[2]), "U_n");
    /* r multiplies (U_n @ h + b_hn), not U_n @ (r * h): find mul(r, add(matvec U_n h, b_hn)) */
    int found = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (n->op != IR_MUL) continue;
        const IrNode *r = &c->nodes[n->args[0]], *s = &c->nodes[n->args[1]];
        if (!r->name || strcmp(r->name, "r") != 0 || s->op != IR_ADD) continue;
        const IrNode *mv = &c->nodes[s->args[0]], *b = &c->nodes[s->args[1]];
        if (mv->op == IR_MATVEC && strcmp(param_of(c, s->args[0]), "U_n") == 0 && b->op == IR_PARAM &&
            strcmp(c->params[b->index].name, "b_hn") == 0 && p->node[i].program == SCHED_STEP)
            found = 1;
    }
    ck_assert_msg(found, "gru's reset gate does not multiply U_n @ h + b_hn");
    arena_free(&a);
}
END_TEST

START_TEST(peephole_plan) {
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_file(&a, "cells/peephole.cell");
    const Plan *p = plan_of(&a, c);
    ck_assert_int_eq(count_gemms(p, SCHED_STEP), 1);
    ck_assert_int_eq(count_groups(p, SCHED_STEP), 1);
    IrRef cnext = c->states[1].next;
    ck_assert_str_eq(c->states[1].name, "c");
    /* the output gate's peephole reads the new cell state c', fused in the same kernel */
    int found = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (n->op == IR_MUL && c->nodes[n->args[0]].op == IR_PARAM &&
            strcmp(c->params[c->nodes[n->args[0]].index].name, "p_o") == 0) {
            ck_assert_uint_eq(n->args[1], cnext);
            ck_assert_int_eq(p->node[i].group, p->node[cnext].group);
            found = 1;
        }
    }
    ck_assert(found);
    arena_free(&a);
}
END_TEST

START_TEST(two_phase_plans) {
    const char *cells[] = {"cells/mlstm.cell", "cells/lstmp.cell", "cells/mgu.cell"};
    for (int i = 0; i < 3; i++) {
        Arena a; arena_init(&a);
        const Plan *p = plan_of(&a, cell_of_file(&a, cells[i]));
        ck_assert_msg(p->phases[SCHED_STEP] == 2, "%s: %d in-step GEMM phases", cells[i], p->phases[SCHED_STEP]);
        ck_assert_int_eq(count_gemms(p, SCHED_STEP), 2);
        arena_free(&a);
    }
}
END_TEST

START_TEST(elementwise_recurrences_have_no_step_gemm) {
    const char *cells[] = {"cells/indrnn.cell", "cells/sru.cell"};
    for (int i = 0; i < 2; i++) {
        Arena a; arena_init(&a);
        const Plan *p = plan_of(&a, cell_of_file(&a, cells[i]));
        ck_assert_int_eq(count_gemms(p, SCHED_STEP), 0);
        ck_assert_int_eq(p->phases[SCHED_STEP], 0);
        ck_assert_int_eq(count_groups(p, SCHED_STEP), 1);
        ck_assert_int_ge(count_gemms(p, SCHED_HOIST), 1);
        arena_free(&a);
    }
}
END_TEST

/* Every stack is contiguous, every item aligned, and no two parameters overlap. */
START_TEST(layouts_are_packed) {
    char **paths;
    int n = tu_list_cells(&paths);
    for (int f = 0; f < n; f++) {
        Arena a; arena_init(&a);
        const IrCell *c = cell_of_file(&a, paths[f]);
        const Plan *p = plan_of(&a, c);
        int64_t *dv = tu_alloc((size_t)c->ndims + 1, sizeof *dv);
        for (int d = 0; d < c->ndims; d++) dv[d] = c->dims[d].name ? 3 + d : c->dims[d].literal;
        Diags d; diag_init(&d, &a, c->name, NULL, 0);
        const PlanLayout *L = sched_layout(&a, p, dv, &d);
        ck_assert_ptr_nonnull(L);
        for (int j = 0; j < p->ngemms; j++) {
            const SchedGemm *g = &p->gemms[j];
            if (!g->stacked) continue;
            int k0 = c->nodes[c->nodes[g->products[0]].args[0]].index;
            ck_assert_int_eq(L->param_offset[k0] % SCHED_PACK_ALIGN, 0);
            for (int b = 1; b < g->nproducts; b++) {
                int kp = c->nodes[c->nodes[g->products[b - 1]].args[0]].index;
                int kb = c->nodes[c->nodes[g->products[b]].args[0]].index;
                ck_assert_int_eq(L->param_offset[kb], L->param_offset[kp] + L->param_rows[kp] * L->param_cols[kp]);
            }
        }
        for (int i = 0; i < c->nparams; i++) {
            int64_t si = L->param_offset[i], ei = si + L->param_rows[i] * L->param_cols[i];
            ck_assert(si >= 0 && ei <= L->packed_size);
            for (int k = 0; k < c->nparams; k++) {
                if (k == i) continue;
                int64_t sk = L->param_offset[k], ek = sk + L->param_rows[k] * L->param_cols[k];
                ck_assert_msg(ei <= sk || ek <= si, "%s: %s and %s overlap", paths[f], c->params[i].name, c->params[k].name);
            }
        }
        free(dv);
        arena_free(&a);
    }
    tu_free_list(paths, n);
}
END_TEST

START_TEST(layout_overflow_is_an_error) {
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_file(&a, "cells/lstm.cell");
    const Plan *p = plan_of(&a, c);
    int64_t dv[2] = {INT32_MAX, INT32_MAX};
    Diags d; diag_init(&d, &a, "lstm", NULL, 0);
    ck_assert_ptr_null(sched_layout(&a, p, dv, &d));
    ck_assert_int_eq(d.nerrors, 1);
    ck_assert_ptr_nonnull(strstr(d.head->msg, "overflows"));
    /* the bound is 2^59 elements (their bytes as doubles fit an int64_t): I = H = 2^28 packs 2^59 weights and
     * the biases past it; 2^27, a quarter of that, lays out */
    int64_t past[2] = {1 << 28, 1 << 28}, under[2] = {1 << 27, 1 << 27};
    Diags d2; diag_init(&d2, &a, "lstm", NULL, 0);
    ck_assert_ptr_null(sched_layout(&a, p, past, &d2));
    ck_assert_int_eq(d2.nerrors, 1);
    ck_assert_str_eq(d2.head->msg, "cell 'lstm': a size overflows with these dimensions");
    const PlanLayout *L = sched_layout(&a, p, under, &d2);
    ck_assert_ptr_nonnull(L);
    ck_assert_int_eq(d2.nerrors, 1);
    ck_assert(L->packed_size > ((int64_t)1 << 57) && L->packed_size < ((int64_t)1 << 59));
    arena_free(&a);
}
END_TEST

/* Plan.param_fold: a bias added straight to a sum of matvecs (through additions used once) takes
 * its gradient from a matvec's adjoint; any other use keeps its accumulator. */
START_TEST(biases_fold_into_gemm_adjoints) {
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_file(&a, "cells/gru.cell");
    const Plan *p = plan_of(&a, c);
    /* b_r, b_z, b_in: W_* @ x (hoisted G0); b_hn: U_hn @ h (step G1), inside r * (U_hn @ h + b_hn) */
    const char *bias[] = {"b_r", "b_z", "b_in", "b_hn"}, *product[] = {"W_r", "W_z", "W_n", "U_n"};
    for (int q = 0; q < 4; q++) {
        IrRef f = p->param_fold[param_index(c, bias[q])];
        ck_assert_msg(f != IR_NONE, "%s", bias[q]);
        ck_assert_str_eq(param_of(c, f), product[q]);
    }
    c = cell_of_text(&a, "cell t(x[I]) -> h {\n"
                         "    state h[H]\n"
                         "    param W[H, I], U[H, H], V[H, I], b1[H], b2[H], b3[H], b4[H], b5[H], b6[H]\n"
                         "    a = tanh(W @ x) + b1\n"          /* a function result: no matvec */
                         "    e = U @ h + b2 + b2\n"           /* used twice */
                         "    m = V @ x\n"
                         "    f = (m + b3) * (m + b4)\n"       /* the matvec used twice */
                         "    g = sigmoid(U @ h - b5)\n"       /* subtracted */
                         "    k = b6 * (W @ x)\n"              /* multiplied */
                         "    h' = a + e + f + g + k\n"
                         "}\n");
    p = plan_of(&a, c);
    const char *kept[] = {"b1", "b2", "b3", "b4", "b5", "b6"};
    for (int q = 0; q < 6; q++) ck_assert_msg(p->param_fold[param_index(c, kept[q])] == IR_NONE, "%s", kept[q]);
    c = cell_of_text(&a, "cell u(x[I]) -> h {\n"
                         "    state h[H], s[H]\n"
                         "    param W[H, I], V[H, I], M[H, I], U[H, H], b7[H], b8[H], b9[H]\n"
                         "    p = U @ h + V @ x\n"
                         "    q = p + b7\n"                    /* the sum p is used twice */
                         "    mv = W @ x\n"
                         "    s' = mv\n"                       /* the matvec is also a state's next value */
                         "    z = mv + b8\n"
                         "    m2 = M @ x\n"
                         "    h' = p * q + z + (b9 + (m2 + m2))\n" /* a sum of the matvec twice */
                         "}\n");
    p = plan_of(&a, c);
    const char *kept2[] = {"b7", "b8", "b9"};
    for (int q = 0; q < 3; q++) ck_assert_msg(p->param_fold[param_index(c, kept2[q])] == IR_NONE, "%s", kept2[q]);
    arena_free(&a);
}
END_TEST

START_TEST(product_of_parameters_is_an_error) {
    Arena a; arena_init(&a);
    const char *src = "cell c(x[H]) -> h {\n  state h[H]\n  param W[H, H], b[H]\n  h' = tanh(W @ b + W @ x + h)\n}\n";
    const IrCell *c = cell_of_text(&a, src);
    Diags d; diag_init(&d, &a, "test.cell", src, strlen(src));
    ck_assert_ptr_null(sched_plan(&a, c, &d));
    ck_assert_int_eq(d.nerrors, 1);
    ck_assert_int_eq(d.head->loc.line, 4);
    ck_assert_int_eq(d.head->loc.col, 15);
    ck_assert_ptr_nonnull(strstr(d.head->msg, "multiplies two parameters"));
    arena_free(&a);
}
END_TEST

/* ---- the executor against the reference ------------------------------------------------ */

/* Runs the plan executor and the reference on one random problem and compares everything. */
static void check_executor(const IrCell *c, const Plan *plan, Rng *rng, int64_t T, int64_t N, int varlen, int reverse) {
    Arena a; arena_init(&a);
    TuProblem tp;
    tu_problem(&tp, rng, c, T, N, 2, 6, varlen);
    Diags d; diag_init(&d, &a, c->name, NULL, 0);
    const PlanLayout *L = sched_layout(&a, plan, tp.dimval, &d);
    ck_assert_ptr_nonnull(L);
    double **y = tu_alloc_outputs(&tp), **hT = tu_alloc_states(&tp);
    double **yr = tu_alloc_outputs(&tp), **hr = tu_alloc_states(&tp);
    ck_assert_int_eq(sched_exec_forward(L, &tp.p, reverse, y, hT), 0);
    RefProblem rp = tp.p;
    int64_t I = ir_shape_numel(&c->inputs[0].shape, tp.dimval);
    double *xr = NULL;
    if (reverse) {
        xr = tu_alloc((size_t)(T * N * I), sizeof(double));
        ref_reverse_sequences(tp.x, xr, T, N, I, tp.lengths);
        rp.x = xr;
    }
    ck_assert_int_eq(ref_forward(&rp, yr, hr), 0);
    for (int o = 0; o < c->noutputs; o++) {
        int64_t D = tu_output_len(&tp, o), size = T * N * D;
        double *want = yr[o];
        double *tmp = NULL;
        if (reverse) {
            tmp = tu_alloc((size_t)size, sizeof(double));
            ref_reverse_sequences(yr[o], tmp, T, N, D, tp.lengths);
            want = tmp;
        }
        double e = tu_max_rel_err(y[o], want, (size_t)size, 1e-30);
        ck_assert_msg(e <= 1e-12, "%s output %s (varlen %d, reverse %d): relative error %g", c->name,
                      c->outputs[o].name, varlen, reverse, e);
        free(tmp);
    }
    for (int k = 0; k < c->nstates; k++) {
        double e = tu_max_rel_err(hT[k], hr[k], (size_t)(N * tu_state_len(&tp, k)), 1e-30);
        ck_assert_msg(e <= 1e-12, "%s final state %s (varlen %d, reverse %d): relative error %g", c->name,
                      c->states[k].name, varlen, reverse, e);
    }
    free(xr);
    tu_free_arrays(y, c->noutputs); tu_free_arrays(yr, c->noutputs);
    tu_free_arrays(hT, c->nstates); tu_free_arrays(hr, c->nstates);
    tu_problem_free(&tp);
    arena_free(&a);
}

static void check_all_modes(const IrCell *c, Rng *rng, unsigned flags) {
    Arena a; arena_init(&a);
    const Plan *plan = plan_opts(&a, c, flags);
    for (int varlen = 0; varlen <= 1; varlen++)
        for (int reverse = 0; reverse <= 1; reverse++) check_executor(c, plan, rng, 5, 3, varlen, reverse);
    check_executor(c, plan, rng, 1, 1, 0, 0); /* T = 1, N = 1 */
    arena_free(&a);
}

START_TEST(executor_matches_reference_for_every_cell) {
    char **paths;
    int n = tu_list_cells(&paths);
    Rng rng = {42};
    for (int f = 0; f < n; f++) {
        Arena a; arena_init(&a);
        const IrModule *m = tu_compile_file(&a, paths[f]);
        for (int i = 0; i < m->ncells; i++) check_all_modes(m->cells[i], &rng, 0);
        arena_free(&a);
    }
    tu_free_list(paths, n);
}
END_TEST

/* Cells that stress the plan: a weight used in two products, chained hoisted products,
 * an identity next state, an output that is a GEMM result of the new state. */
static const char *edge_cells[] = {
    "cell shared(x[H]) -> h {\n  state h[H]\n  param W[H, H], b[H]\n  h' = tanh(W @ x + W @ h + b)\n}\n",
    "cell chained(x[I]) -> h {\n  state h[H]\n  param W1[M, I], W2[H, M], U[H, H]\n"
    "  h' = tanh(W2 @ tanh(W1 @ x) + U @ h)\n}\n",
    "cell edge(x[I]) -> h, q {\n  state h[H], c[H]\n  param W[H, I], U[H, H], V[Q, H]\n"
    "  c' = c\n  h' = tanh(U @ h + W @ x) + c\n  q = V @ h'\n}\n",
    "cell input_mlp(x[I]) -> h {\n  state h[H]\n  param W[H, I], U[H, H], s[I]\n"
    "  h' = tanh(W @ (s * x) + U @ h) + sum0\n  sum0 = U @ (h * 2)\n}\n",
};

START_TEST(executor_on_edge_cells) {
    Rng rng = {7};
    for (size_t i = 0; i < sizeof edge_cells / sizeof *edge_cells; i++) {
        Arena a; arena_init(&a);
        const IrCell *c = cell_of_text(&a, edge_cells[i]);
        check_all_modes(c, &rng, 0);
        arena_free(&a);
    }
}
END_TEST

START_TEST(shared_weight_is_stacked_once) {
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_text(&a, edge_cells[0]);
    const Plan *p = plan_of(&a, c);
    ck_assert_int_eq(p->ngemms, 2);
    ck_assert(p->gemms[0].stacked);
    ck_assert(!p->gemms[1].stacked);
    ck_assert_int_eq(p->param_gemm[0], 0);
    arena_free(&a);
}
END_TEST

START_TEST(chained_hoisted_products) {
    Arena a; arena_init(&a);
    const Plan *p = plan_of(&a, cell_of_text(&a, edge_cells[1]));
    ck_assert_int_eq(p->phases[SCHED_HOIST], 2);
    ck_assert_int_eq(count_groups(p, SCHED_HOIST), 1);
    arena_free(&a);
}
END_TEST

/* The executor's backward against the reference's reverse-mode gradients (reverse: the
 * reference runs on reversed sequences, so dx and dy are reversed around it). */
static void check_backward(const IrCell *c, const Plan *plan, Rng *rng, int64_t T, int64_t N, int varlen, int reverse) {
    Arena a; arena_init(&a);
    TuProblem tp;
    tu_problem(&tp, rng, c, T, N, 2, 5, varlen);
    Diags d; diag_init(&d, &a, c->name, NULL, 0);
    const PlanLayout *L = sched_layout(&a, plan, tp.dimval, &d);
    ck_assert_ptr_nonnull(L);
    double **dy = tu_alloc_outputs(&tp), **dyr = tu_alloc_outputs(&tp), **dhT = tu_alloc_states(&tp);
    for (int o = 0; o < c->noutputs; o++) {
        int64_t D = tu_output_len(&tp, o);
        tu_fill(rng, dy[o], (size_t)(T * N * D), -1, 1);
        ref_reverse_sequences(dy[o], dyr[o], T, N, D, tp.lengths);
    }
    for (int k = 0; k < c->nstates; k++) tu_fill(rng, dhT[k], (size_t)(N * tu_state_len(&tp, k)), -1, 1);
    int64_t I = ir_shape_numel(&c->inputs[0].shape, tp.dimval);
    double *dx = tu_alloc((size_t)(T * N * I), sizeof(double)), *dxr = tu_alloc((size_t)(T * N * I), sizeof(double));
    double **dh0 = tu_alloc_states(&tp), **dh0r = tu_alloc_states(&tp);
    double **dp = tu_alloc((size_t)c->nparams + 1, sizeof *dp), **dpr = tu_alloc((size_t)c->nparams + 1, sizeof *dpr);
    for (int k = 0; k < c->nparams; k++) {
        size_t n = (size_t)ir_shape_numel(&c->params[k].shape, tp.dimval);
        dp[k] = tu_alloc(n, sizeof(double));
        dpr[k] = tu_alloc(n, sizeof(double));
    }
    ck_assert_int_eq(sched_exec_backward(L, &tp.p, reverse, (const double *const *)dy, (const double *const *)dhT, dx, dh0, dp), 0);
    RefProblem rp = tp.p;
    double *xr = NULL;
    if (reverse) {
        xr = tu_alloc((size_t)(T * N * I), sizeof(double));
        ref_reverse_sequences(tp.x, xr, T, N, I, tp.lengths);
        rp.x = xr;
    }
    ck_assert_int_eq(ref_backward(&rp, (const double *const *)(reverse ? dyr : dy), (const double *const *)dhT, dxr, dh0r, dpr), 0);
    if (reverse) tu_reverse_in_place(dxr, T, N, I, tp.lengths); /* the reference's dx is of the reversed input */
    /* relative to the largest gradient of each tensor: adjoints summed in another order */
    double e = tu_max_rel_err(dx, dxr, (size_t)(T * N * I), 1e-9);
    ck_assert_msg(e <= 1e-10, "%s dx (varlen %d, reverse %d): %g", c->name, varlen, reverse, e);
    for (int k = 0; k < c->nstates; k++) {
        e = tu_max_rel_err(dh0[k], dh0r[k], (size_t)(N * tu_state_len(&tp, k)), 1e-9);
        ck_assert_msg(e <= 1e-10, "%s dh0 %s (varlen %d, reverse %d): %g", c->name, c->states[k].name, varlen, reverse, e);
    }
    for (int k = 0; k < c->nparams; k++) {
        e = tu_max_rel_err(dp[k], dpr[k], (size_t)ir_shape_numel(&c->params[k].shape, tp.dimval), 1e-9);
        ck_assert_msg(e <= 1e-10, "%s d%s (varlen %d, reverse %d): %g", c->name, c->params[k].name, varlen, reverse, e);
    }
    free(xr); free(dx); free(dxr);
    tu_free_arrays(dy, c->noutputs); tu_free_arrays(dyr, c->noutputs); tu_free_arrays(dhT, c->nstates);
    tu_free_arrays(dh0, c->nstates); tu_free_arrays(dh0r, c->nstates);
    tu_free_arrays(dp, c->nparams); tu_free_arrays(dpr, c->nparams);
    tu_problem_free(&tp);
    arena_free(&a);
}

static void check_backward_all_modes(const IrCell *c, Rng *rng, unsigned flags) {
    Arena a; arena_init(&a);
    const Plan *plan = plan_opts(&a, c, flags);
    for (int varlen = 0; varlen <= 1; varlen++)
        for (int reverse = 0; reverse <= 1; reverse++) check_backward(c, plan, rng, 4, 3, varlen, reverse);
    check_backward(c, plan, rng, 1, 1, 0, 0);
    arena_free(&a);
}

START_TEST(executor_backward_matches_reference) {
    char **paths;
    int n = tu_list_cells(&paths);
    Rng rng = {99};
    for (int f = 0; f < n; f++) {
        Arena a; arena_init(&a);
        const IrModule *m = tu_compile_file(&a, paths[f]);
        for (int i = 0; i < m->ncells; i++) check_backward_all_modes(m->cells[i], &rng, 0);
        arena_free(&a);
    }
    tu_free_list(paths, n);
    for (size_t i = 0; i < sizeof edge_cells / sizeof *edge_cells; i++) {
        Arena a; arena_init(&a);
        check_backward_all_modes(cell_of_text(&a, edge_cells[i]), &rng, 0);
        arena_free(&a);
    }
}
END_TEST

/* Step work that no product waits for (a state updated from itself and the input alone, here n) joins the step's
 * last kernel: one fused kernel a step, not one before the product and one after; the executor still matches the
 * reference. */
START_TEST(independent_step_work_joins_the_last_kernel) {
    static const char src[] = "cell cn(x[I]) -> h, n {\n  state h[H], n[H]\n  param W[H, I], U[H, H], V[H, I]\n"
                              "  n' = tanh(n + V @ x)\n  h' = tanh(W @ x + U @ h) * n\n}\n";
    Arena a; arena_init(&a);
    const IrCell *c = cell_of_text(&a, src);
    const Plan *p = plan_of(&a, c);
    ck_assert_int_eq(p->phases[SCHED_STEP], 1);
    ck_assert_int_eq(count_gemms(p, SCHED_STEP), 1);
    ck_assert_int_eq(count_groups(p, SCHED_STEP), 1);
    Rng rng = {93};
    check_all_modes(c, &rng, 0);
    check_backward_all_modes(c, &rng, 0);
    arena_free(&a);
}
END_TEST

/* A stacked GEMM of literal row counts dumps their sum ("[32, 8]"), not the count beside the literal ("216"). */
START_TEST(dump_counts_literal_rows) {
    static const char src[] = "cell t(x[8]) -> h {\n  state h[16]\n  param W[16, 8], V[16, 8], U[16, 16], Z[16, 16]\n"
                              "  h' = tanh(W @ x + U @ h) * sigmoid(V @ x + Z @ h)\n}\n";
    Arena a; arena_init(&a);
    StrBuf out = {0};
    sched_dump(plan_of(&a, cell_of_text(&a, src)), NULL, &out);
    ck_assert_msg(strstr(sb_str(&out), "gemm G0: [W; V] @ x : [32, 8] x [8, T*N]") &&
                      strstr(sb_str(&out), "gemm G1: [U; Z] @ h : [32, 16] x [16, N]"), "%s", sb_str(&out));
    sb_free(&out);
    arena_free(&a);
}
END_TEST

/* A plan past the kernels' 32 buffers (runtime/rnn_args.h) is refused at the cell's name: emit wrote kernels
 * indexing buf[78] of a chain of 40 products, which only model creation refused. 15 products fit. */
static const char *product_chain(Arena *a, int n) {
    StrBuf sb = {0};
    sb_puts(&sb, "cell deep(x[I]) -> h {\n  state h[H]\n  param W0[H, I]\n");
    for (int i = 1; i < n; i++) sb_printf(&sb, "  param W%d[H, H]\n", i);
    sb_puts(&sb, "  v0 = tanh(W0 @ x + h)\n");
    for (int i = 1; i < n; i++) sb_printf(&sb, "  v%d = tanh(W%d @ v%d)\n", i, i, i - 1);
    sb_printf(&sb, "  h' = v%d\n}\n", n - 1);
    const char *text = arena_strdup(a, sb_str(&sb));
    sb_free(&sb);
    return text;
}

START_TEST(plans_hold_at_most_32_buffers) {
    Arena a; arena_init(&a);
    ck_assert_int_le(plan_of(&a, cell_of_text(&a, product_chain(&a, 15)))->nbuffers, SCHED_MAX_BUFFERS);
    const IrCell *c = cell_of_text(&a, product_chain(&a, 40));
    Diags d; diag_init(&d, &a, "deep.cell", NULL, 0);
    ck_assert_ptr_null(sched_plan(&a, c, &d));
    ck_assert_int_eq(d.nerrors, 1);
    ck_assert_str_eq(d.head->msg, "cell 'deep' needs 79 buffers for its products and stored values; the kernels hold at "
                                  "most 32 (fewer products of products, or of separate values, need fewer)");
    ck_assert_int_eq(d.head->loc.line, 1);
    ck_assert_int_eq(d.head->loc.col, 6);
    arena_free(&a);
}
END_TEST

/* Forty cells of tu_random_cell_wide's family (states of two sizes, products of products and of
 * the step's own results, gates with kinks, second outputs), none of which a test was written for:
 * the plan executor against the reference forward and backward, in every mode. */
START_TEST(executor_on_wide_random_cells) {
    Rng rng = {2026};
    char src[16384];
    for (uint64_t seed = 1; seed <= 40; seed++) {
        ck_assert_int_gt(tu_random_cell_wide(seed, src, sizeof src), 0);
        Arena a; arena_init(&a);
        const IrCell *c = cell_of_text(&a, src);
        check_all_modes(c, &rng, 0);
        check_backward_all_modes(c, &rng, 0);
        arena_free(&a);
    }
}
END_TEST

/* ---- the post program (SCHED_POST_PROGRAM) ------------------------------------------------------ */

/* Readouts: a product of the new state alone (ro); two outputs after the loop, one through a folded
 * bias, one through a chain of two products that also reads a hoisted product and multiplies by a
 * vector parameter, beside a state output (post); a post sum of a readout and a step product that
 * reads the state, the latter stacked with the step's own (post2); a weight multiplied in the step and
 * after it (reuse). */
static const char *const *post_cells = tu_post_cells;

/* Cells whose output-only products must stay in the step: one reads the state itself (two slots in
 * inference), one is multiplied by the state, one is read by a state's next value too. */
static const char *step_readouts[] = {
    "cell rs(x[I]) -> y {\n  state h[H]\n  param W[H, I], U[H, H], V[O, H]\n  h' = tanh(W @ x + U @ h)\n  y = V @ h\n}\n",
    "cell rm(x[I]) -> y {\n  state h[H]\n  param W[H, I], U[H, H], V[H, H]\n  h' = tanh(W @ x + U @ h)\n  y = (V @ h') * h\n}\n",
    "cell rf(x[I]) -> y {\n  state h[H], s[O]\n  param W[H, I], U[H, H], V[O, H]\n  h' = tanh(W @ x + U @ h)\n"
    "  y = V @ h'\n  s' = y\n}\n",
};

/* Whether a group of program prog writes output o. */
static int writes_output(const Plan *p, SchedProgram prog, int o) {
    for (int i = 0; i < p->ngroups; i++)
        for (int w = 0; p->groups[i].program == prog && w < p->groups[i].nwrites; w++)
            if (p->groups[i].writes[w].kind == WRITE_OUTPUT && p->groups[i].writes[w].index == o) return 1;
    return 0;
}

static int kept_buffers(const Plan *p) {
    int n = 0;
    for (int b = 0; b < p->nbuffers; b++) n += p->buffers[b].all_steps;
    return n;
}

START_TEST(post_program_plans) {
    Arena a; arena_init(&a);
    const IrCell *ro = cell_of_text(&a, post_cells[0]);
    const Plan *p = plan_opts(&a, ro, SCHED_POST_PROGRAM);
    ck_assert_int_eq(count_gemms(p, SCHED_STEP), 1);
    ck_assert_int_eq(p->phases[SCHED_STEP], 1);
    ck_assert_int_eq(count_gemms(p, SCHED_POST), 1);
    ck_assert_int_eq(p->phases[SCHED_POST], 1);
    ck_assert_int_eq(count_groups(p, SCHED_POST), 1);
    ck_assert(writes_output(p, SCHED_POST, 0) && !writes_output(p, SCHED_STEP, 0));
    const SchedGemm *g = &p->gemms[p->ngemms - 1];
    ck_assert(g->program == SCHED_POST && strcmp(param_of(ro, g->products[0]), "V") == 0);
    ck_assert_int_eq(p->buffers[g->out_buffer].program, SCHED_POST);
    const SchedNode *op = &p->node[g->operand]; /* h', stored by the step for every step */
    ck_assert(op->program == SCHED_STEP && op->stored && p->buffers[op->buffer].all_steps);
    ck_assert_int_eq(kept_buffers(p), 1);
    const Plan *old = plan_of(&a, ro); /* without the flag, today's plan: the readout a second step phase */
    ck_assert_int_eq(count_gemms(old, SCHED_POST) + count_groups(old, SCHED_POST) + kept_buffers(old), 0);
    ck_assert_int_eq(old->phases[SCHED_STEP], 2);

    const IrCell *post = cell_of_text(&a, post_cells[1]);
    p = plan_opts(&a, post, SCHED_POST_PROGRAM);
    ck_assert_int_eq(p->phases[SCHED_STEP], 1);
    ck_assert_int_eq(p->phases[SCHED_POST], 2); /* [V; Q] @ h', then R @ tanh(...) */
    ck_assert_int_eq(count_gemms(p, SCHED_POST), 2);
    ck_assert(writes_output(p, SCHED_POST, 0) && writes_output(p, SCHED_STEP, 1) && writes_output(p, SCHED_POST, 2));
    ck_assert_int_eq(p->param_gemm[param_index(post, "Q")], p->param_gemm[param_index(post, "V")]); /* stacked */
    IrRef fold = p->param_fold[param_index(post, "b")];
    ck_assert(fold != IR_NONE && p->node[fold].program == SCHED_POST); /* b's gradient: V @ h''s adjoint summed */

    const IrCell *post2 = cell_of_text(&a, post_cells[2]);
    p = plan_opts(&a, post2, SCHED_POST_PROGRAM);
    ck_assert_int_eq(count_gemms(p, SCHED_STEP), 1); /* [U; U2] @ h */
    ck_assert_int_eq(p->gemms[p->param_gemm[param_index(post2, "U2")]].program, SCHED_STEP);
    ck_assert(p->buffers[p->gemms[p->param_gemm[param_index(post2, "U2")]].out_buffer].all_steps);
    ck_assert_int_eq(kept_buffers(p), 2); /* the step GEMM's result and h' */

    const IrCell *reuse = cell_of_text(&a, post_cells[3]);
    p = plan_opts(&a, reuse, SCHED_POST_PROGRAM);
    ck_assert_int_eq(count_gemms(p, SCHED_POST), 1);
    ck_assert(!p->gemms[p->ngemms - 1].stacked); /* U's weights in place: stacked in the step's GEMM */

    for (size_t i = 0; i < sizeof step_readouts / sizeof *step_readouts; i++) {
        const Plan *q = plan_opts(&a, cell_of_text(&a, step_readouts[i]), SCHED_POST_PROGRAM);
        ck_assert_msg(count_gemms(q, SCHED_POST) + count_groups(q, SCHED_POST) + kept_buffers(q) == 0, "%s", step_readouts[i]);
        ck_assert_int_eq(q->phases[SCHED_POST], 0);
    }
    /* the shipped cells have no readout: their plans are the same with the flag */
    char **paths;
    int n = tu_list_cells(&paths);
    for (int f = 0; f < n; f++) {
        const IrModule *m = tu_compile_file(&a, paths[f]);
        for (int i = 0; i < m->ncells; i++) {
            StrBuf with = {0}, without = {0};
            sched_dump(plan_opts(&a, m->cells[i], SCHED_POST_PROGRAM), NULL, &with);
            sched_dump(plan_of(&a, m->cells[i]), NULL, &without);
            ck_assert_str_eq(sb_str(&with), sb_str(&without));
            sb_free(&with), sb_free(&without);
        }
    }
    tu_free_list(paths, n);
    arena_free(&a);
}
END_TEST

/* sched_post_copy: a post GEMM whose one product only a copy group takes to an output (ro's y = V @ h', reuse's
 * y = U @ h', post's z = R @ ...), which the runtime may have the GEMM write straight into the output
 * (rt_post_direct); not one of two products (post's [V; Q]) nor one that a group computes with (post2's tanh) nor
 * one that another GEMM multiplies (chain's y, which R @ y reads from its buffer). */
START_TEST(post_copies) {
    Arena a; arena_init(&a);
    const Plan *chain = plan_opts(&a, cell_of_text(&a, post_cells[4]), SCHED_POST_PROGRAM);
    int copies = 0, posts = 0;
    for (int j = 0, group, output; j < chain->ngemms; j++) {
        if (chain->gemms[j].program != SCHED_POST) continue;
        posts++;
        if (sched_post_copy(chain, j, &group, &output)) { /* R @ y's alone, into z */
            copies++;
            ck_assert_int_eq(output, 1);
            ck_assert_str_eq(param_of(chain->cell, chain->gemms[j].products[0]), "R");
        }
    }
    ck_assert_int_eq(posts, 2);
    ck_assert_int_eq(copies, 1);
    const struct { int cell; const char *param; int copy, output; } want[] = {
        {0, "V", 1, 0}, {3, "U", 1, 1}, {1, "R", 1, 2}, {1, "V", 0, 0}, {2, "V", 0, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const IrCell *c = cell_of_text(&a, post_cells[want[i].cell]);
        const Plan *p = plan_opts(&a, c, SCHED_POST_PROGRAM);
        int j = -1;
        for (int k = 0; k < p->ngemms; k++)
            if (p->gemms[k].program == SCHED_POST)
                for (int q = 0; q < p->gemms[k].nproducts; q++)
                    if (strcmp(param_of(c, p->gemms[k].products[q]), want[i].param) == 0) j = k;
        ck_assert_msg(j >= 0, "%s: no post GEMM of %s", c->name, want[i].param);
        int group = -1, output = -1;
        ck_assert_int_eq(sched_post_copy(p, j, &group, &output), want[i].copy);
        if (!want[i].copy) continue;
        ck_assert_int_eq(output, want[i].output);
        ck_assert_int_eq(p->groups[group].program, SCHED_POST);
        ck_assert_int_eq(p->groups[group].nnodes, 0);
    }
    const Plan *ro = plan_opts(&a, cell_of_text(&a, post_cells[0]), SCHED_POST_PROGRAM);
    for (int j = 0, group, output; j < ro->ngemms; j++) /* the step's GEMM: never */
        if (ro->gemms[j].program != SCHED_POST) ck_assert(!sched_post_copy(ro, j, &group, &output));
    arena_free(&a);
}
END_TEST

/* sched_input_gemm: every shipped cell reads its input through one hoisted GEMM alone (the runtime's backward then
 * lets that GEMM's product set the input's adjoint, with no memset before it); a cell that also reads the input
 * element-wise (adds it, or gates it) has none. */
START_TEST(input_read_by_one_gemm) {
    Arena a; arena_init(&a);
    const char *cells[] = {"cells/lstm.cell", "cells/gru.cell", "cells/peephole.cell", "cells/mlstm.cell", "cells/lstmp.cell",
                           "cells/mgu.cell", "cells/cifg.cell", "cells/indrnn.cell", "cells/sru.cell"};
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) {
        const Plan *p = plan_opts(&a, cell_of_file(&a, cells[i]), SCHED_POST_PROGRAM);
        int j = sched_input_gemm(p);
        ck_assert_msg(j >= 0, "%s: no GEMM reads the input alone", cells[i]);
        ck_assert_int_eq(p->gemms[j].program, SCHED_HOIST);
        ck_assert_int_eq(p->cell->nodes[p->gemms[j].operand].op, IR_INPUT);
    }
    const char *none[] = {
        "cell skip(x[H]) -> h {\n state h[H]\n param W[H, H], U[H, H]\n h' = tanh(W @ x + U @ h) + x\n}\n",
        "cell gate(x[H]) -> h {\n state h[H]\n param W[H, H], U[H, H]\n h' = sigmoid(U @ h) * x + W @ x\n}\n",
    };
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        const Plan *p = plan_opts(&a, cell_of_text(&a, none[i]), SCHED_POST_PROGRAM);
        ck_assert_msg(sched_input_gemm(p) == -1, "%s: a GEMM said to read the input alone", p->cell->name);
    }
    arena_free(&a);
}
END_TEST

/* The post program's dump: its own section, the kept buffer marked, the header's count. */
START_TEST(post_program_dump) {
    Arena a; arena_init(&a);
    const Plan *p = plan_opts(&a, cell_of_text(&a, post_cells[0]), SCHED_POST_PROGRAM);
    StrBuf out = {0};
    sched_dump(p, NULL, &out);
    const char *t = sb_str(&out);
    ck_assert_msg(strstr(t, "cell ro: 1 recurrent GEMM and 1 fused kernel per step, 1 GEMM phase; 1 GEMM phase after the loop\n"), "%s", t);
    ck_assert_msg(strstr(t, "  post (once per layer after the step loop, over all T*N step columns):\n"
                            "    gemm G2: [V] @ h' : [O, H] x [H, T*N] -> B2\n"
                            "    kernel P1: 0 ops\n"
                            "      reads: y (G2 block 0)\n"
                            "      writes: output y = y\n"
                            "      (a copy: G2 writes output y itself in the forward direction with no lengths, and in the "
                            "last layer's backward takes dy as its adjoint)\n"), "%s", t);
    ck_assert_msg(strstr(t, "B3: [T*N, value h'] (every step: the post program reads it)\n"), "%s", t);
    sb_free(&out);
    sched_dump(plan_opts(&a, cell_of_text(&a, post_cells[2]), SCHED_POST_PROGRAM), NULL, &out); /* post2: computes */
    ck_assert_msg(!strstr(sb_str(&out), "(a copy"), "%s", sb_str(&out));
    sb_free(&out);
    sched_dump_dot(p, &out);
    ck_assert_msg(strstr(sb_str(&out), "post GEMM G2") && strstr(sb_str(&out), "  G2 -> P1;\n"), "%s", sb_str(&out));
    sb_free(&out);
    arena_free(&a);
}
END_TEST

/* The executor runs post plans: forward and backward against the reference in every mode, for the
 * cells above, the edge cells (edge's q = V @ h' leaves the step) and the forty wide random cells (a
 * quarter of them have a readout). */
START_TEST(executor_runs_post_programs) {
    Rng rng = {58};
    int posts = 0;
    for (size_t i = 0; i < TU_NPOST_CELLS + sizeof edge_cells / sizeof *edge_cells; i++) {
        Arena a; arena_init(&a);
        size_t np = TU_NPOST_CELLS;
        const IrCell *c = cell_of_text(&a, i < np ? post_cells[i] : edge_cells[i - np]);
        check_all_modes(c, &rng, SCHED_POST_PROGRAM);
        check_backward_all_modes(c, &rng, SCHED_POST_PROGRAM);
        posts += count_gemms(plan_opts(&a, c, SCHED_POST_PROGRAM), SCHED_POST) > 0;
        arena_free(&a);
    }
    ck_assert_int_eq(posts, TU_NPOST_CELLS + 1); /* the post cells and edge */
    char src[16384];
    posts = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        ck_assert_int_gt(tu_random_cell_wide(seed, src, sizeof src), 0);
        Arena a; arena_init(&a);
        const IrCell *c = cell_of_text(&a, src);
        check_all_modes(c, &rng, SCHED_POST_PROGRAM);
        check_backward_all_modes(c, &rng, SCHED_POST_PROGRAM);
        posts += count_gemms(plan_opts(&a, c, SCHED_POST_PROGRAM), SCHED_POST) > 0;
        arena_free(&a);
    }
    ck_assert_int_ge(posts, 8); /* not vacuous */
}
END_TEST

/* ---- golden plan dumps -------------------------------------------------------------------- */

START_TEST(plan_dumps_match_golden) {
    char **paths;
    int n = tu_list_cells(&paths);
    for (int f = 0; f < n; f++) {
        Arena a; arena_init(&a);
        const IrModule *m = tu_compile_file(&a, paths[f]);
        StrBuf out = {0};
        for (int i = 0; i < m->ncells; i++) {
            if (i) sb_putc(&out, '\n');
            sched_dump(plan_of(&a, m->cells[i]), NULL, &out);
        }
        char golden[256];
        const char *base = strrchr(paths[f], '/') + 1;
        snprintf(golden, sizeof golden, "tests/golden/%.*s.plan", (int)(strlen(base) - 5), base);
        char *want = tu_read_file(golden, NULL);
        ck_assert_msg(strcmp(sb_str(&out), want) == 0, "%s differs from %s (make golden-update, then review)", paths[f], golden);
        free(want);
        sb_free(&out);
        arena_free(&a);
    }
    tu_free_list(paths, n);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lstm_plan);
    tcase_add_test(tc, gru_plan);
    tcase_add_test(tc, peephole_plan);
    tcase_add_test(tc, two_phase_plans);
    tcase_add_test(tc, elementwise_recurrences_have_no_step_gemm);
    tcase_add_test(tc, layouts_are_packed);
    tcase_add_test(tc, layout_overflow_is_an_error);
    tcase_add_test(tc, product_of_parameters_is_an_error);
    tcase_add_test(tc, biases_fold_into_gemm_adjoints);
    tcase_add_test(tc, shared_weight_is_stacked_once);
    tcase_add_test(tc, chained_hoisted_products);
    tcase_add_test(tc, executor_matches_reference_for_every_cell);
    tcase_add_test(tc, executor_on_edge_cells);
    tcase_add_test(tc, post_program_plans);
    tcase_add_test(tc, post_copies);
    tcase_add_test(tc, input_read_by_one_gemm);
    tcase_add_test(tc, post_program_dump);
    tcase_add_test(tc, executor_runs_post_programs);
    tcase_add_test(tc, executor_backward_matches_reference);
    tcase_add_test(tc, executor_on_wide_random_cells);
    tcase_add_test(tc, independent_step_work_joins_the_last_kernel);
    tcase_add_test(tc, dump_counts_literal_rows);
    tcase_add_test(tc, plans_hold_at_most_32_buffers);
    tcase_add_test(tc, plan_dumps_match_golden);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
