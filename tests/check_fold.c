/* Tests for the projection fold (ir/fold_projection.c): which cells fold and why the others do not,
 * the folded cell's tables and plan (LSTMP's step loses its second phase; the projection runs after
 * the loop), its golden dump, and its numbers against the user's cell in the double reference.
 * Key idea: with the folded state's initial value zero, the folded cell with V_k = U_k P computed
 * here is the user's cell exactly: outputs, final states (the folded one as P z_T), and every
 * gradient once dV_k is mapped back (dU_k += dV_k P^T, dP += sum U_k^T dV_k + dhT z_T^T). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "../codegen/emit.h"
#include "../ir/fold_exec.h"
#include "../ir/fold_projection.h"
#include "../ir/fold_rule.h"
#include "../ir/sched.h"
#include "../runtime/rt_nvrtc.h"
#include "testutil.h"

static const IrCell *cell_of_text(Arena *a, const char *text) {
    return tu_compile(a, "test.cell", arena_strdup(a, text), strlen(text))->cells[0];
}

static Plan *plan_of(Arena *a, const IrCell *c) {
    Diags d;
    diag_init(&d, a, c->name, NULL, 0);
    Plan *p = sched_plan(a, c, &d);
    ck_assert_msg(p != NULL, "cell %s did not schedule", c->name);
    return p;
}

/* ---- which cells fold ------------------------------------------------------------ */

/* LSTMP as written (*user) and folded: the folded cell, asserted to exist, with fold filled. */
static const IrCell *lstmp_folded(Arena *a, IrFold *fold, const IrCell **user) {
    *user = tu_compile_file(a, "cells/lstmp.cell")->cells[0];
    const IrCell *c = ir_fold_projection(a, *user, fold);
    ck_assert_msg(c != NULL, "lstmp does not fold: %s", fold->why_not);
    return c;
}


START_TEST(lstmp_folds) {
    Arena a; arena_init(&a);
    const IrCell *u;
    IrFold f;
    const IrCell *c = lstmp_folded(&a, &f, &u);
    ck_assert_int_eq(f.state, 0);
    ck_assert_str_eq(u->params[f.proj].name, "P_h");
    ck_assert_int_eq(f.nderived, 4);
    const char *from[4] = {"U_i", "U_f", "U_g", "U_o"};
    for (int k = 0; k < 4; k++) {
        ck_assert_str_eq(u->params[f.derived_from[k]].name, from[k]);
        const IrVar *v = &c->params[u->nparams + k];
        ck_assert_int_eq(v->shape.kind, IR_MATRIX);
        ck_assert_int_eq(v->shape.dims[0], u->params[f.derived_from[k]].shape.dims[0]);
        ck_assert_int_eq(v->shape.dims[1], u->params[f.proj].shape.dims[1]);
    }
    /* the state is the projection's operand, H units; the output h is the projection, read by nothing else */
    ck_assert_str_eq(c->states[0].name, "h_fold");
    ck_assert_int_eq(c->states[0].shape.dims[0], u->params[f.proj].shape.dims[1]);
    ck_assert_uint_eq(c->outputs[0].node, f.projected);
    ck_assert_int_eq(c->nodes[f.projected].op, IR_MATVEC);
    ck_assert_uint_eq(c->nodes[f.projected].args[1], c->states[0].next);
    for (uint32_t i = 0; i < c->nnodes; i++)
        for (int j = 0; j < ir_ops[c->nodes[i].op].arity; j++) {
            ck_assert_uint_lt(c->nodes[i].args[j], i); /* still topological */
            ck_assert_uint_ne(c->nodes[i].args[j], f.projected);
        }
    /* one phase a step, the projection after the loop */
    const Plan *pu = plan_of(&a, u), *pc = plan_of(&a, c);
    ck_assert_int_eq(pu->phases[SCHED_STEP], 2);
    ck_assert_int_eq(pc->phases[SCHED_STEP], 1);
    ck_assert_int_eq(pc->node[f.projected].program, SCHED_POST);
    /* as a post GEMM's product, at every step: the runtime takes the user's final state from its last column
     * (rt_fold_final) */
    ck_assert_int_ge(pc->node[f.projected].gemm, 0);
    ck_assert_int_eq(pc->gemms[pc->node[f.projected].gemm].program, SCHED_POST);
    int group, output; /* which only a copy takes to the output: the GEMM may write y itself (rt_post_direct) */
    ck_assert(sched_post_copy(pc, pc->node[f.projected].gemm, &group, &output));
    ck_assert_int_eq(output, 0);
    /* its operand, every step's z, is kept with its 16-bit twin, which the step kernel writes (cg_value_twinned) */
    const int zb = pc->node[pc->gemms[pc->node[f.projected].gemm].operand].buffer;
    ck_assert_int_ge(zb, 0);
    ck_assert(pc->buffers[zb].all_steps);
    for (int b = 0; b < pc->nbuffers; b++) ck_assert_int_eq(cg_value_twinned(pc, b), b == zb);
    arena_free(&a);
}
END_TEST

/* Cells that must not fold, with the reason each gets. */
START_TEST(refusals_say_why) {
    static const struct { const char *src, *why; } cases[] = {
        {"cell a(x[I]) -> h {\n state h[H]\n param W[H, I], U[H, H]\n h' = tanh(W @ x + U @ h)\n}\n",
         "no state's next value is a matrix product"},
        {"cell c(x[I]) -> h {\n state h[P]\n param W[H, I], U[H, P], Q[P, H]\n"
         " h' = Q @ tanh(W @ x + U @ h) + h\n}\n", "no state's next value is a matrix product"},
        {"cell d(x[I]) -> h {\n state h[P]\n param W[P, I], Q[P, P]\n h' = Q @ tanh(W @ x + h)\n}\n",
         "the state is read other than as a matrix product's operand"},
        {"cell f(x[I]) -> h, y {\n state h[P], s[P]\n param W[H, I], U[H, P], Q[P, H], R[P, P]\n"
         " s' = tanh(R @ h')\n h' = Q @ tanh(W @ x + U @ h)\n y = s'\n}\n",
         "the state's next value is read within the step"},
        {"cell g(x[I]) -> h {\n state h[P]\n param Q[P, P]\n h' = Q @ tanh(h)\n}\n",
         "the state is read other than as a matrix product's operand"},
        {"cell k(x[I]) -> h {\n state h[P]\n param W[H, I], Q[P, H]\n h' = Q @ tanh(W @ x)\n}\n",
         "the state is never multiplied"},
        {"cell m(x[I]) -> h {\n state h[P]\n param Q[P, P], W[P, I]\n h' = Q @ h + W @ x\n}\n",
         "no state's next value is a matrix product"},
        {"cell n(x[I]) -> h {\n state h[P]\n param Q[P, P]\n h' = Q @ h\n}\n",
         "the state's next value multiplies the state itself"},
        /* another state's next value is h itself (as written, g takes h's [P] value; folded it would take z's) */
        {"cell g(x[I]) -> c {\n state h[P], g[P], c[H]\n param W[H, I], U[H, P], Q[P, H]\n"
         " c' = tanh(W @ x + U @ h)\n h' = Q @ c'\n g' = h\n}\n",
         "the state is read other than as a matrix product's operand"},
    };
    Arena a; arena_init(&a);
    int checked = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        IrFold f;
        const IrCell *c = ir_fold_projection(&a, cell_of_text(&a, cases[i].src), &f);
        ck_assert_msg(c == NULL, "case %zu folded", i);
        ck_assert_msg(f.why_not && strcmp(f.why_not, cases[i].why) == 0, "case %zu: '%s', expected '%s'", i,
                      f.why_not ? f.why_not : "(none)", cases[i].why);
        checked++;
    }
    ck_assert_int_eq(checked, 9);
    /* the shipped cells other than lstmp keep their state as it is */
    char **paths;
    int n = tu_list_cells(&paths), folded = 0;
    for (int i = 0; i < n; i++) {
        IrFold f;
        folded += ir_fold_projection(&a, tu_compile_file(&a, paths[i])->cells[0], &f) != NULL;
    }
    tu_free_list(paths, n);
    ck_assert_int_eq(folded, 1);
    arena_free(&a);
}
END_TEST

/* `rnncc dump --fold --schedule cells/lstmp.cell` (the describe line and the plan, packed as the cell as
 * written), as the golden file has it. */
START_TEST(lstmp_fold_dump_matches_golden) {
    Arena a; arena_init(&a);
    const IrCell *u;
    IrFold f;
    const IrCell *c = lstmp_folded(&a, &f, &u);
    StrBuf out = {0};
    ir_fold_describe(&f, c, &out);
    Plan *pc = plan_of(&a, c);
    ck_assert(ir_fold_pack_like(&a, pc, plan_of(&a, u), &f)); /* as the CLI and the runtime pack it */
    sched_dump(pc, NULL, &out);
    size_t len;
    char *golden = tu_read_file("tests/golden/lstmp.fold", &len);
    ck_assert_msg(golden != NULL, "cannot open tests/golden/lstmp.fold ('make golden-update' writes it)");
    ck_assert_msg(strcmp(sb_str(&out), golden) == 0, "the folded plan differs from tests/golden/lstmp.fold:\n%s", sb_str(&out));
    free(golden);
    sb_free(&out);
    arena_free(&a);
}
END_TEST

/* ---- numbers against the user's cell ------------------------------------------------ */

/* out[r][c] = sum_k a[r][k] b[k][c] (ta: a stored [k][r]; tb: b stored [c][k]), added when add; the test's own,
 * beside ir/fold_exec.c's, so that this check of the rewrite shares no code with the executor it checks */
static void matmul(double *out, const double *a, const double *b, int64_t R, int64_t K, int64_t C, int ta, int tb, int add) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t col = 0; col < C; col++) {
            double s = add ? out[r * C + col] : 0;
            for (int64_t k = 0; k < K; k++) s += (ta ? a[k * R + r] : a[r * K + k]) * (tb ? b[col * K + k] : b[k * C + col]);
            out[r * C + col] = s;
        }
}

/* Worst relative error of the fold against the user's cell, forward and backward, on one random problem. */
static double fold_error(const IrCell *u, uint64_t seed, int64_t T, int64_t N, int varlen, char *what, size_t wsize) {
    Arena a; arena_init(&a);
    IrFold f;
    const IrCell *c = ir_fold_projection(&a, u, &f);
    ck_assert_msg(c != NULL, "%s does not fold: %s", u->name, f.why_not);
    Rng r = {seed};
    TuProblem tp;
    tu_problem(&tp, &r, u, T, N, 2, 5, varlen);
    const int s = f.state;
    const IrVar *P = &u->params[f.proj];
    const int64_t Ps = tp.dimval[P->shape.dims[0]], Hs = tp.dimval[P->shape.dims[1]];
    memset(tp.h0[s], 0, (size_t)(N * Ps) * sizeof(double)); /* the entry of a nonzero h0 is the runtime's */

    /* the folded problem: V_k = U_k P appended, the folded state from zero */
    const double **params = tu_alloc((size_t)c->nparams, sizeof *params);
    double **V = tu_alloc((size_t)f.nderived + 1, sizeof *V);
    for (int p = 0; p < u->nparams; p++) params[p] = tp.params[p];
    for (int k = 0; k < f.nderived; k++) {
        int64_t R = tp.dimval[u->params[f.derived_from[k]].shape.dims[0]];
        V[k] = tu_alloc((size_t)(R * Hs), sizeof(double));
        matmul(V[k], tp.params[f.derived_from[k]], tp.params[f.proj], R, Ps, Hs, 0, 0, 0);
        params[u->nparams + k] = V[k];
    }
    const double **h0 = tu_alloc((size_t)u->nstates, sizeof *h0);
    for (int k = 0; k < u->nstates; k++) h0[k] = k == s ? NULL : tp.h0[k];
    RefProblem fp = {c, tp.dimval, T, N, tp.lengths, tp.x, h0, params};

    /* forward: outputs, final states (the folded one through P) */
    double **yu = tu_alloc_outputs(&tp), **yf = tu_alloc_outputs(&tp), **hu = tu_alloc_states(&tp);
    double **hf = tu_alloc((size_t)u->nstates, sizeof *hf);
    for (int k = 0; k < u->nstates; k++) hf[k] = tu_alloc((size_t)(N * (k == s ? Hs : tu_state_len(&tp, k))), sizeof(double));
    ck_assert_int_eq(ref_forward(&tp.p, yu, hu), 0);
    ck_assert_int_eq(ref_forward(&fp, yf, hf), 0);
    double worst = 0, e;
#define WORSE(label, ...) do { if ((e = (__VA_ARGS__)) > worst) { worst = e; snprintf(what, wsize, "%s", label); } } while (0)
    for (int o = 0; o < u->noutputs; o++) WORSE("an output", tu_max_rel_err(yf[o], yu[o], (size_t)(T * N * tu_output_len(&tp, o)), 1e-3));
    double *hTs = tu_alloc((size_t)(N * Ps), sizeof(double));
    matmul(hTs, hf[s], tp.params[f.proj], N, Hs, Ps, 0, 1, 0); /* [N][Ps] = z_T P^T */
    for (int k = 0; k < u->nstates; k++)
        WORSE("a final state", tu_max_rel_err(k == s ? hTs : hf[k], hu[k], (size_t)(N * tu_state_len(&tp, k)), 1e-3));

    /* backward: random dy and dhT; the folded state's dhT enters as P^T dhT */
    double **dy = tu_alloc_outputs(&tp), **dhT = tu_alloc_states(&tp);
    for (int o = 0; o < u->noutputs; o++) tu_fill(&r, dy[o], (size_t)(T * N * tu_output_len(&tp, o)), -1, 1);
    for (int k = 0; k < u->nstates; k++) tu_fill(&r, dhT[k], (size_t)(N * tu_state_len(&tp, k)), -1, 1);
    double **dhTf = tu_alloc((size_t)u->nstates, sizeof *dhTf);
    for (int k = 0; k < u->nstates; k++) dhTf[k] = k == s ? tu_alloc((size_t)(N * Hs), sizeof(double)) : dhT[k];
    matmul(dhTf[s], dhT[s], tp.params[f.proj], N, Ps, Hs, 0, 0, 0); /* [N][Hs] = dhT P */
    int64_t I = tp.dimval[u->inputs[0].shape.dims[0]];
    double *dxu = tu_alloc((size_t)(T * N * I), sizeof(double)), *dxf = tu_alloc((size_t)(T * N * I), sizeof(double));
    double **dh0u = tu_alloc_states(&tp), **dh0f = tu_alloc((size_t)u->nstates, sizeof *dh0f);
    for (int k = 0; k < u->nstates; k++) dh0f[k] = k == s ? NULL : tu_alloc((size_t)(N * tu_state_len(&tp, k)), sizeof(double));
    double **dpu = tu_alloc((size_t)u->nparams, sizeof *dpu), **dpf = tu_alloc((size_t)c->nparams, sizeof *dpf);
    for (int p = 0; p < c->nparams; p++) {
        int64_t rows = tp.dimval[c->params[p].shape.dims[0]];
        int64_t cols = c->params[p].shape.kind == IR_MATRIX ? tp.dimval[c->params[p].shape.dims[1]] : 1;
        dpf[p] = tu_alloc((size_t)(rows * cols), sizeof(double));
        if (p < u->nparams) dpu[p] = tu_alloc((size_t)(rows * cols), sizeof(double));
    }
    ck_assert_int_eq(ref_backward(&tp.p, (const double *const *)dy, (const double *const *)dhT, dxu, dh0u, dpu), 0);
    ck_assert_int_eq(ref_backward(&fp, (const double *const *)dy, (const double *const *)dhTf, dxf, dh0f, dpf), 0);
    WORSE("dx", tu_max_rel_err(dxf, dxu, (size_t)(T * N * I), 1e-3));
    for (int k = 0; k < u->nstates; k++)
        if (k != s) WORSE("an unfolded state's dh0", tu_max_rel_err(dh0f[k], dh0u[k], (size_t)(N * tu_state_len(&tp, k)), 1e-3));
    /* the user's gradients from the fold's: dU_k += dV_k P^T, dP += U_k^T dV_k and dhT^T z_T */
    for (int k = 0; k < f.nderived; k++) {
        int uk = f.derived_from[k];
        int64_t R = tp.dimval[u->params[uk].shape.dims[0]];
        matmul(dpf[uk], dpf[u->nparams + k], tp.params[f.proj], R, Hs, Ps, 0, 1, 1);
        matmul(dpf[f.proj], tp.params[uk], dpf[u->nparams + k], Ps, R, Hs, 1, 0, 1);
    }
    matmul(dpf[f.proj], dhT[s], hf[s], Ps, N, Hs, 1, 0, 1);
    for (int p = 0; p < u->nparams; p++) {
        int64_t rows = tp.dimval[u->params[p].shape.dims[0]];
        int64_t cols = u->params[p].shape.kind == IR_MATRIX ? tp.dimval[u->params[p].shape.dims[1]] : 1;
        char label[96];
        snprintf(label, sizeof label, "d%s", u->params[p].name);
        WORSE(label, tu_max_rel_err(dpf[p], dpu[p], (size_t)(rows * cols), 1e-3));
    }
#undef WORSE
    for (int p = 0; p < c->nparams; p++) free(dpf[p]);
    for (int p = 0; p < u->nparams; p++) free(dpu[p]);
    free(dpf), free(dpu);
    tu_free_arrays(dh0u, u->nstates);
    for (int k = 0; k < u->nstates; k++) free(dh0f[k]);
    free(dh0f), free(dxu), free(dxf), free(dhTf[s]), free(dhTf);
    tu_free_arrays(dy, u->noutputs), tu_free_arrays(dhT, u->nstates);
    free(hTs);
    tu_free_arrays(yu, u->noutputs), tu_free_arrays(yf, u->noutputs), tu_free_arrays(hu, u->nstates);
    tu_free_arrays(hf, u->nstates);
    tu_free_arrays(V, f.nderived);
    free(params), free(h0);
    tu_problem_free(&tp);
    arena_free(&a);
    return worst;
}

START_TEST(lstmp_fold_matches_reference) {
    Arena a; arena_init(&a);
    const IrCell *u = tu_compile_file(&a, "cells/lstmp.cell")->cells[0];
    const int64_t shapes[][2] = {{5, 3}, {1, 1}, {7, 1}, {0, 2}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int varlen = 0; varlen < 2; varlen++) {
            char what[96] = "";
            double e = fold_error(u, 11 + i, shapes[i][0], shapes[i][1], varlen, what, sizeof what);
            ck_assert_msg(e < 1e-11, "lstmp T=%lld N=%lld varlen %d: %s error %g", (long long)shapes[i][0],
                          (long long)shapes[i][1], varlen, what, e);
        }
    arena_free(&a);
}
END_TEST

/* The wide random family's cells whose s' is a product of the step's new h (LSTMP's shape, with gates,
 * peepholes and readouts around it): each that folds plans with the projection after the loop and
 * matches its user cell. */
START_TEST(wide_random_folds_match_reference) {
    int folds = 0, refused = 0;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        Arena a; arena_init(&a);
        char src[4096];
        ck_assert_int_gt(tu_random_cell_wide(seed, src, sizeof src), 0);
        const IrCell *u = cell_of_text(&a, src);
        IrFold f;
        const IrCell *c = ir_fold_projection(&a, u, &f);
        if (!c) {
            refused++;
            arena_free(&a);
            continue;
        }
        folds++;
        const Plan *pu = plan_of(&a, u), *pc = plan_of(&a, c);
        ck_assert_msg(pc->phases[SCHED_STEP] <= pu->phases[SCHED_STEP], "wide%llu: %d step phases folded, %d as written",
                      (unsigned long long)seed, pc->phases[SCHED_STEP], pu->phases[SCHED_STEP]);
        if (f.projected != IR_NONE) ck_assert_int_eq(pc->node[f.projected].program, SCHED_POST);
        char what[96] = "";
        double e = fold_error(u, seed, 4, 3, (int)(seed & 1), what, sizeof what);
        ck_assert_msg(e < 1e-10, "wide%llu: %s error %g\n%s", (unsigned long long)seed, what, e, src);
        arena_free(&a);
    }
    ck_assert_msg(folds >= 10 && refused >= 10, "%d of 120 wide cells fold, %d do not: the family no longer covers both",
                  folds, refused);
}
END_TEST

/* A projection no output reads is dropped from the folded cell (the user's final state is then P z_T, which the
 * runtime forms from z's last value): LSTMP emitting c runs no product after the loop, a cell whose projection
 * multiplies the old c (h' = P_h @ c) none in the step, and one whose projection is of the input alone none in the
 * hoisted program; each still matches its user cell, final states and gradients included. */
START_TEST(unread_projection_is_dropped) {
    static const char *const cells[] = {
        "cell lc(x[I]) -> c {\n state h[P], c[H]\n param W_i[H, I], W_f[H, I], U_i[H, P], U_f[H, P], P_h[P, H]\n"
        " i = sigmoid(W_i @ x + U_i @ h)\n f = sigmoid(W_f @ x + U_f @ h)\n c' = f * c + i\n h' = P_h @ tanh(c')\n}\n",
        "cell hc(x[I]) -> y {\n state h[P], c[H]\n param W_i[H, I], U_i[H, P], P_h[P, H]\n"
        " c' = tanh(W_i @ x + U_i @ h)\n h' = P_h @ c\n y = tanh(c')\n}\n",
        "cell hh(x[I]) -> y {\n state h[P]\n param W_i[H, I], U_i[H, P], P_h[P, H], W_h[H, I]\n"
        " y = tanh(W_i @ x + U_i @ h)\n h' = P_h @ tanh(W_h @ x)\n}\n",
    };
    static const int gemms[] = {2, 2, 2}; /* the user's W and U products; P_h's product no more */
    for (size_t k = 0; k < sizeof cells / sizeof *cells; k++) {
        /* (below: a projection another state's next value is, identical expressions being one node, stays) */
        Arena a; arena_init(&a);
        const IrCell *u = cell_of_text(&a, cells[k]);
        IrFold f;
        const IrCell *c = ir_fold_projection(&a, u, &f);
        ck_assert_msg(c != NULL, "%s does not fold: %s", u->name, f.why_not);
        ck_assert_msg(f.projected == IR_NONE, "%s: the projection kept", u->name);
        for (uint32_t i = 0; i < c->nnodes; i++) {
            ck_assert_msg(!(c->nodes[i].op == IR_PARAM && c->nodes[i].index == f.proj) ||
                              i == c->params[f.proj].node, "%s: P's node moved wrongly", u->name);
            for (int j = 0; j < ir_ops[c->nodes[i].op].arity; j++) {
                ck_assert_uint_lt(c->nodes[i].args[j], i); /* topological, every reference in range */
                const IrNode *arg = &c->nodes[c->nodes[i].args[j]];
                ck_assert_msg(!(c->nodes[i].op == IR_MATVEC && j == 0 && arg->op == IR_PARAM && arg->index == f.proj),
                              "%s: P is still multiplied", u->name);
            }
        }
        for (int p = 0; p < c->nparams; p++) ck_assert_int_eq(c->nodes[c->params[p].node].index, p);
        for (int s = 0; s < c->nstates; s++) ck_assert_int_eq(c->nodes[c->states[s].node].op, IR_STATE);
        const Plan *pc = plan_of(&a, c);
        ck_assert_msg(pc->ngemms == gemms[k], "%s: %d GEMMs folded", u->name, pc->ngemms);
        for (int varlen = 0; varlen < 2; varlen++) {
            char what[96] = "";
            double e = fold_error(u, 7 + k, 4, 3, varlen, what, sizeof what);
            ck_assert_msg(e < 1e-10, "%s: %s error %g", u->name, what, e);
        }
        arena_free(&a);
    }
    /* h' = P_h @ tanh(c') and g' = the same expression: one node, g's next value; kept, and still the user's cell */
    static const char shared[] = "cell two(x[I]) -> c {\n state h[P], g[P], c[H]\n"
                                 " param W_i[H, I], U_i[H, P], U_g[H, P], P_h[P, H]\n"
                                 " i = sigmoid(W_i @ x + U_i @ h + U_g @ g)\n c' = c + i\n"
                                 " h' = P_h @ tanh(c')\n g' = P_h @ tanh(c')\n}\n";
    Arena a; arena_init(&a);
    const IrCell *u = cell_of_text(&a, shared);
    IrFold f;
    const IrCell *c = ir_fold_projection(&a, u, &f);
    ck_assert_msg(c != NULL, "two does not fold: %s", f.why_not);
    ck_assert(f.projected != IR_NONE && f.projected < c->nnodes);
    ck_assert_uint_eq(c->states[1].next, f.projected);
    for (int s = 0; s < c->nstates; s++) ck_assert_uint_lt(c->states[s].next, c->nnodes);
    for (int varlen = 0; varlen < 2; varlen++) {
        char what[96] = "";
        double e = fold_error(u, 11, 4, 3, varlen, what, sizeof what);
        ck_assert_msg(e < 1e-10, "two: %s error %g", what, e);
    }
    arena_free(&a);
}
END_TEST

/* ---- the fold's executor against the user's cell ----------------------------------------- */

/* fold_exec forward and backward against the reference of u (reverse: the reference on reversed sequences). */
static void check_fold_exec(const IrCell *u, Rng *rng, int64_t T, int64_t N, int varlen, int reverse, const char *label) {
    Arena a; arena_init(&a);
    IrFold f;
    const IrCell *c = ir_fold_projection(&a, u, &f);
    ck_assert_ptr_nonnull(c);
    TuProblem tp;
    tu_problem(&tp, rng, u, T, N, 2, 5, varlen);
    Diags d; diag_init(&d, &a, c->name, NULL, 0);
    Plan *pc = plan_of(&a, c);
    ck_assert(ir_fold_pack_like(&a, pc, plan_of(&a, u), &f)); /* the runtime's packing */
    const PlanLayout *L = sched_layout(&a, pc, tp.dimval, &d);
    ck_assert_ptr_nonnull(L);
    int64_t I = ir_shape_numel(&u->inputs[0].shape, tp.dimval);
    RefProblem rp = tp.p;
    double *xr = tu_alloc((size_t)(T * N * I), sizeof(double));
    if (reverse) ref_reverse_sequences(tp.x, xr, T, N, I, tp.lengths), rp.x = xr;
    /* forward */
    double **y = tu_alloc_outputs(&tp), **yr = tu_alloc_outputs(&tp), **hT = tu_alloc_states(&tp), **hTr = tu_alloc_states(&tp);
    ck_assert_int_eq(fold_exec_forward(L, &f, &tp.p, reverse, y, hT), 0);
    ck_assert_int_eq(ref_forward(&rp, yr, hTr), 0);
    for (int o = 0; o < u->noutputs; o++) {
        int64_t D = tu_output_len(&tp, o);
        double *want = tu_alloc((size_t)(T * N * D), sizeof(double));
        if (reverse) ref_reverse_sequences(yr[o], want, T, N, D, tp.lengths);
        else memcpy(want, yr[o], (size_t)(T * N * D) * sizeof(double));
        double e = tu_max_rel_err(y[o], want, (size_t)(T * N * D), 1e-9);
        ck_assert_msg(e <= 1e-10, "%s output %s (T %lld N %lld varlen %d reverse %d): %g", label, u->outputs[o].name,
                      (long long)T, (long long)N, varlen, reverse, e);
        free(want);
    }
    for (int k = 0; k < u->nstates; k++) {
        double e = tu_max_rel_err(hT[k], hTr[k], (size_t)(N * tu_state_len(&tp, k)), 1e-9);
        ck_assert_msg(e <= 1e-10, "%s final state %s (T %lld N %lld varlen %d reverse %d): %g", label, u->states[k].name,
                      (long long)T, (long long)N, varlen, reverse, e);
    }
    /* backward */
    double **dy = tu_alloc_outputs(&tp), **dyr = tu_alloc_outputs(&tp), **dhT = tu_alloc_states(&tp);
    for (int o = 0; o < u->noutputs; o++) {
        int64_t D = tu_output_len(&tp, o);
        tu_fill(rng, dy[o], (size_t)(T * N * D), -1, 1);
        if (reverse) ref_reverse_sequences(dy[o], dyr[o], T, N, D, tp.lengths);
        else memcpy(dyr[o], dy[o], (size_t)(T * N * D) * sizeof(double));
    }
    for (int k = 0; k < u->nstates; k++) tu_fill(rng, dhT[k], (size_t)(N * tu_state_len(&tp, k)), -1, 1);
    double *dx = tu_alloc((size_t)(T * N * I), sizeof(double)), *dxr = tu_alloc((size_t)(T * N * I), sizeof(double));
    double **dh0 = tu_alloc_states(&tp), **dh0r = tu_alloc_states(&tp);
    double **dp = tu_alloc((size_t)u->nparams + 1, sizeof *dp), **dpr = tu_alloc((size_t)u->nparams + 1, sizeof *dpr);
    for (int k = 0; k < u->nparams; k++) {
        size_t n = (size_t)ir_shape_numel(&u->params[k].shape, tp.dimval);
        dp[k] = tu_alloc(n, sizeof(double)), dpr[k] = tu_alloc(n, sizeof(double));
    }
    ck_assert_int_eq(fold_exec_backward(L, &f, &tp.p, reverse, (const double *const *)dy, (const double *const *)dhT, dx, dh0, dp), 0);
    ck_assert_int_eq(ref_backward(&rp, (const double *const *)dyr, (const double *const *)dhT, dxr, dh0r, dpr), 0);
    if (reverse) tu_reverse_in_place(dxr, T, N, I, tp.lengths); /* the reference's dx is of the reversed input */
    double e = tu_max_rel_err(dx, dxr, (size_t)(T * N * I), 1e-9);
    ck_assert_msg(e <= 1e-10, "%s dx (T %lld N %lld varlen %d reverse %d): %g", label, (long long)T, (long long)N, varlen, reverse, e);
    for (int k = 0; k < u->nstates; k++) {
        e = tu_max_rel_err(dh0[k], dh0r[k], (size_t)(N * tu_state_len(&tp, k)), 1e-9);
        ck_assert_msg(e <= 1e-10, "%s dh0 %s (T %lld N %lld varlen %d reverse %d): %g", label, u->states[k].name, (long long)T,
                      (long long)N, varlen, reverse, e);
    }
    for (int k = 0; k < u->nparams; k++) {
        e = tu_max_rel_err(dp[k], dpr[k], (size_t)ir_shape_numel(&u->params[k].shape, tp.dimval), 1e-9);
        ck_assert_msg(e <= 1e-10, "%s d%s (T %lld N %lld varlen %d reverse %d): %g", label, u->params[k].name, (long long)T,
                      (long long)N, varlen, reverse, e);
    }
    free(xr), free(dx), free(dxr);
    tu_free_arrays(y, u->noutputs), tu_free_arrays(yr, u->noutputs), tu_free_arrays(hT, u->nstates), tu_free_arrays(hTr, u->nstates);
    tu_free_arrays(dy, u->noutputs), tu_free_arrays(dyr, u->noutputs), tu_free_arrays(dhT, u->nstates);
    tu_free_arrays(dh0, u->nstates), tu_free_arrays(dh0r, u->nstates);
    tu_free_arrays(dp, u->nparams), tu_free_arrays(dpr, u->nparams);
    tu_problem_free(&tp);
    arena_free(&a);
}

/* LSTMP through the fold's executor: lengths (one sequence of none), both directions, T = 0, N = 1. */
START_TEST(fold_executor_matches_reference) {
    Arena a; arena_init(&a);
    const IrCell *u = tu_compile_file(&a, "cells/lstmp.cell")->cells[0];
    Rng rng = {5};
    for (int varlen = 0; varlen <= 1; varlen++)
        for (int reverse = 0; reverse <= 1; reverse++) check_fold_exec(u, &rng, 5, 4, varlen, reverse, "lstmp");
    check_fold_exec(u, &rng, 1, 1, 0, 0, "lstmp");
    check_fold_exec(u, &rng, 0, 2, 0, 0, "lstmp");
    check_fold_exec(u, &rng, 3, 2, 1, 1, "lstmp");
    arena_free(&a);
}
END_TEST

/* The wide random cells that fold, through the fold's executor in every mode where they have an entry. */
START_TEST(fold_executor_on_wide_random_cells) {
    Rng rng = {17};
    int ran = 0, without = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        Arena a; arena_init(&a);
        char src[4096], label[32];
        ck_assert_int_gt(tu_random_cell_wide(seed, src, sizeof src), 0);
        const IrCell *u = cell_of_text(&a, src);
        IrFold f;
        const IrCell *c = ir_fold_projection(&a, u, &f);
        if (c) {
            IrRef entry[16];
            ck_assert_int_le(f.nderived, 16);
            snprintf(label, sizeof label, "wide%llu", (unsigned long long)seed);
            if (ir_fold_entries(plan_of(&a, c), &f, entry)) {
                for (int mode = 0; mode < 4; mode++) check_fold_exec(u, &rng, 4, 3, mode & 1, mode >> 1, label);
                ran++;
            } else { /* a product of s summed with no hoisted one: the executor refuses, as the runtime will not fold */
                TuProblem tp;
                tu_problem(&tp, &rng, u, 2, 2, 2, 3, 0);
                Diags d; diag_init(&d, &a, c->name, NULL, 0);
                const PlanLayout *L = sched_layout(&a, plan_of(&a, c), tp.dimval, &d);
                ck_assert_int_eq(fold_exec_forward(L, &f, &tp.p, 0, NULL, NULL), -1);
                tu_problem_free(&tp);
                without++;
            }
        }
        arena_free(&a);
    }
    ck_assert_msg(ran >= 5 && without >= 1, "%d wide cells fold with an entry, %d without", ran, without);
}
END_TEST

/* The fold packs the user's parameters where the cell as written does (ir_fold_pack_like), at any
 * dimensions: LSTMP and every wide cell that folds, at sizes where stacks and lone items pad differently
 * (H * P % 16 != 0), and without the repacking LSTMP's U_k at 5 x 3 would move. */
static int offsets_equal(Arena *a, const IrCell *u, int64_t dim, int pack_like) {
    IrFold f;
    const IrCell *c = ir_fold_projection(a, u, &f);
    ck_assert_ptr_nonnull(c);
    Plan *pc = plan_of(a, c);
    const Plan *pu = plan_of(a, u);
    if (pack_like) ck_assert_msg(ir_fold_pack_like(a, pc, pu, &f), "%s: not packed like the cell as written", u->name);
    int64_t dimval[16];
    ck_assert_int_le(u->ndims, 16);
    for (int k = 0; k < u->ndims; k++) dimval[k] = u->dims[k].name ? dim + k % 3 : u->dims[k].literal;
    Diags d; diag_init(&d, a, c->name, NULL, 0);
    const PlanLayout *Lu = sched_layout(a, pu, dimval, &d), *Lc = sched_layout(a, pc, dimval, &d);
    ck_assert(Lu && Lc);
    for (int k = 0; k < u->nparams; k++)
        if (Lu->param_offset[k] != Lc->param_offset[k]) return 0;
    for (int k = 0; k < f.nderived; k++) /* the derived ones after them all */
        ck_assert_int_ge(Lc->param_offset[u->nparams + k], Lu->packed_size);
    if (pack_like) { /* and the range a forward's 16-bit conversion skips (rt_half_begin) holds them and nothing else */
        int64_t lo = -1, hi = -1, sum = 0;
        ck_assert(ir_fold_derived_range(&f, Lc, &lo, &hi));
        ck_assert_int_ge(lo, Lu->packed_size);
        ck_assert_int_le(hi, Lc->packed_size);
        for (int k = 0; k < f.nderived; k++) {
            const int p = u->nparams + k;
            ck_assert_int_ge(Lc->param_offset[p], lo);
            ck_assert_int_le(Lc->param_offset[p] + Lc->param_rows[p] * Lc->param_cols[p], hi);
            sum += Lc->param_rows[p] * Lc->param_cols[p];
        }
        ck_assert_int_le(hi - lo, sum + (int64_t)f.nderived * SCHED_PACK_ALIGN); /* padding at most */
    }
    return 1;
}

/* ir_fold_derived_range refuses a layout where a user's parameter lies among the derived ones, and no fold. */
START_TEST(derived_range_refuses_overlap) {
    Arena a; arena_init(&a);
    const IrCell *u;
    IrFold f;
    const IrCell *c = lstmp_folded(&a, &f, &u);
    Plan *pc = plan_of(&a, c);
    ck_assert(ir_fold_pack_like(&a, pc, plan_of(&a, u), &f));
    int64_t dimval[8] = {0};
    for (int k = 0; k < c->ndims; k++) dimval[k] = 8 + k;
    Diags d; diag_init(&d, &a, c->name, NULL, 0);
    const PlanLayout *L = sched_layout(&a, pc, dimval, &d);
    ck_assert_ptr_nonnull(L);
    int64_t lo = -1, hi = -1;
    ck_assert(ir_fold_derived_range(&f, L, &lo, &hi));
    ck_assert_int_eq(lo, L->param_offset[u->nparams]); /* U_i P_h, the first derived, first */
    ck_assert(!ir_fold_derived_range(NULL, L, &lo, &hi));
    PlanLayout moved = *L; /* P_h's offset moved into V's range */
    int64_t off[64];
    ck_assert_int_le(c->nparams, 64);
    memcpy(off, L->param_offset, (size_t)c->nparams * sizeof *off);
    off[f.proj] = L->param_offset[u->nparams + 1];
    moved.param_offset = off;
    ck_assert(!ir_fold_derived_range(&f, &moved, &lo, &hi));
    arena_free(&a);
}
END_TEST

START_TEST(folded_offsets_match_unfolded) {
    Arena a; arena_init(&a);
    const IrCell *lstmp = tu_compile_file(&a, "cells/lstmp.cell")->cells[0];
    const int64_t dims[] = {1, 3, 5, 16, 33, 1024};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) ck_assert(offsets_equal(&a, lstmp, dims[i], 1));
    ck_assert_msg(!offsets_equal(&a, lstmp, 3, 0), "the negative control: unrepacked, LSTMP's offsets should differ");
    int folds = 0;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        char src[4096];
        ck_assert_int_gt(tu_random_cell_wide(seed, src, sizeof src), 0);
        const IrCell *u = cell_of_text(&a, src);
        IrFold f;
        if (!ir_fold_projection(&a, u, &f)) continue;
        for (size_t i = 0; i < 3; i++) ck_assert_msg(offsets_equal(&a, u, dims[i + 1], 1), "wide%llu at %lld\n%s",
                                                     (unsigned long long)seed, (long long)dims[i + 1], src);
        folds++;
    }
    ck_assert_int_ge(folds, 10);
    arena_free(&a);
}
END_TEST

/* ---- the rule (ir/fold_rule.c) ---------------------------------------------------------- */

/* V's flops of LSTMP at I, H, P. */
static double lstmp_flops(Arena *a, int64_t I, int64_t H, int64_t P) {
    const IrCell *u = tu_compile_file(a, "cells/lstmp.cell")->cells[0];
    IrFold f;
    ck_assert_ptr_nonnull(ir_fold_projection(a, u, &f));
    int64_t dimval[8];
    for (int k = 0; k < u->ndims; k++)
        dimval[k] = strcmp(u->dims[k].name, "I") == 0 ? I : strcmp(u->dims[k].name, "H") == 0 ? H : P;
    return ir_fold_derived_flops(&f, dimval);
}

/* V's flops are 2 x 4H x P x H; tensor cores fold, fp32 folds up to 3 GFLOP (ds2's LSTMP, 2.05, yes;
 * H = 1024, 4.29, no; exactly 3, yes) or at any size where the model keeps V, tf32x3 not; each says who
 * decided, as the backend line prints it. */
START_TEST(fold_rule_says_when) {
    Arena a; arena_init(&a);
    ck_assert(lstmp_flops(&a, 800, 800, 400) == 2.0 * 3200 * 400 * 800);
    ck_assert(lstmp_flops(&a, 16, 1024, 512) == 2.0 * 4096 * 512 * 1024); /* the input's size takes no part */
    char by[160];
    ck_assert_ptr_null(ir_fold_rule(IR_FOLD_TENSOR_CORES, "tf32", 1e12, 0, by, sizeof by));
    ck_assert_str_eq(by, "the rule: tf32 products");
    ck_assert_ptr_null(ir_fold_rule(IR_FOLD_FP32, "fp32", lstmp_flops(&a, 800, 800, 400), 0, by, sizeof by));
    ck_assert_str_eq(by, "the rule: fp32 products, V = U P 2.05 GFLOP in FFMA every pass, at most 3");
    ck_assert_ptr_null(ir_fold_rule(IR_FOLD_FP32, "fp32", IR_FOLD_FP32_MAX_FLOPS, 0, by, sizeof by));
    const char *why = ir_fold_rule(IR_FOLD_FP32, "fp32", lstmp_flops(&a, 1024, 1024, 512), 0, by, sizeof by);
    ck_assert_str_eq(by, "the rule: fp32 products, V = U P 4.29 GFLOP in FFMA every pass, over 3");
    ck_assert_str_eq(why, "V costs more than the step's phase it saves (bench/NOTES.md section 83); a model that keeps V "
                          "(keep_derived_weights) folds");
    /* a model that keeps V forms it once: fp32 folds at any size; tensor cores as before; tf32x3 still not */
    ck_assert_ptr_null(ir_fold_rule(IR_FOLD_FP32, "fp32", lstmp_flops(&a, 1024, 1024, 512), 1, by, sizeof by));
    ck_assert_str_eq(by, "the rule: fp32 products, V = U P 4.29 GFLOP in FFMA once, kept while the weights stay fixed");
    ck_assert_ptr_null(ir_fold_rule(IR_FOLD_TENSOR_CORES, "fp16", 1e12, 1, by, sizeof by));
    ck_assert_str_eq(by, "the rule: fp16 products");
    ck_assert_ptr_nonnull(ir_fold_rule(IR_FOLD_UNMEASURED, "tf32x3", 1, 1, by, sizeof by));
    why = ir_fold_rule(IR_FOLD_UNMEASURED, "tf32x3", 1, 0, by, sizeof by);
    ck_assert_str_eq(by, "the rule: tf32x3 products");
    ck_assert_str_eq(why, "V = U P and the fold's other GEMMs would run in fp32 FFMA; not measured");
    ir_fold_rule(IR_FOLD_FP32, "fp32", 1e9, 0, by, 12); /* a short buffer is cut, terminated */
    ck_assert_str_eq(by, "the rule: f");
    arena_free(&a);
}
END_TEST

/* ---- the folded cell through code generation ------------------------------------------ */

/* The folded cell u's per-step unit and both persistent units (where a tile plans) are written with
 * every named dimension at dim; compile says whether NVRTC also compiles them to sm_90 PTX. The
 * derived names are pasted into the code, so a name the generator refuses fails here. */
static void folded_generates(const IrCell *u, int64_t dim, int compile, const char *label) {
    Arena a; arena_init(&a);
    IrFold f;
    const IrCell *c = ir_fold_projection(&a, u, &f);
    ck_assert_msg(c != NULL, "%s does not fold: %s", label, f.why_not);
    for (int k = 0; k < f.nderived; k++) ck_assert_msg(cg_ident_ok(c->params[u->nparams + k].name), "%s", c->params[u->nparams + k].name);
    ck_assert_msg(cg_ident_ok(c->states[f.state].name), "%s", c->states[f.state].name);
    Diags d; diag_init(&d, &a, c->name, NULL, 0);
    int64_t dimval[16];
    ck_assert_int_le(c->ndims, 16);
    for (int k = 0; k < c->ndims; k++) dimval[k] = c->dims[k].name ? dim : c->dims[k].literal;
    const PlanLayout *L = sched_layout(&a, plan_of(&a, c), dimval, &d);
    ck_assert_ptr_nonnull(L);
    StrBuf src[4] = {{0}};
    int n = 1;
    ck_assert_msg(cg_emit_forward(&a, L->plan, L, &src[0], &d) && d.nerrors == 0, "%s: the unit: %s", label,
                  d.head ? d.head->msg : "?");
    /* the values a GEMM multiplies (the projection's operand) are stored with their 16-bit twins */
    for (int b = 0; b < L->plan->nbuffers; b++)
        if (cg_value_twinned(L->plan, b)) {
            char want[64];
            snprintf(want, sizeof want, "if (a.buf16[%d]) rnn_put16(&a.buf16[%d][", b, b);
            ck_assert_msg(strstr(sb_str(&src[0]), want) != NULL, "%s: B%d's twin not written", label, b);
        }
    for (int backward = 0; backward < 2; backward++) {
        CgPersistAsk ask = cg_persist_h100_ask(4, backward, CG_TF32, 1);
        CgPersist P;
        char why[256] = "";
        if (!cg_persist_plan(&a, L, &ask, &P, why, sizeof why)) continue;
        ck_assert_msg(cg_emit_persistent(&a, L->plan, L, &P, &src[n], &d) && d.nerrors == 0, "%s: the persistent %s unit: %s",
                      label, backward ? "backward" : "forward", d.head ? d.head->msg : "?");
        n++;
    }
    { /* an fp16 persistent forward: each step's view of the twins, and their stores */
        CgPersistAsk ask = cg_persist_h100_ask(4, 0, CG_F16, 1);
        ask.twins = 1;
        CgPersist P;
        char why[256] = "";
        if (cg_persist_plan(&a, L, &ask, &P, why, sizeof why)) {
            ck_assert_msg(cg_emit_persistent(&a, L->plan, L, &P, &src[n], &d) && d.nerrors == 0, "%s: fp16 forward: %s",
                          label, d.head ? d.head->msg : "?");
            for (int b = 0; b < L->plan->nbuffers; b++)
                if (cg_value_twinned(L->plan, b)) {
                    char view[160], put[64];
                    snprintf(view, sizeof view, "if (args.buf16[%d]) a.buf16[%d] = args.buf16[%d] + t * args.buf_step[%d];", b,
                             b, b, b);
                    snprintf(put, sizeof put, "if (a.buf16[%d]) rnn_put16(&a.buf16[%d][", b, b);
                    ck_assert_msg(strstr(sb_str(&src[n]), view) && strstr(sb_str(&src[n]), put), "%s: fp16 forward: B%d's twin",
                                  label, b);
                }
            n++;
        }
    }
    for (int k = 0; k < n; k++) {
        if (compile) {
            RtNvrtcResult res;
            RtNvrtcStatus st = rt_nvrtc_compile(sb_str(&src[k]), label, RT_NVRTC_PTX, "sm_90", &res);
            if (st != RT_NVRTC_OK) {
                StrBuf log = {0};
                rt_nvrtc_report(&res, &log);
                ck_abort_msg("%s: unit %d does not compile: %s", label, k, sb_str(&log));
            }
            rt_nvrtc_result_free(&res);
        }
        sb_free(&src[k]);
    }
    if (compile) ck_assert_msg(n == 4, "%s: %d units, a persistent tile did not plan", label, n);
    arena_free(&a);
}

/* LSTMP folded compiles (unit and both persistent kernels), the wide cells that fold generate. */
START_TEST(folded_cells_generate_code) {
    Arena a; arena_init(&a);
    folded_generates(tu_compile_file(&a, "cells/lstmp.cell")->cells[0], 64, 1, "lstmp");
    int folds = 0;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        char src[4096], label[32];
        ck_assert_int_gt(tu_random_cell_wide(seed, src, sizeof src), 0);
        const IrCell *u = cell_of_text(&a, src);
        IrFold f;
        if (!ir_fold_projection(&a, u, &f)) continue;
        snprintf(label, sizeof label, "wide%llu", (unsigned long long)seed);
        folded_generates(u, 16, 0, label);
        folds++;
    }
    ck_assert_int_ge(folds, 10);
    arena_free(&a);
}
END_TEST

/* The derived names keep clear of the cell's own: "U_Q" and "h_fold" taken, the fold adds "_2". */
START_TEST(derived_names_are_fresh) {
    Arena a; arena_init(&a);
    const char *text = "cell n(x[I]) -> h {\n state h[P]\n param W[H, I], U[H, P], Q[P, H], U_Q[H, I], h_fold[H]\n"
                       " h' = Q @ tanh(W @ x + U_Q @ x + U @ h + h_fold)\n}\n";
    const IrCell *u = cell_of_text(&a, text);
    IrFold f;
    const IrCell *c = ir_fold_projection(&a, u, &f);
    ck_assert_msg(c != NULL, "%s", f.why_not);
    ck_assert_int_eq(f.nderived, 1);
    ck_assert_str_eq(c->params[u->nparams].name, "U_Q_2");
    ck_assert_str_eq(c->states[f.state].name, "h_fold_2");
    folded_generates(u, 8, 0, "n");
    arena_free(&a);
}
END_TEST

int main(void) {
    Suite *s = suite_create("fold");
    TCase *tc = tcase_create("fold");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lstmp_folds);
    tcase_add_test(tc, refusals_say_why);
    tcase_add_test(tc, unread_projection_is_dropped);
    tcase_add_test(tc, lstmp_fold_dump_matches_golden);
    tcase_add_test(tc, lstmp_fold_matches_reference);
    tcase_add_test(tc, wide_random_folds_match_reference);
    tcase_add_test(tc, fold_executor_matches_reference);
    tcase_add_test(tc, fold_executor_on_wide_random_cells);
    tcase_add_test(tc, folded_offsets_match_unfolded);
    tcase_add_test(tc, derived_range_refuses_overlap);
    tcase_add_test(tc, fold_rule_says_when);
    tcase_add_test(tc, folded_cells_generate_code);
    tcase_add_test(tc, derived_names_are_fresh);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
