/* Tests for the on-disk JIT cache (runtime/rt_cache.c), on real NVRTC output (no GPU
 * needed): miss, store, hit, corruption and truncation detected and rebuilt, atomic writes,
 * the directory's permissions, turning it off, and keys that change with what they cover; and
 * the builds that fill it (runtime/rt_build.c): several compiles side by side, their failures
 * reported with NVRTC's log, an abandoned build joined. */
#define _DEFAULT_SOURCE
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/cg.h"
#include "../runtime/rt_cache.h"
#include "../runtime/rt_internal.h"
#include "../runtime/rt_nvrtc.h"
#include "testutil.h"

static char dir[256];

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/rnncc-cache-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/cache", dir);
    setenv("RNNCC_CACHE_DIR", sub, 1);
    unsetenv("RNNCC_CACHE_DISABLE");
}

static void teardown(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The LSTM's plan laid out at I=8, H=16, in arena a (diagnostics in d). */
static const PlanLayout *lstm_layout(Arena *a, Diags *d) {
    const IrCell *c = tu_compile_file(a, "cells/lstm.cell")->cells[0];
    diag_init(d, a, "lstm", NULL, 0);
    const Plan *p = sched_plan(a, c, d);
    int64_t *dv = arena_array(a, 2, sizeof *dv);
    dv[0] = 8, dv[1] = 16;
    const PlanLayout *L = sched_layout(a, p, dv, d);
    ck_assert_ptr_nonnull(L);
    return L;
}

/* The LSTM's kernels compiled to a CUBIN for sm_90 through NVRTC. */
static void compiled_lstm(void **bin, size_t *len, char **source) {
    Arena a; arena_init(&a);
    Diags d;
    const PlanLayout *L = lstm_layout(&a, &d);
    StrBuf src = {0};
    ck_assert(cg_emit_forward(&a, L->plan, L, &src, &d));
    RtNvrtcResult res;
    ck_assert_int_eq(rt_nvrtc_compile(sb_str(&src), "lstm", RT_NVRTC_CUBIN, "sm_90", &res), RT_NVRTC_OK);
    *bin = res.image;
    *len = res.size;
    res.image = NULL;
    rt_nvrtc_result_free(&res);
    *source = sb_take(&src);
    arena_free(&a);
}

static void key_of(const char *source, const char *arch, char key[33]) {
    RtHash h;
    rt_hash_init(&h);
    rt_hash_add_str(&h, source);
    rt_hash_add_str(&h, arch);
    rt_hash_hex(&h, key);
}

START_TEST(miss_store_hit) {
    RtCache c;
    rt_cache_open(&c);
    ck_assert_msg(c.enabled, "%s", c.why_disabled);
    struct stat st;
    ck_assert_int_eq(stat(c.dir, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    void *bin, *got;
    size_t len, glen;
    char *src, key[33];
    compiled_lstm(&bin, &len, &src);
    key_of(src, "sm_90", key);
    ck_assert_int_eq(rt_cache_get(&c, key, &got, &glen), 0);
    ck_assert_int_eq(rt_cache_put(&c, key, bin, len), 1);
    ck_assert_int_eq(rt_cache_get(&c, key, &got, &glen), 1);
    ck_assert_uint_eq(glen, len);
    ck_assert_int_eq(memcmp(got, bin, len), 0);
    /* nothing but the entry is left in the directory (no temporary files) */
    DIR *dp = opendir(c.dir);
    int files = 0;
    for (struct dirent *e; (e = readdir(dp));) files += e->d_name[0] != '.' || strncmp(e->d_name, ".tmp", 4) == 0;
    closedir(dp);
    ck_assert_int_eq(files, 1);
    free(got); free(bin); free(src);
}
END_TEST

/* Damages the stored entry with fn, then expects a miss and the entry gone. */
static void expect_damage_detected(void (*damage)(const char *path, size_t len)) {
    RtCache c;
    rt_cache_open(&c);
    void *bin, *got = NULL;
    size_t len, glen;
    char *src, key[33], path[4400];
    compiled_lstm(&bin, &len, &src);
    key_of(src, "sm_90", key);
    ck_assert_int_eq(rt_cache_put(&c, key, bin, len), 1);
    snprintf(path, sizeof path, "%s/%s.bin", c.dir, key);
    damage(path, len);
    ck_assert_int_eq(rt_cache_get(&c, key, &got, &glen), 0);
    ck_assert_int_ne(access(path, F_OK), 0); /* deleted, to be rebuilt */
    ck_assert_int_eq(rt_cache_put(&c, key, bin, len), 1);
    ck_assert_int_eq(rt_cache_get(&c, key, &got, &glen), 1);
    ck_assert_int_eq(memcmp(got, bin, len), 0);
    free(got); free(bin); free(src);
}

static void flip_a_byte(const char *path, size_t len) {
    FILE *f = fopen(path, "r+b");
    fseek(f, 24 + (long)len / 2, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 24 + (long)len / 2, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
}

static void truncate_it(const char *path, size_t len) { ck_assert_int_eq(truncate(path, (off_t)(len / 3)), 0); }
static void bad_magic(const char *path, size_t len) {
    (void)len;
    FILE *f = fopen(path, "r+b");
    fputc('X', f);
    fclose(f);
}
static void extra_bytes(const char *path, size_t len) {
    (void)len;
    FILE *f = fopen(path, "ab");
    fputs("trailing", f);
    fclose(f);
}

START_TEST(corruption_is_detected_and_rebuilt) {
    expect_damage_detected(flip_a_byte);
    expect_damage_detected(truncate_it);
    expect_damage_detected(bad_magic);
    expect_damage_detected(extra_bytes);
}
END_TEST

START_TEST(can_be_turned_off) {
    setenv("RNNCC_CACHE_DISABLE", "1", 1);
    RtCache c;
    rt_cache_open(&c);
    ck_assert(!c.enabled);
    ck_assert_ptr_nonnull(strstr(c.why_disabled, "RNNCC_CACHE_DISABLE"));
    ck_assert_int_eq(rt_cache_put(&c, "0123", "x", 1), 0);
    void *got;
    size_t glen;
    ck_assert_int_eq(rt_cache_get(&c, "0123", &got, &glen), 0);
}
END_TEST

START_TEST(refuses_a_directory_open_to_others) {
    char sub[300];
    snprintf(sub, sizeof sub, "%s/open", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    ck_assert_int_eq(chmod(sub, 0777), 0);
    setenv("RNNCC_CACHE_DIR", sub, 1);
    RtCache c;
    rt_cache_open(&c);
    ck_assert(!c.enabled);
    ck_assert_ptr_nonnull(strstr(c.why_disabled, "open to other users"));
}
END_TEST

START_TEST(keys_cover_their_inputs) {
    char a[33], b[33], c[33];
    key_of("source", "sm_90", a);
    key_of("source", "sm_80", b);
    key_of("sourcE", "sm_90", c);
    ck_assert_str_ne(a, b);
    ck_assert_str_ne(a, c);
    RtHash h1, h2;
    rt_hash_init(&h1); rt_hash_add_str(&h1, "ab"); rt_hash_add_str(&h1, "c");
    rt_hash_init(&h2); rt_hash_add_str(&h2, "a"); rt_hash_add_str(&h2, "bc");
    char k1[33], k2[33];
    rt_hash_hex(&h1, k1); rt_hash_hex(&h2, k2);
    ck_assert_str_ne(k1, k2);
    ck_assert_int_eq((int)strlen(k1), 32);
}
END_TEST

/* A model as far as rt_build.c reads it: cell name, architecture, cache (RNNCC_CACHE_DIR's). */
static void build_model(rnncc_model *m, IrCell *cell) {
    memset(m, 0, sizeof *m);
    memset(cell, 0, sizeof *cell);
    cell->name = "lstm";
    m->cell = cell;
    snprintf(m->arch, sizeof m->arch, "sm_90");
    rt_cache_open(&m->cache);
    ck_assert(m->cache.enabled);
}

/* The cache's entries (no temporary files among them). */
static int entries(const RtCache *c) {
    DIR *dp = opendir(c->dir);
    int files = 0;
    for (struct dirent *e; dp && (e = readdir(dp));) files += e->d_name[0] != '.';
    if (dp) closedir(dp);
    return files;
}

/* A model's conversion unit holds what it launches: the state staging in its precision's rounding, the
 * 16-bit modes' conversions, tf32x3's split, the fold's column moves where it folds (rt_convert_needs). */
START_TEST(conversion_unit_holds_what_the_model_launches) {
    rnncc_model m;
    IrCell cell;
    build_model(&m, &cell);
    IrFold fold;
    memset(&fold, 0, sizeof fold);
    const struct { rnncc_precision p; int folds; unsigned what; } cases[] = {
        {RNNCC_FP32, 0, 0},
        {RNNCC_TF32, 0, 0},
        {RNNCC_FP16, 0, CG_CONVERT_HALF},
        {RNNCC_BF16, 0, CG_CONVERT_HALF | CG_CONVERT_BF16},
        {RNNCC_TF32X3, 0, CG_CONVERT_X3},
        {RNNCC_FP32, 1, CG_CONVERT_FOLD},
        {RNNCC_TF32, 1, CG_CONVERT_FOLD},
        {RNNCC_FP16, 1, CG_CONVERT_HALF | CG_CONVERT_FOLD},
        {RNNCC_BF16, 1, CG_CONVERT_HALF | CG_CONVERT_BF16 | CG_CONVERT_FOLD},
        {RNNCC_TF32X3, 1, CG_CONVERT_X3 | CG_CONVERT_FOLD},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        m.precision = cases[i].p;
        m.fold = cases[i].folds ? &fold : NULL;
        ck_assert_uint_eq(rt_convert_needs(&m), cases[i].what);
    }
}
END_TEST

/* A launch of a kernel the model's conversion unit lacks fails the call with an internal error naming it
 * and rt_convert_needs, before any CUDA call (so here too, without a GPU). */
START_TEST(a_kernel_the_conversion_unit_lacks_fails_the_call) {
    rnncc_model m;
    IrCell cell;
    build_model(&m, &cell);
    int arg = 0;
    void *args[] = {&arg};
    cudaLaunchConfig_t cfg = {.gridDim = {1, 1, 1}, .blockDim = {CG_BLOCK_SIZE, 1, 1}};
    ck_assert_int_eq(rt_launch_convert(&m, &cfg, NULL, args, "fold column"), RNNCC_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.error, "internal: this model's conversion unit holds no fold column kernel (rt_convert_needs)");
    m.error[0] = 0;
    ck_assert_int_eq(rt_launch_columns(&m, NULL, NULL, args, 1000, 3), RNNCC_ERR_UNSUPPORTED);
    ck_assert_str_eq(m.error, "internal: this model's conversion unit holds no conversion kernel (rt_convert_needs)");
}
END_TEST

/* The runtime's three programs of an LSTM model in fp16 (forward part, backward part,
 * conversions) build at once, land in the cache, and come back from it without a compile; a GRU
 * model's conversion unit, the same source, is the LSTM's entry. */
START_TEST(builds_run_side_by_side_into_the_cache) {
    Arena a; arena_init(&a);
    Diags d;
    const PlanLayout *L = lstm_layout(&a, &d);
    StrBuf src[3] = {{0}, {0}, {0}};
    ck_assert(cg_emit_unit(&a, L->plan, L, CG_UNIT_FORWARD, &src[0], &d));
    ck_assert(cg_emit_unit(&a, L->plan, L, CG_UNIT_BACKWARD, &src[1], &d));
    ck_assert(cg_emit_convert(&src[2], CG_CONVERT_HALF));
    rnncc_model m;
    IrCell cell;
    build_model(&m, &cell);
    RtBuild b[3];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) rt_build_start(&m, &b[i], sb_str(&src[i]), NULL, 0);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(b[i].from_cache, round);
            ck_assert_int_eq(b[i].job.threaded, !round); /* a miss compiles on its own thread */
        }
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(rt_build_wait(&m, &b[i]), RNNCC_OK);
            ck_assert_ptr_nonnull(b[i].bin);
            ck_assert_uint_gt(b[i].len, 1000);
        }
        for (int i = 0; i < 3; i++) rt_build_free(&b[i]);
        ck_assert_int_eq(entries(&m.cache), 3);
    }
    /* fresh: compiled again though cached */
    rt_build_start(&m, &b[0], sb_str(&src[2]), "sm_80", 1);
    ck_assert(!b[0].from_cache && b[0].job.threaded);
    ck_assert_int_eq(rt_build_wait(&m, &b[0]), RNNCC_OK);
    rt_build_free(&b[0]);
    ck_assert_int_eq(entries(&m.cache), 4); /* sm_80's is an entry of its own */
    /* another cell's model takes the same conversion unit from the cache: NVRTC's program name (the cell's)
     * is no part of the key */
    cell.name = "gru";
    rt_build_start(&m, &b[0], sb_str(&src[2]), NULL, 0);
    ck_assert(b[0].from_cache);
    ck_assert_int_eq(rt_build_wait(&m, &b[0]), RNNCC_OK);
    rt_build_free(&b[0]);
    for (int i = 0; i < 3; i++) sb_free(&src[i]);
    arena_free(&a);
}
END_TEST

/* A source NVRTC refuses fails its own build, with the cell, the target and NVRTC's log in the
 * model's error, and leaves the one compiled beside it whole; a build never waited for is joined
 * by rt_build_free. */
START_TEST(a_failed_build_reports_and_others_stand) {
    rnncc_model m;
    IrCell cell;
    build_model(&m, &cell);
    StrBuf conv = {0};
    ck_assert(cg_emit_convert(&conv, CG_CONVERT_ALL));
    const char *bad = "extern \"C\" __global__ void k(float *p) { p[0] = undeclared_thing; }\n";
    RtBuild b[3];
    rt_build_start(&m, &b[0], bad, NULL, 0);
    rt_build_start(&m, &b[1], sb_str(&conv), NULL, 0);
    rt_build_start(&m, &b[2], sb_str(&conv), "sm_80", 0);
    for (int again = 0; again < 2; again++) {
        m.error[0] = 0;
        ck_assert_int_eq(rt_build_wait(&m, &b[0]), RNNCC_ERR_NVRTC);
    }
    ck_assert_ptr_nonnull(strstr(m.error, "compiling the kernels of cell 'lstm' for sm_90"));
    ck_assert_ptr_nonnull(strstr(m.error, "undeclared_thing"));
    ck_assert_ptr_null(b[0].bin);
    ck_assert_int_eq(rt_build_wait(&m, &b[1]), RNNCC_OK);
    void *bin = b[1].bin;
    ck_assert_ptr_nonnull(bin);
    ck_assert_int_eq(rt_build_wait(&m, &b[1]), RNNCC_OK); /* a second wait keeps the same CUBIN */
    ck_assert_ptr_eq(b[1].bin, bin);
    for (int i = 0; i < 3; i++) rt_build_free(&b[i]); /* b[2]: joined here */
    ck_assert_int_eq(entries(&m.cache), 1); /* b[1]'s: the failure caches nothing, nor a build never waited for */
    sb_free(&conv);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, miss_store_hit);
    tcase_add_test(tc, corruption_is_detected_and_rebuilt);
    tcase_add_test(tc, can_be_turned_off);
    tcase_add_test(tc, refuses_a_directory_open_to_others);
    tcase_add_test(tc, keys_cover_their_inputs);
    tcase_add_test(tc, conversion_unit_holds_what_the_model_launches);
    tcase_add_test(tc, a_kernel_the_conversion_unit_lacks_fails_the_call);
    tcase_add_test(tc, builds_run_side_by_side_into_the_cache);
    tcase_add_test(tc, a_failed_build_reports_and_others_stand);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
