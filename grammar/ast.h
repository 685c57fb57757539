/* The syntax tree the parser builds: cells with their declarations and statements,
 * exactly as written. Meaning (names, shapes, order) is checked later, in ir/build.c. */
#ifndef RNNCC_AST_H
#define RNNCC_AST_H
#include <stdint.h>

#include "../ir/arena.h"
#include "../ir/diag.h"

typedef enum { AST_NAME, AST_PRIMED, AST_NUM, AST_BINARY, AST_NEG, AST_CALL } AstKind;

typedef struct AstExpr {
    AstKind kind;
    SrcLoc loc;           /* the name, number, operator or function name */
    const char *name;     /* AST_NAME, AST_PRIMED (without the '), AST_CALL */
    double num;           /* AST_NUM */
    int op;               /* AST_BINARY: '+', '-', '*', '/', '@' */
    struct AstExpr *lhs, *rhs; /* AST_BINARY; AST_NEG uses lhs */
    struct AstExpr **args;     /* AST_CALL */
    int nargs;
} AstExpr;

typedef struct AstDim {
    const char *name;  /* NULL for a literal */
    const char *text;  /* the literal as written */
    SrcLoc loc;
} AstDim;

/* A declared input, state or parameter: a name and its bracketed dimensions. */
typedef struct AstDecl {
    const char *name;
    SrcLoc loc;
    AstDim *dims;
    int ndims;
    struct AstDecl *next;
} AstDecl;

typedef struct AstStmt {
    const char *name;
    int primed;
    SrcLoc loc; /* the assigned name */
    AstExpr *expr;
    struct AstStmt *next;
} AstStmt;

typedef struct AstOutput {
    const char *name;
    SrcLoc loc;
    struct AstOutput *next;
} AstOutput;

typedef struct AstCell {
    const char *name;
    SrcLoc loc;
    AstDecl *inputs, *states, *params; /* in declaration order */
    AstOutput *outputs;
    AstStmt *stmts;                    /* in source order */
    int broken;                        /* a syntax error cut it short */
    struct AstCell *next;
} AstCell;

/* A dimension list being built by the parser. */
typedef struct AstDims {
    AstDim *dims;
    int n, cap;
} AstDims;

/* Parser context: the arena, the diagnostics sink, the cells parsed so far. */
typedef struct ParseCtx {
    Arena *arena;
    Diags *diags;
    AstCell *cells, *last_cell;
    AstCell *cur;  /* the cell being parsed */
    AstDecl **decl_tails[3]; /* where each declaration list appends (AST_INPUTS, ...) */
    int decl_which;          /* the list being declared */
    AstStmt **stmt_tail;
    AstOutput **out_tail;
    int line, col; /* the lexer's position */
    int cell_syntax_errors; /* in the cell being parsed: a cell with one is broken, whatever the parser resumed */
    const char *last_name;  /* the last name or primed name the lexer read (without the prime), for messages */
    const char *src;        /* the source, len bytes; the lexer has read pos of them */
    size_t len, pos;
} ParseCtx;

enum { AST_INPUTS, AST_STATES, AST_PARAMS };

/* Builders the grammar actions call: each does one thing and never fails the parse
 * (on allocation failure they return NULL and the arena's failed flag is set). */
void ast_cell_begin(ParseCtx *ctx, const char *name, SrcLoc loc);
void ast_cell_end(ParseCtx *ctx, int broken);
void ast_decls_begin(ParseCtx *ctx, int which); /* AST_INPUTS, AST_STATES or AST_PARAMS */
void ast_decl(ParseCtx *ctx, const char *name, SrcLoc loc, AstDims *dims);
void ast_output(ParseCtx *ctx, const char *name, SrcLoc loc);
void ast_stmt(ParseCtx *ctx, const char *name, int primed, SrcLoc loc, AstExpr *e);
AstDims *ast_dims_add(ParseCtx *ctx, AstDims *dims, const char *name, const char *text, SrcLoc loc);
AstExpr *ast_name(ParseCtx *ctx, AstKind kind, const char *name, SrcLoc loc);
AstExpr *ast_num(ParseCtx *ctx, const char *text, SrcLoc loc);
AstExpr *ast_binary(ParseCtx *ctx, int op, AstExpr *lhs, AstExpr *rhs, SrcLoc loc);
AstExpr *ast_neg(ParseCtx *ctx, AstExpr *operand, SrcLoc loc);
AstExpr *ast_call(ParseCtx *ctx, const char *name, SrcLoc loc, AstExpr *args);
/* Chains call arguments: returns the list head with e appended (args kept in rhs links). */
AstExpr *ast_arg(ParseCtx *ctx, AstExpr *list, AstExpr *e);

/* Parses source text into cells; syntax errors go to diags. Returns the first cell or NULL. */
AstCell *ast_parse(Arena *arena, Diags *diags, const char *src, size_t len);

#endif
