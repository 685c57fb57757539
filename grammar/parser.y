/* The grammar of .cell files (docs/language.md is its reference).
 * Key idea: actions are one-line calls into the AST builders; meaning is checked in ir/build.c. */
%define api.pure full
%define api.prefix {rnn_yy}
%locations
%define parse.error custom
%define parse.lac full
%param {yyscan_t scanner} {ParseCtx *ctx}
%expect 0

%code requires {
#include <string.h>

#include "ast.h"
typedef void *yyscan_t;
}

%code provides {
int rnn_yylex(RNN_YYSTYPE *lval, RNN_YYLTYPE *lloc, yyscan_t scanner, ParseCtx *ctx);
void rnn_yyerror(RNN_YYLTYPE *lloc, yyscan_t scanner, ParseCtx *ctx, const char *msg);
}

%code {
/* Whether token t starts an item of a cell's body or ends the body: where error recovery may resume at once. */
static int item_start(int t) {
    return t == STATE || t == PARAM || t == ASSIGN_IDENT || t == ASSIGN_PRIMED || t == ';' || t == '}';
}

/* Converts bison's location into the diagnostics' one (a token's line, column and width). */
static SrcLoc L(RNN_YYLTYPE l) {
    int len = l.last_line == l.first_line ? l.last_column - l.first_column : 1;
    return (SrcLoc){l.first_line, l.first_column, len > 0 ? len : 1};
}
}

%union {
    const char *str;
    AstExpr *expr;
    AstDims *dims;
}

%token CELL "'cell'" STATE "'state'" PARAM "'param'" ARROW "'->'"
%token <str> IDENT "name" PRIMED "primed name" NUMBER "number"
/* a name or primed name that '=' follows (the lexer looks past blanks and comments): a statement starts there */
%token <str> ASSIGN_IDENT "statement" ASSIGN_PRIMED "primed statement"
%type <expr> expr args
%type <dims> dims

%left '+' '-'
%left '*' '/'
%precedence NEG
%left '@'

%%

file:
    %empty
  | file cell
  ;

cell:
    CELL IDENT { ast_cell_begin(ctx, $2, L(@2)); }
        '(' inputs ')' ARROW outputs '{' items '}' { ast_cell_end(ctx, 0); }
  | CELL error '}'                                 { ast_cell_end(ctx, 1); }
  ;

inputs:
    decl
  | inputs ',' decl
  ;

outputs:
    IDENT              { ast_output(ctx, $1, L(@1)); }
  | outputs ',' IDENT  { ast_output(ctx, $3, L(@3)); }
  ;

items:
    %empty
  | items item
  ;

item:
    STATE { ast_decls_begin(ctx, AST_STATES); } decls
  | PARAM { ast_decls_begin(ctx, AST_PARAMS); } decls
  | ASSIGN_IDENT '=' expr   { ast_stmt(ctx, $1, 0, L(@1), $3); }
  | ASSIGN_PRIMED '=' expr  { ast_stmt(ctx, $1, 1, L(@1), $3); }
  | ';'
  | error { if (item_start(yychar)) yyerrok; }
    /* resumes at the next declaration, statement or '}': each one's first syntax error is reported (the cell, broken,
       is not checked further). At such a start the next error is reported at once, not after three tokens
       (yyerrok); at another token, which recovery then drops, yyerrok would report it again and again. */
  ;

decls:
    decl
  | decls ',' decl
  ;

decl:
    IDENT '[' dims ']'  { ast_decl(ctx, $1, L(@1), $3); }
  ;

dims:
    IDENT                { $$ = ast_dims_add(ctx, NULL, $1, NULL, L(@1)); }
  | NUMBER               { $$ = ast_dims_add(ctx, NULL, NULL, $1, L(@1)); }
  | dims ',' IDENT       { $$ = ast_dims_add(ctx, $1, $3, NULL, L(@3)); }
  | dims ',' NUMBER      { $$ = ast_dims_add(ctx, $1, NULL, $3, L(@3)); }
  ;

expr:
    expr '+' expr         { $$ = ast_binary(ctx, '+', $1, $3, L(@2)); }
  | expr '-' expr         { $$ = ast_binary(ctx, '-', $1, $3, L(@2)); }
  | expr '*' expr         { $$ = ast_binary(ctx, '*', $1, $3, L(@2)); }
  | expr '/' expr         { $$ = ast_binary(ctx, '/', $1, $3, L(@2)); }
  | expr '@' expr         { $$ = ast_binary(ctx, '@', $1, $3, L(@2)); }
  | '-' expr %prec NEG    { $$ = ast_neg(ctx, $2, L(@1)); }
  | '(' expr ')'          { $$ = $2; }
  | IDENT                 { $$ = ast_name(ctx, AST_NAME, $1, L(@1)); }
  | PRIMED                { $$ = ast_name(ctx, AST_PRIMED, $1, L(@1)); }
  | NUMBER                { $$ = ast_num(ctx, $1, L(@1)); }
  | IDENT '(' args ')'    { $$ = ast_call(ctx, $1, L(@1), $3); }
  | IDENT '(' ')'         { $$ = ast_call(ctx, $1, L(@1), NULL); }
  ;

args:
    expr                  { $$ = ast_arg(ctx, NULL, $1); }
  | args ',' expr         { $$ = ast_arg(ctx, $1, $3); }
  ;

%%

void rnn_yyerror(RNN_YYLTYPE *lloc, yyscan_t scanner, ParseCtx *ctx, const char *msg) {
    (void)scanner;
    /* Bison's other message: its stack (YYMAXDEPTH levels) overflowed on deep nesting. */
    if (strcmp(msg, "memory exhausted") == 0) msg = "expression nested too deeply for the parser";
    ctx->cell_syntax_errors++;
    diag_error(ctx->diags, L(*lloc), "%s", msg);
}

/* Joins the expected token names (bison's, as `name` or `'='`) into "A", "A or B", "A, B or C", a set that holds
 * every token an expression or a statement starts with named as such: bison's own message listed none past four. */
static void expected_text(char *const *names, int n, char *buf, size_t size) {
    static const char *const expression[] = {"name", "primed name", "number", "'('", "'-'"};
    static const char *const statement[] = {"'state'", "'param'", "statement", "primed statement"};
    static const char *const operators[] = {"'+'", "'-'", "'*'", "'/'", "'@'"};
    const char *const *groups[3] = {expression, statement, operators};
    const int sizes[3] = {5, 4, 5};
    int whole[3]; /* per group: every one of its tokens is expected */
    for (int g = 0; g < 3; g++) {
        int found = 0;
        for (int k = 0; k < sizes[g]; k++)
            for (int i = 0; i < n; i++) found += strcmp(names[i], groups[g][k]) == 0;
        whole[g] = found == sizes[g];
    }
    const char *items[44];
    int m = 0;
    if (whole[1]) {
        items[m++] = "a declaration";
        items[m++] = "a statement";
    }
    if (whole[0]) items[m++] = "an expression";
    if (whole[2]) items[m++] = "an operator";
    for (int i = 0; i < n && m < 44; i++) {
        int grouped = whole[1] && strcmp(names[i], "';'") == 0; /* an empty statement: a statement too */
        for (int g = 0; g < 3; g++)
            for (int k = 0; whole[g] && k < sizes[g]; k++) grouped |= strcmp(names[i], groups[g][k]) == 0;
        if (!grouped) items[m++] = names[i];
    }
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < m && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i == 0 ? "" : i == m - 1 ? " or " : ", ", items[i]);
        if (w > 0) len += (size_t)w;
    }
}

/* "syntax error, unexpected X, expecting ..." at the unexpected token (parse.error custom). */
static int yyreport_syntax_error(const yypcontext_t *yyctx, yyscan_t scanner, ParseCtx *ctx) {
    (void)scanner;
    enum { MAX_EXPECTED = 40 };
    yysymbol_kind_t expected[MAX_EXPECTED];
    int n = yypcontext_expected_tokens(yyctx, expected, MAX_EXPECTED);
    char *names[MAX_EXPECTED], want[512] = "";
    for (int i = 0; i < n; i++) names[i] = (char *)yysymbol_name(expected[i]);
    if (n > 0) expected_text(names, n, want, sizeof want);
    yysymbol_kind_t tok = yypcontext_token(yyctx);
    const char *what = tok == YYSYMBOL_YYEMPTY ? "token" : yysymbol_name(tok);
    char msg[800];
    int len = snprintf(msg, sizeof msg, "syntax error, unexpected %s", what);
    /* a name where a statement may start: a statement's '=' is missing (or an operator before the name) */
    int primed = strcmp(what, "primed name") == 0, name = (primed || strcmp(what, "name") == 0) && ctx->last_name;
    int statement_next = 0;
    for (int i = 0; i < n; i++) statement_next |= strcmp(names[i], "statement") == 0;
    if (name && len > 0 && (size_t)len < sizeof msg)
        len += snprintf(msg + len, sizeof msg - (size_t)len, " '%s%s'", ctx->last_name, primed ? "'" : "");
    if (want[0] && len > 0 && (size_t)len < sizeof msg)
        len += snprintf(msg + len, sizeof msg - (size_t)len, ", expecting %s", want);
    if (name && statement_next && len > 0 && (size_t)len < sizeof msg)
        snprintf(msg + len, sizeof msg - (size_t)len, " (a statement is a name, '=' and an expression)");
    ctx->cell_syntax_errors++;
    diag_error(ctx->diags, L(*yypcontext_location(yyctx)), "%s", msg);
    return 0;
}
