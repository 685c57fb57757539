/* Tests for CUDA code generation (codegen/) and the NVRTC wrapper (runtime/rt_nvrtc.c):
 * every shipped cell emits deterministically and compiles to CUBIN for sm_90 and sm_80 (no
 * GPU needed), golden sources, the backward kernels' routes, mangling of every name a cell
 * supplies, the CPU twin of the prelude against ir/opmath.h, NVRTC's failure reports, the
 * launch-contract helpers, and the generated kernels, forward and backward, run as C++ on
 * the CPU against the plan executor.
 * Key idea: the prelude (as C) and whole units (as C++) run here, so the generated float code
 * is checked without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../codegen/cg.h"
#include "../codegen/cg_gen.h"
#include "../codegen/emit.h"
#include "../ir/sched.h"
#include "../ir/sched_exec.h"
#include "../runtime/rnn_args.h"
#include "../runtime/rt_nvrtc.h"
#include "testutil.h"
#include "unit_races.h"

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
        if (len == strlen("rnn_tf32") && strncmp(name, "rnn_tf32", len) == 0) { /* a rounding, not an op: the */
            p = name + len; /* emulated kernels' split twins are checked bit for bit against it (cpu_check) */
            continue;
        }
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

/* Plans and lays out cell c with its dimensions bound by dims ("NAME=VALUE", ndims of them). */
static PlanLayout *layout_bound(Src *s, const IrCell *c, const char *const *dims, int ndims) {
    Plan *plan = sched_plan(&s->arena, c, &s->diags);
    ck_assert_msg(plan != NULL, "cell %s does not schedule", c->name);
    int64_t *dv = arena_array(&s->arena, (size_t)c->ndims + 1, sizeof *dv);
    ck_assert(ir_bind_dims(c, dims, ndims, dv, &s->diags));
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
/* 1 in a build under AddressSanitizer (make asan). Code generation is deterministic and NVRTC is
 * not instrumented, so such a build's NVRTC compiles of the units persistent_units_compile emits
 * repeat the plain build's (.ci/run makes both): that test leaves them to the plain build (over 300
 * compiles, about 5 minutes of CI); every unit is still emitted and checked under the sanitizers. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Checks (and frees) res, NVRTC's CUBIN of unit name for arch: fails the test on an error or any warning in
 * the log (a spill among them: runtime/rt_nvrtc.c), but for ptxas's spill warnings where spills_ok. */
static void compiled_checked(RtNvrtcResult res, const char *name, const char *arch, int spills_ok) {
    if (res.status != RT_NVRTC_OK) {
        StrBuf sb = {0};
        rt_nvrtc_report(&res, &sb);
        ck_abort_msg("%s for %s: %s", name, arch, sb_str(&sb));
    }
    ck_assert_ptr_nonnull(res.image);
    ck_assert_uint_gt(res.size, 0);
    ck_assert(res.log);
    static const char spill[] = "ptxas warning : Registers are spilled to local memory";
    for (const char *line = res.log; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        ck_assert_msg(len == 0 || (spills_ok && strncmp(line, spill, strlen(spill)) == 0), "%s for %s: NVRTC warned:\n%s",
                      name, arch, res.log);
        line += len + (end != NULL);
    }
    rt_nvrtc_result_free(&res);
}

/* Compiles source to a CUBIN for arch and checks it (compiled_checked). */
static void compile_checked(const char *source, const char *name, const char *arch, int spills_ok) {
    RtNvrtcResult res;
    rt_nvrtc_compile(source, name, RT_NVRTC_CUBIN, arch, &res);
    compiled_checked(res, name, arch, spills_ok);
}

/* Units compiled side by side (NVRTC compiles separate programs concurrently, as the runtime's builds do),
 * as many at once as the machine has processors (at most 8), each checked as compile_checked does when it
 * is joined: persistent_units_compile's ~300 compiles took ~280 s of CI one after another. */
typedef struct SideCompile {
    char *source, name[64]; /* the job's, held until its join */
    int spills_ok, running;
    RtNvrtcJob job;
} SideCompile;
typedef struct SideCompiles {
    SideCompile slot[8];
    int n, next;
} SideCompiles;

static void side_join(SideCompile *c) {
    if (!c->running) return;
    rt_nvrtc_job_join(&c->job);
    c->running = 0;
    compiled_checked(c->job.res, c->name, c->job.arch, c->spills_ok); /* frees the result */
    free(c->source);
}

static void side_init(SideCompiles *sc) {
    memset(sc, 0, sizeof *sc);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    sc->n = cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
}

/* Starts compiling a copy of source, first joining (and checking) the oldest compile where all slots run. */
static void side_compile(SideCompiles *sc, const char *source, const char *name, const char *arch, int spills_ok) {
    SideCompile *c = &sc->slot[sc->next];
    sc->next = (sc->next + 1) % sc->n;
    side_join(c);
    c->source = strdup(source);
    ck_assert_ptr_nonnull(c->source);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->spills_ok = spills_ok;
    rt_nvrtc_job_start(&c->job, c->source, c->name, arch);
    c->running = 1;
}

/* Joins and checks every compile still running. */
static void side_finish(SideCompiles *sc) {
    for (int i = 0; i < sc->n; i++) side_join(&sc->slot[(sc->next + i) % sc->n]);
}

/* Compiles source to a CUBIN for arch: no error, and an empty log (no warning, no spill). */
static void compile_ok(const char *source, const char *name, const char *arch) { compile_checked(source, name, arch, 0); }

/* Kernel name is defined in src (from path) by the launch contract's signature, and waits for the
 * kernel before it first: the runtime may launch it as a programmatic dependent (codegen/cg.h). */
static void assert_kernel_defined(const char *src, const char *path, const char *name) {
    char def[400];
    snprintf(def, sizeof def, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const RnnArgs a)", CG_BLOCK_SIZE, name);
    const char *d = strstr(src, def);
    ck_assert_msg(d, "%s: no definition of %s", path, name);
    const char *first = "\n{\n    RNN_AFTER_PREDECESSOR();\n";
    ck_assert_msg(strncmp(d + strlen(def), first, strlen(first)) == 0, "%s: %s reads before it waits", path, name);
}

static int count(const char *hay, const char *needle);

/* Every store of a state's next value in unit u (forward kernels, per step or persistent) comes with
 * the pass's last step's store of it into the caller's hT (RnnArgs.state_final), running sequences
 * and finished ones alike: no launch copies the final states out (bench/NOTES.md section 68). */
static void assert_final_states_written(const char *u, const IrCell *c, const char *what) {
    for (int k = 0; k < c->nstates; k++) {
        char next[64], final[96];
        snprintf(next, sizeof next, "a.state_next[%d][", k);
        snprintf(final, sizeof final, "if (a.state_final[%d] && a.t == a.T - 1) a.state_final[%d][", k, k);
        const int stores = count(u, next);
        ck_assert_msg(stores > 0, "%s: %s: no store of state %d", what, c->name, k);
        ck_assert_msg(count(u, final) == stores, "%s: %s: state %d stored %d times, its final %d", what, c->name, k,
                      stores, count(u, final));
    }
}

/* In a persistent forward unit (P its plan), each fused product's sums (CgPersistGemm.fuse) reach
 * its training step buffer: stored by the product in training (`? RNN_IN_RED : RNN_TO_OUT`), or, for
 * at most the step's last product and only where the steps meet at a barrier, kept in red and stored
 * after the block's arrival at each step's end, the last step's included (rnn_red_store, bench/NOTES.md
 * section 69). */
static void assert_fused_sums_stored(const char *u, const CgPersist *P, const char *what) {
    const char *kernel = strstr(u, "__global__");
    ck_assert_ptr_nonnull(kernel);
    int fused = 0;
    for (int q = 0; q < P->ngemms; q++) fused += P->gemms[q].fuse;
    const int late = count(kernel, ", RNN_IN_RED"), in_product = count(kernel, "? RNN_IN_RED : RNN_TO_OUT");
    ck_assert_msg(late + in_product == fused, "%s: %d fused, %d stored late, %d by the product", what, fused, late, in_product);
    ck_assert_msg(late <= 1 && (!P->flags || !late), "%s: %d stored late%s", what, late, P->flags ? " with flags" : "");
    ck_assert_int_eq(count(kernel, "rnn_red_store(rnn_red, "), late);
    if (late) ck_assert_ptr_nonnull(strstr(kernel, "if (t + 1 < args.t_end) rnn_grid_arrive(args.sync);  // this block is done with step t\n"
                                                   "        if (args.buf_step["));
}

START_TEST(shipped_cells_emit_and_compile) {
    SideCompiles sc;
    side_init(&sc);
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
                    assert_kernel_defined(a, paths[i], name);
                }
                ck_assert_int_eq(*list, '\n');
                /* and the backward kernels, on the next line */
                ck_assert_int_eq(strncmp(list, "\n// rnncc-backward-kernels:", 27), 0);
                list += 27;
                for (int g = 0; g < L->plan->ngroups; g++) {
                    char name[256];
                    ck_assert_int_gt(cg_backward_kernel_name(L->plan, g, name, sizeof name), 0);
                    ck_assert_msg(strncmp(list, " ", 1) == 0 && strncmp(list + 1, name, strlen(name)) == 0,
                                  "%s: backward kernel %d is not %s in the header", paths[i], g, name);
                    list += 1 + strlen(name);
                    assert_kernel_defined(a, paths[i], name);
                }
                ck_assert_int_eq(*list, '\n');
                assert_final_states_written(a, c, paths[i]);
                side_compile(&sc, a, c->name, "sm_90", 0);
                side_compile(&sc, a, c->name, "sm_80", 0);
                free(a);
                free(b);
            }
        }
        src_close(&s);
    }
    side_finish(&sc);
    tu_free_list(paths, n);
}
END_TEST

/* The value of fp16 bits i, 0 .. 0x7c00 (0x7c00, infinity, counts as 2^16, as IEEE rounding has it). */
static double f16_value(unsigned i) { return i < 0x400 ? ldexp(i, -24) : ldexp(1 + (i & 0x3ff) / 1024.0, (int)(i >> 10) - 15); }

/* fp16 of finite x by its value: the nearer of its two fp16 neighbours (found by bisection over the
 * ordered bit patterns), the even one on a tie. */
static unsigned short f16_by_value(float x) {
    double ax = fabs((double)x);
    unsigned short sign = signbit(x) ? 0x8000 : 0;
    if (ax >= 65536.0) return sign | 0x7c00;
    unsigned lo = 0, hi = 0x7c00; /* value(lo) <= ax < value(hi) */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (f16_value(mid) <= ax) lo = mid;
        else hi = mid;
    }
    double dlo = ax - f16_value(lo), dhi = f16_value(hi) - ax;
    return sign | (unsigned short)(dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo);
}

/* bf16 of x by its value: the nearer of x's two bf16 neighbours (the one past the largest finite
 * value counts as 2^128, as IEEE rounding has it), the even one on a tie. */
static unsigned short bf16_by_value(float x) {
    if (isnan(x)) return 0x7fc0;
    uint32_t u, lo, hi;
    memcpy(&u, &x, sizeof u);
    lo = u & 0xffff0000u; /* toward zero */
    if (lo == u) return (unsigned short)(lo >> 16);
    hi = lo + 0x10000u;   /* away from zero */
    float flo, fhi;
    memcpy(&flo, &lo, sizeof flo);
    memcpy(&fhi, &hi, sizeof fhi);
    double ax = fabs((double)x), dlo = ax - fabs((double)flo);
    double dhi = ((hi & 0x7fffffffu) == 0x7f800000u ? ldexp(1.0, 128) : fabs((double)fhi)) - ax;
    unsigned short l = (unsigned short)(lo >> 16), h = (unsigned short)(hi >> 16);
    return dlo < dhi ? l : dhi < dlo ? h : (l & 1) ? h : l;
}

/* The prelude's roundings to 16 bits (the twins' and the conversion kernels', on the CPU as on the
 * GPU) against roundings by value: every 65537th float and the
 * edges (ties, subnormals, the largest values, infinities, NaN). */
START_TEST(roundings_to_16_bits) {
    static const float edges[] = {0.0f, -0.0f, 1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f, 1.0f + 3 * 0x1p-11f,
                                  65504.0f, 65519.99f, 65520.0f, 1e30f, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f,
                                  0x1p-26f, 3 * 0x1p-25f, 0x1.ffcp-15f, 0x1.ffep-15f, 0x1.fffffep127f, INFINITY,
                                  -INFINITY, NAN, -65520.0f, 1.00390625f, 1.01171875f};
    for (uint64_t i = 0; i < (1ull << 32) / 65537 + sizeof edges / sizeof edges[0]; i++) {
        float x;
        uint32_t u = (uint32_t)(i * 65537u);
        if (i < sizeof edges / sizeof edges[0]) x = edges[i];
        else memcpy(&x, &u, sizeof x);
        unsigned short want = isnan(x) ? 0 : f16_by_value(x);
        unsigned short got = rnn_round_f16(x), gotb = rnn_round_bf16(x), wantb = bf16_by_value(x);
        if (isnan(x)) { /* quiet NaNs, payloads aside */
            ck_assert_msg((got & 0x7e00) == 0x7e00 && (gotb & 0x7fc0) == 0x7fc0, "NaN %#x: %#x %#x", u, got, gotb);
            continue;
        }
        ck_assert_msg(got == want, "fp16 of %a: %#x, want %#x", (double)x, got, want);
        ck_assert_msg(gotb == wantb, "bf16 of %a: %#x, want %#x", (double)x, gotb, wantb);
    }
}
END_TEST

/* Whether PTX holds a kernel of that name. */
static int has_entry(const char *ptx, const char *name) {
    char entry[128];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    return strstr(ptx, entry) != NULL;
}

/* Whether the PTX of kernel name (from its .entry to the next, or the end) holds text. */
static int entry_has(const char *ptx, const char *name, const char *text) {
    char entry[128];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    const char *at = strstr(ptx, entry);
    if (!at) return 0;
    const char *next = strstr(at + 1, ".entry ");
    const char *hit = strstr(at, text);
    return hit && (!next || hit < next);
}

/* The 16-bit operand conversions the runtime looks up (RNNCC_FP16, RNNCC_BF16: runtime/rt_half.c),
 * RNNCC_TF32X3's split (runtime/rt_x3.c) and the fold's column moves are a unit of their own, the same
 * for every cell, with the kernels that stage a layer-direction's states and their twins, each kernel
 * only where the model launches it; NVRTC compiles every combination; the per-step units carry none. */
START_TEST(conversions_are_a_unit_of_their_own) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const PlanLayout *L = layout_all(&s, s.module->cells[0], 37);
    char *u = emit(&s, L);
    ck_assert_ptr_null(strstr(u, "RNN_CONVERT_KERNEL"));
    /* the step kernel writes h's 16-bit twin, not c's: a step GEMM multiplies h alone */
    ck_assert_ptr_nonnull(strstr(u, "if (a.state16[0]) rnn_put16(&a.state16[0][n * RNN_DIM_H + j], v39_h_next, a.bf16);"));
    ck_assert_ptr_null(strstr(u, "a.state16[1]"));
    /* no value of the LSTM's is a GEMM's operand: no buffer twin (RnnArgs.buf16) */
    for (int b = 0; b < L->plan->nbuffers; b++) ck_assert(!cg_value_twinned(L->plan, b));
    ck_assert_ptr_null(strstr(u, "rnn_put16(&a.buf16["));
    /* a model's unit holds what it launches (rt_convert_needs): every combination compiles, with its kernels only */
    StrBuf bad = {0};
    ck_assert(!cg_emit_convert(&bad, CG_CONVERT_ALL + 1));
    sb_free(&bad);
    for (unsigned what = 0; what <= CG_CONVERT_ALL; what++) {
        StrBuf conv = {0};
        ck_assert(cg_emit_convert(&conv, what));
        /* the items a thread moves, by which runtime/rt_half.c sizes the grid */
        char items[64];
        snprintf(items, sizeof items, "#define RNN_CONVERT_ITEMS %d\n", CG_CONVERT_ITEMS);
        ck_assert_ptr_nonnull(strstr(sb_str(&conv), items));
        ck_assert_ptr_null(strstr(sb_str(&conv), "RNN_DIM_"));
        const int bf16 = !!(what & CG_CONVERT_BF16), half = !!(what & CG_CONVERT_HALF);
        const char *arches[] = {"sm_90", "sm_80"};
        const int both = what == CG_CONVERT_ALL || what == CG_CONVERT_HALF; /* sm_80 too: fp16's and every kernel */
        for (int i = 0; i < (both ? 2 : 1); i++) {
            RtNvrtcResult res;
            ck_assert_int_eq(rt_nvrtc_compile(sb_str(&conv), "convert", RT_NVRTC_PTX, arches[i], &res), RT_NVRTC_OK);
            const char *ptx = (const char *)res.image;
            /* the state staging (runtime/rt_half.c, rt_copy_states) in the precision's rounding, always */
            ck_assert_msg(has_entry(ptx, "rnncc_states_f16") != bf16 && has_entry(ptx, "rnncc_states_bf16") != !bf16,
                          "%s, %u: state staging", arches[i], what);
            /* the 16-bit conversion of that rounding (rt_half.c), by the hardware's cvt.rn */
            ck_assert_msg(has_entry(ptx, "rnncc_to_f16") != !(half && !bf16) &&
                              has_entry(ptx, "rnncc_to_bf16") != !(half && bf16),
                          "%s, %u: conversions", arches[i], what);
            const char *cvt = bf16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32", *other = bf16 ? "cvt.rn.f16.f32" : "cvt.rn.bf16.f32";
            const char *stage = bf16 ? "rnncc_states_bf16" : "rnncc_states_f16", *to = bf16 ? "rnncc_to_bf16" : "rnncc_to_f16";
            ck_assert_msg(entry_has(ptx, stage, cvt) && !entry_has(ptx, stage, other), "%s, %u: staging's cvt.rn", arches[i], what);
            ck_assert_msg(!half || (entry_has(ptx, to, cvt) && !entry_has(ptx, to, other)), "%s, %u: conversion's cvt.rn",
                          arches[i], what);
            /* RNNCC_TF32X3's split (runtime/rt_x3.c) */
            ck_assert_msg(has_entry(ptx, "rnncc_to_x3") != !(what & CG_CONVERT_X3), "%s, %u: split", arches[i], what);
            /* the projection fold's columns (runtime/rt_fold.c) */
            const int fold = !!(what & CG_CONVERT_FOLD);
            ck_assert_msg(has_entry(ptx, "rnncc_fold_entry") != !fold && has_entry(ptx, "rnncc_fold_final") != !fold &&
                              has_entry(ptx, "rnncc_fold_gather") != !fold,
                          "%s, %u: fold kernels", arches[i], what);
            ck_assert_msg(!strstr(ptx, "div.s64") && !strstr(ptx, "rem.s64"), "%s, %u: a 64-bit division", arches[i], what);
            rt_nvrtc_result_free(&res);
        }
        sb_free(&conv);
    }
    free(u);
    src_close(&s);
}
END_TEST

/* The runtime compiles a unit's forward and backward parts as two programs side by side: each part
 * is the whole unit's text up to or from CG_BACKWARD_MARK after the same header and preamble, so the
 * kernels the two compile are the whole unit's, and each compiles alone with its kernels only. */
START_TEST(unit_parts_make_the_whole) {
    const char *cells[] = {"cells/lstm.cell", "cells/mlstm.cell", "cells/lstmp.cell"};
    for (int ci = 0; ci < 3; ci++) {
        Src s;
        src_open_file(&s, cells[ci]);
        const PlanLayout *L = layout_all(&s, s.module->cells[0], 24);
        char *whole = emit(&s, L);
        StrBuf part[2] = {{0}, {0}};
        for (int p = 0; p < 2; p++)
            ck_assert(cg_emit_unit(&s.arena, L->plan, L, p ? CG_UNIT_BACKWARD : CG_UNIT_FORWARD, &part[p], &s.diags));
        const char *fwd = sb_str(&part[0]), *bwd = sb_str(&part[1]);
        const char *mark = strstr(whole, CG_BACKWARD_MARK), *bmark = strstr(bwd, CG_BACKWARD_MARK);
        ck_assert_ptr_nonnull(mark);
        ck_assert_ptr_nonnull(bmark);
        ck_assert_ptr_null(strstr(fwd, CG_BACKWARD_MARK));
        /* forward part + a blank line = the whole up to the mark; the backward part's preamble is the forward's */
        ck_assert_uint_eq(strlen(fwd) + 1, (size_t)(mark - whole));
        ck_assert_int_eq(strncmp(fwd, whole, strlen(fwd)), 0);
        ck_assert_str_eq(bmark, mark);
        ck_assert_int_eq(strncmp(bwd, whole, (size_t)(bmark - bwd)), 0);
        for (int p = 0; p < 2; p++) {
            RtNvrtcResult res;
            ck_assert_int_eq(rt_nvrtc_compile(sb_str(&part[p]), "part", RT_NVRTC_PTX, "sm_90", &res), RT_NVRTC_OK);
            const char *ptx = (const char *)res.image;
            for (int g = 0; g < L->plan->ngroups; g++) {
                char name[128], other[128], entry[160];
                ck_assert_int_ge(cg_kernel_name(L->plan, g, p ? other : name, sizeof name), 0);
                ck_assert_int_ge(cg_backward_kernel_name(L->plan, g, p ? name : other, sizeof name), 0);
                snprintf(entry, sizeof entry, ".entry %s(", name);
                ck_assert_msg(strstr(ptx, entry), "%s: part %d lacks %s", cells[ci], p, name);
                snprintf(entry, sizeof entry, ".entry %s(", other);
                ck_assert_msg(!strstr(ptx, entry), "%s: part %d holds %s", cells[ci], p, other);
            }
            rt_nvrtc_result_free(&res);
        }
        sb_free(&part[0]);
        sb_free(&part[1]);
        free(whole);
        src_close(&s);
    }
}
END_TEST

/* The grid barriers of unit u: whole ones, and a forward step's halves (rnn_grid_wait, which must
 * follow as many rnn_grid_arrive calls). */
static int barriers(const char *u) {
    ck_assert_int_eq(count(u, "rnn_grid_arrive(args.sync)"), count(u, "rnn_grid_wait(args.sync"));
    return count(u, "rnn_grid_sync(args.sync") + count(u, "rnn_grid_wait(args.sync");
}

/* The weight loops' index lines ("const int r = e / ..." or "const int k = e / ..."), in order:
 * one a GEMM for the copies, then (tf32) one a GEMM for the rounding, which must repeat the
 * copies' mapping, for a thread may read unsynchronised only what it copied itself. */
static int weights_rounded_by_their_copier(const char *u, int ngemms, int tf32, const char *name) {
    const char *lines[16];
    int n = 0, moved = 0; /* GEMMs whose columns rnn_load_transposed loads, rounding (tf32) as it stores */
    char call[40];
    snprintf(call, sizeof call, "rnn_load_transposed<%d>(w", tf32);
    const char *kernel = strstr(u, "__global__");
    ck_assert_ptr_nonnull(kernel);
    for (const char *p = kernel; (p = strstr(p, "rnn_load_transposed<")); p++, moved++)
        ck_assert_msg(strncmp(p, call, strlen(call)) == 0, "%s: %.40s, not %s", name, p, call);
    ngemms -= moved;
    for (const char *p = u; (p = strstr(p, "        const int ")) && n < 16; p++) {
        if (strncmp(p + 18, "r = e / ", 8) && strncmp(p + 18, "k = e / ", 8)) continue;
        if (p[26] < '0' || p[26] > '9') continue; /* persist.cuh's loops divide by names */
        lines[n++] = p;
    }
    ck_assert_msg(n == (tf32 ? 2 : 1) * ngemms, "%s: %d weight loops for %d GEMMs", name, n, ngemms);
    const char *wait = strstr(u, "rnn_cp_wait_all();  // this thread's copies of the weights");
    for (int i = 0; tf32 && i < ngemms; i++) {
        /* the loop's header (the line before) and its index line, alike in both loops */
        const char *a = lines[i] - 1, *b = lines[ngemms + i] - 1;
        while (a > u && a[-1] != '\n') a--;
        while (b > u && b[-1] != '\n') b--;
        size_t len = (size_t)(lines[i] - a) + strcspn(lines[i], "\n");
        ck_assert_msg(strncmp(a, b, len + 1) == 0, "%s: GEMM %d rounded by other threads", name, i);
        ck_assert_msg(wait && wait < b, "%s: GEMM %d rounded before the copies land", name, i);
    }
    return moved;
}

/* A backward with GEMMs and no barrier opening its steps prefetches, once a step, inside the
 * barrier before its transposed GEMMs (after its arrival, before its wait), the values from before the
 * step that step t-1's first group loads: forward values and the outputs' adjoints dy, never an
 * adjoint the GEMMs are adding to; where that group loads any; a forward, or a backward whose steps
 * open with a barrier (whose acquire drops L1's lines), does not; each step is counted once. */
static void backward_prefetch_placed(const char *u, int ngemms, int backward, const char *name) {
    const char *kernel = strstr(u, "__global__");
    ck_assert_ptr_nonnull(kernel);
    int opens = strstr(kernel, "step t+1 is complete everywhere") != NULL;
    const char *at = strstr(kernel, "// step t-1's values from before it, landing while the barrier and this step's GEMMs run");
    ck_assert_msg(!at || (backward && ngemms && !opens), "%s: backward prefetch emitted", name);
    /* the LSTM's first group reads its hoisted values, G1's results and c: where it may, it does */
    if (backward && ngemms && !opens && strcmp(name, "lstm") == 0) ck_assert_msg(at, "%s: backward prefetch missing", name);
    ck_assert_int_eq(count(kernel, "RNN_PROF_STEP();"), 1);
    if (!at) return;
    ck_assert_int_eq(count(kernel, "// step t-1's values from before it"), 1);
    const char *bar = strstr(kernel, "rnn_grid_arrive(args.sync);  // the barrier below"), *gemm = strstr(kernel, "rnn_mv_");
    const char *wait = bar ? strstr(bar, "rnn_grid_wait(args.sync, ++epoch);  // the transposed GEMMs") : NULL;
    ck_assert_msg(bar && wait && gemm && bar < at && at < wait && wait < gemm,
                  "%s: prefetch not between the barrier's arrival and its wait, before the GEMMs", name);
    ck_assert_msg(!strstr(kernel, "rnn_grid_sync(args.sync, ++epoch);  // the transposed GEMMs") ||
                      strstr(kernel, "rnn_grid_sync(args.sync, ++epoch);  // the transposed GEMMs") > wait,
                  "%s: a whole barrier before the first transposed GEMMs", name);
    /* at step t-1, within the launch: the guard opens the scope, whose view is of t = t_prev */
    const char *guard = strstr(kernel, "if (t > args.t) {  // step t-1's values"), *view = strstr(at, "const int t = t_prev;");
    ck_assert_msg(guard && guard + strlen("if (t > args.t) {  ") == at, "%s: the prefetch is not guarded by t > args.t", name);
    const char *prev = strstr(at, "const int t_prev = t - 1;");
    ck_assert_msg(prev && view && prev < view && view < gemm, "%s: no view of step t-1", name);
    int n = 0;
    for (const char *p = at; (p = strstr(p, "rnn_prefetch(&")) && p < gemm; p++, n++) {
        ck_assert_msg(strncmp(p, "rnn_prefetch(&a.d", 17) != 0 || strncmp(p, "rnn_prefetch(&a.dy[", 19) == 0,
                      "%s: an adjoint prefetched: %.60s", name, p);
        /* an address the group itself loads (its body in the loop, before the barrier, reads it at step t) */
        const char *e = p + strlen("rnn_prefetch(&"), *end = strstr(e, ");  // ");
        ck_assert_ptr_nonnull(end);
        char expr[256];
        ck_assert_int_lt(end - e, (int)sizeof expr);
        memcpy(expr, e, (size_t)(end - e));
        expr[end - e] = 0;
        const char *use = strstr(strstr(kernel, "for (int t = args.t_end - 1; t >= args.t; t--) {"), expr);
        ck_assert_msg(use && use < bar, "%s: %s prefetched, not loaded by the group", name, expr);
    }
    /* where each thread has one item (persistent_one_item_a_thread), its first item's loads alone */
    const char *first = strstr(at, "for this thread's first item, loaded while the GEMMs run");
    ck_assert_msg(n > 0 || (first && first < gemm), "%s: a prefetch scope without prefetches", name);
}

/* The persistent unit of a layout for ask; NULL (and *why) when it does not fit. */
static char *emit_persistent(Src *s, const PlanLayout *L, CgPersistAsk ask, CgPersist *P, char *why, size_t why_size) {
    if (!cg_persist_plan(&s->arena, L, &ask, P, why, why_size)) return NULL;
    StrBuf out = {0};
    if (!cg_emit_persistent(&s->arena, L->plan, L, P, &out, &s->diags)) {
        StrBuf sb = {0};
        diag_render(&s->diags, &sb);
        ck_abort_msg("cell %s: no persistent unit:\n%s", L->plan->cell->name, sb_str(&sb));
    }
    ck_assert(!out.failed);
    return sb_take(&out);
}

/* A product call's arguments (args: just past its template) start with the weights w<gemm> of the
 * GEMM it multiplies; the steps it takes from registers (ki: its template's last argument, 0 when
 * it has none) are exactly the plan's (CgPersistGemm.wregs). */
static void held_as_planned(const CgPersist *P, const char *args, int ki, int ws) {
    int gq = -1;
    ck_assert_int_eq(sscanf(args, "w%d", &gq), 1);
    for (int q = 0; q < P->ngemms; q++) {
        if (P->gemms[q].gemm != gq) continue;
        ck_assert_int_eq(ki, P->gemms[q].wregs);
        ck_assert_int_eq(ws, P->gemms[q].waves); /* and staged in the plan's waves: its own copies, no flags */
        ck_assert(!ws || ((P->cluster == 1 || P->split) && !P->flags && P->nw >= 4 && P->mma));
    }
}

/* Every shipped cell and a dozen random ones have a persistent unit, forward and backward, FFMA
 * and tf32 tensor-core products, for each batch class that NVRTC compiles without warnings; it
 * defines the kernel its contract names, with one grid barrier per step for one GEMM phase whose
 * rows stay local (LSTM), more for more phases; a GEMM of a GEMM's result waits for every
 * block's rows; mma plans take whole 8-sequence tiles. */
START_TEST(persistent_units_compile) {
    char **paths;
    int n = tu_list_cells(&paths), nested = 0;
    char src[8192];
    SideCompiles sc;
    side_init(&sc);
    for (int i = 0; i < n + 12; i++) {
        Src s;
        if (i < n) src_open_file(&s, paths[i]);
        else {
            int len = tu_random_cell((uint64_t)(i - n + 1), src, sizeof src);
            ck_assert_int_gt(len, 0);
            src_open(&s, "random.cell", src);
        }
        const IrCell *c = s.module->cells[0];
        Plan *plan = sched_plan(&s.arena, c, &s.diags);
        ck_assert_ptr_nonnull(plan);
        const char *dims[] = {"I=40", "H=72", "M=56", "P=24"};
        int64_t *dv = arena_array(&s.arena, (size_t)c->ndims + 1, sizeof *dv);
        for (int d = 0; d < c->ndims; d++)
            for (int k = 0; k < 4; k++)
                if (c->dims[d].name && c->dims[d].name[0] == dims[k][0]) dv[d] = atoi(dims[k] + 2);
        PlanLayout *L = sched_layout(&s.arena, plan, dv, &s.diags);
        ck_assert_ptr_nonnull(L);
        int of_result = 0; /* a step GEMM multiplies another step GEMM's result */
        for (int j = 0; j < plan->ngemms; j++)
            of_result |= plan->gemms[j].program == SCHED_STEP && c->nodes[plan->gemms[j].operand].op == IR_MATVEC;
        nested += of_result;
        static const int64_t batches[] = {1, 7, 16, 64};
        static const int clusters[] = {1, 4, 1, 2}, warps[] = {16, 8, 8, 4};
        for (int b = 0; b < 4; b++)
            for (int k = 0; k < 8; k++) {
                int backward = k & 1;
                CgProducts products = (CgProducts)(k >> 1);
                int tf32 = products == CG_TF32, mma = products != CG_FFMA, half = mma && !tf32;
                CgPersist P;
                char why[256], name[256];
                CgPersistAsk ask = cg_persist_h100_ask(batches[b], backward, products, clusters[b]);
                ask.twins = half; /* as the runtime plans a 16-bit model */
                ask.warps = warps[b];
                ask.handoff = b == 0 ? CG_HANDOFF_FLAGS : CG_HANDOFF_BARRIER; /* flags where allowed (b = 0: no clusters) */
                char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
                ck_assert_msg(u, "%s: %s", c->name, why);
                if (!backward) assert_final_states_written(u, c, "persistent forward");
                if (!backward) assert_fused_sums_stored(u, &P, c->name);
                ck_assert_int_eq(P.warps, warps[b]);
                char bounds[64];
                snprintf(bounds, sizeof bounds, "__launch_bounds__(%d, 1)", 32 * warps[b]);
                ck_assert_msg(strstr(u, bounds), "%s: no %s", c->name, bounds);
                ck_assert_int_eq(strstr(u, "  // warps a block (persist.cuh)") != NULL, warps[b] != 8);
                /* LSTM's one operand (72 long, staged whole) is shared; a cell is planned without clusters
                 * only when they cannot share its operands */
                if (strcmp(c->name, "lstm") == 0) ck_assert_int_eq(P.cluster, clusters[b]);
                ck_assert(P.cluster == 1 || P.cluster == clusters[b]);
                ck_assert_int_eq(P.blocks % P.cluster, 0);
                ck_assert_int_eq(strstr(u, "rnn_cluster_init(rnn_xs") != NULL, P.cluster > 1);
                ck_assert_int_eq(strstr(why, " in clusters of ") != NULL, P.cluster > 1);
                if (P.ngemms) /* an element-wise recurrence (IndRNN) holds no weights and multiplies nothing */
                    ck_assert_msg(strstr(why, "fit on chip") && strstr(why, cg_products_name(products)), "%s", why);
                else
                    ck_assert_msg(strncmp(why, "no step weights (an element-wise recurrence): ", 46) == 0 &&
                                  !strstr(why, "products"), "%s", why);
                int nw = cg_persist_nw(batches[b]);
                ck_assert_int_eq(P.nw, mma && nw < 2 ? 2 : nw);
                ck_assert_int_eq(P.mma, mma);
                ck_assert_int_eq(P.half, half);
                ck_assert_int_eq(P.pad, half ? 32 : tf32 ? 16 : 4);
                ck_assert_int_eq(P.xpad, tf32 ? 16 : 4);
                for (int q = 0; q < P.ngemms; q++) { /* conflict-free rows (persist.cuh): 64 bytes past 128s (mma) */
                    ck_assert_int_eq(P.gemms[q].ldw % (half ? 64 : 32), half ? 32 : tf32 ? 16 : 4);
                    ck_assert_int_eq(P.gemms[q].kc % ((half ? 32 : 16) * warps[b]), 0); /* warps' whole steps */
                }
                const char *at = strstr(u, mma ? "rnn_mv_mma<" : "rnn_mv_t<");
                ck_assert_msg(!P.ngemms || at, "%s", c->name);
                int any16 = 0, calls16 = 0;
                for (int q = 0; q < P.ngemms; q++) { /* a forward's states staged 16-bit (with flags too) and,
                                                      * at barriers, a later phase's value of the step; a
                                                      * backward's result adjoints where their group alone sends them */
                    const SchedGemm *gm = &plan->gemms[P.gemms[q].gemm];
                    int whole = P.gemms[q].K % 8 == 0 && L->buffer_width[gm->out_buffer] % 8 == 0;
                    int vb = plan->node[gm->operand].buffer;
                    int value = vb >= 0 && ask.handoff != CG_HANDOFF_FLAGS && cg_flagged_buffer(L, vb);
                    int x16 = backward ? cg_adjoint_twinned(plan, gm->out_buffer) && whole
                                       : (c->nodes[gm->operand].op == IR_STATE || value) && P.gemms[q].K % 8 == 0;
                    ck_assert_int_eq(P.gemms[q].x16, half && x16);
                    any16 |= P.gemms[q].x16;
                    char staged[64], trap[64];
                    snprintf(staged, sizeof staged, ", a.dbuf16[%d], ", gm->out_buffer);
                    snprintf(trap, sizeof trap, "if (!args.dbuf16[%d]) __trap();", gm->out_buffer);
                    ck_assert_int_eq(strstr(u, staged) != NULL, backward && P.gemms[q].x16);
                    ck_assert_int_eq(count(u, trap), backward && P.gemms[q].x16);
                }
                for (; P.ngemms && mma && at; at = strstr(at + 1, "rnn_mv_mma<")) {
                    /* the products' precision, whether the operand is 16-bit and the partial sums' stride (8*RW
                     * padded to 4 modulo 16, persist.cuh's LDR): the template's last arguments */
                    int rw = 0, nwa = 0, prec = 0, x16 = 0, ldr = 0, ki = 0, ws = 0;
                    int n5 = 0, n6 = 0, n7 = 0; /* and the steps of weights held in registers (CgPersistGemm.wregs),
                                                 * and the waves their operand is staged in (.waves) */
                    sscanf(at, "rnn_mv_mma<%d, %d, %d, %d, %d>(%n", &rw, &nwa, &prec, &x16, &ldr, &n5);
                    sscanf(at, "rnn_mv_mma<%d, %d, %d, %d, %d, %d>(%n", &rw, &nwa, &prec, &x16, &ldr, &ki, &n6);
                    sscanf(at, "rnn_mv_mma<%d, %d, %d, %d, %d, %d, %d>(%n", &rw, &nwa, &prec, &x16, &ldr, &ki, &ws, &n7);
                    ck_assert(n5 > 0 || (n6 > 0 && ki > 0) || (n7 > 0 && ki > 0 && (ws == 2 || ws == 4) && ki % ws == 0));
                    held_as_planned(&P, at + (n7 > 0 ? n7 : n6 > 0 ? n6 : n5), n6 > 0 || n7 > 0 ? ki : 0, n7 > 0 ? ws : 0);
                    ck_assert_int_eq(prec, (int)products);
                    ck_assert(ldr >= 8 * rw && ldr <= 8 * rw + 12 && ldr % 16 == 4);
                    const char *x = strstr(at, backward ? ", a.dbuf16[" : ", rnn_x16_"), *end = strchr(at, ';');
                    const char *xb = backward ? NULL : strstr(at, ", rnn_b16_"); /* a later phase's value's twin */
                    if (xb && (!x || xb < x)) x = xb;
                    ck_assert_int_eq(x16, x && end && x < end); /* X is the twin exactly when the template says so */
                    calls16 += x16;
                }
                for (; P.ngemms && !mma && at; at = strstr(at + 1, "rnn_mv_t<")) { /* FFMA: the steps held, as planned */
                    int rw = 0, nwa = 0, ldr = 0, ki = 0, n3 = 0, n4 = 0;
                    sscanf(at, "rnn_mv_t<%d, %d, %d>(%n", &rw, &nwa, &ldr, &n3);
                    sscanf(at, "rnn_mv_t<%d, %d, %d, %d>(%n", &rw, &nwa, &ldr, &ki, &n4);
                    ck_assert(n3 > 0 || (n4 > 0 && ki > 0));
                    held_as_planned(&P, at + (n4 > 0 ? n4 : n3), n4 > 0 ? ki : 0, 0); /* FFMA: no waves */
                }
                ck_assert_int_eq(calls16 > 0, any16);
                ck_assert_int_eq(strstr(u, "const unsigned short *const rnn_x16_") != NULL, any16 && !backward);
                /* weights copied asynchronously, then (tf32 only) rounded where they landed; 16-bit weights
                 * from the runtime's rounded copy */
                ck_assert_msg(!P.ngemms || strstr(u, "rnn_cp_wait_all();  // this thread's copies of the weights"), "%s",
                              c->name);
                /* the backward's columns (72, 56 and 24 long here: whole 16-byte pieces) by rnn_load_transposed */
                int moved = weights_rounded_by_their_copier(u, P.ngemms, tf32, c->name);
                ck_assert_int_eq(moved, backward ? P.ngemms : 0);
                ck_assert_msg((P.ngemms > moved && tf32) == (strstr(u, "] = rnn_to_tf32(w") != NULL),
                              "%s: weights rounded %s", c->name, tf32 ? "not" : "in fp32");
                ck_assert_int_eq(P.ngemms && half, strstr(u, "args.params16[") || strstr(u, "args.params16 + "));
                ck_assert_int_eq(strstr(u, "args.params[") || strstr(u, "args.params + ") ? 1 : 0, P.ngemms && !half);
                ck_assert_int_eq(P.backward, backward);
                ck_assert_int_gt(cg_persist_kernel_name(plan, backward, name, sizeof name), 0);
                ck_assert_msg(strstr(u, name), "%s: no kernel %s", c->name, name);
                /* the LSTM's forward asked for flags hands its steps off by them (no barrier), else one a step */
                int flagged = strcmp(c->name, "lstm") == 0 && !backward && b == 0;
                if (strcmp(c->name, "lstm") == 0) {
                    ck_assert_int_eq(P.flags, flagged);
                    ck_assert_int_eq(barriers(u), !flagged);
                }
                /* flagged words: 16-bit ones where the state is staged from its twin, else 8-byte ones */
                ck_assert_int_eq(strstr(u, "rnn_flag_put(&rnn_flags_next") || strstr(u, "rnn_flag_put16(&rnn_flags_next"),
                                 P.flags);
                ck_assert_int_eq(strstr(u, "rnn_flag_put16(&rnn_flags_next") != NULL, P.flags && any16);
                ck_assert_int_eq(strstr(u, "rnn_flag_put(&rnn_flags_next") != NULL, P.flags && !any16);
                ck_assert(!P.flags || (!backward && P.cluster == 1 && !barriers(u)));
                backward_prefetch_placed(u, P.ngemms, backward, c->name);
                if (of_result) {
                    ck_assert_msg(barriers(u) >= 2, "%s: too few barriers", c->name);
                    ck_assert_int_eq(P.flags, 0);
                }
                /* 16 warps cap a thread at 128 registers, where ptxas may spill a few bytes (CIFG's fp16
                 * forward with flags: 4; the search takes such a tile only where it times fastest) */
                if ((b == 0 || b == 3) && !SANITIZED) side_compile(&sc, u, c->name, P.cluster > 1 ? "sm_90a" : "sm_90", warps[b] == 16);
                free(u);
            }
        src_close(&s);
    }
    side_finish(&sc);
    ck_assert_msg(nested > 0, "no cell with a GEMM of a GEMM's result");
    tu_free_list(paths, n);
}
END_TEST

/* Steps hand off by flags where asked and the plan allows: the LSTM's forward without clusters
 * stores each new h also as a flagged word (both where it computes it and where a finished
 * sequence keeps it), stages later steps from those words and has no grid barrier; by default
 * (CG_HANDOFF_BARRIER), with clusters, in the backward or with two phases of step GEMMs (MGU) it
 * meets at barriers. The tile's words say which. */
START_TEST(persistent_handoff_by_flags) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=40", "H=72"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P, Q;
    char why[256], tile[160];
    for (int tf32 = 0; tf32 < 2; tf32++) {
        CgPersistAsk flags = cg_persist_h100_ask(4, 0, tf32, 1);
        flags.handoff = CG_HANDOFF_FLAGS;
        char *u = emit_persistent(&s, L, flags, &P, why, sizeof why);
        ck_assert_int_eq(P.flags, 1);
        ck_assert_int_eq(barriers(u), 0);
        ck_assert_int_eq(count(u, "a.state_next[0][n * RNN_DIM_H + j] = "), 2);
        ck_assert_int_eq(count(u, "rnn_flag_put(&rnn_flags_next0[n * RNN_DIM_H + j], "), 2);
        ck_assert_int_eq(count(u, "rnn_flag_put(&rnn_flags_next1"), 0); /* c stays in its block */
        ck_assert_ptr_nonnull(strstr(u, "t > args.t ? rnn_flags_prev0 : NULL, (unsigned)t"));
        ck_assert_ptr_nonnull(strstr(u, "rnn_flag_put(&rnn_flags_next0[n * RNN_DIM_H + j], v39_h_next, (unsigned)a.t + 1u);"));
        cg_persist_tile_text(&P, tile, sizeof tile);
        ck_assert_msg(strstr(tile, ", steps handed off by flags"), "%s", tile);
        free(u);
        u = emit_persistent(&s, L, cg_persist_h100_ask(4, 0, tf32, 1), &Q, why, sizeof why);
        ck_assert_int_eq(Q.flags, 0);
        ck_assert_int_eq(barriers(u), 1);
        ck_assert_ptr_null(strstr(u, "rnn_flag_put(&"));
        ck_assert_ptr_nonnull(strstr(u, ", NULL, 0u, rnn_xs"));
        ck_assert(!cg_persist_same_tile(&P, &Q));
        cg_persist_tile_text(&Q, tile, sizeof tile);
        ck_assert_msg(!strstr(tile, "flags"), "%s", tile);
        free(u);
    }
    /* 16-bit products: h staged from its twin moves as 16-bit flagged words (4 bytes a value, half the
     * 8-byte words' bytes), staged in 16 bits (the template's XH); a length not a multiple of 8, staged
     * as floats, keeps 8-byte words */
    for (int bf = 0; bf < 2; bf++) {
        CgPersistAsk flags16 = cg_persist_h100_ask(4, 0, bf ? CG_BF16 : CG_F16, 1);
        flags16.handoff = CG_HANDOFF_FLAGS;
        flags16.twins = 1;
        char *u = emit_persistent(&s, L, flags16, &P, why, sizeof why);
        ck_assert_int_eq(P.flags, 1);
        ck_assert_int_eq(P.gemms[0].x16, 1);
        ck_assert_int_eq(barriers(u), 0);
        ck_assert_int_eq(count(u, "rnn_flag_put16(&rnn_flags_next0[n * RNN_DIM_H + j], "), 2);
        ck_assert_ptr_null(strstr(u, "rnn_flag_put(&"));
        ck_assert_ptr_nonnull(
            strstr(u, bf ? "rnn_flag_put16(&rnn_flags_next0[n * RNN_DIM_H + j], v39_h_next, (unsigned)a.t + 1u, 1);"
                         : "rnn_flag_put16(&rnn_flags_next0[n * RNN_DIM_H + j], v39_h_next, (unsigned)a.t + 1u, 0);"));
        /* the twins' precision a literal (cg_twin_bf16), which the prologue holds the run to */
        ck_assert_ptr_null(strstr(u, "a.bf16"));
        ck_assert_int_eq(count(u, bf ? "if (args.bf16 != 1) __trap();" : "if (args.bf16 != 0) __trap();"), 1);
        ck_assert_ptr_nonnull(strstr(u, "unsigned *const rnn_flags_next0 = (unsigned *)(args.flags + (0LL + ((t + 1) & 1) * 72LL)"));
        ck_assert_ptr_nonnull(strstr(u, "const unsigned *const rnn_flags_prev0 = (unsigned *)(args.flags + (0LL + (t & 1) * 72LL)"));
        const char *call = strstr(u, "rnn_mv_mma<");
        int rw, nw, prec, xh;
        ck_assert(call && sscanf(call, "rnn_mv_mma<%d, %d, %d, %d,", &rw, &nw, &prec, &xh) == 4 && xh == 1);
        ck_assert_ptr_nonnull(strstr(call, "rnn_x16_0, RNN_DIM_H, a.N, t > args.t ? rnn_flags_prev0 : NULL, (unsigned)t"));
        if (!SANITIZED) compile_ok(u, "lstm", "sm_90");
        free(u);
    }
    const char *odd[] = {"I=40", "H=68"};
    PlanLayout *L68 = layout_bound(&s, s.module->cells[0], odd, 2);
    CgPersistAsk flags32 = cg_persist_h100_ask(4, 0, CG_F16, 1);
    flags32.handoff = CG_HANDOFF_FLAGS;
    flags32.twins = 1;
    char *u68 = emit_persistent(&s, L68, flags32, &P, why, sizeof why);
    ck_assert(P.flags && !P.gemms[0].x16);
    ck_assert_int_eq(count(u68, "rnn_flag_put(&rnn_flags_next0[n * RNN_DIM_H + j], "), 2);
    ck_assert_ptr_null(strstr(u68, "rnn_flag_put16(&"));
    free(u68);
    CgPersistAsk clustered = cg_persist_h100_ask(4, 0, 0, 2), backward = cg_persist_h100_ask(4, 1, 0, 1);
    clustered.handoff = backward.handoff = CG_HANDOFF_FLAGS;
    ck_assert(cg_persist_plan(&s.arena, L, &clustered, &P, why, sizeof why) && P.cluster == 2 && !P.flags);
    ck_assert(cg_persist_plan(&s.arena, L, &backward, &P, why, sizeof why) && !P.flags);
    /* 8-byte words: two slots of [N][H] for h (c, which no GEMM multiplies, needs none) */
    ck_assert_int_eq(cg_persist_flag_words(L, 5), 2 * 5 * 72);
    src_close(&s);
    ck_assert_int_eq(cg_persist_handoff_parse("flags"), CG_HANDOFF_FLAGS);
    ck_assert_int_eq(cg_persist_handoff_parse("barrier"), CG_HANDOFF_BARRIER);
    ck_assert_int_eq(cg_persist_handoff_parse("flag"), -1);
}
END_TEST

/* Operands loaded straight into registers (CG_HANDOFF_DIRECT, bench/NOTES.md section 100): the LSTM's
 * and GRU's fp16 and bf16 forwards at flashrnn's and small_b4's sizes keep their grid barrier, stage
 * nothing and hand each product XH = 2 (persist.cuh rnn_mv_mma: each warp loads its B fragments from
 * the twin), hold their weights in registers beside those fragments, plan no clusters (the rule's
 * cluster for the ask is 1) and compile without a spill; the tile's words say so. Refused, as staged
 * operands with the barrier plan's weights, where the fragments leave the weights no room (deepbench's
 * 32 sequences), in tf32 (fp32 operands), with clusters forced; "direct" parses. A 16-bit backward loads
 * its d(gates) so (section 107) unclustered and in the rule's clusters splitting K (pairs at deepbench's
 * 32 sequences, fours at flashrnn's 16), every product with XH = 2, compiled without a spill; not in
 * clusters sharing their copies, nor where the weights and fragments would not fit (H = 1024 at 16
 * sequences unclustered: 256 registers of them spilled), which keeps the barrier plan's weights. */
START_TEST(persistent_operands_loaded_straight) {
    static const struct { const char *cell, *h; int64_t N; CgProducts pr; } cases[] = {
        {"cells/lstm.cell", "H=768", 16, CG_F16}, {"cells/gru.cell", "H=768", 16, CG_BF16}, {"cells/lstm.cell", "H=1024", 4, CG_F16}};
    char why[256], tile[160];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        Src s;
        src_open_file(&s, cases[k].cell);
        const char *dims[] = {"I=64", cases[k].h};
        PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
        CgPersistAsk ask = cg_persist_h100_ask(cases[k].N, 0, cases[k].pr, 0);
        ask.twins = 1;
        ask.handoff = CG_HANDOFF_DIRECT;
        ask.cluster = cg_persist_cluster(cases[k].N, cases[k].pr, 0, CG_HANDOFF_DIRECT);
        ck_assert_int_eq(ask.cluster, 1);
        CgPersist P, B;
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_int_eq(P.direct, 1);
        ck_assert_int_eq(P.flags, 0);
        ck_assert_int_eq(barriers(u), 1); /* the grid barrier stays */
        for (int q = 0; q < P.ngemms; q++) ck_assert(P.gemms[q].direct && P.gemms[q].wregs > 0 && P.gemms[q].waves == 0);
        int rw = 0, nwa = 0, prec = 0, xh = 0;
        const char *at = strstr(u, "rnn_mv_mma<");
        ck_assert(at && sscanf(at, "rnn_mv_mma<%d, %d, %d, %d,", &rw, &nwa, &prec, &xh) == 4);
        ck_assert_int_eq(xh, 2);
        ck_assert_int_eq(prec, (int)cases[k].pr);
        cg_persist_tile_text(&P, tile, sizeof tile);
        ck_assert_msg(strstr(tile, "operands loaded straight into registers") && !strstr(tile, "staged"), "%s", tile);
        compile_ok(u, cases[k].cell, "sm_90");
        free(u);
        /* the barrier plan at the same ask holds at least as many weights in registers (the fragments' room) */
        ask.handoff = CG_HANDOFF_BARRIER;
        ck_assert(cg_persist_plan(&s.arena, L, &ask, &B, why, sizeof why) && !B.direct);
        for (int q = 0; q < P.ngemms; q++) ck_assert_int_ge(B.gemms[q].wregs, P.gemms[q].wregs);
        src_close(&s);
    }
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=64", "H=1024"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P, B;
    CgPersistAsk deep = cg_persist_h100_ask(32, 0, CG_F16, 1); /* 64 registers of fragments: the weights no longer fit */
    deep.twins = 1;
    ck_assert(cg_persist_plan(&s.arena, L, &deep, &B, why, sizeof why));
    deep.handoff = CG_HANDOFF_DIRECT;
    ck_assert(cg_persist_plan(&s.arena, L, &deep, &P, why, sizeof why) && !P.direct && !P.gemms[0].direct);
    ck_assert_int_eq(P.gemms[0].wregs, B.gemms[0].wregs); /* the registers given back */
    ck_assert_int_eq(P.gemms[0].waves, B.gemms[0].waves);
    CgPersistAsk tf32 = cg_persist_h100_ask(16, 0, CG_TF32, 1), clustered = cg_persist_h100_ask(16, 0, CG_F16, 2),
                 shared = cg_persist_h100_ask(16, 1, CG_F16, 2);
    tf32.handoff = clustered.handoff = shared.handoff = CG_HANDOFF_DIRECT;
    clustered.twins = shared.twins = 1;
    ck_assert(cg_persist_plan(&s.arena, L, &tf32, &P, why, sizeof why) && !P.direct);
    ck_assert(cg_persist_plan(&s.arena, L, &clustered, &P, why, sizeof why) && P.cluster == 2 && !P.direct);
    ck_assert(cg_persist_plan(&s.arena, L, &shared, &P, why, sizeof why) && P.cluster == 2 && !P.split && !P.direct);
    src_close(&s);
    /* backwards: unclustered, and the rule's clusters splitting K */
    src_open_file(&s, "cells/lstm.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersistAsk full = cg_persist_h100_ask(16, 1, CG_F16, 1);
    full.twins = 1;
    ck_assert(cg_persist_plan(&s.arena, L, &full, &B, why, sizeof why) && B.gemms[0].wregs > 0);
    full.handoff = CG_HANDOFF_DIRECT;
    ck_assert(cg_persist_plan(&s.arena, L, &full, &P, why, sizeof why) && !P.direct && P.gemms[0].wregs == B.gemms[0].wregs);
    src_close(&s);
    static const struct { const char *cell, *h; int64_t N; CgProducts pr; int cluster; } backwards[] = {
        {"cells/lstm.cell", "H=768", 8, CG_F16, 1}, {"cells/lstm.cell", "H=1024", 4, CG_F16, 0},
        {"cells/lstm.cell", "H=1024", 32, CG_F16, 0}, {"cells/lstm.cell", "H=768", 16, CG_F16, 0},
        {"cells/gru.cell", "H=1024", 32, CG_BF16, 0}};
    for (size_t k = 0; k < sizeof backwards / sizeof *backwards; k++) {
        src_open_file(&s, backwards[k].cell);
        const char *bdims[] = {"I=64", backwards[k].h};
        L = layout_bound(&s, s.module->cells[0], bdims, 2);
        CgPersistAsk ask = cg_persist_h100_ask(backwards[k].N, 1, backwards[k].pr, backwards[k].cluster);
        if (ask.cluster == 4) ask.sms = CG_H100_FOUR_BLOCKS;
        ask.twins = 1;
        ck_assert(!cg_persist_plan(&s.arena, L, &ask, &B, why, sizeof why) || !B.direct); /* a barrier ask stages */
        ask.handoff = CG_HANDOFF_DIRECT;
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_msg(P.direct && P.split == (backwards[k].cluster == 0 && backwards[k].N > 8), "%s %s N=%lld: %s",
                      backwards[k].cell, backwards[k].h, (long long)backwards[k].N, why);
        ck_assert_ptr_nonnull(strstr(why, "operands loaded straight into registers"));
        int calls = 0;
        for (const char *at = strstr(u, "rnn_mv_mma<"); at; at = strstr(at + 1, "rnn_mv_mma<")) {
            int rw = 0, nwa = 0, prec = 0, xh = 0;
            if (sscanf(at, "rnn_mv_mma<%d, %d, %d, %d,", &rw, &nwa, &prec, &xh) != 4) continue; /* persist.cuh's text */
            ck_assert_int_eq(xh, 2);
            calls++;
        }
        ck_assert_int_gt(calls, 0);
        compile_ok(u, backwards[k].cell, "sm_90");
        free(u);
        src_close(&s);
    }
    ck_assert_int_eq(cg_persist_handoff_parse("direct"), CG_HANDOFF_DIRECT);
    ck_assert_int_eq(cg_persist_cluster(16, CG_F16, 0, CG_HANDOFF_DIRECT), 1);
    ck_assert_int_eq(cg_persist_cluster(16, CG_F16, 1, CG_HANDOFF_DIRECT), cg_persist_cluster(16, CG_F16, 1, CG_HANDOFF_BARRIER));
}
END_TEST

/* A cell with two in-step phases (MGU's U_n @ (f * h), mLSTM's U @ m, LSTMP's projection) hands its
 * later phase's operand on as flagged words of the step too (slot t & 1, flag t + 1, after the
 * states' slots; 16-bit words in fp16 and bf16): no grid barrier at all, the ended sequences' zeros
 * flagged as well (bench/NOTES.md section 44). At barriers, the 16-bit modes stage it from its twin
 * in those slots. Refused where a multiplied state is shorter than the blocks (a block that writes none
 * of it could fall two steps behind), where the operand is staged in chunks, or where a group reads
 * another group's value over another width (another block's elements). */
START_TEST(persistent_phases_hand_off_by_flags) {
    Src s;
    CgPersist P;
    char why[256];
    src_open_file(&s, "cells/mgu.cell");
    const char *dims[] = {"I=40", "H=72"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    for (int prec = CG_FFMA; prec <= CG_BF16; prec++) {
        CgPersistAsk ask = cg_persist_h100_ask(4, 0, (CgProducts)prec, 1);
        ask.handoff = CG_HANDOFF_FLAGS;
        ask.twins = prec >= CG_F16;
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u && P.flags == 1, "%s", why);
        ck_assert_int_eq(barriers(u), 0);
        ck_assert_int_eq(count(u, "no barrier: the phase-1 GEMMs stage this step's values as flagged words"), 1);
        if (prec >= CG_F16) ck_assert_ptr_null(strstr(u, "a.bf16")); /* the twins' precision a literal (cg_twin_bf16) */
        /* f * h staged as floats from 8-byte words in every precision (16-bit words measured slower) */
        const int half = 0;
        if (prec >= CG_F16) ck_assert(P.gemms[0].x16 && !P.gemms[1].x16);
        const char *view = strstr(u, "*const rnn_bflags");
        int b = -1;
        ck_assert(view && sscanf(view, "*const rnn_bflags%d", &b) == 1 && b >= 0);
        char line[160];
        if (half)
            snprintf(line, sizeof line, "unsigned *const rnn_bflags%d = (unsigned *)(args.flags + (144LL + (t & 1) * 72LL) * args.N);", b);
        else
            snprintf(line, sizeof line, "unsigned long long *const rnn_bflags%d = args.flags + (144LL + (t & 1) * 72LL) * args.N;", b);
        ck_assert_msg(strstr(u, line), "%s", line);
        snprintf(line, sizeof line, "rnn_flag_put%s(&rnn_bflags%d[n * RNN_DIM_H + j], ", half ? "16" : "", b);
        ck_assert_int_eq(count(u, line), 2); /* the running sequence's value, the ended one's zero */
        snprintf(line, sizeof line, "rnn_flag_put%s(&rnn_bflags%d[n * RNN_DIM_H + j], 0.0f, (unsigned)a.t + 1u%s);",
                 half ? "16" : "", b, !half ? "" : prec == CG_BF16 ? ", 1" : ", 0");
        ck_assert_msg(strstr(u, line), "%s", line);
        if (half) snprintf(line, sizeof line, "1, NULL, 72, a.N, rnn_bflags%d, (unsigned)t + 1u, rnn_xs", b);
        else snprintf(line, sizeof line, "a.buf[%d], %d, a.N, rnn_bflags%d, (unsigned)t + 1u, rnn_xs", b, 72, b);
        ck_assert_msg(strstr(u, line), "%s", line);
        ck_assert_int_eq(cg_flagged_buffer(L, b), 1);
        ck_assert_int_eq(cg_persist_uses_words(L, &P), 1);
        if (!SANITIZED && (prec == CG_FFMA || prec == CG_F16)) compile_ok(u, "mgu", "sm_90");
        free(u);
    }
    /* two slots of [N][H] for h, then two of [N][H] for f * h */
    ck_assert_int_eq(cg_persist_flag_words(L, 5), 2 * 5 * 72 + 2 * 5 * 72);
    /* at barriers, fp16 and bf16 stage f * h from its 16-bit twin, written into its slots (slot 0);
     * fp32 leaves a.flags alone */
    for (int prec = CG_FFMA; prec <= CG_BF16; prec += CG_BF16 - CG_FFMA) {
        CgPersistAsk ask = cg_persist_h100_ask(4, 0, (CgProducts)prec, 1);
        ask.twins = prec >= CG_F16;
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u && !P.flags, "%s", why);
        ck_assert_int_eq(cg_persist_uses_words(L, &P), prec == CG_BF16);
        ck_assert_int_eq(count(u, "rnn_b16_"), prec == CG_BF16 ? 4 : 0);
        if (prec == CG_BF16) {
            ck_assert_int_eq(count(u, "if (!args.flags) __trap();"), 1);
            ck_assert_ptr_null(strstr(u, "a.bf16"));
            const char *view = strstr(u, "unsigned short *const rnn_b16_");
            int b = -1;
            ck_assert(view && sscanf(view, "unsigned short *const rnn_b16_%d", &b) == 1 && b >= 0);
            char line[160];
            snprintf(line, sizeof line, "unsigned short *const rnn_b16_%d = (unsigned short *)(args.flags + 144LL * args.N);", b);
            ck_assert_msg(strstr(u, line), "%s", line);
            snprintf(line, sizeof line, "rnn_put16(&rnn_b16_%d[n * RNN_DIM_H + j], 0.0f, 1);", b);
            ck_assert_msg(strstr(u, line), "%s", line);
            snprintf(line, sizeof line, ", 1, rnn_b16_%d, 72, a.N, NULL, 0u, rnn_xs", b);
            ck_assert_msg(strstr(u, line), "%s", line);
            if (!SANITIZED) compile_ok(u, "mgu", "sm_90");
        }
        free(u);
    }
    CgPersistAsk chunked = cg_persist_h100_ask(4, 0, 0, 1);
    chunked.handoff = CG_HANDOFF_FLAGS;
    chunked.kc_cap = 256;
    const char *wide[] = {"I=40", "H=600"};
    PlanLayout *L600 = layout_bound(&s, s.module->cells[0], wide, 2);
    ck_assert(cg_persist_plan(&s.arena, L600, &chunked, &P, why, sizeof why) && P.gemms[0].chunks > 1 && !P.flags);
    src_close(&s);

    src_open_file(&s, "cells/mlstm.cell");
    const char *mdims[] = {"I=40", "H=144", "M=72"};
    L = layout_bound(&s, s.module->cells[0], mdims, 3);
    CgPersistAsk tf32 = cg_persist_h100_ask(4, 0, CG_TF32, 1);
    tf32.handoff = CG_HANDOFF_FLAGS;
    char *u = emit_persistent(&s, L, tf32, &P, why, sizeof why);
    ck_assert_msg(u && P.flags == 1, "%s", why);
    ck_assert_int_eq(barriers(u), 0);
    ck_assert_int_eq(count(u, "rnn_flag_put(&rnn_bflags"), 2);
    ck_assert_ptr_nonnull(strstr(u, "* RNN_DIM_M + j], v19_m, (unsigned)a.t + 1u);  // for this step's next phase"));
    if (!SANITIZED) compile_ok(u, "mlstm", "sm_90");
    free(u);
    src_close(&s);

    /* LSTMP's state h is P long: with more blocks than P, a block would write none of it */
    src_open_file(&s, "cells/lstmp.cell");
    const char *pdims[] = {"I=40", "H=72", "P=36"};
    L = layout_bound(&s, s.module->cells[0], pdims, 3);
    CgPersistAsk proj = cg_persist_h100_ask(4, 0, 0, 1);
    proj.handoff = CG_HANDOFF_FLAGS;
    u = emit_persistent(&s, L, proj, &P, why, sizeof why);
    ck_assert(u && P.blocks == 72 && !P.flags);
    ck_assert_int_eq(barriers(u), 2);
    free(u);
    /* in bf16, flags asked for and refused keep the projection's input in fp32 rows; the barrier's
     * plan stages its twin: two tiles to the search */
    CgPersistAsk proj16 = cg_persist_h100_ask(4, 0, CG_BF16, 1), bar16 = proj16;
    proj16.handoff = CG_HANDOFF_FLAGS;
    proj16.twins = bar16.twins = 1;
    CgPersist Q;
    ck_assert(cg_persist_plan(&s.arena, L, &proj16, &P, why, sizeof why) && !P.flags && !P.gemms[1].x16);
    ck_assert(cg_persist_plan(&s.arena, L, &bar16, &Q, why, sizeof why) && !Q.flags && Q.gemms[1].x16);
    ck_assert(!cg_persist_same_tile(&P, &Q));
    proj.blocks = 36; /* the fewer-blocks tile: every block writes a part of h */
    u = emit_persistent(&s, L, proj, &P, why, sizeof why);
    ck_assert_msg(u && P.blocks == 36 && P.flags, "%s", why);
    ck_assert_int_eq(barriers(u), 0);
    ck_assert_int_eq(count(u, "rnn_flag_put(&rnn_bflags"), 2);
    free(u);
    src_close(&s);

    /* group 2 (H wide) reads m, which group 1 computed M wide: another block's elements; with M = H,
     * its own (s' is a state, so that its product stays in the step: an output's would run after it) */
    const char *foreign = "cell foreign(x[I]) -> h, s {\n"
                          "    state h[H], s[M]\n"
                          "    param W[M, I], U[M, H], V[H, M], Z[M, M], b[H]\n"
                          "    m = tanh(W @ x + U @ h)\n"
                          "    s' = m * (Z @ m)\n"
                          "    h' = tanh(V @ m + b)\n"
                          "}\n";
    for (int same = 0; same < 2; same++) {
        src_open(&s, "foreign.cell", foreign);
        const char *fdims[] = {"I=16", "H=72", same ? "M=72" : "M=40"};
        L = layout_bound(&s, s.module->cells[0], fdims, 3);
        ck_assert(cg_persist_plan(&s.arena, L, &proj, &P, why, sizeof why) && P.blocks == 36);
        ck_assert_int_eq(P.flags, same);
        src_close(&s);
    }
}
END_TEST

/* A forward's step results that only its block's groups read (LSTM's gates) are not stored in
 * inference (kept_only: the call tests the step buffer's stride); LSTMP's projection, read by
 * other blocks, is; the backward stores all. Every forward element-wise body loads what it reads
 * before its first operation and fences the loads with RNN_ISSUED (bench/NOTES.md sections 28,
 * 30). */
START_TEST(persistent_results_kept_and_loads_first) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=40", "H=72", "P=24"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    char *u = emit_persistent(&s, L, cg_persist_h100_ask(4, 0, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_int_eq(P.ngemms, 1);
    ck_assert(P.gemms[0].res_cap > 0 && P.gemms[0].kept_only);
    ck_assert_ptr_nonnull(strstr(u, P.gemms[0].wregs ? ", rnn_res1, 4, args.buf_step[1] == 0 ? RNN_KEPT_ONLY : RNN_TO_OUT, nullptr, &rnn_wf1);"
                                                     : ", rnn_res1, 4, args.buf_step[1] == 0 ? RNN_KEPT_ONLY : RNN_TO_OUT);")); /* 4 kept */
    ck_assert(!P.gemms[0].fuse); /* 4 sequences x 1 unit: too few items to fuse */
    const char *body = strstr(u, "// K1 over this block's units"), *fence = body ? strstr(body, "RNN_ISSUED(") : NULL;
    ck_assert(body && fence);
    ck_assert_ptr_nonnull(strstr(fence, "\"f\"(v2_c));  // the loads above, issued together"));
    ck_assert(strstr(body, "rnn_op_") > fence); /* no operation before the fence */
    ck_assert(strstr(body, "a.state_prev[1][n * RNN_DIM_H + j];  // state c") < fence);
    free(u);
    u = emit_persistent(&s, L, cg_persist_h100_ask(4, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert(!P.gemms[0].kept_only);
    ck_assert_ptr_null(strstr(u, "buf_step[1] == 0"));
    /* the backward loads the forward's operands, the homes and the seeds (17: two fences), then
     * recomputes */
    body = strstr(u, "// K1's backward over this block's units");
    const char *recompute = body ? strstr(body, "// the forward's values, recomputed") : NULL;
    ck_assert(body && recompute);
    fence = strstr(body, "RNN_ISSUED(");
    ck_assert(fence && fence < recompute && strstr(fence + 1, "RNN_ISSUED(\"f\"(d37_c_next));") < recompute);
    ck_assert(strstr(body, "rnn_op_") > recompute && strstr(body, "rnn_dop_") > recompute);
    ck_assert(strstr(body, "const float o2_c = a.dstate_prev[1]") < fence);
    ck_assert(strstr(body, "if (a.dy[0]) d39_h_next += a.dy[0]") < fence);
    free(u);
    u = emit(&s, L); /* the per-step kernels load first too, forward and backward */
    for (int backward = 0; backward < 2; backward++) {
        body = strstr(u, backward ? "rnncc_lstm_bs1(" : "rnncc_lstm_s1(");
        fence = body ? strstr(body, "RNN_ISSUED(") : NULL;
        ck_assert(body && fence && strstr(body, "rnn_op_") > fence);
    }
    free(u);
    src_close(&s);
    src_open_file(&s, "cells/lstmp.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 3);
    u = emit_persistent(&s, L, cg_persist_h100_ask(4, 0, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_int_eq(P.ngemms, 2);
    for (int k = 0; k < 2; k++) /* the gates' results stay on chip; the projection's, read by every block, do not */
        ck_assert_int_eq(P.gemms[k].kept_only, P.gemms[k].res_cap > 0);
    ck_assert(P.gemms[0].kept_only != P.gemms[1].kept_only);
    ck_assert_int_eq(count(u, ", args.buf_step["), 1);
    free(u);
    src_close(&s);
}
END_TEST

/* Where only the group after a product reads its results (bench/NOTES.md section 45), the group adds
 * up the warps' partial sums itself (rnn_red_sum) and the product skips its sums in inference: on
 * tensor cores, with every batch of the class in one pass and enough items. Not for the class over 32
 * sequences, one warp of items, FFMA, the backward, a result another group also reads (tworead's U @ h)
 * or the earlier of two products of one phase (twogemm's U @ h). */
START_TEST(persistent_sums_fused_in_the_group) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=64", "H=768"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    const struct { int64_t N; CgProducts products; int fuse; } rows[] = {
        {16, CG_F16, 1}, {9, CG_BF16, 1}, {32, CG_TF32, 1}, {20, CG_F16, 1}, {33, CG_F16, 0}, {64, CG_F16, 0},
        {8, CG_F16, 0} /* 8 x 6 units: 48 items */, {4, CG_F16, 0}, {16, CG_FFMA, 0}};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        char *u = emit_persistent(&s, L, cg_persist_h100_ask(rows[r].N, 0, rows[r].products, 1), &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_msg(P.gemms[0].fuse == rows[r].fuse, "row %zu", r);
        ck_assert_int_eq(P.seqs_max, rows[r].N <= 32 ? 4 * cg_persist_nw(rows[r].N) : 0);
        ck_assert_int_eq(count(u, "rnn_red_sum(rnn_red, "), (rows[r].fuse ? 4 : 0)); /* the four gates' reads */
        ck_assert_int_eq(count(u, "if (args.N > "), P.seqs_max > 0); /* fused or not (persistent_one_item_a_thread) */
        if (rows[r].fuse) {
            ck_assert_ptr_nonnull(strstr(u, P.gemms[0].wregs ? ", map1, 0, NULL, 0, RNN_IN_RED, nullptr, &rnn_wf1);"
                                                             : ", map1, 0, NULL, 0, RNN_IN_RED);"));
            /* in training, stored after each step's arrival, the last step's too (rnn_red_store) */
            ck_assert_int_eq(count(u, "rnn_red_store(rnn_red, "), 1);
            ck_assert_ptr_null(strstr(u, "rnn_res1[n"));
            ck_assert_ptr_nonnull(strstr(u, P.seqs_max == 32 ? "if (args.N > 32) __trap();" : "if (args.N > 16) __trap();"));
            char want[96];
            snprintf(want, sizeof want, "const float v16 = rnn_red_sum(rnn_red, %d, 36, (int)n, res1[0] + j);", 4 * P.nw);
            ck_assert_msg(strstr(u, want), "%s", want);
            if (!SANITIZED && r < 3) compile_ok(u, "lstm", P.cluster > 1 ? "sm_90a" : "sm_90");
        }
        free(u);
    }
    char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u && !P.gemms[0].fuse && !strstr(u, "RNN_IN_RED :"), "%s", why);
    free(u);
    src_close(&s);

    const char *tworead = "cell tworead(x[I]) -> h {\n"
                          "    state h[H]\n"
                          "    param W[H, I], U[H, H], V[H, H], b[H]\n"
                          "    a = U @ h\n"
                          "    m = tanh(W @ x + a + b)\n"
                          "    h' = tanh(V @ m) + 0.5 * a\n"
                          "}\n";
    const char *twogemm = "cell twogemm(x[I]) -> h, c {\n"
                          "    state h[H], c[H]\n"
                          "    param W[H, I], U[H, H], V[H, H], b[H]\n"
                          "    c' = tanh(W @ x + U @ h + b)\n"
                          "    h' = sigmoid(V @ c) * c'\n"
                          "}\n";
    for (int which = 0; which < 2; which++) {
        src_open(&s, which ? "twogemm.cell" : "tworead.cell", which ? twogemm : tworead);
        L = layout_bound(&s, s.module->cells[0], dims, 2);
        u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_F16, 1), &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_int_eq(P.ngemms, 2);
        ck_assert(P.gemms[0].kept_only && !P.gemms[0].fuse && P.gemms[1].fuse);
        assert_fused_sums_stored(u, &P, which ? "twogemm" : "tworead");
        ck_assert_int_eq(count(u, "rnn_red_store(rnn_red, 16, 20, rows2, "), 1); /* the step's last product */
        ck_assert_int_eq(count(u, "rnn_res1[n"), which ? 1 : 2); /* U @ h from the kept results */
        ck_assert_int_eq(count(u, "rnn_red_sum(rnn_red, 16, 20, (int)n, res2[0] + j)"), 1);
        if (!SANITIZED) compile_ok(u, which ? "twogemm" : "tworead", P.cluster > 1 ? "sm_90a" : "sm_90");
        free(u);
        src_close(&s);
    }
}
END_TEST

/* Opens a shipped cell (path) into s and lays it out at I = 64 and H = size, mLSTM's M = size and
 * LSTMP's P = size / 2. */
static PlanLayout *layout_at_size(Src *s, const char *path, int64_t size) {
    src_open_file(s, path);
    char h[24], m[24], pj[24];
    snprintf(h, sizeof h, "H=%lld", (long long)size);
    snprintf(m, sizeof m, "M=%lld", (long long)size);
    snprintf(pj, sizeof pj, "P=%lld", (long long)size / 2);
    const int mlstm = strstr(path, "mlstm") != NULL, lstmp = strstr(path, "lstmp") != NULL;
    const char *dims[] = {"I=64", h, mlstm ? m : pj};
    return layout_bound(s, s->module->cells[0], dims, mlstm || lstmp ? 3 : 2);
}

/* A persistent kernel keeps its step weights in registers (CgPersistGemm.wregs: the steps of its k
 * loop) where a GEMM's rows take one pass and its operand is staged whole, within the register budget
 * (65536 a multiprocessor over the block's threads, less the rest of the unit, less on tensor cores the
 * sums past 16 sequences a pass), the GEMMs needing most first. Tensor cores: the warps' A fragments,
 * all of a GEMM's steps or none, forward and backward (split K too); not chunks, 16 warps (128
 * registers a thread), nor tf32 at H=1024 (128). FFMA (rnn_ffrag): forward and backward, split K too,
 * each lane as many of its first steps as fit (4 registers a row and step). */
START_TEST(persistent_weights_in_registers) {
    static const struct {
        const char *cell;
        int64_t H, N;
        CgProducts products;
        int cluster, warps, kc_cap, backward;
        int asked;    /* CgPersistAsk.wregs (0: the budget, -1: none) */
        int wregs[2]; /* per step GEMM */
        const char *frag;  /* the first GEMM's declaration, or NULL */
        int split, compile; /* a backward's clusters split K; compile the unit with NVRTC */
        int sms;            /* planned on this many blocks (fours splitting K: 40-row passes), 0: CG_H100_SMS */
    } rows[] = {
        {"cells/lstm.cell", 768, 16, CG_F16, 1, 0, 0, 0, 0, {3}, "rnn_wfrag<3, 2, uint4> rnn_wf1;", 0, 0, 0},
        {"cells/lstm.cell", 768, 16, CG_F16, 2, 0, 0, 0, 0, {3}, "rnn_wfrag<3, 2, uint4> rnn_wf1;", 0, 0, 0},
        {"cells/lstm.cell", 768, 16, CG_TF32, 2, 0, 0, 0, 0, {6}, "rnn_wfrag<6, 2, float4> rnn_wf1;", 0, 0, 0},
        {"cells/gru.cell", 768, 9, CG_BF16, 1, 0, 0, 0, 0, {3}, "rnn_wfrag<3, 2, uint4> rnn_wf1;", 0, 0, 0},
        {"cells/lstm.cell", 1024, 32, CG_F16, 2, 0, 0, 0, 0, {4}, "rnn_wfrag<4, 2, uint4> rnn_wf1;", 0, 0, 0},
        {"cells/lstm.cell", 512, 4, CG_F16, 1, 4, 0, 0, 0, {4}, "rnn_wfrag<4, 1, uint4> rnn_wf1;", 0, 0, 0}, /* 4 warps: 128 k */
        {"cells/lstm.cell", 1024, 4, CG_F16, 1, 4, 0, 0, 0, {8}, "rnn_wfrag<8, 2, uint4> rnn_wf1;", 0, 0, 0}, /* 4 warps: 8 x 2 x 8 = 128 */
        {"cells/mlstm.cell", 768, 16, CG_F16, 1, 0, 0, 0, 0, {3, 3}, "rnn_wfrag<3, 1, uint4> rnn_wf1;", 0, 0, 0}, /* 6 + 12 rows */
        /* 32 a pass: 32 more registers of sums, so the budget (73) takes the larger GEMM's 64 only (the
         * two together spilled) */
        {"cells/mlstm.cell", 1024, 32, CG_F16, 1, 0, 0, 0, 0, {0, 4}, "rnn_wfrag<4, 2, uint4> rnn_wf2;", 0, 0, 0},
        {"cells/lstm.cell", 1024, 32, CG_TF32, 1, 0, 0, 0, 0, {8}, "rnn_wfrag<8, 2, float4> rnn_wf1;", 0, 0, 0}, /* 8 x 2 x 8 = 128 */
        /* two GEMMs at 16 a pass on 8 warps: 128 too, both (40 + 80; 105 took the gates' alone) */
        {"cells/mlstm.cell", 640, 16, CG_TF32, 1, 0, 0, 0, 0, {5, 5}, "rnn_wfrag<5, 1, float4> rnn_wf1;", 0, 0, 0},
        {"cells/lstm.cell", 1024, 4, CG_F16, 1, 16, 0, 0, 0, {0}, NULL, 0, 0, 0},  /* 16 warps: no budget */
        {"cells/lstm.cell", 768, 16, CG_F16, 1, 0, 256, 0, 0, {0}, NULL, 0, 0, 0}, /* chunks of 256 */
        /* the backward: 8 rows (rw 1) of 3072 k, 12 steps of one tile (96 registers); split K in pairs at
         * 32 sequences, 16 rows of 2048 k (8 steps); tf32 at H = 1024, 16 steps of 8 registers (128,
         * past the 112 left at 32 sequences a pass: none) */
        {"cells/lstm.cell", 768, 16, CG_F16, 1, 0, 0, 1, 0, {12}, "rnn_wfrag<12, 1, uint4> rnn_wf1;", 0, 1, 0},
        {"cells/lstm.cell", 1024, 32, CG_F16, 2, 0, 0, 1, 0, {8}, "rnn_wfrag<8, 1, uint4> rnn_wf1;", 1, 1, 0},
        {"cells/lstm.cell", 768, 16, CG_TF32, 2, 0, 0, 1, 0, {12}, "rnn_wfrag<12, 1, float4> rnn_wf1;", 1, 1, 0},
        {"cells/lstm.cell", 1024, 32, CG_TF32, 2, 0, 0, 1, 0, {0}, NULL, 1, 0, 0},
        /* a backward with two GEMMs takes the rest at 180 (75 left): mLSTM's G2 (4 steps of two tiles, 64),
         * not G1's 16 too (both, 80, spilled 8 bytes under NVRTC) */
        {"cells/mlstm.cell", 1024, 16, CG_F16, 4, 0, 0, 1, 0, {0, 4}, "rnn_wfrag<4, 2, uint4> rnn_wf2;", 1, 1, 0},
        /* asked (RNNCC_PERSIST_WREGS, emit --wregs): none; under the need; a cap past the budget (both
         * GEMMs: 96) and under it */
        {"cells/lstm.cell", 768, 16, CG_F16, 1, 0, 0, 0, -1, {0}, NULL, 0, 0, 0},
        {"cells/lstm.cell", 1024, 32, CG_TF32, 1, 0, 0, 0, 127, {0}, NULL, 0, 0, 0},
        {"cells/mlstm.cell", 1024, 32, CG_F16, 1, 0, 0, 0, 96, {4, 4}, NULL, 0, 0, 0},
        {"cells/mlstm.cell", 1024, 32, CG_F16, 1, 0, 0, 0, 95, {0, 4}, NULL, 0, 0, 0},
        {"cells/lstm.cell", 768, 16, CG_F16, 1, 0, 0, 0, 47, {0}, NULL, 0, 0, 0}, /* 48 needed */
        /* FFMA (the rest of the unit 128 a thread, 150 past 8 sequences a pass, 170 with two GEMMs): 16 a
         * pass, 24 rows (rw 3), a lane's 4 sequences over all of the warp's 96 k, 12 registers a step:
         * the first 8 of 24 (105 left) */
        {"cells/lstm.cell", 768, 16, CG_FFMA, 1, 0, 0, 0, 0, {8}, "rnn_ffrag<8, 3> rnn_wf1;", 0, 1, 0},
        /* 4 a pass: a lane's quarter of the 128 k (every fourth float4), 8 steps of 4 rows: 7 */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 0, 0, 0, 0, {7}, "rnn_ffrag<7, 4> rnn_wf1;", 0, 1, 0},
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 0, 0, 0, 128, {8}, "rnn_ffrag<8, 4> rnn_wf1;", 0, 0, 0}, /* all of them */
        /* the backward: 8 rows of 4096 k (32 steps, 4 registers each), or split K, 16 rows of 2048 */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 2, 0, 0, 1, 0, {31}, "rnn_ffrag<31, 1> rnn_wf1;", 0, 1, 0},
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 2, 0, 0, 1, 0, {15}, "rnn_ffrag<15, 2> rnn_wf1;", 1, 1, 0},
        /* two GEMMs, 4 a pass (85 left): 6 steps of 8 and of 24 rows (24 + 72 registers); the larger's
         * whole, then 3 of the other's */
        {"cells/mlstm.cell", 768, 4, CG_FFMA, 1, 0, 0, 0, 0, {3, 6}, "rnn_ffrag<3, 1> rnn_wf1;", 0, 1, 0},
        {"cells/mlstm.cell", 768, 4, CG_FFMA, 1, 0, 0, 0, 80, {2, 6}, "rnn_ffrag<2, 1> rnn_wf1;", 0, 0, 0}, /* 72, then 8 */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 16, 0, 0, 0, {0}, NULL, 0, 0, 0},  /* 16 warps: no budget */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 0, 256, 0, 0, {0}, NULL, 0, 0, 0}, /* chunks of 256 */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 0, 0, 0, -1, {0}, NULL, 0, 0, 0},  /* none asked */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 0, 0, 0, 15, {0}, NULL, 0, 0, 0},  /* under one step */
        /* fours splitting K on the 120 blocks an H100 holds them on: a 40-row pass at H = 1024 (three 16-row
         * tiles), whose third tile's sums take 16 registers more at 16 sequences (112 left): the LSTM's 4
         * steps of three tiles (96) fit; mLSTM's two GEMMs (75 left, 59 past those sums) hold G1's one step
         * (24) alone */
        {"cells/lstm.cell", 1024, 16, CG_F16, 4, 0, 0, 1, 0, {4}, "rnn_wfrag<4, 3, uint4> rnn_wf1;", 1, 1,
         CG_H100_FOUR_BLOCKS},
        {"cells/mlstm.cell", 1024, 16, CG_F16, 4, 0, 0, 1, 0, {1, 0}, "rnn_wfrag<1, 3, uint4> rnn_wf1;", 1, 1,
         CG_H100_FOUR_BLOCKS},
    };
    SideCompiles sc;
    side_init(&sc);
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        Src s;
        PlanLayout *L = layout_at_size(&s, rows[r].cell, rows[r].H);
        CgPersistAsk ask = cg_persist_h100_ask(rows[r].N, rows[r].backward, rows[r].products, rows[r].cluster);
        ask.warps = rows[r].warps;
        ask.kc_cap = rows[r].kc_cap;
        ask.wregs = rows[r].asked;
        ask.split = rows[r].split;
        ask.twins = rows[r].products == CG_F16 || rows[r].products == CG_BF16; /* as the runtime asks */
        if (rows[r].sms) ask.sms = rows[r].sms;
        CgPersist P;
        char why[256];
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "row %zu: %s", r, why);
        if (rows[r].sms) ck_assert_int_eq(P.blocks, rows[r].sms);
        for (int q = 0; rows[r].sms && q < P.ngemms; q++) ck_assert_int_eq(P.gemms[q].rw, 5);
        int held = 0;
        for (int q = 0; q < P.ngemms; q++) {
            ck_assert_msg(P.gemms[q].wregs == rows[r].wregs[q], "row %zu G%d: %d (rw %d passes %d chunks %lld kc %lld warps %d split %d)", r, q, P.gemms[q].wregs, P.gemms[q].rw, P.gemms[q].passes, (long long)P.gemms[q].chunks, (long long)P.gemms[q].kc, P.warps, P.split);
            held += P.gemms[q].wregs > 0;
            char load[96], call[64]; /* tensor cores: <steps, rw, products>; FFMA: <steps, rw, sequences a lane> */
            snprintf(load, sizeof load, "rnn_%cfrag_load<%d, %d, %d>(rnn_wf%d, w%d, %lld, %lld);", P.mma ? 'w' : 'f',
                     P.gemms[q].wregs, P.gemms[q].rw, P.mma ? (int)P.products : P.nw, P.gemms[q].gemm, P.gemms[q].gemm,
                     (long long)P.gemms[q].ldw, (long long)P.gemms[q].kc);
            snprintf(call, sizeof call, ", %s, &rnn_wf%d);", P.split ? "&rnn_sp" : "nullptr", P.gemms[q].gemm);
            ck_assert_int_eq(count(u, load), P.gemms[q].wregs > 0);
            ck_assert_int_eq(count(u, call), P.gemms[q].wregs > 0);
        }
        ck_assert_int_eq(strstr(why, "weights held in registers") != NULL, held > 0);
        /* read once every thread's weights have landed (and, in tf32, been rounded where they landed):
         * after the prologue's last __syncthreads, just before the step loop */
        ck_assert_int_eq(P.split, rows[r].split);
        const char *first = strstr(u, P.mma ? "rnn_wfrag_load<" : "rnn_ffrag_load<"), *loop = strstr(u, "RNN_PROF(5);");
        if (held) {
            ck_assert(first && loop && first < loop);
            const char *sync = strstr(u, "rnn_cp_wait_all();  // this thread's copies of the weights"), *last = NULL;
            ck_assert(sync && sync < first);
            for (const char *x = strstr(sync, "__syncthreads();"); x && x < first; x = strstr(x + 1, "__syncthreads();"))
                last = x;
            ck_assert(last);
            /* a backward's weights rounded as they land */
            const char *round = strstr(u, P.backward ? "rnn_load_transposed<1>(" : "] = rnn_to_tf32(w");
            ck_assert_int_eq(round != NULL, rows[r].products == CG_TF32);
            ck_assert(!round || round < last);
        }
        ck_assert_int_eq(count(u, "> rnn_wf"), held); /* the declarations */
        if (rows[r].frag) ck_assert_msg(strstr(u, rows[r].frag), "row %zu: %s", r, rows[r].frag);
        if (!SANITIZED && held && (r == 1 || r == 2 || r == 7 || r == 8 || rows[r].compile))
            side_compile(&sc, u, s.module->cells[0]->name, P.cluster > 1 ? "sm_90a" : "sm_90", 0);
        free(u);
        src_close(&s);
    }
    side_finish(&sc);
}
END_TEST

/* The rule's persistent units at the sizes where the register budget binds (weights_in_registers:
 * 128 registers of fragments, 105 for two GEMMs at 32 sequences a pass; FFMA, forward and backward,
 * 255 less CG_FFMA_REST or the larger rest its shape takes: 127, 105, 85, 65) compile without spilling:
 * compile_ok refuses ptxas's spill warning (runtime/rt_nvrtc.c). The runtime would rebuild a
 * spilling kernel holding fewer; this keeps the rule from needing it on the shipped cells. The units are
 * the runtime's without a search: 16-bit ones load their operands straight where cg_persist_direct_rule
 * says (bench/NOTES.md section 107: a backward's B fragments beside its held weights). */
START_TEST(persistent_rule_units_do_not_spill) {
    if (SANITIZED) return; /* NVRTC under the sanitizers: minutes */
    static const struct {
        const char *cell;
        int64_t H, N;
        CgProducts products;
        int backward, straight; /* straight: the rule loads its operand straight (the others may) */
    } rows[] = {
        {"cells/lstm.cell", 1024, 32, CG_TF32, 0, 0},     {"cells/lstm.cell", 1024, 4, CG_TF32, 0, 0},
        {"cells/lstm.cell", 1024, 32, CG_F16, 0, 0},      {"cells/gru.cell", 1024, 4, CG_TF32, 0, 0},
        {"cells/peephole.cell", 1024, 32, CG_TF32, 0, 0}, {"cells/mlstm.cell", 640, 16, CG_TF32, 0, 0},
        {"cells/mlstm.cell", 1024, 32, CG_F16, 0, 0},     {"cells/lstmp.cell", 768, 16, CG_TF32, 0, 0},
        {"cells/lstmp.cell", 1024, 32, CG_F16, 0, 0},     {"cells/mgu.cell", 1024, 4, CG_TF32, 0, 0},
        /* tensor cores' backwards (the transposed weights' fragments; split K in the rule's clusters) */
        {"cells/lstm.cell", 1024, 32, CG_F16, 1, 0},      {"cells/lstm.cell", 1024, 4, CG_F16, 1, 0},
        {"cells/lstm.cell", 768, 16, CG_TF32, 1, 0},      {"cells/gru.cell", 1024, 32, CG_F16, 1, 0},
        {"cells/mlstm.cell", 768, 16, CG_F16, 1, 0},      {"cells/peephole.cell", 800, 20, CG_BF16, 1, 0},
        /* where the forward's rest (127) spilled: two GEMMs (mLSTM, in fours' 40-row passes; LSTMP in tf32),
         * and the LSTM in fours' 40-row passes (254 registers) */
        {"cells/mlstm.cell", 1024, 16, CG_F16, 1, 0},     {"cells/lstmp.cell", 1024, 16, CG_TF32, 1, 0},
        {"cells/lstm.cell", 1024, 12, CG_BF16, 1, 0},
        /* 16-bit backwards loading d(gates) straight by rule: fours, pairs splitting K, several GEMMs */
        {"cells/lstm.cell", 768, 16, CG_F16, 1, 1},    {"cells/lstm.cell", 800, 20, CG_F16, 1, 1},
        {"cells/mlstm.cell", 256, 8, CG_BF16, 1, 1},   {"cells/lstmp.cell", 512, 4, CG_F16, 1, 1},
        /* FFMA (rnn_ffrag), forward and backward */
        {"cells/lstm.cell", 1024, 4, CG_FFMA, 0, 0},      {"cells/lstm.cell", 1024, 4, CG_FFMA, 1, 0},
        {"cells/lstm.cell", 768, 16, CG_FFMA, 0, 0},      {"cells/lstm.cell", 1024, 32, CG_FFMA, 0, 0},
        {"cells/lstm.cell", 512, 64, CG_FFMA, 0, 0},      {"cells/gru.cell", 1024, 4, CG_FFMA, 1, 0},
        {"cells/mlstm.cell", 768, 4, CG_FFMA, 0, 0},      {"cells/mlstm.cell", 768, 4, CG_FFMA, 1, 0},
        {"cells/lstmp.cell", 768, 16, CG_FFMA, 0, 0},     {"cells/peephole.cell", 1024, 32, CG_FFMA, 0, 0},
        /* where the first budget (128 for the rest everywhere) spilled */
        {"cells/lstmp.cell", 1024, 16, CG_FFMA, 0, 0},    {"cells/mlstm.cell", 1024, 4, CG_FFMA, 0, 0},
        {"cells/peephole.cell", 768, 32, CG_FFMA, 0, 0},
    };
    SideCompiles sc;
    side_init(&sc);
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        Src s;
        PlanLayout *L = layout_at_size(&s, rows[r].cell, rows[r].H);
        CgPersistAsk ask = cg_persist_h100_ask(rows[r].N, rows[r].backward, rows[r].products, 0);
        ask.twins = rows[r].products == CG_F16 || rows[r].products == CG_BF16;
        const int direct = cg_persist_direct_rule(&s.arena, L, &ask, 0, 0);
        CgPersist P;
        char why[256];
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "row %zu: %s", r, why);
        ck_assert_msg(cg_persist_held_registers(&P) > 0, "row %zu holds no weights: %s", r, why);
        ck_assert_int_eq(P.direct, direct);
        ck_assert_msg(P.direct || !rows[r].straight, "row %zu stages: %s", r, why);
        side_compile(&sc, u, s.module->cells[0]->name, P.cluster > 1 ? "sm_90a" : "sm_90", 0);
        free(u);
        src_close(&s);
    }
    side_finish(&sc);
}
END_TEST

/* The text between the first `from` at or after p and the next `to` after it (malloc'd; "" when
 * either is missing). */
static char *between(const char *p, const char *from, const char *to) {
    const char *a = p ? strstr(p, from) : NULL, *b = a ? strstr(a + strlen(from), to) : NULL;
    size_t n = a && b ? (size_t)(b - a) : 0;
    char *t = malloc(n + 1);
    ck_assert_ptr_nonnull(t);
    memcpy(t, a ? a : "", n);
    t[n] = 0;
    return t;
}

/* The search's fewer-blocks tile (bench/NOTES.md sections 41 and 100): the fewest blocks that leave
 * each block its rows' 16-row tiles (8-row groups in FFMA) and its items a thread, forward and
 * backward; the ask's cap plans them. */
START_TEST(persistent_fewer_blocks_keep_the_work) {
    static const struct {
        const char *cell, *h;
        int64_t N;
        CgProducts products;
        int cluster, fewest, backward_fewest;
    } cases[] = {
        {"cells/lstm.cell", "H=768", 16, CG_F16, 1, 96, 96},   /* 24 rows a block -> 32: two tiles */
        {"cells/lstm.cell", "H=768", 16, CG_F16, 2, 96, 96},
        {"cells/lstm.cell", "H=1024", 32, CG_F16, 2, 128, 128}, /* 32 rows; 8 units x 32 = 256 items */
        {"cells/gru.cell", "H=768", 16, CG_F16, 2, 78, 96},    /* 3 x 6 = 18 rows -> 3 x 10 = 30, not 3 x 11;
                                                                * the backward's 6 rows -> 8 (its U^T's H) */
        {"cells/gru.cell", "H=1024", 32, CG_F16, 2, 128, 128},
        {"cells/lstm.cell", "H=512", 64, CG_F16, 1, 128, 128},
        {"cells/lstm.cell", "H=1024", 4, CG_FFMA, 2, 128, 128}, /* FFMA: 32 rows, rw 4 */
        {"cells/lstm.cell", "H=1024", 64, CG_F16, 1, 128, 128}, /* 2 items a thread at 132 and at 128 */
        {"cells/lstm.cell", "H=1056", 4, CG_F16, 1, 0, 0},      /* 32 rows at 132, 36 (three tiles) at 131 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Src s;
        src_open_file(&s, cases[k].cell);
        const char *dims[] = {"I=64", cases[k].h};
        PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
        CgPersistAsk ask = cg_persist_h100_ask(cases[k].N, 0, cases[k].products, cases[k].cluster);
        CgPersist P, Q;
        char why[256];
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_int_eq(P.blocks, 132);
        int G = cg_persist_fewer_blocks(L, &ask, &P);
        ck_assert_msg(G == cases[k].fewest, "%s %s N=%lld: %d blocks, not %d", cases[k].cell, cases[k].h,
                      (long long)cases[k].N, G, cases[k].fewest);
        if (G) {
            ask.blocks = G;
            char *u = emit_persistent(&s, L, ask, &Q, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            char contract[64];
            snprintf(contract, sizeof contract, "if (G != %d || blockDim.x != 256) __trap();", G);
            ck_assert_msg(Q.blocks == G && strstr(u, contract), "%s", contract);
            free(u);
            ask.blocks = G - 1; /* one fewer than the fewest: more work a block */
            ck_assert(cg_persist_plan(&s.arena, L, &ask, &Q, why, sizeof why) && Q.blocks < G);
        }
        ask = cg_persist_h100_ask(cases[k].N, 1, cases[k].products, cases[k].cluster);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        G = cg_persist_fewer_blocks(L, &ask, &P); /* a backward's too (bench/NOTES.md section 100) */
        ck_assert_msg(G == cases[k].backward_fewest, "%s %s N=%lld backward: %d blocks, not %d", cases[k].cell, cases[k].h,
                      (long long)cases[k].N, G, cases[k].backward_fewest);
        if (G) {
            ask.blocks = G;
            char *u = emit_persistent(&s, L, ask, &Q, why, sizeof why);
            ck_assert_msg(u && Q.blocks == G && Q.backward, "%s", why);
            free(u);
        }
        src_close(&s);
    }
}
END_TEST

/* The rule's staged 16-bit tiles go on their fewest blocks with the same work (cg_persist_direct_rule,
 * bench/NOTES.md section 119): deepbench's forward and its backward's pairs splitting K on 128 of 132, not
 * where the blocks are forced, nor in fours (whose yield to pairs judges them as planned), nor in tf32 (no rule). */
START_TEST(persistent_rule_staged_on_fewest_blocks) {
    static const struct {
        const char *cell;
        int64_t H, N;
        CgProducts products;
        int backward, blocks_forced, blocks; /* blocks: the ask's cap after the rule (0: none) */
    } rows[] = {
        {"cells/lstm.cell", 1024, 32, CG_F16, 0, 0, 128}, {"cells/lstm.cell", 1024, 32, CG_F16, 1, 0, 128},
        {"cells/gru.cell", 1024, 32, CG_BF16, 1, 0, 128}, {"cells/lstm.cell", 1024, 32, CG_F16, 1, 1, 0},
        {"cells/lstm.cell", 1024, 32, CG_F16, 0, 1, 0},   {"cells/lstm.cell", 1024, 16, CG_F16, 1, 0, 0},
        {"cells/lstm.cell", 1024, 32, CG_TF32, 1, 0, 0},
    };
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        Src s;
        PlanLayout *L = layout_at_size(&s, rows[r].cell, rows[r].H);
        CgPersistAsk ask = cg_persist_h100_ask(rows[r].N, rows[r].backward, rows[r].products, 0);
        ask.twins = rows[r].products == CG_F16 || rows[r].products == CG_BF16;
        const int direct = cg_persist_direct_rule(&s.arena, L, &ask, 0, rows[r].blocks_forced);
        ck_assert_msg(!direct && ask.blocks == rows[r].blocks, "row %zu: direct %d, %d blocks", r, direct, ask.blocks);
        CgPersist P;
        char why[256];
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "row %zu: %s", r, why);
        ck_assert_msg(P.blocks == (rows[r].blocks ? rows[r].blocks : 132), "row %zu: %d blocks", r, P.blocks);
        src_close(&s);
    }
}
END_TEST

/* A 16-bit backward holding its step weights in registers copies them as they lie and transposes them
 * into registers (rnn_copy_columns16, rnn_wfrag_load_t: cg_persist_copies_columns) where every block's
 * columns are whole 16-byte pieces: deepbench's LSTM on 128 blocks in pairs splitting K (fp16 and bf16),
 * unclustered at 4 sequences; not on 132 blocks (7-8 columns a block), in tf32, nor with the weights
 * left in shared memory; each unit compiles (bench/NOTES.md section 120). */
START_TEST(persistent_backward_held_weights_copied_as_they_lie) {
    static const struct {
        int64_t N;
        CgProducts products;
        int blocks, wregs, lie; /* lie: the new path expected */
        const char *copy, *frags; /* where not NULL: the two calls, their arguments in the helpers' order (persist.cuh) */
    } rows[] = {
        {32, CG_F16, 128, 0, 1,
         "rnn_copy_columns16(w1, 16, (int)(r * 8), r == 1 ? 16 - r * 8 : 8, args.params16 + 262144 + (long long)rnn_rank * "
         "2097152, 1024, rnn_kr1, 2048, lr, nr);",
         "rnn_wfrag_load_t<8, 2>(rnn_wf1, w1, 16, 2048);"},
        {32, CG_BF16, 128, 0, 1, NULL, NULL},
        {4, CG_F16, 128, 0, 1, "rnn_copy_columns16(w1, 8, 0, 8, args.params16 + 262144, 1024, 4096, 4096, lo1, rows1);",
         "rnn_wfrag_load_t<16, 1>(rnn_wf1, w1, 8, 4096);"},
        {32, CG_F16, 132, 0, 0, NULL, NULL},
        {32, CG_TF32, 128, 0, 0, NULL, NULL},
        {32, CG_F16, 128, -1, 0, NULL, NULL},
    };
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        Src s;
        PlanLayout *L = layout_at_size(&s, "cells/lstm.cell", 1024);
        CgPersistAsk ask = cg_persist_h100_ask(rows[r].N, 1, rows[r].products, 0);
        ask.twins = rows[r].products != CG_TF32;
        ask.blocks = rows[r].blocks;
        ask.wregs = rows[r].wregs;
        CgPersist P;
        char why[256];
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "row %zu: %s", r, why);
        ck_assert_msg(P.blocks == rows[r].blocks && (rows[r].wregs == 0 || P.gemms[0].wregs == 0), "row %zu: %s", r, why);
        ck_assert_int_eq(cg_persist_copies_columns(&P, &P.gemms[0], 1024), rows[r].lie);
        ck_assert_msg((strstr(u, "rnn_copy_columns16(w1, ") != NULL) == rows[r].lie, "row %zu", r);
        ck_assert_msg((strstr(u, "rnn_wfrag_load_t<") != NULL) == rows[r].lie, "row %zu", r);
        ck_assert_msg((strstr(u, "rnn_load_transposed<") != NULL) == !rows[r].lie, "row %zu", r);
        ck_assert_msg(!rows[r].copy || strstr(u, rows[r].copy), "row %zu: no %s", r, rows[r].copy);
        ck_assert_msg(!rows[r].frags || strstr(u, rows[r].frags), "row %zu: no %s", r, rows[r].frags);
        if (!SANITIZED) compile_ok(u, "lstm", P.cluster > 1 ? "sm_90a" : "sm_90");
        free(u);
        src_close(&s);
    }
}
END_TEST

/* Each of unit u's n lines occurs once, before loop (its step loop's opening). */
static void each_once_before(const char *u, const char *loop, const char *const *lines, int n) {
    for (int k = 0; k < n; k++) {
        const char *at = strstr(u, lines[k]);
        ck_assert_msg(at && at < loop && count(u, lines[k]) == 1, "%s", lines[k]);
    }
}

/* Where a persistent kernel's batch class is bounded and so many sequences times a block's elements
 * fit its threads, every thread takes one item at most: each loop over a thread's items runs once
 * (`do { } while (0)`, whose `continue` ends it), holding no code for a second item, the prefetches of
 * other items go, and the kernel traps on a batch past its class (a flashrnn fp16 inference step -8%:
 * bench/NOTES.md section 110). A class with no bound, or more items than threads, keeps the loops. */
START_TEST(persistent_one_item_a_thread) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=40", "H=72"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    static const char loop_head[] = "for (long long i = threadIdx.x", once[] = "const long long i = threadIdx.x;  // one item a thread at most: its first";
    for (int backward = 0; backward < 2; backward++) {
        char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, backward, CG_F16, 1), &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_int_eq(P.seqs_max, 16);
        const char *trap = strstr(u, "if (args.N > 16) __trap();"), *steps = strstr(u, "for (int t = args.");
        ck_assert(trap && steps && trap < steps);
        ck_assert_ptr_null(strstr(u, loop_head));
        /* forward: the gates; backward: h's and c's zeroings and the gates */
        ck_assert_int_eq(count(u, once), backward ? 3 : 1);
        ck_assert_int_eq(count(u, "if (i < (long long)a.N * nj) do {"), count(u, once));
        ck_assert_int_eq(count(u, "} while (0);"), count(u, once));
        ck_assert_ptr_null(strstr(u, "i / nj"));
        if (!SANITIZED) compile_ok(u, "lstm", "sm_90a");
        free(u);
        /* the class over 32 sequences has no bound: loops, no trap */
        u = emit_persistent(&s, L, cg_persist_h100_ask(64, backward, CG_F16, 1), &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_int_eq(P.seqs_max, 0);
        ck_assert_ptr_nonnull(strstr(u, loop_head));
        ck_assert_ptr_null(strstr(u, "one item a thread"));
        ck_assert_ptr_null(strstr(u, "if (args.N >"));
        free(u);
    }
    src_close(&s);
    /* a bounded class with more items than threads: 32 sequences of 63 elements a block on 256 threads */
    src_open_file(&s, "cells/indrnn.cell");
    const char *wide[] = {"I=40", "H=8192"};
    L = layout_bound(&s, s.module->cells[0], wide, 2);
    char *u = emit_persistent(&s, L, cg_persist_h100_ask(32, 0, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert(P.seqs_max == 32 && 32 * ((8192 + P.blocks - 1) / P.blocks) > 32 * P.warps);
    ck_assert_ptr_nonnull(strstr(u, "if (args.N > 32) __trap();"));
    ck_assert_ptr_nonnull(strstr(u, loop_head));
    ck_assert_ptr_null(strstr(u, "one item a thread"));
    free(u);
    src_close(&s);
}
END_TEST

/* A persistent kernel's step groups find their thread's first item (sequence, element) decoded once
 * before the step loop, per length they run over (a backward's states' lengths too); the other
 * items divide as before (at 64 sequences: persistent_one_item_a_thread). */
START_TEST(persistent_first_item_decoded_once) {
    Src s;
    src_open_file(&s, "cells/mlstm.cell");
    const char *dims[] = {"I=40", "H=72", "M=56"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 3);
    CgPersist P;
    char why[256];
    /* 64 sequences: a class with no bound, whose threads may take several items (persistent_one_item_a_thread) */
    char *u = emit_persistent(&s, L, cg_persist_h100_ask(64, 0, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    const char *loop = strstr(u, "for (int t = args.t; t < args.t_end; t++) {");
    ck_assert_ptr_nonnull(loop);
    static const char *const decoded[] = {
        "const int rnn_j0_H = (int)((long long)RNN_DIM_H * s / G), rnn_nj_H = (int)((long long)RNN_DIM_H * (s + 1) / G) - rnn_j0_H;",
        "const long long rnn_n1_H = rnn_nj_H ? threadIdx.x / rnn_nj_H : 0;",
        "const int rnn_j1_H = rnn_j0_H + (rnn_nj_H ? (int)(threadIdx.x % rnn_nj_H) : 0);",
        "const long long rnn_n1_M = rnn_nj_M ? threadIdx.x / rnn_nj_M : 0;"};
    each_once_before(u, loop, decoded, 4);
    /* the first-item loads and each group's first item take them; no division for them in the loop */
    ck_assert_int_eq(count(loop, "const long long n = rnn_n1_M;"), 1);
    ck_assert_int_eq(count(loop, "const long long n = rnn_n1_H;"), 1);
    ck_assert_int_eq(count(loop, "const long long n = i == threadIdx.x ? rnn_n1_M : i / nj;"), 1);
    ck_assert_int_eq(count(loop, "const int j = i == threadIdx.x ? rnn_j1_H : j0 + (int)(i % nj);"), 1);
    ck_assert_int_eq(count(loop, "const long long n = i / nj;"), 2); /* the prefetches of the other items */
    /* nor for the block's elements: every scope of the loop takes them from before it */
    ck_assert_int_eq(count(loop, "* s / G"), 0);
    ck_assert_int_eq(count(loop, "const int nj = rnn_nj_M;"), 1);
    ck_assert_int_eq(count(loop, "const int j0 = rnn_j0_M, nj = rnn_nj_M;"), 2);
    free(u);
    /* the backward too (bench/NOTES.md section 51): its groups (m's over M, the gates'
     * over H), the prefetches of the next step's values and the zeroing of its states' adjoints */
    u = emit_persistent(&s, L, cg_persist_h100_ask(64, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    loop = strstr(u, "for (int t = args.t_end - 1; t >= args.t; t--) {");
    ck_assert_ptr_nonnull(loop);
    each_once_before(u, loop, decoded, 4);
    ck_assert_int_eq(count(loop, "* s / G"), 0);
    ck_assert_int_eq(count(loop, "const long long n = i / nj;"), 1); /* the prefetch of the other items */
    ck_assert_int_eq(count(loop, "const long long n = i == threadIdx.x ? rnn_n1_M : i / nj;"), 1);
    /* h's and c's zeroing, the gates */
    ck_assert_int_eq(count(loop, "const long long n = i == threadIdx.x ? rnn_n1_H : i / nj;"), 3);
    ck_assert_int_eq(count(loop, "const long long n = rnn_n1_H;"), 1); /* the prefetch's first item */
    free(u);
    src_close(&s);
    /* no step GEMM (IndRNN): decoded all the same */
    src_open_file(&s, "cells/indrnn.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 2);
    u = emit_persistent(&s, L, cg_persist_h100_ask(64, 0, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    loop = strstr(u, "for (int t = args.t; t < args.t_end; t++) {");
    const char *decl = strstr(u, "const long long rnn_n1_H = ");
    ck_assert(loop && decl && decl < loop && strstr(loop, "? rnn_n1_H : i / nj;"));
    free(u);
    src_close(&s);
}
END_TEST

/* A step finds its state slots by a mask, not by dividing by a value known only at run time (that
 * division sat before every inference step's barrier: bench/NOTES.md section 50); the kernel traps
 * on a slot count that is not 0 or a power of two, before its step loop; forward and backward. */
START_TEST(persistent_state_slots_take_a_mask) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=40", "H=72"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    for (int backward = 0; backward < 2; backward++) {
        char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, backward, CG_F16, 1), &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_ptr_null(strstr(u, "% args.state_wrap"));
        const char *trap = strstr(u, "if (args.state_wrap < 0 || (args.state_wrap & (args.state_wrap - 1))) __trap();");
        const char *loop = strstr(u, backward ? "for (int t = args.t_end - 1; t >= args.t; t--) {"
                                              : "for (int t = args.t; t < args.t_end; t++) {");
        const char *sp = loop ? strstr(loop, "const long long sp = args.state_wrap ? t & (args.state_wrap - 1) : t;") : NULL;
        const char *sn = sp ? strstr(sp, "const long long sn = args.state_wrap ? (t + 1) & (args.state_wrap - 1) : t + 1;") : NULL;
        ck_assert_msg(trap && loop && sp && sn && trap < loop && sp < sn, "backward %d", backward);
        free(u);
    }
    src_close(&s);
}
END_TEST

/* A persistent forward loads the values a step group reads from before the step (hoisted results,
 * states) and its parameters, for each thread's first item, into registers q<K>_<local> between
 * the step's barrier and its GEMMs, fenced by RNN_ISSUED; that item's body takes them (`i ==
 * threadIdx.x ? q..`), the other items' values are prefetched into L1 as before. At most 16 a group
 * (the rest loaded and prefetched as before); each group its own registers; not in the per-step
 * kernels (bench/NOTES.md section 39). A persistent backward declares its first group's before the
 * step loop, loads them there for step t_end-1 and, between each step t's barrier and its GEMMs,
 * for step t-1; its output's adjoint dy too (qy1_..) (section 61). */
START_TEST(persistent_first_item_loaded_before_the_gemms) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=40", "H=72", "M=56"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    /* the first item's loads go out between the barrier's halves (while the other blocks arrive): after the step
     * loop's top, whose previous step ended with this block's arrival */
    const char *bar = strstr(u, "// this block arrived at step t-1's end"), *gemm = strstr(u, "rnn_mv_mma<");
    ck_assert_ptr_nonnull(gemm ? strstr(gemm, "if (t + 1 < args.t_end) rnn_grid_arrive(args.sync);  // this block is done with step t") : NULL);
    const char *wait = strstr(u, "if (t > args.t) rnn_grid_wait(args.sync, ++epoch);  // step t-1");
    const char *decl = strstr(u, "float q1_v"), *fence = decl ? strstr(decl, "RNN_ISSUED(\"f\"(q1_") : NULL;
    ck_assert(bar && decl && fence && wait && gemm && bar < decl && decl < fence && fence < wait && wait < gemm);
    ck_assert_ptr_null(strstr(u, "rnn_grid_sync(args.sync, ++epoch);  // step t-1"));
    static const char *const loaded[] = {"q1_v2_c = a.state_prev[1][n * RNN_DIM_H + j];  // state c",
                                         "q1_v11_b_i = a.params[", "q1_v15 = a.buf[0][col * "};
    for (int k = 0; k < 3; k++) {
        const char *at = strstr(u, loaded[k]);
        ck_assert_msg(at && decl < at && at < fence, "%s", loaded[k]);
    }
    ck_assert_ptr_nonnull(strstr(u, "const float v2_c = i == threadIdx.x ? q1_v2_c : a.state_prev[1][n * RNN_DIM_H + j];"));
    ck_assert_ptr_nonnull(strstr(u, "const float v11_b_i = i == threadIdx.x ? q1_v11_b_i : a.params["));
    ck_assert_int_eq(count(u, "i == threadIdx.x ? q1_"), 9); /* 4 hoisted, 4 biases, c */
    /* every value was loaded early: the prefetches serve the other items only, and at 16 sequences on 72
     * blocks no thread has another (persistent_one_item_a_thread) */
    static const char other_items[] = "for (long long i = threadIdx.x + blockDim.x; i < (long long)a.N * nj; i += blockDim.x) {";
    ck_assert_ptr_null(strstr(u, other_items));
    free(u);
    /* at 64 sequences they may: into L1 after the barrier's acquire, which may drop L1's lines */
    u = emit_persistent(&s, L, cg_persist_h100_ask(64, 0, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    wait = strstr(u, "if (t > args.t) rnn_grid_wait(args.sync, ++epoch);  // step t-1");
    gemm = strstr(u, "rnn_mv_mma<");
    const char *other = strstr(u, other_items);
    ck_assert(wait && gemm && other && wait < other && other < gemm && strstr(other, "rnn_prefetch(&a.state_prev[1]") < gemm);
    free(u);
    u = emit_persistent(&s, L, cg_persist_h100_ask(16, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    {
        const char *bdecl = strstr(u, "float q1_v"), *loop = strstr(u, "for (int t = args.t_end - 1; t >= args.t; t--) {");
        const char *first = strstr(u, "if (args.t_end > args.t) {  // the first step's");
        const char *bbar = strstr(u, "rnn_grid_wait(args.sync, ++epoch);  // the transposed GEMMs"), *bgemm = strstr(u, "rnn_mv_mma<");
        const char *barr = strstr(u, "rnn_grid_arrive(args.sync);  // the barrier below");
        ck_assert(bdecl && first && loop && barr && bbar && bgemm && bdecl < first && first < loop && loop < barr && barr < bbar &&
                  bbar < bgemm);
        ck_assert_int_eq(count(u, "float q1_v"), 1);
        ck_assert_ptr_nonnull(strstr(bdecl, "qy1_v39_h_next = 0.0f")); /* d(output h) */
        /* loaded twice: before the loop (step t_end-1) and a step ahead between the barrier's halves */
        static const char *const bload[] = {"q1_v2_c = a.state_prev[1][n * RNN_DIM_H + j];", "q1_v11_b_i = a.params[",
                                            "q1_v15 = a.buf[0][col * ", "q1_v16 = a.buf[1][n * ",
                                            "if (a.dy[0]) qy1_v39_h_next = a.dy[0][col * a.ldy[0] + j];"};
        for (int k = 0; k < 5; k++) {
            const char *a0 = strstr(first, bload[k]), *a1 = a0 ? strstr(a0 + 1, bload[k]) : NULL;
            ck_assert_msg(a0 && a0 < loop && a1 && barr < a1 && a1 < bbar && count(u, bload[k]) == 2, "%s", bload[k]);
        }
        /* the body of step t takes them, before the barrier */
        const char *body = strstr(loop, "const float v2_c = i == threadIdx.x ? q1_v2_c : a.state_prev[1][n * RNN_DIM_H + j];");
        ck_assert(body && body < barr);
        ck_assert_ptr_nonnull(strstr(loop, "const float v16 = a.summed ? 0.0f : (i == threadIdx.x ? q1_v16 : a.buf[1][n * "));
        ck_assert_ptr_nonnull(strstr(loop, "if (a.dy[0]) d39_h_next += i == threadIdx.x ? qy1_v39_h_next : a.dy[0][col * a.ldy[0] + j];"));
        ck_assert_int_eq(count(u, "i == threadIdx.x ? q1_"), 13); /* 4 hoisted, 4 step products, 4 biases, c */
    }
    free(u);
    u = emit(&s, L);
    ck_assert_ptr_null(strstr(u, "i == threadIdx.x ? q"));
    free(u);
    src_close(&s);
    /* two step groups (mLSTM: m, then the gates): registers of their own, each declared once */
    src_open_file(&s, "cells/mlstm.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 3);
    u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_int_eq(count(u, "float q1_"), 1);
    ck_assert_int_eq(count(u, "float q2_"), 1);
    char *k1 = between(u, "// K1 over this block's units", "// K2 over"), *k2 = between(u, "// K2 over this block's units", "RNN_PROF(4)");
    ck_assert(*k1 && *k2 && strstr(k1, "? q1_") && !strstr(k1, "? q2_") && strstr(k2, "? q2_") && !strstr(k2, "? q1_"));
    free(k1);
    free(k2);
    free(u);
    src_close(&s);
    /* 18 hoisted values in one group: 16 early, the other two loaded after the GEMMs; the prefetch
     * covers every item */
    src_open(&s, "wide.cell",
             "cell wide(x[I]) -> h {\n    state h[H]\n    param U[H, H], W1[H, I], W2[H, I], W3[H, I], W4[H, I], W5[H, I], W6[H, I]\n"
             "    param W7[H, I], W8[H, I], W9[H, I], W10[H, I], W11[H, I], W12[H, I], W13[H, I], W14[H, I]\n"
             "    param W15[H, I], W16[H, I], W17[H, I], W18[H, I]\n"
             "    h' = tanh(U @ h + W1 @ x + W2 @ x + W3 @ x + W4 @ x + W5 @ x + W6 @ x + W7 @ x + W8 @ x + W9 @ x\n"
             "              + W10 @ x + W11 @ x + W12 @ x + W13 @ x + W14 @ x + W15 @ x + W16 @ x + W17 @ x + W18 @ x)\n}\n");
    L = layout_bound(&s, s.module->cells[0], dims, 2);
    u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_int_eq(count(u, "i == threadIdx.x ? q1_"), 16);
    ck_assert_int_eq(count(u, "rnn_prefetch(&a.buf[0]"), 18);
    ck_assert_ptr_null(strstr(u, "i = threadIdx.x + blockDim.x"));
    if (!SANITIZED) compile_ok(u, "wide", "sm_90");
    free(u);
    src_close(&s);
}
END_TEST

/* Section 75's race in a few lines: K1 computes g (H long) beside s' (P long), so it runs over P's
 * shares and reads c; c' needs U's product, so K2 stores it, over H's shares. */
static const char *const cross_cell = "cell cross(x[I]) -> h {\n    state h[H], c[H], s[P]\n"
                                      "    param W[H, I], Q[H, P], Ws[P, I], Us[P, P], U[H, H]\n"
                                      "    g = sigmoid(W @ x + Q @ s + c)\n    u = tanh(U @ (g * h))\n"
                                      "    h' = g * u\n    c' = g * c + (1 - g) * u\n    s' = tanh(Ws @ x + Us @ s)\n}\n";

/* A group that reads a state of another length than its own (its width P, the state c's H) takes
 * that state's element j from the block that owns j in H's shares, not its own: loaded before the
 * barrier's wait, it could be step t-1's value still being stored (the fuzz tool's wide51 at H = 2,
 * P = 16: errors of 0.03-inf in fp32). Such a unit loads no state early; where the lengths are
 * equal, the shares are too, and it does. */
START_TEST(persistent_first_item_takes_only_its_own_states) {
    static const char *const sizes[2][3] = {{"I=8", "H=2", "P=16"}, {"I=8", "H=16", "P=16"}};
    for (int eq = 0; eq < 2; eq++) {
        for (CgProducts pr = CG_FFMA; pr <= CG_F16; pr += CG_F16 - CG_FFMA) {
            Src s;
            src_open(&s, "cross.cell", cross_cell);
            PlanLayout *L = layout_bound(&s, s.module->cells[0], sizes[eq], 3);
            ck_assert_int_eq(cg_persist_states_cross_blocks(L), !eq);
            CgPersist P;
            char why[256];
            char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, pr, 1), &P, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            char *early = between(u, "// this block arrived at step t-1's end", "if (t > args.t) rnn_grid_wait(args.sync, ++epoch);");
            ck_assert_ptr_nonnull(strstr(early, "// K1's values from before the step for this thread's first item"));
            ck_assert_msg(eq == (strstr(early, "q1_v2_c = a.state_prev[1][n * RNN_DIM_H + j];  // state c") != NULL),
                          "lengths %s: %s", eq ? "equal" : "unequal", early);
            ck_assert_msg(eq || !strstr(early, "a.state_prev["), "%s", early);
            /* the group still reads c, after the barrier */
            ck_assert_ptr_nonnull(strstr(u, eq ? "const float v2_c = i == threadIdx.x ? q1_v2_c : a.state_prev[1][n * RNN_DIM_H + j];"
                                               : "const float v2_c = a.state_prev[1][n * RNN_DIM_H + j];"));
            if (!SANITIZED) compile_ok(u, "cross", "sm_90");
            free(early);
            free(u);
            src_close(&s);
        }
    }
}
END_TEST

/* The fp16 persistent backward unit of s's cell at dims (16 sequences a pass, no clusters). */
static char *backward_unit16(Src *s, const char *const *dims, int nd) {
    PlanLayout *L = layout_bound(s, s->module->cells[0], dims, nd);
    CgPersist P;
    char why[256];
    char *u = emit_persistent(s, L, cg_persist_h100_ask(16, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    return u;
}

/* Takes the grid barrier on the first line of u holding line (a negative control) out, or (back) puts a
 * taken rnn_grid_sync in again: rnn_grid_sync or rnn_grid_wait becomes rnn_grid_skip, which the checks
 * do not count as one. */
static void barrier_out(char *u, const char *line, int back) {
    char *at = strstr(u, line);
    ck_assert_msg(at, "no line holding '%s'", line);
    while (at > u && at[-1] != '\n') at--;
    char *call = strstr(at, back ? "rnn_grid_skip" : "rnn_grid_sync"), *wait = back ? NULL : strstr(at, "rnn_grid_wait");
    if (wait && (!call || wait < call)) call = wait;
    ck_assert_msg(call && !memchr(at, '\n', (size_t)(call - at)), "no barrier on the line holding '%s'", line);
    memcpy(call, back ? "rnn_grid_sync" : "rnn_grid_skip", 13);
}

/* RNNCC_PERSIST_STAGGER=1's units (a test tool, persist.cuh's RNN_STAGGER): every step group of a
 * persistent unit, forward and backward, opens with RNN_STAGGER(a.t, its group), which sleeps in
 * some blocks where the unit defines RNN_STAGGER_ON and is nothing otherwise; such a unit compiles. */
START_TEST(persistent_groups_may_be_staggered) {
    static const char *const sizes[] = {"I=8", "H=2", "P=16"};
    for (int cell = 0; cell < 2; cell++) {
        for (int backward = 0; backward < 2; backward++) {
            Src s;
            if (cell == 0) src_open(&s, "cross.cell", cross_cell);
            else src_open_file(&s, "cells/lstm.cell");
            PlanLayout *L = cell == 0 ? layout_bound(&s, s.module->cells[0], sizes, 3) : layout_all(&s, s.module->cells[0], 64);
            CgPersist P;
            char why[256];
            char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, backward, CG_F16, 1), &P, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            int groups = 0, staggered = 0;
            for (const char *p = u; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                const char *q = p + strspn(p, " ");
                if (!unit_group_header(q)) continue;
                groups++;
                const char *next = strchr(q, '\n');
                ck_assert_ptr_nonnull(next);
                next += 1 + strspn(next + 1, " ");
                int gi = -1;
                ck_assert_msg(sscanf(next, "RNN_STAGGER(a.t, %d);", &gi) == 1, "cell %d, %s: a group without its stagger:\n%.200s",
                              cell, backward ? "backward" : "forward", q);
                staggered += gi >= 0 && gi < L->plan->ngroups;
            }
            ck_assert_int_gt(groups, 0);
            ck_assert_int_eq(staggered, groups);
            ck_assert_int_eq(count(u, "RNN_STAGGER(a.t, "), groups);
            if (!SANITIZED) {
                StrBuf on = {0};
                sb_puts(&on, "#define RNN_STAGGER_ON 1\n");
                sb_puts(&on, u);
                ck_assert(!on.failed);
                compile_ok(sb_str(&on), backward ? "staggered_backward" : "staggered_forward", "sm_90");
                sb_free(&on);
            }
            free(u);
            src_close(&s);
        }
    }
}
END_TEST

/* early_loads_own and results_read_own_rows hold for the persistent forward units of the shipped
 * cells and of 300 random ones (rnd1-100, wide1-200), with their other lengths longer and shorter
 * than the first state's and at sizes where products fuse their sums, FFMA, tf32 and fp16 (its states
 * and adjoints staged from their 16-bit twins, as the runtime asks: twins), several
 * batch classes, barrier and flags, clusters of 4 (5562 units, 8844 state loads, 26280 results
 * read, fused sums among them); and they fail where they should:
 * a state's writer running over another length than its early load (section 75's race: the old
 * generator's line put back into the cross cell's unit; against the library before the fix,
 * 6932979, early_loads_own flagged 95 units of 19 wide cells, wide51 and wide148 among them), a
 * group reading other blocks' rows with the barrier after their product taken out, or rows kept
 * in shared memory for another length. The backward units of the same cells and tiles (4635, 44072
 * fetches) hold backward_fetches_forward_values; LSTM's fails with an adjoint fetched ahead, or a
 * forward buffer stored. They hold backward_adjoints_read_own too (103782 adjoint accesses, the fp16
 * tiles asking for 16-bit twins as the runtime does, so that adjoints staged from their twins count; with
 * the generator's opening barrier of a step whose states cross blocks left out, wide92 fails it, and
 * without its barrier before a group reading operand adjoints other blocks added to, wide6); LSTM's
 * fails with U^T's rows over another length or its gate adjoints staged with no barrier after their
 * stores, the cross cell's with the barriers between its two groups' adjoint stores taken out, or
 * the one before K1 reads U^T's output. The forward units hold forward_staged_values_stay (19114
 * operands staged); a cell with a readout y = V h' fails it without the barrier before V's product,
 * or without the next step's opening barrier. */
/* One share of persistent_early_loads_are_own_values's sweep: the shipped cells and 300 random ones, every
 * step-th from first, each at three sizes and eight requests, forward and backward units checked; its counts. */
typedef struct SweepShare {
    char **paths;
    int nshipped, first, step;
    int units, direct, states, reads, stagings, bunits, bdirect, fetches, adjoints;
    pthread_t thread;
} SweepShare;

static void *sweep_share(void *arg) {
    SweepShare *sh = arg;
    char why[256];
    /* input, first state, the rest; the third where tensor-core products at 32 sequences fuse their sums */
    static const int64_t sizes[3][3] = {{40, 24, 56}, {24, 56, 24}, {64, 256, 512}};
    /* flags: 1 steps handed off by flags, 2 operands loaded straight into registers (CG_HANDOFF_DIRECT) */
    static const struct { int64_t N; CgProducts pr; int flags, cluster; } asks[] = {
        {4, CG_FFMA, 0, 1}, {4, CG_FFMA, 1, 1}, {16, CG_F16, 0, 1}, {32, CG_TF32, 0, 1}, {64, CG_F16, 0, 1}, {16, CG_F16, 0, 4},
        {16, CG_F16, 2, 1}, {4, CG_BF16, 2, 1}};
    char src[8192];
    for (int i = sh->first; i < sh->nshipped + 300; i += sh->step) {
        Src s;
        if (i < sh->nshipped) src_open_file(&s, sh->paths[i]);
        else {
            int seed = i - sh->nshipped < 100 ? i - sh->nshipped + 1 : i - sh->nshipped - 99;
            ck_assert_int_gt((i - sh->nshipped < 100 ? tu_random_cell : tu_random_cell_wide)((uint64_t)seed, src, sizeof src), 0);
            src_open(&s, "random.cell", src);
        }
        const IrCell *c = s.module->cells[0];
        for (int set = 0; set < 3; set++) {
            char spec[8][32];
            const char *dims[8];
            int nd = tu_dim_specs(c, sizes[set][0], sizes[set][1], sizes[set][2], spec, dims);
            PlanLayout *L = layout_bound(&s, c, dims, nd);
            for (size_t a = 0; a < sizeof asks / sizeof *asks; a++) {
                CgPersistAsk ask = cg_persist_h100_ask(asks[a].N, 0, asks[a].pr, asks[a].cluster);
                ask.handoff = asks[a].flags == 1 ? CG_HANDOFF_FLAGS : asks[a].flags == 2 ? CG_HANDOFF_DIRECT : CG_HANDOFF_BARRIER;
                ask.twins = asks[a].pr == CG_F16 || asks[a].pr == CG_BF16; /* as the runtime asks (rt_persist.c) */
                CgPersist P;
                char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
                if (!u) continue; /* refused: it says why (persistent_plan_says_why_not) */
                sh->units++;
                sh->direct += P.direct;
                ck_assert_msg(early_loads_own(u, &sh->states, why, sizeof why), "%s (%s, %s): %s", c->name, dims[0],
                              nd > 1 ? dims[1] : "", why);
                ck_assert_msg(results_read_own_rows(u, &sh->reads, why, sizeof why), "%s (%s, %s): %s", c->name, dims[0],
                              nd > 1 ? dims[1] : "", why);
                ck_assert_msg(forward_staged_values_stay(u, &sh->stagings, why, sizeof why), "%s (%s, %s): %s", c->name, dims[0],
                              nd > 1 ? dims[1] : "", why);
                free(u);
                if (asks[a].flags == 1) continue; /* the backward has no flags; it loads straight (section 107) */
                ask.backward = 1;
                ask.handoff = asks[a].flags == 2 ? CG_HANDOFF_DIRECT : CG_HANDOFF_BARRIER;
                u = emit_persistent(&s, L, ask, &P, why, sizeof why);
                if (!u) continue;
                sh->bunits++;
                sh->bdirect += P.direct;
                ck_assert_msg(backward_fetches_forward_values(u, &sh->fetches, why, sizeof why), "%s backward (%s, %s): %s",
                              c->name, dims[0], nd > 1 ? dims[1] : "", why);
                ck_assert_msg(backward_adjoints_read_own(u, &sh->adjoints, why, sizeof why), "%s backward (%s, %s): %s",
                              c->name, dims[0], nd > 1 ? dims[1] : "", why);
                free(u);
            }
        }
        src_close(&s);
    }
    return NULL;
}

/* Runs the sweep in n shares side by side (one where Check runs tests in its own process: CK_FORK=no, where
 * a failed check must stay on the test's thread; a failed check in a share's thread ends the forked test as
 * on its own), the counts in share[0..returned). ~100 s one after another, the largest part of CI's checks. */
static int sweep_shares(SweepShare *share, int n) {
    const char *fork = getenv("CK_FORK");
    if (fork && strcmp(fork, "no") == 0) n = 1;
    char **paths;
    const int nshipped = tu_list_cells(&paths);
    for (int k = 0; k < n; k++) {
        memset(&share[k], 0, sizeof share[k]);
        share[k].paths = paths, share[k].nshipped = nshipped, share[k].first = k, share[k].step = n;
    }
    for (int k = 1; k < n; k++) {
        pthread_attr_t attr; /* 16 MB of stack, as the runtime's compiles: the generator recurses over the cell */
        ck_assert_int_eq(pthread_attr_init(&attr), 0);
        ck_assert_int_eq(pthread_attr_setstacksize(&attr, (size_t)16 << 20), 0);
        ck_assert_int_eq(pthread_create(&share[k].thread, &attr, sweep_share, &share[k]), 0);
        pthread_attr_destroy(&attr);
    }
    sweep_share(&share[0]);
    for (int k = 1; k < n; k++) ck_assert_int_eq(pthread_join(share[k].thread, NULL), 0);
    tu_free_list(paths, nshipped);
    return n;
}

START_TEST(persistent_early_loads_are_own_values) {
    char why[256];
    /* the negative control: the unit of section 75's race at H = 2, P = 16, as the generator emitted it
     * before the fix (c loaded early in K1, which runs over P), and the same at H = P = 16, where a
     * block's shares of both lengths are alike */
    {
        static const char *const sizes[2][3] = {{"I=8", "H=2", "P=16"}, {"I=8", "H=16", "P=16"}};
        for (int eq = 0; eq < 2; eq++) {
            Src s;
            src_open(&s, "cross.cell", cross_cell);
            PlanLayout *L = layout_bound(&s, s.module->cells[0], sizes[eq], 3);
            CgPersist P;
            char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_FFMA, 1), &P, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            int n = 0;
            ck_assert_msg(early_loads_own(u, &n, why, sizeof why), "%s", why);
            ck_assert_int_eq(n, eq ? 2 : 0); /* c and h early where the lengths are equal, nothing else */
            /* the old generator's line, in K1's first item's scope */
            const char *at = strstr(u, "q1_v23 = a.buf[0][col * ");
            ck_assert_ptr_nonnull(at);
            StrBuf old = {0};
            sb_printf(&old, "%.*sif (j < RNN_DIM_H) q1_v2_c = a.state_prev[1][n * RNN_DIM_H + j];  // state c\n%s",
                      (int)(at - u), u, at);
            n = 0;
            ck_assert_int_eq(early_loads_own(sb_str(&old), &n, why, sizeof why), eq);
            if (!eq) ck_assert_msg(strstr(why, "state 1 (stored over 2 elements) loaded early over 16"), "%s", why);
            sb_free(&old);
            if (!eq) {
                /* K1 reads Q s (H rows) over P after the barrier the generator put there; without it, or
                 * with the rows kept in shared memory taken for another length, results_read_own_rows fails */
                n = 0;
                ck_assert_msg(results_read_own_rows(u, &n, why, sizeof why), "%s", why);
                ck_assert_int_eq(n, 3); /* Q s, Us s, U (g h) */
                static const char *const bar = "++epoch);  // this group reads rows other blocks computed";
                barrier_out(u, bar, 0);
                ck_assert(!results_read_own_rows(u, &n, why, sizeof why));
                ck_assert_msg(strstr(why, "G1 block 0 (2 rows) read over 16 with no barrier since its product"), "%s", why);
                barrier_out(u, bar, 1);
                char *rows = strstr(u, "const int R[1] = {2}, B[1] = {0};"), *g2 = strstr(u, "// G2 = ");
                ck_assert(rows && g2 && g2 < rows);
                memcpy(rows, "const int R[1] = {3}", 20);
                ck_assert(!results_read_own_rows(u, &n, why, sizeof why));
                ck_assert_msg(strstr(why, "G2 block 0 (3 rows) read over 2 from shared memory"), "%s", why);
            }
            free(u);
            src_close(&s);
        }
    }
    /* forward_staged_values_stay's negative controls: a cell whose second product s' = V h' (a state's: a
     * readout's would run after the loop) stages h''s stored twin for it after a barrier, and stores it
     * after the next step's opening barrier; without either barrier, a block could overwrite what another
     * still stages */
    {
        static const char *const dims[] = {"I=16", "H=32", "P=8"};
        static const char *const readout = "cell readout(x[I]) -> h {\n    state h[H], s[P]\n    param W[H, I], U[H, H], V[P, H]\n"
                                           "    h' = tanh(W @ x + U @ h)\n    s' = V @ h'\n}\n";
        for (int which = 0; which < 2; which++) {
            Src s;
            src_open(&s, "readout.cell", readout);
            PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 3);
            CgPersist P;
            char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_F16, 1), &P, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            int n = 0;
            ck_assert_msg(forward_staged_values_stay(u, &n, why, sizeof why), "%s", why);
            ck_assert_int_eq(n, 2);
            barrier_out(u, which ? "++epoch);  // step t-1 is complete everywhere" : "++epoch);  // the phase-1 GEMMs read every block's results", 0);
            ck_assert(!forward_staged_values_stay(u, &n, why, sizeof why));
            ck_assert_msg(strstr(why, which ? "staged across the loop's turn from a store to it" : "staged between the same barriers as a store"),
                          "%s", why);
            free(u);
            src_close(&s);
        }
    }
    /* the backward's negative control: LSTM's unit as emitted holds; with an adjoint fetched ahead, or
     * a forward buffer stored, it does not */
    {
        static const char *const dims[] = {"I=40", "H=72"};
        Src s;
        src_open_file(&s, "cells/lstm.cell");
        char *u = backward_unit16(&s, dims, 2);
        int n = 0;
        ck_assert_msg(backward_fetches_forward_values(u, &n, why, sizeof why), "%s", why);
        ck_assert_int_eq(n, 2 * 14); /* 13 forward values and dy, before the loop and a step ahead */
        const char *at = strstr(u, "q1_v15 = a.buf[0][col * ");
        ck_assert_ptr_nonnull(at);
        static const char *const bad[2][2] = {{"q1_v99 = a.dbuf[2][n * 288 + j];\n", "an adjoint fetched ahead"},
                                              {"a.buf[1][n * 288 + j] = 0.0f;\n", "a forward value stored in the backward"}};
        for (int b = 0; b < 2; b++) {
            StrBuf t = {0};
            sb_printf(&t, "%.*s%s%s", (int)(at - u), u, bad[b][0], at);
            ck_assert(!backward_fetches_forward_values(sb_str(&t), &n, why, sizeof why));
            ck_assert_msg(strstr(why, bad[b][1]), "%s", why);
            sb_free(&t);
        }
        /* its step opens with no barrier: d(h) and d(c), stored by K1 and U^T's rows over H, are read
         * over H; with U^T's rows taken over another length, that read is another block's element */
        ck_assert_ptr_null(strstr(u, "// step t+1 is complete everywhere"));
        n = 0;
        ck_assert_msg(backward_adjoints_read_own(u, &n, why, sizeof why), "%s", why);
        ck_assert_int_ge(n, 4);
        char *lo = strstr(u, "const int lo1 = (int)(72LL * s / G)");
        ck_assert_ptr_nonnull(lo);
        memcpy(lo + strlen("const int lo1 = (int)("), "73", 2);
        ck_assert(!backward_adjoints_read_own(u, &n, why, sizeof why));
        ck_assert_msg(strstr(why, "state 0's adjoint stored over 73 and accessed over 72 across the loop's turn"), "%s", why);
        memcpy(lo + strlen("const int lo1 = (int)("), "72", 2);
        /* U^T stages the gate adjoints K1 stored, after a barrier; without it, the check fails */
        barrier_out(u, "++epoch);  // the transposed GEMMs read every block's adjoints", 0);
        ck_assert(!backward_adjoints_read_own(u, &n, why, sizeof why));
        ck_assert_msg(strstr(why, "buffer 1's adjoint staged whole where it is stored between the same barriers"), "%s", why);
        free(u);
        src_close(&s);
    }
    /* the cross cell's backward at H = 2, P = 16: K1's backward, over P, adds to d(h) and d(c), which
     * K2's, over H, stored earlier in the step; with the barriers between them taken out, the check
     * fails (the step's opening barrier, which the generator puts where states cross blocks, is not
     * needed here: nothing after the step's last barrier stores what the step's start reads) */
    {
        static const char *const dims[] = {"I=8", "H=2", "P=16"};
        static const char *const before_gemms = "++epoch);  // the transposed GEMMs read every block's adjoints",
                                 *before_k1 = "++epoch);  // the group before reads operand adjoints";
        Src s;
        src_open(&s, "cross.cell", cross_cell);
        char *u = backward_unit16(&s, dims, 3);
        int n = 0;
        ck_assert_msg(backward_adjoints_read_own(u, &n, why, sizeof why), "%s", why);
        barrier_out(u, "++epoch);  // step t+1 is complete everywhere", 0);
        ck_assert_msg(backward_adjoints_read_own(u, &n, why, sizeof why), "%s", why);
        /* K1, over P, reads d(g h), which U^T's rows stored over H; the barrier between them taken out */
        barrier_out(u, before_k1, 0);
        ck_assert(!backward_adjoints_read_own(u, &n, why, sizeof why));
        ck_assert_msg(strstr(why, "buffer 4's adjoint stored over 2 and accessed over 16 between two barriers"), "%s", why);
        barrier_out(u, before_k1, 1);
        barrier_out(u, before_gemms, 0);
        barrier_out(u, before_k1, 0);
        ck_assert(!backward_adjoints_read_own(u, &n, why, sizeof why));
        ck_assert_msg(strstr(why, "state 0's adjoint stored over 16 and accessed over 2 between two barriers"), "%s", why);
        free(u);
        src_close(&s);
    }
    SweepShare share[2];
    const int shares = sweep_shares(share, 2);
    int units = 0, states = 0, reads = 0, stagings = 0, bunits = 0, fetches = 0, adjoints = 0, direct = 0, bdirect = 0;
    for (int k = 0; k < shares; k++) {
        units += share[k].units, states += share[k].states, reads += share[k].reads, stagings += share[k].stagings;
        bunits += share[k].bunits, fetches += share[k].fetches, adjoints += share[k].adjoints, direct += share[k].direct;
        bdirect += share[k].bdirect;
    }
    ck_assert_int_gt(units, 2000);
    ck_assert_int_gt(states, 1000); /* the checks are not vacuous: early state loads were checked */
    ck_assert_int_gt(reads, 1000);  /* and step GEMMs' results read */
    ck_assert_int_gt(bunits, 1000);
    ck_assert_int_gt(fetches, 1000); /* and backward fetches */
    ck_assert_int_gt(adjoints, 1000); /* and adjoints read */
    ck_assert_int_gt(stagings, 1000); /* and operands staged */
    ck_assert_int_gt(direct, 500);    /* some of them loaded straight into registers */
    ck_assert_int_gt(bdirect, 500);   /* backwards too */
    printf("persistent_early_loads_are_own_values: %d forward units (%d loading operands straight), %d state loads, %d results, "
           "%d stagings; %d backward units (%d loading straight), %d fetches, %d adjoints read\n", units, direct, states, reads,
           stagings, bunits, bdirect, fetches, adjoints);
}
END_TEST

/* The tile follows the request: warps a block (4, 8, 16; chunks in whole shares of them),
 * staging chunks no longer than asked, no more sequences a pass than asked; anything else is
 * refused with a reason. Plans of one request are the same tile, of another not. */
START_TEST(persistent_tiles_follow_the_ask) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=1024", "H=1024"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P, Q;
    char why[256], tile[160];
    for (int w = 4; w <= 16; w *= 2)
        for (int backward = 0; backward < 2; backward++) {
            CgPersistAsk ask = cg_persist_h100_ask(4, backward, 0, 1);
            ask.warps = w;
            ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
            ck_assert_int_eq(P.warps, w);
            ck_assert_int_le(P.smem, CG_H100_SMEM);
            char words[32];
            snprintf(words, sizeof words, "132 blocks of %d warps, ", w);
            ck_assert_msg(strstr(why, words), "%s", why);
        }
    CgPersistAsk ask = cg_persist_h100_ask(4, 0, 0, 1);
    ask.warps = 5;
    ck_assert_int_eq(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), 0);
    ck_assert_str_eq(why, "5 warps a block; the persistent kernel takes 4, 8 or 16");
    ask = cg_persist_h100_ask(4, 0, 0, 1);
    ask.kc_cap = 100;
    ck_assert_int_eq(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), 0);
    ck_assert_str_eq(why, "staging chunks of 100 columns; at least 256");
    /* the rule stages H = 1024 whole; asked for chunks of 512, two of them a pass */
    ask = cg_persist_h100_ask(4, 0, 0, 1);
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &Q, why, sizeof why));
    ck_assert_int_eq(Q.gemms[0].chunks, 1);
    ask.kc_cap = 512;
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why));
    ck_assert_int_eq(P.gemms[0].kc, 512);
    ck_assert_int_eq(P.gemms[0].chunks, 2);
    ck_assert_int_eq(P.tiles, 2);
    ck_assert(!cg_persist_same_tile(&P, &Q));
    cg_persist_tile_text(&P, tile, sizeof tile);
    ck_assert_str_eq(tile, "132 blocks of 8 warps, 4 sequences a pass, staged in chunks of 512");
    cg_persist_tile_text(&Q, tile, sizeof tile);
    ck_assert_str_eq(tile, "132 blocks of 8 warps, 4 sequences a pass, operands staged whole");
    { /* where some GEMMs load straight and the others stage, the text says how the others stage (the plan's
       * fields as a cell of two step GEMMs would have them) */
        CgPersist M = P;
        CgPersistGemm two[2] = {P.gemms[0], P.gemms[0]};
        M.ngemms = 2;
        M.gemms = two;
        M.gemms[0].direct = 1;
        M.direct = 1;
        cg_persist_tile_text(&M, tile, sizeof tile);
        ck_assert_str_eq(tile, "132 blocks of 8 warps, 4 sequences a pass, some operands loaded straight into registers, "
                               "the others staged in chunks of 512");
        M.tiles = 1;
        cg_persist_tile_text(&M, tile, sizeof tile);
        ck_assert_str_eq(tile, "132 blocks of 8 warps, 4 sequences a pass, some operands loaded straight into registers, "
                               "the others staged whole");
    }
    ask.kc_cap = 0;
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why));
    ck_assert(cg_persist_same_tile(&P, &Q));
    /* "at most K": whole 256s of it (700: 512), or the operand whole when K reaches past it */
    ask.kc_cap = 700;
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why));
    ck_assert_int_eq(P.gemms[0].kc, 512);
    ask.kc_cap = 65536;
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why));
    ck_assert(cg_persist_same_tile(&P, &Q));
    /* fewer sequences a pass than the class (32), never below whole mma tiles (8) */
    for (int tf32 = 0; tf32 < 2; tf32++) {
        ask = cg_persist_h100_ask(32, 0, tf32, 2);
        ask.nw_max = 1;
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_int_eq(P.nw_class, 8);
        ck_assert_int_eq(P.nw, tf32 ? 2 : 1);
        ck_assert_int_eq(P.cluster, 2);
        cg_persist_tile_text(&P, tile, sizeof tile);
        ck_assert_str_eq(tile, tf32 ? "132 blocks of 8 warps in clusters of 2, 8 sequences a pass, operands staged whole"
                                    : "132 blocks of 8 warps in clusters of 2, 4 sequences a pass, operands staged whole");
    }
    src_close(&s);
}
END_TEST

/* A model too large for the chip gets no persistent kernel, and the reason gives the sizes. */
START_TEST(persistent_plan_says_why_not) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=8", "H=2048"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    for (int backward = 0; backward < 2; backward++) {
        for (int tf32 = 0; tf32 < 2; tf32++) {
            ck_assert_ptr_null(emit_persistent(&s, L, cg_persist_h100_ask(4, backward, tf32, 1 + tf32), &P, why, sizeof why));
            ck_assert_msg(strstr(why, "step weights 67.1 MB need") && strstr(why, "a block has 227 KB"), "%s", why);
        }
        /* 16-bit weights take half the bytes, still too many */
        ck_assert_ptr_null(emit_persistent(&s, L, cg_persist_h100_ask(4, backward, CG_BF16, 1), &P, why, sizeof why));
        ck_assert_msg(strstr(why, "step weights 33.6 MB need") && strstr(why, "a block has 227 KB"), "%s", why);
        CgPersistAsk odd = cg_persist_h100_ask(4, backward, CG_FFMA, 1);
        odd.products = (CgProducts)7;
        ck_assert_int_eq(cg_persist_plan(&s.arena, L, &odd, &P, why, sizeof why), 0);
        ck_assert_str_eq(why, "products 7; the persistent kernel takes fp32, tf32, fp16 or bf16");
        CgPersistAsk none = cg_persist_h100_ask(4, backward, 0, 1);
        none.sms = 0;
        ck_assert_int_eq(cg_persist_plan(&s.arena, L, &none, &P, why, sizeof why), 0);
        ck_assert_msg(strstr(why, "no device"), "%s", why);
    }
    src_close(&s);
}
END_TEST

/* When the batch class's sequences a pass do not fit (DeepBench's LSTM, 32 sequences, tf32), the
 * plan takes fewer a pass, but still serves the whole class: results kept on chip for a bounded
 * number of sequences cover every batch of the class. */
START_TEST(persistent_plan_narrows_passes) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=1024", "H=1024"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    for (int64_t N = 17; N <= 64; N += 47) {
        CgPersistAsk ask = cg_persist_h100_ask(N, 0, 1, 1);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_int_eq(P.nw_class, 8);
        ck_assert_int_eq(P.nw, 4);
        ck_assert_int_le(P.smem, CG_H100_SMEM);
        ck_assert(P.gemms[0].res_cap == 0 || P.gemms[0].res_cap == 64);
    }
    CgPersistAsk ask = cg_persist_h100_ask(12, 0, 1, 1);
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why));
    ck_assert_int_eq(P.nw_class, 4);
    ck_assert(P.gemms[0].res_cap == 0 || P.gemms[0].res_cap >= 16);
    ask = cg_persist_h100_ask(32, 0, 0, 1);
    ck_assert(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why));
    /* FFMA's narrower row padding, but its partial sums padded for conflict-free stores (persist.cuh's
     * red_ld: 8 KB more at 32 sequences a pass): it narrows too, keeping results on chip */
    ck_assert_int_eq(P.nw, 4);
    ck_assert_int_eq(P.gemms[0].res_cap, 64);
    for (int bf = 0; bf < 2; bf++) { /* 16-bit weights (half the bytes) fit the whole class too */
        ask = cg_persist_h100_ask(64, 0, bf ? CG_BF16 : CG_F16, 1);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_int_eq(P.nw, 8);
        ck_assert_int_eq(P.weight_bytes, 2 * 4096LL * 1024);
        ck_assert_msg(strstr(why, "step weights 8.4 MB fit on chip") && strstr(why, bf ? "bf16 tensor-core" : "fp16 tensor-core"),
                      "%s", why);
    }
    src_close(&s);
}
END_TEST

/* A forward whose rows are not whole 16-byte pieces copies its weights 4 bytes at a time (fp32
 * rows, H=71) or loads 8 halves a thread at once (16-bit rows, H=71 and H=76), 16 bytes a copy
 * where they are whole (H=72; H=76 in fp32), rounds them in tf32 in the copy's own mapping, and
 * compiles; a 16-bit model stages h from its twin only where its rows are whole (H=72), the
 * backward d(G1) where 4H is whole (H=72, 76). The backward's columns (H long) go through
 * rnn_load_transposed where they are whole pieces, element by element elsewhere, and compile. */
START_TEST(persistent_odd_rows_copied_by_words) {
    for (int odd = 0; odd < 3; odd++)
        for (int products = CG_FFMA; products <= CG_F16; products++) {
            Src s;
            src_open_file(&s, "cells/lstm.cell");
            const char *dims[] = {"I=40", odd == 2 ? "H=76" : odd ? "H=71" : "H=72"};
            PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
            CgPersist P;
            char why[256];
            char *u = emit_persistent(&s, L, cg_persist_h100_ask(7, 0, (CgProducts)products, 1), &P, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            /* 16-byte pieces are 4 floats or 8 halves: H=76 is whole in floats only */
            int whole = products == CG_F16 ? odd == 0 : odd != 1;
            ck_assert_int_eq(strstr(u, "rnn_cp4(&w") != NULL, !whole && products != CG_F16);
            ck_assert_int_eq(strstr(u, "rnn_cp16(&w") != NULL, whole);
            ck_assert_int_eq(strstr(u, "unsigned short v[8];") != NULL, !whole && products == CG_F16);
            weights_rounded_by_their_copier(u, P.ngemms, products == CG_TF32, dims[1]);
            if (!whole) compile_ok(u, dims[1], "sm_90");
            free(u);
            if (products == CG_F16) { /* as a 16-bit model plans it: h staged from its twin where its rows are whole */
                CgPersistAsk ask = cg_persist_h100_ask(7, 0, CG_F16, 1);
                ask.twins = 1;
                u = emit_persistent(&s, L, ask, &P, why, sizeof why);
                ck_assert_msg(u, "%s", why);
                ck_assert_int_eq(P.gemms[0].x16, whole);
                ck_assert_int_eq(strstr(u, ", rnn_x16_0, RNN_DIM_H, ") != NULL, whole);
                free(u);
                /* the backward stages d(G1) ([N][4H]) from its twin where 4H is whole 8-half pieces (H=72, 76) */
                ask.backward = 1;
                u = emit_persistent(&s, L, ask, &P, why, sizeof why);
                ck_assert_msg(u, "%s", why);
                ck_assert_int_eq(P.gemms[0].x16, odd != 1);
                ck_assert_int_eq(strstr(u, ", a.dbuf16[1], ") != NULL, odd != 1);
                if (odd == 2) compile_ok(u, dims[1], "sm_90");
                free(u);
            }
            /* the backward's columns (H long): by rnn_load_transposed where H is whole 16-byte pieces (in halves
             * H=72; in floats H=72 and 76), else element by element (odd rows: always) */
            CgPersistAsk back = cg_persist_h100_ask(7, 1, (CgProducts)products, 1);
            back.twins = products == CG_F16;
            u = emit_persistent(&s, L, back, &P, why, sizeof why);
            ck_assert_msg(u, "%s", why);
            ck_assert_int_eq(weights_rounded_by_their_copier(u, P.ngemms, products == CG_TF32, dims[1]), whole ? P.ngemms : 0);
            ck_assert_int_eq(strstr(u, "rnn_cp4(&w") != NULL, !whole && products != CG_F16);
            ck_assert_int_eq(strstr(u, "unsigned short v[8];") != NULL, !whole && products == CG_F16);
            compile_ok(u, dims[1], "sm_90");
            free(u);
            src_close(&s);
        }
}
END_TEST

/* The premise of the runtime's fallback from the rule's fours to pairs (rt_persist.c, bench/NOTES.md
 * section 52): an fp16 LSTM forward at 16 sequences in the 30 clusters of 4 an H100 holds at once
 * (120 blocks) keeps its step weights in registers at H = 768 but not at H = 1024, where pairs at 132
 * blocks do. */
START_TEST(persistent_fours_hold_weights_or_pairs_do) {
    for (int wide = 0; wide < 2; wide++) {
        Src s;
        src_open_file(&s, "cells/lstm.cell");
        const char *dims[] = {"I=8", wide ? "H=1024" : "H=768"};
        PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
        CgPersist P;
        char why[512];
        CgPersistAsk ask = cg_persist_h100_ask(16, 0, CG_F16, 0);
        ck_assert_int_eq(ask.cluster, 4);
        ask.sms = 120;
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_msg(P.cluster == 4 && P.blocks == 120, "%s", why);
        ck_assert_msg((cg_persist_held_registers(&P) == 0) == wide, "%s", why);
        ask = cg_persist_h100_ask(16, 0, CG_F16, 2);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_msg(P.cluster == 2 && P.blocks == 132 && cg_persist_held_registers(&P) > 0, "%s", why);
        src_close(&s);
    }
}
END_TEST

/* The rule's tile of a backward: pairs splitting K at 17-32 sequences in every precision (measured,
 * bench/NOTES.md section 33), fours splitting K at 9-16 on tensor cores (section 58); not at 8 or
 * fewer, not FFMA at 16 or fewer, not above 32, not forward. */
START_TEST(persistent_rule_splits_a_backward_of_17_to_32) {
    ck_assert_int_eq(cg_persist_split(17, CG_FFMA, 1), 1);
    ck_assert_int_eq(cg_persist_split(32, CG_F16, 1), 1);
    ck_assert_int_eq(cg_persist_split(16, CG_FFMA, 1), 0);
    ck_assert_int_eq(cg_persist_split(16, CG_TF32, 1), 1);
    ck_assert_int_eq(cg_persist_split(9, CG_BF16, 1), 1);
    ck_assert_int_eq(cg_persist_split(8, CG_F16, 1), 0);
    ck_assert_int_eq(cg_persist_split(33, CG_F16, 1), 0);
    ck_assert_int_eq(cg_persist_split(32, CG_F16, 0), 0);
    ck_assert_int_eq(cg_persist_split(16, CG_F16, 0), 0);
    ck_assert_int_eq(cg_persist_cluster(32, CG_TF32, 1, CG_HANDOFF_BARRIER), 2);
    ck_assert_int_eq(cg_persist_cluster(17, CG_F16, 1, CG_HANDOFF_BARRIER), 2);
    ck_assert_int_eq(cg_persist_cluster(32, CG_TF32, 0, CG_HANDOFF_BARRIER), 1);
    ck_assert_int_eq(cg_persist_cluster(33, CG_F16, 1, CG_HANDOFF_BARRIER), 1);
    /* a forward's tensor cores at 9-24 sequences in fours (section 52), a backward's at 9-16 in fours
     * and 17-32 in pairs; FFMA in pairs; a forward handing off by flags in none */
    ck_assert_int_eq(cg_persist_cluster(8, CG_F16, 0, CG_HANDOFF_BARRIER), 1);
    ck_assert_int_eq(cg_persist_cluster(8, CG_F16, 1, CG_HANDOFF_BARRIER), 1);
    ck_assert_int_eq(cg_persist_cluster(9, CG_TF32, 0, CG_HANDOFF_BARRIER), 4);
    ck_assert_int_eq(cg_persist_cluster(24, CG_F16, 0, CG_HANDOFF_BARRIER), 4);
    ck_assert_int_eq(cg_persist_cluster(16, CG_BF16, 1, CG_HANDOFF_BARRIER), 4);
    ck_assert_int_eq(cg_persist_cluster(9, CG_TF32, 1, CG_HANDOFF_BARRIER), 4);
    ck_assert_int_eq(cg_persist_cluster(25, CG_TF32, 0, CG_HANDOFF_BARRIER), 1);
    ck_assert_int_eq(cg_persist_cluster(16, CG_FFMA, 0, CG_HANDOFF_BARRIER), 2);
    ck_assert_int_eq(cg_persist_cluster(16, CG_F16, 0, CG_HANDOFF_FLAGS), 1);
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=8", "H=1024"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[512];
    static const struct { int64_t N; CgProducts products; int cluster, split; } rows[] = {
        {32, CG_F16, 2, 1}, {20, CG_TF32, 2, 1}, {16, CG_F16, 4, 1}, {32, CG_FFMA, 2, 1}, {16, CG_FFMA, 2, 0}};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        CgPersistAsk ask = cg_persist_h100_ask(rows[i].N, 1, rows[i].products, 0);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_msg(P.cluster == rows[i].cluster && P.split == rows[i].split, "row %zu: %s", i, why);
        ck_assert_msg(!strstr(why, "splitting K") == !rows[i].split, "row %zu: %s", i, why);
    }
    /* a cluster size given (rnncc emit --cluster, RNNCC_PERSIST_CLUSTER) leaves the split to its own option */
    CgPersistAsk ask = cg_persist_h100_ask(32, 1, CG_F16, 2);
    ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
    ck_assert_int_eq(P.split, 0);
    /* fours splitting K on the 120 blocks an H100 holds at once: 9 of H = 1024's elements a block, the
     * cluster's 36 rows in one tensor-core pass of 40 (five row groups); FFMA passes stay at 32 rows */
    ask = cg_persist_h100_ask(32, 1, CG_F16, 4);
    ask.split = 1;
    ask.sms = CG_H100_FOUR_BLOCKS;
    ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
    ck_assert_msg(P.split && P.cluster == 4 && P.blocks == 120 && P.gemms[0].ro == 9 && P.gemms[0].passes == 1 &&
                      P.gemms[0].rw == 5 && P.nw == 8, "%s", why);
    ask.twins = 1;
    char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
    ck_assert_msg(u && strstr(u, "rnn_mv_mma<5, 8, 2, 1, 52>"), "%s", why); /* the red stride: 40 rows padded, % 16 == 4 */
    if (!SANITIZED) compile_ok(u, "lstm", "sm_90a");
    free(u);
    /* where the rule's fours cannot split K (H = 1344: 12 elements a block on 120 blocks, 48 rows), they
     * yield to the rule's pairs, sharing the operand at 16 sequences, splitting K at 17-32 */
    const char *wider[] = {"I=8", "H=1344"};
    PlanLayout *Lw = layout_bound(&s, s.module->cells[0], wider, 2);
    for (int n = 16; n <= 32; n += 16) {
        CgPersistAsk rule = cg_persist_h100_ask(n, 1, CG_F16, 0);
        ck_assert_int_eq(rule.cluster, n == 16 ? 4 : 2);
        int in_pairs = 0;
        ck_assert_msg(cg_persist_h100_plan(&s.arena, Lw, &rule, 1, &P, why, sizeof why, &in_pairs), "%s", why);
        ck_assert_msg(P.cluster == 2 && P.split == (n > 16) && in_pairs == (n == 16), "N = %d: %s", n, why);
        ck_assert_str_eq(cg_persist_pairs_reason(&P), "its clusters of 4 could not split K");
    }
    CgPersistAsk rule = cg_persist_h100_ask(16, 1, CG_F16, 0); /* at H = 1024 the fours split K: no yield */
    int in_pairs = 0;
    ck_assert_msg(cg_persist_h100_plan(&s.arena, L, &rule, 1, &P, why, sizeof why, &in_pairs), "%s", why);
    ck_assert_msg(P.cluster == 4 && P.split && !in_pairs, "%s", why);
    const char *half_wide[] = {"I=8", "H=512"}; /* FFMA: 9 elements a block on 60 blocks, 36 rows: refused */
    ask = cg_persist_h100_ask(32, 1, CG_FFMA, 4);
    ask.split = 1;
    ask.sms = 60;
    ck_assert_msg(cg_persist_plan(&s.arena, layout_bound(&s, s.module->cells[0], half_wide, 2), &ask, &P, why, sizeof why),
                  "%s", why);
    ck_assert_msg(!P.split && strstr(why, "(2048, 9 rows a block) not split: the cluster's rows take two passes or more"),
                  "%s", why);
    src_close(&s);
}
END_TEST

/* The tf32 forward at 33-64 sequences is persistent only where the plan passes 32 sequences at
 * once (H=512), not 16 (H=1024); fp32 up to 64 either way; beyond 64 never; a bidirectional
 * layer's or a stack's forward (whose per-step layers overlap) up to 32. */
START_TEST(persistent_rule_reads_the_plan) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    CgPersist P;
    char why[256], rule[200];
    for (int wide = 0; wide < 2; wide++) {
        const char *dims[] = {"I=8", wide ? "H=1024" : "H=512"};
        PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
        CgPersistAsk ask = cg_persist_h100_ask(48, 0, 1, 1);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_int_eq(P.nw, wide ? 4 : 8);
        ck_assert_int_eq(cg_persist_preferred(48, 1, 0, CG_ALONE, NULL, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(48, 1, 0, CG_ALONE, &P, rule, sizeof rule), !wide);
        if (wide) ck_assert_str_eq(rule, "batch 48 > 32 (tf32) in passes of 16 sequences (not 32), where per-step "
                                         "tensor-core GEMMs win");
        ck_assert_int_eq(cg_persist_preferred(32, 1, 0, CG_ALONE, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(48, 0, 0, CG_ALONE, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(65, 1, 0, CG_ALONE, NULL, rule, sizeof rule), 0);
        ck_assert_int_eq(cg_persist_preferred(32, CG_FFMA, 1, CG_ALONE, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(33, CG_FFMA, 1, CG_ALONE, &P, rule, sizeof rule), 0);
        ck_assert_str_eq(rule, "batch 33 > 32 (fp32, backward), where per-step cuBLAS GEMMs win");
        /* a lone backward: up to 32 sequences in every precision; beside another direction or layer, 16 */
        ck_assert_int_eq(cg_persist_preferred(32, CG_TF32, 1, CG_ALONE, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(33, CG_TF32, 1, CG_ALONE, &P, rule, sizeof rule), 0);
        ck_assert_str_eq(rule, "batch 33 > 32 (tf32, backward), where per-step tensor-core GEMMs win");
        ck_assert_int_eq(cg_persist_preferred(17, CG_TF32, 1, CG_BIDIRECTIONAL, &P, rule, sizeof rule), 0);
        ck_assert_int_eq(cg_persist_preferred(32, CG_F16, 1, CG_ALONE, NULL, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(32, CG_BF16, 1, CG_ALONE, NULL, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(33, CG_F16, 1, CG_ALONE, NULL, rule, sizeof rule), 0);
        ck_assert_str_eq(rule, "batch 33 > 32 (fp16, backward), where per-step tensor-core GEMMs win");
        ck_assert_int_eq(cg_persist_preferred(17, CG_BF16, 1, CG_WAVEFRONT, NULL, rule, sizeof rule), 0);
        ck_assert_int_eq(cg_persist_preferred(17, CG_F16, 1, CG_BIDIRECTIONAL, NULL, rule, sizeof rule), 0);
        /* a bidirectional layer: up to 32 sequences forward (its two kernels take the GPU in turn);
         * fp32 at H=512, tf32 at H=1024 */
        ck_assert_int_eq(cg_persist_preferred(32, wide, 0, CG_BIDIRECTIONAL, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(33, wide, 0, CG_BIDIRECTIONAL, &P, rule, sizeof rule), 0);
        ck_assert_str_eq(rule, wide ? "batch 33 > 32 (tf32, bidirectional), where per-step tensor-core GEMMs win"
                                    : "batch 33 > 32 (fp32, bidirectional), where per-step cuBLAS GEMMs win");
        ck_assert_int_eq(cg_persist_preferred(16, wide, 1, CG_BIDIRECTIONAL, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(64, wide, 0, CG_WAVEFRONT, &P, rule, sizeof rule), 0);
        ck_assert_msg(strstr(rule, "batch 64 > 32 (") && strstr(rule, ", stacked)"), "%s", rule);
        ck_assert_int_eq(cg_persist_preferred(32, wide, 0, CG_WAVEFRONT, &P, rule, sizeof rule), 1);
        /* 16-bit weights: a pass takes 32 sequences at H=1024 too */
        ask = cg_persist_h100_ask(48, 0, CG_F16, 1);
        ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
        ck_assert_int_eq(P.nw, 8);
        ck_assert_int_eq(cg_persist_preferred(48, CG_F16, 0, CG_ALONE, &P, rule, sizeof rule), 1);
        ck_assert_int_eq(cg_persist_preferred(65, CG_BF16, 0, CG_ALONE, &P, rule, sizeof rule), 0);
        ck_assert_str_eq(rule, "batch 65 > 64 (bf16), where per-step tensor-core GEMMs win");
    }
    src_close(&s);
}
END_TEST

/* Clusters share staged operands only when the tiles' elements past K stay zero: a projection
 * LSTM whose two step GEMMs stage rows of 100 and 128 (one with a tail, laid out unlike the other)
 * is planned without them; with both 128 long, in pairs. */
START_TEST(persistent_clusters_need_alike_tails) {
    Src s;
    src_open_file(&s, "cells/lstmp.cell");
    const char *tail[] = {"I=8", "H=128", "P=100"}, *even[] = {"I=8", "H=128", "P=128"};
    CgPersist P;
    char why[256];
    CgPersistAsk ask = cg_persist_h100_ask(4, 0, 0, 2);
    ck_assert_msg(cg_persist_plan(&s.arena, layout_bound(&s, s.module->cells[0], tail, 3), &ask, &P, why, sizeof why), "%s", why);
    ck_assert_int_eq(P.cluster, 1);
    ck_assert_msg(!strstr(why, "in clusters"), "%s", why);
    ck_assert_msg(cg_persist_plan(&s.arena, layout_bound(&s, s.module->cells[0], even, 3), &ask, &P, why, sizeof why), "%s", why);
    ck_assert_int_eq(P.cluster, 2);
    ck_assert_msg(strstr(why, "in clusters of 2"), "%s", why);
    src_close(&s);
}
END_TEST

/* A 16-bit persistent backward that stages its result adjoints from their twins lets the kernels store
 * the twins alone (RnnArgs.twins_only); not with fp32 staging (no twins asked for, or rows that are not
 * whole 16-byte pieces: 4H = 1004), nor tf32 products, nor a forward. */
START_TEST(persistent_backward_twins_staged) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=64", "H=256"}, *odd[] = {"I=64", "H=251"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2), *Lodd = layout_bound(&s, s.module->cells[0], odd, 2);
    CgPersist P;
    char why[512];
    static const struct { int odd, backward, twins; CgProducts products; int staged; } rows[] = {
        {0, 1, 1, CG_F16, 1}, {0, 1, 1, CG_BF16, 1}, {0, 1, 0, CG_F16, 0}, {1, 1, 1, CG_F16, 0},
        {0, 1, 0, CG_TF32, 0}, {0, 0, 1, CG_F16, 0}};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        CgPersistAsk ask = cg_persist_h100_ask(16, rows[i].backward, rows[i].products, 0);
        ask.twins = rows[i].twins;
        const PlanLayout *l = rows[i].odd ? Lodd : L;
        ck_assert_msg(cg_persist_plan(&s.arena, l, &ask, &P, why, sizeof why), "row %zu: %s", i, why);
        ck_assert_msg(cg_persist_twins_staged(l->plan, &P) == rows[i].staged, "row %zu: %s", i, why);
    }
    src_close(&s);
}
END_TEST

/* A backward's clusters split K where asked (CgPersistAsk.split): each block keeps the cluster's
 * rows (ro apart) for its part of K in whole grains, the unit defines RNN_SPLIT (not RNN_CLUSTER),
 * offsets the operand by its part and exchanges through rnn_sp; it compiles. Refused, with the
 * reason, where K leaves a block no part (the cluster shares its copies instead) or the cluster's
 * rows take two passes (no clusters: these cannot share either); a forward keeps sharing its copies. */
START_TEST(persistent_backward_splits_k) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=1024", "H=1024"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    for (int c = 2; c <= 4; c *= 2) {
        CgPersistAsk ask = cg_persist_h100_ask(32, 1, CG_F16, c);
        ask.split = 1;
        ask.twins = 1;
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        ck_assert_int_eq(P.cluster, c);
        ck_assert_int_eq(P.split, 1);
        ck_assert_msg(strstr(why, "splitting K"), "%s", why);
        ck_assert_int_eq(P.gemms[0].kfull, 4096);
        ck_assert_int_eq(P.gemms[0].K, 4096 / c);
        ck_assert_int_eq(P.gemms[0].ro, 8);  /* 1024 elements on 132 blocks: 8 at most */
        ck_assert_int_eq(P.gemms[0].rows, 8 * c);
        ck_assert_int_eq(P.gemms[0].passes, 1);
        char want[128];
        snprintf(want, sizeof want, "#define RNN_SPLIT %d  //", c);
        ck_assert_msg(strstr(u, want), "%s", want);
        ck_assert_ptr_null(strstr(u, "#define RNN_CLUSTER 2"));
        ck_assert_ptr_null(strstr(u, "#define RNN_CLUSTER 4"));
        snprintf(want, sizeof want, "a.dbuf16[1] + rnn_rank * %d, 4096, a.N", 4096 / c);
        ck_assert_msg(strstr(u, want), "%s", want);
        /* the weights' A fragments of its part of K in registers: 8 steps of one 16-row tile (pairs), 4 of two (fours) */
        ck_assert_int_eq(P.gemms[0].wregs, 8 / (c / 2));
        ck_assert_ptr_nonnull(strstr(u, "map1 + rnn_rank * 8, a.lengths != NULL, NULL, 0, RNN_TO_OUT, &rnn_sp, &rnn_wf1);"));
        if (!SANITIZED) compile_ok(u, "lstm", "sm_90a");
        free(u);
        /* its exchange: staged, the cluster meets, and the unit holds no mbarrier (any would put a MEMBAR.ALL.CTA
         * before each release fence's MEMBAR.ALL.GPU: +23% a deepbench pass, bench/NOTES.md section 109); loading
         * its operands straight (pairs: fours at 32 sequences hold no weights in registers, so stage), by st.async
         * counted on the owner's transaction barriers (RNN_SPLIT_ASYNC) */
        for (int direct = 0; direct <= (c == 2); direct++) {
            ask.handoff = direct ? CG_HANDOFF_DIRECT : CG_HANDOFF_BARRIER;
            u = emit_persistent(&s, L, ask, &P, why, sizeof why);
            ck_assert_msg(u && P.split && P.direct == direct, "%s", why);
            ck_assert_int_eq(strstr(u, "\n#define RNN_SPLIT_ASYNC 1  //") != NULL, direct);
            if (!SANITIZED) {
                RtNvrtcResult res;
                ck_assert_int_eq(rt_nvrtc_compile(u, "lstm", RT_NVRTC_PTX, "sm_90a", &res), RT_NVRTC_OK);
                ck_assert_int_eq(strstr(res.image, "mbarrier.") != NULL, direct);
                ck_assert_int_eq(strstr(res.image, "st.async.shared::cluster.mbarrier::complete_tx::bytes") != NULL, direct);
                rt_nvrtc_result_free(&res);
            }
            free(u);
        }
    }
    CgPersistAsk ask = cg_persist_h100_ask(32, 0, CG_F16, 2); /* the forward: copies shared */
    ask.split = 1;
    ck_assert_msg(cg_persist_plan(&s.arena, L, &ask, &P, why, sizeof why), "%s", why);
    ck_assert(P.cluster == 2 && !P.split);
    const char *narrow[] = {"I=1024", "H=1328"}; /* 11 elements a block: four blocks' 44 rows take two passes (40 a tensor-core pass) */
    ask = cg_persist_h100_ask(8, 1, CG_F16, 4);
    ask.split = 1;
    ck_assert_msg(cg_persist_plan(&s.arena, layout_bound(&s, s.module->cells[0], narrow, 2), &ask, &P, why, sizeof why),
                  "%s", why);
    ck_assert_int_eq(P.cluster, 1);
    ck_assert_msg(strstr(why, "clusters of 4 refused: G1's K (5312, 11 rows a block) not split: the cluster's rows take two passes"), "%s", why);
    const char *small[] = {"I=8", "H=16"}; /* 4H = 64: the second block of a pair would get no part of K */
    ask = cg_persist_h100_ask(4, 1, CG_FFMA, 2);
    ask.split = 1;
    ck_assert_msg(cg_persist_plan(&s.arena, layout_bound(&s, s.module->cells[0], small, 2), &ask, &P, why, sizeof why),
                  "%s", why);
    ck_assert(P.cluster == 2 && !P.split); /* the pair shares its copies instead */
    ck_assert_msg(strstr(why, " in clusters of 2, ") && strstr(why, "; G1's K (64, 1 rows a block) not split: a block would get no part of it"),
                  "%s", why);
    src_close(&s);
}
END_TEST

/* A tile whose product holds its weights in registers is staged in waves (the plan's
 * CgPersistGemm.waves, persist.cuh rnn_stage_copies: up to four commit groups, the k loop waiting for
 * each at its first step) where the block stages its own copies and a pass holds at least 16
 * sequences; in one go with clusters sharing the copies (multicast), with flagged words or at 8
 * sequences a pass. Read from the plan, its words and the units' PTX: the waits that leave 3 and 2
 * groups in flight. */
START_TEST(persistent_tiles_staged_in_waves) {
    if (SANITIZED) return; /* NVRTC under the sanitizers: as compile_ok */
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=1024", "H=1024"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    static const struct { int64_t N; int backward, cluster, split, flags, waves; } rows[] = {
        {32, 0, 1, 0, 0, 1}, /* deepbench's forward: 4 steps of k a warp, four waves of one */
        {32, 1, 2, 1, 0, 1}, /* its backward, pairs splitting K: 8 steps, four waves of two */
        {16, 0, 1, 0, 0, 1}, /* 16 a pass */
        {32, 0, 2, 0, 0, 0}, /* pairs sharing the copies */
        {16, 0, 1, 0, 1, 0}, /* flagged words */
        {4, 0, 1, 0, 0, 0},  /* small_b4: 8 a pass */
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        CgPersistAsk ask = cg_persist_h100_ask(rows[i].N, rows[i].backward, CG_F16, rows[i].cluster);
        ask.split = rows[i].split;
        ask.handoff = rows[i].flags ? CG_HANDOFF_FLAGS : CG_HANDOFF_BARRIER;
        ask.twins = 1; /* as the runtime asks in fp16 */
        CgPersist P;
        char why[256];
        char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
        ck_assert_msg(u, "row %zu: %s", i, why);
        ck_assert_msg(P.gemms[0].wregs > 0 && P.cluster == rows[i].cluster && P.flags == rows[i].flags,
                      "row %zu: wregs %d, clusters of %d, flags %d: %s", i, P.gemms[0].wregs, P.cluster, P.flags, why);
        /* the plan decides (CgPersistGemm.waves), and its words say so */
        char tile[160];
        cg_persist_tile_text(&P, tile, sizeof tile);
        ck_assert_int_eq(P.gemms[0].waves, rows[i].waves ? 4 : 0);
        ck_assert_msg(!!strstr(tile, "operands staged whole in 4 waves") == rows[i].waves, "row %zu: %s", i, tile);
        ck_assert_msg(!!strstr(why, "operands staged whole in 4 waves") == rows[i].waves, "row %zu: %s", i, why);
        /* asked (RNNCC_PERSIST_WAVES, emit --waves): none, or at most 2 */
        for (int asked = -1; asked <= 2 && rows[i].waves; asked += 3) {
            CgPersistAsk capped = ask;
            capped.waves = asked;
            CgPersist Q;
            ck_assert(cg_persist_plan(&s.arena, L, &capped, &Q, why, sizeof why));
            ck_assert_int_eq(Q.gemms[0].waves, asked < 0 ? 0 : 2);
            cg_persist_tile_text(&Q, tile, sizeof tile);
            ck_assert_ptr_nonnull(strstr(tile, asked < 0 ? "operands staged whole" : "operands staged whole in 2 waves"));
            ck_assert_int_eq(asked < 0, strstr(tile, "waves") == NULL);
        }
        RtNvrtcResult res;
        ck_assert_int_eq(rt_nvrtc_compile(u, "lstm", RT_NVRTC_PTX, "sm_90a", &res), RT_NVRTC_OK);
        const int three = strstr(res.image, "cp.async.wait_group 3;") != NULL, two = strstr(res.image, "cp.async.wait_group 2;") != NULL;
        ck_assert_msg(three == rows[i].waves && two == rows[i].waves, "row %zu: waits for 3 groups %d, 2 groups %d", i, three, two);
        rt_nvrtc_result_free(&res);
        free(u);
    }
    src_close(&s);
}
END_TEST

/* Where no sequence ends, a state adjoint slot's first writer in a persistent backward step stores:
 * the LSTM's GEMM stores d(h) and its group d(c) (their zeroings only with a.lengths, c's home read
 * only then); the GRU's group stores d(h) and its GEMM adds; mLSTM's GEMM of h stores, that of m
 * adds; a state nobody reads keeps its zeroing every step (bench/NOTES.md section 62). */
static void first_writers_check(const char *u, int zeroed_always, int zeroed_with_lengths) {
    const char *always = strstr(u, "// the next step's state adjoints start at zero");
    const char *lengths = strstr(u, "if (args.lengths) {  // the next step's state adjoints its first writers");
    const char *group = strstr(u, "'s backward over this block's units");
    ck_assert_ptr_nonnull(group);
    ck_assert_int_eq(!!always, zeroed_always > 0);
    ck_assert_int_eq(!!lengths, zeroed_with_lengths > 0);
    ck_assert(!always || always < group);
    ck_assert(!lengths || lengths < group);
    char *head = between(u, "for (int t = args.t_end - 1; t >= args.t; t--) {", "'s backward over this block's units");
    char *tail = lengths ? between(lengths, "if (args.lengths) {", "'s backward over") : NULL;
    ck_assert_int_eq(count(head, "((t + 2) % 3) * args.N * "), zeroed_always + zeroed_with_lengths);
    if (tail) ck_assert_int_eq(count(tail, "((t + 2) % 3) * args.N * "), zeroed_with_lengths);
    free(head);
    free(tail);
}

START_TEST(persistent_backward_first_writers_store) {
    Src s;
    CgPersist P;
    char why[256];
    const char *dims[] = {"I=40", "H=72", "M=56"};
    src_open_file(&s, "cells/lstm.cell");
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    for (int prec = 0; prec < 2; prec++) {
        char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 1, prec ? CG_F16 : CG_FFMA, 1), &P, why, sizeof why);
        ck_assert_msg(u, "%s", why);
        first_writers_check(u, 0, 2);
        ck_assert_ptr_nonnull(strstr(u, "const float o2_c = a.lengths ? a.dstate_prev[1][n * RNN_DIM_H + j] : 0.0f;"));
        ck_assert_ptr_nonnull(strstr(u, "a.dstate_prev[1][n * RNN_DIM_H + j] = o2_c + d2_c;"));
        ck_assert_ptr_nonnull(strstr(u, "a.dstate_prev[0], RNN_DIM_H, map1, a.lengths != NULL, NULL, 0, RNN_TO_OUT"));
        /* the carries of ended sequences still add */
        ck_assert_ptr_nonnull(strstr(u, "a.dstate_prev[1][n * RNN_DIM_H + j] += a.dstate_next[1][n * RNN_DIM_H + j];"));
        if (!SANITIZED) compile_ok(u, "lstm", "sm_90");
        free(u);
    }
    char *u = emit_persistent(&s, L, cg_persist_h100_ask(16, 0, CG_F16, 1), &P, why, sizeof why); /* a forward: none */
    ck_assert_msg(u, "%s", why);
    ck_assert_ptr_null(strstr(u, "a.lengths != NULL"));
    ck_assert_ptr_null(strstr(u, ": 0.0f;  // this step's first to write it"));
    free(u);
    src_close(&s);

    src_open_file(&s, "cells/gru.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 2);
    u = emit_persistent(&s, L, cg_persist_h100_ask(16, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    first_writers_check(u, 0, 1);
    ck_assert_ptr_nonnull(strstr(u, "= a.lengths ? a.dstate_prev[0][n * RNN_DIM_H + j] : 0.0f;"));
    ck_assert_ptr_nonnull(strstr(u, "a.dstate_prev[0], RNN_DIM_H, map1, 1, NULL, 0, RNN_TO_OUT"));
    ck_assert_ptr_null(strstr(u, "a.lengths != NULL"));
    free(u);
    src_close(&s);

    src_open_file(&s, "cells/mlstm.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 3);
    u = emit_persistent(&s, L, cg_persist_h100_ask(16, 1, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    first_writers_check(u, 0, 2);
    ck_assert_int_eq(count(u, "a.lengths != NULL"), 1);
    ck_assert_ptr_nonnull(strstr(u, "a.dstate_prev[0], RNN_DIM_H, map1, a.lengths != NULL, NULL"));
    ck_assert_ptr_nonnull(strstr(u, "const float o2_c = a.lengths ? a.dstate_prev[1]"));
    if (!SANITIZED) compile_ok(u, "mlstm", "sm_90");
    free(u);
    src_close(&s);

    src_open(&s, "unread.cell",
             "cell unread(x[I]) -> h {\n    state h[H], k[H]\n    param U[H, H], W[H, I], V[H, I]\n"
             "    h' = tanh(U @ h + W @ x)\n    k' = sigmoid(V @ x)\n}\n");
    L = layout_bound(&s, s.module->cells[0], dims, 2);
    u = emit_persistent(&s, L, cg_persist_h100_ask(16, 1, CG_FFMA, 1), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    first_writers_check(u, 1, 1); /* k's slot, which no one writes, zeroed every step; h's by its GEMM */
    ck_assert_ptr_nonnull(strstr(u, "args.dstate_prev[1][((t + 2) % 3)"));
    ck_assert_ptr_nonnull(strstr(u, "map1, a.lengths != NULL, NULL"));
    if (!SANITIZED) compile_ok(u, "unread", "sm_90");
    free(u);
    src_close(&s);
}
END_TEST

/* A state adjoint slot's one writer leaves the thread's first item's sum in a register, which that
 * item's seed takes a step later where no sequence ends: the LSTM's d(c) from its group, d(h) from
 * the exchange of clusters splitting K (persist.cuh rnn_split.mine); not d(h) without the split, not
 * on FFMA, not the GRU's d(h) (its group and its GEMM both write it), not a forward
 * (bench/NOTES.md section 63). */
START_TEST(persistent_backward_seeds_in_registers) {
    Src s;
    CgPersist P;
    char why[256];
    const char *dims[] = {"I=256", "H=256"};
    src_open_file(&s, "cells/lstm.cell");
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersistAsk ask = cg_persist_h100_ask(32, 1, CG_F16, 2);
    ask.split = 1;
    char *u = emit_persistent(&s, L, ask, &P, why, sizeof why);
    ck_assert_msg(u && P.split, "%s", why);
    const char *loop = strstr(u, "for (int t = args.t_end - 1; t >= args.t; t--) {");
    const char *decl0 = strstr(u, "float rnn_seed0 = 0.0f;"), *decl1 = strstr(u, "float rnn_seed1 = 0.0f;");
    ck_assert(loop && decl0 && decl1 && decl0 < loop && decl1 < loop);
    const char *seed0 = strstr(u, "d39_h_next += i == threadIdx.x && rnn_seed0_set ? rnn_seed0 : a.dstate_next[0][n * RNN_DIM_H + j];");
    const char *seed1 = strstr(u, "d37_c_next += i == threadIdx.x && rnn_seed1_set ? rnn_seed1 : a.dstate_next[1][n * RNN_DIM_H + j];");
    const char *set1 = strstr(u, "if (i == threadIdx.x) rnn_seed1 = o2_c + d2_c, rnn_seed1_set = !a.lengths;");
    const char *home1 = strstr(u, "a.dstate_prev[1][n * RNN_DIM_H + j] = o2_c + d2_c;");
    const char *gemm = strstr(u, "rnn_mv_mma<"), *set0 = strstr(u, "rnn_seed0 = rnn_sp.mine, rnn_seed0_set = rnn_sp.mine_set;");
    ck_assert(seed0 && seed1 && set1 && home1 && gemm && set0);
    ck_assert(loop < seed0 && seed1 < home1 && home1 < set1 && set1 < gemm && gemm < set0);
    ck_assert_int_eq(count(u, "rnn_sp.mine"), 2);
    if (!SANITIZED) compile_ok(u, "lstm", "sm_90a");
    free(u);
    /* without the split: d(c) alone */
    u = emit_persistent(&s, L, cg_persist_h100_ask(32, 1, CG_F16, 1), &P, why, sizeof why);
    ck_assert_msg(u && !P.split, "%s", why);
    ck_assert_ptr_nonnull(strstr(u, "float rnn_seed1 = 0.0f;"));
    ck_assert_ptr_null(strstr(u, "rnn_seed0"));
    free(u);
    /* FFMA, and any forward: none */
    ask = cg_persist_h100_ask(32, 1, CG_FFMA, 2);
    ask.split = 1;
    u = emit_persistent(&s, L, ask, &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_ptr_null(strstr(u, "rnn_seed"));
    free(u);
    u = emit_persistent(&s, L, cg_persist_h100_ask(32, 0, CG_F16, 2), &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_ptr_null(strstr(u, "rnn_seed"));
    free(u);
    src_close(&s);
    src_open_file(&s, "cells/gru.cell");
    L = layout_bound(&s, s.module->cells[0], dims, 2);
    ask = cg_persist_h100_ask(32, 1, CG_F16, 2);
    ask.split = 1;
    u = emit_persistent(&s, L, ask, &P, why, sizeof why);
    ck_assert_msg(u, "%s", why);
    ck_assert_ptr_null(strstr(u, "rnn_seed"));
    free(u);
    src_close(&s);
}
END_TEST

static void check_golden(const char *cell_path, const char *golden_path) {
    Src s;
    src_open_file(&s, cell_path);
    const char *dims[] = {"I=8", "H=16"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    CgPersist P;
    char why[256];
    CgProducts products = strstr(golden_path, "_tf32") ? CG_TF32 : strstr(golden_path, "_f16") ? CG_F16
                        : strstr(golden_path, "_bf16") ? CG_BF16 : CG_FFMA;
    CgPersistAsk ask = cg_persist_h100_ask(4, strstr(golden_path, "_back") != NULL, products,
                                           strstr(golden_path, "_cluster") ? 2 : 1);
    ask.twins = products == CG_F16 || products == CG_BF16; /* as the CLI and the runtime plan them */
    if (strstr(golden_path, "_flags")) ask.handoff = CG_HANDOFF_FLAGS;
    char *got = strstr(golden_path, "_persist") ? emit_persistent(&s, L, ask, &P, why, sizeof why) : emit(&s, L);
    ck_assert_ptr_nonnull(got);
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

/* Occurrences of needle in hay. */
static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The LSTM's backward kernel reads every adjoint its step's results have (both states' from
 * the next step, the output's from dy) and sends an adjoint to every value it reads: the 8
 * GEMM blocks, the 4 biases (their [N][H] accumulators) and the state c; h reaches it only
 * through U @ h, whose backward is the runtime's GEMM. */
START_TEST(lstm_backward_routes) {
    Src s;
    src_open_file(&s, "cells/lstm.cell");
    const char *dims[] = {"I=8", "H=16"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    char *src = emit(&s, L);
    char *k = strstr(src, "rnncc_lstm_bs1(const RnnArgs a)");
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(strstr(src, "// rnncc-backward-kernels: rnncc_lstm_bs1\n"));
    /* seeds */
    ck_assert_int_eq(count(k, "a.dstate_next[0][n * RNN_DIM_H + j]"), 4); /* carried when ended, seed, zeroed twice */
    ck_assert_int_eq(count(k, "a.dstate_next[1][n * RNN_DIM_H + j]"), 4);
    ck_assert_int_eq(count(k, "a.dstate_next[0][n * RNN_DIM_H + j] = 0.0f;"), 2); /* for step t-1's dstate_prev */
    ck_assert_int_eq(count(k, "a.dstate_next[1][n * RNN_DIM_H + j] = 0.0f;"), 2);
    ck_assert_ptr_nonnull(strstr(k, "d39_h_next += a.dstate_next[0][n * RNN_DIM_H + j];"));
    ck_assert_ptr_nonnull(strstr(k, "d37_c_next += a.dstate_next[1][n * RNN_DIM_H + j];"));
    ck_assert_ptr_nonnull(strstr(k, "if (a.dy[0]) d39_h_next += a.dy[0][col * a.ldy[0] + j];"));
    /* the 8 GEMM blocks: G0 (hoisted, column col) in B0, G1 (step, column n) in B1, 4H = 64 rows */
    static const char *const blocks[] = {"", " + 16", " + 32", " + 48"};
    char want[200];
    for (int b = 0; b < 4; b++) {
        /* this kernel alone sends them (the buffers start zeroed): written, never read */
        snprintf(want, sizeof want, " = a.dbuf[0][col * 64%s + j];", blocks[b]);
        ck_assert_msg(count(k, want) == 0, "%s", want);
        snprintf(want, sizeof want, "a.dbuf[0][col * 64%s + j] = d", blocks[b]);
        ck_assert_msg(count(k, want) == 1, "%s", want);
        snprintf(want, sizeof want, "a.dbuf[1][n * 64%s + j] = d", blocks[b]);
        ck_assert_msg(count(k, want) == 1, "%s", want);
    }
    /* each also writes its 16-bit twin at the same index (both buffers' adjoints are this kernel's alone) */
    ck_assert_int_eq(count(k, "if (a.dbuf16["), 4);
    ck_assert_int_eq(count(k, "if (!a.dshared && a.dbuf16[1])"), 4);
    /* U_* @ h's adjoints are W_* @ x's (each pair adds up alone): B1's adjoint is B0's where the
     * runtime says so (the forward direction), so the kernel stores it there only once */
    ck_assert_int_eq(cg_adjoint_shared(L, 1), 0);
    ck_assert_int_eq(cg_adjoint_shared(L, 0), -1);
    for (int b = 0; b < 4; b++) {
        snprintf(want, sizeof want, "if (!a.dshared && !a.twins_only) a.dbuf[1][n * 64%s + j] = d", blocks[b]);
        ck_assert_msg(count(k, want) == 1, "%s", want);
        /* and W_* @ x's fp32 adjoint is stored only where not the twin alone is read (a.twins_only) */
        snprintf(want, sizeof want, "if (!a.twins_only) a.dbuf[0][col * 64%s + j] = d", blocks[b]);
        ck_assert_msg(count(k, want) == 1, "%s", want);
    }
    /* and each with its tf32x3 split twin, one step's columns, for the step GEMM (B0's holds B1's where a.dshared) */
    ck_assert_int_eq(count(k, "if (!a.dshared && a.dbuf3[1]) rnn_x3_twin(a.dbuf3[1], &a.dbuf[1][n * 64"), 4);
    ck_assert_int_eq(count(k, "if (a.dbuf3[0]) rnn_x3_twin(a.dbuf3[0], &a.dbuf[0][col * 64"), 4); /* B1's where a.dshared */
    ck_assert_int_eq(count(k, "a.dbuf["), 8 + 2 * 8 + 2 * 8);
    /* the biases are folded (Plan.param_fold): their gradients are sums of W_* @ x's adjoints, so
     * the kernel keeps no accumulator for them */
    for (int q = 0; q < 4; q++) {
        IrRef f = L->plan->param_fold[8 + q]; /* b_i, b_f, b_g, b_o */
        ck_assert_uint_ne(f, IR_NONE);
        ck_assert_int_eq(L->plan->node[f].gemm, 0); /* the hoisted G0 */
        ck_assert_int_eq(L->block_row[f], 16 * q);
    }
    ck_assert_int_eq(count(k, "a.dparam["), 0);
    ck_assert_int_eq(L->acc_rows, 0);
    /* c is read: its adjoint goes to the previous step; h is not read by this kernel */
    ck_assert_int_eq(count(k, "a.dstate_prev[1][n * RNN_DIM_H + j] = o2_c + d2_c;"), 1);
    ck_assert_int_eq(count(k, "a.dstate_prev[0]"), 1); /* only the ended sequence's carry */
    ck_assert_int_eq(count(k, "a.dstate_prev[1]"), 3);
    ck_assert_ptr_null(strstr(k, "a.dx"));
    /* no value of the group is stored, so no adjoint starts from dbuf */
    for (const char *q = k; (q = strstr(q, " = a.dbuf[")); q++) { /* only the homes' current values are */
        const char *line = q;
        while (line > k && line[-1] != '\n') line--;
        ck_assert_msg(strstr(line, "const float o") == line + strspn(line, " "), "%.60s", line);
    }
    /* every node's adjoint is swept once per operand that is neither a literal nor a folded bias */
    ck_assert_int_eq(count(k, "rnn_dop_"), 2 * 12 + 5 - 4); /* 12 binary nodes, 5 unary, 4 biases */
    ck_assert_ptr_null(strstr(k, "d11_b_i")); /* no accumulator for a folded bias */
    free(src);
    src_close(&s);

    /* mlstm: m is stored (U_i @ m reads it), so its adjoint starts from what that GEMM's
     * backward left in dbuf; an ended sequence zeroes it in the forward */
    src_open_file(&s, "cells/mlstm.cell");
    L = layout_all(&s, s.module->cells[0], 12);
    src = emit(&s, L);
    k = strstr(src, "rnncc_mlstm_bs1(const RnnArgs a)");
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(strstr(k, "float d19_m = a.dbuf[3][n * RNN_DIM_M + j];"));
    ck_assert_ptr_nonnull(strstr(src, "a.buf[3][n * RNN_DIM_M + j] = 0.0f;"));
    ck_assert_ptr_nonnull(strstr(k, "if (a.t >= len) continue;  // sequence n had ended: nothing flows back"));
    free(src);
    src_close(&s);
}
END_TEST

START_TEST(golden_sources) {
    check_golden("cells/lstm.cell", "tests/golden/lstm.cu");
    check_golden("cells/gru.cell", "tests/golden/gru.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist_tf32.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist_back.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist_tf32_cluster.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist_flags.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist_f16.cu");
    check_golden("cells/lstm.cell", "tests/golden/lstm_persist_bf16_back.cu");
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
    const char *dims[] = {"I=3", "H=16", "S=37"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 3);
    char *src = emit(&s, L);
    /* the hoisted kernel over T*N columns, the guards of the shorter vectors */
    ck_assert_ptr_nonnull(strstr(src, "rnncc_edge_h0(const RnnArgs a)"));
    ck_assert_ptr_nonnull(strstr(src, "const long long items = (long long)a.T * a.N * RNN_DIM_I;"));
    ck_assert_ptr_nonnull(strstr(src, "if (j < RNN_DIM_H) {"));
    ck_assert_ptr_nonnull(strstr(src, "if (j < RNN_DIM_I && a.y[5]) a.y[5][((long long)a.t * a.N + n) * a.ldy[5] + j] = 0.0f;"));
    /* outputs may be NULL; an ended sequence zeroes what the group stores */
    ck_assert_ptr_nonnull(strstr(src, "if (a.y[1]) a.y[1][col * a.ldy[1] + j] = v20_z;"));
    ck_assert_ptr_nonnull(strstr(src, "if (a.y[5]) a.y[5][col * a.ldy[5] + j] = v0_x;"));
    /* the hoisted backward: one thread per (n, j) walks the sequence's positions */
    ck_assert_ptr_nonnull(strstr(src, "rnncc_edge_bh0(const RnnArgs a)"));
    ck_assert_ptr_nonnull(strstr(src, "for (int pos = 0; pos < len; pos++) {"));
    ck_assert_ptr_nonnull(strstr(src, "float d10_xs = a.dbuf[2][col * RNN_DIM_I + j];"));
    ck_assert_ptr_nonnull(strstr(src, "const float o0_x = a.dx ? a.dx[col * a.ldx + j] : 0.0f;"));
    ck_assert_ptr_nonnull(strstr(src, "if (a.dx) a.dx[col * a.ldx + j] = o0_x + d0_x;"));
    /* a write of a leaf seeds the leaf's adjoint, literals get none */
    ck_assert_ptr_nonnull(strstr(src, "if (a.dy[5]) d0_x += a.dy[5][col * a.ldy[5] + j];"));
    ck_assert_ptr_nonnull(strstr(src, "d8_q += d18 * rnn_dop_mul_0(v8_q, 1e+20f, 0.0f, v18);\n"));
    ck_assert_ptr_null(strstr(src, "rnn_dop_mul_1(v8_q, 1e+20f"));
    ck_assert_ptr_nonnull(strstr(src, "if (j < RNN_DIM_H) a.dstate_prev[0][n * RNN_DIM_H + j] += a.dstate_next[0][n * RNN_DIM_H + j];"));
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
 * line, except the mangled ones: v<id>[_name], d<id>[_name] and o<id>[_name], RNN_DIM_<dim>, rnncc_<cell>_... */
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
        int mangled = ((p[0] == 'v' || p[0] == 'd' || p[0] == 'o') && isdigit((unsigned char)p[1])) || strncmp(p, "RNN_DIM_", 8) == 0 ||
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

/* Every unit a cell with number literals gets (per-step forward and backward, persistent forward and backward)
 * is the same text under an embedding program's decimal comma (LC_NUMERIC) as in the C locale: literals were
 * "0,5f" (printf follows the thread's locale), which NVRTC reads as two arguments. */
static void units_of(const char *text, StrBuf *all) {
    Src s;
    src_open(&s, "lit.cell", text);
    PlanLayout *L = layout_all(&s, s.module->cells[0], 8);
    char *fw = emit(&s, L);
    sb_puts(all, fw);
    free(fw);
    for (int backward = 0; backward < 2; backward++) {
        CgPersist P;
        char why[256];
        char *pu = emit_persistent(&s, L, cg_persist_h100_ask(4, backward, backward ? CG_TF32 : CG_FFMA, 1), &P, why, sizeof why);
        ck_assert_msg(pu != NULL, "%s", why);
        sb_puts(all, pu);
        free(pu);
    }
    src_close(&s);
}

START_TEST(literals_ignore_the_locale) {
    static const char cell[] = "cell lit(x[I]) -> h {\n  state h[H]\n  param W[H, I]\n"
                               "  h' = 0.5 * tanh(W @ x) + 0.25 * h - 1.5e-3 * h * h\n}\n";
    StrBuf c_text = {0}, comma_text = {0};
    units_of(cell, &c_text);
    locale_t comma = tu_comma_locale(), old = uselocale(comma);
    char buf[64];
    ck_assert(cg_float_literal(0.5, buf, sizeof buf));
    ck_assert_str_eq(buf, "0.5f");
    units_of(cell, &comma_text);
    uselocale(old);
    freelocale(comma);
    ck_assert(strstr(sb_str(&c_text), "0.5f") && strstr(sb_str(&c_text), "0.0015f"));
    ck_assert_msg(strcmp(sb_str(&c_text), sb_str(&comma_text)) == 0, "the units differ under a decimal comma");
    sb_free(&c_text);
    sb_free(&comma_text);
}
END_TEST

/* A node's comment quotes its own source line, found through the unit's index of the cell's lines (a cell
 * after 3000 lines of comments here, its statements out of order: the index starts at the cell's first node's
 * line, not the file's). Quoting once scanned the file from its start for every node. */
START_TEST(line_comments_quote_their_lines) {
    StrBuf src = {0};
    for (int i = 0; i < 3000; i++) sb_puts(&src, "# padding\n");
    sb_puts(&src, "cell far(x[I]) -> h {\n  state h[H]\n  param W[H, I], U[H, H]\n"
                  "  h' = tanh(a) * 0.5\n  a = W @ x + U @ h\n}\n"); /* lines 3001-3006 */
    Src s;
    src_open(&s, "far.cell", sb_str(&src));
    char *unit = emit(&s, layout_all(&s, s.module->cells[0], 8));
    ck_assert_msg(strstr(unit, "// line 3004: h' = tanh(a) * 0.5\n") && strstr(unit, "// line 3005: a = W @ x + U @ h\n"),
                  "%s", unit);
    ck_assert_ptr_null(strstr(unit, "// line 3001"));
    free(unit);
    src_close(&s);
    sb_free(&src);
}
END_TEST

/* A cell without states (a readout of the input alone) gets persistent units that NVRTC compiles without a
 * warning: they declared the state slots' offsets sp and sn, which nothing read. */
START_TEST(stateless_persistent_units_compile_clean) {
    Src s;
    src_open(&s, "nostate.cell", "cell t(x[I]) -> y {\n  param W[H, I]\n  y = tanh(W @ x)\n}\n");
    PlanLayout *L = layout_all(&s, s.module->cells[0], 8);
    for (int backward = 0; backward < 2; backward++) {
        CgPersist P;
        char why[256];
        char *unit = emit_persistent(&s, L, cg_persist_h100_ask(4, backward, CG_FFMA, 1), &P, why, sizeof why);
        ck_assert_msg(unit != NULL, "%s", why);
        compile_ok(unit, backward ? "nostate backward" : "nostate forward", "sm_90");
        free(unit);
    }
    src_close(&s);
}
END_TEST

/* ---- the launch contract ------------------------------------------------------------------------ */

START_TEST(launch_helpers) {
    Src s;
    src_open_file(&s, "cells/mlstm.cell");
    const char *dims[] = {"I=8", "H=16", "M=12"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 3);
    const Plan *plan = L->plan;
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
    ck_assert_int_eq(cg_backward_kernel_name(plan, 0, name, sizeof name), (int)strlen("rnncc_mlstm_bs1"));
    ck_assert_str_eq(name, "rnncc_mlstm_bs1");
    ck_assert_int_eq(cg_backward_kernel_name(plan, 1, name, sizeof name), (int)strlen("rnncc_mlstm_bs2"));
    ck_assert_str_eq(name, "rnncc_mlstm_bs2");
    ck_assert_int_eq(cg_backward_kernel_name(plan, 2, name, sizeof name), -1);
    ck_assert_int_eq(cg_backward_kernel_name(plan, -1, name, sizeof name), -1);
    ck_assert_int_eq(cg_backward_kernel_name(plan, 0, name, 15), -1); /* no room for the NUL */
    ck_assert_int_eq(cg_backward_kernel_name(plan, 0, name, 16), 15);
    ck_assert_int_eq(cg_backward_group_items(L, 1, 100, 7), 7 * 16);
    ck_assert_int_eq(cg_backward_group_items(L, 0, 100, 7), 7 * 12);
    ck_assert_int_eq(cg_backward_group_items(L, 2, 100, 7), -1);
    ck_assert_int_eq(cg_backward_group_items(L, 1, -1, 7), -1);
    ck_assert_int_eq(cg_backward_group_items(L, 1, 100, INT64_MAX / 2), -1);
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
    /* its backward has N*J: one thread walks a sequence's positions */
    ck_assert_int_eq(cg_backward_kernel_name(L->plan, 0, name, sizeof name), (int)strlen("rnncc_edge_bh0"));
    ck_assert_str_eq(name, "rnncc_edge_bh0");
    ck_assert_int_eq(cg_backward_group_items(L, 0, 10, 7), 7 * 3);
    ck_assert_int_eq(cg_backward_group_items(L, 0, INT64_MAX / 4, 7), 7 * 3);
    src_close(&s);
}
END_TEST

/* ---- the kernels run as C++ on the CPU, against the plan executor ------------------------------- */

/* The generated unit is plain C++ once the few CUDA words are defined away: each kernel becomes
 * an extern "C" function of RnnArgs, and the thread and block indices globals that the test sets
 * before each call. Every (block, thread) pair runs in turn: the kernels' threads share no
 * memory, so any order gives the GPU's result. A C++ compiler (CXX, else c++) is needed; the
 * test says so and passes without one. */
static const char cpu_shim[] =
    "#include <math.h>\n"
    "struct rnn_dim3 { unsigned x, y, z; };\n"
    "extern \"C\" { rnn_dim3 blockIdx, threadIdx, blockDim, gridDim; }\n"
    "#define __global__\n"
    "#define __device__\n"
    "#define __forceinline__ inline\n"
    "#define __launch_bounds__(n)\n";

typedef void (*CpuKernel)(RnnArgs);
typedef struct CpuDim3 { unsigned x, y, z; } CpuDim3;

typedef struct CpuUnit {
    void *so;
    CpuKernel fwd[64], bwd[64];
    CpuDim3 *block_idx, *thread_idx, *block_dim, *grid_dim;
} CpuUnit;

static const char *cxx(void) {
    const char *c = getenv("CXX");
    return c && *c ? c : "c++";
}

static int have_cxx(void) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s --version > /dev/null 2>&1", cxx());
    return system(cmd) == 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert(fputs(text, f) >= 0);
    ck_assert_int_eq(fclose(f), 0);
}

/* Compiles a unit as C++ into a shared object and finds every kernel. */
/* Compiles C++ text (the header shim, included first, then source) with flags into a shared
 * object and loads it; aborts with the compiler's log on failure. */
static void *cxx_load(const char *shim, const char *source, const char *flags) {
    char dir[] = "/tmp/rnncc-cg-XXXXXX", path[400], cmd[1600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/shim.h", dir);
    write_text(path, shim);
    snprintf(path, sizeof path, "%s/unit.cu", dir);
    write_text(path, source);
    snprintf(cmd, sizeof cmd, "%s -std=c++17 %s -fPIC -shared -include %s/shim.h -x c++ %s -o %s/unit.so 2> %s/log", cxx(),
             flags, dir, path, dir, dir);
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(path, sizeof path, "%s/log", dir);
        char *log = tu_read_file(path, NULL);
        ck_abort_msg("%s failed (%d):\n%.4000s", cmd, rc, log);
    }
    snprintf(path, sizeof path, "%s/unit.so", dir);
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(so != NULL, "dlopen: %s", dlerror());
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir); /* the object stays mapped */
    ck_assert_int_eq(system(cmd), 0);
    return so;
}

static void cpu_unit_load(CpuUnit *u, const char *source, const Plan *plan) {
    memset(u, 0, sizeof *u);
    u->so = cxx_load(cpu_shim, source, "-O0 -w");
    ck_assert_int_le(plan->ngroups, 64);
    for (int g = 0; g < plan->ngroups; g++) {
        char name[256];
        ck_assert_int_gt(cg_kernel_name(plan, g, name, sizeof name), 0);
        *(void **)&u->fwd[g] = dlsym(u->so, name);
        ck_assert_msg(u->fwd[g] != NULL, "no kernel %s", name);
        ck_assert_int_gt(cg_backward_kernel_name(plan, g, name, sizeof name), 0);
        *(void **)&u->bwd[g] = dlsym(u->so, name);
        ck_assert_msg(u->bwd[g] != NULL, "no kernel %s", name);
    }
    u->block_idx = dlsym(u->so, "blockIdx");
    u->thread_idx = dlsym(u->so, "threadIdx");
    u->block_dim = dlsym(u->so, "blockDim");
    u->grid_dim = dlsym(u->so, "gridDim");
    ck_assert(u->block_idx && u->thread_idx && u->block_dim && u->grid_dim);
}

/* Launches a kernel: grid and block as the runtime's (or one block of 32 threads, tiny). */
static void cpu_launch(CpuUnit *u, CpuKernel k, const RnnArgs *a, int64_t items, int tiny) {
    ck_assert_int_ge(items, 0);
    if (items == 0) return;
    unsigned grid = tiny ? 1 : cg_grid_blocks(items), block = tiny ? 32 : CG_BLOCK_SIZE;
    *u->grid_dim = (CpuDim3){grid, 1, 1};
    *u->block_dim = (CpuDim3){block, 1, 1};
    for (unsigned b = 0; b < grid; b++)
        for (unsigned t = 0; t < block; t++) {
            *u->block_idx = (CpuDim3){b, 0, 0};
            *u->thread_idx = (CpuDim3){t, 0, 0};
            k(*a);
        }
}

/* A training run of one layer in float, as the runtime does it: every step's buffers and
 * states kept, GEMMs (plain loops here) between the generated kernels. */
typedef struct Emu {
    const PlanLayout *L;
    const Plan *p;
    const IrCell *c;
    CpuUnit *u;
    int64_t T, N, I;
    int reverse, tiny;
    int64_t pt0, pt1;                      /* the post program's window of steps (a wavefront chunk's, RnnArgs.t, t_end) */
    int dshared;                           /* RnnArgs.dshared: shared adjoints point at their partners' */
    int summed;                            /* RnnArgs.summed: step results added into their hoisted partners' */
    int twins_only;                        /* RnnArgs.twins_only: twinned adjoints stored as twins alone, which the
                                              GEMMs then read (as the runtime's 16-bit GEMMs do) */
    int *lengths;
    float *packed, *x;
    float *buf[RNN_MAX_BUFFERS], *dbuf[RNN_MAX_BUFFERS];
    float *state[RNN_MAX_STATES];          /* [T+1][N][S] */
    float *dstate[RNN_MAX_STATES][2];      /* [N][S] each: dprev, dnext by turns */
    float *y[RNN_MAX_OUTPUTS], *dy[RNN_MAX_OUTPUTS];
    int64_t ldy[RNN_MAX_OUTPUTS];
    float *dx, *dparam;
    double *dw;                            /* packed weight gradients */
    int cur;                               /* which dstate half is dprev */
    /* 16-bit twins (RnnArgs.state16, dbuf16, buf16) where the plan has them, laid out as state, dbuf and buf */
    unsigned short *state16[RNN_MAX_STATES], *dbuf16[RNN_MAX_BUFFERS], *buf16[RNN_MAX_BUFFERS];
    int bf16;
    /* tf32x3 split twins (RnnArgs.state3, dbuf3) where the plan has them, 3 floats a value: a state's two steps'
     * columns by turns (t % 2, as rt_state_slot3), an adjoint's one step's */
    float *state3[RNN_MAX_STATES], *dbuf3[RNN_MAX_BUFFERS];
} Emu;

static int64_t emu_len(const Emu *e, IrRef r) { return ir_node_len(e->c, r, e->L->dimval); }

/* State k's split twin at step t (its slot t % 2, as rt_state_slot3), or NULL. */
static float *emu_state3(const Emu *e, int k, int64_t t) {
    return e->state3[k] ? e->state3[k] + t % 2 * 3 * e->N * emu_len(e, e->c->states[k].node) : NULL;
}
static int64_t emu_cols(const Emu *e, SchedProgram prog) { return prog == SCHED_STEP ? e->N : e->T * e->N; }

/* Buffer b (or its adjoint) as kernels of step t see it: step buffers are kept per step (a post
 * kernel's, t = 0, sees every step's from the first). */
static float *emu_buf(const Emu *e, float *const *bufs, int b, int64_t t) {
    int64_t off = e->p->buffers[b].program == SCHED_STEP ? t * e->N * e->L->buffer_width[b] : 0;
    return bufs[b] + off;
}

static RnnArgs emu_args(const Emu *e, int64_t t) {
    RnnArgs a;
    memset(&a, 0, sizeof a);
    a.params = e->packed;
    a.x = e->x;
    a.ldx = e->I;
    for (int b = 0; b < e->p->nbuffers; b++) {
        a.buf[b] = emu_buf(e, e->buf, b, t);
        a.dbuf[b] = emu_buf(e, e->dbuf, b, t);
        if (e->dbuf16[b]) a.dbuf16[b] = e->dbuf16[b] + (a.dbuf[b] - e->dbuf[b]);
        if (e->buf16[b]) a.buf16[b] = e->buf16[b] + (a.buf[b] - e->buf[b]);
        a.dbuf3[b] = e->dbuf3[b];
    }
    a.bf16 = e->bf16;
    for (int k = 0; k < e->c->nstates; k++) {
        int64_t S = emu_len(e, e->c->states[k].node);
        a.state_prev[k] = e->state[k] + t * e->N * S;
        a.state_next[k] = e->state[k] + (t + 1) * e->N * S;
        if (e->state16[k]) a.state16[k] = e->state16[k] + (t + 1) * e->N * S;
        a.state3[k] = emu_state3(e, k, t + 1);
        a.dstate_prev[k] = e->dstate[k][e->cur];
        a.dstate_next[k] = e->dstate[k][1 - e->cur];
    }
    for (int o = 0; o < e->c->noutputs; o++) {
        a.y[o] = e->y[o];
        a.dy[o] = e->dy[o];
        a.ldy[o] = e->ldy[o];
    }
    a.lengths = e->lengths;
    a.dx = e->dx;
    a.dparam = e->dparam;
    a.t = (int)t;
    a.reverse = e->reverse;
    a.dshared = e->dshared;
    a.summed = e->summed;
    a.twins_only = e->twins_only;
    a.T = (int)e->T;
    a.N = (int)e->N;
    return a;
}

/* Where GEMM j's operand starts for column col of step t (leading dimension: its length or width). */
static float *emu_operand(const Emu *e, float *const *bufs, IrRef r, int64_t t, int64_t *ld) {
    const IrNode *n = &e->c->nodes[r];
    const SchedNode *s = &e->p->node[r];
    if (n->op == IR_INPUT) { *ld = e->I; return bufs == e->buf ? e->x : e->dx; }
    if (n->op == IR_STATE) {
        *ld = emu_len(e, r);
        return bufs == e->buf ? e->state[n->index] + t * e->N * *ld : e->dstate[n->index][e->cur];
    }
    int b = n->op == IR_MATVEC ? e->p->gemms[s->gemm].out_buffer : s->buffer;
    *ld = e->L->buffer_width[b];
    return emu_buf(e, bufs, b, t) + (n->op == IR_MATVEC ? e->L->block_row[r] : 0);
}

static const float *emu_weights(const Emu *e, int j) {
    const SchedGemm *g = &e->p->gemms[j];
    return e->packed + e->L->param_offset[e->c->nodes[e->c->nodes[g->products[0]].args[0]].index];
}

/* The value of a 16-bit twin's element (bf16 or fp16 bits). */
static float twin_value(unsigned short v, int bf16) {
    if (bf16) {
        uint32_t u = (uint32_t)v << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    if ((v & 0x7c00) == 0x7c00) return NAN; /* infinities and NaN: a twin never written (0xffff) shows */
    return (float)((v & 0x8000 ? -1 : 1) * f16_value(v & 0x7fffu));
}

/* Element p of buffer b's adjoint as the GEMMs read it: from its twin where twins_only. */
static float emu_dres(const Emu *e, int b, const float *p) {
    return e->twins_only && e->dbuf16[b] ? twin_value(e->dbuf16[b][p - e->dbuf[b]], e->bf16) : *p;
}

/* Whether twin holds cols columns of len values of src (leading dimension ld) split as a right operand's
 * (rnn_x3_put's hi, lo, hi; 3 len floats a column), bit for bit; names the first element that does not. */
static void check_split_twin(const float *twin, const float *src, int64_t ld, int64_t len, int64_t cols, const char *what,
                             int64_t t) {
    for (int64_t col = 0; col < cols; col++)
        for (int64_t i = 0; i < len; i++) {
            const float v = src[col * ld + i], hi = rnn_tf32(v), lo = rnn_tf32(v - hi), *d = twin + 3 * len * col + i;
            ck_assert_msg(memcmp(&d[0], &hi, 4) == 0 && memcmp(&d[len], &lo, 4) == 0 && memcmp(&d[2 * len], &hi, 4) == 0,
                          "%s at step %lld, column %lld, element %lld: (%g, %g, %g) for %g", what, (long long)t, (long long)col,
                          (long long)i, d[0], d[len], d[2 * len], v);
        }
}

/* forward: result = W operand; backward data: d operand += W^T d result. A step GEMM whose right operand
 * the runtime would take from its split twin instead (a state's, step 1 on; an adjoint's where the GEMM
 * spans its buffer's rows) first checks that the twin holds it, bit for bit. */
static void emu_gemm(Emu *e, int j, int64_t t, int backward) {
    const SchedGemm *g = &e->p->gemms[j];
    int64_t M = e->L->gemm_rows[j], K = e->L->gemm_cols[j], W = e->L->buffer_width[g->out_buffer], ld;
    const float *w = emu_weights(e, j);
    float *op = emu_operand(e, backward ? e->dbuf : e->buf, g->operand, t, &ld);
    float *res = emu_buf(e, backward ? e->dbuf : e->buf, g->out_buffer, t);
    int64_t cols = emu_cols(e, g->program);
    if (g->program == SCHED_POST) { /* its window's steps' columns, as the runtime's */
        cols = (e->pt1 - e->pt0) * e->N;
        if (op) op += e->pt0 * e->N * ld;
        res += e->pt0 * e->N * W;
    }
    const IrNode *on = &e->c->nodes[g->operand];
    if (!backward && g->program == SCHED_STEP && on->op == IR_STATE && t > 0 && e->state3[on->index]) {
        char what[160];
        snprintf(what, sizeof what, "%s: G%d's split twin of %s", e->c->name, j, e->c->states[on->index].name);
        check_split_twin(emu_state3(e, on->index, t), op, ld, ld, e->N, what, t);
    }
    if (backward && g->program == SCHED_STEP && W == M && e->dbuf3[g->out_buffer] && !e->twins_only) { /* rt_backward's dout3 */
        char what[160];
        snprintf(what, sizeof what, "%s: G%d's split twin of B%d's adjoint", e->c->name, j, g->out_buffer);
        check_split_twin(e->dbuf3[g->out_buffer], res, W, W, e->N, what, t);
    }
    if (backward && !op) return; /* dx not wanted */
    /* as the runtime's beta = 1: into the hoisted partner's step columns, where res lies */
    int sum = !backward && e->summed && cg_value_summed(e->L, g->out_buffer) >= 0;
    for (int64_t col = 0; col < cols; col++) {
        for (int64_t r = 0; r < M && !backward; r++) {
            double acc = sum ? res[col * W + r] : 0;
            for (int64_t k = 0; k < K; k++) acc += (double)w[r * K + k] * op[col * ld + k];
            res[col * W + r] = (float)acc;
        }
        for (int64_t k = 0; k < K && backward; k++) {
            double acc = 0;
            for (int64_t r = 0; r < M; r++) acc += (double)w[r * K + k] * emu_dres(e, g->out_buffer, &res[col * W + r]);
            op[col * ld + k] += (float)acc;
        }
    }
}

/* dW += d result operand^T over every column the GEMM ran on. */
static void emu_gemm_weights(Emu *e, int j) {
    const SchedGemm *g = &e->p->gemms[j];
    int64_t M = e->L->gemm_rows[j], K = e->L->gemm_cols[j], W = e->L->buffer_width[g->out_buffer], ld;
    double *dw = e->dw + (emu_weights(e, j) - e->packed);
    for (int64_t t = 0; t < (g->program == SCHED_STEP ? e->T : 1); t++) {
        const float *op = emu_operand(e, e->buf, g->operand, t, &ld);
        const float *dres = emu_buf(e, e->dbuf, g->out_buffer, t);
        for (int64_t col = 0; col < emu_cols(e, g->program); col++)
            for (int64_t r = 0; r < M; r++)
                for (int64_t k = 0; k < K; k++)
                    dw[r * K + k] += (double)emu_dres(e, g->out_buffer, &dres[col * W + r]) * op[col * ld + k];
    }
}

static void emu_program(Emu *e, SchedProgram prog, int64_t t, int backward) {
    const Plan *p = e->p;
    for (int step = 0; step <= p->phases[prog]; step++) {
        int k = backward ? p->phases[prog] - step : step;
        RnnArgs a = emu_args(e, t);
        if (prog != SCHED_STEP) memset(a.state3, 0, sizeof a.state3), memset(a.dbuf3, 0, sizeof a.dbuf3); /* as the runtime */
        if (prog == SCHED_POST) a.t = (int)e->pt0, a.t_end = (int)e->pt1; /* its window's steps */
        for (int i = 0; i < p->ngroups; i++) {
            if ((int)p->groups[i].program != prog || p->groups[i].index != k) continue;
            if (backward) cpu_launch(e->u, e->u->bwd[i], &a, cg_backward_group_items(e->L, i, prog == SCHED_POST ? e->pt1 - e->pt0 : e->T, e->N), e->tiny);
            else cpu_launch(e->u, e->u->fwd[i], &a, cg_group_items(e->L, i, prog == SCHED_POST ? e->pt1 - e->pt0 : e->T, e->N), e->tiny);
        }
        for (int j = 0; j < p->ngemms; j++)
            if ((int)p->gemms[j].program == prog && p->gemms[j].phase == (backward ? k - 1 : k)) emu_gemm(e, j, t, backward);
    }
}

static float *to_float(const double *v, size_t n) {
    float *f = tu_alloc(n + 1, sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = (float)v[i];
    return f;
}

/* max |got - want| / (scale + |want|) with scale 1e-3 of the tensor's largest |want|. */
static double emu_err(const float *got, const double *want, int64_t n, int64_t ld, int64_t len) {
    double big = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) {
        double g = got[(i / len) * ld + i % len], e = fabs(g - want[i]) / (1e-3 * big + 1e-6 + fabs(want[i]));
        if (isnan(e)) return INFINITY;
        worst = fmax(worst, e);
    }
    return worst;
}

/* How cpu_check runs a layer: reverse, tiny grids, no dx, outputs past the first not read (y
 * NULL), every sequence whole (full: no lengths, and the adjoints the runtime then leaves
 * unzeroed start as NaN, so an element no kernel writes shows), and (forward direction only)
 * step results added into their hoisted partners' columns (summed, as the runtime where no
 * persistent forward may run), twinned adjoints stored as twins alone (twins_only, as the
 * runtime's 16-bit modes per step: the GEMMs read the twins, so the gradients are compared over
 * the whole tensor, within 16-bit bounds). */
typedef struct EmuRun {
    int reverse, tiny, no_dx, only_y0, full, summed, twins_only;
} EmuRun;

/* max |got - want| / max |want| over the tensor (gradients from 16-bit adjoints, which an element
 * near 0 amid large terms would fail by emu_err's measure). */
static double emu_err_whole(const float *got, const double *want, int64_t n, int64_t ld, int64_t len) {
    double big = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(got[(i / len) * ld + i % len] - want[i]);
        if (isnan(d)) return INFINITY;
        big = fmax(big, fabs(want[i]));
        worst = fmax(worst, d);
    }
    return worst / (big + 1e-6);
}

/* One layer forward and backward through the generated kernels on the CPU, compared with
 * sched_exec_forward / sched_exec_backward. */
static void cpu_check(const IrCell *c, const PlanLayout *L, CpuUnit *u, uint64_t seed, EmuRun run) {
    const int reverse = run.reverse, tiny = run.tiny, no_dx = run.no_dx, only_y0 = run.only_y0, full = run.full;
    const Plan *p = L->plan;
    Rng rng = {seed};
    const int64_t T = 6, N = 4;
    TuProblem tp; /* with the layout's dimensions; lengths 6 (all), 2, 0 and 5, or 6 each (full) */
    memset(&tp, 0, sizeof tp);
    tp.dimval = tu_alloc((size_t)c->ndims + 1, sizeof(int64_t));
    memcpy(tp.dimval, L->dimval, (size_t)c->ndims * sizeof(int64_t));
    int64_t I = ir_shape_numel(&c->inputs[0].shape, tp.dimval);
    tp.x = tu_alloc((size_t)(T * N * I), sizeof(double));
    tu_fill(&rng, tp.x, (size_t)(T * N * I), -1, 1);
    tp.h0 = tu_alloc((size_t)c->nstates + 1, sizeof(double *));
    for (int k = 0; k < c->nstates; k++) {
        size_t n = (size_t)(N * ir_shape_numel(&c->states[k].shape, tp.dimval));
        tp.h0[k] = tu_alloc(n, sizeof(double));
        tu_fill(&rng, tp.h0[k], n, -0.5, 0.5);
    }
    tp.params = tu_alloc((size_t)c->nparams + 1, sizeof(double *));
    for (int k = 0; k < c->nparams; k++) {
        size_t n = (size_t)ir_shape_numel(&c->params[k].shape, tp.dimval);
        tp.params[k] = tu_alloc(n, sizeof(double));
        tu_fill(&rng, tp.params[k], n, -0.5, 0.5);
    }
    const int64_t lens[4] = {6, full ? 6 : 2, full ? 6 : 0, full ? 6 : 5};
    tp.lengths = tu_alloc(N, sizeof(int64_t));
    memcpy(tp.lengths, lens, sizeof lens);
    tp.p = (RefProblem){c, tp.dimval, T, N, tp.lengths, tp.x, (const double *const *)tp.h0, (const double *const *)tp.params};

    /* the executor: outputs, final states, gradients */
    double **y = tu_alloc_outputs(&tp), **hT = tu_alloc_states(&tp), **dy = tu_alloc_outputs(&tp);
    double **dhT = tu_alloc_states(&tp), **dh0 = tu_alloc_states(&tp);
    double *dx = tu_alloc((size_t)(T * N * I), sizeof(double));
    double **dp = tu_alloc((size_t)c->nparams + 1, sizeof(double *));
    for (int o = 0; o < c->noutputs; o++) {
        if (only_y0 && o > 0) continue; /* an output nobody reads has no adjoint */
        tu_fill(&rng, dy[o], (size_t)(T * N * tu_output_len(&tp, o)), -1, 1);
    }
    for (int k = 0; k < c->nstates; k++) tu_fill(&rng, dhT[k], (size_t)(N * tu_state_len(&tp, k)), -1, 1);
    for (int k = 0; k < c->nparams; k++) dp[k] = tu_alloc((size_t)(L->param_rows[k] * L->param_cols[k]), sizeof(double));
    ck_assert_int_eq(sched_exec_forward(L, &tp.p, reverse, y, hT), 0);
    ck_assert_int_eq(sched_exec_backward(L, &tp.p, reverse, (const double *const *)dy, (const double *const *)dhT, dx, dh0, dp), 0);

    /* the same in float through the kernels; buffers start as NaN, so a value read before it
     * is written (or an ended sequence's stale one) shows */
    /* as the runtime: the forward direction keeps a shared adjoint in its partner's buffer */
    Emu e = {.L = L, .p = p, .c = c, .u = u, .T = T, .N = N, .I = I, .reverse = reverse, .tiny = tiny, .dshared = !reverse,
             .summed = !reverse && run.summed, .twins_only = run.twins_only};
    e.lengths = full ? NULL : tu_alloc(N, sizeof(int));
    for (int64_t n = 0; !full && n < N; n++) e.lengths[n] = (int)lens[n];
    double *packed = tu_alloc((size_t)L->packed_size + 1, sizeof(double));
    sched_pack_params(L, tp.p.params, packed);
    e.packed = to_float(packed, (size_t)L->packed_size);
    e.x = to_float(tp.x, (size_t)(T * N * I));
    for (int b = 0; b < p->nbuffers; b++) {
        size_t n = (size_t)(T * N * L->buffer_width[b]);
        e.buf[b] = tu_alloc(n + 1, sizeof(float));
        for (size_t i = 0; i < n; i++) e.buf[b][i] = NAN;
        e.dbuf[b] = tu_alloc(n + 1, sizeof(float)); /* adjoints start at zero, as the runtime zeroes them */
        for (size_t i = 0; full && cg_adjoint_twinned(p, b) && i < n; i++) e.dbuf[b][i] = NAN; /* but these */
    }
    for (int k = 0; k < c->nstates; k++) {
        int64_t S = tu_state_len(&tp, k);
        e.state[k] = tu_alloc((size_t)((T + 1) * N * S), sizeof(float));
        for (int64_t i = 0; i < N * S; i++) e.state[k][i] = (float)tp.h0[k][i];
        for (int64_t i = N * S; i < (T + 1) * N * S; i++) e.state[k][i] = NAN;
        e.dstate[k][0] = tu_alloc((size_t)(N * S), sizeof(float));
        e.dstate[k][1] = to_float(dhT[k], (size_t)(N * S));
    }
    for (int o = 0; o < c->noutputs; o++) {
        int64_t D = tu_output_len(&tp, o);
        e.ldy[o] = D + 3;
        if (only_y0 && o > 0) continue;
        e.y[o] = tu_alloc((size_t)(T * N * e.ldy[o]), sizeof(float));
        for (int64_t i = 0; i < T * N * e.ldy[o]; i++) e.y[o][i] = NAN;
        e.dy[o] = tu_alloc((size_t)(T * N * e.ldy[o]), sizeof(float));
        for (int64_t i = 0; i < T * N * D; i++) e.dy[o][(i / D) * e.ldy[o] + i % D] = (float)dy[o][i];
    }
    if (!no_dx) e.dx = tu_alloc((size_t)(T * N * I), sizeof(float));
    e.dparam = tu_alloc((size_t)(N * L->acc_rows + 1), sizeof(float));
    e.dw = tu_alloc((size_t)L->packed_size + 1, sizeof(double));

    /* twins of every multiplied state (slot 0 is the runtime's to round) and twinned adjoint, in
     * fp16 or bf16 by the seed; NaN (fp16's and bf16's 0xffff) until written, adjoints zero */
    e.bf16 = (int)(seed & 1);
    for (int k = 0; k < c->nstates; k++) {
        if (!cg_state_multiplied(p, k)) continue;
        int64_t n = (T + 1) * N * tu_state_len(&tp, k);
        e.state16[k] = tu_alloc((size_t)n, sizeof(unsigned short));
        memset(e.state16[k], 0xff, (size_t)n * sizeof(unsigned short));
        e.state3[k] = tu_alloc((size_t)(6 * N * tu_state_len(&tp, k)), sizeof(float)); /* NaN until written */
        for (int64_t i = 0; i < 6 * N * tu_state_len(&tp, k); i++) e.state3[k][i] = NAN;
    }
    /* as the runtime (rt_regions, cg_adjoint_split_twinned): one step's columns, NaN until written */
    for (int b = 0; b < p->nbuffers; b++)
        if (cg_adjoint_split_twinned(L, b, e.dshared)) {
            e.dbuf3[b] = tu_alloc((size_t)(3 * N * L->buffer_width[b]), sizeof(float));
            for (int64_t i = 0; i < 3 * N * L->buffer_width[b]; i++) e.dbuf3[b][i] = NAN;
        }
    for (int b = 0; b < p->nbuffers; b++)
        if (cg_adjoint_twinned(p, b)) {
            e.dbuf16[b] = tu_alloc((size_t)(T * N * L->buffer_width[b] + 1), sizeof(unsigned short));
            if (full) memset(e.dbuf16[b], 0xff, (size_t)(T * N * L->buffer_width[b]) * sizeof(unsigned short));
        }
    for (int b = 0; b < p->nbuffers; b++) /* a multiplied value's twin, NaN until written */
        if (cg_value_twinned(p, b)) {
            e.buf16[b] = tu_alloc((size_t)(T * N * L->buffer_width[b] + 1), sizeof(unsigned short));
            memset(e.buf16[b], 0xff, (size_t)(T * N * L->buffer_width[b]) * sizeof(unsigned short));
        }
    float *own[RNN_MAX_BUFFERS] = {0}, *own_buf[RNN_MAX_BUFFERS] = {0}; /* what to free */
    unsigned short *own16[RNN_MAX_BUFFERS] = {0};
    float *own3[RNN_MAX_BUFFERS] = {0};
    for (int b = 0; b < p->nbuffers; b++) {
        own[b] = e.dbuf[b], own16[b] = e.dbuf16[b], own3[b] = e.dbuf3[b], own_buf[b] = e.buf[b];
        int a = cg_adjoint_shared(L, b);
        if (e.dshared && a >= 0) e.dbuf[b] = e.dbuf[a], e.dbuf16[b] = e.dbuf16[a], e.dbuf3[b] = e.dbuf3[a];
        if (e.summed && cg_value_summed(L, b) >= 0) e.buf[b] = e.buf[a]; /* b's step copies are a's step columns */
    }

    emu_program(&e, SCHED_HOIST, 0, 0);
    /* each step's split twins (tf32x3) hold what the next GEMM multiplies: the state's next value (every
     * sequence's, ended or not), the step adjoint its kernel alone stores */
    for (int64_t t = 0; t < T; t++) {
        emu_program(&e, SCHED_STEP, t, 0);
        for (int k = 0; k < c->nstates; k++)
            if (e.state3[k]) {
                const int64_t S = tu_state_len(&tp, k);
                check_split_twin(emu_state3(&e, k, t + 1), e.state[k] + (t + 1) * N * S, S, S, N, c->states[k].name, t);
            }
    }
    /* the post program over the whole loop, or (even seeds) in two windows of steps as a wavefront's chunks
     * run it: forward after each chunk's steps, backward first, the later chunk first */
    const int64_t split = seed % 2 ? 0 : T / 2;
    for (int w = 0; w < (split ? 2 : 1); w++) {
        e.pt0 = w ? split : 0, e.pt1 = split && !w ? split : T;
        emu_program(&e, SCHED_POST, 0, 0);
    }
    e.cur = 0;
    for (int w = 0; w < (split ? 2 : 1); w++) { /* its adjoints enter the step backward as dy does */
        e.pt0 = split && !w ? split : 0, e.pt1 = split && w ? split : T;
        emu_program(&e, SCHED_POST, 0, 1);
    }
    /* as the runtime (unit_backward_begin): with lengths, the split twins zeroed, for the columns of the
     * sequences that have not begun */
    for (int b = 0; e.lengths && b < p->nbuffers; b++)
        if (e.dbuf3[b]) memset(e.dbuf3[b], 0, (size_t)(3 * N * L->buffer_width[b]) * sizeof(float));
    for (int64_t t = T - 1; t >= 0; t--) {
        /* as the runtime, no zeroing: dstate_prev was zeroed by step t+1's kernels (or starts zero) */
        emu_program(&e, SCHED_STEP, t, 1);
        e.cur = 1 - e.cur;
        for (int b = 0; b < p->nbuffers; b++) {
            if (!e.dbuf3[b] || (e.dshared && cg_adjoint_shared(L, b) >= 0) || e.twins_only) continue;
            char what[32];
            snprintf(what, sizeof what, "B%d's adjoint", b);
            const int64_t W = L->buffer_width[b];
            if (p->buffers[b].program == SCHED_STEP) {
                check_split_twin(e.dbuf3[b], emu_buf(&e, e.dbuf, b, t), W, W, N, what, t);
                continue;
            }
            for (int64_t n = 0; n < N; n++) { /* a hoisted one's: each sequence's column of the position read */
                const int64_t len = e.lengths ? e.lengths[n] : T, pos = e.reverse ? len - 1 - t : t;
                if (t < len) check_split_twin(e.dbuf3[b] + 3 * W * n, e.dbuf[b] + (pos * N + n) * W, W, W, 1, what, t);
                for (int64_t i = 0; t >= len && i < 3 * W; i++) /* not begun: zero */
                    ck_assert_msg(e.dbuf3[b][3 * W * n + i] == 0, "%s at step %lld, column %lld: %g before it begins", what,
                                  (long long)t, (long long)n, e.dbuf3[b][3 * W * n + i]);
            }
        }
    }
    emu_program(&e, SCHED_HOIST, 0, 1);
    for (int j = 0; j < p->ngemms; j++) emu_gemm_weights(&e, j);

    /* compare */
    char what[300];
    /* gradients from adjoints rounded to 16 bits (twins_only): over the whole tensor, within the 16-bit bounds */
    const double grad_bound = !e.twins_only ? 1e-3 : e.bf16 ? 3e-2 : 5e-3;
#define GRAD_ERR(got, want, n, ld, len) (e.twins_only ? emu_err_whole(got, want, n, ld, len) : emu_err(got, want, n, ld, len))
#define CHECK_WITHIN(bound, err, ...) do { double e_ = (err); snprintf(what, sizeof what, __VA_ARGS__); \
        ck_assert_msg(e_ <= (bound), "%s (seed %llu, reverse %d, tiny %d, summed %d, twins_only %d): %s: error %g", c->name, \
                      (unsigned long long)seed, reverse, tiny, e.summed, e.twins_only, what, e_); } while (0)
#define CHECK(err, ...) CHECK_WITHIN(1e-3, err, __VA_ARGS__)
    for (int o = 0; o < c->noutputs; o++)
        if (e.y[o]) CHECK(emu_err(e.y[o], y[o], T * N * tu_output_len(&tp, o), e.ldy[o], tu_output_len(&tp, o)), "output %s", c->outputs[o].name);
    for (int k = 0; k < c->nstates; k++) {
        int64_t S = tu_state_len(&tp, k);
        CHECK(emu_err(e.state[k] + T * N * S, hT[k], N * S, S, S), "final state %s", c->states[k].name);
        CHECK_WITHIN(grad_bound, GRAD_ERR(e.dstate[k][1 - e.cur], dh0[k], N * S, S, S), "d initial state %s", c->states[k].name);
    }
    if (e.dx) CHECK_WITHIN(grad_bound, GRAD_ERR(e.dx, dx, T * N * I, I, I), "dx");
    for (int k = 0; k < c->nparams; k++) {
        int64_t n = L->param_rows[k] * L->param_cols[k];
        float *got = tu_alloc((size_t)n, sizeof(float));
        for (int64_t i = 0; i < n; i++) {
            double v = e.dw[L->param_offset[k] + i];
            if (L->acc_offset[k] >= 0)
                for (int64_t s = 0; s < N; s++) v += e.dparam[N * L->acc_offset[k] + s * L->param_rows[k] + i];
            IrRef f = p->param_fold[k];
            if (f != IR_NONE) { /* folded: the sum over every column of its matvec's adjoint (runtime: a GEMV) */
                int b = p->gemms[p->node[f].gemm].out_buffer;
                for (int64_t col = 0; col < T * N; col++)
                    v += emu_dres(&e, b, &e.dbuf[b][col * L->buffer_width[b] + L->block_row[f] + i]);
            }
            got[i] = (float)v;
        }
        CHECK_WITHIN(grad_bound, GRAD_ERR(got, dp[k], n, n, n), "d%s", c->params[k].name);
        free(got);
    }
    /* every twin holds its original rounded, bit for bit: steps 1..T's states, every adjoint */
    for (int k = 0; k < c->nstates; k++)
        for (int64_t i = N * tu_state_len(&tp, k); e.state16[k] && i < (T + 1) * N * tu_state_len(&tp, k); i++)
            ck_assert_msg(e.state16[k][i] == (e.bf16 ? rnn_round_bf16 : rnn_round_f16)(e.state[k][i]),
                          "%s: state %s's twin, element %lld: %#x for %g", c->name, c->states[k].name, (long long)i,
                          e.state16[k][i], e.state[k][i]);
    for (int b = 0; b < p->nbuffers; b++) /* every kept step's, zeros past a sequence's end included */
        for (int64_t i = 0; e.buf16[b] && i < T * N * L->buffer_width[b]; i++)
            ck_assert_msg(e.buf16[b][i] == (e.bf16 ? rnn_round_bf16 : rnn_round_f16)(e.buf[b][i]),
                          "%s: B%d's twin, element %lld: %#x for %g", c->name, b, (long long)i, e.buf16[b][i], e.buf[b][i]);
    for (int b = 0; !e.twins_only && b < p->nbuffers; b++)
        for (int64_t i = 0; e.dbuf16[b] && i < T * N * L->buffer_width[b]; i++)
            ck_assert_msg(e.dbuf16[b][i] == (e.bf16 ? rnn_round_bf16 : rnn_round_f16)(e.dbuf[b][i]),
                          "%s: B%d's adjoint twin, element %lld: %#x for %g", c->name, b, (long long)i, e.dbuf16[b][i],
                          e.dbuf[b][i]);
    /* with every sequence whole, every element of an adjoint left unzeroed was written: the fp32 one, or
     * where twins_only its twin alone (the fp32 one never: still NaN) */
    for (int b = 0; full && b < p->nbuffers; b++)
        for (int64_t i = 0; cg_adjoint_twinned(p, b) && i < T * N * L->buffer_width[b]; i++) {
            ck_assert_msg(!e.twins_only || isnan(e.dbuf[b][i]), "%s: B%d's adjoint, element %lld stored in fp32 under twins_only",
                          c->name, b, (long long)i);
            ck_assert_msg(!isnan(e.twins_only ? twin_value(e.dbuf16[b][i], e.bf16) : e.dbuf[b][i]),
                          "%s: B%d's adjoint, element %lld never written", c->name, b, (long long)i);
        }
    /* every kept step buffer was written: zeros past a sequence's end, no NaN left */
    for (int b = 0; b < p->nbuffers; b++)
        for (int64_t i = 0; i < T * N * L->buffer_width[b]; i++)
            ck_assert_msg(!isnan(e.buf[b][i]), "%s: buffer B%d element %lld never written", c->name, b, (long long)i);
#undef CHECK

    for (int b = 0; b < p->nbuffers; b++) { free(own_buf[b]); free(own[b]); free(own16[b]); free(own3[b]); free(e.buf16[b]); }
    for (int k = 0; k < c->nstates; k++) {
        free(e.state[k]), free(e.dstate[k][0]), free(e.dstate[k][1]), free(e.state16[k]), free(e.state3[k]);
    }
    for (int o = 0; o < c->noutputs; o++) { free(e.y[o]); free(e.dy[o]); }
    free(e.dx); free(e.dparam); free(e.dw); free(e.packed); free(e.x); free(e.lengths); free(packed);
    tu_free_arrays(y, c->noutputs); tu_free_arrays(hT, c->nstates); tu_free_arrays(dy, c->noutputs);
    tu_free_arrays(dhT, c->nstates); tu_free_arrays(dh0, c->nstates); tu_free_arrays(dp, c->nparams);
    free(dx);
    tu_problem_free(&tp);
}

/* A cell whose values take the unusual routes: a hoisted value used twice in one node and read
 * by a hoisted GEMM and a step group, states written from a GEMM result and from a leaf, a
 * state read twice in one node and by a GEMM, an output that is a parameter. */
static const char leafy_cell[] =
    "cell leafy(x[I]) -> h, p, q, r {\n"
    "    state h[H], s[H], u[I]\n"
    "    param W[H, I], U[H, H], b[H], w[I]\n"
    "    xx = x * x / (1 + x * x)\n"
    "    a = W @ xx\n"
    "    h' = U @ h\n"
    "    s' = s\n"
    "    u' = u * w + xx - w\n"
    "    p = b\n"
    "    q = h * h + a\n"
    "    r = sqrt(exp(u) + xx)\n"
    "}\n";

/* A cell whose four products (one hoisted, three of the step, each on its own operand) are added
 * up alone, with a bias: the three step GEMMs' adjoints are all kept in the hoisted GEMM's. */
static const char summed_cell[] =
    "cell summed(x[I]) -> h {\n"
    "    state h[H], c[H], m[H]\n"
    "    param W[H, I], U[H, H], V[H, H], R[H, H], b[H]\n"
    "    a = tanh(W @ x + U @ h + V @ m + R @ c + b)\n"
    "    h' = a * c\n"
    "    c' = c + a\n"
    "    m' = sigmoid(a)\n"
    "}\n";

/* Runs a cell's unit (dimensions bound 5, 7, 3, 5, ... or 4, 3, 6, ...) in five configurations. */
static void cpu_check_cell(Src *s, const IrCell *c, int dimset, unsigned flags) {
    static const int64_t sets[2][3] = {{5, 7, 3}, {4, 3, 6}};
    Plan *plan = sched_plan_opts(&s->arena, c, &s->diags, flags);
    ck_assert_ptr_nonnull(plan);
    int64_t *dv = arena_array(&s->arena, (size_t)c->ndims + 1, sizeof *dv);
    for (int d = 0, k = 0; d < c->ndims; d++) dv[d] = c->dims[d].name ? sets[dimset][k++ % 3] : c->dims[d].literal;
    PlanLayout *L = sched_layout(&s->arena, plan, dv, &s->diags);
    ck_assert_ptr_nonnull(L);
    char *src = emit(s, L);
    CpuUnit u;
    cpu_unit_load(&u, src, plan);
    cpu_check(c, L, &u, 1000 + (uint64_t)dimset, (EmuRun){.summed = 1});
    cpu_check(c, L, &u, 2000 + (uint64_t)dimset, (EmuRun){.reverse = 1, .tiny = 1, .no_dx = 1, .only_y0 = 1});
    cpu_check(c, L, &u, 3000 + (uint64_t)dimset, (EmuRun){.reverse = dimset, .full = 1, .summed = 1});
    cpu_check(c, L, &u, 4000 + (uint64_t)dimset, (EmuRun){0}); /* forward, lengths, not summed */
    cpu_check(c, L, &u, 5000 + (uint64_t)dimset, (EmuRun){.full = 1, .summed = 1, .twins_only = 1});
    dlclose(u.so);
    free(src);
}

/* Every step GEMM of summed_cell keeps its adjoint in the hoisted GEMM's buffer, and the kernel
 * stores it there once: three guarded fp32 stores (skipped too where the twin alone is read,
 * a.twins_only); the LSTM's twins are asserted in lstm_backward_routes. Reverse, the kernel stores
 * all four. */
START_TEST(summed_products_share_one_adjoint) {
    Src s;
    src_open(&s, "summed.cell", summed_cell);
    const char *dims[] = {"I=8", "H=16"};
    PlanLayout *L = layout_bound(&s, s.module->cells[0], dims, 2);
    const Plan *p = L->plan;
    int hoisted = -1, steps = 0;
    for (int j = 0; j < p->ngemms; j++) {
        int b = p->gemms[j].out_buffer;
        if (p->gemms[j].program == SCHED_HOIST) hoisted = b;
        else steps++;
    }
    ck_assert_int_eq(steps, 3);
    ck_assert_int_ge(hoisted, 0);
    for (int j = 0; j < p->ngemms; j++) {
        int b = p->gemms[j].out_buffer;
        ck_assert_int_eq(cg_adjoint_shared(L, b), b == hoisted ? -1 : hoisted);
        ck_assert_int_eq(cg_value_summed(L, b), b == hoisted ? -1 : hoisted);
    }
    char *src = emit(&s, L);
    char *k = strstr(src, "rnncc_summed_bs1(const RnnArgs a)");
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(count(k, "if (!a.dshared && !a.twins_only) a.dbuf["), 3);
    /* the forward's step kernel and the backward's recompute read the three step results as 0 where a.summed */
    ck_assert_int_eq(count(k, " = a.summed ? 0.0f : a.buf["), 3);
    char *f = strstr(src, "rnncc_summed_s1(const RnnArgs a)");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(count(f, " = a.summed ? 0.0f : a.buf[") - count(k, " = a.summed ? 0.0f : a.buf["), 3);
    free(src);
    src_close(&s);
}
END_TEST

/* The post program's kernels (plans with SCHED_POST_PROGRAM) on the CPU against the executor: the
 * readout cells (tests/testutil.c) and the wide random cells with a readout among the first twelve, in
 * both dimension sets, every EmuRun of cpu_check_cell. */
START_TEST(post_kernels_on_cpu_match_executor) {
    if (!have_cxx()) {
        fprintf(stderr, "post_kernels_on_cpu_match_executor: no C++ compiler ('%s'): skipped\n", cxx());
        return;
    }
    int posts = 0;
    char src[8192];
    for (int i = 0; i < TU_NPOST_CELLS + 12; i++) {
        if (i >= TU_NPOST_CELLS) ck_assert_int_gt(tu_random_cell_wide((uint64_t)(i - TU_NPOST_CELLS + 1), src, sizeof src), 0);
        Src s;
        src_open(&s, "post.cell", i < TU_NPOST_CELLS ? tu_post_cells[i] : src);
        const Plan *p = sched_plan_opts(&s.arena, s.module->cells[0], &s.diags, SCHED_POST_PROGRAM);
        ck_assert_ptr_nonnull(p);
        if (sched_has_program(p, SCHED_POST)) {
            posts++;
            cpu_check_cell(&s, s.module->cells[0], 0, SCHED_POST_PROGRAM);
            cpu_check_cell(&s, s.module->cells[0], 1, SCHED_POST_PROGRAM);
        }
        src_close(&s);
    }
    ck_assert_int_ge(posts, TU_NPOST_CELLS + 2); /* the wide family's readouts among them */
}
END_TEST

/* A post kernel's text: the window of steps, the step column tc, zeros past a sequence's end at tc,
 * and its backward's thread a (t, n, j) (it sums no parameter's adjoint); the header's post lines. A post
 * group that reads vector parameters (cell post's b and w): its backward walks the steps of a sequence a
 * thread, N*J items, against T*N*J for ro's. */
START_TEST(post_kernels_emit) {
    Src s;
    src_open(&s, "ro.cell", tu_post_cells[0]);
    const Plan *p = sched_plan_opts(&s.arena, s.module->cells[0], &s.diags, SCHED_POST_PROGRAM);
    ck_assert_ptr_nonnull(p);
    const int64_t dims[] = {5, 7, 3}; /* I, H, O */
    PlanLayout *L = sched_layout(&s.arena, p, dims, &s.diags);
    ck_assert_ptr_nonnull(L);
    char *k = emit(&s, L);
    const char *want[] = {
        "// step, T times:              GEMM G1, rnncc_ro_s1\n"
        "// post, once, after the loop: GEMM G2, rnncc_ro_p1\n"
        "// backward, post, once:       rnncc_ro_bp1, GEMM G2^T\n"
        "// backward, step, t = T-1..0: rnncc_ro_bs1, GEMM G1^T\n",
        "extern \"C\" __global__ void __launch_bounds__(256) rnncc_ro_p1(const RnnArgs a)",
        "const long long items = (long long)(a.t_end - a.t) * a.N * RNN_DIM_O;",
        "const int t = a.t + (int)(tn / a.N);  // the step",
        "const long long tc = (long long)t * a.N + n;  // its column of step and post buffers",
        "if (a.y[0]) a.y[0][tc * a.ldy[0] + j] = 0.0f;  // output y",
        "if (a.y[0]) a.y[0][col * a.ldy[0] + j] = v9_y;  // output y",
        "const float v9_y = a.buf[2][tc * 3 + j];  // V @ h': G2 block 0, post",
        "float d8_h_next = a.dbuf[3][n * RNN_DIM_H + j];  // d(h')", /* the step backward takes what G2^T sent */
        "if (!a.twins_only) a.dbuf[2][tc * 3 + j] = d9_y;",
        "// Once per layer, before the step program's backward, over the steps a.t .. a.t_end-1, before GEMM G2^T; "
        "one thread per (t, n, j), j < 3 (J = O).\n",
        "if (t >= len) continue;  // sequence n had ended: it sends nothing",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (!strstr(k, want[i])) fprintf(stderr, "%s\n", k);
        ck_assert_msg(strstr(k, want[i]), "no '%s' in ro's unit (above)", want[i]);
    }
    const char *bp = strstr(k, "rnncc_ro_bp1(const RnnArgs a)");
    ck_assert_ptr_nonnull(bp);
    ck_assert_ptr_nonnull(strstr(bp, "const long long items = (long long)(a.t_end - a.t) * a.N * RNN_DIM_O;"));
    ck_assert_ptr_null(strstr(k, "for (int t = a.t; t < a.t_end")); /* no kernel walks the steps */
    ck_assert_ptr_null(strstr(k, "rnncc_ro_s2")); /* the readout left the step */
    int ro_post = -1;
    for (int gi = 0; gi < p->ngroups; gi++)
        if (p->groups[gi].program == SCHED_POST) ro_post = gi;
    ck_assert_int_ge(ro_post, 0);
    ck_assert_int_eq(cg_post_backward_walks(p, ro_post), 0);
    ck_assert_int_eq(cg_backward_group_items(L, ro_post, 10, 7), 10 * 7 * 3);
    compile_ok(k, "ro.cu", "sm_90");
    free(k);
    src_close(&s);

    src_open(&s, "post.cell", tu_post_cells[1]);
    p = sched_plan_opts(&s.arena, s.module->cells[0], &s.diags, SCHED_POST_PROGRAM);
    ck_assert_ptr_nonnull(p);
    const int64_t pdims[] = {5, 7, 3, 2}; /* I, H, O, M */
    L = sched_layout(&s.arena, p, pdims, &s.diags);
    ck_assert_ptr_nonnull(L);
    int walks = 0;
    for (int gi = 0; gi < p->ngroups; gi++) {
        if (p->groups[gi].program != SCHED_POST) continue;
        const int w = cg_post_backward_walks(p, gi);
        walks += w;
        ck_assert_int_eq(cg_backward_group_items(L, gi, 10, 7), (w ? 7 : 10 * 7) * cg_group_width(L, gi));
    }
    ck_assert_int_ge(walks, 1); /* sigmoid(V @ h' + b), Q @ h' * w */
    k = emit(&s, L);
    ck_assert_ptr_nonnull(strstr(k, "for (int t = a.t; t < a.t_end && t < len; t++) {"));
    compile_ok(k, "post.cu", "sm_90");
    free(k);
    src_close(&s);
}
END_TEST

START_TEST(kernels_on_cpu_match_executor) {
    if (!have_cxx()) {
        fprintf(stderr, "kernels_on_cpu_match_executor: no C++ compiler ('%s'): skipped\n", cxx());
        return;
    }
    char **paths;
    int n = tu_list_cells(&paths);
    for (int i = 0; i < n; i++) {
        Src s;
        src_open_file(&s, paths[i]);
        for (int ci = 0; ci < s.module->ncells; ci++) cpu_check_cell(&s, s.module->cells[ci], i % 2, 0);
        src_close(&s);
    }
    tu_free_list(paths, n);
    static const char *const extra[][2] = {
        {"edge.cell", edge_cell}, {"hostile.cell", hostile_cell}, {"leafy.cell", leafy_cell}, {"summed.cell", summed_cell},
        {"early.cell", tu_early_cell}};
    for (int i = 0; i < 5; i++) {
        Src s;
        src_open(&s, extra[i][0], extra[i][1]);
        cpu_check_cell(&s, s.module->cells[0], 0, 0);
        cpu_check_cell(&s, s.module->cells[0], 1, 0);
        src_close(&s);
    }
    /* cells no test was written for (tests/testutil.c): six of the GPU suite's family, and twelve of
     * the wider one, whose groups mix lengths (s[P] beside h[H]), in both dimension sets (P shorter
     * than H, then longer) */
    char src[8192];
    for (uint64_t seed = 1; seed <= 12; seed++) {
        for (int wide = 0; wide < 2; wide++) {
            if (!wide && seed > 6) continue;
            ck_assert_int_gt((wide ? tu_random_cell_wide : tu_random_cell)(seed, src, sizeof src), 0);
            Src s;
            src_open(&s, wide ? "wide.cell" : "rnd.cell", src);
            for (int set = wide ? 0 : (int)(seed % 2); set <= (wide ? 1 : (int)(seed % 2)); set++)
                cpu_check_cell(&s, s.module->cells[0], set, 0);
            src_close(&s);
        }
    }
}
END_TEST

/* bytes (a multiple of 16) between two pages that no access may touch: against the one after
 * (at_end) or the one before; a read past that end faults. */
typedef struct GuardedMatrix {
    char *map;
    size_t size;
} GuardedMatrix;

static void *guarded_matrix(GuardedMatrix *g, size_t bytes, int at_end) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), inner = (bytes + page - 1) / page * page;
    g->size = inner + 2 * page;
    g->map = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(g->map != MAP_FAILED);
    ck_assert_int_eq(mprotect(g->map, page, PROT_NONE), 0);
    ck_assert_int_eq(mprotect(g->map + page + inner, page, PROT_NONE), 0);
    return at_end ? g->map + page + inner - bytes : g->map + page;
}

static void guarded_free(GuardedMatrix *g) { ck_assert_int_eq(munmap(g->map, g->size), 0); }

/* tf32 of x as cvt.rna.tf32.f32 rounds it: to nearest, ties away from zero, 13 low bits cleared. */
static float tf32_by_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A stream into *unit (*len bytes) for a C++ unit of persist.cuh's pieces (put_persist_text); fclose ends it. */
static FILE *persist_text_stream(char **unit, size_t *len) {
    *unit = NULL;
    FILE *f = open_memstream(unit, len);
    ck_assert_ptr_nonnull(f);
    return f;
}

/* The text of persist.cuh from the line starting with `from` to the end of its definition (the next
 * line that is "}" alone, or the line's own end with to_line_end), appended to f. */
static void put_persist_text(FILE *f, const char *from, int to_line_end) {
    const char *a = strstr(cg_persist_text, from);
    ck_assert_msg(a != NULL, "persist.cuh: no %s", from);
    const char *b = to_line_end ? strchr(a, '\n') : strstr(a, "\n}\n");
    ck_assert_ptr_nonnull(b);
    fprintf(f, "%.*s\n%s", (int)(b - a), a, to_line_end ? "" : "}\n");
}

/* persist.cuh's rnn_copy_columns16 and rnn_wfrag_load_t (their own text), run as C++ on the CPU one
 * thread after another, with rnn_ldsm_t as PTX's ldmatrix .x4 .trans: lane (g, t) gets, in word m,
 * column g of the 8x8 block whose row q lane 8m + q addresses, at rows 2t (low half) and 2t+1. Over a
 * cluster's blocks' columns (as the split backward copies them) or one block's, with K short of the
 * staged KC (zeros past it) or not, and shapes of rnn_wfrag<KI, MT> the deepbench (1024), flashrnn
 * (768) and small_b4 backwards take: every lane's fragments are rnn_wfrag_load's from the columns
 * transposed (rnn_load_transposed's layout), bit for bit; every address 16-byte aligned. */
START_TEST(untransposed_weight_load_on_cpu) {
    if (!have_cxx()) {
        fprintf(stderr, "untransposed_weight_load_on_cpu: no C++ compiler ('%s'): skipped\n", cxx());
        return;
    }
    char *unit;
    size_t len;
    FILE *f = persist_text_stream(&unit, &len);
    put_persist_text(f, "RNN_DEV void rnn_copy_columns16(", 0);
    put_persist_text(f, "template <int KI, int MT, typename V> struct rnn_wfrag ", 1);
    put_persist_text(f, "template <int PREC> struct rnn_wv ", 1);
    put_persist_text(f, "template <> struct rnn_wv<1> ", 1);
    put_persist_text(f, "template <int MT, int RPP, typename V, typename E>\nRNN_DEV void rnn_mma_a(", 0);
    put_persist_text(f, "template <int KI, int RW, int PREC>\nRNN_DEV void rnn_wfrag_load(", 0);
    put_persist_text(f, "template <int KI, int RW>\nRNN_DEV void rnn_wfrag_load_t(", 0);
    fputs("extern \"C\" void copy_cols(unsigned short *ws, int rp, int c0, int rw, const unsigned short *wg, long long cols,\n"
          "    int K, int KC, int lo, int rows) { for (unsigned t = 0; t < RNN_P_THREADS; t++) { threadIdx.x = t;\n"
          "    rnn_copy_columns16(ws, rp, c0, rw, wg, cols, K, KC, lo, rows); } }\n"
          "#define FRAGS(KI, RW) extern \"C\" void frag_t_##KI##_##RW(unsigned *out, const unsigned short *ws, int rp, int KC) {\\\n"
          "    for (ldsm_phase = 0; ldsm_phase < 2; ldsm_phase++) for (unsigned t = 0; t < RNN_P_THREADS; t++) {\\\n"
          "        threadIdx.x = t; ldsm_n = 0; rnn_wfrag<KI, (RW + 1) / 2, uint4> fr; rnn_wfrag_load_t<KI, RW>(fr, ws, rp, KC);\\\n"
          "        memcpy(out + t * (sizeof fr / 4), &fr, sizeof fr); } }\\\n"
          "    extern \"C\" void frag_##KI##_##RW(unsigned *out, const unsigned short *w, int ldw, int KC) {\\\n"
          "    for (unsigned t = 0; t < RNN_P_THREADS; t++) { threadIdx.x = t; rnn_wfrag<KI, (RW + 1) / 2, uint4> fr;\\\n"
          "        rnn_wfrag_load<KI, RW, 2>(fr, w, ldw, KC); memcpy(out + t * (sizeof fr / 4), &fr, sizeof fr); } }\n"
          "FRAGS(8, 2) FRAGS(3, 4) FRAGS(16, 1) FRAGS(2, 3)\n",
          f);
    ck_assert_int_eq(fclose(f), 0);
    static const char shim[] =
        "#include <string.h>\n#include <stdint.h>\n#define RNN_DEV inline\n#define RNN_WARPS 8\n#define RNN_P_THREADS 256\n"
        "enum { RNN_TF32 = 1 };\nstruct rnn_dim3 { unsigned x, y, z; };\nextern \"C\" { rnn_dim3 threadIdx; }\n"
        "struct alignas(16) uint4 { unsigned x, y, z, w; };\nstruct alignas(16) float4 { float x, y, z, w; };\n"
        "static void rnn_cp16(void *d, const void *s, int n) { if ((uintptr_t)d % 16 || (uintptr_t)s % 16) __builtin_trap();\n"
        "    memset(d, 0, 16); memcpy(d, s, n); }\n"
        "static int ldsm_phase, ldsm_n;  /* pass 0 takes every lane's addresses, pass 1 hands out the blocks */\n"
        "static const unsigned short *ldsm_at[RNN_WARPS][64][32];\n"
        "static uint4 rnn_ldsm_t(const unsigned short *p) {\n"
        "    const unsigned w = threadIdx.x / 32, l = threadIdx.x % 32, g = l / 4, t = l % 4; const int c = ldsm_n++;\n"
        "    uint4 v = {0, 0, 0, 0};\n"
        "    if ((uintptr_t)p % 16 || c >= 64) __builtin_trap();\n"
        "    if (!ldsm_phase) { ldsm_at[w][c][l] = p; return v; }\n"
        "    unsigned *o = &v.x;\n"
        "    for (int m = 0; m < 4; m++) o[m] = ldsm_at[w][c][8 * m + 2 * t][g] | (unsigned)ldsm_at[w][c][8 * m + 2 * t + 1][g] << 16;\n"
        "    return v; }\n";
    void *so = cxx_load(shim, unit, "-O1");
    free(unit);
    typedef void (*CopyCols)(unsigned short *, int, int, int, const unsigned short *, long long, int, int, int, int);
    typedef void (*Frags)(unsigned *, const unsigned short *, int, int);
    CopyCols copy_cols = (CopyCols)dlsym(so, "copy_cols");
    ck_assert_ptr_nonnull(copy_cols);
    /* {cols, K (the block's part), KI, RW, cluster (blocks sharing rows, splitting K), G}: KC = 32 KI x 8 warps */
    static const int cases[][6] = {
        {1024, 2048, 8, 2, 2, 128}, {1024, 2000, 8, 2, 2, 128}, {768, 768, 3, 4, 4, 96},
        {1024, 4096, 16, 1, 1, 128}, {1024, 512, 2, 3, 3, 128},
    };
    uint64_t r = 0x5eed;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int cols = cases[c][0], K = cases[c][1], KI = cases[c][2], RW = cases[c][3], C = cases[c][4], G = cases[c][5];
        const int KC = 32 * KI * 8, rp = 8 * RW, ro = cols / G, ldw = KC + 32, s = G - C; /* the grid's last cluster */
        char name[32];
        snprintf(name, sizeof name, "frag_t_%d_%d", KI, RW);
        Frags frag_t = (Frags)dlsym(so, name);
        snprintf(name, sizeof name, "frag_%d_%d", KI, RW);
        Frags frag = (Frags)dlsym(so, name);
        ck_assert(frag_t && frag && C * ro <= rp);
        unsigned short *wg = aligned_alloc(16, (size_t)K * (size_t)cols * 2), *S = aligned_alloc(16, (size_t)KC * (size_t)rp * 2),
                       *T = aligned_alloc(16, (size_t)rp * (size_t)ldw * 2);
        const size_t nfr = (size_t)KI * (size_t)((RW + 1) / 2) * 8 * 256; /* words: 2 uint4 a tile and k step, 256 threads */
        unsigned *got = malloc(nfr * 4), *want = malloc(nfr * 4);
        ck_assert(wg && S && T && got && want);
        for (size_t i = 0; i < (size_t)K * (size_t)cols; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            wg[i] = (unsigned short)(1 + (r >> 40) % 65535); /* never 0: a zero is a written zero */
        }
        memset(S, 0xff, (size_t)KC * (size_t)rp * 2);
        memset(T, 0, (size_t)rp * (size_t)ldw * 2);
        for (int b = 0; b < C; b++) { /* block b's columns at rows b * ro, as the split backward's loop copies them */
            const int lr = (int)((long long)cols * (s + b) / G), nr = (int)((long long)cols * (s + b + 1) / G) - lr;
            copy_cols(S, rp, b * ro, b == C - 1 ? rp - b * ro : ro, wg, cols, K, KC, lr, nr);
            for (int u = 0; u < nr; u++)
                for (int k = 0; k < K; k++) T[(size_t)(b * ro + u) * (size_t)ldw + (size_t)k] = wg[(size_t)k * (size_t)cols + (size_t)(lr + u)];
        }
        for (int k = 0; k < KC; k++)
            for (int row = 0; row < rp; row++)
                ck_assert_msg(S[(size_t)k * (size_t)rp + (size_t)row] == T[(size_t)row * (size_t)ldw + (size_t)k],
                              "case %zu: S[%d][%d] = %u, not %u", c, k, row, S[(size_t)k * (size_t)rp + (size_t)row],
                              T[(size_t)row * (size_t)ldw + (size_t)k]);
        frag_t(got, S, rp, KC);
        frag(want, T, ldw, KC);
        for (size_t i = 0; i < nfr; i++)
            ck_assert_msg(got[i] == want[i], "case %zu: word %zu of the fragments: %08x, not %08x", c, i, got[i], want[i]);
        free(wg);
        free(S);
        free(T);
        free(got);
        free(want);
    }
    dlclose(so);
}
END_TEST

/* persist.cuh's rnn_load_transposed (its own text, cut out of cg_persist_text), run as C++ on the
 * CPU one thread after another (its threads write disjoint elements and read none): for floats
 * (rounded to tf32 or not) and 16-bit values, at column strips that start on and off 16-byte
 * pieces, end at the matrix's edge, are empty or narrower than the rows kept, with K under one
 * thread a value: every element of ws is the matrix's (transposed) or zero, none left unwritten;
 * no 16-byte load misaligned (it traps) or past either end of the matrix (a guard page faults). */
START_TEST(transposed_weight_load_on_cpu) {
    if (!have_cxx()) {
        fprintf(stderr, "transposed_weight_load_on_cpu: no C++ compiler ('%s'): skipped\n", cxx());
        return;
    }
    char *unit;
    size_t len;
    FILE *f = persist_text_stream(&unit, &len);
    put_persist_text(f, "template <int ROUND, typename T>\nRNN_DEV void rnn_load_transposed(", 0);
    fputs("#define RUN(NAME, T, R) extern \"C\" void NAME(T *ws, int ldw, int rp, const T *wg, long long cols, int K, \\\n"
          "    int lo, int rows) { for (unsigned t = 0; t < RNN_P_THREADS; t++) { threadIdx.x = t; \\\n"
          "    rnn_load_transposed<R>(ws, ldw, rp, wg, cols, K, lo, rows); } }\n"
          "RUN(load_f, float, 0) RUN(load_tf32, float, 1) RUN(load_h, unsigned short, 0)\n",
          f);
    ck_assert_int_eq(fclose(f), 0);
    static const char shim[] = "#include <string.h>\n#define RNN_DEV inline\n#define RNN_P_THREADS 256\n"
                               "struct rnn_dim3 { unsigned x, y, z; };\nextern \"C\" { rnn_dim3 threadIdx; }\n"
                               "struct alignas(16) uint4 { unsigned x, y, z, w; };  /* a misaligned load traps (below) */\n"
                               "static float rnn_to_tf32(float x) { unsigned u; memcpy(&u, &x, 4);\n"
                               "    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u; memcpy(&x, &u, 4);\n"
                               "    return x; }\n";
    void *so = cxx_load(shim, unit, "-O1 -fsanitize=alignment -fsanitize-undefined-trap-on-error");
    free(unit);
    typedef void (*LoadF)(float *, int, int, const float *, long long, int, int, int);
    typedef void (*LoadH)(unsigned short *, int, int, const unsigned short *, long long, int, int, int);
    LoadF load_f = (LoadF)dlsym(so, "load_f"), load_tf32 = (LoadF)dlsym(so, "load_tf32");
    LoadH load_h = (LoadH)dlsym(so, "load_h");
    ck_assert(load_f && load_tf32 && load_h);
    /* {cols, K, pad, rp, lo, rows}: a piece is 4 floats or 8 halves. The matrix lies against a page
     * no access may touch, after it (its last row) or before it (its first): a read past either
     * end faults */
    static const int cases[][6] = {
        {72, 288, 4, 8, 9, 8},   {72, 288, 16, 8, 0, 8},  {72, 288, 4, 8, 64, 8},  {72, 288, 4, 8, 68, 0},
        {72, 288, 4, 8, 70, 0},  {72, 288, 4, 16, 3, 5},  {72, 5, 16, 8, 13, 7},   {1024, 4096, 32, 8, 56, 8},
        {1024, 4096, 32, 16, 3, 9}, {1024, 4096, 32, 8, 1017, 7}, {16, 33, 32, 24, 0, 16},
    };
    uint64_t r = 0x5eed;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int cols = cases[c][0], K = cases[c][1], ldw = K + cases[c][2], rp = cases[c][3], lo = cases[c][4],
                  rows = cases[c][5];
        size_t n = (size_t)K * (size_t)cols, m = (size_t)rp * (size_t)ldw;
        GuardedMatrix gf, gh;
        float *wf = guarded_matrix(&gf, n * sizeof(float), c % 2), *sf = malloc(m * sizeof(float));
        unsigned short *wh = guarded_matrix(&gh, n * 2, c % 2), *sh = malloc(m * 2);
        ck_assert(sf && sh);
        for (size_t i = 0; i < n; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            wf[i] = (float)((double)(r >> 11) * 0x1p-53 - 0.5) * 3.0f;
            wh[i] = (unsigned short)(1 + (r >> 40) % 65535); /* never 0: a zero is a written zero */
        }
        for (int pass = 0; pass < 3; pass++) {
            if (pass < 2) {
                for (size_t i = 0; i < m; i++) sf[i] = NAN; /* poison: every element must be written */
                (pass ? load_tf32 : load_f)(sf, ldw, rp, wf, cols, K, lo, rows);
            } else {
                memset(sh, 0xff, m * 2);
                load_h(sh, ldw, rp, wh, cols, K, lo, rows);
            }
            for (int row = 0; row < rp; row++)
                for (int k = 0; k < ldw; k++) {
                    int in = row < rows && k < K;
                    size_t at = (size_t)row * (size_t)ldw + (size_t)k, src = (size_t)k * (size_t)cols + (size_t)(lo + row);
                    if (pass < 2) {
                        float want = in ? (pass ? tf32_by_bits(wf[src]) : wf[src]) : 0.0f;
                        ck_assert_msg(memcmp(&sf[at], &want, sizeof want) == 0, "case %zu pass %d: ws[%d][%d] = %g, not %g",
                                      c, pass, row, k, (double)sf[at], (double)want);
                    } else {
                        unsigned short want = in ? wh[src] : 0;
                        ck_assert_msg(sh[at] == want, "case %zu: ws[%d][%d] = %u, not %u", c, row, k, sh[at], want);
                    }
                }
        }
        guarded_free(&gf);
        free(sf);
        guarded_free(&gh);
        free(sh);
    }
    dlclose(so);
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
    /* persistent_units_compile makes over 300 NVRTC compiles: ~300 s under ASan on a busy machine */
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, prelude_matches_opmath);
    tcase_add_test(tc, prelude_covers_op_table);
    tcase_add_test(tc, identifiers_and_literals);
    tcase_add_test(tc, literals_ignore_the_locale);
    tcase_add_test(tc, line_comments_quote_their_lines);
    tcase_add_test(tc, stateless_persistent_units_compile_clean);
    tcase_add_test(tc, golden_sources);
    tcase_add_test(tc, persistent_units_compile);
    tcase_add_test(tc, conversions_are_a_unit_of_their_own);
    tcase_add_test(tc, unit_parts_make_the_whole);
    tcase_add_test(tc, roundings_to_16_bits);
    tcase_add_test(tc, persistent_handoff_by_flags);
    tcase_add_test(tc, persistent_phases_hand_off_by_flags);
    tcase_add_test(tc, persistent_plan_says_why_not);
    tcase_add_test(tc, persistent_tiles_follow_the_ask);
    tcase_add_test(tc, persistent_plan_narrows_passes);
    tcase_add_test(tc, persistent_results_kept_and_loads_first);
    tcase_add_test(tc, persistent_sums_fused_in_the_group);
    tcase_add_test(tc, persistent_weights_in_registers);
    tcase_add_test(tc, persistent_rule_units_do_not_spill);
    tcase_add_test(tc, persistent_first_item_loaded_before_the_gemms);
    tcase_add_test(tc, persistent_first_item_takes_only_its_own_states);
    tcase_add_test(tc, persistent_groups_may_be_staggered);
    tcase_add_test(tc, persistent_early_loads_are_own_values);
    tcase_add_test(tc, persistent_first_item_decoded_once);
    tcase_add_test(tc, persistent_one_item_a_thread);
    tcase_add_test(tc, persistent_state_slots_take_a_mask);
    tcase_add_test(tc, persistent_fewer_blocks_keep_the_work);
    tcase_add_test(tc, persistent_rule_staged_on_fewest_blocks);
    tcase_add_test(tc, persistent_operands_loaded_straight);
    tcase_add_test(tc, persistent_clusters_need_alike_tails);
    tcase_add_test(tc, persistent_backward_splits_k);
    tcase_add_test(tc, persistent_tiles_staged_in_waves);
    tcase_add_test(tc, persistent_backward_first_writers_store);
    tcase_add_test(tc, persistent_backward_seeds_in_registers);
    tcase_add_test(tc, persistent_odd_rows_copied_by_words);
    tcase_add_test(tc, persistent_rule_reads_the_plan);
    tcase_add_test(tc, persistent_rule_splits_a_backward_of_17_to_32);
    tcase_add_test(tc, persistent_backward_twins_staged);
    tcase_add_test(tc, persistent_fours_hold_weights_or_pairs_do);
    tcase_add_test(tc, lstm_backward_routes);
    tcase_add_test(tc, keywords_are_refused);
    tcase_add_test(tc, generator_refuses_bad_names);
    tcase_add_test(tc, names_are_mangled);
    tcase_add_test(tc, edge_cell_emits_and_compiles);
    tcase_add_test(tc, launch_helpers);
    tcase_add_test(tc, nvrtc_failure_keeps_log_and_listing);
    tcase_add_test(tc, nvrtc_targets_and_options);
    tcase_add_test(tc, shipped_cells_emit_and_compile);
    tcase_add_test(tc, summed_products_share_one_adjoint);
    tcase_add_test(tc, kernels_on_cpu_match_executor);
    tcase_add_test(tc, post_kernels_on_cpu_match_executor);
    tcase_add_test(tc, post_kernels_emit);
    tcase_add_test(tc, transposed_weight_load_on_cpu);
    tcase_add_test(tc, untransposed_weight_load_on_cpu);
    tcase_add_test(tc, persistent_backward_held_weights_copied_as_they_lie);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return tu_run_suite(codegen_suite());
}
