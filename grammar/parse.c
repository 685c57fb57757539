/* Runs the scanner and parser over a source buffer.
 * Key idea: the whole parse state lives in a ParseCtx and a flex scanner on the stack. */
#include <limits.h>

#include "ast.h"
#include "parser.h"
#define YYSTYPE RNN_YYSTYPE
#define YYLTYPE RNN_YYLTYPE
#define YY_DECL /* lexer.h would declare yylex without the ParseCtx argument */
#include "lexer.h"

AstCell *ast_parse(Arena *arena, Diags *diags, const char *src, size_t len) {
    ParseCtx ctx = {.arena = arena, .diags = diags, .line = 1, .col = 1, .src = src, .len = len};
    yyscan_t scanner;
    if (rnn_yylex_init(&scanner) != 0) {
        diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory starting the scanner");
        return NULL;
    }
    if (len > INT_MAX / 2) { /* flex counts bytes in an int */
        rnn_yylex_destroy(scanner);
        diag_error(diags, (SrcLoc){0, 0, 1}, "input too large (%zu bytes)", len);
        return NULL;
    }
    YY_BUFFER_STATE buf = rnn_yy_scan_bytes(src, (int)len, scanner);
    /* Bison's own failure (stack overflow on deep nesting) is reported through yyerror. */
    if (buf) rnn_yyparse(scanner, &ctx);
    if (buf) rnn_yy_delete_buffer(buf, scanner);
    rnn_yylex_destroy(scanner);
    if (!buf || arena->failed) diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory while parsing");
    if (ctx.cur) ast_cell_end(&ctx, 1); /* input ended inside a cell */
    return ctx.cells;
}
