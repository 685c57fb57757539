/* Tests for diagnostics: one malformed file per diagnostic class in tests/bad/, whose exact
 * `rnncc check` text is the .err beside it, and the renderer's order, notes, caps and formats.
 * Key idea: a table pins each file's error to its line, column and message, so a rewritten
 * golden file alone cannot hide a regression. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
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

/* Reads a whole file into the arena, NUL-terminated; fails the test if it cannot. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)", path);
    StrBuf sb = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(&sb, buf, n);
    fclose(f);
    ck_assert(!sb.failed);
    *len = sb.len;
    char *text = arena_strndup(&arena, sb_str(&sb), sb.len);
    sb_free(&sb);
    return text;
}

/* Compiles source text as file `name`; returns the module (NULL on errors). */
static const IrModule *compile_as(const char *name, const char *src, size_t len) {
    diag_init(&diags, &arena, name, src, len);
    return ir_compile(&arena, &diags, src, len);
}

static const IrModule *compile(const char *text) { return compile_as("t.cell", text, strlen(text)); }

static const char *rendered(void) {
    StrBuf sb = {0};
    diag_render(&diags, &sb);
    ck_assert(!sb.failed);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* Compiles tests/bad/NAME.cell the way `rnncc check` does; returns the rendered text. */
static const char *check_bad(const char *name) {
    char *path = arena_printf(&arena, "tests/bad/%s.cell", name);
    size_t len;
    char *src = read_file(path, &len);
    const IrModule *m = compile_as(path, src, len);
    ck_assert_msg(m == NULL, "%s compiles, but is meant to fail", path);
    ck_assert_int_gt(diags.nerrors, 0);
    return rendered();
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Lists the files in dir ending in ext (names without it), sorted; returns the count. */
static int list(const char *dir, const char *ext, char ***names) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s (run from the repository root)", dir);
    int n = 0, cap = 64;
    char **v = arena_array(&arena, (size_t)cap, sizeof *v);
    size_t le = strlen(ext);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= le || strcmp(e->d_name + l - le, ext) != 0) continue;
        if (n == cap) {
            char **w = arena_array(&arena, (size_t)cap * 2, sizeof *w);
            memcpy(w, v, (size_t)n * sizeof *v);
            v = w, cap *= 2;
        }
        v[n++] = arena_strndup(&arena, e->d_name, l - le);
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *names = v;
    return n;
}

/* ---- one file per diagnostic class ------------------------------------------------ */

/* Each file's one error: where it is and what it says. */
static const struct {
    const char *file;
    int line, col;
    const char *msg;
} classes[] = {
    {"unknown_name", 7, 18, "unknown name 'z'"},
    {"assigned_twice", 7, 5, "'g' is assigned twice"},
    {"state_without_next", 3, 17, "state 'c' is never given a next value (c' = ...)"},
    {"dim_mismatch_matvec", 6, 31, "dimension mismatch: 'U_i' is [H, H] but 'x' is [I]"},
    {"dim_mismatch_elementwise", 6, 11, "dimension mismatch: operands of '+' are [H] and [I]"},
    {"primed_not_state", 7, 5, "'g'' is not a state; only states take a primed next value ('g' is a value)"},
    {"primed_read_not_state", 6, 23, "'b'' is not a state ('b' is a parameter)"},
    {"cycle", 8, 9, "'a' depends on itself: a -> b -> c -> a"},
    {"unknown_function", 6, 10, "unknown function 'softmax'"},
    {"wrong_arity", 6, 10, "'clamp' takes 3 arguments, but 2 were given"},
    {"syntax_error", 7, 5, "syntax error, unexpected primed name 'h'', expecting a declaration, a statement, an operator or "
                           "'}' (a statement is a name, '=' and an expression)"},
    {"unexpected_end", 4, 16, "syntax error, unexpected end of file, expecting an operator, '(', ')' or ','"},
    {"stray_character", 6, 26, "stray '$' in input"},
    {"non_ascii", 5, 16, "non-ASCII character in input"},
    {"number_too_large", 5, 14, "number '1e999' is too large"},
    {"reserved_name", 4, 20, "'float' is a reserved word and cannot name a value"},
    {"double_underscore", 4, 20, "name 'b__i' is reserved: names may not begin with '_' or contain '__'"},
    {"name_too_long", 5, 11, "name 'bias_of_the_input_ga...' is longer than 64 characters"},
    {"bad_dim_zero", 4, 22, "a dimension must be a positive integer below 2^31 or a name, not '0'"},
    {"bad_dim_fraction", 4, 22, "a dimension must be a positive integer below 2^31 or a name, not '1.5'"},
    {"matrix_elementwise", 6, 25, "matrix 'U' used in '*'; a matrix can only be the left operand of '@'"},
    {"matvec_not_matrix", 6, 25, "the left operand of '@' must be a matrix parameter, not vector parameter 'b'"},
    {"output_not_found", 2, 17, "unknown output 'y'; an output names a state or a computed value"},
    {"output_listed_twice", 2, 20, "output 'h' is listed twice"},
    {"declared_twice", 5, 11, "'h' is declared twice"},
    {"assign_to_state", 6, 5, "cannot assign to state 'h'; write h' = ... for its next value"},
    {"two_inputs", 2, 14, "a cell takes exactly one input vector, not 2"},
    {"cell_defined_twice", 7, 6, "cell 'f' is defined twice"},
    {"constant_not_finite", 5, 14, "constant expression evaluates to infinity"},
    {"no_cells", 0, 0, "no cell definitions in input"},
    {"cell_name_underscore", 2, 6, "cell name 'gate_' may not end with '_'"},
};

START_TEST(each_class) {
    const char *file = classes[_i].file;
    const char *text = check_bad(file);
    ck_assert_msg(diags.nerrors == 1, "%s: expected one error, got %d:\n%s", file, diags.nerrors, text);
    ck_assert_int_eq(diags.nwarnings, 0);
    const Diag *g = diags.head;
    ck_assert_int_eq(g->level, DIAG_ERROR);
    ck_assert_str_eq(g->msg, classes[_i].msg);
    ck_assert_int_eq(g->loc.line, classes[_i].line);
    ck_assert_int_eq(g->loc.col, classes[_i].col);
}
END_TEST

/* Every tests/bad/X.cell renders exactly tests/bad/X.err, and each has one. */
START_TEST(bad_files_match_golden) {
    char **cells, **errs;
    int n = list("tests/bad", ".cell", &cells);
    int nerr = list("tests/bad", ".err", &errs);
    ck_assert_int_ge(n, (int)(sizeof classes / sizeof *classes));
    ck_assert_msg(n == nerr, "%d .cell files but %d .err files in tests/bad", n, nerr);
    for (int i = 0; i < n; i++) {
        ck_assert_str_eq(cells[i], errs[i]);
        const char *got = check_bad(cells[i]);
        size_t len;
        const char *want = read_file(arena_printf(&arena, "tests/bad/%s.err", cells[i]), &len);
        ck_assert_msg(strcmp(got, want) == 0, "tests/bad/%s.cell renders\n%s\nbut tests/bad/%s.err holds\n%s",
                      cells[i], got, cells[i], want);
    }
    /* Every class in the table has its file. */
    for (size_t k = 0; k < sizeof classes / sizeof *classes; k++)
        ck_assert_msg(bsearch(&classes[k].file, cells, (size_t)n, sizeof *cells, cmp_str) != NULL,
                      "tests/bad/%s.cell is missing", classes[k].file);
}
END_TEST

START_TEST(notes_follow_their_error) {
    check_bad("assigned_twice");
    const Diag *g = diags.head;
    ck_assert_int_eq(g->next->level, DIAG_NOTE);
    ck_assert_str_eq(g->next->msg, "first assigned here");
    ck_assert_int_eq(g->next->loc.line, 6);
    check_bad("declared_twice");
    ck_assert_str_eq(diags.head->next->msg, "'h' was first declared here as a state");
    ck_assert_int_eq(diags.head->next->loc.line, 3);
    ck_assert_int_eq(diags.head->next->loc.col, 11);
}
END_TEST

/* ---- several errors ------------------------------------------------------------------ */

START_TEST(several_errors_all_reported) {
    check_bad("several_errors");
    ck_assert_int_eq(diags.nerrors, 6);
    /* Found cell by cell (the syntax error while parsing, first), reported by position. */
    static const struct { int line, col; const char *msg; } want[] = {
        {6, 29, "unknown name 'q'"},
        {7, 27, "dimension mismatch: 'U' is [H, H] but 'x' is [I]"},
        {8, 22, "unknown name 'undefined_gate'"},
        {9, 21, "unknown name 'g'"},
        {15, 1, "syntax error, unexpected '}', expecting an expression"},
        {19, 10, "'relu' takes 1 argument, but 2 were given"},
    };
    const char *text = rendered();
    const char *p = text;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char *head = arena_printf(&arena, "tests/bad/several_errors.cell:%d:%d: error: %s\n", want[i].line,
                                  want[i].col, want[i].msg);
        const char *at = strstr(p, head);
        ck_assert_msg(at != NULL, "missing or out of order: %s in\n%s", head, text);
        p = at + strlen(head);
    }
}
END_TEST

START_TEST(error_cap) {
    const char *text = check_bad("too_many_errors");
    ck_assert_int_eq(diags.nerrors, 25);
    int kept = 0;
    for (const Diag *g = diags.head; g; g = g->next) kept++;
    ck_assert_int_eq(kept, 20);
    const char *last = strrchr(text, '\n');
    while (last > text && last[-1] != '\n') last--;
    ck_assert_str_eq(last, "tests/bad/too_many_errors.cell: note: 5 more errors not shown\n");
    ck_assert_ptr_nonnull(strstr(text, "unknown name 'u20'"));
    ck_assert_ptr_null(strstr(text, "unknown name 'u21'"));
    /* The cap can be changed, and notes of dropped errors are dropped with them. */
    static const char src[] = "cell t(x[I]) -> y { a = x\n a = x\n a = x\n a = x\n y = a }";
    diag_init(&diags, &arena, "t.cell", src, sizeof src - 1);
    diags.max_errors = 2;
    ck_assert_ptr_null(ir_compile(&arena, &diags, src, sizeof src - 1));
    ck_assert_int_eq(diags.nerrors, 3);
    int notes = 0;
    kept = 0;
    for (const Diag *g = diags.head; g; g = g->next) g->level == DIAG_NOTE ? notes++ : kept++;
    ck_assert_int_eq(kept, 2);
    ck_assert_int_eq(notes, 2);
    ck_assert_ptr_nonnull(strstr(rendered(), "t.cell: note: 1 more errors not shown\n"));
}
END_TEST

START_TEST(warning_cap) {
    /* 30 unused parameters: 20 warnings are shown, then a count. */
    StrBuf sb = {0};
    sb_puts(&sb, "cell t(x[I]) -> y {\n  y = x\n");
    for (int i = 0; i < 30; i++) sb_printf(&sb, "  param p%d[I]\n", i);
    sb_puts(&sb, "}\n");
    const char *src = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    ck_assert_ptr_nonnull(compile(src));
    ck_assert_int_eq(diags.nwarnings, 30);
    const char *text = rendered();
    ck_assert_ptr_nonnull(strstr(text, "t.cell:22:9: warning: parameter 'p19' is never used\n"));
    ck_assert_ptr_null(strstr(text, "'p20'"));
    ck_assert_ptr_nonnull(strstr(text, "\nt.cell: note: 10 more warnings not shown\n"));
}
END_TEST

/* ---- the renderer ---------------------------------------------------------------------- */

START_TEST(render_format) {
    static const char src[] = "line one\r\n\tx\x01y = 1\r\nlast";
    diag_init(&diags, &arena, "f.cell", src, sizeof src - 1);
    diag_warning(&diags, (SrcLoc){2, 4, 3}, "at %s", "y");
    diag_error(&diags, (SrcLoc){0, 0, 1}, "no location");
    diag_note(&diags, (SrcLoc){3, 1, 1}, "a note on the error");
    diag_error(&diags, (SrcLoc){9, 1, 1}, "past the end");
    diag_error(&diags, (SrcLoc){1, 6, 3}, "one");
    /* Sorted by position (no location first); a note stays with its diagnostic;
     * CR is dropped, tabs and control bytes quote as spaces; a missing line is not quoted. */
    ck_assert_str_eq(rendered(), "f.cell: error: no location\n"
                                 "f.cell:3:1: note: a note on the error\n"
                                 "    3 | last\n"
                                 "      | ^\n"
                                 "f.cell:1:6: error: one\n"
                                 "    1 | line one\n"
                                 "      |      ^~~\n"
                                 "f.cell:2:4: warning: at y\n"
                                 "    2 |  x y = 1\n"
                                 "      |    ^~~\n"
                                 "f.cell:9:1: error: past the end\n");
    ck_assert_int_eq(diags.nerrors, 3);
    ck_assert_int_eq(diags.nwarnings, 1);
    /* A CR alone ends a line too (an old Mac file), as the scanner counts. */
    static const char mac[] = "first\rsecond line\rthird";
    diag_init(&diags, &arena, "m.cell", mac, sizeof mac - 1);
    diag_error(&diags, (SrcLoc){2, 8, 4}, "here");
    ck_assert_str_eq(rendered(), "m.cell:2:8: error: here\n    2 | second line\n      |        ^~~~\n");
    /* Without source text only the headers are printed; the default name is <input>. */
    diag_init(&diags, &arena, NULL, NULL, 0);
    diag_error(&diags, (SrcLoc){4, 2, 1}, "no source");
    ck_assert_str_eq(rendered(), "<input>:4:2: error: no source\n");
    /* One diagnostic alone. */
    StrBuf sb = {0};
    diag_render_one(&diags, diags.head, &sb);
    ck_assert_str_eq(sb_str(&sb), "<input>:4:2: error: no source\n");
    sb_free(&sb);
}
END_TEST

/* A long line is quoted around the column (160 bytes at most, "..." where cut), the caret still under it; a
 * bidirectional control (U+202E in a comment) quotes as "???", so it cannot reorder the line in a terminal. */
START_TEST(render_long_lines_and_bidi) {
    char src[1200];
    memset(src, 'a', 1000);
    memcpy(src + 600, "BAD", 3);
    strcpy(src + 1000, "\nh' = q # \xe2\x80\xae reordered\n");
    diag_init(&diags, &arena, "f.cell", src, strlen(src));
    diag_error(&diags, (SrcLoc){1, 601, 3}, "here");
    diag_error(&diags, (SrcLoc){2, 6, 1}, "unknown name 'q'");
    char want[1024], a80[81], a77[78];
    memset(a80, 'a', 80), a80[80] = 0;
    memset(a77, 'a', 77), a77[77] = 0;
    snprintf(want, sizeof want, "f.cell:1:601: error: here\n    1 | ...%sBAD%s...\n      | %*s^~~\n"
             "f.cell:2:6: error: unknown name 'q'\n    2 | h' = q # ??? reordered\n      |      ^\n",
             a80, a77, 83, "");
    ck_assert_str_eq(rendered(), want);
}
END_TEST

START_TEST(warnings_do_not_fail) {
    const IrModule *m = compile("cell t(x[I]) -> y { param unused[I]\n y = x }");
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(diags.nerrors, 0);
    ck_assert_int_eq(diags.nwarnings, 1);
    ck_assert_str_eq(rendered(), "t.cell:1:27: warning: parameter 'unused' is never used\n"
                                 "    1 | cell t(x[I]) -> y { param unused[I]\n"
                                 "      |                           ^~~~~~\n");
    /* And errors in one cell fail the whole file, whatever the others say. */
    ck_assert_ptr_null(compile("cell a(x[I]) -> y { y = x }\ncell b(x[I]) -> y { y = z }"));
    ck_assert_int_eq(diags.nerrors, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("diag");
    TCase *tc = tcase_create("diag");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, each_class, 0, (int)(sizeof classes / sizeof *classes));
    tcase_add_test(tc, bad_files_match_golden);
    tcase_add_test(tc, notes_follow_their_error);
    tcase_add_test(tc, several_errors_all_reported);
    tcase_add_test(tc, error_cap);
    tcase_add_test(tc, warning_cap);
    tcase_add_test(tc, render_format);
    tcase_add_test(tc, render_long_lines_and_bidi);
    tcase_add_test(tc, warnings_do_not_fail);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
