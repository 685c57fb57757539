/* Runs the scanner and parser over a source buffer.
 * Key idea: the whole parse state lives in a ParseCtx and a flex scanner on the stack. */
#include "ast.h"
#include "parser.h"
#define YYSTYPE RNN_YYSTYPE
#define YYLTYPE RNN_YYLTYPE
#define YY_DECL /* lexer.h would declare yylex without the ParseCtx argument */
#include "lexer.h"

AstCell *ast_parse(Arena *arena, Diags *diags, const char *src, size_t len) {
    ParseCtx ctx = {.arena = arena, .diags = diags, .line = 1, .col = 1};
    yyscan_t scanner;
    if (rnn_yylex_init(&scanner) != 0) {
        diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory starting the scanner");
        return NULL;
    }
    YY_BUFFER_STATE buf = rnn_yy_scan_bytes(src, (int)len, scanner);
    int rc = buf ? rnn_yyparse(scanner, &ctx) : 2;
    if (buf) rnn_yy_delete_buffer(buf, scanner);
    rnn_yylex_destroy(scanner);
    if (rc == 2 || arena->failed) diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory while parsing");
    if (ctx.cur) ast_cell_end(&ctx, 1); /* input ended inside a cell */
    return ctx.cells;
}
