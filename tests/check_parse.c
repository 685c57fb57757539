/* Tests for the scanner and parser (grammar/): tokens, numbers, primed names, comments,
 * locations, separators, several cells, operator precedence and nesting limits.
 * Key idea: the syntax tree is printed as an s-expression, so each test states the exact
 * tree it expects; a few tests go on through ir_compile to see the same shape in the IR. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../grammar/ast.h"
#include "../ir/ir.h"
#include "testutil.h"

/* ---- fixture and helpers ------------------------------------------------------- */

static Arena arena;
static Diags diags;

static void setup(void) { arena_init(&arena); }
static void teardown(void) { arena_free(&arena); }

/* Parses text (copied into the arena) with a fresh diagnostics sink. */
static AstCell *parse(const char *text) {
    size_t len = strlen(text);
    char *src = arena_strndup(&arena, text, len);
    diag_init(&diags, &arena, "t.cell", src, len);
    return ast_parse(&arena, &diags, src, len);
}

/* Parses and checks text with a fresh diagnostics sink; NULL when it had errors. */
static const IrModule *compile(const char *text) {
    size_t len = strlen(text);
    char *src = arena_strndup(&arena, text, len);
    diag_init(&diags, &arena, "t.cell", src, len);
    return ir_compile(&arena, &diags, src, len);
}

static const char *rendered(void) {
    StrBuf sb = {0};
    diag_render(&diags, &sb);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* The only error recorded (fails unless there is exactly one). */
static const Diag *only_error(void) {
    ck_assert_msg(diags.nerrors == 1, "expected exactly one error, got %d:\n%s", diags.nerrors, rendered());
    for (const Diag *g = diags.head; g; g = g->next)
        if (g->level == DIAG_ERROR) return g;
    ck_abort_msg("the error was not kept");
    return NULL;
}

static void expect_error(int line, int col, int len, const char *msg) {
    const Diag *g = only_error();
    ck_assert_str_eq(g->msg, msg);
    ck_assert_int_eq(g->loc.line, line);
    ck_assert_int_eq(g->loc.col, col);
    ck_assert_int_eq(g->loc.len, len);
}

static void sexpr(const AstExpr *e, StrBuf *out) {
    switch (e->kind) {
    case AST_NAME: sb_puts(out, e->name); break;
    case AST_PRIMED: sb_printf(out, "%s'", e->name); break;
    case AST_NUM: sb_printf(out, "%.17g", e->num); break;
    case AST_NEG:
        sb_puts(out, "(neg ");
        sexpr(e->lhs, out);
        sb_putc(out, ')');
        break;
    case AST_BINARY:
        sb_printf(out, "(%c ", e->op);
        sexpr(e->lhs, out);
        sb_putc(out, ' ');
        sexpr(e->rhs, out);
        sb_putc(out, ')');
        break;
    case AST_CALL:
        sb_printf(out, "(%s", e->name);
        for (int i = 0; i < e->nargs; i++) {
            sb_putc(out, ' ');
            sexpr(e->args[i], out);
        }
        sb_putc(out, ')');
        break;
    }
}

/* The tree of `expr` as the right-hand side of a statement, as an s-expression. */
static const char *tree(const char *expr) {
    char text[512];
    snprintf(text, sizeof text, "cell t(x[I]) -> h {\n  v = %s\n}\n", expr);
    AstCell *c = parse(text);
    ck_assert_msg(diags.nerrors == 0, "'%s' does not parse:\n%s", expr, rendered());
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(c->stmts);
    StrBuf sb = {0};
    sexpr(c->stmts->expr, &sb);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* The value of the single number in `v = NUMBER`. */
static double number(const char *text) {
    char src[256];
    snprintf(src, sizeof src, "cell t(x[I]) -> h { v = %s }", text);
    AstCell *c = parse(src);
    ck_assert_msg(diags.nerrors == 0, "'%s' does not parse:\n%s", text, rendered());
    ck_assert_int_eq(c->stmts->expr->kind, AST_NUM);
    return c->stmts->expr->num;
}

static int count_stmts(const AstCell *c) {
    int n = 0;
    for (const AstStmt *s = c->stmts; s; s = s->next) n++;
    return n;
}

static int count_decls(const AstDecl *d) {
    int n = 0;
    for (; d; d = d->next) n++;
    return n;
}

/* ---- precedence ----------------------------------------------------------------- */

START_TEST(precedence) {
    static const struct { const char *expr, *tree; } cases[] = {
        {"-W @ x", "(neg (@ W x))"},
        {"a * W @ x", "(* a (@ W x))"},
        {"a * -W @ x", "(* a (neg (@ W x)))"},
        {"W @ x * a", "(* (@ W x) a)"},
        {"-a * b", "(* (neg a) b)"},
        {"a + b * c", "(+ a (* b c))"},
        {"a * b + c", "(+ (* a b) c)"},
        {"a - b - c", "(- (- a b) c)"},
        {"a / b * c", "(* (/ a b) c)"},
        {"a - -b", "(- a (neg b))"},
        {"--a", "(neg (neg a))"},
        {"A @ B @ x", "(@ (@ A B) x)"},
        {"A @ (B @ x)", "(@ A (@ B x))"},
        {"(a + b) * c", "(* (+ a b) c)"},
        {"-(a + b)", "(neg (+ a b))"},
        {"W @ x + U @ h + b", "(+ (+ (@ W x) (@ U h)) b)"},
        {"f(a, b + c, -d)", "(f a (+ b c) (neg d))"},
        {"f()", "(f)"},
        {"f(g(a))", "(f (g a))"},
        {"h' * 2", "(* h' 2)"},
        {"(1 - z) * n + z * h", "(+ (* (- 1 z) n) (* z h))"},
        {"r * (U_n @ h + b_hn)", "(* r (+ (@ U_n h) b_hn))"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ck_assert_str_eq(tree(cases[i].expr), cases[i].tree);
}
END_TEST

/* Looks up the node of an output, the only output of the only cell. */
static const IrNode *output_node(const IrModule *m, const IrCell **cell) {
    ck_assert_msg(m != NULL, "does not compile:\n%s", rendered());
    const IrCell *c = ir_find_cell(m, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->noutputs, 1);
    *cell = c;
    return &c->nodes[c->outputs[0].node];
}

/* The ops whose derivatives jump, found from the table's derivative texts (ir_op_has_kink), and a
 * cell's list of them (ir_cell_kinks: what `rnncc run` names when a gradient check fails). */
START_TEST(kinks_from_the_table) {
    /* exactly these: `rnncc run --help` names them */
    static const char *const kinked = " relu abs min max clamp hardsigmoid ";
    for (int op = 0; op < IR_OP_COUNT; op++) {
        char word[64];
        snprintf(word, sizeof word, " %s ", ir_ops[op].name);
        ck_assert_msg(ir_op_has_kink((IrOp)op) == (strstr(kinked, word) != NULL), "%s", ir_ops[op].name);
    }
    ck_assert(!ir_op_has_kink(IR_OP_COUNT) && !ir_op_has_kink((IrOp)-1));
    const IrCell *c;
    output_node(compile("cell t(x[I]) -> h { state h[H]\n param W[H, I], u[H]\n"
                        " h' = relu(W @ x + u * h) + abs(max(h, u) + relu(h)) }"), &c);
    char buf[64];
    ck_assert_int_eq(ir_cell_kinks(c, buf, sizeof buf), 3);
    ck_assert_str_eq(buf, "relu, max, abs"); /* in node order */
    ck_assert_int_eq(ir_cell_kinks(c, buf, 8), 3); /* cut short, still terminated */
    ck_assert_str_eq(buf, "relu, m");
    output_node(compile("cell t(x[I]) -> h { state h[H]\n param W[H, I], U[H, H]\n h' = tanh(W @ x + U @ h) }"), &c);
    ck_assert_int_eq(ir_cell_kinks(c, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(precedence_in_ir) {
    const IrCell *c;
    /* -W @ x is -(W @ x): a neg of a matvec, which a matrix could not be negated into. */
    const IrNode *n = output_node(compile("cell t(x[I]) -> y { param W[H, I]\n y = -W @ x }"), &c);
    ck_assert_str_eq(ir_ops[n->op].name, "neg");
    ck_assert_str_eq(ir_ops[c->nodes[n->args[0]].op].name, "matvec");

    /* a * W @ x is a * (W @ x). */
    n = output_node(compile("cell t(x[I]) -> y { param W[H, I], a[H]\n y = a * W @ x }"), &c);
    ck_assert_int_eq(n->op, IR_MUL);
    ck_assert_int_eq(c->nodes[n->args[0]].op, IR_PARAM);
    ck_assert_int_eq(c->nodes[n->args[1]].op, IR_MATVEC);

    /* 2 - 3 * 4 folds to -10 (not -4), 2 * -3 + 1 to -5, -2 - -3 to 1. */
    n = output_node(compile("cell t(x[I]) -> y { y = x * (2 - 3 * 4) + (2 * -3 + 1) * (-2 - -3) }"), &c);
    ck_assert_int_eq(n->op, IR_ADD);
    const IrNode *l = &c->nodes[n->args[0]], *r = &c->nodes[n->args[1]];
    ck_assert_int_eq(l->op, IR_MUL);
    ck_assert_double_eq(c->nodes[l->args[1]].value, -10);
    ck_assert_int_eq(r->op, IR_CONST);
    ck_assert_double_eq(r->value, -5);
}
END_TEST

/* ---- tokens ----------------------------------------------------------------------- */

START_TEST(numbers) {
    ck_assert_double_eq(number("2"), 2);
    ck_assert_double_eq(number("0.5"), 0.5);
    ck_assert_double_eq(number(".5"), 0.5);
    ck_assert_double_eq(number("1."), 1);
    ck_assert_double_eq(number("1e-3"), 1e-3);
    ck_assert_double_eq(number("2.5E+2"), 250);
    ck_assert_double_eq(number(".25e1"), 2.5);
    ck_assert_double_eq(number("007"), 7);
    ck_assert_double_eq(number("1e-400"), 0); /* underflow is silent */

    parse("cell t(x[I]) -> h { v = 1e400 }");
    expect_error(1, 25, 5, "number '1e400' is too large");

    /* A number has no sign: -1 is unary minus on 1. */
    ck_assert_str_eq(tree("-1"), "(neg 1)");
    /* 1e is the number 1 followed by the name e (which starts the next statement). */
    AstCell *c = parse("cell t(x[I]) -> h { v = 1e = 2 }");
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(count_stmts(c), 2);
    ck_assert_double_eq(c->stmts->expr->num, 1);
    ck_assert_str_eq(c->stmts->next->name, "e");
}
END_TEST

/* An embedding program's decimal comma (LC_NUMERIC) changes neither a cell's numbers nor the IR's dump: they
 * were 0 and "0,5" before (strtod and printf follow the thread's locale). */
START_TEST(numbers_ignore_the_locale) {
    locale_t comma = tu_comma_locale(), old = uselocale(comma);
    ck_assert_double_eq(number("0.5"), 0.5);
    ck_assert_double_eq(number(".25e1"), 2.5);
    const IrModule *m = compile("cell t(x[I]) -> h {\n  state h[H]\n  param W[H, I]\n  h' = 0.5 * tanh(W @ x) + 0.25 * h\n}\n");
    ck_assert_ptr_nonnull(m);
    StrBuf sb = {0};
    ir_dump(m->cells[0], &sb);
    ck_assert_msg(strstr(sb_str(&sb), "const 0.5 :") && strstr(sb_str(&sb), "const 0.25 :"), "%s", sb_str(&sb));
    sb_free(&sb);
    uselocale(old);
    freelocale(comma);
}
END_TEST

START_TEST(names_and_primes) {
    AstCell *c = parse("cell t(x[I]) -> h { state h[H], c[H]\n"
                       "  Ab_9 = x\n"
                       "  ab_9 = Ab_9\n"
                       "  h' = c' * ab_9\n"
                       "  cells = 1\n"
                       "  params = 2\n"
                       "}\n");
    ck_assert_int_eq(diags.nerrors, 0);
    const AstStmt *s = c->stmts;
    ck_assert_str_eq(s->name, "Ab_9");
    ck_assert_int_eq(s->primed, 0);
    s = s->next;
    ck_assert_str_eq(s->name, "ab_9"); /* case matters: a second name */
    ck_assert_str_eq(s->expr->name, "Ab_9");
    s = s->next;
    ck_assert_str_eq(s->name, "h"); /* the prime is not part of the name */
    ck_assert_int_eq(s->primed, 1);
    ck_assert_int_eq(s->loc.len, 2); /* but it is part of the token */
    ck_assert_int_eq(s->expr->lhs->kind, AST_PRIMED);
    ck_assert_str_eq(s->expr->lhs->name, "c");
    s = s->next;
    ck_assert_str_eq(s->name, "cells"); /* keywords are whole words only */
    ck_assert_str_eq(s->next->name, "params");

    /* A keyword cannot be a name. */
    parse("cell t(x[I]) -> h { state = 1 }");
    expect_error(1, 27, 1, "syntax error, unexpected '=', expecting name");
    parse("cell param(x[I]) -> h { }");
    expect_error(1, 6, 5, "syntax error, unexpected 'param', expecting name");

    /* A space before the prime makes it a stray quote; a second prime is stray too. */
    parse("cell t(x[I]) -> h { v = h ' }");
    expect_error(1, 27, 1, "stray ''' in input");
    parse("cell t(x[I]) -> h { v = h'' }");
    expect_error(1, 27, 1, "stray ''' in input");
}
END_TEST

START_TEST(locations) {
    /* Lines and columns count bytes from 1; a tab is one column; CR LF ends a line. */
    AstCell *c = parse("# comment\r\n"
                       "cell t(x[I]) -> h {\r\n"
                       "\tv = W_i @ x + 12.5\r\n"
                       "  h' = sigmoid(v)\r\n"
                       "}\r\n");
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(c->loc.line, 2);
    ck_assert_int_eq(c->loc.col, 6);
    ck_assert_int_eq(c->inputs->loc.col, 8);
    ck_assert_int_eq(c->inputs->dims[0].loc.col, 10);
    ck_assert_int_eq(c->outputs->loc.col, 17);
    const AstStmt *s = c->stmts;
    ck_assert_int_eq(s->loc.line, 3);
    ck_assert_int_eq(s->loc.col, 2);
    const AstExpr *plus = s->expr;
    ck_assert_int_eq(plus->op, '+');
    ck_assert_int_eq(plus->loc.col, 14); /* an operator's location is the operator */
    ck_assert_int_eq(plus->lhs->loc.col, 10);
    ck_assert_int_eq(plus->lhs->lhs->loc.col, 6);
    ck_assert_int_eq(plus->lhs->lhs->loc.len, 3);
    ck_assert_int_eq(plus->rhs->loc.col, 16);
    ck_assert_int_eq(plus->rhs->loc.len, 4);
    s = s->next;
    ck_assert_int_eq(s->loc.line, 4);
    ck_assert_int_eq(s->loc.col, 3);
    ck_assert_int_eq(s->expr->loc.col, 8); /* a call's location is the function name */
    ck_assert_int_eq(s->expr->loc.len, 7);
    ck_assert_int_eq(s->expr->args[0]->loc.col, 16);
}
END_TEST

START_TEST(comments_and_whitespace) {
    AstCell *c = parse("# a file of one cell } { cell\n"
                       "cell t(x[I]) -> h {  # cell u(y[I]) -> h {\n"
                       "\f\v  v = x # + y\n"
                       "    # w = v\n"
                       "}\n"
                       "# the end, without a newline } ");
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_null(c->next);
    ck_assert_int_eq(count_stmts(c), 1);
    ck_assert_str_eq(tree("x # - y"), "x");
    /* Lines end at LF, CR LF or a CR alone (an old Mac file): a comment ends there, and locations count so. */
    parse("cell t(x[I]) -> h { # c\r  v = x # d\r  w = q ! \r}\r");
    expect_error(3, 9, 1, "stray '!' in input");
    parse("cell t(x[I]) -> h { # c\r\n  v = x\r\n  w = q ! \r\n}\r\n");
    expect_error(3, 9, 1, "stray '!' in input");
    /* A statement's name and its '=' may have comments between them, however long (a 100 KB one here: a flex
     * trailing context that looked for the '=' overflowed its state buffer on it). */
    StrBuf sb = {0};
    sb_puts(&sb, "cell t(x[I]) -> h {\n  v = x\n  w #");
    for (int i = 0; i < 100000; i++) sb_putc(&sb, 'c');
    sb_puts(&sb, "\n  # = not this one\n  = v\n}\n");
    c = parse(arena_strdup(&arena, sb_str(&sb)));
    sb_free(&sb);
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(count_stmts(c), 2);
    ck_assert_str_eq(c->stmts->next->name, "w");
    /* Non-ASCII bytes are allowed in comments only. */
    parse("# caf\xc3\xa9\ncell t(x[I]) -> h { v = x }");
    ck_assert_int_eq(diags.nerrors, 0);
    parse("cell t(x[I]) -> h { v = x \xc3\xa9 }");
    expect_error(1, 27, 2, "non-ASCII character in input");
    /* An input of comments and whitespace only has no cells. */
    ck_assert_ptr_null(compile("# nothing here\n\n   \t\n"));
    expect_error(0, 0, 1, "no cell definitions in input");
    ck_assert_ptr_null(compile(""));
    expect_error(0, 0, 1, "no cell definitions in input");
}
END_TEST

START_TEST(stray_characters) {
    parse("cell t(x[I]) -> h { v = x $ }");
    expect_error(1, 27, 1, "stray '$' in input");
    /* A NUL byte is reported as a byte; the renderer prints it as a space. */
    static const char src[] = "cell t(x[I]) -> h { v = x \0 }";
    char *copy = arena_strndup(&arena, src, sizeof src - 1);
    diag_init(&diags, &arena, "t.cell", copy, sizeof src - 1);
    ast_parse(&arena, &diags, copy, sizeof src - 1);
    expect_error(1, 27, 1, "stray byte 0x00 in input");
    ck_assert_str_eq(rendered(), "t.cell:1:27: error: stray byte 0x00 in input\n"
                                 "    1 | cell t(x[I]) -> h { v = x   }\n"
                                 "      |                           ^\n");
}
END_TEST

/* ---- structure ------------------------------------------------------------------ */

START_TEST(several_cells) {
    const IrModule *m = compile("cell a(x[I]) -> h { state h[I]\n h' = x }\n"
                                "cell b(x[I]) -> y { y = -x }\n"
                                "cell c(x[J]) -> h { state h[J]\n h' = tanh(x + h) }\n");
    ck_assert_msg(m != NULL, "%s", rendered());
    ck_assert_int_eq(m->ncells, 3);
    ck_assert_str_eq(m->cells[0]->name, "a");
    ck_assert_str_eq(m->cells[1]->name, "b");
    ck_assert_str_eq(m->cells[2]->name, "c");
    ck_assert_ptr_eq(ir_find_cell(m, "b"), m->cells[1]);
    ck_assert_ptr_null(ir_find_cell(m, NULL)); /* no single cell */
    ck_assert_str_eq(m->cells[2]->inputs[0].name, "x");
    ck_assert_int_eq(m->cells[2]->ndims, 1); /* each cell has its own dimensions */
}
END_TEST

START_TEST(statement_order) {
    /* The same LSTM with its statements in reverse order and its declarations last. */
    static const char forward[] = "cell lstm(x[I]) -> h {\n"
                                  "  state h[H], c[H]\n"
                                  "  param W[H, I], U[H, H], b_i[H], b_f[H], b_g[H], b_o[H]\n"
                                  "  i = sigmoid(W @ x + U @ h + b_i)\n"
                                  "  f = sigmoid(W @ x + U @ h + b_f)\n"
                                  "  g = tanh(W @ x + U @ h + b_g)\n"
                                  "  o = sigmoid(W @ x + U @ h + b_o)\n"
                                  "  c' = f * c + i * g\n"
                                  "  h' = o * tanh(c')\n"
                                  "}\n";
    static const char backward[] = "cell lstm(x[I]) -> h {\n"
                                   "  h' = o * tanh(c')\n"
                                   "  c' = f * c + i * g\n"
                                   "  o = sigmoid(W @ x + U @ h + b_o)\n"
                                   "  g = tanh(W @ x + U @ h + b_g)\n"
                                   "  f = sigmoid(W @ x + U @ h + b_f)\n"
                                   "  i = sigmoid(W @ x + U @ h + b_i)\n"
                                   "  param W[H, I], U[H, H], b_i[H], b_f[H], b_g[H], b_o[H]\n"
                                   "  state h[H], c[H]\n"
                                   "}\n";
    const IrModule *a = compile(forward);
    ck_assert_msg(a != NULL, "%s", rendered());
    const IrModule *b = compile(backward);
    ck_assert_msg(b != NULL, "%s", rendered());
    const IrCell *ca = a->cells[0], *cb = b->cells[0];
    ck_assert_int_eq(ca->nnodes, cb->nnodes);
    /* Node ids follow the order values are needed, so compare the graphs by structure:
     * the same multiset of operators, and each state's next value the same operator. */
    int na[IR_OP_COUNT] = {0}, nb[IR_OP_COUNT] = {0};
    for (uint32_t i = 0; i < ca->nnodes; i++) na[ca->nodes[i].op]++;
    for (uint32_t i = 0; i < cb->nnodes; i++) nb[cb->nodes[i].op]++;
    for (int op = 0; op < IR_OP_COUNT; op++) ck_assert_int_eq(na[op], nb[op]);
    ck_assert_int_eq(na[IR_MATVEC], 2); /* W @ x and U @ h, each once */
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(ca->nodes[ca->states[k].next].op, cb->nodes[cb->states[k].next].op);
    ck_assert_int_eq(cb->nodes[cb->states[0].next].op, IR_MUL);
    ck_assert_int_eq(cb->nodes[cb->states[1].next].op, IR_ADD);
}
END_TEST

START_TEST(separators) {
    /* `;` may separate items or be left out; line ends mean nothing. */
    AstCell *c = parse("cell t(x[I]) -> h { ; state h[H]; param b[H];; a = x; h' = a + b; }");
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(count_stmts(c), 2);
    ck_assert_int_eq(count_decls(c->states), 1);
    ck_assert_int_eq(count_decls(c->params), 1);
    c = parse("cell t(x[I]) -> h { state h[H] param b[H] a = x h' = a + b }");
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(count_stmts(c), 2);
    ck_assert_str_eq(tree("W @ x\n    + b"), "(+ (@ W x) b)");
    /* Declarations of one kind accumulate over several lines, in order. */
    c = parse("cell t(x[I]) -> h { param a[H], b[H]\n state h[H]\n param c[H] }");
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(count_decls(c->params), 3);
    ck_assert_str_eq(c->params->next->next->name, "c");
    ck_assert_int_eq(c->params->next->ndims, 1);
    /* `;` is not allowed inside an expression or a declaration list. */
    parse("cell t(x[I]) -> h { a = x +; b = x }");
    expect_error(1, 28, 1, "syntax error, unexpected ';', expecting an expression");
    parse("cell t(x[I]) -> h { param a[H]; , b[H] }");
    expect_error(1, 33, 1, "syntax error, unexpected ',', expecting a declaration, a statement or '}'");
}
END_TEST

START_TEST(syntax_errors_recover) {
    /* A syntax error breaks its cell (not checked); the next cell is parsed. */
    AstCell *c = parse("cell a(x[I]) -> h { h' = (x }\n"
                       "cell b(x[I]) -> y { y = x }\n");
    ck_assert_int_eq(diags.nerrors, 1);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->name, "a");
    ck_assert_int_eq(c->broken, 1);
    ck_assert_ptr_nonnull(c->next);
    ck_assert_str_eq(c->next->name, "b");
    ck_assert_int_eq(c->next->broken, 0);
    /* Expected tokens are listed, all of them (bison's lookahead correction: every token that can follow, not
     * only the state's after its default reductions), those that start an expression or a statement, or the
     * binary operators, named as such. */
    parse("cell a(x[I]) -> h { h' = tanh(x }");
    expect_error(1, 33, 1, "syntax error, unexpected '}', expecting an operator, '(', ')' or ','");
    parse("cell a(x[I]) -> h { h' = tanh(x +) }");
    expect_error(1, 34, 1, "syntax error, unexpected ')', expecting an expression");
    parse("cell a(x[I]) -> h { state h[H]\n h' = h ) }");
    expect_error(2, 9, 1, "syntax error, unexpected ')', expecting a declaration, a statement, an operator, '(' or '}'");
    parse("cell a(x[I]) h { }");
    expect_error(1, 14, 1, "syntax error, unexpected name 'h', expecting '->'");
    /* A name where a statement may start: its '=' is missing, which the message says. */
    parse("cell a(x[I]) -> h { state h[H]\n h' h }");
    expect_error(2, 2, 2, "syntax error, unexpected primed name 'h'', expecting a declaration, a statement, '}' or ',' "
                          "(a statement is a name, '=' and an expression)");
    /* The first syntax error of every statement is reported: the parser resumes at the next declaration or
     * statement (a name that '=' follows, past blanks and comments), or at the cell's '}'; the cell stays broken,
     * unchecked (its unknown name q is not reported), and the next cell is parsed. */
    c = parse("cell a(x[I]) -> h {\n  state h[H]\n  param W[H, I]\n  u = tanh(W @ x +)\n  v = (h\n"
              "  w # a comment\n  = u @ @ v\n  h' = u + v + w + q\n}\ncell b(x[I]) -> y { y = x + }\n");
    ck_assert_int_eq(diags.nerrors, 4);
    const int want_line[] = {4, 6, 7, 10}, want_col[] = {19, 3, 9, 29};
    int k = 0;
    for (const Diag *g = diags.head; g; g = g->next, k++) {
        ck_assert_int_eq(g->loc.line, want_line[k]);
        ck_assert_int_eq(g->loc.col, want_col[k]);
    }
    ck_assert_int_eq(count_stmts(c), 1); /* the statements with an error are dropped: h' is kept */
    ck_assert_int_eq(c->broken, 1);
    ck_assert_int_eq(c->next->broken, 1);
    /* An error in the first tokens of the statement where the parser resumed is reported too (bison is silent for
     * three tokens after an error unless told the recovery is done); junk where no statement starts is dropped
     * without an error a token (which, so told, would report it forever: the parse must end). */
    parse("cell a(x[I]) -> h {\n  state h[H]\n  u = x +\n  v = * x\n  h' = u ) ) ( ] ] * / h\n}\n");
    ck_assert_int_eq(diags.nerrors, 3);
    ck_assert_int_eq(diags.head->next->loc.line, 4);
    ck_assert_int_eq(diags.head->next->loc.col, 7);
    /* A stray byte between a statement's name and its '=' is reported as such; the statement is still one. */
    c = parse("cell a(x[I]) -> y { state h[H]\n y $ = h\n h' = h }");
    expect_error(2, 4, 1, "stray '$' in input");
    ck_assert_int_eq(c->broken, 0);
    ck_assert_int_eq(count_stmts(c), 2);
    /* End of input inside a cell: the cell is kept, as broken. */
    c = parse("cell a(x[I]) -> h { v = x");
    expect_error(1, 25, 1, "syntax error, unexpected end of file, expecting a declaration, a statement, an operator, '(' or '}'");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->broken, 1);
    /* Text outside a cell ends the parse. */
    c = parse("junk cell a(x[I]) -> h { }");
    expect_error(1, 1, 4, "syntax error, unexpected name 'junk', expecting end of file or 'cell'");
    ck_assert_ptr_null(c);
}
END_TEST

/* ---- limits --------------------------------------------------------------------- */

/* Builds "cell t(x[I]) -> y { y = PRE^n x POST^n }" in the arena. */
static const char *nested(const char *pre, const char *post, int n) {
    size_t lp = strlen(pre), lq = strlen(post);
    StrBuf sb = {0};
    sb_puts(&sb, "cell t(x[I]) -> y {\n  y = ");
    for (int i = 0; i < n; i++) sb_putn(&sb, pre, lp);
    sb_puts(&sb, "x");
    for (int i = 0; i < n; i++) sb_putn(&sb, post, lq);
    sb_puts(&sb, "\n}\n");
    ck_assert(!sb.failed);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

START_TEST(deep_parentheses) {
    /* Parentheses make no tree nodes: 5000 levels are fine. */
    const IrModule *m = compile(nested("(", ")", 5000));
    ck_assert_msg(m != NULL, "%s", rendered());
    /* 100000 levels overflow bison's stack: one error, no crash. */
    ck_assert_ptr_null(compile(nested("(", ")", 100000)));
    const Diag *g = only_error();
    ck_assert_str_eq(g->msg, "expression nested too deeply for the parser");
    ck_assert_int_eq(g->loc.line, 2);
    /* 100000 unclosed parentheses: the same. */
    ck_assert_ptr_null(compile(nested("(", "", 100000)));
    ck_assert_str_eq(only_error()->msg, "expression nested too deeply for the parser");
}
END_TEST

START_TEST(deep_expressions) {
    /* Unary minus makes a node per level: the checker stops at its depth limit, once. */
    ck_assert_ptr_null(compile(nested("-", "", 5000)));
    const Diag *g = only_error();
    ck_assert_str_eq(g->msg, "expressions nested more than 2000 deep");
    ck_assert_int_eq(g->loc.line, 2);
    ck_assert_ptr_null(compile(nested("-", "", 100000)));
    ck_assert_str_eq(only_error()->msg, "expression nested too deeply for the parser");
    /* A long left-associative sum is parsed with a flat stack but checked as a deep tree. */
    ck_assert_ptr_null(compile(nested("", " + x", 100000)));
    ck_assert_str_eq(only_error()->msg, "expressions nested more than 2000 deep");
    ck_assert_ptr_nonnull(compile(nested("", " + x", 1000)));
    /* As are calls and matrix products nested to the right. */
    ck_assert_ptr_null(compile(nested("tanh(", ")", 3000)));
    ck_assert_str_eq(only_error()->msg, "expressions nested more than 2000 deep");
}
END_TEST

START_TEST(many_arguments) {
    /* A call with very many arguments parses in linear memory and fails on its arity. */
    StrBuf sb = {0};
    sb_puts(&sb, "cell t(x[I]) -> y { y = max(x");
    for (int i = 0; i < 100000; i++) sb_puts(&sb, ", x");
    sb_puts(&sb, ") }");
    ck_assert_ptr_null(compile(arena_strdup(&arena, sb_str(&sb))));
    sb_free(&sb);
    expect_error(1, 25, 3, "'max' takes 2 arguments, but 100001 were given");
}
END_TEST

int main(void) {
    Suite *s = suite_create("parse");
    TCase *tc = tcase_create("parse");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, precedence);
    tcase_add_test(tc, precedence_in_ir);
    tcase_add_test(tc, numbers);
    tcase_add_test(tc, numbers_ignore_the_locale);
    tcase_add_test(tc, names_and_primes);
    tcase_add_test(tc, locations);
    tcase_add_test(tc, comments_and_whitespace);
    tcase_add_test(tc, stray_characters);
    tcase_add_test(tc, several_cells);
    tcase_add_test(tc, statement_order);
    tcase_add_test(tc, separators);
    tcase_add_test(tc, syntax_errors_recover);
    tcase_add_test(tc, deep_parentheses);
    tcase_add_test(tc, deep_expressions);
    tcase_add_test(tc, many_arguments);
    tcase_add_test(tc, kinks_from_the_table);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
