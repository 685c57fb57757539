/* Tests for CUDA code generation (codegen/) and the NVRTC wrapper (runtime/rt_nvrtc.c):
 * every shipped cell emits deterministically and compiles to CUBIN for sm_90 and sm_80 (no
 * GPU needed), golden sources, mangling of every name a cell supplies, the CPU twin of the
 * prelude against ir/opmath.h, NVRTC's failure reports, and the launch-contract helpers.
 * Key idea: the prelude is compiled here as C, so its float math is checked without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/cg.h"
#include "../codegen/emit.h"
#include "../ir/sched.h"
#include "../runtime/rt_nvrtc.h"
#include "testutil.h"

/* ---- the prelude as C: its float helpers renamed f_rnn_*, beside opmath.h's doubles ---- */
#include "../ir/opmath.h"
#define RNN_TWINS(X)                                                                                          \
    X(sigmoid, 1) X(tanh, 1) X(relu, 1) X(step, 1) X(exp, 1) X(log, 1) X(softplus, 1) X(abs, 1) X(sign, 1)     \
    X(sqrt, 1) X(min, 2) X(max, 2) X(le, 2) X(ge, 2) X(lt, 2) X(gt, 2) X(clamp, 3) X(inside, 3)               \
    X(hardsigmoid, 1) X(hardsigmoid_d, 1) X(sin, 1) X(cos, 1)
#define rnn_sigmoid f_rnn_sigmoid
#define rnn_tanh f_rnn_tanh
#define rnn_relu f_rnn_relu
#define rnn_step f_rnn_step
#define rnn_exp f_rnn_exp
#define rnn_log f_rnn_log
#define rnn_softplus f_rnn_softplus
#define rnn_abs f_rnn_abs
#define rnn_sign f_rnn_sign
#define rnn_sqrt f_rnn_sqrt
#define rnn_min f_rnn_min
#define rnn_max f_rnn_max
#define rnn_le f_rnn_le
#define rnn_ge f_rnn_ge
#define rnn_lt f_rnn_lt
#define rnn_gt f_rnn_gt
#define rnn_clamp f_rnn_clamp
#define rnn_inside f_rnn_inside
#define rnn_hardsigmoid f_rnn_hardsigmoid
#define rnn_hardsigmoid_d f_rnn_hardsigmoid_d
#define rnn_sin f_rnn_sin
#define rnn_cos f_rnn_cos
#define RNN_DEV static inline
#include "../codegen/prelude.cuh"
#undef rnn_sigmoid
#undef rnn_tanh
#undef rnn_relu
#undef rnn_step
#undef rnn_exp
#undef rnn_log
#undef rnn_softplus
#undef rnn_abs
#undef rnn_sign
#undef rnn_sqrt
#undef rnn_min
#undef rnn_max
#undef rnn_le
#undef rnn_ge
#undef rnn_lt
#undef rnn_gt
#undef rnn_clamp
#undef rnn_inside
#undef rnn_hardsigmoid
#undef rnn_hardsigmoid_d
#undef rnn_sin
#undef rnn_cos

typedef struct Twin {
    const char *name;
    int arity;
    float (*f1)(float);
    float (*f2)(float, float);
    float (*f3)(float, float, float);
    double (*d1)(double);
    double (*d2)(double, double);
    double (*d3)(double, double, double);
} Twin;

#define TWIN_1(n) .f1 = f_rnn_##n, .d1 = rnn_##n
#define TWIN_2(n) .f2 = f_rnn_##n, .d2 = rnn_##n
#define TWIN_3(n) .f3 = f_rnn_##n, .d3 = rnn_##n
#define TWIN(n, ar) {.name = "rnn_" #n, .arity = ar, TWIN_##ar(n)},
static const Twin twins[] = {RNN_TWINS(TWIN)};
enum { NTWINS = sizeof twins / sizeof *twins };

static const Twin *find_twin(const char *name, size_t len) {
    for (int i = 0; i < NTWINS; i++)
        if (strlen(twins[i].name) == len && strncmp(twins[i].name, name, len) == 0) return &twins[i];
    return NULL;
}

/* float result f against the double reference d (computed at the same float inputs). */
static int twin_close(float f, double d) {
    if (isnan(d)) return isnan(f);
    if (isinf(d) || fabs(d) > FLT_MAX) return isinf(f) && (f > 0) == (d > 0);
    return fabs((double)f - d) <= 1e-6 * fabs(d) + 1e-37;
}

START_TEST(prelude_matches_opmath) {
    /* inputs: a dense sweep, the functions' edges, and float extremes */
    float xs[2400];
    int n = 0;
    for (int i = -1000; i <= 1000; i++) xs[n++] = (float)i * 0.013f;
    const float special[] = {0.0f, -0.0f, 1e-8f, -1e-8f, 1e-30f, -1e-30f, 3.0f, -3.0f, nextafterf(3, 4),
                             nextafterf(3, 2), nextafterf(-3, -4), nextafterf(-3, -2), 0.5f, -0.5f, 1, -1,
                             10, -10, 20, -20, 40, -40, 80, -80, 87, -87, 88.5f, -88.5f, 89, -89, 100, -100,
                             1e4f, -1e4f, 1e6f, -1e6f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) xs[n++] = special[i];
    const float few[] = {-2.5f, -1, -0.0f, 0, 0.25f, 1, 3, NAN};
    enum { NFEW = sizeof few / sizeof *few };
    int checked = 0;
    for (int t = 0; t < NTWINS; t++) {
        const Twin *tw = &twins[t];
        for (int i = 0; i < n; i++) {
            float x = xs[i];
            if (tw->arity == 1) {
                float f = tw->f1(x);
                double d = tw->d1(x);
                ck_assert_msg(twin_close(f, d), "%s(%.9g): float %.9g, double %.17g", tw->name, x, f, d);
                checked++;
                continue;
            }
            for (int a = 0; a < NFEW; a++) {
                if (tw->arity == 2) {
                    float f = tw->f2(x, few[a]), g = tw->f2(few[a], x);
                    double d = tw->d2(x, few[a]), e = tw->d2(few[a], x);
                    ck_assert_msg(twin_close(f, d), "%s(%.9g, %.9g): %.9g vs %.17g", tw->name, x, few[a], f, d);
                    ck_assert_msg(twin_close(g, e), "%s(%.9g, %.9g): %.9g vs %.17g", tw->name, few[a], x, g, e);
                    checked += 2;
                    continue;
                }
                for (int b = 0; b < NFEW; b++) {
                    float f = tw->f3(x, few[a], few[b]);
                    double d = tw->d3(x, few[a], few[b]);
                    ck_assert_msg(twin_close(f, d), "%s(%.9g, %.9g, %.9g): %.9g vs %.17g", tw->name, x, few[a],
                                  few[b], f, d);
                    checked++;
                }
            }
        }
    }
    ck_assert_int_gt(checked, 100000);
}
END_TEST

/* Every helper the prelude defines is twinned here, and every rnn_* helper the op table's
 * expressions call is defined by the prelude: adding one without the other fails. */
START_TEST(prelude_covers_op_table) {
    const char *p = cg_prelude_text;
    int defined = 0;
    while ((p = strstr(p, "RNN_DEV float rnn_"))) {
        const char *name = p + strlen("RNN_DEV float ");
        size_t len = strcspn(name, "(");
        ck_assert_msg(find_twin(name, len) != NULL, "prelude helper %.*s has no CPU twin in this test", (int)len, name);
        defined++;
        p = name + len;
    }
    ck_assert_int_eq(defined, NTWINS);
    for (int op = 0; op < IR_OP_COUNT; op++)
        for (int k = -1; k < 3; k++) {
            const char *text = k < 0 ? ir_ops[op].value : ir_ops[op].deriv[k];
            for (const char *q = text; (q = strstr(q, "rnn_"));) {
                size_t len = strspn(q, "abcdefghijklmnopqrstuvwxyz_0123456789");
                ck_assert_msg(find_twin(q, len), "op %s calls %.*s, which the prelude lacks", ir_ops[op].name,
                              (int)len, q);
                q += len;
            }
        }
}
END_TEST

/* ---- emitting ---------------------------------------------------------------------------- */

/* One compiled source: its arena and diagnostics, so emitted comments can quote it. */
typedef struct Src {
    Arena arena;
    Diags diags;
    char *text;
    IrModule *module;
} Src;

static void src_open(Src *s, const char *name, const char *text) {
    arena_init(&s->arena);
    s->text = arena_strdup(&s->arena, text);
    diag_init(&s->diags, &s->arena, name, s->text, strlen(s->text));
    s->module = ir_compile(&s->arena, &s->diags, s->text, strlen(s->text));
    if (!s->module) {
        StrBuf sb = {0};
        diag_render(&s->diags, &sb);
        ck_abort_msg("%s does not compile:\n%s", name, sb_str(&sb));
    }
}

static void src_open_file(Src *s, const char *path) {
    char *text = tu_read_file(path, NULL);
    src_open(s, path, text);
    free(text);
}

static void src_close(Src *s) { arena_free(&s->arena); }

/* Plans and lays out cell c with every symbolic dimension bound to value. */
static PlanLayout *layout_all(Src *s, const IrCell *c, int64_t value) {
    Plan *plan = sched_plan(&s->arena, c, &s->diags);
    ck_assert_msg(plan != NULL, "cell %s does not schedule", c->name);
    int64_t *dv = arena_array(&s->arena, (size_t)c->ndims + 1, sizeof *dv);
    for (int d = 0; d < c->ndims; d++) dv[d] = c->dims[d].name ? value : c->dims[d].literal;
    PlanLayout *L = sched_layout(&s->arena, plan, dv, &s->diags);
    ck_assert_msg(L != NULL, "cell %s does not lay out", c->name);
    return L;
}

/* Emits a cell's translation unit (malloc'd), failing the test with the diagnostics. */
static char *emit(Src *s, const PlanLayout *L) {
    StrBuf out = {0};
    int ok = cg_emit_forward(&s->arena, L->plan, L, &out, &s->diags);
    if (!ok) {
        StrBuf sb = {0};
        diag_render(&s->diags, &sb);
        ck_abort_msg("cell %s does not emit:\n%s", L->plan->cell->name, sb_str(&sb));
    }
    ck_assert(!out.failed);
    return sb_take(&out);
}

/* Compiles to CUBIN; fails the test with NVRTC's report. Asserts NVRTC had no warnings. */
static void compile_ok(const char *source, const char *name, const char *arch) {
    RtNvrtcResult res;
    RtNvrtcStatus st = rt_nvrtc_compile(source, name, RT_NVRTC_CUBIN, arch, &res);
    if (st != RT_NVRTC_OK) {
        StrBuf sb = {0};
        rt_nvrtc_report(&res, &sb);
        ck_abort_msg("%s for %s: %s", name, arch, sb_str(&sb));
    }
    ck_assert_ptr_nonnull(res.image);
    ck_assert_uint_gt(res.size, 0);
    ck_assert_msg(res.log && !res.log[0], "%s for %s: NVRTC warned:\n%s", name, arch, res.log);
    rt_nvrtc_result_free(&res);
}

START_TEST(shipped_cells_emit_and_compile) {
    char **paths;
    int n = tu_list_cells(&paths);
    ck_assert_int_ge(n, 9);
    const int64_t values[] = {16, 37};
    for (int i = 0; i < n; i++) {
        Src s;
        src_open_file(&s, paths[i]);
        for (int ci = 0; ci < s.module->ncells; ci++) {
            const IrCell *c = s.module->cells[ci];
            for (int v = 0; v < 2; v++) {
                PlanLayout *L = layout_all(&s, c, values[v]);
                char *a = emit(&s, L), *b = emit(&s, L);
                ck_assert_msg(strcmp(a, b) == 0, "%s: two emissions differ", paths[i]);
                /* the kernel list in the header names every group's kernel, in order */
                const char *list = strstr(a, "// rnncc-kernels:");
                ck_assert_ptr_nonnull(list);
                list += strlen("// rnncc-kernels:");
                for (int g = 0; g < L->plan->ngroups; g++) {
                    char name[256];
                    ck_assert_int_gt(cg_kernel_name(L->plan, g, name, sizeof name), 0);
                    ck_assert_msg(strncmp(list, " ", 1) == 0 && strncmp(list + 1, name, strlen(name)) == 0,
                                  "%s: kernel %d is not %s in the header", paths[i], g, name);
                    list += 1 + strlen(name);
                    char def[400];
                    snprintf(def, sizeof def, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const RnnArgs a)",
                             CG_BLOCK_SIZE, name);
                    ck_assert_msg(strstr(a, def), "%s: no definition of %s", paths[i], name);
                }
                ck_assert_int_eq(*list, '\n');
                compile_ok(a, c->name, "sm_90");
                compile_ok(a, c->name, "sm_80");
                free(a);
                free(b);
            }
        }
        src_close(&s);
    }
    tu_free_list(paths, n);
}
END_TEST

static void check_golden(const char *cell_path, const char *golden_path) {
    Src s;
    src_open_file(&s, cell_path);
    const IrCell *c = s.module->cells[0];
    Plan *plan = sched_plan(&s.arena, c, &s.diags);
    ck_assert_ptr_nonnull(plan);
    const char *dims[] = {"I=8", "H=16"};
    int64_t *dv = arena_array(&s.arena, (size_t)c->ndims + 1, sizeof *dv);
    ck_assert(ir_bind_dims(c, dims, 2, dv, &s.diags));
    PlanLayout *L = sched_layout(&s.arena, plan, dv, &s.diags);
    ck_assert_ptr_nonnull(L);
    char *got = emit(&s, L);
    char *want = tu_read_file(golden_path, NULL);
    if (strcmp(got, want) != 0) {
        int line = 1;
        const char *g = got, *w = want;
        while (*g && *g == *w) line += *g++ == '\n', w++;
        ck_abort_msg("%s differs from the emitted source at line %d (run 'make golden-update' and review the diff)",
                     golden_path, line);
    }
    free(got);
    free(want);
    src_close(&s);
}

START_TEST(golden_sources) {
    check_golden("cells/lstm.cell", "tests/golden/lstm.cu");
    check_golden("cells/gru.cell", "tests/golden/gru.cu");
}
END_TEST

/* A cell exercising what the shipped ones do not: a hoisted element-wise group, a group
 * with vectors of three lengths, writes of a leaf, of a hoisted value and of a constant-
 * scaled parameter, and constants that need care as float literals. */
static const char edge_cell[] =
    "cell edge(x[I]) -> h, z, s, y, xs, xo {\n"
    "    state h[H], s[S]\n"
    "    param W[H, I], U[H, H], Z[S, H], b[H], w[S], q[S]\n"
    "    xs = x * 0.1\n"
    "    h' = tanh(W @ xs + U @ h + b)    # a comment: */ \\\n"
    "    z = sigmoid(Z @ h + q * 1e20)\n"
    "    s' = clamp(s * w + z, -0.5, 2)\n"
    "    y = relu(x) + 0.5\n"
    "    xo = x\n"
    "}\n";

START_TEST(edge_cell_emits_and_compiles) {
    Src s;
    src_open(&s, "edge.cell", edge_cell);
    const IrCell *c = s.module->cells[0];
    const char *dims[] = {"I=3", "H=16", "S=37"};
    int64_t *dv = arena_array(&s.arena, (size_t)c->ndims + 1, sizeof *dv);
    ck_assert(ir_bind_dims(c, dims, 3, dv, &s.diags));
    Plan *plan = sched_plan(&s.arena, c, &s.diags);
    PlanLayout *L = sched_layout(&s.arena, plan, dv, &s.diags);
    char *src = emit(&s, L);
    /* the hoisted kernel over T*N columns, the guards of the shorter vectors */
    ck_assert_ptr_nonnull(strstr(src, "rnncc_edge_h0(const RnnArgs a)"));
    ck_assert_ptr_nonnull(strstr(src, "const long long items = (long long)a.T * a.N * RNN_DIM_I;"));
    ck_assert_ptr_nonnull(strstr(src, "if (j < RNN_DIM_H) {"));
    ck_assert_ptr_nonnull(strstr(src, "if (j < RNN_DIM_I) a.y[5][((long long)a.t * a.N + n) * a.ldy[5] + j] = 0.0f;"));
    ck_assert_ptr_nonnull(strstr(src, "rnn_op_mul(v0_x, 0.1f)"));
    ck_assert_ptr_nonnull(strstr(src, "1e+20f"));
    ck_assert_ptr_nonnull(strstr(src, "rnn_op_clamp(v22, -0.5f, 2.0f)"));
    /* the source's comment (with its comment closer and line splice) is not quoted */
    ck_assert_ptr_null(strstr(src, "*/ \\"));
    ck_assert_ptr_nonnull(strstr(src, "// line 5: h' = tanh(W @ xs + U @ h + b)\n"));
    compile_ok(src, "edge", "sm_90");
    free(src);
    src_close(&s);
}
END_TEST

/* ---- names ---------------------------------------------------------------------------------- */

START_TEST(keywords_are_refused) {
    static const char *const bad[] = {
        "cell float(x[I]) -> h { state h[H] param W[H, I] h' = W @ x }\n",
        "cell c(x[I]) -> h { state h[H] param int[H, I] h' = int @ x }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, I] return = W @ x h' = return }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, I] h' = W @ x + double }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, template] h' = W @ x }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, I] __x = W @ x h' = __x }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, I] _x = W @ x h' = _x }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, I] x__y = W @ x h' = x__y }\n",
        "cell c(x[I]) -> h { state h[H] param W[H, I] h' = W @ x; y = h\\u0041 }\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Arena arena;
        arena_init(&arena);
        Diags d;
        diag_init(&d, &arena, "bad.cell", bad[i], strlen(bad[i]));
        ck_assert_msg(ir_compile(&arena, &d, bad[i], strlen(bad[i])) == NULL, "accepted: %s", bad[i]);
        ck_assert_int_gt(d.nerrors, 0);
        arena_free(&arena);
    }
}
END_TEST

/* Names that are fine in a .cell file but would clash in CUDA unmangled: C++ words with a
 * suffix, the kernel's own locals, the prelude's helpers, CUDA built-ins. */
static const char hostile_cell[] =
    "cell j(a[n]) -> float_x, col {\n"
    "    state float_x[len], col[len]\n"
    "    param i[len, n], items[len, len], blockIdx[len], rnn_sigmoid[len]\n"
    "    RnnArgs = sigmoid(i @ a + items @ float_x + blockIdx)\n"
    "    threadIdx = RnnArgs * col + rnn_sigmoid\n"
    "    float_x' = tanh(threadIdx)\n"
    "    col' = threadIdx\n"
    "}\n";
/* The same cell with innocent names. */
static const char innocent_cell[] =
    "cell k(in[D]) -> s1, s2 {\n"
    "    state s1[E], s2[E]\n"
    "    param p1[E, D], p2[E, E], p3[E], p4[E]\n"
    "    q1 = sigmoid(p1 @ in + p2 @ s1 + p3)\n"
    "    q2 = q1 * s2 + p4\n"
    "    s1' = tanh(q2)\n"
    "    s2' = q2\n"
    "}\n";

/* Appends each identifier of the generated code past the prelude, outside comments, one a
 * line, except the mangled ones: v<id>[_name], RNN_DIM_<dim>, rnncc_<cell>_... */
static void unmangled_identifiers(const char *src, const char *cell, StrBuf *out) {
    const char *code = strstr(src, "// ---- bound dimensions");
    ck_assert_ptr_nonnull(code);
    char kernel_prefix[64];
    snprintf(kernel_prefix, sizeof kernel_prefix, "rnncc_%s_", cell);
    for (const char *p = code; *p;) {
        if (p[0] == '/' && p[1] == '/') { /* a comment: skip to the end of the line */
            p += strcspn(p, "\n");
            continue;
        }
        if (isdigit((unsigned char)*p)) { /* a number, its exponent and suffix */
            while (isalnum((unsigned char)*p) || *p == '.' || ((*p == '+' || *p == '-') && p[-1] == 'e')) p++;
            continue;
        }
        if (!(isalpha((unsigned char)*p) || *p == '_')) {
            p++;
            continue;
        }
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        int mangled = (p[0] == 'v' && isdigit((unsigned char)p[1])) || strncmp(p, "RNN_DIM_", 8) == 0 ||
                      strncmp(p, kernel_prefix, strlen(kernel_prefix)) == 0;
        if (!mangled) sb_printf(out, "%.*s\n", (int)len, p);
        p += len;
    }
}

START_TEST(names_are_mangled) {
    Src hs, is;
    src_open(&hs, "hostile.cell", hostile_cell);
    src_open(&is, "innocent.cell", innocent_cell);
    char *hostile = emit(&hs, layout_all(&hs, hs.module->cells[0], 5));
    char *innocent = emit(&is, layout_all(&is, is.module->cells[0], 5));
    compile_ok(hostile, "hostile", "sm_90");
    /* the cell's names change nothing but mangled identifiers and comments */
    StrBuf h = {0}, i = {0};
    unmangled_identifiers(hostile, "j", &h);
    unmangled_identifiers(innocent, "k", &i);
    ck_assert_int_gt(h.len, 100);
    if (strcmp(sb_str(&h), sb_str(&i)) != 0) {
        const char *a = sb_str(&h), *b = sb_str(&i);
        while (*a && *a == *b) a++, b++;
        while (a > sb_str(&h) && a[-1] != '\n') a--;
        ck_abort_msg("a cell's name reached the code unmangled near '%.40s'", a);
    }
    sb_free(&h);
    sb_free(&i);
    /* and where they appear, they are mangled */
    ck_assert_ptr_nonnull(strstr(hostile, "const float v2_col = a.state_prev[1][n * RNN_DIM_len + j];"));
    ck_assert_ptr_nonnull(strstr(hostile, "const float v11_RnnArgs = rnn_op_sigmoid("));
    ck_assert_ptr_nonnull(strstr(hostile, "#define RNN_DIM_len 5\n"));
    ck_assert_ptr_nonnull(strstr(hostile, "rnncc_j_s1(const RnnArgs a)"));
    ck_assert_ptr_nonnull(strstr(hostile, "const float v14_float_x_next = rnn_op_tanh(v13_threadIdx);"));
    free(hostile);
    free(innocent);
    src_close(&hs);
    src_close(&is);
}
END_TEST

/* A cell changed after checking (as an embedder might) cannot smuggle text into the source. */
START_TEST(generator_refuses_bad_names) {
    static const char *const bad[] = {"x; } __global__ void evil() { //", "h\nint", "", "9lives", "a b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        for (int where = 0; where < 3; where++) {
            Src s;
            src_open_file(&s, "cells/gru.cell");
            IrCell *c = s.module->cells[0];
            PlanLayout *L = layout_all(&s, c, 4);
            if (where == 0) c->nodes[c->states[0].next].name = bad[i];
            else if (where == 1) c->dims[0].name = bad[i];
            else c->params[0].name = bad[i];
            StrBuf out = {0};
            int errors = s.diags.nerrors;
            ck_assert_int_eq(cg_emit_forward(&s.arena, L->plan, L, &out, &s.diags), 0);
            ck_assert_int_gt(s.diags.nerrors, errors);
            ck_assert_msg(strstr(s.diags.head->msg, "not a plain identifier"), "%s", s.diags.head->msg);
            sb_free(&out);
            src_close(&s);
        }
}
END_TEST

START_TEST(identifiers_and_literals) {
    ck_assert(cg_ident_ok("h"));
    ck_assert(cg_ident_ok("W_i2"));
    ck_assert(!cg_ident_ok(""));
    ck_assert(!cg_ident_ok("2x"));
    ck_assert(!cg_ident_ok("h'"));
    ck_assert(!cg_ident_ok("a-b"));
    ck_assert(!cg_ident_ok(NULL));
    char buf[64];
    static const struct { double v; const char *text; } lits[] = {
        {1, "1.0f"}, {0, "0.0f"}, {-0.0, "-0.0f"}, {0.1, "0.1f"}, {-0.5, "-0.5f"}, {1e20, "1e+20f"},
        {100000000, "1e+08f"}, {123456789, "1.2345679e+08f"}, {1.0 / 3, "0.33333334f"}, {6, "6.0f"}};
    for (size_t i = 0; i < sizeof lits / sizeof *lits; i++) {
        ck_assert(cg_float_literal(lits[i].v, buf, sizeof buf));
        ck_assert_str_eq(buf, lits[i].text);
    }
    ck_assert(!cg_float_literal(1e39, buf, sizeof buf));
    ck_assert(!cg_float_literal(NAN, buf, sizeof buf));
    Rng r = {42};
    for (int i = 0; i < 20000; i++) { /* every literal reads back as the same float */
        float f = (float)(tu_unif(&r) * pow(10, (double)(tu_next(&r) % 60) - 30));
        ck_assert(cg_float_literal(f, buf, sizeof buf));
        size_t len = strlen(buf);
        ck_assert_int_eq(buf[len - 1], 'f');
        ck_assert(strpbrk(buf, ".e"));
        buf[len - 1] = 0;
        ck_assert_msg(strtof(buf, NULL) == f, "%s does not read back as %.9g", buf, f);
    }
}
END_TEST

/* ---- the launch contract ------------------------------------------------------------------------ */

START_TEST(launch_helpers) {
    Src s;
    src_open_file(&s, "cells/mlstm.cell");
    const IrCell *c = s.module->cells[0];
    const char *dims[] = {"I=8", "H=16", "M=12"};
    int64_t *dv = arena_array(&s.arena, (size_t)c->ndims + 1, sizeof *dv);
    ck_assert(ir_bind_dims(c, dims, 3, dv, &s.diags));
    Plan *plan = sched_plan(&s.arena, c, &s.diags);
    PlanLayout *L = sched_layout(&s.arena, plan, dv, &s.diags);
    ck_assert_int_eq(plan->ngroups, 2);
    char name[64];
    ck_assert_int_eq(cg_kernel_name(plan, 0, name, sizeof name), (int)strlen("rnncc_mlstm_s1"));
    ck_assert_str_eq(name, "rnncc_mlstm_s1");
    ck_assert_int_eq(cg_kernel_name(plan, 1, name, sizeof name), (int)strlen("rnncc_mlstm_s2"));
    ck_assert_str_eq(name, "rnncc_mlstm_s2");
    ck_assert_int_eq(cg_kernel_name(plan, 2, name, sizeof name), -1);
    ck_assert_int_eq(cg_kernel_name(plan, -1, name, sizeof name), -1);
    ck_assert_int_eq(cg_kernel_name(plan, 0, name, 14), -1); /* no room for the NUL */
    ck_assert_int_eq(cg_kernel_name(plan, 0, name, 15), 14);
    ck_assert_int_eq(cg_group_width(L, 0), 12); /* m: M */
    ck_assert_int_eq(cg_group_width(L, 1), 16); /* the gates: H */
    ck_assert_int_eq(cg_group_width(L, 2), -1);
    ck_assert_int_eq(cg_group_items(L, 1, 100, 7), 7 * 16);
    ck_assert_int_eq(cg_group_items(L, 1, 100, 0), 0);
    ck_assert_int_eq(cg_group_items(L, 1, 100, INT64_MAX / 2), -1);
    ck_assert_int_eq(cg_grid_blocks(0), 1);
    ck_assert_int_eq(cg_grid_blocks(1), 1);
    ck_assert_int_eq(cg_grid_blocks(CG_BLOCK_SIZE), 1);
    ck_assert_int_eq(cg_grid_blocks(CG_BLOCK_SIZE + 1), 2);
    ck_assert_int_eq(cg_grid_blocks((int64_t)1 << 40), CG_MAX_GRID_BLOCKS);
    src_close(&s);

    /* a hoisted group has T*N*J items */
    src_open(&s, "edge.cell", edge_cell);
    L = layout_all(&s, s.module->cells[0], 3);
    ck_assert_int_eq(L->plan->groups[0].program, SCHED_HOIST);
    ck_assert_int_eq(cg_kernel_name(L->plan, 0, name, sizeof name), (int)strlen("rnncc_edge_h0"));
    ck_assert_str_eq(name, "rnncc_edge_h0");
    ck_assert_int_eq(cg_group_items(L, 0, 10, 7), 10 * 7 * 3);
    ck_assert_int_eq(cg_group_items(L, 0, INT64_MAX / 4, 7), -1);
    src_close(&s);
}
END_TEST

/* ---- NVRTC ------------------------------------------------------------------------------------- */

START_TEST(nvrtc_failure_keeps_log_and_listing) {
    const char *bad = "extern \"C\" __global__ void k(float *p)\n{\n    p[0] = undefined_thing;\n}\n";
    RtNvrtcResult res;
    ck_assert_int_eq(rt_nvrtc_compile(bad, "bad.cu", RT_NVRTC_CUBIN, "sm_90", &res), RT_NVRTC_ERR_COMPILE);
    ck_assert_int_eq(res.status, RT_NVRTC_ERR_COMPILE);
    ck_assert_ptr_null(res.image);
    ck_assert_ptr_nonnull(res.log);
    ck_assert_msg(strstr(res.log, "bad.cu(3)") && strstr(res.log, "undefined_thing"), "log: %s", res.log);
    ck_assert_ptr_nonnull(res.listing);
    ck_assert_ptr_nonnull(strstr(res.listing, "    3 |     p[0] = undefined_thing;\n"));
    ck_assert_ptr_nonnull(strstr(res.call, "nvrtcCompileProgram"));
    ck_assert_ptr_nonnull(strstr(res.file, "rt_nvrtc.c"));
    ck_assert_int_gt(res.line, 0);
    ck_assert_ptr_nonnull(strstr(res.message, "NVRTC_ERROR_COMPILATION"));
    StrBuf sb = {0};
    rt_nvrtc_report(&res, &sb);
    ck_assert_ptr_nonnull(strstr(sb_str(&sb), "undefined_thing"));
    ck_assert_ptr_nonnull(strstr(sb_str(&sb), "    1 | extern"));
    sb_free(&sb);
    rt_nvrtc_result_free(&res);
    ck_assert_ptr_null(res.log);
}
END_TEST

START_TEST(nvrtc_targets_and_options) {
    const char *good = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = expf(p[threadIdx.x]); }\n";
    RtNvrtcResult res;
    ck_assert_int_eq(rt_nvrtc_compile(good, NULL, RT_NVRTC_PTX, "sm_80", &res), RT_NVRTC_OK);
    ck_assert_ptr_nonnull(strstr(res.image, ".target sm_80"));
    ck_assert_uint_eq(res.size, strlen(res.image));
    ck_assert_ptr_null(res.listing);
    rt_nvrtc_result_free(&res);
    ck_assert_int_eq(rt_nvrtc_compile(good, NULL, RT_NVRTC_PTX, "compute_90", &res), RT_NVRTC_OK);
    rt_nvrtc_result_free(&res);
    ck_assert_int_eq(rt_nvrtc_compile(good, NULL, RT_NVRTC_CUBIN, "sm_90", &res), RT_NVRTC_OK);
    ck_assert_int_eq(memcmp(res.image, "\177ELF", 4), 0);
    rt_nvrtc_result_free(&res);
    static const char *const bad_arch[] = {"sm_9", "sm_9000", "sm90", "compute_90", "sm_90ab", "", NULL, "sm_90;rm"};
    for (size_t i = 0; i < sizeof bad_arch / sizeof *bad_arch; i++) {
        ck_assert_int_eq(rt_nvrtc_compile(good, NULL, RT_NVRTC_CUBIN, bad_arch[i], &res), RT_NVRTC_ERR_ARCH);
        ck_assert_ptr_nonnull(strstr(res.message, "invalid GPU architecture"));
        rt_nvrtc_result_free(&res);
    }
    char opts[256];
    ck_assert_int_gt(rt_nvrtc_options_text(RT_NVRTC_CUBIN, "sm_90", opts, sizeof opts), 0);
    ck_assert_ptr_nonnull(strstr(opts, "--gpu-architecture=sm_90"));
    ck_assert_ptr_null(strstr(opts, "fast"));
    ck_assert_int_gt(rt_nvrtc_options_text(RT_NVRTC_PTX, "sm_90a", opts, sizeof opts), 0);
    ck_assert_ptr_nonnull(strstr(opts, "--gpu-architecture=compute_90a"));
    ck_assert_int_eq(rt_nvrtc_options_text(RT_NVRTC_CUBIN, "compute_90", opts, sizeof opts), -1);
    ck_assert_int_eq(rt_nvrtc_options_text(RT_NVRTC_CUBIN, "sm_90", opts, 8), -1);
    int major = 0, minor = -1;
    ck_assert_int_eq(rt_nvrtc_version(&major, &minor), RT_NVRTC_OK);
    ck_assert_int_ge(major, 11);
    ck_assert_int_ge(minor, 0);
}
END_TEST

static Suite *codegen_suite(void) {
    Suite *s = suite_create("codegen");
    TCase *tc = tcase_create("codegen");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, prelude_matches_opmath);
    tcase_add_test(tc, prelude_covers_op_table);
    tcase_add_test(tc, identifiers_and_literals);
    tcase_add_test(tc, golden_sources);
    tcase_add_test(tc, keywords_are_refused);
    tcase_add_test(tc, generator_refuses_bad_names);
    tcase_add_test(tc, names_are_mangled);
    tcase_add_test(tc, edge_cell_emits_and_compiles);
    tcase_add_test(tc, launch_helpers);
    tcase_add_test(tc, nvrtc_failure_keeps_log_and_listing);
    tcase_add_test(tc, nvrtc_targets_and_options);
    tcase_add_test(tc, shipped_cells_emit_and_compile);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(codegen_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
