/* Golden IR tests: for every shipped cells/X.cell, the text dump of its IR equals
 * tests/golden/X.ir byte for byte (`make golden-update` rewrites them; review the diff).
 * Key idea: the directory is listed, so a new cell without a golden file fails, and so
 * does a golden file whose cell is gone. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"
#include "testutil.h"

static Arena arena;

static void setup(void) { arena_init(&arena); }
static void teardown(void) { arena_free(&arena); }

/* Reads a whole file into the arena, NUL-terminated; fails the test if it cannot. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repository root; 'make golden-update' writes goldens)",
                  path);
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

/* The dump of every cell of a file, as `rnncc dump --ir` prints it (a blank line between cells). */
static const char *dump_file(const char *path) {
    size_t len;
    char *src = read_file(path, &len);
    Diags diags;
    diag_init(&diags, &arena, path, src, len);
    const IrModule *m = ir_compile(&arena, &diags, src, len);
    StrBuf sb = {0};
    diag_render(&diags, &sb);
    ck_assert_msg(m != NULL, "%s does not compile:\n%s", path, sb_str(&sb));
    ck_assert_msg(diags.nwarnings == 0, "%s has warnings:\n%s", path, sb_str(&sb));
    sb_free(&sb);
    ck_assert_int_gt(m->ncells, 0);
    for (int i = 0; i < m->ncells; i++) {
        if (i) sb_putc(&sb, '\n');
        ir_dump(m->cells[i], &sb);
    }
    ck_assert(!sb.failed);
    const char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

START_TEST(shipped_cells_match_golden) {
    char **cells, **goldens;
    int n = list("cells", ".cell", &cells);
    int ng = list("tests/golden", ".ir", &goldens);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++) {
        const char *got = dump_file(arena_printf(&arena, "cells/%s.cell", cells[i]));
        char *gpath = arena_printf(&arena, "tests/golden/%s.ir", cells[i]);
        size_t len;
        const char *want = read_file(gpath, &len);
        ck_assert_msg(strcmp(got, want) == 0, "cells/%s.cell dumps as\n%s\nbut %s holds\n%s", cells[i], got, gpath,
                      want);
    }
    for (int i = 0; i < ng; i++)
        ck_assert_msg(bsearch(&goldens[i], cells, (size_t)n, sizeof *cells, cmp_str) != NULL,
                      "tests/golden/%s.ir has no cells/%s.cell", goldens[i], goldens[i]);
}
END_TEST

START_TEST(dump_is_deterministic) {
    /* Two compilations of one file dump the same text, in a fresh arena each. */
    const char *a = dump_file("cells/lstm.cell");
    Arena other = arena;
    arena_init(&arena);
    const char *b = dump_file("cells/lstm.cell");
    ck_assert_str_eq(a, b);
    arena_free(&other);
    /* The lines name what the file says: the cell, its leaves and its values. */
    ck_assert_ptr_nonnull(strstr(b, "cell lstm\n  dims I H\n  %0 = input x : [I]"));
    ck_assert_ptr_nonnull(strstr(b, "  next c = %37\n"));
    ck_assert_ptr_nonnull(strstr(b, "  output h = %39\n"));
}
END_TEST

START_TEST(dot_dump) {
    static const char src[] = "cell t(x[I]) -> y, h {\n  state h[H]\n  param W[H, I]\n"
                              "  y = W @ x * 2\n  h' = tanh(y + h)\n}\n";
    Diags diags;
    diag_init(&diags, &arena, "t.cell", src, sizeof src - 1);
    const IrModule *m = ir_compile(&arena, &diags, src, sizeof src - 1);
    ck_assert_ptr_nonnull(m);
    StrBuf sb = {0};
    ir_dump_dot(m->cells[0], &sb);
    ck_assert_str_eq(sb_str(&sb), "digraph \"t\" {\n"
                                  "  rankdir=BT;\n"
                                  "  node [fontname=\"monospace\"];\n"
                                  "  n0 [shape=invhouse, label=\"input x\"];\n"
                                  "  n1 [shape=invhouse, label=\"state h\"];\n"
                                  "  n2 [shape=box, label=\"param W\"];\n"
                                  "  n3 [shape=doubleoctagon, label=\"@\"];\n"
                                  "  n2 -> n3;\n"
                                  "  n0 -> n3;\n"
                                  "  n4 [shape=plaintext, label=\"2\"];\n"
                                  "  n5 [shape=ellipse, label=\"y = mul\"];\n"
                                  "  n3 -> n5;\n"
                                  "  n4 -> n5;\n"
                                  "  n6 [shape=ellipse, label=\"add\"];\n"
                                  "  n5 -> n6;\n"
                                  "  n1 -> n6;\n"
                                  "  n7 [shape=ellipse, label=\"h' = tanh\"];\n"
                                  "  n6 -> n7;\n"
                                  "  next0 [shape=house, label=\"h'\"];\n"
                                  "  n7 -> next0;\n"
                                  "  next0 -> n1 [style=dashed, constraint=false, label=\"next step\"];\n"
                                  "  out0 [shape=house, label=\"output y\"];\n"
                                  "  n5 -> out0;\n"
                                  "  out1 [shape=house, label=\"output h\"];\n"
                                  "  n7 -> out1;\n"
                                  "}\n");
    sb_free(&sb);
}
END_TEST

int main(void) {
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("golden");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shipped_cells_match_golden);
    tcase_add_test(tc, dump_is_deterministic);
    tcase_add_test(tc, dot_dump);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
