/* Tests for the stacked reference (ir/ref_stack.c): layers and directions composed from the
 * single-layer reference. One layer, one direction equals ref_forward/ref_backward exactly;
 * deeper and bidirectional stacks' gradients match central finite differences of the stack's
 * own forward. Key idea: the composition is checked against nothing but itself and ref.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/ref.h"
#include "testutil.h"

typedef struct Stack {
    RefStack s;
    const IrCell *cell;
    int units;
    int64_t *dv[2];
    double ***params, **h0, *x;
    int64_t *lengths;
} Stack;

static void make_stack(Stack *st, Arena *a, Rng *r, const char *path, int layers, int dirs, int64_t T, int64_t N, int varlen) {
    memset(st, 0, sizeof *st);
    const IrCell *c = st->cell = tu_compile_file(a, path)->cells[0];
    st->units = layers * dirs;
    for (int i = 0; i < 2; i++) st->dv[i] = tu_alloc((size_t)c->ndims + 1, sizeof(int64_t));
    for (int d = 0; d < c->ndims; d++) st->dv[0][d] = st->dv[1][d] = c->dims[d].name ? 2 + d % 3 : c->dims[d].literal;
    int in = c->inputs[0].shape.dims[0];
    st->dv[1][in] = ir_node_len(c, c->outputs[0].node, st->dv[0]) * dirs;
    int64_t I = ir_shape_numel(&c->inputs[0].shape, st->dv[0]);
    st->x = tu_alloc((size_t)(T * N * I), sizeof(double));
    tu_fill(r, st->x, (size_t)(T * N * I), -1, 1);
    st->params = tu_alloc((size_t)st->units, sizeof *st->params);
    for (int u = 0; u < st->units; u++) {
        st->params[u] = tu_alloc((size_t)c->nparams + 1, sizeof **st->params);
        for (int k = 0; k < c->nparams; k++) {
            int64_t n = ir_shape_numel(&c->params[k].shape, st->dv[u / dirs > 0]);
            st->params[u][k] = tu_alloc((size_t)n, sizeof(double));
            tu_fill(r, st->params[u][k], (size_t)n, -0.5, 0.5);
        }
    }
    st->h0 = tu_alloc((size_t)c->nstates + 1, sizeof *st->h0);
    for (int k = 0; k < c->nstates; k++) {
        int64_t n = st->units * N * ir_shape_numel(&c->states[k].shape, st->dv[0]);
        st->h0[k] = tu_alloc((size_t)n, sizeof(double));
        tu_fill(r, st->h0[k], (size_t)n, -0.5, 0.5);
    }
    if (varlen) {
        st->lengths = tu_alloc((size_t)N, sizeof(int64_t));
        for (int64_t n = 0; n < N; n++) st->lengths[n] = n == 0 ? T : (int64_t)(tu_next(r) % (uint64_t)(T + 1));
    }
    st->s = (RefStack){c, {st->dv[0], st->dv[1]}, layers, dirs, T, N, st->lengths, st->x,
                       (const double *const *const *)st->params, (const double *const *)st->h0};
}

static void free_stack(Stack *st) {
    for (int u = 0; u < st->units; u++) tu_free_arrays(st->params[u], st->cell->nparams);
    free(st->params);
    tu_free_arrays(st->h0, st->cell->nstates);
    free(st->x); free(st->lengths); free(st->dv[0]); free(st->dv[1]);
}

/* The loss sum(dy .* y) + sum(dhT .* hT) of the stack's forward. */
static double loss(Stack *st, double **dy, double **dhT) {
    const IrCell *c = st->cell;
    int64_t T = st->s.T, N = st->s.N;
    double **y = tu_alloc((size_t)c->noutputs + 1, sizeof *y), **h = tu_alloc((size_t)c->nstates + 1, sizeof *h), L = 0;
    for (int o = 0; o < c->noutputs; o++)
        y[o] = tu_alloc((size_t)(T * N * ir_node_len(c, c->outputs[o].node, st->dv[st->s.layers > 1]) * st->s.dirs), sizeof(double));
    for (int k = 0; k < c->nstates; k++) h[k] = tu_alloc((size_t)(st->units * N * ir_shape_numel(&c->states[k].shape, st->dv[0])), sizeof(double));
    ck_assert_int_eq(ref_stack_forward(&st->s, y, h), 0);
    for (int o = 0; o < c->noutputs; o++)
        for (int64_t i = 0; i < T * N * ir_node_len(c, c->outputs[o].node, st->dv[st->s.layers > 1]) * st->s.dirs; i++) L += dy[o][i] * y[o][i];
    for (int k = 0; k < c->nstates; k++)
        for (int64_t i = 0; i < st->units * N * ir_shape_numel(&c->states[k].shape, st->dv[0]); i++) L += dhT[k][i] * h[k][i];
    tu_free_arrays(y, c->noutputs);
    tu_free_arrays(h, c->nstates);
    return L;
}

/* Central difference of the loss in *v against the analytic gradient g. */
static void check_entry(Stack *st, double **dy, double **dhT, double *v, double g, const char *what) {
    const double eps = 1e-6, keep = *v;
    *v = keep + eps;
    double lp = loss(st, dy, dhT);
    *v = keep - eps;
    double lm = loss(st, dy, dhT);
    *v = keep;
    double num = (lp - lm) / (2 * eps), err = fabs(num - g) / fmax(1e-3, fabs(num) + fabs(g));
    ck_assert_msg(err <= 1e-6, "%s: analytic %.12g, numeric %.12g (relative error %g)", what, g, num, err);
}

static void check_stack(const char *path, int layers, int dirs, int varlen) {
    Arena a; arena_init(&a);
    Rng r = {(uint64_t)(layers * 10 + dirs + varlen * 100)};
    Stack st;
    int64_t T = 4, N = 3;
    make_stack(&st, &a, &r, path, layers, dirs, T, N, varlen);
    const IrCell *c = st.cell;
    double **dy = tu_alloc((size_t)c->noutputs + 1, sizeof *dy), **dhT = tu_alloc((size_t)c->nstates + 1, sizeof *dhT);
    for (int o = 0; o < c->noutputs; o++) {
        int64_t n = T * N * ir_node_len(c, c->outputs[o].node, st.dv[layers > 1]) * dirs;
        dy[o] = tu_alloc((size_t)n, sizeof(double));
        tu_fill(&r, dy[o], (size_t)n, -1, 1);
    }
    double **dh0 = tu_alloc((size_t)c->nstates + 1, sizeof *dh0);
    for (int k = 0; k < c->nstates; k++) {
        int64_t n = st.units * N * ir_shape_numel(&c->states[k].shape, st.dv[0]);
        dhT[k] = tu_alloc((size_t)n, sizeof(double));
        dh0[k] = tu_alloc((size_t)n, sizeof(double));
        tu_fill(&r, dhT[k], (size_t)n, -1, 1);
    }
    int64_t I = ir_shape_numel(&c->inputs[0].shape, st.dv[0]);
    double *dx = tu_alloc((size_t)(T * N * I), sizeof(double));
    double ***dp = tu_alloc((size_t)st.units, sizeof *dp);
    for (int u = 0; u < st.units; u++) {
        dp[u] = tu_alloc((size_t)c->nparams + 1, sizeof **dp);
        for (int k = 0; k < c->nparams; k++)
            dp[u][k] = tu_alloc((size_t)ir_shape_numel(&c->params[k].shape, st.dv[u / dirs > 0]), sizeof(double));
    }
    ck_assert_int_eq(ref_stack_backward(&st.s, (const double *const *)dy, (const double *const *)dhT, dx, dh0,
                                        (double *const *const *)dp), 0);
    char what[128];
    for (int64_t i = 0; i < T * N * I; i += 5) {
        snprintf(what, sizeof what, "%s dx[%lld]", path, (long long)i);
        check_entry(&st, dy, dhT, &st.x[i], dx[i], what);
    }
    for (int k = 0; k < c->nstates; k++)
        for (int64_t i = 0; i < st.units * N * ir_shape_numel(&c->states[k].shape, st.dv[0]); i += 3) {
            snprintf(what, sizeof what, "%s dh0 %s[%lld]", path, c->states[k].name, (long long)i);
            check_entry(&st, dy, dhT, &st.h0[k][i], dh0[k][i], what);
        }
    for (int u = 0; u < st.units; u++)
        for (int k = 0; k < c->nparams; k++)
            for (int64_t i = 0; i < ir_shape_numel(&c->params[k].shape, st.dv[u / dirs > 0]); i += 7) {
                snprintf(what, sizeof what, "%s unit %d d%s[%lld]", path, u, c->params[k].name, (long long)i);
                check_entry(&st, dy, dhT, &st.params[u][k][i], dp[u][k][i], what);
            }
    for (int u = 0; u < st.units; u++) tu_free_arrays(dp[u], c->nparams);
    free(dp); free(dx);
    tu_free_arrays(dy, c->noutputs); tu_free_arrays(dhT, c->nstates); tu_free_arrays(dh0, c->nstates);
    free_stack(&st);
    arena_free(&a);
}

START_TEST(one_layer_equals_the_reference) {
    Arena a; arena_init(&a);
    Rng r = {3};
    Stack st;
    make_stack(&st, &a, &r, "cells/gru.cell", 1, 1, 5, 2, 1);
    const IrCell *c = st.cell;
    double **y1 = tu_alloc(2, sizeof *y1), **y2 = tu_alloc(2, sizeof *y2), **h1 = tu_alloc(2, sizeof *h1), **h2 = tu_alloc(2, sizeof *h2);
    int64_t ny = 5 * 2 * ir_node_len(c, c->outputs[0].node, st.dv[0]), nh = 2 * ir_shape_numel(&c->states[0].shape, st.dv[0]);
    y1[0] = tu_alloc((size_t)ny, sizeof(double)); y2[0] = tu_alloc((size_t)ny, sizeof(double));
    h1[0] = tu_alloc((size_t)nh, sizeof(double)); h2[0] = tu_alloc((size_t)nh, sizeof(double));
    ck_assert_int_eq(ref_stack_forward(&st.s, y1, h1), 0);
    RefProblem p = {c, st.dv[0], 5, 2, st.lengths, st.x, (const double *const *)st.h0, (const double *const *)st.params[0]};
    ck_assert_int_eq(ref_forward(&p, y2, h2), 0);
    ck_assert_int_eq(memcmp(y1[0], y2[0], (size_t)ny * sizeof(double)), 0);
    ck_assert_int_eq(memcmp(h1[0], h2[0], (size_t)nh * sizeof(double)), 0);
    tu_free_arrays(y1, 1); tu_free_arrays(y2, 1); tu_free_arrays(h1, 1); tu_free_arrays(h2, 1);
    free_stack(&st);
    arena_free(&a);
}
END_TEST

START_TEST(stacked_gradients_match_finite_differences) {
    check_stack("cells/lstm.cell", 2, 2, 1);
    check_stack("cells/gru.cell", 3, 1, 0);
    check_stack("cells/mlstm.cell", 2, 2, 0);
    check_stack("cells/lstmp.cell", 1, 2, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("refstack");
    TCase *tc = tcase_create("stack");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_layer_equals_the_reference);
    tcase_add_test(tc, stacked_gradients_match_finite_differences);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
