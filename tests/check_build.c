/* Tests for the checker that turns syntax into IR (ir/build.c, ir/ir.c): shapes, interned
 * dimensions, constant folding, hash-consing, topological ids, pruning with warnings,
 * states and outputs, the name rules, dimension binding and cell lookup.
 * Key idea: each test compiles a small cell and asserts on the IR's nodes and tables. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"
#include "testutil.h"

/* ---- fixture and helpers ------------------------------------------------------- */

static Arena arena;
static Diags diags;

static void setup(void) { arena_init(&arena); }
static void teardown(void) { arena_free(&arena); }

static const char *rendered(void) {
    StrBuf sb = {0};
    diag_render(&diags, &sb);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* Compiles text with a fresh diagnostics sink; NULL when it had errors. */
static const IrModule *try_compile(const char *text) {
    size_t len = strlen(text);
    char *src = arena_strndup(&arena, text, len);
    diag_init(&diags, &arena, "t.cell", src, len);
    return ir_compile(&arena, &diags, src, len);
}

/* Compiles text that must compile, and returns its only cell. */
static const IrCell *cell_of(const char *text) {
    const IrModule *m = try_compile(text);
    ck_assert_msg(m != NULL, "does not compile:\n%s", rendered());
    const IrCell *c = ir_find_cell(m, NULL);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* Asserts that compiling text fails with exactly one error, this message at line:col. */
static void expect_error(const char *text, int line, int col, const char *msg) {
    ck_assert_msg(try_compile(text) == NULL, "compiled, but should not have:\n%s", text);
    ck_assert_msg(diags.nerrors == 1, "expected one error, got %d:\n%s", diags.nerrors, rendered());
    const Diag *g = diags.head;
    while (g->level != DIAG_ERROR) g = g->next;
    ck_assert_str_eq(g->msg, msg);
    ck_assert_int_eq(g->loc.line, line);
    ck_assert_int_eq(g->loc.col, col);
}

static const char *dim(const IrCell *c, int d) {
    char buf[32];
    return arena_strdup(&arena, ir_dim_text(c, d, buf, sizeof buf));
}

static const char *shape(const IrCell *c, IrShape s) {
    switch (s.kind) {
    case IR_SCALAR: return "[]";
    case IR_VECTOR: return arena_printf(&arena, "[%s]", dim(c, s.dims[0]));
    default: return arena_printf(&arena, "[%s, %s]", dim(c, s.dims[0]), dim(c, s.dims[1]));
    }
}

static const IrVar *param(const IrCell *c, const char *name) {
    for (int k = 0; k < c->nparams; k++)
        if (strcmp(c->params[k].name, name) == 0) return &c->params[k];
    ck_abort_msg("no parameter %s", name);
    return NULL;
}

static const IrNode *output(const IrCell *c, const char *name) {
    for (int k = 0; k < c->noutputs; k++)
        if (strcmp(c->outputs[k].name, name) == 0) return &c->nodes[c->outputs[k].node];
    ck_abort_msg("no output %s", name);
    return NULL;
}

static int count_op(const IrCell *c, IrOp op) {
    int n = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) n += c->nodes[i].op == op;
    return n;
}

static const char *dump(const IrCell *c) {
    StrBuf sb = {0};
    ir_dump(c, &sb);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* ---- shapes and dimensions ------------------------------------------------------ */

START_TEST(shapes) {
    const IrCell *c = cell_of("cell t(x[I]) -> y {\n"
                              "  param W[H, I], b[H]\n"
                              "  y = sigmoid(W @ x + b) * 2\n"
                              "}\n");
    ck_assert_str_eq(shape(c, c->inputs[0].shape), "[I]");
    ck_assert_str_eq(shape(c, param(c, "W")->shape), "[H, I]");
    ck_assert_int_eq(param(c, "W")->shape.kind, IR_MATRIX);
    ck_assert_str_eq(shape(c, param(c, "b")->shape), "[H]");
    const IrNode *y = output(c, "y");
    ck_assert_int_eq(y->op, IR_MUL);
    ck_assert_str_eq(shape(c, y->shape), "[H]");                        /* broadcast */
    ck_assert_str_eq(shape(c, c->nodes[y->args[1]].shape), "[]");       /* the scalar 2 */
    ck_assert_str_eq(shape(c, c->nodes[y->args[0]].shape), "[H]");      /* sigmoid */
    const IrNode *mv = &c->nodes[c->nodes[c->nodes[y->args[0]].args[0]].args[0]];
    ck_assert_int_eq(mv->op, IR_MATVEC);
    ck_assert_str_eq(shape(c, mv->shape), "[H]");                       /* [H, I] @ [I] */
    /* A literal dimension 1 is a vector of one element, not a scalar: it does not broadcast. */
    expect_error("cell t(x[I]) -> z { param s[1]\n z = x * s }", 2, 8,
                 "dimension mismatch: operands of '*' are [I] and [1]");

    int64_t dv[8];
    ck_assert_int_eq(ir_bind_dims(c, (const char *[]){"I=3", "H=5"}, 2, dv, &diags), 1);
    ck_assert_int_eq(ir_shape_numel(&param(c, "W")->shape, dv), 15);
    ck_assert_int_eq(ir_node_len(c, c->outputs[0].node, dv), 5);
    ck_assert_int_eq(ir_shape_numel(&c->nodes[y->args[1]].shape, dv), 1);
}
END_TEST

START_TEST(dims_interned) {
    const IrCell *c = cell_of("cell t(x[I]) -> h {\n"
                              "  state h[H]\n"
                              "  param W[H, I], U[H, H], a[4], b[4], k[007], P[4, H]\n"
                              "  h' = tanh(W @ x + U @ h)\n"
                              "}\n");
    /* Each symbol and each literal value is one dimension, in order of first appearance. */
    ck_assert_int_eq(c->ndims, 4);
    ck_assert_str_eq(dim(c, 0), "I");
    ck_assert_str_eq(dim(c, 1), "H");
    ck_assert_str_eq(dim(c, 2), "4");
    ck_assert_str_eq(dim(c, 3), "7");
    ck_assert_ptr_null(c->dims[2].name);
    ck_assert_int_eq(c->dims[3].literal, 7);
    ck_assert_int_eq(ir_find_dim(c, "H"), 1);
    ck_assert_int_eq(ir_find_dim(c, "4"), -1); /* literals are not found by name */
    ck_assert_int_eq(ir_find_dim(c, "Z"), -1);
    ck_assert_int_eq(param(c, "U")->shape.dims[0], param(c, "U")->shape.dims[1]);
    ck_assert_int_eq(param(c, "a")->shape.dims[0], param(c, "b")->shape.dims[0]);
    ck_assert_int_eq(param(c, "P")->shape.dims[0], 2);
    /* A symbol never matches a literal, even one it may later be bound to. */
    expect_error("cell t(x[I]) -> y { param W[4, I], b[H]\n y = W @ x + b }", 2, 12,
                 "dimension mismatch: operands of '+' are [4] and [H]");
}
END_TEST

START_TEST(many_dims) {
    /* Hundreds of distinct symbols and literals, each used twice: interned once each. */
    StrBuf sb = {0};
    sb_puts(&sb, "cell t(x[I]) -> y {\n  param ");
    for (int i = 0; i < 300; i++) sb_printf(&sb, "p%d[D%d, %d], q%d[D%d, %d], ", i, i, i + 1, i, i, i + 1);
    sb_puts(&sb, "b[I]\n  y = x + b\n}\n");
    const IrCell *c = cell_of(arena_strdup(&arena, sb_str(&sb)));
    sb_free(&sb);
    ck_assert_int_eq(c->ndims, 1 + 300 * 2);
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        const IrVar *p = param(c, name);
        snprintf(name, sizeof name, "q%d", i);
        const IrVar *q = param(c, name);
        ck_assert_int_eq(p->shape.dims[0], q->shape.dims[0]);
        ck_assert_int_eq(p->shape.dims[1], q->shape.dims[1]);
        snprintf(name, sizeof name, "D%d", i);
        ck_assert_int_eq(ir_find_dim(c, name), p->shape.dims[0]);
        ck_assert_int_eq(c->dims[p->shape.dims[1]].literal, i + 1);
    }
    ck_assert_int_eq(diags.nwarnings, 600); /* every parameter unused */
}
END_TEST

/* ---- folding and hash-consing --------------------------------------------------- */

START_TEST(constants_folded) {
    const IrCell *c = cell_of("cell t(x[I]) -> y {\n"
                              "  k = 2 * 3 + 1\n"
                              "  y = x * k + sigmoid(0) - clamp(5, 0, 1) / -max(2, 4)\n"
                              "}\n");
    /* x * 7 + 0.5 - (1 / -4): the folded constants 7, 0.5 and -0.25 and nothing else. */
    ck_assert_int_eq(count_op(c, IR_CONST), 3);
    ck_assert_int_eq(count_op(c, IR_SIGMOID), 0);
    ck_assert_int_eq(count_op(c, IR_CLAMP), 0);
    const IrNode *y = output(c, "y");
    ck_assert_int_eq(y->op, IR_SUB);
    ck_assert_double_eq(c->nodes[y->args[1]].value, -0.25);
    const IrNode *add = &c->nodes[y->args[0]];
    ck_assert_double_eq(c->nodes[add->args[1]].value, 0.5);
    const IrNode *mul = &c->nodes[add->args[0]];
    ck_assert_int_eq(mul->op, IR_MUL);
    ck_assert_double_eq(c->nodes[mul->args[1]].value, 7);
    ck_assert_str_eq(c->nodes[mul->args[1]].name, "k"); /* the folded value keeps its name */
    /* No algebra beyond constants: x * 1 and x - x stay. */
    c = cell_of("cell t(x[I]) -> y { y = x * 1 - x }");
    ck_assert_int_eq(count_op(c, IR_MUL), 1);
    ck_assert_int_eq(count_op(c, IR_SUB), 1);
    /* Constants that are not finite are errors. */
    expect_error("cell t(x[I]) -> y { y = x + 1/0 }", 1, 30, "constant expression evaluates to infinity");
    expect_error("cell t(x[I]) -> y { y = x + sqrt(-1) }", 1, 29, "constant expression evaluates to NaN");
    expect_error("cell t(x[I]) -> y { y = x * exp(1000) }", 1, 29, "constant expression evaluates to infinity");
}
END_TEST

START_TEST(hash_consing) {
    const IrCell *c = cell_of("cell t(x[I]) -> a, b, d, e {\n"
                              "  param W[H, I], p[H], q[H]\n"
                              "  a = tanh(W @ x + p) * 2\n"
                              "  b = tanh(W @ x + p)\n"
                              "  d = p + q\n"
                              "  e = q + p + 2\n"
                              "}\n");
    /* W @ x, W @ x + p, tanh(...) and the constant 2 exist once each. */
    ck_assert_int_eq(count_op(c, IR_MATVEC), 1);
    ck_assert_int_eq(count_op(c, IR_TANH), 1);
    ck_assert_int_eq(count_op(c, IR_CONST), 1);
    ck_assert_uint_eq(output(c, "a")->args[0], c->outputs[1].node);
    /* Operand order matters: p + q and q + p are two nodes. */
    ck_assert_int_eq(count_op(c, IR_ADD), 4);
    /* Equal declarations stay apart. */
    ck_assert_uint_ne(param(c, "p")->node, param(c, "q")->node);
    ck_assert_int_eq(count_op(c, IR_PARAM), 3);
    /* Two values with the same expression are one node, named after the first. */
    c = cell_of("cell t(x[I]) -> u, v { u = x * x\n v = x * x }");
    ck_assert_uint_eq(c->outputs[0].node, c->outputs[1].node);
    ck_assert_str_eq(c->nodes[c->outputs[1].node].name, "u");
    ck_assert_uint_eq(c->nnodes, 2);
}
END_TEST

/* ---- graph order, pruning, states and outputs ---------------------------------- */

/* Every operand id is smaller than its user's; leaves come first, in declaration order. */
static void assert_topological(const IrCell *c) {
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            ck_assert_msg(n->args[a] < i, "%s: %%%u uses %%%u", c->name, i, n->args[a]);
    }
    for (int k = 0; k < c->ninputs; k++) ck_assert_uint_eq(c->inputs[k].node, (uint32_t)k);
    for (int k = 0; k < c->nstates; k++) ck_assert_uint_eq(c->states[k].node, (uint32_t)(c->ninputs + k));
    for (int k = 0; k < c->nparams; k++)
        ck_assert_uint_eq(c->params[k].node, (uint32_t)(c->ninputs + c->nstates + k));
}

START_TEST(topological_ids) {
    /* Statements in an order opposite to their dependencies. */
    const IrCell *c = cell_of("cell t(x[I]) -> h {\n"
                              "  h' = P @ (o * tanh(c')) + m\n"
                              "  o = sigmoid(U @ m + b)\n"
                              "  c' = o * c + m\n"
                              "  m = (W @ x) * (V @ h)\n"
                              "  state c[H], h[H]\n"
                              "  param P[H, H], U[H, H], W[H, I], V[H, H], b[H]\n"
                              "}\n");
    assert_topological(c);
    ck_assert_uint_eq(c->states[1].next, c->outputs[0].node);
    ck_assert_uint_eq(c->outputs[0].node, c->nnodes - 1);
    /* The output of the other state's next value is an operand of h'. */
    ck_assert_uint_lt(c->states[0].next, c->states[1].next);
}
END_TEST

START_TEST(unused_pruned) {
    const IrCell *c = cell_of("cell t(x[I]) -> h {\n"
                              "  state h[H]\n"
                              "  param W[H, I], U[H, H], b[H]\n"
                              "  u = tanh(U @ h)\n"
                              "  w = u * 2\n"
                              "  z = W @ x\n"
                              "  h' = z + 1\n"
                              "}\n");
    /* u and w are gone from the graph (no tanh, no U @ h); every leaf stays. */
    ck_assert_int_eq(count_op(c, IR_TANH), 0);
    ck_assert_int_eq(count_op(c, IR_MATVEC), 1);
    ck_assert_uint_eq(c->nnodes, 5 + 3);
    assert_topological(c);
    /* Warnings, sorted by position: the parameters U and b, then u and w. */
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(diags.nwarnings, 4);
    ck_assert_str_eq(rendered(),
                     "t.cell:3:18: warning: parameter 'U' is never used\n"
                     "    3 |   param W[H, I], U[H, H], b[H]\n"
                     "      |                  ^\n"
                     "t.cell:3:27: warning: parameter 'b' is never used\n"
                     "    3 |   param W[H, I], U[H, H], b[H]\n"
                     "      |                           ^\n"
                     "t.cell:4:3: warning: value 'u' is never used\n"
                     "    4 |   u = tanh(U @ h)\n"
                     "      |   ^\n"
                     "t.cell:5:3: warning: value 'w' is never used\n"
                     "    5 |   w = u * 2\n"
                     "      |   ^\n");
    /* A named constant folded into a used expression is used (its node is not in the graph); one read only by
     * values nothing uses is left to their warnings. */
    c = cell_of("cell t(x[I]) -> h { state h[I]\n k = 2\n z = -2*3+1\n q = 0\n h' = x + k * 3 + h * z + sigmoid(q) }");
    ck_assert_int_eq(diags.nwarnings, 0);
    c = cell_of("cell t(x[I]) -> h { state h[I]\n k = 2\n d = k * 3\n h' = x + h }");
    ck_assert_int_eq(diags.nwarnings, 1);
    ck_assert_str_eq(diags.head->msg, "value 'd' is never used");
    /* A value that renames a used one, or shares its node, is not reported. */
    c = cell_of("cell t(x[I]) -> y { a = x\n v = x * 2\n v2 = x * 2\n y = v }");
    ck_assert_int_eq(diags.nwarnings, 0);
    /* An unused input is reported too; the state's own value need not be read. */
    c = cell_of("cell t(x[I]) -> h { state h[H] param b[H]\n h' = b }");
    ck_assert_int_eq(diags.nwarnings, 1);
    ck_assert_str_eq(diags.head->msg, "input 'x' is never used");
}
END_TEST

START_TEST(states_and_outputs) {
    const IrCell *c = cell_of("cell t(x[I]) -> o, h, c {\n"
                              "  state h[H], c[H]\n"
                              "  param W[H, I], p[H]\n"
                              "  c' = c + W @ x\n"
                              "  h' = tanh(c')\n"
                              "  o = h' * p\n"
                              "}\n");
    ck_assert_int_eq(c->nstates, 2);
    ck_assert_str_eq(c->states[0].name, "h");
    ck_assert_int_eq(c->nodes[c->states[0].node].op, IR_STATE);
    ck_assert_int_eq(c->nodes[c->states[0].next].op, IR_TANH);
    ck_assert_int_eq(c->nodes[c->states[1].next].op, IR_ADD);
    ck_assert_int_eq(c->noutputs, 3);
    /* In the order listed; a state output is its next value. */
    ck_assert_str_eq(c->outputs[0].name, "o");
    ck_assert_str_eq(c->outputs[1].name, "h");
    ck_assert_str_eq(c->outputs[2].name, "c");
    ck_assert_uint_eq(c->outputs[1].node, c->states[0].next);
    ck_assert_uint_eq(c->outputs[2].node, c->states[1].next);
    ck_assert_int_eq(c->nodes[c->outputs[0].node].op, IR_MUL);
    ck_assert_int_eq(c->outputs[0].loc.col, 17);
    ck_assert_str_eq(dump(c), "cell t\n"
                              "  dims I H\n"
                              "  %0 = input x : [I]                          ; line 1\n"
                              "  %1 = state h : [H]                          ; line 2\n"
                              "  %2 = state c : [H]                          ; line 2\n"
                              "  %3 = param W : [H, I]                       ; line 3\n"
                              "  %4 = param p : [H]                          ; line 3\n"
                              "  %5 = matvec %3, %0 : [H]                    ; line 4\n"
                              "  %6 = add %2, %5 : [H]                       ; c', line 4\n"
                              "  %7 = tanh %6 : [H]                          ; h', line 5\n"
                              "  %8 = mul %7, %4 : [H]                       ; o, line 6\n"
                              "  next h = %7\n"
                              "  next c = %6\n"
                              "  output o = %8\n"
                              "  output h = %7\n"
                              "  output c = %6\n");
    /* A state's next value may be a leaf, or another state's next value. */
    c = cell_of("cell t(x[I]) -> a { state a[I], b[I]\n a' = x\n b' = a' }");
    ck_assert_uint_eq(c->states[0].next, c->inputs[0].node);
    ck_assert_uint_eq(c->states[1].next, c->inputs[0].node);
    /* A matrix parameter may be renamed and used through the new name. */
    c = cell_of("cell t(x[I]) -> y { param W[H, I]\n A = W\n y = A @ x }");
    ck_assert_int_eq(output(c, "y")->op, IR_MATVEC);
}
END_TEST

START_TEST(state_and_output_errors) {
    expect_error("cell t(x[I]) -> h { state h[H] param b[I]\n h' = b }", 2, 2,
                 "dimension mismatch: h' is [I] but state 'h' is [H]");
    expect_error("cell t(x[I]) -> h { state h[H]\n h' = 2 }", 2, 2,
                 "dimension mismatch: h' is a scalar but state 'h' is [H]");
    expect_error("cell t(x[I]) -> h, y { state h[H]\n h' = h\n y = 3 }", 1, 20,
                 "output 'y' is a scalar; an output must be a vector");
    expect_error("cell t(x[I]) -> W { state h[H] param W[H, I]\n h' = W @ x }", 1, 17,
                 "output 'W' is a parameter; an output names a state or a computed value");
    expect_error("cell t(x[I]) -> h, h { state h[H]\n h' = h }", 1, 20, "output 'h' is listed twice");
    /* the kernels' argument block holds 8 states and 8 outputs: the ninth is refused where it is declared */
    expect_error("cell t(x[I]) -> a { state a[H], b[H], c[H], d[H], e[H], f[H], g[H], h[H], i[H]\n"
                 " a' = a\n b' = b\n c' = c\n d' = d\n e' = e\n f' = f\n g' = g\n h' = h\n i' = i }",
                 1, 75, "a cell has at most 8 states; 'i' is the 9th");
    expect_error("cell t(x[I]) -> h, v1, v2, v3, v4, v5, v6, v7, v8 { state h[H]\n h' = h\n"
                 " v1 = h + 1\n v2 = h + 2\n v3 = h + 3\n v4 = h + 4\n v5 = h + 5\n v6 = h + 6\n v7 = h + 7\n v8 = h + 8 }",
                 1, 48, "a cell has at most 8 outputs; 'v8' is the 9th");
    expect_error("cell t(x[I]) -> h { state h[H]\n h' = h\n h = h }", 3, 2,
                 "cannot assign to state 'h'; write h' = ... for its next value");
    expect_error("cell t(x[I]) -> h { state h[H] param b[H]\n h' = h\n b = h }", 3, 2,
                 "cannot assign to parameter 'b'");
    expect_error("cell t(x[I]) -> h { state h[H]\n h' = h\n h' = x }", 3, 2, "'h'' is assigned twice");
    expect_error("cell t(x[I]) -> h { state h[H, H]\n h' = h }", 1, 27,
                 "state 'h' has 2 dimensions; it must have exactly 1");
    expect_error("cell t(x[I]) -> h { state h[H] param T[H, H, H]\n h' = h }", 1, 38,
                 "parameter 'T' has 3 dimensions; it must have 1 (a vector) or 2 (a matrix)");
    expect_error("cell t(x[I]) -> y { y = x @ x }", 1, 27,
                 "the left operand of '@' must be a matrix parameter, not 'x'");
    expect_error("cell t(x[I]) -> y { param W[I, I]\n y = W @ 2 }", 2, 8,
                 "the right operand of '@' must be a vector, not a scalar");
    expect_error("cell t(x[I]) -> y { param W[I, I]\n y = 2 @ x }", 2, 8,
                 "the left operand of '@' must be a matrix parameter, not a number");
    /* A rejected declaration does not cause a second, made-up error where it is used. */
    expect_error("cell t(x[I]) -> h { state h[0] param b[H]\n h' = b }", 1, 29,
                 "a dimension must be a positive integer below 2^31 or a name, not '0'");
    expect_error("cell t(x[I]) -> h { state h[_H] param b[H]\n h' = b }", 1, 29,
                 "name '_H' is reserved: names may not begin with '_' or contain '__'");
    expect_error("cell t(x[I]) -> h { state h[2147483648]\n h' = h }", 1, 29,
                 "a dimension must be a positive integer below 2^31 or a name, not '2147483648'");
    ck_assert_ptr_nonnull(cell_of("cell t(x[I]) -> h { state h[2147483647]\n h' = h }"));
    /* Each later definition of a cell is reported once, against the first. */
    ck_assert_ptr_null(try_compile("cell a(x[I]) -> x2 { x2 = x }\n"
                                   "cell a(x[I]) -> x2 { x2 = x }\n"
                                   "cell a(x[I]) -> x2 { x2 = x }\n"));
    ck_assert_int_eq(diags.nerrors, 2);
    ck_assert_str_eq(rendered(), "t.cell:2:6: error: cell 'a' is defined twice\n"
                                 "    2 | cell a(x[I]) -> x2 { x2 = x }\n"
                                 "      |      ^\n"
                                 "t.cell:1:6: note: first defined here\n"
                                 "    1 | cell a(x[I]) -> x2 { x2 = x }\n"
                                 "      |      ^\n"
                                 "t.cell:3:6: error: cell 'a' is defined twice\n"
                                 "    3 | cell a(x[I]) -> x2 { x2 = x }\n"
                                 "      |      ^\n"
                                 "t.cell:1:6: note: first defined here\n"
                                 "    1 | cell a(x[I]) -> x2 { x2 = x }\n"
                                 "      |      ^\n");
}
END_TEST

/* A chain of n values, v0 = x and v(i) = v(i-1) OP x, written last-first so that building
 * the first statement walks the whole chain (OP NULL: v(i) = v(i-1)). */
static const char *chain(int n, const char *op) {
    StrBuf sb = {0};
    sb_printf(&sb, "cell t(x[I]) -> y {\n  y = v%d\n", n - 1);
    for (int i = n - 1; i > 0; i--) {
        if (op) sb_printf(&sb, "  v%d = v%d %s x\n", i, i - 1, op);
        else sb_printf(&sb, "  v%d = v%d\n", i, i - 1);
    }
    sb_puts(&sb, "  v0 = x\n}\n");
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

START_TEST(long_chains) {
    /* Depth counts expression nesting through the values read: bounded, reported once. */
    ck_assert_ptr_nonnull(cell_of(chain(900, "+")));
    ck_assert_ptr_null(try_compile(chain(5000, "*")));
    ck_assert_int_eq(diags.nerrors, 1);
    ck_assert_str_eq(diags.head->msg, "expressions nested more than 2000 deep");
    ck_assert_ptr_null(try_compile(chain(5000, NULL)));
    ck_assert_int_eq(diags.nerrors, 1);
    ck_assert_str_eq(diags.head->msg, "values depend on each other more than 2000 deep");
    /* In dependency order, a long chain is no deeper than one statement. */
    StrBuf sb = {0};
    sb_puts(&sb, "cell t(x[I]) -> y {\n  v0 = x\n");
    for (int i = 1; i < 20000; i++) sb_printf(&sb, "  v%d = v%d * x\n", i, i - 1);
    sb_puts(&sb, "  y = v19999\n}\n");
    const IrCell *c = cell_of(arena_strdup(&arena, sb_str(&sb)));
    sb_free(&sb);
    ck_assert_uint_eq(c->nnodes, 1 + 19999);
}
END_TEST

/* ---- names ----------------------------------------------------------------------- */

/* A cell with `name` in one position: 0 cell, 1 input, 2 state, 3 parameter, 4 value, 5 dim. */
static const char *named(int where, const char *name) {
    static const char *const fmt[] = {
        "cell %s(x[I]) -> h { state h[I]\n h' = x }",
        "cell t(%s[I]) -> h { state h[I]\n h' = %s }",
        "cell t(x[I]) -> h { state h[I], %s[I]\n h' = x\n %s' = x }",
        "cell t(x[I]) -> h { state h[I] param %s[I]\n h' = x * %s }",
        "cell t(x[I]) -> h { state h[I]\n %s = x\n h' = %s }",
        "cell t(x[%s]) -> h { state h[%s]\n h' = x }",
    };
    return arena_printf(&arena, fmt[where], name, name, name);
}

/* The column of the first mention of the name in named(where, ...). */
static int named_col(int where, int line) {
    static const int col[] = {6, 8, 33, 38, 2, 10};
    return where == 4 ? (line == 2 ? 2 : 0) : col[where];
}

START_TEST(name_rules) {
    char max[65], over[66];
    memset(max, 'a', 64), max[64] = 0;
    memset(over, 'b', 65), over[65] = 0;
    for (int where = 0; where < 6; where++) {
        /* Accepted: letters, digits and single underscores, up to 64 characters. */
        static const char *const good[] = {"A", "z9", "W_ih_l0", "and_gate", "cells", "tanh", "main"};
        for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
            const IrModule *m = try_compile(named(where, good[i]));
            ck_assert_msg(m != NULL, "'%s' (position %d) rejected:\n%s", good[i], where, rendered());
        }
        ck_assert_msg(try_compile(named(where, max)) != NULL, "64 characters rejected:\n%s", rendered());

        /* Refused wherever a name is declared or assigned, at its first mention. */
        int line = where == 4 ? 2 : 1, col = named_col(where, line);
        static const struct { const char *name, *msg; } bad[] = {
            {"a__b", "name 'a__b' is reserved: names may not begin with '_' or contain '__'"},
            {"_a", "name '_a' is reserved: names may not begin with '_' or contain '__'"},
            {"a_", NULL},
            {"int", "'int' is a reserved word and cannot name a value"},
            {"class", "'class' is a reserved word and cannot name a value"},
            {"half", "'half' is a reserved word and cannot name a value"},
            {"nullptr", "'nullptr' is a reserved word and cannot name a value"},
            {"and", "'and' is a reserved word and cannot name a value"},
            {"static_cast", "'static_cast' is a reserved word and cannot name a value"},
            {"thread_local", "'thread_local' is a reserved word and cannot name a value"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            const IrModule *m = try_compile(named(where, bad[i].name));
            /* a trailing underscore is fine, but for a cell's name (part of its kernels' names) */
            const char *msg = bad[i].msg ? bad[i].msg : where == 0 ? "cell name 'a_' may not end with '_'" : NULL;
            if (!msg) {
                ck_assert_msg(m != NULL, "'%s' rejected:\n%s", bad[i].name, rendered());
                continue;
            }
            ck_assert_msg(m == NULL, "'%s' (position %d) accepted", bad[i].name, where);
            ck_assert_ptr_nonnull(diags.head);
            const Diag *g = diags.head;
            ck_assert_str_eq(g->msg, msg);
            ck_assert_int_eq(g->loc.line, line);
            ck_assert_int_eq(g->loc.col, col);
        }
        ck_assert_ptr_null(try_compile(named(where, over)));
        ck_assert_str_eq(diags.head->msg, "name 'bbbbbbbbbbbbbbbbbbbb...' is longer than 64 characters");
    }
}
END_TEST

/* Every name that reaches the IR (and so the dumps and generated code) obeys the rules. */
static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 64 || strstr(s, "__")) return 0;
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z'))) return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return 0;
    return 1;
}

START_TEST(only_checked_names_reach_the_ir) {
    const IrCell *c = cell_of("cell Odd_1(in_0[D_in]) -> out_a, st {\n"
                              "  state st[D_h]\n"
                              "  param Wx[D_h, D_in], v9[D_h]\n"
                              "  out_a = tanh(Wx @ in_0) * v9\n"
                              "  st' = out_a + st\n"
                              "}\n");
    ck_assert(name_ok(c->name));
    for (int i = 0; i < c->ndims; i++) ck_assert(c->dims[i].name && name_ok(c->dims[i].name));
    for (int k = 0; k < c->ninputs; k++) ck_assert(name_ok(c->inputs[k].name));
    for (int k = 0; k < c->nstates; k++) ck_assert(name_ok(c->states[k].name));
    for (int k = 0; k < c->nparams; k++) ck_assert(name_ok(c->params[k].name));
    for (int k = 0; k < c->noutputs; k++) ck_assert(name_ok(c->outputs[k].name));
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const char *n = c->nodes[i].name;
        if (!n) continue;
        /* A primed state's value is named with its prime, which the dump writes as such. */
        size_t len = strlen(n);
        char *copy = arena_strdup(&arena, n);
        if (len && copy[len - 1] == '\'') copy[len - 1] = 0;
        ck_assert_msg(name_ok(copy), "node name '%s'", n);
    }
}
END_TEST

/* ---- binding and lookup ------------------------------------------------------------ */

/* Binds specs and returns the rendered diagnostics ("" on success). */
static const char *bind(const IrCell *c, const char *const *specs, int n, int64_t *dv, int expect_ok) {
    Diags d;
    diag_init(&d, &arena, "bind", NULL, 0);
    int ok = ir_bind_dims(c, specs, n, dv, &d);
    ck_assert_int_eq(ok, expect_ok);
    StrBuf sb = {0};
    diag_render(&d, &sb);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

START_TEST(bind_dims) {
    const IrCell *c = cell_of("cell t(x[I]) -> h { state h[H] param W[H, I], P[4, H]\n h' = tanh(W @ x + h) }");
    int64_t dv[3];
    ck_assert_str_eq(bind(c, (const char *[]){"H=8", "I=3"}, 2, dv, 1), "");
    ck_assert_int_eq(dv[ir_find_dim(c, "I")], 3);
    ck_assert_int_eq(dv[ir_find_dim(c, "H")], 8);
    ck_assert_int_eq(dv[2], 4); /* literals bind themselves */
    ck_assert_str_eq(bind(c, (const char *[]){"H=2147483647", "I=1"}, 2, dv, 1), "");
    ck_assert_int_eq(dv[1], 2147483647);

    static const struct { const char *spec, *msg; } bad[] = {
        {"H8", "bind: error: dimension binding 'H8' is not NAME=VALUE\n"},
        {"=8", "bind: error: dimension binding '=8' is not NAME=VALUE\n"},
        {"Z=8", "bind: error: cell 't' has no dimension 'Z'\n"},
        {"4=4", "bind: error: cell 't' has no dimension '4'\n"},
        {"H=0", "bind: error: dimension H must be a positive integer below 2^31, not '0'\n"},
        {"H=-3", "bind: error: dimension H must be a positive integer below 2^31, not '-3'\n"},
        {"H=", "bind: error: dimension H must be a positive integer below 2^31, not ''\n"},
        {"H=5x", "bind: error: dimension H must be a positive integer below 2^31, not '5x'\n"},
        {"H=2147483648", "bind: error: dimension H must be a positive integer below 2^31, not '2147483648'\n"},
        {"H=99999999999999999999", "bind: error: dimension H must be a positive integer below 2^31, "
                                   "not '99999999999999999999'\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_str_eq(bind(c, (const char *[]){"I=3", bad[i].spec}, 2, dv, 0), bad[i].msg);
    ck_assert_str_eq(bind(c, (const char *[]){"I=3"}, 1, dv, 0),
                     "bind: error: dimension H of cell 't' is not bound (use H=VALUE)\n");
    ck_assert_str_eq(bind(c, NULL, 0, dv, 0),
                     "bind: error: dimension I of cell 't' is not bound (use I=VALUE)\n"
                     "bind: error: dimension H of cell 't' is not bound (use H=VALUE)\n");
    /* A very long name is an error of its own (never cut to a prefix that may name another), its message cut */
    char spec[300];
    memset(spec, 'N', 200);
    strcpy(spec + 200, "=3");
    const char *msg = bind(c, (const char *[]){spec}, 1, dv, 0);
    ck_assert_msg(strstr(msg, "bind: error: dimension binding 'NNNN") &&
                  strstr(msg, "...': the name is longer than 79 characters\n"), "%s", msg);
    /* bound twice: to one value, as once; to two, an error */
    ck_assert_str_eq(bind(c, (const char *[]){"I=3", "H=4", "H=4"}, 3, dv, 1), "");
    ck_assert_str_eq(bind(c, (const char *[]){"I=3", "H=4", "H=5"}, 3, dv, 0),
                     "bind: error: dimension H is bound twice, to 4 and to 5\n");
}
END_TEST

START_TEST(find_cell) {
    const IrModule *m = try_compile("cell a(x[I]) -> y { y = x }\ncell b(x[I]) -> y { y = -x }\n");
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(ir_find_cell(m, "a")->name, "a");
    ck_assert_str_eq(ir_find_cell(m, "b")->name, "b");
    ck_assert_ptr_null(ir_find_cell(m, "c"));
    ck_assert_ptr_null(ir_find_cell(m, "A"));
    ck_assert_ptr_null(ir_find_cell(m, NULL)); /* two cells: no default */
    ck_assert_ptr_null(ir_find_cell(NULL, "a"));
    m = try_compile("cell only(x[I]) -> y { y = x }");
    ck_assert_str_eq(ir_find_cell(m, NULL)->name, "only");
    ck_assert_str_eq(ir_find_cell(m, "only")->name, "only");
}
END_TEST

START_TEST(shipped_cells_are_topological) {
    static const char *const files[] = {"cells/lstm.cell", "cells/gru.cell", "cells/lstmp.cell",
                                        "cells/mlstm.cell", "cells/peephole.cell", "cells/sru.cell"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        FILE *f = fopen(files[i], "rb");
        ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)", files[i]);
        char buf[8192];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const IrCell *c = cell_of(buf);
        assert_topological(c);
        ck_assert_int_eq(diags.nwarnings, 0);
        for (int k = 0; k < c->nstates; k++) ck_assert_uint_ne(c->states[k].next, IR_NONE);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("build");
    TCase *tc = tcase_create("build");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, dims_interned);
    tcase_add_test(tc, many_dims);
    tcase_add_test(tc, constants_folded);
    tcase_add_test(tc, hash_consing);
    tcase_add_test(tc, topological_ids);
    tcase_add_test(tc, unused_pruned);
    tcase_add_test(tc, states_and_outputs);
    tcase_add_test(tc, state_and_output_errors);
    tcase_add_test(tc, long_chains);
    tcase_add_test(tc, name_rules);
    tcase_add_test(tc, only_checked_names_reach_the_ir);
    tcase_add_test(tc, bind_dims);
    tcase_add_test(tc, find_cell);
    tcase_add_test(tc, shipped_cells_are_topological);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
