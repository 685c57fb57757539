/* AST builders called from the grammar's one-line actions.
 * Key idea: the grammar only records what was written; every check happens in ir/build.c. */
#include "ast.h"

#include "ir/c_locale.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ast_cell_begin(ParseCtx *ctx, const char *name, SrcLoc loc) {
    AstCell *c = arena_alloc(ctx->arena, sizeof *c);
    if (!c) { ctx->cur = NULL; return; }
    c->name = name ? name : "";
    c->loc = loc;
    ctx->cur = c;
    ctx->cell_syntax_errors = 0; /* one before the cell (outside any) is not the cell's */
    ctx->stmt_tail = &c->stmts;
    ctx->out_tail = &c->outputs;
    ctx->decl_tails[AST_INPUTS] = &c->inputs;
    ctx->decl_tails[AST_STATES] = &c->states;
    ctx->decl_tails[AST_PARAMS] = &c->params;
    ctx->decl_which = AST_INPUTS;
}

void ast_cell_end(ParseCtx *ctx, int broken) {
    AstCell *c = ctx->cur;
    ctx->cur = NULL;
    if (!c) return;
    c->broken = broken || ctx->cell_syntax_errors; /* counted since ast_cell_begin */
    if (ctx->last_cell) ctx->last_cell->next = c;
    else ctx->cells = c;
    ctx->last_cell = c;
}

void ast_decls_begin(ParseCtx *ctx, int which) { ctx->decl_which = which; }

void ast_decl(ParseCtx *ctx, const char *name, SrcLoc loc, AstDims *dims) {
    if (!ctx->cur) return;
    AstDecl *d = arena_alloc(ctx->arena, sizeof *d);
    if (!d) return;
    d->name = name;
    d->loc = loc;
    if (dims) { d->dims = dims->dims; d->ndims = dims->n; }
    *ctx->decl_tails[ctx->decl_which] = d;
    ctx->decl_tails[ctx->decl_which] = &d->next;
}

void ast_output(ParseCtx *ctx, const char *name, SrcLoc loc) {
    if (!ctx->cur) return;
    AstOutput *o = arena_alloc(ctx->arena, sizeof *o);
    if (!o) return;
    o->name = name;
    o->loc = loc;
    *ctx->out_tail = o;
    ctx->out_tail = &o->next;
}

void ast_stmt(ParseCtx *ctx, const char *name, int primed, SrcLoc loc, AstExpr *e) {
    if (!ctx->cur) return;
    AstStmt *s = arena_alloc(ctx->arena, sizeof *s);
    if (!s) return;
    s->name = name;
    s->primed = primed;
    s->loc = loc;
    s->expr = e;
    *ctx->stmt_tail = s;
    ctx->stmt_tail = &s->next;
}

AstDims *ast_dims_add(ParseCtx *ctx, AstDims *dims, const char *name, const char *text, SrcLoc loc) {
    if (!dims) {
        dims = arena_alloc(ctx->arena, sizeof *dims);
        if (!dims) return NULL;
    }
    if (dims->n == dims->cap) {
        int cap = dims->cap ? dims->cap * 2 : 2;
        AstDim *p = arena_array(ctx->arena, (size_t)cap, sizeof *p);
        if (!p) return dims;
        if (dims->n) memcpy(p, dims->dims, (size_t)dims->n * sizeof *p);
        dims->dims = p;
        dims->cap = cap;
    }
    dims->dims[dims->n++] = (AstDim){name, text, loc};
    return dims;
}

static AstExpr *new_expr(ParseCtx *ctx, AstKind kind, SrcLoc loc) {
    AstExpr *e = arena_alloc(ctx->arena, sizeof *e);
    if (e) { e->kind = kind; e->loc = loc; }
    return e;
}

AstExpr *ast_name(ParseCtx *ctx, AstKind kind, const char *name, SrcLoc loc) {
    AstExpr *e = new_expr(ctx, kind, loc);
    if (e) e->name = name;
    return e;
}

AstExpr *ast_num(ParseCtx *ctx, const char *text, SrcLoc loc) {
    AstExpr *e = new_expr(ctx, AST_NUM, loc);
    if (!e) return NULL;
    errno = 0;
    e->num = c_strtod(text, NULL); /* '.' whatever the embedding program's locale */
    if (errno == ERANGE && fabs(e->num) > 1) {
        diag_error(ctx->diags, loc, "number '%s' is too large", text);
        e->num = 0;
    }
    return e;
}

AstExpr *ast_binary(ParseCtx *ctx, int op, AstExpr *lhs, AstExpr *rhs, SrcLoc loc) {
    AstExpr *e = new_expr(ctx, AST_BINARY, loc);
    if (e) { e->op = op; e->lhs = lhs; e->rhs = rhs; }
    return e;
}

AstExpr *ast_neg(ParseCtx *ctx, AstExpr *operand, SrcLoc loc) {
    AstExpr *e = new_expr(ctx, AST_NEG, loc);
    if (e) e->lhs = operand;
    return e;
}

/* Arguments arrive as a chain through a temporary AST_CALL node's args array, whose
 * capacity doubles whenever nargs reaches a power of two (so a long list stays linear). */
AstExpr *ast_arg(ParseCtx *ctx, AstExpr *list, AstExpr *e) {
    if (!list) list = new_expr(ctx, AST_CALL, (SrcLoc){0, 0, 1});
    if (!list) return NULL;
    int n = list->nargs;
    if ((n & (n - 1)) == 0) {
        AstExpr **args = arena_array(ctx->arena, n ? (size_t)n * 2 : 1, sizeof *args);
        if (!args) return list;
        if (n) memcpy(args, list->args, (size_t)n * sizeof *args);
        list->args = args;
    }
    list->args[list->nargs++] = e;
    return list;
}

AstExpr *ast_call(ParseCtx *ctx, const char *name, SrcLoc loc, AstExpr *args) {
    AstExpr *e = new_expr(ctx, AST_CALL, loc);
    if (!e) return NULL;
    e->name = name;
    if (args) { e->args = args->args; e->nargs = args->nargs; }
    return e;
}
