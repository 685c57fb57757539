/* The grammar of .cell files (docs/language.md is its reference).
 * Key idea: actions are one-line calls into the AST builders; meaning is checked in ir/build.c. */
%define api.pure full
%define api.prefix {rnn_yy}
%locations
%define parse.error detailed
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
  | IDENT '=' expr   { ast_stmt(ctx, $1, 0, L(@1), $3); }
  | PRIMED '=' expr  { ast_stmt(ctx, $1, 1, L(@1), $3); }
  | ';'
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
    diag_error(ctx->diags, L(*lloc), "%s", msg);
}
