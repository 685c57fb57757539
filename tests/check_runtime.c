/* Tests for the runtime and the public API (runtime/). Everywhere: statuses, compile errors
 * through the API, argument checking with messages that name the argument, failed handles.
 * With a GPU: every shipped cell against the double-precision reference in many
 * configurations (layers, directions, lengths, T = 1, N = 1, odd sizes, fp32 and tf32,
 * graphs on and off, training mode), error recovery, parameters, streams and threads.
 * Without one, the GPU cases skip themselves and say so. */
#include <check.h>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runtime/rnncc.h"
#include "../runtime/rt_internal.h"
#include "../runtime/rt_verify.h"
#include "testutil.h"
#include "../runtime/rt_nvrtc.h"
#define RNN_DEV static inline /* the prelude's rnn_round_f16 and rnn_round_bf16, as the CPU runs them */
#include "../codegen/prelude.cuh"

/* Asks in a child process, so this process's CUDA stays uninitialised and Check's forked
 * test processes can still use the GPU. */
static int gpu_present(void) {
    pid_t pid = fork();
    if (pid == 0) {
        int n = 0;
        _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static rnncc_program *compile_ok(const char *path) {
    rnncc_program *p = NULL;
    rnncc_status s = rnncc_compile_file(path, NULL, &p);
    ck_assert_msg(s == RNNCC_OK, "%s: %s\n%s", path, rnncc_status_string(s), rnncc_program_log(p));
    return p;
}

static const char *lstm_dims[] = {"I=8", "H=16"};

/* ---- everywhere ---------------------------------------------------------------------------- */

START_TEST(status_strings) {
    for (int s = RNNCC_OK; s <= RNNCC_ERR_WORKSPACE; s++) {
        ck_assert_ptr_nonnull(rnncc_status_string((rnncc_status)s));
        ck_assert_str_ne(rnncc_status_string((rnncc_status)s), "unknown status");
    }
    ck_assert_str_eq(rnncc_status_string((rnncc_status)999), "unknown status");
    ck_assert_str_eq(rnncc_version(), RNNCC_VERSION);
    static const char *const names[] = {"fp32", "tf32", "fp16", "bf16", "tf32x3"};
    for (int p = RNNCC_FP32; p <= RNNCC_TF32X3; p++) ck_assert_str_eq(rnncc_precision_name((rnncc_precision)p), names[p]);
    ck_assert_str_eq(rnncc_precision_name((rnncc_precision)5), "?");
}
END_TEST

typedef struct Seen { int errors; char first[2048]; } Seen;
static void on_diag(void *user, const char *level, const char *text) {
    Seen *s = user;
    if (strcmp(level, "error") == 0 && s->errors++ == 0) snprintf(s->first, sizeof s->first, "%s", text);
}

START_TEST(compile_errors_through_the_api) {
    const char *src = "cell c(x[I]) -> h {\n  state h[H]\n  h' = tanh(q)\n}\n";
    Seen seen = {0, ""};
    rnncc_compile_options opts = {on_diag, &seen};
    rnncc_program *p = NULL;
    ck_assert_int_eq(rnncc_compile_string(src, strlen(src), "bad.cell", &opts, &p), RNNCC_ERR_COMPILE);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(strstr(rnncc_program_log(p), "bad.cell:3:13: error: unknown name 'q'"));
    ck_assert_int_eq(seen.errors, 1);
    ck_assert_ptr_nonnull(strstr(seen.first, "bad.cell:3:13: error: unknown name 'q'"));
    ck_assert_ptr_nonnull(strstr(seen.first, "^"));
    /* a model from a failed program: an argument error naming the program */
    rnncc_model_desc desc = {NULL, lstm_dims, 2, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO, RNNCC_FOLD_AUTO, 0};
    rnncc_model *m = NULL;
    ck_assert_int_eq(rnncc_model_create(p, &desc, &m), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "program"));
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    ck_assert_int_eq(rnncc_compile_file("no/such/file.cell", NULL, &p), RNNCC_ERR_NOT_FOUND);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(rnncc_compile_string("x", 1, "a", NULL, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    /* calls refused before there is a program: the callback hears why, naming the file or the argument */
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_file("no/such/file.cell", &opts, &p), RNNCC_ERR_NOT_FOUND);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(seen.first, "no/such/file.cell: error: cannot open: No such file or directory\n");
    /* a path of 1000 characters and more: its message whole, the reason at its end */
    char longpath[1100] = "no/such";
    while (strlen(longpath) < 1000) strcat(longpath, "/dir");
    strcat(longpath, "/f.cell");
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_file(longpath, &opts, &p), RNNCC_ERR_NOT_FOUND);
    ck_assert_int_eq(strlen(seen.first), strlen(longpath) + strlen(": error: cannot open: No such file or directory\n"));
    ck_assert_ptr_nonnull(strstr(seen.first, "/f.cell: error: cannot open: No such file or directory\n"));
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_file("cells", &opts, &p), RNNCC_ERR_NOT_FOUND);
    ck_assert_str_eq(seen.first, "cells: error: cannot read: Is a directory\n");
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_file(NULL, &opts, &p), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(seen.first, "rnncc: error: path is NULL\n");
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_string(NULL, 5, "n.cell", &opts, &p), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(seen.first, "n.cell: error: source is NULL but len is 5\n");
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_string("x", 1, "o.cell", &opts, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(seen.first, "o.cell: error: out is NULL\n");
    /* a file past the limit (sparse: 64 MiB and one byte of zeros): a program whose log says so */
    char big[] = "/tmp/rnncc-big-XXXXXX";
    int fd = mkstemp(big);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)RNNCC_MAX_SOURCE_BYTES + 1), 0);
    close(fd);
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_file(big, &opts, &p), RNNCC_ERR_COMPILE);
    unlink(big);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(strstr(rnncc_program_log(p), ": error: the file is longer than 67108864 bytes, the most a cell source may be"));
    ck_assert_str_eq(seen.first, rnncc_program_log(p));
    rnncc_program_destroy(p);
    /* a length past the limit: said in the log and to the callback, no byte of the source read (a 1-byte one
     * here), no allocation of len + 1 bytes (SIZE_MAX + 1 wraps to 0) */
    seen = (Seen){0, ""};
    ck_assert_int_eq(rnncc_compile_string("x", SIZE_MAX, "huge.cell", &opts, &p), RNNCC_ERR_COMPILE);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(strstr(rnncc_program_log(p), "huge.cell: error: len is 18446744073709551615 bytes; a cell source is at "
                                               "most 67108864 bytes"), "%s", rnncc_program_log(p));
    ck_assert_int_eq(seen.errors, 1);
    ck_assert_int_eq(rnncc_model_create(p, &desc, &m), RNNCC_ERR_INVALID_ARGUMENT);
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    ck_assert_int_eq(rnncc_compile_string("x", (64u << 20) + 1, "long.cell", NULL, &p), RNNCC_ERR_COMPILE);
    ck_assert_ptr_nonnull(strstr(rnncc_program_log(p), "len is 67108865 bytes"));
    rnncc_program_destroy(p);
}
END_TEST

/* Creates a model expecting failure with status and a message containing text. */
static void expect_create_fails(rnncc_program *p, const rnncc_model_desc *desc, rnncc_status want, const char *text) {
    rnncc_model *m = NULL;
    rnncc_status s = rnncc_model_create(p, desc, &m);
    ck_assert_msg(s == want, "status %s, want %s (%s)", rnncc_status_string(s), rnncc_status_string(want), rnncc_model_error(m));
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(strstr(rnncc_model_error(m), text) != NULL, "message '%s' lacks '%s'", rnncc_model_error(m), text);
    /* a failed handle answers only error and destroy */
    ck_assert_int_eq(rnncc_model_param_count(m), 0);
    ck_assert_int_eq(rnncc_model_set_param(m, "W_i", 0, 0, (float[1]){0}, 1), RNNCC_ERR_INVALID_ARGUMENT);
    size_t bytes;
    ck_assert_int_eq(rnncc_workspace_size(m, 1, 1, 0, &bytes), RNNCC_ERR_INVALID_ARGUMENT);
    /* which backend: refused, why holding the creation's error and *backend not written */
    for (int backward = 0; backward < 2; backward++) {
        char why[640];
        memset(why, 'x', sizeof why);
        rnncc_backend b = (rnncc_backend)7;
        ck_assert_int_eq(backward ? rnncc_model_backward_backend(m, 4, &b, why, sizeof why)
                                  : rnncc_model_backend(m, 4, &b, why, sizeof why),
                         RNNCC_ERR_INVALID_ARGUMENT);
        ck_assert_str_eq(why, rnncc_model_error(m));
        ck_assert_int_eq(b, 7);
    }
    rnncc_model_destroy(m);
}

/* The caller's value of environment variable name, kept in outer ("" when unset; values of up
 * to 15 characters), and put back by env_restore: a run may set RNNCC_PERSIST_CLUSTER for every case. */
static void env_keep(const char *name, char outer[16]) {
    const char *v = getenv(name);
    snprintf(outer, 16, "%s", v ? v : "");
}
static void env_restore(const char *name, const char outer[16]) {
    if (*outer) setenv(name, outer, 1);
    else unsetenv(name);
}

/* The cluster size RNNCC_PERSIST_CLUSTER forces now (a config's or the caller's; 0 where unset). */
static int cluster_in_force(void) {
    const char *v = getenv("RNNCC_PERSIST_CLUSTER");
    return v ? atoi(v) : 0;
}

START_TEST(model_arguments_are_checked) {
    rnncc_program *p = compile_ok("cells/lstm.cell");
    rnncc_model_desc ok = {NULL, lstm_dims, 2, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO, RNNCC_FOLD_AUTO, 0}, d;
    expect_create_fails(NULL, &ok, RNNCC_ERR_INVALID_ARGUMENT, "program is NULL");
    expect_create_fails(p, NULL, RNNCC_ERR_INVALID_ARGUMENT, "desc is NULL");
    ck_assert_int_eq(rnncc_model_keep_half_weights(NULL, 1), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(rnncc_model_keep_derived_weights(NULL, 1), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(rnncc_model_weights_changed(NULL), RNNCC_ERR_INVALID_ARGUMENT);
    uint16_t *w16 = (uint16_t *)&w16;
    int64_t n16 = 7;
    ck_assert_int_eq(rnncc_model_weights16(NULL, &w16, &n16), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert(w16 == NULL && n16 == 0);
    char why[16] = "stale";
    rnncc_backend b = (rnncc_backend)7;
    ck_assert_int_eq(rnncc_model_backend(NULL, 4, &b, why, sizeof why), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(why, "model is NULL");
    ck_assert_int_eq(b, 7);
    ck_assert_int_eq(rnncc_model_backward_backend(NULL, 4, &b, why, 4), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(why, "mod"); /* cut to why_size */
    d = ok; d.layers = 0;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->layers");
    d = ok; d.bidirectional = 3;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->bidirectional");
    d = ok; d.device = -2;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->device is -2; it must be a device ordinal, or -1");
    d = ok; d.precision = (rnncc_precision)7;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->precision");
    d = ok; d.precision = (rnncc_precision)5;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->precision must be RNNCC_FP32, RNNCC_TF32, RNNCC_FP16, "
                                                          "RNNCC_BF16 or RNNCC_TF32X3, not 5");
    d = ok; d.dims = NULL;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->dims is NULL but desc->ndims is 2");
    d = ok; d.ndims = -1; /* dims given: the count is what is wrong */
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->ndims is -1; it must be 0 or more");
    d = ok; d.backend = (rnncc_backend)9;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->backend");
    d = ok; d.keep_derived_weights = 2;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "desc->keep_derived_weights must be 0 or 1, not 2");
    d = ok; d.fold = (rnncc_fold)7;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT,
                        "desc->fold must be RNNCC_FOLD_AUTO, RNNCC_FOLD_ON or RNNCC_FOLD_OFF, not 7");
    setenv("RNNCC_BACKEND", "persistant", 1);
    expect_create_fails(p, &ok, RNNCC_ERR_INVALID_ARGUMENT,
                        "the environment variable RNNCC_BACKEND is 'persistant'; it must be auto, cublas or persistent");
    unsetenv("RNNCC_BACKEND");
    setenv("RNNCC_FOLD", "yes", 1);
    expect_create_fails(p, &ok, RNNCC_ERR_INVALID_ARGUMENT, "the environment variable RNNCC_FOLD is 'yes'; it must be 0 or 1");
    unsetenv("RNNCC_FOLD");
    char outer[16];
    env_keep("RNNCC_PERSIST_CLUSTER", outer);
    setenv("RNNCC_PERSIST_CLUSTER", "3", 1);
    expect_create_fails(p, &ok, RNNCC_ERR_INVALID_ARGUMENT,
                        "the environment variable RNNCC_PERSIST_CLUSTER is '3'; it must be 1, 2 or 4");
    env_restore("RNNCC_PERSIST_CLUSTER", outer);
    static const char *const tile_env[][3] = {
        {"RNNCC_PERSIST_WARPS", "5", "the environment variable RNNCC_PERSIST_WARPS is '5'; it must be 4, 8 or 16"},
        {"RNNCC_PERSIST_CHUNK", "100", "the environment variable RNNCC_PERSIST_CHUNK is '100'; it must be a number from 256 to 65536"},
        {"RNNCC_PERSIST_CHUNK", "512x", "RNNCC_PERSIST_CHUNK is '512x'"},
        {"RNNCC_PERSIST_SEQS", "3", "the environment variable RNNCC_PERSIST_SEQS is '3'; it must be 4, 8, 16 or 32"},
        {"RNNCC_PERSIST_SEARCH", "yes", "the environment variable RNNCC_PERSIST_SEARCH is 'yes'; it must be 0 or 1"},
        {"RNNCC_PERSIST_HANDOFF", "none", "the environment variable RNNCC_PERSIST_HANDOFF is 'none'; it must be flags, barrier or direct"},
        {"RNNCC_PERSIST_SPLIT", "2", "the environment variable RNNCC_PERSIST_SPLIT is '2'; it must be 0 or 1"},
        {"RNNCC_PERSIST_BLOCKS", "0", "the environment variable RNNCC_PERSIST_BLOCKS is '0'; it must be a number from 1 to 1024"},
        {"RNNCC_PERSIST_BLOCKS", "96 ", "RNNCC_PERSIST_BLOCKS is '96 '"},
        {"RNNCC_PERSIST_WREGS", "256", "the environment variable RNNCC_PERSIST_WREGS is '256'; it must be a number from 0 to 255"},
        {"RNNCC_PERSIST_WREGS", "-1", "RNNCC_PERSIST_WREGS is '-1'"},
        {"RNNCC_PERSIST_WAVES", "3", "the environment variable RNNCC_PERSIST_WAVES is '3'; it must be 0, 2 or 4"},
        {"RNNCC_PERSIST_WAVES", "4 ", "RNNCC_PERSIST_WAVES is '4 '"},
    };
    for (size_t i = 0; i < sizeof tile_env / sizeof *tile_env; i++) {
        env_keep(tile_env[i][0], outer);
        setenv(tile_env[i][0], tile_env[i][1], 1);
        expect_create_fails(p, &ok, RNNCC_ERR_INVALID_ARGUMENT, tile_env[i][2]);
        env_restore(tile_env[i][0], outer);
    }
    d = ok; d.ndims = 1;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "dimension H of cell 'lstm' is not bound");
    const char *bad[] = {"I=8", "H=-3"};
    d = ok; d.dims = bad;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "dimension H must be a positive integer");
    const char *unknown[] = {"I=8", "H=4", "Q=2"};
    d = ok; d.dims = unknown; d.ndims = 3;
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "no dimension 'Q'");
    d = ok; d.cell = "gru";
    expect_create_fails(p, &d, RNNCC_ERR_NOT_FOUND, "no cell named 'gru'");
    const char *huge[] = {"I=2147483647", "H=2147483647"};
    d = ok; d.dims = huge;
    expect_create_fails(p, &d, RNNCC_ERR_OVERFLOW, "overflows");
    rnncc_program_destroy(p);
    /* a cell whose input size also sizes its output cannot be stacked */
    const char *src = "cell sq(x[H]) -> h {\n  state h[H]\n  param U[H, H]\n  h' = tanh(U @ h + x)\n}\n";
    ck_assert_int_eq(rnncc_compile_string(src, strlen(src), "sq.cell", NULL, &p), RNNCC_OK);
    const char *hd[] = {"H=8"};
    d = (rnncc_model_desc){NULL, hd, 1, 2, 1, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO, RNNCC_FOLD_AUTO, 0};
    expect_create_fails(p, &d, RNNCC_ERR_INVALID_ARGUMENT, "cannot be stacked");
    rnncc_program_destroy(p);
    ck_assert_int_eq(rnncc_model_create(NULL, NULL, NULL), RNNCC_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(no_gpu_is_a_clean_error) {
    if (gpu_present()) return; /* covered by the GPU cases there */
    rnncc_program *p = compile_ok("cells/lstm.cell");
    rnncc_model_desc desc = {NULL, lstm_dims, 2, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO, RNNCC_FOLD_AUTO, 0};
    expect_create_fails(p, &desc, RNNCC_ERR_NO_GPU, "no CUDA device");
    rnncc_program_destroy(p);
}
END_TEST

/* The staging launch's grid (rt_copy_blocks): each copy its own run of blocks, one after the other,
 * a thread for every four floats (n / 4 rounded down; the blocks stride over the rest) up to a cap
 * that keeps the most copies within one grid, and one block at least; the grid is their sum. */
START_TEST(state_copies_take_their_own_blocks) {
    const long long n[] = {0, 3, 1024, 1025, 256 * 4 * 5 + 1, 1LL << 40, 7, 819200, 12, 2048, 1};
    RnnStateCopies a;
    memset(&a, 0, sizeof a);
    a.count = (int)(sizeof n / sizeof n[0]);
    ck_assert_int_eq(a.count, RNN_STATE_COPIES); /* the most one launch takes: states, x's copy, two zeroings */
    for (int i = 0; i < a.count; i++) a.c[i].n = n[i];
    const int cap = CG_MAX_GRID_BLOCKS / RNN_STATE_COPIES, want[] = {1, 1, 1, 1, 5, cap, 1, 800, 1, 2, 1};
    int sum = 0;
    for (int i = 0; i < a.count; i++) sum += want[i];
    ck_assert_int_eq(rt_copy_blocks(&a), sum);
    ck_assert_int_le(sum, CG_MAX_GRID_BLOCKS);
    for (int i = 0, at = 0; i < a.count; at += a.c[i].blocks, i++) {
        ck_assert_int_eq(a.c[i].block0, at);
        ck_assert_int_eq(a.c[i].blocks, want[i]);
    }
}
END_TEST

/* ---- with a GPU ------------------------------------------------------------------------------ */

/* Binds every symbolic dimension of the file's cell (tu_dim_specs): the input's to in, the first
 * state's to size, the rest to second (to size where second is 0). */
static int bind_all(const char *path, int64_t in, int64_t size, int64_t second, char specs[8][32], const char **dims) {
    Arena a; arena_init(&a);
    int n = tu_dim_specs(tu_compile_file(&a, path)->cells[0], in, size, second, specs, dims);
    arena_free(&a);
    return n;
}

typedef struct Config {
    int layers, bidir, varlen, backward;
    int64_t T, N, in, size;
    rnncc_precision precision;
    int graphs;
    int nowave;         /* RNNCC_WAVEFRONT=0: stacked layers one after the other */
    rnncc_backend backend;
    int cluster;        /* RNNCC_PERSIST_CLUSTER: blocks per cluster of the persistent kernels (0: the rule) */
    int warps;          /* RNNCC_PERSIST_WARPS: warps a block (0: the default) */
    int chunk;          /* RNNCC_PERSIST_CHUNK: staging chunks at most so long (0: the first layout that fits) */
    int seqs;           /* RNNCC_PERSIST_SEQS: sequences a pass at most (0: the batch class's) */
    int flags;          /* RNNCC_PERSIST_HANDOFF: 1 flags (a forward's steps hand off by flagged words where the plan
                           allows), 2 direct (its operands loaded straight into the products' registers, where it allows) */
    int split;          /* RNNCC_PERSIST_SPLIT=1: a backward's clusters split K where the plan allows */
    int blocks;         /* RNNCC_PERSIST_BLOCKS: blocks at most (0: one a multiprocessor) */
    int ws_offset;      /* bytes the workspace starts past cudaMalloc's (so not 16-byte aligned) */
    int rs_offset;      /* and the reserve (where training keeps the 16-bit weights' copy) */
    int wregs;          /* RNNCC_PERSIST_WREGS: registers of weights held in registers (0: the rule's budget) */
    int64_t second;     /* the dimensions other than the input's and the first state's (a wide random cell's P):
                           0 as long as the first state, else this long */
    int x3cap;          /* RNNCC_X3_SCRATCH: RNNCC_TF32X3's split operands in chunks of at most so many floats (0: its own) */
    rnncc_fold fold;    /* desc->fold; AUTO (0): the rule, but LSTMP's fp32 rows as written (verify) */
    int wt;             /* RNNCC_WT: 1 fp32 step GEMMs on their transposed weights always (rt_wt.c), 2 never; 0 as timed */
} Config;

/* Configs are tables of positional rows; the trailing tile fields of most rows stay zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* The tile environment variables of a config: names, and the values it sets (0: the caller's). */
enum { TILE_ENVS = 8 };
static const char *const tile_env_names[TILE_ENVS] = {"RNNCC_PERSIST_CLUSTER", "RNNCC_PERSIST_WARPS", "RNNCC_PERSIST_CHUNK",
                                                      "RNNCC_PERSIST_SEQS",    "RNNCC_PERSIST_HANDOFF", "RNNCC_PERSIST_SPLIT",
                                                      "RNNCC_PERSIST_BLOCKS",  "RNNCC_PERSIST_WREGS"};
static void tile_env_values(const Config *cf, int v[TILE_ENVS]) {
    v[0] = cf->cluster, v[1] = cf->warps, v[2] = cf->chunk, v[3] = cf->seqs, v[4] = cf->flags, v[5] = cf->split;
    v[6] = cf->blocks, v[7] = cf->wregs;
}

/* The blocks of the tile a backend report (rnncc_model_backend's why) names ("G blocks of"); 0: none. */
static int reported_blocks(const char *why) {
    const char *p = strstr(why, " blocks of ");
    while (p && p > why && p[-1] >= '0' && p[-1] <= '9') p--;
    return p ? atoi(p) : 0;
}

static void verify(const char *path, const Config *cf) {
    char specs[8][32];
    const char *dims[8];
    int nd = bind_all(path, cf->in, cf->size, cf->second, specs, dims);
    if (!cf->graphs) setenv("RNNCC_GRAPHS", "0", 1);
    if (cf->nowave) setenv("RNNCC_WAVEFRONT", "0", 1);
    char cap[16];
    snprintf(cap, sizeof cap, "%d", cf->x3cap);
    if (cf->x3cap) setenv("RNNCC_X3_SCRATCH", cap, 1);
    if (cf->wt) setenv("RNNCC_WT", cf->wt == 1 ? "1" : "0", 1);
    char value[16], outer[TILE_ENVS][16]; /* outer: the caller's own values (kept for the other configs) */
    int tile[TILE_ENVS];
    tile_env_values(cf, tile);
    for (int e = 0; e < TILE_ENVS; e++) {
        env_keep(tile_env_names[e], outer[e]);
        snprintf(value, sizeof value, "%d", tile[e]);
        if (tile[e]) setenv(tile_env_names[e], e == 4 ? (tile[e] == 2 ? "direct" : "flags") : value, 1);
    }
    const int cluster = cluster_in_force(); /* the config's, else the caller's */
    rnncc_program *p = compile_ok(path);
    /* LSTMP's fp32 rows keep the cell as written (its two phases a step), which the rule folds at these sizes; its
     * other rows run by the rule (folded), and fold_configs runs the fold in every precision */
    rnncc_fold fold = cf->fold;
    if (!fold && strstr(path, "/lstmp.cell") && cf->precision == RNNCC_FP32) fold = RNNCC_FOLD_OFF;
    rnncc_model_desc desc = {NULL, dims, nd, cf->layers, cf->bidir, cf->precision, -1, cf->backend, fold};
    rnncc_model *m = NULL;
    rnncc_status s = rnncc_model_create(p, &desc, &m);
    unsetenv("RNNCC_GRAPHS");
    unsetenv("RNNCC_WAVEFRONT");
    unsetenv("RNNCC_X3_SCRATCH");
    unsetenv("RNNCC_WT");
    for (int e = 0; e < TILE_ENVS; e++) env_restore(tile_env_names[e], outer[e]);
    ck_assert_msg(s == RNNCC_OK, "%s: %s", path, rnncc_model_error(m));
    rnncc_backend used;
    char why[640];
    ck_assert_msg(rnncc_model_backend(m, cf->N, &used, why, sizeof why) == RNNCC_OK, "%s: %s", path, rnncc_model_error(m));
    ck_assert_msg(cf->backend == RNNCC_BACKEND_AUTO || used == cf->backend, "%s: backend %d, asked %d: %s", path, used,
                  cf->backend, why);
    /* LSTM's and GRU's one step GEMM is shared by clusters when its length is a multiple of 4 */
    if (cf->cluster > 1 && used == RNNCC_BACKEND_PERSISTENT && (strstr(path, "/lstm.cell") || strstr(path, "/gru.cell"))) {
        char want[32];
        snprintf(want, sizeof want, "in clusters of %d", cf->cluster);
        ck_assert_msg(cf->size % 4 ? !strstr(why, "in clusters") : strstr(why, want) != NULL, "%s: %s", path, why);
    }
    if (cf->warps && used == RNNCC_BACKEND_PERSISTENT) {
        char want[32];
        snprintf(want, sizeof want, " of %d warps", cf->warps);
        ck_assert_msg(strstr(why, want), "%s: %s", path, why);
    }
    /* LSTM's and GRU's step GEMM (K = size) in chunks of at most cf->chunk, cf->seqs a pass (tf32: >= 8) */
    if ((cf->chunk || cf->seqs) && used == RNNCC_BACKEND_PERSISTENT && (strstr(path, "/lstm.cell") || strstr(path, "/gru.cell"))) {
        char want[48];
        if (cf->chunk) snprintf(want, sizeof want, "staged in chunks of %d", cf->chunk);
        else snprintf(want, sizeof want, ", %d sequences a pass, ", cf->precision != RNNCC_FP32 && cf->seqs < 8 ? 8 : cf->seqs);
        ck_assert_msg(strstr(why, want), "%s: %s lacks '%s'", path, why, want);
    }
    /* the fewer-blocks tile: at most the cap, a multiple of the cluster */
    if (cf->blocks && used == RNNCC_BACKEND_PERSISTENT) {
        const int G = reported_blocks(why);
        ck_assert_msg(G >= 1 && G <= cf->blocks && G > cf->blocks - (cluster > 1 ? cluster : 4), "%s: %s (cap %d)", path, why,
                      cf->blocks);
    }
    /* mLSTM's two GEMMs' weights in up to 255 registers at 4 warps in tf32 spill (ptxas: 244 bytes at H =
     * 576; the device's NVRTC 168): the runtime builds the kernel again holding fewer, and says so */
    if (cf->wregs == 255 && cf->warps == 4 && cf->precision == RNNCC_TF32 && used == RNNCC_BACKEND_PERSISTENT &&
        strstr(path, "/mlstm.cell"))
        ck_assert_msg(strstr(why, ", the kernel spilled ") && strstr(why, " bytes a thread)"), "%s: %s", path, why);
    const char *search = getenv("RNNCC_PERSIST_SEARCH"); /* the suite's default: 0 (main) */
    int searched = !search || strcmp(search, "0") != 0;
    /* LSTM's and GRU's forward, staged whole, hands its steps off by flags where asked (which takes
     * clusters of 1 unless a size is forced, by the config or the caller), and by the rule's tile not
     * (the search may take them); so do the two-phase MGU, mLSTM and LSTMP (every dimension but the
     * input's the same: their states as long as the blocks at least) */
    if (used == RNNCC_BACKEND_PERSISTENT && !cf->chunk && (cluster <= 1 || !cf->flags) &&
        (strstr(path, "/lstm.cell") || strstr(path, "/gru.cell") || strstr(path, "/mgu.cell") ||
         strstr(path, "/mlstm.cell") || strstr(path, "/lstmp.cell")) &&
        (cf->flags || !searched))
        ck_assert_msg((strstr(why, "steps handed off by flags") != NULL) == (cf->flags == 1), "%s: %s", path, why);
    /* and loads its operand straight into registers where asked in fp16 and bf16, its length a multiple of 8
     * (the twin): LSTM's and GRU's (one step GEMM; these sizes hold their weights in registers) */
    if (used == RNNCC_BACKEND_PERSISTENT && cluster <= 1 && (strstr(path, "/lstm.cell") || strstr(path, "/gru.cell")) &&
        cf->flags)
        ck_assert_msg((strstr(why, "operands loaded straight into registers") != NULL) ==
                          (cf->flags == 2 && cf->size % 8 == 0 && (cf->precision == RNNCC_FP16 || cf->precision == RNNCC_BF16)),
                      "%s: %s", path, why);
    if (used == RNNCC_BACKEND_PERSISTENT)
        ck_assert_msg(strstr(why, searched ? "measured" : "by rule (RNNCC_PERSIST_SEARCH=0)"), "%s: %s", path, why);
    if (cf->backward) { /* training takes the same backend for the backward pass */
        ck_assert_msg(rnncc_model_backward_backend(m, cf->N, &used, why, sizeof why) == RNNCC_OK, "%s: %s", path,
                      rnncc_model_error(m));
        ck_assert_msg(cf->backend == RNNCC_BACKEND_AUTO || used == cf->backend, "%s: backward backend %d, asked %d: %s",
                      path, used, cf->backend, why);
        /* LSTM's backward (K = 4H: 1024 or 480 in the configs that ask) splits K in the config's clusters */
        if (cf->split && used == RNNCC_BACKEND_PERSISTENT && strstr(path, "/lstm.cell"))
            ck_assert_msg(strstr(why, "splitting K"), "%s: %s", path, why);
    }
    RtVerify v = {.T = cf->T, .N = cf->N, .varlen = cf->varlen, .random_h0 = 1, .backward = cf->backward, .seed = 11,
                  .ws_offset = cf->ws_offset, .rs_offset = cf->rs_offset,
                  .repeat = cf->wt == 1 ? 2 : 0, /* forced copies: the graph captured and replayed too */
                  /* every table: what a pass reads of the workspace before it writes it shows (tf32x3's split
                   * twins, read before their sequence begins in a backward with lengths, are zeroed for that) */
                  .nan_workspace = 1};
    s = rt_verify(m, &v);
    ck_assert_msg(s == RNNCC_OK, "%s: %s", path, rnncc_model_error(m));
    int steps = 0; /* step GEMMs: forced, the last pass multiplied their transposed weights (rt_wt.c) */
    for (int j = 0; j < m->plan->ngemms; j++) steps += m->plan->gemms[j].program == SCHED_STEP;
    ck_assert_msg(cf->wt != 1 || !steps || m->wt_blocks.n > 0, "%s: no step GEMM weights transposed", path);
    double bound = rt_verify_bound(cf->precision, 0);
    ck_assert_msg(v.worst <= bound, "%s (layers %d, bidir %d, varlen %d, T %lld, N %lld, size %lld, %s, graphs %d): error %g > %g",
                  path, cf->layers, cf->bidir, cf->varlen, (long long)cf->T, (long long)cf->N, (long long)cf->size,
                  rnncc_precision_name(cf->precision), cf->graphs, v.worst, bound);
    double gbound = rt_verify_bound(cf->precision, 1);
    ck_assert_msg(!cf->backward || v.grad_worst <= gbound,
                  "%s backward (layers %d, bidir %d, varlen %d, T %lld, N %lld, %s): dx %g, dh0 %g, weights %g (worst %s) > %g",
                  path, cf->layers, cf->bidir, cf->varlen, (long long)cf->T, (long long)cf->N,
                  rnncc_precision_name(cf->precision), v.dx_err, v.dh0_err, v.dw_err, v.dw_worst_name, gbound);
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
}

#define CUBLAS RNNCC_BACKEND_CUBLAS
#define PERSIST RNNCC_BACKEND_PERSISTENT
static const Config configs[] = {
    /* layers bidir varlen backward T  N  in size precision graphs nowave backend */
    {1, 0, 0, 0, 6, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {3, 0, 1, 0, 5, 4, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {1, 1, 1, 0, 7, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {1, 0, 0, 0, 1, 1, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {2, 1, 1, 0, 5, 3, 37, 37, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {1, 0, 1, 0, 9, 4, 16, 24, RNNCC_FP32, 0, 0, CUBLAS, 0},
    {1, 0, 0, 0, 12, 8, 64, 128, RNNCC_TF32, 1, 0, CUBLAS, 0},
    /* training: forward, backward data and weights against the reference's gradients */
    {1, 0, 0, 1, 6, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {3, 0, 1, 1, 5, 2, 16, 24, RNNCC_FP32, 0, 0, CUBLAS, 0},
    {1, 0, 0, 1, 1, 1, 16, 37, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {1, 1, 1, 1, 8, 4, 32, 64, RNNCC_TF32, 1, 0, CUBLAS, 0},
    /* stacks of one direction run as a wavefront over chunks of time, forward and backward:
     * fewer steps than chunks, chunks of unequal length, tf32, and the same stacks layer after layer */
    {2, 0, 1, 0, 3, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {2, 0, 1, 1, 2, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {2, 0, 0, 1, 9, 4, 32, 64, RNNCC_TF32, 1, 0, CUBLAS, 0},
    {3, 0, 1, 1, 37, 32, 64, 128, RNNCC_FP32, 1, 0, CUBLAS, 0}, /* big enough for the two streams to overlap */
    /* past 64 sequences, training adds the step results into their hoisted partners' columns (the
     * 16-bit modes at any batch: half_configs), alone, stacked and beside a reverse direction (fp32:
     * in tf32 the IndRNN's relu kinks put its gradients past 0.05 at these batches, dx 0.045-0.11) */
    {1, 0, 1, 1, 5, 70, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {2, 1, 1, 1, 4, 67, 24, 40, RNNCC_FP32, 1, 0, RNNCC_BACKEND_AUTO, 0},
    /* no steps: the backward hands dhT to dh0 (both backends) */
    {2, 0, 0, 1, 0, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {2, 0, 0, 1, 0, 3, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {4, 0, 1, 1, 11, 3, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {3, 0, 0, 0, 9, 2, 16, 24, RNNCC_FP32, 0, 0, CUBLAS, 0},
    {3, 0, 1, 1, 7, 3, 16, 24, RNNCC_FP32, 1, 1, CUBLAS, 0},
    /* the persistent backend: each batch class (at most 4, 8, 16, 32 sequences, more), several passes
     * of rows and columns, K over several chunks and not a multiple of 4, uneven slices */
    {1, 0, 0, 0, 6, 3, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {1, 0, 1, 0, 9, 6, 16, 24, RNNCC_FP32, 0, 0, PERSIST, 0},
    {1, 1, 1, 0, 7, 13, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {2, 1, 1, 0, 5, 3, 37, 37, RNNCC_FP32, 1, 0, PERSIST, 0},
    {3, 0, 1, 0, 9, 40, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {1, 0, 1, 0, 8, 70, 200, 301, RNNCC_FP32, 1, 0, PERSIST, 0},
    {1, 0, 0, 0, 1, 1, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {1, 0, 0, 0, 12, 8, 64, 128, RNNCC_TF32, 1, 0, PERSIST, 0},
    {1, 0, 0, 1, 6, 3, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
    {4, 0, 1, 1, 11, 3, 16, 24, RNNCC_FP32, 0, 0, PERSIST, 0},
    {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_FP32, 1, 0, PERSIST, 0},
    /* tf32 products on tensor cores: each batch class, several passes and chunks, training */
    {1, 0, 1, 0, 9, 3, 16, 24, RNNCC_TF32, 1, 0, PERSIST, 0},
    {2, 1, 1, 0, 5, 13, 37, 37, RNNCC_TF32, 1, 0, PERSIST, 0},
    {1, 0, 1, 0, 8, 70, 200, 301, RNNCC_TF32, 1, 0, PERSIST, 0},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_TF32, 1, 0, PERSIST, 0},
    {1, 0, 1, 1, 5, 24, 40, 120, RNNCC_TF32, 1, 0, PERSIST, 0},
    /* thread-block clusters sharing the staged operand: both products, both passes, several
     * passes of sequences, chunks of K, stacks and directions; a length not a multiple of 4 (301)
     * is planned without them */
    {1, 0, 1, 0, 9, 6, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 2},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_TF32, 1, 0, PERSIST, 2},
    {1, 0, 1, 0, 8, 70, 200, 300, RNNCC_TF32, 1, 0, PERSIST, 4},
    {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_FP32, 1, 0, PERSIST, 4},
    {1, 0, 1, 0, 8, 19, 200, 301, RNNCC_TF32, 1, 0, PERSIST, 2},
    {3, 0, 1, 1, 5, 3, 16, 24, RNNCC_FP32, 0, 0, PERSIST, 4},
    /* FFMA products without clusters (the rule pairs them): forward and training, stacks, passes;
     * the same with a forward's steps handed off by flags, and tf32 products so */
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 1},
    {1, 0, 1, 0, 8, 70, 200, 300, RNNCC_FP32, 1, 0, PERSIST, 1},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 1, .flags = 1},
    {1, 0, 1, 0, 8, 70, 200, 300, RNNCC_FP32, 1, 0, PERSIST, 1, .flags = 1},
    {3, 0, 1, 1, 7, 4, 16, 24, RNNCC_FP32, 0, 0, PERSIST, 1, .flags = 1},
    {1, 0, 1, 1, 9, 3, 16, 301, RNNCC_TF32, 1, 0, PERSIST, 1, .flags = 1},
    {1, 0, 1, 0, 8, 70, 200, 300, RNNCC_TF32, 1, 0, PERSIST, 1, .flags = 1},
    /* the tiles the search tries (rt_tile.c): 16 and 4 warps a block, both products, training,
     * clusters; staging chunks of 256 (K = 300 in two); fewer sequences a pass than the class.
     * tf32 training of these tiles: tiles_train_in_tf32 */
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0, .warps = 16},
    {1, 0, 1, 0, 6, 19, 40, 300, RNNCC_TF32, 1, 0, PERSIST, 0, .warps = 16},
    {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_FP32, 1, 0, PERSIST, 2, .warps = 4},
    {1, 0, 1, 0, 8, 70, 200, 300, RNNCC_TF32, 1, 0, PERSIST, 0, .warps = 4},
    {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_FP32, 1, 0, PERSIST, 0, .chunk = 256},
    {1, 0, 1, 0, 6, 19, 40, 300, RNNCC_TF32, 1, 0, PERSIST, 0, .warps = 16, .chunk = 256},
    {1, 1, 1, 1, 6, 13, 16, 40, RNNCC_FP32, 1, 0, PERSIST, 0, .seqs = 4},
    {1, 0, 1, 0, 6, 29, 40, 120, RNNCC_TF32, 1, 0, PERSIST, 0, .seqs = 8},
    /* a backward's clusters splitting K (docs/backends.md), pairs and fours, both products, stacks both ways */
    {1, 0, 1, 1, 6, 9, 40, 256, RNNCC_FP32, 1, 0, PERSIST, 2, .split = 1},
    {2, 1, 1, 1, 5, 5, 40, 256, RNNCC_TF32, 1, 0, PERSIST, 4, .split = 1},
    /* fewer blocks than multiprocessors, more work a block (the search's fewer-blocks tile): both
     * products, training (the backward takes the cap too), a cap not a multiple of the pairs; not
     * so few that a cell's weights outgrow a block (7 blocks: CIFG's 322 KB a block at H = 300), and
     * tf32 training at a batch whose IndRNN gradients keep within bounds (N = 19: dx 0.058) */
    {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_FP32, 1, 0, PERSIST, 2, .blocks = 41},
    {2, 1, 1, 0, 6, 19, 40, 300, RNNCC_TF32, 1, 0, PERSIST, 1, .blocks = 40},
    {1, 0, 1, 1, 5, 24, 40, 120, RNNCC_TF32, 1, 0, PERSIST, 0, .blocks = 50},
    /* weights held in up to 255 registers a thread (RNNCC_PERSIST_WREGS): every cell, those whose kernel
     * spills (mLSTM's) built again holding fewer */
    {1, 0, 1, 0, 6, 9, 40, 576, RNNCC_TF32, 1, 0, PERSIST, 0, .warps = 4, .wregs = 255},
    /* FFMA's weights (rnn_ffrag) in up to 255 registers, forward and backward, training */
    {1, 0, 1, 1, 6, 9, 40, 576, RNNCC_FP32, 1, 0, PERSIST, 0, .warps = 4, .wregs = 255},
    /* every sequence its whole length (no lengths): each state adjoint slot's first writer in a backward
     * step stores, nothing zeroes it (codegen/cg_persist.c first_adjoint_writer); split K in pairs and
     * fours, both products, a stack both ways */
    {2, 1, 0, 1, 6, 9, 40, 256, RNNCC_FP32, 1, 0, PERSIST, 2, .split = 1},
    {1, 0, 0, 1, 5, 24, 40, 120, RNNCC_TF32, 1, 0, PERSIST, 4, .split = 1},
    /* the dimensions other than the input's and the first state's of another length: LSTMP's H (its
     * first state h[P]) and mLSTM's M longer, then shorter (bench/NOTES.md section 75: groups and
     * states of two lengths hand off between blocks whose shares differ); both backends */
    {1, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0, .second = 56},
    {2, 1, 1, 0, 5, 9, 16, 40, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 16},
    {1, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 56},
    /* fp32 step GEMMs on their weights transposed (rt_wt.c, forced): both directions with lengths and training, a
     * stack as a wavefront, each in passes repeated (verify: a captured graph replayed over a NaN workspace must
     * transpose again); and past 64 sequences as timed (the timing's path run; whether it takes the copy is the
     * GPU's) */
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0, .wt = 1},
    {3, 0, 1, 0, 5, 4, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0, .wt = 1},
    {1, 0, 1, 1, 5, 80, 16, 40, RNNCC_FP32, 1, 0, RNNCC_BACKEND_AUTO, 0},
};

/* The 16-bit modes (GEMM inputs rounded to fp16 or bf16, rt_half.c): both backends (the persistent
 * one's 16-bit products and hoisted GEMMs), training, stacks as a wavefront and layer after layer,
 * both directions, no steps, lengths not a multiple of 4 (a scalar conversion), a workspace and a
 * reserve not 16-byte aligned (the weights' 16-bit copy, in the reserve in training and in the
 * workspace in inference, is aligned within it). */
static const Config half_configs[] = {
    /* layers bidir varlen backward T  N  in size precision graphs nowave backend */
    {1, 0, 0, 0, 6, 3, 16, 24, RNNCC_FP16, 1, 0, CUBLAS, 0},
    {1, 0, 1, 1, 7, 5, 16, 24, RNNCC_FP16, 1, 0, CUBLAS, 0},
    {2, 1, 1, 1, 6, 5, 37, 37, RNNCC_FP16, 1, 0, CUBLAS, 0},
    {3, 0, 1, 1, 9, 4, 32, 64, RNNCC_FP16, 1, 0, CUBLAS, 0},
    {3, 0, 1, 1, 7, 3, 16, 24, RNNCC_FP16, 0, 1, CUBLAS, 0},
    {2, 0, 0, 1, 0, 3, 16, 24, RNNCC_FP16, 1, 0, CUBLAS, 0},
    {1, 0, 1, 1, 8, 4, 32, 64, RNNCC_FP16, 1, 0, CUBLAS, 0, .ws_offset = 4, .rs_offset = 4},
    {1, 0, 1, 1, 7, 5, 16, 24, RNNCC_BF16, 1, 0, CUBLAS, 0},
    {2, 1, 1, 1, 6, 5, 37, 37, RNNCC_BF16, 1, 0, CUBLAS, 0},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_FP16, 1, 0, PERSIST, 0},
    {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_BF16, 1, 0, PERSIST, 0},
    /* the persistent kernels' 16-bit products in the tiles the search tries (rt_tile.c); longer
     * operands in tiles_train_in_half_precisions */
    {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_BF16, 1, 0, PERSIST, 0, .warps = 16},
    {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_BF16, 1, 0, PERSIST, 2, .warps = 4, .seqs = 8}, /* fp16: IndRNN's kink */
    {1, 0, 1, 1, 7, 4, 16, 40, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 1, .ws_offset = 4, .rs_offset = 4},
    /* inference: h's twins in a workspace 4 bytes off 16 (staged 16 bits at a time), alone and in
     * clusters of 4 (the rule's at 9 sequences) */
    {1, 0, 1, 0, 6, 9, 40, 120, RNNCC_FP16, 1, 0, PERSIST, 1, .ws_offset = 4},
    {1, 0, 1, 0, 6, 9, 40, 120, RNNCC_BF16, 1, 0, PERSIST, 0, .ws_offset = 4},
    /* a backward's clusters splitting K from the adjoint's 16-bit twin (LSTM: K = 480 in parts of 256
     * and 224); in bf16 at the sizes of the row above: at H = 256 IndRNN's gradients (no GEMM, nothing
     * split) exceed the 16-bit bounds, fp16 0.076 > 0.05 and bf16 0.24 > 0.2 (its kink) */
    {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_BF16, 1, 0, PERSIST, 2, .split = 1},
    /* fewer blocks (the search's tile): 16-bit products with more rows a block, training and inference */
    {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_BF16, 1, 0, PERSIST, 0, .blocks = 24},
    {1, 0, 1, 0, 6, 16, 40, 120, RNNCC_FP16, 1, 0, PERSIST, 0, .blocks = 30},
    /* steps handed off by 16-bit flagged words (h staged from its twin's values, persist.cuh
     * rnn_flag_stage16): stacks both ways in training, several passes of sequences; a length not a
     * multiple of 8 keeps 8-byte words */
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_BF16, 1, 0, PERSIST, 1, .flags = 1}, /* H = 120: IndRNN's kink, u 0.43 */
    {1, 0, 1, 0, 7, 19, 40, 64, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 1},
    {1, 0, 1, 0, 7, 6, 40, 36, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 1},
    /* no lengths: the first writers of the state adjoints store (configs' last rows), with 16-bit products;
     * not bf16 with IndRNN: its gradients exceed the bound there before and after that change (its kink:
     * dh0 0.14-0.93 > 0.2 at H = 40 and 120, bench/NOTES.md section 62) */
    {2, 1, 0, 1, 6, 5, 16, 24, RNNCC_FP16, 1, 0, PERSIST, 0},
    {1, 0, 0, 1, 6, 9, 40, 120, RNNCC_FP16, 1, 0, PERSIST, 2, .split = 1},
    /* a unidirectional stack's input rounded by the launch that stages layer 0's initial states
     * (rt_half_x_copy; bench/NOTES.md section 68), its length not a multiple of 4 (scalar), beside
     * states of either kind: inference per step, training persistent in two layers */
    {1, 0, 1, 0, 7, 5, 37, 37, RNNCC_FP16, 1, 0, CUBLAS, 0},
    {2, 0, 1, 1, 7, 5, 37, 40, RNNCC_FP16, 1, 0, PERSIST, 0},
    /* operands loaded straight into the products' registers (RNNCC_PERSIST_HANDOFF=direct, persist.cuh
     * rnn_load_b): stacks both ways in training with lengths; inference at 19 sequences (a pass of 32)
     * and at 40 (two passes) in a workspace 4 bytes off 16 (loaded 4 bytes at a time); training on
     * fewer blocks; a length not a multiple of 8 (staged: no twin) */
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_BF16, 1, 0, PERSIST, 1, .flags = 2},
    {1, 0, 1, 0, 7, 19, 40, 64, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 2},
    {1, 0, 0, 0, 9, 40, 40, 40, RNNCC_BF16, 1, 0, PERSIST, 1, .flags = 2, .ws_offset = 4},
    {1, 0, 1, 1, 8, 4, 32, 64, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 2, .ws_offset = 4, .rs_offset = 4},
    {3, 0, 1, 1, 9, 4, 32, 64, RNNCC_FP16, 0, 0, PERSIST, 1, .flags = 2, .blocks = 24},
    {1, 0, 1, 0, 7, 6, 40, 36, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 2},
};

/* RNNCC_TF32X3 (GEMM inputs split into two tf32 parts, three products summed; rt_x3.c), at fp32's
 * bounds: both backends (the persistent one's products are fp32's, its hoisted GEMMs split), training
 * (the backward's weights split along their other side, the weight gradients' activations in chunks of
 * the contraction), stacks as a wavefront and layer after layer, both directions, past 64 sequences
 * (step results added into the hoisted columns), without graphs, no steps, and scratch so small that
 * every product runs in chunks (of the output's columns, and of the weight gradients' contraction). */
static const Config x3_configs[] = {
    /* layers bidir varlen backward T  N  in size precision graphs nowave backend */
    {1, 0, 0, 0, 6, 3, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    {1, 0, 1, 1, 7, 5, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    {2, 1, 1, 1, 6, 5, 37, 37, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    {3, 0, 1, 1, 9, 4, 32, 64, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    {3, 0, 1, 1, 7, 3, 16, 24, RNNCC_TF32X3, 0, 1, CUBLAS, 0},
    {2, 0, 0, 1, 0, 3, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    {1, 0, 1, 1, 5, 70, 32, 40, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_TF32X3, 1, 0, PERSIST, 0},
    {2, 1, 1, 1, 6, 5, 16, 24, RNNCC_TF32X3, 1, 0, PERSIST, 0},
    {1, 0, 1, 1, 7, 5, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0, .x3cap = 1},
    {2, 1, 1, 1, 6, 9, 37, 40, RNNCC_TF32X3, 1, 0, CUBLAS, 0, .x3cap = 1000},
};

/* RNNCC_TF32X3's chunks (rt_x3_chunks; host only): a split left operand (the weights) keeps its whole
 * contraction (its split runs all of it: cutting it multiplied 96 of 120 columns, a device run's
 * errors of 0.5); each chunk's split operands fit the scratch; a cut chunk is a multiple of 32 (its
 * split columns 128-byte aligned) unless shorter than 32; one column always fits a scratch so sized. */
START_TEST(split_chunks_fit_their_scratch) {
    static const int64_t sizes[] = {1, 3, 31, 32, 33, 37, 120, 1024, 4096, 25600};
    const int ns = (int)(sizeof sizes / sizeof *sizes);
    int cut = 0;
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < ns; j++)
                for (int k = 0; k < ns; k++) {
                    const int64_t M = sizes[i], N = sizes[j], K = sizes[k], wide = M > N ? M : N;
                    const int64_t lens[] = {3 * (a ? K : wide), 1000, 4 << 20, 25 << 20, 3 * K * N * 2};
                    for (int l = 0; l < 5; l++) {
                        const int64_t len = lens[l];
                        if (len < 3 * (a ? K : wide)) continue;
                        int64_t kc, nc;
                        rt_x3_chunks(M, N, K, a, len, &kc, &nc);
                        ck_assert_msg(kc >= 1 && kc <= K && nc >= 1 && nc <= N, "%lld %lld %lld a %d len %lld: %lld %lld",
                                      (long long)M, (long long)N, (long long)K, a, (long long)len, (long long)kc, (long long)nc);
                        ck_assert(!a || kc == K);
                        ck_assert(a || 3 * M * kc <= len);
                        ck_assert(3 * kc * nc <= len);
                        ck_assert(kc == K || kc <= 32 || kc % 32 == 0);
                        ck_assert(nc == N || nc <= 32 || nc % 32 == 0);
                        cut += kc < K || nc < N;
                    }
                }
    ck_assert_int_gt(cut, 100); /* the sizes do make chunks */
    int64_t kc, nc;
    rt_x3_chunks(1024, 25600, 4096, 1, 3 * 4096 * 2048, &kc, &nc); /* the backward's input adjoint at large */
    ck_assert(kc == 4096 && nc == 2048);
    rt_x3_chunks(1024, 4096, 25600, 0, 3 * 4096 * 2048, &kc, &nc); /* its weight gradient: the contraction cut */
    ck_assert(kc == 2048 && nc == 4096);
}
END_TEST

/* Every shipped cell in one configuration of a table. */
static void verify_every_cell(const Config *cf) {
    char **paths;
    int n = tu_list_cells(&paths);
    for (int f = 0; f < n; f++) verify(paths[f], cf);
    tu_free_list(paths, n);
}

/* RNNCC_TF32X3's weight splits (rt_blocks_at; host only): a block split once a pass (the same offset,
 * shape and operation: the same floats, not again), and every other block in floats of its own, 128-byte
 * aligned, also where it overlaps another (B alone inside the stack [A; B]: their splits along the stack's
 * rows cannot share one), until the region is spent. */
START_TEST(split_weights_take_floats_of_their_own) {
    RtBlocks sp = {0};
    const int64_t H = 24, len = 3 * (2 * H * H) + 32 + 3 * (H * H) + 32 + 3 * (H * H) + 32;
    int fresh;
    const int64_t stack = rt_blocks_at(&sp, 0, H, 2 * H, CUBLAS_OP_N, 3, len, &fresh, NULL); /* [A; B] in a backward */
    ck_assert(stack == 0 && fresh);
    const int64_t alone = rt_blocks_at(&sp, H * H, H, H, CUBLAS_OP_N, 3, len, &fresh, NULL); /* B alone, inside it */
    ck_assert(fresh && alone >= 3 * 2 * H * H && alone % 32 == 0);
    ck_assert_int_eq(rt_blocks_at(&sp, 0, H, 2 * H, CUBLAS_OP_N, 3, len, &fresh, NULL), stack); /* again: as split */
    ck_assert(!fresh);
    ck_assert_int_eq(rt_blocks_at(&sp, H * H, H, H, CUBLAS_OP_N, 3, len, &fresh, NULL), alone);
    ck_assert(!fresh);
    const int64_t other = rt_blocks_at(&sp, H * H, H, H, CUBLAS_OP_T, 3, len, &fresh, NULL); /* B the other way round */
    ck_assert(fresh && other >= alone + 3 * H * H && other % 32 == 0 && other + 3 * H * H <= len);
    ck_assert_int_eq(rt_blocks_at(&sp, 0, H, H, CUBLAS_OP_N, 3, len, &fresh, NULL), -1); /* A alone: nothing left */
    free(sp.block);
}
END_TEST

/* fp32 step GEMMs' transposed weights (rt_wt.c; host only): one copy a block (copies 1), and the copy taken only
 * where both layouts were timed, the copy is more than 2% faster, and the time it saves over the pass's steps
 * exceeds the transposition's (8 M K bytes at 1 TB/s: 33.6 µs at 4096 x 1024). */
START_TEST(transposed_weights_where_they_pay) {
    RtBlocks b = {0};
    int fresh;
    ck_assert_int_eq(rt_blocks_at(&b, 0, 1024, 4096, CUBLAS_OP_T, 1, 4096 * 1024 + 32, &fresh, NULL), 0);
    ck_assert(fresh);
    ck_assert_int_eq(rt_blocks_at(&b, 0, 1024, 4096, CUBLAS_OP_T, 1, 4096 * 1024 + 32, &fresh, NULL), 0);
    ck_assert(!fresh);
    ck_assert_int_eq(rt_blocks_at(&b, 4096 * 1024, 1024, 1024, CUBLAS_OP_T, 1, 4096 * 1024 + 32, &fresh, NULL), -1);
    free(b.block);
    /* the large LSTM's step GEMM (H100, bench/NOTES.md section 105): 0.0554 against 0.0516 ms a launch */
    ck_assert(rt_wt_pays(0.0554f, 0.0516f, 100, 4096, 1024));
    ck_assert(!rt_wt_pays(0.0554f, 0.0516f, 8, 4096, 1024));  /* 8 steps save 30 µs: less than the copy */
    ck_assert(rt_wt_pays(0.0554f, 0.0516f, 9, 4096, 1024));   /* 9 save 34.2 */
    ck_assert(!rt_wt_pays(0.0554f, 0.0546f, 1000, 4096, 1024)); /* within 2% */
    ck_assert(!rt_wt_pays(0.0516f, 0.0554f, 1000, 4096, 1024)); /* slower */
    ck_assert(!rt_wt_pays(-1, 0.0516f, 1000, 4096, 1024));      /* untimed (a capture) */
    ck_assert(!rt_wt_pays(0.0554f, 0, 1000, 4096, 1024));       /* the copy not timed yet */
}
END_TEST

/* rt_x3_product's issue on the host: the split as rnncc_to_x3 lays it out (tf32 rounding as convert.cuh's
 * rnn_tf32: to nearest, ties away, in integer steps) and a GEMM in double of exactly what it is given;
 * ctx counts the GEMMs. */
static float host_tf32(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;
    u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&v, &u, 4);
    return v;
}
static rnncc_status host_split(void *ctx, const float *src, int64_t ld, int64_t rows, int64_t cols, float *dst, int krows,
                               int pattern) {
    (void)ctx;
    const int64_t part = krows ? rows : rows * cols;
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++) {
            const float v = src[c * ld + r], hi = host_tf32(v), lo = host_tf32(v - hi);
            float *d = dst + c * (krows ? 3 * rows : rows) + r;
            d[0] = hi, d[part] = pattern ? lo : hi, d[2 * part] = pattern ? hi : lo;
        }
    return RNNCC_OK;
}
static rnncc_status host_gemm(void *ctx, int opa, int opb, int64_t M, int64_t N, int64_t K, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float *c, int64_t ldc, int beta1) {
    ++*(int *)ctx;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double sum = beta1 ? c[j * ldc + i] : 0;
            for (int64_t k = 0; k < K; k++)
                sum += (double)(opa == CUBLAS_OP_N ? a[k * lda + i] : a[i * lda + k]) *
                       (opb == CUBLAS_OP_N ? b[j * ldb + k] : b[k * ldb + j]);
            c[j * ldc + i] = (float)sum;
        }
    return RNNCC_OK;
}

/* RNNCC_TF32X3's chunked products on the host (rt_x3_product with host_split and host_gemm): every pair of
 * operations, the left operand split whole (the weights') or chunk by chunk, leading dimensions past the
 * rows, scratch from one column to all of it, accumulating or not: C within 1e-5 of the sum of |a b| (what
 * the split leaves out is ~2^-22 of it) against the product in double, and small scratch cutting it into
 * several GEMMs. A wrong offset of a chunk of either operand or of C would err by whole products. With the
 * weights split whole and B op N, also from B's split twin (b3, as the kernels write it), B itself then
 * NaN: read, it would show. */
START_TEST(split_products_in_chunks_on_the_host) {
    static const int64_t shapes[][3] = {{5, 7, 37}, {33, 70, 64}, {40, 9, 300}, {1, 1, 1}};
    unsigned seed = 7;
    int gemms_cut = 0;
    for (int sh = 0; sh < 4; sh++)
        for (int opa = 0; opa < 2; opa++)
            for (int opb = 0; opb < 2; opb++)
                for (int a_split = 0; a_split < 2; a_split++)
                    for (int l = 0; l < 3; l++)
                        for (int beta1 = 0; beta1 < 2; beta1++)
                            for (int twin = 0; twin < 1 + (a_split && !opb); twin++) {
                            const int64_t M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
                            const int ta = opa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = opb ? CUBLAS_OP_T : CUBLAS_OP_N;
                            const int64_t arows = ta == CUBLAS_OP_N ? M : K, acols = ta == CUBLAS_OP_N ? K : M;
                            const int64_t brows = tb == CUBLAS_OP_N ? K : N, bcols = tb == CUBLAS_OP_N ? N : K;
                            const int64_t lda = a_split ? arows : arows + 3, ldb = brows + 2, ldc = M + 1;
                            const int64_t wide = M > N ? M : N, least = 3 * (a_split ? K : (wide > K ? wide : K));
                            const int64_t len = l == 0 ? least : l == 1 ? least + 100 : 3 * (M + N) * K;
                            float *a = malloc(sizeof(float) * (size_t)(lda * acols)), *b = malloc(sizeof(float) * (size_t)(ldb * bcols));
                            float *c = malloc(sizeof(float) * (size_t)(ldc * N)), *c0 = malloc(sizeof(float) * (size_t)(ldc * N));
                            float *a3 = malloc(sizeof(float) * (size_t)(3 * arows * acols));
                            float *sa = malloc(sizeof(float) * (size_t)len), *sb = malloc(sizeof(float) * (size_t)len);
                            for (int64_t i = 0; i < lda * acols; i++) a[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
                            for (int64_t i = 0; i < ldb * bcols; i++) b[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
                            for (int64_t i = 0; i < ldc * N; i++) c0[i] = c[i] = (float)(i % 7) - 3.0f;
                            if (a_split) host_split(NULL, a, lda, arows, acols, a3, ta != CUBLAS_OP_N, 0);
                            float *b3 = NULL, *bnan = NULL;
                            if (twin) { /* B's twin: K x N split along K, 3K a column; B as NaN */
                                b3 = malloc(sizeof(float) * (size_t)(3 * K * N));
                                bnan = malloc(sizeof(float) * (size_t)(ldb * bcols));
                                host_split(NULL, b, ldb, K, N, b3, 1, 1);
                                for (int64_t i = 0; i < ldb * bcols; i++) bnan[i] = NAN;
                            }
                            int calls = 0;
                            const RtX3Issue is = {host_split, host_gemm, &calls};
                            ck_assert_int_eq(rt_x3_product(&is, ta, tb, M, N, K, a, lda, a_split ? a3 : NULL, twin ? bnan : b, ldb,
                                                           b3, c, ldc, beta1, sa, sb, len), RNNCC_OK);
                            for (int64_t i = 0; i < M; i++)
                                for (int64_t j = 0; j < N; j++) {
                                    double want = beta1 ? c0[j * ldc + i] : 0, mag = 0;
                                    for (int64_t k = 0; k < K; k++) {
                                        const double p = (double)(ta == CUBLAS_OP_N ? a[k * lda + i] : a[i * lda + k]) *
                                                         (tb == CUBLAS_OP_N ? b[j * ldb + k] : b[k * ldb + j]);
                                        want += p, mag += fabs(p);
                                    }
                                    ck_assert_msg(fabs(c[j * ldc + i] - want) <= 1e-5 * mag + 1e-6 * fabs(want),
                                                  "%lld x %lld x %lld ops %d %d split %d len %lld beta %d twin %d: C(%lld, %lld) %g, "
                                                  "want %g", (long long)M, (long long)N, (long long)K, opa, opb, a_split,
                                                  (long long)len, beta1, twin, (long long)i, (long long)j, c[j * ldc + i], want);
                                }
                            for (int64_t j = 0; j < N; j++) /* the padding rows of C untouched */
                                ck_assert(c[j * ldc + M] == c0[j * ldc + M]);
                            gemms_cut += calls > 1;
                            free(a), free(b), free(c), free(c0), free(a3), free(sa), free(sb), free(b3), free(bnan);
                        }
    ck_assert_int_gt(gemms_cut, 20); /* the small scratch did cut products into several GEMMs */
}
END_TEST

/* verify() of a cell given as text (written to a file of that name in a temporary folder) in each of n configs. */
static void verify_text(const char *name, const char *src, const Config *cfs, size_t n) {
    char dir[] = "/tmp/rnncc-cell-XXXXXX", path[96];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(src, f);
    fclose(f);
    for (size_t k = 0; k < n; k++) verify(path, &cfs[k]);
    unlink(path);
    rmdir(dir);
}

/* A parameter multiplied in a stack and alone ([A; B] @ x hoisted, B @ h per step) in tf32x3: its splits
 * for the backward (along the stack's rows, and along B's) must not share floats, least of all in a
 * wavefront, whose hoisted chunks run between the steps of later chunks. */
START_TEST(split_weights_stacked_and_alone) {
    static const char src[] = "cell stacked_alone(x[H]) -> h {\n"
                              "    state h[H]\n"
                              "    param A[H, H], B[H, H]\n"
                              "    h' = tanh(A @ x + B @ x + B @ h)\n"
                              "}\n";
    static const Config cfs[] = {
        {2, 0, 1, 1, 9, 4, 24, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0}, /* a wavefront in training */
        {1, 0, 1, 1, 7, 5, 24, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
        {1, 1, 1, 1, 6, 5, 24, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0}, /* x[H]: bidirectional layers cannot stack */
        {2, 0, 1, 1, 9, 4, 24, 24, RNNCC_TF32X3, 1, 0, PERSIST, 0},
    };
    verify_text("stacked_alone.cell", src, cfs, sizeof cfs / sizeof *cfs);
}
END_TEST

/* A multiplied state written in its step's first group, before that step's GEMM reads it, in tf32x3:
 * the kernel writes the next value's split twin while the GEMM is still to take the last one's
 * (two slots by turns, rt_state_slot3); with and without lengths, bidirectional, a wavefront, and
 * inference (whose layers share slots). */
START_TEST(split_state_written_before_its_gemm) {
    static const Config cfs[] = {
        {1, 0, 0, 0, 6, 3, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
        {1, 0, 1, 1, 7, 5, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
        {2, 1, 1, 1, 6, 5, 37, 37, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
        {3, 0, 1, 1, 9, 4, 32, 64, RNNCC_TF32X3, 1, 0, CUBLAS, 0}, /* a wavefront in training */
        {3, 0, 1, 0, 9, 4, 32, 64, RNNCC_TF32X3, 0, 0, CUBLAS, 0}, /* and in inference, without graphs */
    };
    verify_text("early.cell", tu_early_cell, cfs, sizeof cfs / sizeof *cfs);
}
END_TEST

/* The post program (readouts after the step loop): the readout cells of tests/testutil.c per step and
 * persistent, forward and training, in every precision; lengths, bidirectional, a wavefront of three
 * layers in training and in inference (whose layers share slots, and a kept buffer's step stride is the
 * layer's own width), more than 64 sequences (summed step results), T = N = 1, O, M != H, and training with
 * no lengths (the copies' adjoints read from dy). */
START_TEST(post_program_matches_the_reference) {
    static const Config cfs[] = {
        {1, 0, 1, 0, 7, 5, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 40},
        {1, 0, 1, 1, 7, 5, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 12},
        {1, 1, 1, 1, 6, 5, 20, 20, RNNCC_FP32, 0, 0, CUBLAS, 0, .second = 28},
        {3, 0, 1, 1, 9, 4, 32, 32, RNNCC_FP32, 1, 0, CUBLAS, 0}, /* a wavefront in training */
        {3, 0, 1, 0, 9, 4, 32, 32, RNNCC_FP32, 0, 0, CUBLAS, 0}, /* and in inference, without graphs */
        {1, 0, 0, 1, 1, 1, 8, 8, RNNCC_FP32, 1, 0, CUBLAS, 0},
        {1, 0, 1, 1, 6, 4, 16, 24, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 40},
        {1, 0, 1, 0, 6, 16, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0, .second = 12},
        {1, 1, 1, 1, 6, 8, 24, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
        {1, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 40},
        {1, 0, 1, 1, 6, 5, 16, 24, RNNCC_BF16, 1, 0, PERSIST, 0},
        {1, 0, 1, 1, 5, 70, 16, 16, RNNCC_FP16, 1, 0, CUBLAS, 0}, /* summed */
        {1, 0, 1, 1, 6, 5, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0, .second = 40},
        /* persistent inference in 16 bits: a value without its twin, its post GEMM in tf32 */
        {1, 0, 1, 0, 6, 8, 16, 24, RNNCC_FP16, 1, 0, PERSIST, 0, .second = 40},
        /* training with no lengths: a copied post GEMM's adjoint is the last layer's dy (rt_post_direct_dy), read in
         * place in fp32, tf32 and tf32x3, rounded into its twin by the backward's first launch in fp16 and bf16 */
        {1, 0, 0, 1, 6, 5, 16, 24, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 40},
        {1, 0, 0, 1, 6, 4, 16, 24, RNNCC_BF16, 1, 0, PERSIST, 0},
        {1, 0, 0, 1, 6, 4, 16, 24, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 12},
        {3, 0, 0, 1, 9, 4, 32, 32, RNNCC_FP16, 1, 0, CUBLAS, 0}, /* a wavefront: its last layer's alone */
        {1, 0, 0, 1, 6, 5, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0, .second = 40},
    };
    char name[32];
    snprintf(name, sizeof name, "post%d.cell", _i);
    verify_text(name, tu_post_cells[_i], cfs, sizeof cfs / sizeof *cfs);
}
END_TEST

/* Kept step buffers and post buffers whose widths depend on a layer's input (z has I rows), so that the
 * layers sharing an inference slot differ: each layer's kept buffer strides its steps by its own width,
 * not the slot's (rt_bind's buffer_step); bidirectional, stacked one after the other and as a wavefront,
 * per step and persistent. */
START_TEST(post_program_widths_per_layer) {
    static const char src[] = "cell wid(x[I]) -> h, z {\n"
                              "    state h[H]\n"
                              "    param W[H, I], U[H, H], A[I, H], B[I, H]\n"
                              "    h' = tanh(W @ x + U @ h)\n"
                              "    z = tanh(B @ h' + A @ h)\n"
                              "}\n";
    static const Config cfs[] = {
        {2, 1, 1, 0, 6, 5, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
        {3, 0, 1, 0, 7, 4, 16, 24, RNNCC_FP32, 1, 1, CUBLAS, 0}, /* one layer after another: one slot */
        {3, 0, 1, 0, 9, 4, 16, 24, RNNCC_FP32, 0, 0, CUBLAS, 0}, /* a wavefront: layers 0 and 2 share a slot */
        {3, 0, 1, 1, 9, 4, 16, 24, RNNCC_FP32, 1, 0, CUBLAS, 0},
        {2, 0, 1, 0, 6, 8, 16, 24, RNNCC_FP32, 1, 0, PERSIST, 0},
        {2, 0, 1, 0, 6, 8, 16, 24, RNNCC_TF32X3, 1, 0, CUBLAS, 0},
    };
    verify_text("wid.cell", src, cfs, sizeof cfs / sizeof *cfs);
}
END_TEST

/* Whether LSTMP runs folded, and who said so, in the backend line: the rule (tf32, fp16 and bf16 products
 * fold; fp32 where V = U P is at most 3 GFLOP: at P x H = 12 x 24 and ds2's 400 x 800, not at 512 x 1024;
 * tf32x3 not), desc->fold forcing either, RNNCC_FOLD forcing AUTO models only; an LSTM (which does not
 * fold) says nothing of it unless the fold is forced. */
START_TEST(fold_choice_is_stated) {
    static const struct {
        const char *cell;
        rnncc_precision precision;
        rnncc_fold fold;
        const char *env, *want;
        int64_t size, second; /* the first state's and the other dimensions (0: 12 and 24; the input 16) */
    } cases[] = {
        {"cells/lstmp.cell", RNNCC_TF32, RNNCC_FOLD_AUTO, NULL, "; folded (the rule: tf32 products): state h runs as h_fold"},
        {"cells/lstmp.cell", RNNCC_FP16, RNNCC_FOLD_AUTO, NULL, "; folded (the rule: fp16 products)"},
        {"cells/lstmp.cell", RNNCC_BF16, RNNCC_FOLD_AUTO, NULL, "; folded (the rule: bf16 products)"},
        {"cells/lstmp.cell", RNNCC_FP32, RNNCC_FOLD_AUTO, NULL,
         "; folded (the rule: fp32 products, V = U P 0.00 GFLOP in FFMA every pass, at most 3): state h runs as h_fold"},
        {"cells/lstmp.cell", RNNCC_FP32, RNNCC_FOLD_AUTO, NULL, /* ds2's LSTMP: 2 * 3200 * 400 * 800 */
         "; folded (the rule: fp32 products, V = U P 2.05 GFLOP in FFMA every pass, at most 3)", 400, 800},
        {"cells/lstmp.cell", RNNCC_FP32, RNNCC_FOLD_AUTO, NULL, /* 2 * 4096 * 512 * 1024 */
         "; not folded (the rule: fp32 products, V = U P 4.29 GFLOP in FFMA every pass, over 3): V costs more than the "
         "step's phase it saves", 512, 1024},
        {"cells/lstmp.cell", RNNCC_TF32X3, RNNCC_FOLD_AUTO, NULL, "; not folded (the rule: tf32x3 products)"},
        {"cells/lstmp.cell", RNNCC_FP32, RNNCC_FOLD_ON, NULL, "; folded (desc->fold)"},
        {"cells/lstmp.cell", RNNCC_TF32, RNNCC_FOLD_OFF, NULL, "; not folded (desc->fold): forced off"},
        {"cells/lstmp.cell", RNNCC_TF32, RNNCC_FOLD_AUTO, "0", "; not folded (RNNCC_FOLD=0): forced off"},
        {"cells/lstmp.cell", RNNCC_FP32, RNNCC_FOLD_AUTO, "1", "; folded (RNNCC_FOLD=1)"},
        {"cells/lstmp.cell", RNNCC_TF32, RNNCC_FOLD_ON, "0", "; folded (desc->fold)"}, /* the environment forces AUTO only */
        {"cells/lstm.cell", RNNCC_TF32, RNNCC_FOLD_AUTO, NULL, NULL},
        {"cells/lstm.cell", RNNCC_TF32, RNNCC_FOLD_ON, NULL, "; not folded (desc->fold): no state's next value is a matrix product"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char specs[8][32];
        const char *dims[8];
        int nd = bind_all(cases[i].cell, 16, cases[i].size ? cases[i].size : 12, cases[i].second ? cases[i].second : 24, specs,
                          dims);
        rnncc_program *p = compile_ok(cases[i].cell);
        rnncc_model_desc desc = {NULL, dims, nd, 1, 0, cases[i].precision, -1, RNNCC_BACKEND_AUTO, cases[i].fold};
        rnncc_model *m = NULL;
        if (cases[i].env) setenv("RNNCC_FOLD", cases[i].env, 1);
        rnncc_status s = rnncc_model_create(p, &desc, &m);
        unsetenv("RNNCC_FOLD");
        ck_assert_msg(s == RNNCC_OK, "%s", rnncc_model_error(m));
        rnncc_backend used;
        char why[640];
        ck_assert_int_eq(rnncc_model_backend(m, 4, &used, why, sizeof why), RNNCC_OK);
        if (cases[i].want) ck_assert_msg(strstr(why, cases[i].want), "case %zu: '%s' lacks '%s'", i, why, cases[i].want);
        else ck_assert_msg(!strstr(why, "fold"), "case %zu: %s", i, why);
        rnncc_model_destroy(m);
        rnncc_program_destroy(p);
    }
}
END_TEST

/* ---- the fold's edges, folded against unfolded on the same weights ---------------------- */

/* A device copy of n floats of host h (n may be 0); h NULL: n NaNs (what is never written shows). */
static float *dev_copy(const float *h, int64_t n) {
    float *d = NULL;
    ck_assert_int_eq(cudaMalloc((void **)&d, (size_t)(n > 0 ? n : 1) * sizeof(float)), cudaSuccess);
    if (n > 0 && h) ck_assert_int_eq(cudaMemcpy(d, h, (size_t)n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    if (n > 0 && !h) ck_assert_int_eq(cudaMemset(d, 0xff, (size_t)n * sizeof(float)), cudaSuccess);
    return d;
}

/* n floats of device d, on the host (freed by the caller). */
static float *host_copy(const float *d, int64_t n) {
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    if (n > 0) ck_assert_int_eq(cudaMemcpy(h, d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
}

/* max |a - b| / max |b| over n (0 where both are all zero; NaN counts as infinite). */
static double rel_diff(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= num)) num = d == d ? d : INFINITY;
        if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
    }
    return num == 0 ? 0 : den > 0 ? num / den : INFINITY;
}

/* LSTMP's H in the fold's edge tests: H * P % 16 != 0, where stacked and lone U_k would pad differently. */
enum { FOLD_H = 22 };

/* LSTMP at I = 16, P = 12, H = FOLD_H on backend, folded (RNNCC_FOLD=1) where fold, every user parameter set by
 * name to values of its own seeded by salt (so that both layouts hold the same weights). */
static rnncc_model *lstmp_on(int fold, rnncc_precision precision, rnncc_backend backend, int salt) {
    char specs[8][32];
    const char *dims[8];
    int nd = bind_all("cells/lstmp.cell", 16, 12, FOLD_H, specs, dims);
    rnncc_program *p = compile_ok("cells/lstmp.cell");
    rnncc_model_desc desc = {NULL, dims, nd, 1, 0, precision, -1, backend};
    rnncc_model *m = NULL;
    if (fold) setenv("RNNCC_FOLD", "1", 1);
    rnncc_status s = rnncc_model_create(p, &desc, &m);
    unsetenv("RNNCC_FOLD");
    ck_assert_msg(s == RNNCC_OK, "%s", rnncc_model_error(m));
    rnncc_program_destroy(p);
    char why[640];
    rnncc_backend used;
    ck_assert_int_eq(rnncc_model_backend(m, 5, &used, why, sizeof why), RNNCC_OK);
    ck_assert_msg(!fold == !strstr(why, "folded (RNNCC_FOLD=1)") && used == backend, "%s", why);
    for (int i = 0; i < rnncc_model_param_count(m); i++) {
        rnncc_param_info info;
        ck_assert_int_eq(rnncc_model_param_info(m, i, &info), RNNCC_OK);
        int64_t n = info.rows * info.cols;
        float *v = malloc((size_t)n * sizeof(float));
        for (int64_t j = 0; j < n; j++) v[j] = (float)((int)((j * 37 + i * 11 + salt) % 101) - 50) / 250.0f;
        ck_assert_int_eq(rnncc_model_set_param(m, info.name, info.layer, info.direction, v, n), RNNCC_OK);
        free(v);
    }
    return m;
}

/* Every weight gradient of m in dw (device), parameter by parameter in the order listed, into one host array
 * (the folded and the unfolded layouts differ; the lists do not). */
static float *grads_by_param(const rnncc_model *m, const float *dw, int64_t *total) {
    int64_t count = 0, at = 0;
    rnncc_model_weights((rnncc_model *)m, &count);
    float *all = host_copy(dw, count), *out = malloc((size_t)count * sizeof(float));
    for (int i = 0; i < rnncc_model_param_count(m); i++) {
        rnncc_param_info info;
        ck_assert_int_eq(rnncc_model_param_info(m, i, &info), RNNCC_OK);
        memcpy(out + at, all + info.offset, (size_t)(info.rows * info.cols) * sizeof(float));
        at += info.rows * info.cols;
    }
    free(all);
    *total = at;
    return out;
}

/* Asserts that every float of dw (device, the model's whole weight buffer's length) from from on outside the user's
 * parameters (a folded model's derived weights, whose gradient region is left zero, and the packing's gaps) is 0; with
 * fill, sets those to NaN instead (what RNNCC_WGRAD_ADD must zero where they are the derived weights'). */
static void derived_gradients(const rnncc_model *m, float *dw, int64_t from, int fill, const char *when) {
    int64_t count = 0;
    rnncc_model_weights((rnncc_model *)m, &count);
    float *all = host_copy(dw, count);
    char *user = calloc((size_t)count, 1);
    for (int i = 0; i < rnncc_model_param_count(m); i++) {
        rnncc_param_info info;
        ck_assert_int_eq(rnncc_model_param_info(m, i, &info), RNNCC_OK);
        memset(user + info.offset, 1, (size_t)(info.rows * info.cols));
    }
    int64_t outside = 0;
    for (int64_t i = from; i < count; i++) {
        if (user[i]) continue;
        outside++;
        if (fill) all[i] = NAN;
        else ck_assert_msg(all[i] == 0.0f, "%s: the derived region's gradient at %lld is %g", when, (long long)i, all[i]);
    }
    ck_assert_msg(outside > 0, "%s: no derived region", when);
    if (fill) ck_assert_int_eq(cudaMemcpy(dw, all, (size_t)count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    free(all), free(user);
}

/* One model's training pass with h0 = NULL (zeros), lengths with a sequence of none, and dhT of both states:
 * y, hT, dx, dh0 and the weight gradients (SET, three times, each the same bit for bit; then ADD onto them: twice
 * SET's) on the host; a folded model's derived region of the gradients zero after each (NaN before either). */
typedef struct FoldEdge {
    float *y, *hT[2], *dx, *dh0[2], *dw, *dw2;
    int64_t ndw;
} FoldEdge;

static FoldEdge fold_edge_pass(rnncc_model *m, int64_t T, int64_t N, const int *lengths, int folded) {
    const int64_t I = 16, S[2] = {12, FOLD_H}, ny = T * N * 12;
    float *hx = malloc((size_t)(T * N * I) * sizeof(float)), *hd = malloc((size_t)(ny + N * FOLD_H) * sizeof(float));
    for (int64_t i = 0; i < T * N * I; i++) hx[i] = (float)((int)(i * 13 % 29) - 14) / 14.0f;
    for (int64_t i = 0; i < ny + N * FOLD_H; i++) hd[i] = (float)((int)(i * 7 % 23) - 11) / 11.0f;
    float *x = dev_copy(hx, T * N * I), *dy = dev_copy(hd, ny), *y = dev_copy(NULL, ny), *dx = dev_copy(NULL, T * N * I);
    float *hT[2] = {dev_copy(NULL, N * S[0]), dev_copy(NULL, N * S[1])}, *dh0[2] = {dev_copy(NULL, N * S[0]), dev_copy(NULL, N * S[1])};
    const float *dhT[2] = {dev_copy(hd, N * S[0]), dev_copy(hd + 7, N * S[1])};
    int64_t count = 0;
    rnncc_model_weights(m, &count);
    float *dw = dev_copy(NULL, count);
    size_t wsb, rsb;
    ck_assert_int_eq(rnncc_workspace_size(m, T, N, 1, &wsb), RNNCC_OK);
    ck_assert_int_eq(rnncc_reserve_size(m, T, N, &rsb), RNNCC_OK);
    void *ws, *rs;
    ck_assert_int_eq(cudaMalloc(&ws, wsb ? wsb : 4), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&rs, rsb ? rsb : 4), cudaSuccess);
    float *ys[] = {y};
    const float *dys[] = {dy};
    rnncc_io io = {T, N, x, ys, lengths, NULL, hT};
    rnncc_grad_io gio = {T, N, lengths, x, dys, dhT, dx, dh0};
    ck_assert_msg(rnncc_forward(m, &io, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(rnncc_backward_data(m, &gio, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    FoldEdge e = {.y = host_copy(y, ny), .hT = {host_copy(hT[0], N * S[0]), host_copy(hT[1], N * S[1])},
                  .dx = host_copy(dx, T * N * I), .dh0 = {host_copy(dh0[0], N * S[0]), host_copy(dh0[1], N * S[1])}};
    ck_assert_int_eq(cudaMemset(dw, 0xff, (size_t)count * sizeof(float)), cudaSuccess); /* NaN: SET writes every float */
    ck_assert_msg(rnncc_backward_weights(m, &gio, dw, RNNCC_WGRAD_SET, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s",
                  rnncc_model_error(m));
    e.dw = grads_by_param(m, dw, &e.ndw);
    for (int again = 0; again < 2; again++) { /* SET again (the pass captured, then replayed): bit for bit the same, so
                                               * that work on the model's two streams (the fold's map beside the unit's
                                               * GEMMs, rt_fold_wgrad_aside) races nowhere */
        ck_assert_int_eq(cudaMemset(dw, 0xff, (size_t)count * sizeof(float)), cudaSuccess);
        ck_assert_msg(rnncc_backward_weights(m, &gio, dw, RNNCC_WGRAD_SET, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s",
                      rnncc_model_error(m));
        int64_t n = 0;
        float *dw_again = grads_by_param(m, dw, &n);
        ck_assert_int_eq(n, e.ndw);
        ck_assert_msg(memcmp(dw_again, e.dw, (size_t)n * sizeof(float)) == 0, "SET's gradients differ in call %d", again + 2);
        free(dw_again);
    }
    const int64_t V = count - 4 * FOLD_H * FOLD_H; /* the derived U_k P, [H][H] each, last (one layer-direction) */
    if (folded) derived_gradients(m, dw, 0, 0, "set"), derived_gradients(m, dw, V, 1, "before add");
    ck_assert_msg(rnncc_backward_weights(m, &gio, dw, RNNCC_WGRAD_ADD, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s",
                  rnncc_model_error(m));
    e.dw2 = grads_by_param(m, dw, &e.ndw);
    if (folded) derived_gradients(m, dw, V, 0, "add");
    float *frees[] = {x, dy, y, dx, hT[0], hT[1], dh0[0], dh0[1], (float *)dhT[0], (float *)dhT[1], dw};
    for (size_t i = 0; i < sizeof frees / sizeof *frees; i++) cudaFree(frees[i]);
    cudaFree(ws), cudaFree(rs), free(hx), free(hd);
    return e;
}

static void fold_edge_free(FoldEdge *e) {
    free(e->y), free(e->hT[0]), free(e->hT[1]), free(e->dx), free(e->dh0[0]), free(e->dh0[1]), free(e->dw), free(e->dw2);
}

/* What fold_matches_the_reference does not reach, on the cuBLAS backend (loop 0) and the persistent one
 * (loop 1), folded against unfolded on the same weights: the parameters' offsets (equal), h0 = NULL (zeros) with a sequence of no steps,
 * RNNCC_WGRAD_ADD (twice SET's, parameter by parameter), and T = 0 (hT = h0 and dh0 = dhT exactly). */
START_TEST(fold_edges_match_unfolded) {
    const rnncc_backend backend = _i ? RNNCC_BACKEND_PERSISTENT : RNNCC_BACKEND_CUBLAS;
    rnncc_model *mu = lstmp_on(0, RNNCC_FP32, backend, 3), *mf = lstmp_on(1, RNNCC_FP32, backend, 3);
    ck_assert_int_eq(rnncc_model_param_count(mf), rnncc_model_param_count(mu));
    for (int i = 0; i < rnncc_model_param_count(mu); i++) { /* the user's offsets, as unfolded (ir_fold_pack_like) */
        rnncc_param_info a, b;
        ck_assert_int_eq(rnncc_model_param_info(mu, i, &a), RNNCC_OK);
        ck_assert_int_eq(rnncc_model_param_info(mf, i, &b), RNNCC_OK);
        ck_assert_msg(!strcmp(a.name, b.name) && a.offset == b.offset, "%s at %lld folded, %lld not", a.name,
                      (long long)b.offset, (long long)a.offset);
    }
    const int lengths[5] = {6, 3, 0, 6, 1};
    FoldEdge u = fold_edge_pass(mu, 6, 5, lengths, 0), f = fold_edge_pass(mf, 6, 5, lengths, 1);
    const double fb = rt_verify_bound(RNNCC_FP32, 0), gb = rt_verify_bound(RNNCC_FP32, 1);
    ck_assert_msg(rel_diff(f.y, u.y, 6 * 5 * 12) <= fb, "y: %g", rel_diff(f.y, u.y, 6 * 5 * 12));
    for (int k = 0; k < 2; k++) {
        const int64_t n = 5 * (k ? FOLD_H : 12);
        ck_assert_msg(rel_diff(f.hT[k], u.hT[k], n) <= fb, "hT[%d]: %g", k, rel_diff(f.hT[k], u.hT[k], n));
        ck_assert_msg(rel_diff(f.dh0[k], u.dh0[k], n) <= gb, "dh0[%d]: %g", k, rel_diff(f.dh0[k], u.dh0[k], n));
    }
    /* the sequence of no steps (the third) passes dhT through to dh0 (the unfolded model's own) */
    for (int j = 0; j < 12; j++) ck_assert_float_eq(f.dh0[0][2 * 12 + j], u.dh0[0][2 * 12 + j]);
    ck_assert_msg(rel_diff(f.dx, u.dx, 6 * 5 * 16) <= gb, "dx: %g", rel_diff(f.dx, u.dx, 6 * 5 * 16));
    ck_assert_int_eq(f.ndw, u.ndw);
    ck_assert_msg(rel_diff(f.dw, u.dw, u.ndw) <= gb, "dw: %g", rel_diff(f.dw, u.dw, u.ndw));
    for (int64_t i = 0; i < f.ndw; i++) f.dw[i] *= 2; /* ADD onto SET: doubled (to rounding: the sums' order differs) */
    ck_assert_msg(rel_diff(f.dw2, f.dw, f.ndw) <= 1e-6, "dw added: %g", rel_diff(f.dw2, f.dw, f.ndw));
    fold_edge_free(&u), fold_edge_free(&f);
    /* T = 0: the final states are the initial ones, and dh0 is dhT, bit for bit */
    const int64_t N = 3, S[2] = {12, FOLD_H};
    float hh[3 * FOLD_H];
    for (int i = 0; i < 3 * FOLD_H; i++) hh[i] = (float)i / 8 - 3;
    const float *h0[2] = {dev_copy(hh, N * S[0]), dev_copy(hh, N * S[1])};
    float *hT[2] = {dev_copy(NULL, N * S[0]), dev_copy(NULL, N * S[1])}, *dh0[2] = {dev_copy(NULL, N * S[0]), dev_copy(NULL, N * S[1])};
    size_t wsb, rsb;
    ck_assert_int_eq(rnncc_workspace_size(mf, 0, N, 1, &wsb), RNNCC_OK);
    ck_assert_int_eq(rnncc_reserve_size(mf, 0, N, &rsb), RNNCC_OK);
    void *ws, *rs;
    ck_assert_int_eq(cudaMalloc(&ws, wsb ? wsb : 4), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&rs, rsb ? rsb : 4), cudaSuccess);
    rnncc_io io = {0, N, NULL, NULL, NULL, h0, hT};
    rnncc_grad_io gio = {0, N, NULL, NULL, NULL, h0, NULL, dh0}; /* dhT: the same values as h0 */
    ck_assert_msg(rnncc_forward(mf, &io, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(mf));
    ck_assert_msg(rnncc_backward_data(mf, &gio, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(mf));
    for (int k = 0; k < 2; k++) {
        float *got = host_copy(hT[k], N * S[k]), *dgot = host_copy(dh0[k], N * S[k]);
        ck_assert_int_eq(memcmp(got, hh, (size_t)(N * S[k]) * sizeof(float)), 0);
        ck_assert_int_eq(memcmp(dgot, hh, (size_t)(N * S[k]) * sizeof(float)), 0);
        free(got), free(dgot);
        cudaFree((void *)h0[k]), cudaFree(hT[k]), cudaFree(dh0[k]);
    }
    cudaFree(ws), cudaFree(rs);
    rnncc_model_destroy(mu), rnncc_model_destroy(mf);
}
END_TEST

/* A model's inference passes of T steps and N sequences on one input (hx, I floats a column) into one output (O
 * floats a column): the device buffers, the workspace, and rnncc_io over them (fwd_pass runs one). */
typedef struct FwdBufs {
    rnncc_model *m;
    float *x, *y, *ys[1];
    void *ws;
    size_t wsb;
    int64_t ny;
    rnncc_io io;
} FwdBufs;

static void fwd_bufs(FwdBufs *b, rnncc_model *m, const float *hx, int64_t T, int64_t N, int64_t I, int64_t O) {
    b->m = m;
    b->ny = T * N * O;
    b->x = dev_copy(hx, T * N * I);
    b->y = b->ys[0] = dev_copy(NULL, b->ny);
    ck_assert_int_eq(rnncc_workspace_size(m, T, N, 0, &b->wsb), RNNCC_OK);
    ck_assert_int_eq(cudaMalloc(&b->ws, b->wsb), cudaSuccess);
    b->io = (rnncc_io){T, N, b->x, b->ys, NULL, NULL, NULL};
}

/* One forward; returns a host copy of its output (the caller frees it). */
static float *fwd_pass(FwdBufs *b) {
    ck_assert_msg(rnncc_forward(b->m, &b->io, b->ws, b->wsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(b->m));
    return host_copy(b->y, b->ny);
}

static void fwd_bufs_free(FwdBufs *b) { cudaFree(b->x), cudaFree(b->y), cudaFree(b->ws); }

/* A folded model that keeps what it derives from its weights (rnncc_model_keep_derived_weights) forms V = U P
 * (and in fp16 its 16-bit copy) in the forward after they change and not while they are unchanged: each round,
 * the forward that derives, the next (which neither forms V nor rounds) and a forward with keep off (deriving
 * every forward) give the same outputs bit for bit (one model: two could time different GEMM algorithms),
 * as created, after a parameter of the user's changes through rnncc_model_set_param, and through
 * rnncc_model_weights with rnncc_model_weights_changed (and each change shows); a write through
 * rnncc_model_weights it is not told of is not seen while it keeps them (its V is kept), and is with keep
 * off. fp16 through cuBLAS, fp32 through cuBLAS, tf32 persistent. */
static const struct { rnncc_precision precision; rnncc_backend backend; } keeps_derived[] = {
    {RNNCC_FP16, RNNCC_BACKEND_CUBLAS}, {RNNCC_FP32, RNNCC_BACKEND_CUBLAS}, {RNNCC_TF32, RNNCC_BACKEND_PERSISTENT}};

/* Writes u into parameter U_f of m through rnncc_model_weights. */
static void write_u_f(rnncc_model *m, const float *u, size_t bytes) {
    rnncc_param_info info = {0};
    for (int i = 0; i < rnncc_model_param_count(m) && (!info.name || strcmp(info.name, "U_f")); i++)
        ck_assert_int_eq(rnncc_model_param_info(m, i, &info), RNNCC_OK);
    ck_assert_str_eq(info.name, "U_f");
    ck_assert_int_eq(cudaMemcpy(rnncc_model_weights(m, NULL) + info.offset, u, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

START_TEST(fold_keeps_derived_weights) {
    const int64_t T = 4, N = 5, ny = T * N * 12;
    rnncc_model *m = lstmp_on(1, keeps_derived[_i].precision, keeps_derived[_i].backend, 5);
    float hx[4 * 5 * 16], u[3][FOLD_H * 12];
    for (int i = 0; i < 4 * 5 * 16; i++) hx[i] = (float)((i * 13 % 29) - 14) / 14.0f;
    for (int i = 0; i < FOLD_H * 12; i++)
        u[0][i] = (float)((i * 5 % 17) - 8) / 40.0f, u[1][i] = (float)((i * 3 % 19) - 9) / 30.0f, u[2][i] = (float)((i * 7 % 23) - 11) / 35.0f;
    float *got[4][3];
    FwdBufs b;
    fwd_bufs(&b, m, hx, T, N, 16, 12);
#define SAME(a, b) (!memcmp((a), (b), (size_t)ny * sizeof(float)))
    for (int round = 0; round < 4; round++) {
        ck_assert_int_eq(rnncc_model_keep_derived_weights(m, 1), RNNCC_OK);
        if (round == 1) ck_assert_int_eq(rnncc_model_set_param(m, "U_f", 0, 0, u[0], FOLD_H * 12), RNNCC_OK);
        if (round == 2) {
            write_u_f(m, u[1], sizeof u[1]);
            ck_assert_int_eq(rnncc_model_weights_changed(m), RNNCC_OK);
        }
        got[round][0] = fwd_pass(&b); /* derives */
        if (round == 3) write_u_f(m, u[2], sizeof u[2]); /* not told */
        got[round][1] = fwd_pass(&b); /* kept */
        ck_assert_int_eq(rnncc_model_keep_derived_weights(m, 0), RNNCC_OK);
        got[round][2] = fwd_pass(&b); /* derives every forward */
        ck_assert_msg(SAME(got[round][0], got[round][1]), "round %d: the kept forward differs", round);
        if (round < 3) ck_assert_msg(SAME(got[round][0], got[round][2]), "round %d: keep off differs", round);
        if (round > 0) ck_assert_msg(SAME(got[round - 1][0], got[round][0]) == (round == 3), "round %d: the change", round);
    }
    ck_assert_msg(!SAME(got[3][1], got[3][2]), "the untold write not seen with keep off");
#undef SAME
    for (int r = 0; r < 4; r++) free(got[r][0]), free(got[r][1]), free(got[r][2]);
    fwd_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* rnncc_model_desc.keep_derived_weights: in fp32 at I = H = 1024, P = 512 (V = U P 4.29 GFLOP, over the rule's 3
 * where formed every forward) the model runs folded, saying the rule counted V once, and keeps V from its first
 * forward on (a write through rnncc_model_weights it is not told of is not seen; told, it is); without it, as
 * written. */
START_TEST(fold_rule_counts_kept_v) {
    char specs[8][32];
    const char *dims[8];
    int nd = bind_all("cells/lstmp.cell", 1024, 512, 1024, specs, dims);
    rnncc_program *p = compile_ok("cells/lstmp.cell");
    char why[640];
    rnncc_backend used;
    rnncc_model *m = NULL;
    rnncc_model_desc desc = {NULL, dims, nd, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO, RNNCC_FOLD_AUTO, 0};
    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(rnncc_model_backend(m, 2, &used, why, sizeof why), RNNCC_OK);
    ck_assert_msg(strstr(why, "; not folded (the rule: fp32 products, V = U P 4.29 GFLOP in FFMA every pass, over 3)"), "%s", why);
    rnncc_model_destroy(m);
    desc.keep_derived_weights = 1;
    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
    rnncc_program_destroy(p);
    ck_assert_int_eq(rnncc_model_backend(m, 2, &used, why, sizeof why), RNNCC_OK);
    ck_assert_msg(strstr(why, "; folded (the rule: fp32 products, V = U P 4.29 GFLOP in FFMA once, kept while the weights stay "
                              "fixed): state h runs as h_fold"), "%s", why);
    const int64_t T = 3, N = 2, H = 1024, P = 512, ny = T * N * P;
    float *v = malloc((size_t)(H * H) * sizeof(float)), *hx = malloc((size_t)(T * N * H) * sizeof(float));
    for (int64_t i = 0; i < H * H; i++) v[i] = (float)((int)(i * 37 % 101) - 50) / 1600.0f;
    for (int64_t i = 0; i < T * N * H; i++) hx[i] = (float)((int)(i * 13 % 29) - 14) / 14.0f;
    ck_assert_int_eq(rnncc_model_set_param(m, "W_g", 0, 0, v, H * H), RNNCC_OK);
    ck_assert_int_eq(rnncc_model_set_param(m, "P_h", 0, 0, v, P * H), RNNCC_OK);
    float *got[3];
    FwdBufs b;
    fwd_bufs(&b, m, hx, T, N, H, P);
    for (int k = 0; k < 3; k++) {
        if (k == 1) write_u_f(m, v, (size_t)(H * P) * sizeof(float)); /* not told: V as kept */
        if (k == 2) ck_assert_int_eq(rnncc_model_weights_changed(m), RNNCC_OK);
        got[k] = fwd_pass(&b);
    }
    ck_assert_msg(!memcmp(got[0], got[1], (size_t)ny * sizeof(float)), "the untold write was seen: V not kept");
    ck_assert_msg(memcmp(got[0], got[2], (size_t)ny * sizeof(float)), "the told write was not seen");
    for (int k = 0; k < 3; k++) free(got[k]);
    free(v), free(hx);
    fwd_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* LSTMP folded (RNNCC_FOLD=1, runtime/rt_fold.c) against the reference of the cell as written, forward and
 * training (dx, dh0 and every weight gradient of the user's parameters): random h0 (entering through the
 * hoisted products), lengths with sequences of none (the rows at T = 5, N = 6: rt_verify's lengths
 * 5 4 4 0 4 1 at I = 16, 5 1 3 0 2 2 at I = 20; and the persistent rows at N = 16), both directions, a
 * stack one after another and as a wavefront, per step and persistent, more than 64 sequences (summed;
 * in fp16 every training row is, with its adjoints as 16-bit twins alone), every precision; the training rows
 * with T N < 4H but tf32x3's map V's gradient through the columns (rt_fold_by_columns; in fp16 and bf16 on the
 * twins, P > H in one: its scratch sized for Y and D, not by the plan's GEMMs alone), the others through dV (the
 * summed row, and T N = 96 = 4H at N = 16, H = 24, fp32 and fp16); one row a check.
 * Row 0 also checks that the model says it runs folded and lists the
 * user's parameters only. */
static const Config fold_configs[] = {
    {1, 0, 1, 1, 5, 6, 16, 12, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 24},
    {1, 1, 1, 1, 5, 6, 20, 12, RNNCC_FP32, 0, 0, CUBLAS, 0, .second = 20},
    {1, 0, 1, 0, 7, 5, 16, 12, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 24},
    {3, 0, 1, 1, 9, 4, 32, 16, RNNCC_FP32, 0, 0, CUBLAS, 0, .second = 32}, /* a wavefront in training */
    {3, 0, 1, 0, 9, 4, 32, 16, RNNCC_FP32, 0, 0, CUBLAS, 0, .second = 32}, /* and in inference */
    {2, 0, 0, 1, 9, 4, 32, 16, RNNCC_FP32, 1, 1, CUBLAS, 0, .second = 32}, /* one layer after another */
    {1, 0, 0, 1, 1, 1, 8, 8, RNNCC_FP32, 1, 0, CUBLAS, 0},
    {1, 0, 1, 1, 6, 4, 16, 12, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 24},
    {1, 0, 1, 1, 6, 16, 16, 12, RNNCC_FP32, 1, 0, PERSIST, 0, .second = 24},
    {1, 1, 1, 1, 6, 8, 24, 16, RNNCC_FP32, 1, 0, PERSIST, 0, .second = 32},
    {1, 0, 1, 0, 6, 16, 16, 12, RNNCC_FP32, 1, 0, PERSIST, 0, .second = 24},
    {1, 0, 1, 1, 5, 70, 16, 12, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 24}, /* summed */
    {1, 0, 1, 1, 6, 5, 16, 12, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 24}, /* summed, twins alone */
    {1, 1, 1, 1, 6, 5, 16, 12, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 24}, /* the twin gathered in reverse too */
    {1, 0, 1, 1, 6, 5, 16, 12, RNNCC_BF16, 1, 0, PERSIST, 0, .second = 24},
    {1, 0, 1, 1, 6, 16, 16, 12, RNNCC_FP16, 1, 0, PERSIST, 0, .second = 24}, /* through dV in fp16 */
    {1, 1, 1, 1, 2, 3, 8, 20, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 12},   /* P = 20 > H = 12 > I = 8 */
    /* one step, P = 40: s_0 (N x P, the entry's 16-bit operand, which the state launch rounds into a region of its
     * own) is larger than any plan GEMM's operand */
    {1, 1, 1, 0, 1, 5, 8, 40, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 12},
    {1, 0, 1, 1, 6, 5, 16, 12, RNNCC_TF32X3, 1, 0, CUBLAS, 0, .second = 24},
    {1, 0, 1, 1, 6, 5, 16, 12, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 22}, /* H P % 16 != 0: U_k back to back */
    {1, 1, 1, 1, 5, 6, 16, 12, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 22},
    /* no lengths, both directions: h0's entry added by its GEMM straight into the first step's columns (step T-1
     * in reverse) */
    {1, 1, 0, 1, 5, 6, 16, 12, RNNCC_FP32, 1, 0, CUBLAS, 0, .second = 24},
    {1, 1, 0, 1, 6, 16, 16, 12, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 24},
    /* persistent inference in 16 bits: z has no twin there, so y = P z runs in tf32 on the fp32 z; s_0 rounded by
     * the state launch */
    {1, 0, 1, 0, 6, 16, 16, 12, RNNCC_FP16, 1, 0, PERSIST, 0, .second = 24},
    {1, 1, 1, 0, 6, 8, 16, 12, RNNCC_BF16, 1, 0, PERSIST, 0, .second = 24},
    /* training, one direction, no lengths: y = P z's adjoint is the last layer's dy (rt_post_direct_dy: in tf32 read
     * in place, in fp16 and bf16 rounded into its twin by the backward's first launch), and the map's dP product
     * carries y's dP (that adjoint in D's rows) */
    {1, 0, 0, 1, 6, 5, 16, 12, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 24},
    {1, 0, 0, 1, 6, 4, 16, 12, RNNCC_BF16, 1, 0, PERSIST, 0, .second = 24},
    {1, 0, 0, 1, 6, 4, 16, 12, RNNCC_TF32, 1, 0, PERSIST, 0, .second = 24},
    {3, 0, 0, 1, 9, 4, 32, 16, RNNCC_FP16, 1, 0, CUBLAS, 0, .second = 32}, /* a wavefront: the last layer's alone */
};
enum { FOLD_CONFIGS = sizeof fold_configs / sizeof *fold_configs };

START_TEST(fold_matches_the_reference) {
    setenv("RNNCC_FOLD", "1", 1);
    Config cf = fold_configs[_i];
    cf.fold = RNNCC_FOLD_ON; /* verify's LSTMP fp32 rows would run as written */
    verify("cells/lstmp.cell", &cf);
    if (_i == 0) { /* it says it runs folded, and lists the user's parameters */
        char specs[8][32];
        const char *dims[8];
        int nd = bind_all("cells/lstmp.cell", 16, 12, 24, specs, dims);
        rnncc_program *p = compile_ok("cells/lstmp.cell");
        rnncc_model_desc desc = {NULL, dims, nd, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
        rnncc_model *m = NULL;
        ck_assert_int_eq(rnncc_model_create(p, &desc, &m), RNNCC_OK);
        rnncc_backend used;
        char why[640];
        ck_assert_int_eq(rnncc_model_backend(m, 4, &used, why, sizeof why), RNNCC_OK);
        ck_assert_msg(strstr(why, "folded (RNNCC_FOLD=1): state h runs as h_fold"), "%s", why);
        ck_assert_int_eq(rnncc_model_param_count(m), 13);
        rnncc_param_info info;
        ck_assert_int_eq(rnncc_model_param_info(m, 12, &info), RNNCC_OK);
        ck_assert_str_eq(info.name, "P_h");
        ck_assert_int_eq(rnncc_model_param_info(m, 13, &info), RNNCC_ERR_INVALID_ARGUMENT);
        rnncc_model_destroy(m);
        rnncc_program_destroy(p);
        /* a cell that does not fold runs as written, and says why */
        nd = bind_all("cells/lstm.cell", 16, 24, 0, specs, dims);
        p = compile_ok("cells/lstm.cell");
        desc = (rnncc_model_desc){NULL, dims, nd, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
        ck_assert_int_eq(rnncc_model_create(p, &desc, &m), RNNCC_OK);
        ck_assert_int_eq(rnncc_model_backend(m, 4, &used, why, sizeof why), RNNCC_OK);
        ck_assert_msg(strstr(why, "; not folded (RNNCC_FOLD=1): no state's next value is a matrix product"), "%s", why);
        rnncc_model_destroy(m);
        rnncc_program_destroy(p);
    }
    unsetenv("RNNCC_FOLD");
}
END_TEST

START_TEST(split_tf32_matches_the_reference) { verify_every_cell(&x3_configs[_i]); }
END_TEST

START_TEST(half_precisions_match_the_reference) { verify_every_cell(&half_configs[_i]); }
END_TEST

START_TEST(every_cell_matches_the_reference) { verify_every_cell(&configs[_i]); }
END_TEST

static rnncc_model *small_lstm(void);

/* Clusters sharing an operand staged in several chunks (the backward's 4096-long adjoint of an
 * H=1024 LSTM or GRU does not fit whole beside its weights), in both products. */
START_TEST(clusters_share_chunked_operands) {
    static const Config cfs[] = {
        {1, 0, 0, 1, 3, 4, 64, 1024, RNNCC_TF32, 1, 0, PERSIST, 2},
        {1, 0, 1, 1, 3, 6, 64, 1024, RNNCC_FP32, 1, 0, PERSIST, 4},
    };
    for (size_t k = 0; k < sizeof cfs / sizeof *cfs; k++) {
        verify("cells/lstm.cell", &cfs[k]);
        verify("cells/gru.cell", &cfs[k]);
    }
}
END_TEST

/* Steps handed off by flags with any state multiplied: two states each multiplied by a step GEMM,
 * and only the second of two; and from a workspace that is not 16-byte aligned (the words are
 * loaded two at a time). */
START_TEST(flags_hand_off_any_state) {
    static const char *const cells[] = {
        "cell two(x[I]) -> h {\n  state h[H], c[H]\n  param W[H, I], V[H, I], U[H, H], R[H, H], b[H]\n"
        "  c' = tanh(V @ x + R @ c + b)\n  h' = sigmoid(W @ x + U @ h) * c'\n}\n",
        "cell second(x[I]) -> h {\n  state h[H], c[H]\n  param W[H, I], R[H, H], b[H]\n"
        "  c' = tanh(W @ x + R @ c + b)\n  h' = h * sigmoid(c')\n}\n",
    };
    static const Config cfs[] = {
        {1, 0, 1, 1, 9, 5, 16, 40, RNNCC_FP32, 1, 0, PERSIST, 1, .flags = 1},
        {2, 1, 1, 1, 6, 19, 16, 33, RNNCC_TF32, 1, 0, PERSIST, 0, .flags = 1},
        {1, 0, 1, 0, 7, 3, 16, 40, RNNCC_FP32, 1, 0, PERSIST, 0, .flags = 1, .ws_offset = 4},
        /* 16-bit flagged words (4 bytes a value) beside the states' slots of 8-byte ones */
        {1, 0, 1, 1, 9, 5, 16, 40, RNNCC_FP16, 1, 0, PERSIST, 1, .flags = 1},
        {1, 0, 1, 0, 7, 3, 16, 40, RNNCC_BF16, 1, 0, PERSIST, 0, .flags = 1, .ws_offset = 4},
    };
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) verify_text(i ? "second.cell" : "two.cell", cells[i], cfs, sizeof cfs / sizeof *cfs);
    static const Config lstm_at_8 = {1, 0, 1, 1, 7, 4, 16, 40, RNNCC_FP32, 1, 0, PERSIST, 0, .flags = 1, .ws_offset = 8};
    verify("cells/lstm.cell", &lstm_at_8);
}
END_TEST

/* The search's tiles in tf32 training, on LSTM and GRU. (Not every cell: IndRNN's ReLU flips
 * where tf32 rounding moves a pre-activation across zero, so at 300 units and 19 sequences its
 * gradients differ by up to 0.15 on any tile, the per-step backend's too: a kink, not the tile.) */
START_TEST(tiles_train_in_tf32) {
    static const Config cfs[] = {
        {1, 0, 1, 1, 6, 19, 40, 300, RNNCC_TF32, 1, 0, PERSIST, 0, .warps = 16},
        {1, 0, 1, 1, 6, 19, 40, 300, RNNCC_TF32, 1, 0, PERSIST, 0, .warps = 16, .chunk = 256},
        {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_TF32, 1, 0, PERSIST, 2, .warps = 4},
        {1, 0, 1, 1, 6, 29, 40, 120, RNNCC_TF32, 1, 0, PERSIST, 0, .seqs = 8},
    };
    for (size_t k = 0; k < sizeof cfs / sizeof *cfs; k++) {
        verify("cells/lstm.cell", &cfs[k]);
        verify("cells/gru.cell", &cfs[k]);
    }
}
END_TEST

/* The persistent kernels' 16-bit products on operands staged in chunks (the forward's 300, the
 * backward's 1200 or 900) and with 16 warps, in training, on LSTM and GRU (not every cell: as
 * tiles_train_in_tf32 says of IndRNN). */
START_TEST(tiles_train_in_half_precisions) {
    static const Config cfs[] = {
        {1, 0, 1, 1, 6, 19, 40, 300, RNNCC_FP16, 1, 0, PERSIST, 0, .chunk = 256},
        {1, 0, 1, 1, 6, 19, 40, 300, RNNCC_BF16, 1, 0, PERSIST, 0, .warps = 16},
        {1, 0, 1, 1, 6, 9, 40, 300, RNNCC_FP16, 1, 0, PERSIST, 2, .warps = 4, .seqs = 8},
    };
    for (size_t k = 0; k < sizeof cfs / sizeof *cfs; k++) {
        verify("cells/lstm.cell", &cfs[k]);
        verify("cells/gru.cell", &cfs[k]);
    }
}
END_TEST

/* Cells nobody wrote a test for (tests/testutil.c draws them): forward and training on both
 * backends, two layers, variable lengths. */
typedef int (*RandomCell)(uint64_t seed, char *buf, size_t size);
static void verify_random_cells(const Config *cfs, size_t ncfs, RandomCell draw, const char *family);

START_TEST(random_cells_match_the_reference) {
    static const Config cfs[] = {
        {2, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, RNNCC_BACKEND_PERSISTENT, 0},
        {1, 1, 1, 1, 5, 3, 16, 40, RNNCC_FP32, 1, 0, RNNCC_BACKEND_PERSISTENT, 0},
        {1, 0, 1, 1, 5, 9, 16, 40, RNNCC_TF32, 1, 0, RNNCC_BACKEND_PERSISTENT, 0},
        {1, 0, 1, 1, 5, 9, 16, 40, RNNCC_TF32, 1, 0, RNNCC_BACKEND_PERSISTENT, 2},
        {1, 0, 1, 1, 5, 9, 16, 40, RNNCC_TF32, 1, 0, RNNCC_BACKEND_PERSISTENT, 1, .flags = 1}, /* where the cell allows */
        {2, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP32, 1, 0, RNNCC_BACKEND_CUBLAS, 0},
        /* tiles the search tries (rt_tile.c) */
        {1, 0, 1, 1, 5, 9, 16, 40, RNNCC_FP32, 1, 0, RNNCC_BACKEND_PERSISTENT, 0, .warps = 16, .chunk = 256},
        {1, 0, 1, 1, 5, 9, 16, 40, RNNCC_TF32, 1, 0, RNNCC_BACKEND_PERSISTENT, 2, .warps = 4, .seqs = 8},
        /* no lengths: the state adjoints' first writers store (codegen/cg_persist.c first_adjoint_writer) */
        {1, 0, 0, 1, 5, 9, 16, 40, RNNCC_TF32, 1, 0, RNNCC_BACKEND_PERSISTENT, 2, .split = 1},
    };
    verify_random_cells(cfs, sizeof cfs / sizeof *cfs, tu_random_cell, "rnd");
}
END_TEST

/* Random cells with GEMM inputs in 16 bits (rt_half.c). */
START_TEST(random_cells_in_half_precisions) {
    static const Config cfs[] = {
        {2, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP16, 1, 0, RNNCC_BACKEND_CUBLAS, 0},
        {1, 1, 1, 1, 5, 3, 16, 40, RNNCC_BF16, 1, 0, RNNCC_BACKEND_CUBLAS, 0},
        {2, 0, 1, 1, 6, 5, 16, 24, RNNCC_FP16, 1, 0, RNNCC_BACKEND_PERSISTENT, 0},
        {1, 0, 1, 1, 5, 9, 16, 40, RNNCC_BF16, 1, 0, RNNCC_BACKEND_PERSISTENT, 2},
        {1, 0, 0, 1, 5, 9, 16, 40, RNNCC_BF16, 1, 0, RNNCC_BACKEND_PERSISTENT, 2}, /* no lengths */
    };
    verify_random_cells(cfs, sizeof cfs / sizeof *cfs, tu_random_cell, "rnd");
}
END_TEST

/* Random cells of the wider family (tu_random_cell_wide: a second state s[P], kinks, peepholes, a
 * second output), P longer and shorter than H. Where a step group of one length reads a state of
 * the other (wide6, 8, 10 and 12 here), the blocks' shares of it differ: fuzz_configs found the
 * persistent forward's first items reading such a state before the barrier (wide51 at H = 2, P = 16). */
START_TEST(wide_random_cells_match_the_reference) {
    static const Config cfs[] = {
        {1, 0, 1, 0, 6, 5, 16, 8, RNNCC_FP32, 1, 0, RNNCC_BACKEND_PERSISTENT, 0, .second = 40},
        {2, 0, 1, 1, 5, 3, 16, 24, RNNCC_FP32, 1, 0, RNNCC_BACKEND_PERSISTENT, 0, .second = 56},
        {1, 0, 0, 1, 5, 9, 16, 40, RNNCC_TF32, 1, 0, RNNCC_BACKEND_PERSISTENT, 2, .second = 72},
        {1, 0, 1, 0, 5, 9, 16, 8, RNNCC_FP32, 1, 0, RNNCC_BACKEND_PERSISTENT, 1, .flags = 1, .second = 40},
        /* 16 bits forward only: most of these cells have kinks (clamp, relu, max...), across which 16-bit
         * rounding moves values, and gradients then differ past 5e-2 with nothing wrong (wide12's U2
         * 0.072 on the H200; docs/training.md, "Kinks in the checks") */
        {1, 1, 1, 0, 5, 9, 16, 40, RNNCC_FP16, 1, 0, RNNCC_BACKEND_PERSISTENT, 0, .second = 24},
        {2, 1, 1, 1, 5, 3, 16, 24, RNNCC_FP32, 1, 0, RNNCC_BACKEND_CUBLAS, 0, .second = 40},
    };
    verify_random_cells(cfs, sizeof cfs / sizeof *cfs, tu_random_cell_wide, "wide");
}
END_TEST

/* Every config of cfs on 12 random cells of a family (tests/testutil.c: draw, files named family<seed>),
 * none of which a test was written for. */
static void verify_random_cells(const Config *cfs, size_t ncfs, RandomCell draw, const char *family) {
    char dir[] = "/tmp/rnncc_random_XXXXXX", path[64], src[8192];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (uint64_t seed = 1; seed <= 12; seed++) {
        int n = draw(seed, src, sizeof src);
        ck_assert_int_gt(n, 0);
        snprintf(path, sizeof path, "%s/%s%llu.cell", dir, family, (unsigned long long)seed);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fwrite(src, 1, (size_t)n, f);
        fclose(f);
        for (size_t k = 0; k < ncfs; k++) verify(path, &cfs[k]);
        remove(path);
    }
    rmdir(dir);
}

/* Removes the files of directory dir, then dir. */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    char path[4200];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ck_assert_int_eq(unlink(path), 0);
    }
    closedir(d);
    ck_assert_int_eq(rmdir(dir), 0);
}

/* A model of a 2-layer LSTM (I=64, H=256) created with the environment variable name set to value. */
static rnncc_model *tile_lstm(const char *name, const char *value) {
    static const char *dims[] = {"I=64", "H=256"};
    rnncc_program *p = compile_ok("cells/lstm.cell");
    rnncc_model_desc desc = {NULL, dims, 2, 2, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
    rnncc_model *m = NULL;
    char outer[16];
    env_keep(name, outer);
    setenv(name, value, 1);
    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
    env_restore(name, outer);
    rnncc_program_destroy(p);
    return m;
}

/* The persistent tile by measurement (rt_tile.c): the search times several tiles, keeps the
 * fastest, gives correct results forward and backward, and caches its choice, so that the next
 * model builds only that tile; forced fields stay as forced; RNNCC_PERSIST_SEARCH=0 takes the rule's. */
START_TEST(tile_search_is_measured_and_cached) {
    char dir[] = "/tmp/rnncc_tiles_XXXXXX", old[4096];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *cache = getenv("RNNCC_CACHE_DIR");
    snprintf(old, sizeof old, "%s", cache ? cache : "");
    setenv("RNNCC_CACHE_DIR", dir, 1);
    rnncc_backend b;
    char why[640];
    rnncc_model *m = tile_lstm("RNNCC_PERSIST_SEARCH", "1");
    for (int backward = 0; backward < 2; backward++) {
        ck_assert_int_eq(backward ? rnncc_model_backward_backend(m, 4, &b, why, sizeof why)
                                  : rnncc_model_backend(m, 4, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "the fastest of ") && strstr(why, " measured ("),
                      "%s", why);
        /* a searched tile other than the rule's was timed against it again and kept only 1% faster
         * (confirmed); else the rule's tile runs: the search's own best, or kept by those rounds */
        const char *t0 = strstr(why, " measured (");
        double best = 0, other = 0;
        if (strstr(why, ": the rule's, within 1% of the fastest of "))
            ck_assert_msg(sscanf(t0, " measured (%lf us a step; the searched tile's %lf in 3 rounds taken in turn", &best,
                                 &other) == 2 && other >= 0.99 * best, "%s", why);
        else if (strstr(why, "; confirmed in 3 rounds taken in turn"))
            ck_assert_msg(sscanf(t0, " measured (%lf us a step; the rule's %lf", &best, &other) == 2 && best < 0.99 * other,
                          "%s", why);
        else if (!strstr(why, "the rule's did not run")) /* the rule's was the fastest: the same time twice */
            ck_assert_msg(sscanf(t0, " measured (%lf us a step; the rule's %lf", &best, &other) == 2 && best == other,
                          "%s", why);
        ck_assert_msg(strstr(why, "; layers > 0: tile "), "%s", why); /* the second layer's input is 256 long */
        /* the rule's, other clusters (unless RNNCC_PERSIST_CLUSTER forces a size), other warps; the
         * forward's: flags too (which take no clusters: not where a size above 1 is forced) */
        for (int li = 0; li < 2; li++)
            ck_assert_int_ge(m->persist[backward][li][0].tried, backward || cluster_in_force() > 1 ? 3 : 4);
    }
    RtVerify v = {.T = 7, .N = 4, .varlen = 1, .random_h0 = 1, .backward = 1, .seed = 5};
    ck_assert_msg(rt_verify(m, &v) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(v.worst <= 1e-5 && v.grad_worst <= 1e-4, "errors %g, gradients %g", v.worst, v.grad_worst);
    /* the next model reads the choice */
    rnncc_model *again = tile_lstm("RNNCC_PERSIST_SEARCH", "1");
    for (int backward = 0; backward < 2; backward++) {
        ck_assert_int_eq(backward ? rnncc_model_backward_backend(again, 4, &b, why, sizeof why)
                                  : rnncc_model_backend(again, 4, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(strstr(why, "measured before") && strstr(why, "search cache"), "%s", why);
        for (int li = 0; li < 2; li++) {
            ck_assert_int_eq(again->persist[backward][li][0].tried, 0);
            ck_assert(cg_persist_same_tile(&again->persist[backward][li][0].plan, &m->persist[backward][li][0].plan));
        }
    }
    rnncc_model_destroy(again);
    rnncc_model_destroy(m);
    m = tile_lstm("RNNCC_PERSIST_WARPS", "16"); /* the suite's RNNCC_PERSIST_SEARCH=0: the rule's clusters */
    ck_assert_int_eq(rnncc_model_backend(m, 4, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(strstr(why, " of 16 warps") && strstr(why, "by rule (RNNCC_PERSIST_SEARCH=0)"), "%s", why);
    rnncc_model_destroy(m);
    setenv("RNNCC_PERSIST_SEARCH", "1", 1);
    m = tile_lstm("RNNCC_PERSIST_WARPS", "4");
    setenv("RNNCC_PERSIST_SEARCH", "0", 1);
    ck_assert_int_eq(rnncc_model_backend(m, 4, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(strstr(why, " of 4 warps") && strstr(why, " measured ("), "%s", why);
    rnncc_model_destroy(m);
    /* a forced cap on the blocks holds for every tile searched, forward and backward */
    setenv("RNNCC_PERSIST_SEARCH", "1", 1);
    m = tile_lstm("RNNCC_PERSIST_BLOCKS", "64");
    setenv("RNNCC_PERSIST_SEARCH", "0", 1);
    for (int backward = 0; backward < 2; backward++) {
        ck_assert_int_eq(backward ? rnncc_model_backward_backend(m, 4, &b, why, sizeof why)
                                  : rnncc_model_backend(m, 4, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(strstr(why, "tile 64 blocks of ") && strstr(why, " measured (") && !strstr(why, "132 blocks"), "%s",
                      why);
    }
    rnncc_model_destroy(m);
    /* a cap past the multiprocessors plans them all, and its choice is read back from the cache */
    setenv("RNNCC_PERSIST_SEARCH", "1", 1);
    m = tile_lstm("RNNCC_PERSIST_BLOCKS", "1000");
    ck_assert_int_eq(rnncc_model_backend(m, 4, &b, why, sizeof why), RNNCC_OK); /* searched */
    ck_assert_msg(strstr(why, " measured (") && m->persist[0][0][0].tried > 0, "%s", why);
    again = tile_lstm("RNNCC_PERSIST_BLOCKS", "1000");
    setenv("RNNCC_PERSIST_SEARCH", "0", 1);
    ck_assert_int_eq(rnncc_model_backend(again, 4, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(strstr(why, "measured before") && again->persist[0][0][0].tried == 0, "%s", why);
    rnncc_model_destroy(again);
    rnncc_model_destroy(m);
    if (*old) setenv("RNNCC_CACHE_DIR", old, 1);
    else unsetenv("RNNCC_CACHE_DIR");
    remove_dir(dir);
}
END_TEST

/* The tile search in the 16-bit modes: its probes read the weights' 16-bit copy (the search's own
 * scratch, RnnArgs.params16), and the searched tiles' 16-bit products match the reference. */
START_TEST(tile_search_in_half_precisions) {
    char dir[] = "/tmp/rnncc_tiles16_XXXXXX", cache[4096], search[16];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *outer = getenv("RNNCC_CACHE_DIR");
    snprintf(cache, sizeof cache, "%s", outer ? outer : "");
    env_keep("RNNCC_PERSIST_SEARCH", search);
    setenv("RNNCC_CACHE_DIR", dir, 1); /* searched afresh */
    setenv("RNNCC_PERSIST_SEARCH", "1", 1);
    static const Config cfs[] = {
        {1, 0, 1, 1, 6, 9, 40, 120, RNNCC_FP16, 1, 0, PERSIST, 0},
        {1, 0, 1, 1, 6, 4, 40, 72, RNNCC_BF16, 1, 0, PERSIST, 0},
    };
    for (size_t k = 0; k < sizeof cfs / sizeof *cfs; k++) {
        verify("cells/lstm.cell", &cfs[k]);
        verify("cells/gru.cell", &cfs[k]);
    }
    env_restore("RNNCC_PERSIST_SEARCH", search);
    if (*cache) setenv("RNNCC_CACHE_DIR", cache, 1);
    else unsetenv("RNNCC_CACHE_DIR");
    remove_dir(dir);
}
END_TEST

/* The backend an fp16 LSTM (I = 8, h: "H=...") runs 16 sequences on, and why (rnncc_model_backend; backward:
 * rnncc_model_backward_backend). */
static rnncc_backend fp16_lstm_backend_at_16(rnncc_program *p, const char *h, int backward, char *why, size_t size) {
    const char *dims[] = {"I=8", h};
    rnncc_model_desc desc = {NULL, dims, 2, 1, 0, RNNCC_FP16, -1, RNNCC_BACKEND_AUTO};
    rnncc_model *m = NULL;
    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
    rnncc_backend b;
    ck_assert_int_eq((backward ? rnncc_model_backward_backend : rnncc_model_backend)(m, 16, &b, why, size), RNNCC_OK);
    rnncc_model_destroy(m);
    return b;
}

/* The rule's clusters of 4 for a forward with tensor cores at 9-24 sequences where its operands are
 * staged (RNNCC_PERSIST_HANDOFF=barrier; bench/NOTES.md section 52): kept for an fp16 LSTM at H = 768;
 * at H = 1024 the 30 clusters of 4 an H100 or H200 holds at once (120 blocks) cannot keep the step
 * weights in registers and pairs at 132 can, so the runtime takes pairs and says so (asserted where the
 * device has 132 multiprocessors). Nothing forced, the rule loads the operands straight into registers
 * on the fewest blocks that keep a block's work (section 100): 96 at H = 768 on 132 multiprocessors; the
 * backward loads its d(gates) so in its fours splitting K (section 107), and stages them under the barrier. */
START_TEST(rule_fours_yield_to_pairs_holding_weights) {
    int sms = 0;
    ck_assert_int_eq(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    rnncc_program *p = compile_ok("cells/lstm.cell");
    char why[640];
    rnncc_backend b = fp16_lstm_backend_at_16(p, "H=768", 0, why, sizeof why);
    ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "operands loaded straight into registers: by rule"), "%s", why);
    ck_assert_msg(sms != 132 || strstr(why, "tile 96 blocks of 8 warps, 16 sequences a pass"), "%s", why);
    b = fp16_lstm_backend_at_16(p, "H=768", 1, why, sizeof why);
    ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, " splitting K, ") &&
                      strstr(why, "operands loaded straight into registers: by rule"), "%s", why);
    char outer[16];
    env_keep("RNNCC_PERSIST_HANDOFF", outer);
    setenv("RNNCC_PERSIST_HANDOFF", "barrier", 1);
    for (int wide = 0; wide < 2; wide++) {
        b = fp16_lstm_backend_at_16(p, wide ? "H=1024" : "H=768", 1, why, sizeof why);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, " splitting K, ") && !strstr(why, "loaded straight"), "%s", why);
        b = fp16_lstm_backend_at_16(p, wide ? "H=1024" : "H=768", 0, why, sizeof why);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "by rule (RNNCC_PERSIST_SEARCH=0)"), "%s", why);
        const char *pairs = "by rule (RNNCC_PERSIST_SEARCH=0), in pairs: its clusters of 4 would read the step "
                            "weights from shared memory";
        if (!wide)
            ck_assert_msg(strstr(why, " in clusters of 4, ") && !strstr(why, pairs), "%s", why);
        else if (sms == 132)
            ck_assert_msg(strstr(why, " in clusters of 2, ") && strstr(why, "weights held in registers") &&
                              strstr(why, pairs), "%s", why);
        else /* another device: either, and the words match the tile */
            ck_assert_msg(!strstr(why, pairs) || strstr(why, " in clusters of 2, "), "%s", why);
    }
    env_restore("RNNCC_PERSIST_HANDOFF", outer);
    rnncc_program_destroy(p);
}
END_TEST

/* The backend choice: forced, automatic by batch size, and a model too large for the chip. */
START_TEST(backend_choice_is_stated) {
    rnncc_program *p = compile_ok("cells/lstm.cell");
    const char *big[] = {"I=16", "H=2048"};
    rnncc_backend b;
    char why[640];
    for (int forced = 0; forced < 3; forced++) {
        rnncc_model_desc desc = {NULL, big, 2, 1, 0, RNNCC_FP32, -1, (rnncc_backend)forced};
        rnncc_model *m = NULL;
        ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
        for (int backward = 0; backward < 2; backward++) {
            rnncc_status s = backward ? rnncc_model_backward_backend(m, 4, &b, why, sizeof why)
                                      : rnncc_model_backend(m, 4, &b, why, sizeof why);
            if (forced == RNNCC_BACKEND_PERSISTENT) {
                ck_assert_int_eq(s, RNNCC_ERR_UNSUPPORTED);
                ck_assert_msg(strstr(rnncc_model_error(m), "need") && strstr(rnncc_model_error(m), "KB of shared memory"),
                              "%s", rnncc_model_error(m));
                ck_assert_msg(!backward || strstr(rnncc_model_error(m), "the backward of"), "%s", rnncc_model_error(m));
            } else {
                ck_assert_int_eq(s, RNNCC_OK);
                ck_assert_int_eq(b, RNNCC_BACKEND_CUBLAS);
                ck_assert_msg(strstr(why, forced ? "forced" : "KB of shared memory"), "%s", why);
            }
        }
        rnncc_model_destroy(m);
    }
    rnncc_model *m = small_lstm();
    ck_assert_int_eq(rnncc_model_backend(m, 4, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "fit on chip"), "%d %s", b, why);
    ck_assert_int_eq(rnncc_model_backward_backend(m, 4, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "fit on chip"), "%d %s", b, why);
    ck_assert_int_eq(rnncc_model_backend(m, 1000, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "batch 1000"), "%d %s", b, why);
    ck_assert_int_eq(rnncc_model_backend(m, 4, NULL, why, sizeof why), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(rnncc_model_error(m), "backend is NULL"), "%s", rnncc_model_error(m));
    /* tf32 forward at 33-64 sequences: persistent only where the built kernel passes 32 at once */
    for (int wide = 0; wide < 2; wide++) {
        const char *dims[] = {"I=16", wide ? "H=1024" : "H=512"};
        rnncc_model_desc desc = {NULL, dims, 2, 1, 0, RNNCC_TF32, -1, RNNCC_BACKEND_AUTO};
        rnncc_model *t = NULL;
        ck_assert_msg(rnncc_model_create(p, &desc, &t) == RNNCC_OK, "%s", rnncc_model_error(t));
        ck_assert_int_eq(rnncc_model_backend(t, 48, &b, why, sizeof why), RNNCC_OK);
        if (wide)
            ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "batch 48 > 32 (tf32) in passes of 16 sequences"), "%s",
                          why);
        else ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "fit on chip"), "%s", why);
        ck_assert_int_eq(rnncc_model_backend(t, 16, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT, "%s", why);
        rnncc_model_destroy(t);
    }
    /* a lone backward: persistent up to 32 sequences, the rule's tile above 16 in pairs splitting K; per step above */
    {
        const char *dims[] = {"I=16", "H=512"};
        rnncc_model_desc desc = {NULL, dims, 2, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
        rnncc_model *t = NULL;
        ck_assert_msg(rnncc_model_create(p, &desc, &t) == RNNCC_OK, "%s", rnncc_model_error(t));
        ck_assert_int_eq(rnncc_model_backward_backend(t, 32, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, " in clusters of 2 splitting K, "), "%s", why);
        ck_assert_int_eq(rnncc_model_backward_backend(t, 33, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "batch 33 > 32 (fp32, backward)"), "%s", why);
        rnncc_model_destroy(t);
    }
    /* forced, the persistent backend runs where the rule would not (tf32 at H=1024, a bidirectional N=48) */
    for (int bidir = 0; bidir < 2; bidir++) {
        const char *dims[] = {"I=16", bidir ? "H=512" : "H=1024"};
        rnncc_model_desc desc = {NULL, dims, 2, 1, bidir, RNNCC_TF32, -1, RNNCC_BACKEND_PERSISTENT};
        rnncc_model *t = NULL;
        ck_assert_msg(rnncc_model_create(p, &desc, &t) == RNNCC_OK, "%s", rnncc_model_error(t));
        ck_assert_int_eq(rnncc_model_backend(t, 48, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT && strstr(why, "persistent (forced)"), "%s", why);
        rnncc_model_destroy(t);
    }
    /* with the search on, the verdict is the rule's tile's, whichever batch of the class came first
     * (40 and 48: the class over 32 sequences) */
    {
        const char *dims[] = {"I=16", "H=512"};
        rnncc_model_desc desc = {NULL, dims, 2, 1, 0, RNNCC_TF32, -1, RNNCC_BACKEND_AUTO};
        rnncc_model *t = NULL;
        setenv("RNNCC_PERSIST_SEARCH", "1", 1);
        ck_assert_msg(rnncc_model_create(p, &desc, &t) == RNNCC_OK, "%s", rnncc_model_error(t));
        setenv("RNNCC_PERSIST_SEARCH", "0", 1);
        ck_assert_int_eq(rnncc_model_backend(t, 40, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT, "%s", why);
        ck_assert_int_eq(rnncc_model_backend(t, 48, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT, "%s", why);
        rnncc_model_destroy(t);
    }
    /* bidirectional: the forward persistent up to 32 sequences (the directions' kernels take turns) */
    const char *bdims[] = {"I=16", "H=512"};
    rnncc_model_desc bdesc = {NULL, bdims, 2, 1, 1, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
    rnncc_model *bi = NULL;
    ck_assert_msg(rnncc_model_create(p, &bdesc, &bi) == RNNCC_OK, "%s", rnncc_model_error(bi));
    ck_assert_int_eq(rnncc_model_backend(bi, 48, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "batch 48 > 32 (fp32, bidirectional)"), "%s", why);
    ck_assert_int_eq(rnncc_model_backend(bi, 32, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_PERSISTENT, "%s", why);
    rnncc_model_destroy(bi);
    /* a stack likewise (its per-step layers run as a wavefront) */
    rnncc_model_desc sdesc = {NULL, bdims, 2, 2, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
    ck_assert_msg(rnncc_model_create(p, &sdesc, &bi) == RNNCC_OK, "%s", rnncc_model_error(bi));
    ck_assert_int_eq(rnncc_model_backend(bi, 48, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "batch 48 > 32 (fp32, stacked)"), "%s", why);
    ck_assert_msg(strstr(why, "; layers overlap as a wavefront"), "%s", why);
    ck_assert_int_eq(rnncc_model_backend(bi, 48, &b, NULL, sizeof why), RNNCC_OK); /* no reason wanted: none written */
    ck_assert_int_eq(rnncc_model_backward_backend(bi, 48, &b, NULL, sizeof why), RNNCC_OK);
    ck_assert_int_eq(rnncc_model_backward_backend(bi, 48, &b, why, sizeof why), RNNCC_OK);
    ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "; layers overlap as a wavefront"), "%s", why);
    rnncc_model_destroy(bi);
    /* a stack whose plan has a hoisted element-wise kernel (tanh(x)) runs its backward layer after layer */
    {
        static const char src[] = "cell hx(x[I]) -> h {\n    state h[H]\n    param W[H, I], U[H, H], b[H]\n"
                                  "    h' = tanh(W @ tanh(x) + U @ h + b)\n}\n";
        rnncc_program *hp = NULL;
        ck_assert_int_eq(rnncc_compile_string(src, sizeof src - 1, "hx.cell", NULL, &hp), RNNCC_OK);
        ck_assert_msg(rnncc_model_create(hp, &sdesc, &bi) == RNNCC_OK, "%s", rnncc_model_error(bi));
        ck_assert_int_eq(rnncc_model_backend(bi, 48, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(b == RNNCC_BACKEND_CUBLAS && strstr(why, "; layers overlap as a wavefront"), "%s", why);
        ck_assert_int_eq(rnncc_model_backward_backend(bi, 48, &b, why, sizeof why), RNNCC_OK);
        ck_assert_msg(strstr(why, "; layers one after another (hoisted element-wise kernels)"), "%s", why);
        RtVerify v = {.T = 9, .N = 48, .varlen = 1, .backward = 1, .seed = 3};
        ck_assert_msg(rt_verify(bi, &v) == RNNCC_OK, "%s", rnncc_model_error(bi));
        ck_assert_double_le(v.worst, 1e-5);
        ck_assert_double_le(v.grad_worst, 1e-4);
        rnncc_model_destroy(bi);
        rnncc_program_destroy(hp);
    }
    ck_assert_int_eq(rnncc_model_backend(m, -1, &b, NULL, 0), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(rnncc_model_error(m), "N is -1"), "%s", rnncc_model_error(m));
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
}
END_TEST

/* Creates the small LSTM used by the cases below (I = 8, H = 16), in the precision and on the backend given. */
static rnncc_model *small_lstm_in(rnncc_precision precision, rnncc_backend backend) {
    rnncc_program *p = compile_ok("cells/lstm.cell");
    rnncc_model_desc desc = {NULL, lstm_dims, 2, 1, 0, precision, -1, backend};
    rnncc_model *m = NULL;
    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
    rnncc_program_destroy(p);
    return m;
}

/* The same in fp32. */
static rnncc_model *small_lstm_on(rnncc_backend backend) { return small_lstm_in(RNNCC_FP32, backend); }

/* The same on the automatic backend. */
static rnncc_model *small_lstm(void) { return small_lstm_on(RNNCC_BACKEND_AUTO); }

START_TEST(parameters_round_trip) {
    rnncc_model *m = small_lstm();
    ck_assert_int_eq(rnncc_model_param_count(m), 12);
    float w[16 * 8], back[16 * 8];
    for (int i = 0; i < 128; i++) w[i] = (float)i * 0.25f;
    ck_assert_int_eq(rnncc_model_set_param(m, "W_f", 0, 0, w, 128), RNNCC_OK);
    ck_assert_int_eq(rnncc_model_get_param(m, "W_f", 0, 0, back, 128), RNNCC_OK);
    ck_assert_int_eq(memcmp(w, back, sizeof w), 0);
    rnncc_param_info info;
    ck_assert_int_eq(rnncc_model_param_info(m, 1, &info), RNNCC_OK);
    ck_assert_str_eq(info.name, "W_f");
    ck_assert_int_eq(info.rows, 16);
    ck_assert_int_eq(info.cols, 8);
    ck_assert_int_eq(info.offset, 128); /* right after W_i: the stack is weight_ih_l0 */
    ck_assert_int_eq(rnncc_model_set_param(m, "W_f", 0, 0, w, 127), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "count is 127"));
    ck_assert_int_eq(rnncc_model_set_param(m, "nope", 0, 0, w, 1), RNNCC_ERR_NOT_FOUND);
    ck_assert_int_eq(rnncc_model_set_param(m, "W_f", 1, 0, w, 128), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "layer is 1"));
    ck_assert_int_eq(rnncc_model_param_info(m, 12, &info), RNNCC_ERR_INVALID_ARGUMENT);
    rnncc_model_destroy(m);
}
END_TEST

START_TEST(bad_calls_leave_the_model_usable) {
    rnncc_model *m = small_lstm();
    float *x, *y, *ws;
    size_t wsb;
    ck_assert_int_eq(rnncc_workspace_size(m, 4, 2, 0, &wsb), RNNCC_OK);
    ck_assert_int_eq(cudaMalloc((void **)&x, 4 * 2 * 8 * 4), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&y, 4 * 2 * 16 * 4), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&ws, wsb), cudaSuccess);
    cudaMemset(x, 0, 4 * 2 * 8 * 4);
    float *ys[] = {y};
    rnncc_io io = {4, 2, x, ys, NULL, NULL, NULL};
    ck_assert_int_eq(rnncc_forward(m, &io, ws, wsb - 1, NULL, 0, NULL), RNNCC_ERR_WORKSPACE);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "rnncc_workspace_size"));
    ck_assert_int_eq(rnncc_forward(m, &io, NULL, wsb, NULL, 0, NULL), RNNCC_ERR_INVALID_ARGUMENT); /* a NULL pointer */
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "workspace is NULL; this call needs"));
    int lengths[] = {4, 5};
    io.lengths = lengths;
    ck_assert_int_eq(rnncc_forward(m, &io, ws, wsb, NULL, 0, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "io->lengths[1] is 5"));
    io.lengths = NULL;
    io.x = NULL;
    ck_assert_int_eq(rnncc_forward(m, &io, ws, wsb, NULL, 0, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "io->x"));
    io.x = x;
    io.N = 0;
    ck_assert_int_eq(rnncc_forward(m, &io, ws, wsb, NULL, 0, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    io.N = 2;
    ck_assert_int_eq(rnncc_forward(m, &io, ws, wsb, NULL, 0, NULL), RNNCC_OK);
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    ck_assert_str_eq(rnncc_model_error(m), "");
    cudaFree(x); cudaFree(y); cudaFree(ws);
    rnncc_model_destroy(m);
}
END_TEST

START_TEST(zero_steps_returns_the_initial_state) {
    rnncc_model *m = small_lstm();
    float h0[2 * 16], got[2 * 16], *dh0, *dc0, *dhT, *dcT;
    for (int i = 0; i < 32; i++) h0[i] = (float)i - 7;
    cudaMalloc((void **)&dh0, sizeof h0); cudaMalloc((void **)&dc0, sizeof h0);
    cudaMalloc((void **)&dhT, sizeof h0); cudaMalloc((void **)&dcT, sizeof h0);
    cudaMemcpy(dh0, h0, sizeof h0, cudaMemcpyHostToDevice);
    cudaMemcpy(dc0, h0, sizeof h0, cudaMemcpyHostToDevice);
    size_t wsb;
    rnncc_workspace_size(m, 0, 2, 0, &wsb);
    void *ws;
    cudaMalloc(&ws, wsb ? wsb : 4);
    const float *h0s[] = {dh0, dc0};
    float *hTs[] = {dhT, dcT};
    rnncc_io io = {0, 2, NULL, NULL, NULL, h0s, hTs};
    ck_assert_msg(rnncc_forward(m, &io, ws, wsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    cudaMemcpy(got, dcT, sizeof got, cudaMemcpyDeviceToHost);
    ck_assert_int_eq(memcmp(got, h0, sizeof h0), 0);
    cudaFree(dh0); cudaFree(dc0); cudaFree(dhT); cudaFree(dcT); cudaFree(ws);
    rnncc_model_destroy(m);
}
END_TEST

/* Loop 0: a blocking stream; 1: a non-blocking one, which nothing on the legacy stream orders:
 * the model's own writes (rnncc_model_set_param, its zeroed weights) have landed when it runs. */
START_TEST(runs_on_a_user_stream) {
    rnncc_model *m = small_lstm();
    cudaStream_t st;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&st, _i ? cudaStreamNonBlocking : cudaStreamDefault), cudaSuccess);
    RtVerify v = {.T = 8, .N = 3, .varlen = 1, .random_h0 = 1, .backward = 1, .repeat = 3, .seed = 5, .stream = st};
    ck_assert_msg(rt_verify(m, &v) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_double_le(v.worst, 1e-5);
    ck_assert_double_le(v.grad_worst, 1e-4);
    cudaStreamDestroy(st);
    rnncc_model_destroy(m);
}
END_TEST

/* One thread's model: its worst error, or (worst 1) what failed. */
typedef struct ThreadRun {
    double worst;
    char failed[400];
} ThreadRun;

/* The GRU the thread cases make (I=12, H=20), or NULL with what failed in failed. */
static const char *thread_gru_dims[] = {"I=12", "H=20"};
static rnncc_program *thread_gru(char *failed, size_t size) {
    rnncc_program *p = NULL;
    if (rnncc_compile_file("cells/gru.cell", NULL, &p) == RNNCC_OK) return p;
    snprintf(failed, size, "compiling cells/gru.cell");
    rnncc_program_destroy(p);
    return NULL;
}

static void *thread_run(void *arg) {
    ThreadRun *r = arg;
    rnncc_model *m = NULL;
    r->worst = 1;
    rnncc_program *p = thread_gru(r->failed, sizeof r->failed);
    if (!p) return NULL;
    rnncc_model_desc desc = {NULL, thread_gru_dims, 2, 2, 1, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
    rnncc_status s = rnncc_model_create(p, &desc, &m);
    if (s == RNNCC_OK) {
        RtVerify v = {.T = 10, .N = 3, .varlen = 1, .random_h0 = 1, .repeat = 5, .seed = 3};
        s = rt_verify(m, &v);
        if (s == RNNCC_OK) r->worst = v.worst, r->failed[0] = 0;
    }
    if (s != RNNCC_OK) snprintf(r->failed, sizeof r->failed, "%s: %s", rnncc_status_string(s), rnncc_model_error(m));
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    return NULL;
}

/* Two models on two threads at once (both directions of each in flight together). */
START_TEST(models_on_two_threads) {
    pthread_t t[2];
    ThreadRun r[2];
    for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, thread_run, &r[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) ck_assert_msg(r[i].worst <= 1e-5, "thread %d: error %g %s", i, r[i].worst, r[i].failed);
}
END_TEST

/* One training pass (forward, backward data, weight gradients set) of T steps and N sequences on
 * the buffers given (sized for the largest); the weight gradients land in dw. */
static void train_pass(rnncc_model *m, int64_t T, int64_t N, float *x, float *y, float *dy, void *ws, size_t wsb,
                       void *rs, size_t rsb, float *dw) {
    float *ys[] = {y};
    const float *dys[] = {dy};
    rnncc_io io = {T, N, x, ys, NULL, NULL, NULL};
    rnncc_grad_io gio = {T, N, NULL, x, dys, NULL, NULL, NULL};
    ck_assert_msg(rnncc_forward(m, &io, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(rnncc_backward_data(m, &gio, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(rnncc_backward_weights(m, &gio, dw, RNNCC_WGRAD_SET, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s",
                  rnncc_model_error(m));
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
}

/* Device buffers for training passes of the small LSTM (I = 8, H = 16) of up to T steps and N
 * sequences: the input x and the output adjoint dy filled alike, the output y, the input adjoint dx,
 * weight gradients dw, the workspace and the reserve, and an inference forward's workspace. */
typedef struct TrainBufs {
    float *x, *y, *dy, *dx, *dw;
    void *ws, *rs, *iws; /* iws: an inference forward's workspace */
    size_t wsb, rsb, iwsb;
} TrainBufs;

static TrainBufs train_bufs(rnncc_model *m, int64_t T, int64_t N) {
    TrainBufs b;
    int64_t count = 0;
    rnncc_model_weights(m, &count);
    ck_assert_int_eq(rnncc_workspace_size(m, T, N, 1, &b.wsb), RNNCC_OK);
    ck_assert_int_eq(rnncc_reserve_size(m, T, N, &b.rsb), RNNCC_OK);
    ck_assert_int_eq(rnncc_workspace_size(m, T, N, 0, &b.iwsb), RNNCC_OK);
    ck_assert_int_eq(cudaMalloc(&b.iws, b.iwsb), cudaSuccess);
    size_t n = (size_t)(T * N * 16);
    ck_assert_int_eq(cudaMalloc((void **)&b.x, n * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&b.y, n * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&b.dy, n * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&b.dx, n * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&b.dw, (size_t)count * sizeof(float)), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&b.ws, b.wsb), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&b.rs, b.rsb), cudaSuccess);
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = (float)((int)(i * 13 % 29) - 14) / 14.0f;
    ck_assert_int_eq(cudaMemcpy(b.x, h, n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(b.dy, h, n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    free(h);
    return b;
}

/* Sets every weight of m to a value of its own in [-0.125, 0.125]; returns their count. */
static int64_t fill_weights(rnncc_model *m) {
    int64_t count = 0;
    float *w = rnncc_model_weights(m, &count);
    float *h = malloc((size_t)count * sizeof(float));
    for (int64_t i = 0; i < count; i++) h[i] = (float)((i * 37 % 101) - 50) / 400.0f;
    ck_assert_int_eq(cudaMemcpy(w, h, (size_t)count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    free(h);
    return count;
}

static void train_bufs_free(TrainBufs *b) {
    cudaFree(b->x); cudaFree(b->y); cudaFree(b->dy); cudaFree(b->dx); cudaFree(b->dw); cudaFree(b->ws); cudaFree(b->rs);
    cudaFree(b->iws);
}

/* Both backward passes of m (gio over b's buffers), synchronised; the first ndx values of dx and the
 * count weight gradients copied into got[0] and got[1] (allocated here). */
static void backward_into(rnncc_model *m, const TrainBufs *b, const rnncc_grad_io *gio, size_t ndx, int64_t count,
                          float *got[2]) {
    ck_assert_msg(rnncc_backward_data(m, gio, b->ws, b->wsb, b->rs, b->rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(rnncc_backward_weights(m, gio, b->dw, RNNCC_WGRAD_SET, b->ws, b->wsb, b->rs, b->rsb, NULL) == RNNCC_OK,
                  "%s", rnncc_model_error(m));
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    got[0] = malloc(ndx * sizeof(float));
    got[1] = malloc((size_t)count * sizeof(float));
    ck_assert_int_eq(cudaMemcpy(got[0], b->dx, ndx * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(got[1], b->dw, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
}

/* The training calls refuse arguments that disagree with the calls before them on the reserve
 * (runtime/rt_calls.c), naming the argument, and a data call after the model was told its weights
 * changed since the forward; the model goes on: after every refusal the right calls give the
 * gradients of calls made right the first time, bit for bit. */
START_TEST(training_calls_refuse_other_arguments) {
    const int64_t T = 4, N = 3;
    rnncc_model *m = small_lstm();
    int64_t count = fill_weights(m);
    TrainBufs b = train_bufs(m, T, N);
    float *ys[] = {b.y};
    const float *dys[] = {b.dy}, *no_dy[] = {NULL}, *dhT[] = {b.dy, NULL}; /* b.dy holds N * 16 floats and more */
    int lengths[] = {4, 2, 3};
    rnncc_io io = {T, N, b.x, ys, NULL, NULL, NULL};
    rnncc_grad_io gio = {T, N, NULL, b.x, dys, NULL, b.dx, NULL};
    const size_t ndx = (size_t)(T * N * 8);
    float *want[2], *got[2];
    /* no training forward yet (an inference one does not count), then one that failed (its workspace too small) */
    ck_assert_msg(rnncc_forward(m, &io, b.iws, b.iwsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "reserve: no training forward has run on this model"));
    ck_assert_int_eq(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb - 1, NULL), RNNCC_ERR_WORKSPACE);
    ck_assert_int_eq(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "reserve: the last training forward on it failed"));
    ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    backward_into(m, &b, &gio, ndx, count, want);
    ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    struct { rnncc_grad_io io; int weights; const char *says; } bad[] = {
        {gio, 1, "reserve: rnncc_backward_data has not run on it since its training forward"},
        {{T - 1, N, NULL, b.x, dys, NULL, b.dx, NULL}, 0, "io->T is 3, but the training forward on this reserve had 4"},
        {{T, N - 1, NULL, b.x, dys, NULL, b.dx, NULL}, 0, "io->N is 2, but the training forward on this reserve had 3"},
        {{T, N, lengths, b.x, dys, NULL, b.dx, NULL}, 0, "io->lengths is given, but the training forward on this reserve had none"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        rnncc_status s = bad[k].weights ? rnncc_backward_weights(m, &bad[k].io, b.dw, RNNCC_WGRAD_SET, b.ws, b.wsb, b.rs, b.rsb, NULL)
                                        : rnncc_backward_data(m, &bad[k].io, b.ws, b.wsb, b.rs, b.rsb, NULL);
        ck_assert_int_eq(s, RNNCC_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(rnncc_model_error(m), bad[k].says), "call %zu: \"%s\"", k, rnncc_model_error(m));
    }
    ck_assert_int_eq(rnncc_backward_data(m, &gio, NULL, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "workspace is NULL; training needs"));
    /* weights the model is told changed between the forward and the data call (here to the same values) */
    float wf[128];
    ck_assert_int_eq(rnncc_model_get_param(m, "W_f", 0, 0, wf, 128), RNNCC_OK);
    ck_assert_int_eq(rnncc_model_set_param(m, "W_f", 0, 0, wf, 128), RNNCC_OK);
    ck_assert_int_eq(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "reserve: the weights changed (rnncc_model_set_param) since the training forward on it"));
    ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(rnncc_model_weights_changed(m), RNNCC_OK); /* after the data call: the weights call may follow */
    rnncc_grad_io other = gio;
    other.dy = no_dy;
    ck_assert_int_eq(rnncc_backward_weights(m, &other, b.dw, RNNCC_WGRAD_SET, b.ws, b.wsb, b.rs, b.rsb, NULL),
                     RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "io->dy[0] is NULL, but the rnncc_backward_data call on this reserve was given it"));
    other.dy = dys, other.dhT = dhT;
    ck_assert_int_eq(rnncc_backward_weights(m, &other, b.dw, RNNCC_WGRAD_SET, b.ws, b.wsb, b.rs, b.rsb, NULL),
                     RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "io->dhT[0] is given, but the rnncc_backward_data call on this reserve had it NULL"));
    ck_assert_int_eq(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT); /* told */
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "the weights changed (rnncc_model_weights_changed)"));
    ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    backward_into(m, &b, &gio, ndx, count, got);
    ck_assert_msg(memcmp(got[0], want[0], ndx * sizeof(float)) == 0, "dx differs after the refusals");
    ck_assert_msg(memcmp(got[1], want[1], (size_t)count * sizeof(float)) == 0, "dw differs after the refusals");
    for (int i = 0; i < 2; i++) free(want[i]), free(got[i]);
    train_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* Buffers a call writes may not overlap another it is given (runtime/rt_spans.c): refused by both
 * names, and the model goes on, bit for bit as calls made right the first time. */
START_TEST(buffers_must_lie_apart) {
    const int64_t T = 4, N = 3;
    rnncc_model *m = small_lstm();
    int64_t count = fill_weights(m);
    TrainBufs b = train_bufs(m, T, N);
    float hs[3 * 16];
    for (int i = 0; i < 3 * 16; i++) hs[i] = (float)((i * 7 % 23) - 11) / 16.0f;
    float *ys[] = {b.y}, *x_as_y[] = {b.x}, *dhT_w[2] = {dev_copy(hs, N * 16), dev_copy(hs, N * 16)};
    const float *dys[] = {b.dy}, *dhT[2] = {dhT_w[0], dhT_w[1]};
    rnncc_io io = {T, N, b.x, ys, NULL, NULL, NULL};
    rnncc_grad_io gio = {T, N, NULL, b.x, dys, dhT, b.dx, NULL};
    const size_t ndx = (size_t)(T * N * 8);
    float *want[2], *got[2];
    ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    backward_into(m, &b, &gio, ndx, count, want);
    struct { int call; rnncc_io io; rnncc_grad_io gio; void *ws; float *dw; const char *says; } bad[] = {
        {0, {T, N, b.x, x_as_y, NULL, NULL, NULL}, gio, b.iws, NULL, "io->y[0] overlaps io->x"},
        {0, {T, N, b.iws, ys, NULL, NULL, NULL}, gio, b.iws, NULL, "io->x overlaps workspace"},
        {1, io, {T, N, NULL, b.x, dys, dhT, b.dy, NULL}, b.ws, NULL, "io->dx overlaps io->dy[0]"},
        {1, io, {T, N, NULL, b.x, dys, dhT, b.dx, dhT_w}, b.ws, NULL, "io->dh0[0] overlaps io->dhT[0]"},
        {2, io, gio, b.ws, rnncc_model_weights(m, NULL), "dweights overlaps the model's weights"},
        {2, io, gio, b.ws, b.dy, "dweights overlaps io->dy[0]"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        rnncc_status s;
        if (bad[k].call == 0) s = rnncc_forward(m, &bad[k].io, bad[k].ws, b.iwsb, NULL, 0, NULL);
        else {
            ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
            if (bad[k].call == 2)
                ck_assert_msg(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
            s = bad[k].call == 1 ? rnncc_backward_data(m, &bad[k].gio, b.ws, b.wsb, b.rs, b.rsb, NULL)
                                 : rnncc_backward_weights(m, &gio, bad[k].dw, RNNCC_WGRAD_SET, b.ws, b.wsb, b.rs, b.rsb, NULL);
        }
        ck_assert_int_eq(s, RNNCC_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(rnncc_model_error(m), bad[k].says), "call %zu: \"%s\"", k, rnncc_model_error(m));
    }
    ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    backward_into(m, &b, &gio, ndx, count, got);
    ck_assert_msg(memcmp(got[0], want[0], ndx * sizeof(float)) == 0, "dx differs after the refusals");
    ck_assert_msg(memcmp(got[1], want[1], (size_t)count * sizeof(float)) == 0, "dw differs after the refusals");
    for (int i = 0; i < 2; i++) free(want[i]), free(got[i]), cudaFree(dhT_w[i]);
    train_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* Buffers the GPU cannot reach or not at 4-byte boundaries, and host memory given as device memory (io->lengths,
 * the arrays of pointers), refused by name before anything touches them (runtime/rt_spans.c); page-locked host
 * memory the GPU reaches, and (where the device reads pageable memory) plain host memory, run. */
START_TEST(buffers_must_be_reachable) {
    const int64_t T = 4, N = 3, nx = T * N * 8;
    rnncc_model *m = small_lstm();
    fill_weights(m);
    TrainBufs b = train_bufs(m, T, N);
    int pageable = 0, dev = 0;
    ck_assert_int_eq(cudaGetDevice(&dev), cudaSuccess);
    ck_assert_int_eq(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, dev), cudaSuccess);
    float *ys[] = {b.y}, *odd_y[] = {(float *)((char *)b.y + 2)}, *host_x = calloc((size_t)nx, sizeof(float)), *pinned_x;
    float **dev_ys;
    int *dev_lengths;
    ck_assert_int_eq(cudaMallocHost((void **)&pinned_x, (size_t)nx * sizeof(float)), cudaSuccess);
    memset(pinned_x, 0, (size_t)nx * sizeof(float));
    ck_assert_int_eq(cudaMalloc((void **)&dev_ys, sizeof *dev_ys), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(dev_ys, ys, sizeof ys, cudaMemcpyHostToDevice), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&dev_lengths, (size_t)N * sizeof(int)), cudaSuccess);
    struct { rnncc_io io; const char *says; } bad[] = {
        {{T, N, b.x, odd_y, NULL, NULL, NULL}, "io->y[0] ("},
        {{T, N, b.x, ys, dev_lengths, NULL, NULL}, "io->lengths ("},
        {{T, N, b.x, dev_ys, NULL, NULL, NULL}, "io->y ("},
        {{T, N, host_x, ys, NULL, NULL, NULL}, pageable ? NULL : "io->x ("},
    };
    const char *tails[] = {") is not at a multiple of 4 bytes", ") is device memory; it must be host memory",
                           ") is device memory; it must be host memory", ") is host memory that the GPU cannot reach"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        rnncc_status s = rnncc_forward(m, &bad[k].io, b.iws, b.iwsb, NULL, 0, NULL);
        if (!bad[k].says) {
            ck_assert_msg(s == RNNCC_OK, "call %zu: %s", k, rnncc_model_error(m));
            continue;
        }
        ck_assert_int_eq(s, RNNCC_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(rnncc_model_error(m), bad[k].says) && strstr(rnncc_model_error(m), tails[k]), "call %zu: \"%s\"",
                      k, rnncc_model_error(m));
    }
    rnncc_io io = {T, N, pinned_x, ys, NULL, NULL, NULL};
    for (int run = 0; run < 3; run++) /* direct, captured, replayed */
        ck_assert_msg(rnncc_forward(m, &io, b.iws, b.iwsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    /* the arrays the calls found host memory are known from then on (no question asked); device memory never is */
    io.y = dev_ys;
    ck_assert_int_eq(rnncc_forward(m, &io, b.iws, b.iwsb, NULL, 0, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(rnncc_model_error(m), "io->y ("), "%s", rnncc_model_error(m));
    io.y = ys;
    ck_assert_msg(rnncc_forward(m, &io, b.iws, b.iwsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    /* the backward's dx where the GPU cannot reach it */
    const float *dys[] = {b.dy};
    rnncc_io tio = {T, N, b.x, ys, NULL, NULL, NULL};
    rnncc_grad_io gio = {T, N, NULL, b.x, dys, NULL, pageable ? (float *)((char *)b.dx + 1) : host_x, NULL};
    ck_assert_msg(rnncc_forward(m, &tio, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(rnncc_model_error(m), "io->dx ("), "%s", rnncc_model_error(m));
    free(host_x), cudaFreeHost(pinned_x), cudaFree(dev_ys), cudaFree(dev_lengths);
    train_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* One pass of m over x ([T][N][I]) with lengths, initial states h0 and final states into hT; training: with a
 * reserve, then backward data with dy ([T][N][Y], as y), dx into out[1]; y into out[0]. */
static void states_pass(rnncc_model *m, int64_t T, int64_t N, int64_t I, int64_t Y, const int *lengths, const float *x,
                        const float *dy, const float *const *h0, float *const *hT, int training, float *out[2]) {
    float *y = dev_copy(NULL, T * N * Y), *dx = dev_copy(NULL, T * N * I), *ys[] = {y};
    const float *dys[] = {dy};
    size_t wsb, rsb = 0;
    void *ws, *rs = NULL;
    ck_assert_int_eq(rnncc_workspace_size(m, T, N, training, &wsb), RNNCC_OK);
    if (training) ck_assert_int_eq(rnncc_reserve_size(m, T, N, &rsb), RNNCC_OK);
    ck_assert_int_eq(cudaMalloc(&ws, wsb ? wsb : 4), cudaSuccess);
    if (training) ck_assert_int_eq(cudaMalloc(&rs, rsb ? rsb : 4), cudaSuccess);
    rnncc_io io = {T, N, x, ys, lengths, h0, hT};
    rnncc_grad_io gio = {T, N, lengths, x, dys, NULL, dx, NULL};
    ck_assert_msg(rnncc_forward(m, &io, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    if (training) ck_assert_msg(rnncc_backward_data(m, &gio, ws, wsb, rs, rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    out[0] = host_copy(y, T * N * Y);
    out[1] = training ? host_copy(dx, T * N * I) : NULL;
    cudaFree(y), cudaFree(dx), cudaFree(ws), cudaFree(rs);
}

/* h0 and hT given as one buffer (state carried from one call to the next): each unit stages its initial states
 * before it writes its final ones, so the outputs, final states and gradients are those of two buffers, bit for
 * bit: the LSTM at 2 layers bidirectional, LSTMP folded (its final state gathered from the post program's
 * product, s_0 where a sequence has no step, in place) and a folded cell whose projected product is a step
 * GEMM (its final state a GEMM of z_T added onto s_0 written first), both backends, a sequence of no steps,
 * inference and training. */
static const char step_projected[] = "cell hc(x[I]) -> y {\n  state h[P], c[H]\n  param W_i[H, I], U_i[H, P], P_h[P, H]\n"
                                     "  c' = tanh(W_i @ x + U_i @ h)\n  h' = P_h @ c\n  y = tanh(c')\n}\n";

START_TEST(states_carried_in_place) {
    const int64_t T = 5, N = 3;
    const int lengths[] = {5, 0, 3};
    const rnncc_backend backends[] = {RNNCC_BACKEND_PERSISTENT, RNNCC_BACKEND_CUBLAS};
    float hx[5 * 3 * 32], hs[2][4 * 3 * FOLD_H];
    for (int i = 0; i < 5 * 3 * 32; i++) hx[i] = (float)((i * 13 % 29) - 14) / 14.0f;
    for (int i = 0; i < 4 * 3 * FOLD_H; i++) hs[0][i] = (float)((i * 7 % 23) - 11) / 16.0f, hs[1][i] = (float)((i * 5 % 19) - 9) / 8.0f;
    float *x = dev_copy(hx, T * N * 16), *dy = dev_copy(hx, T * N * 32);
    for (int cell = 0; cell < 3; cell++)
        for (int bi = 0; bi < 2; bi++)
            for (int training = 0; training < 2; training++) {
                rnncc_model *m = NULL;
                int64_t I = 8, Y = 32, ns[2] = {4 * N * 16, 4 * N * 16}; /* the LSTM: I = 8, H = 16, 4 units */
                if (cell == 0) {
                    rnncc_program *p = compile_ok("cells/lstm.cell");
                    rnncc_model_desc desc = {NULL, lstm_dims, 2, 2, 1, RNNCC_FP32, -1, backends[bi], RNNCC_FOLD_AUTO, 0};
                    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
                    rnncc_program_destroy(p);
                    fill_weights(m);
                } else if (cell == 1) { /* LSTMP folded: I = 16, P = 12, H = FOLD_H, one unit */
                    m = lstmp_on(1, RNNCC_FP32, backends[bi], 3);
                    I = 16, Y = 12, ns[0] = N * 12, ns[1] = N * FOLD_H;
                } else { /* step_projected folded: I = 16, P = 12, H = FOLD_H, one unit, y of H */
                    rnncc_program *p = NULL;
                    ck_assert_int_eq(rnncc_compile_string(step_projected, sizeof step_projected - 1, "hc.cell", NULL, &p), RNNCC_OK);
                    const char *dims[] = {"I=16", "P=12", "H=22"};
                    rnncc_model_desc desc = {NULL, dims, 3, 1, 0, RNNCC_FP32, -1, backends[bi], RNNCC_FOLD_ON, 0};
                    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
                    rnncc_program_destroy(p);
                    char why[640];
                    rnncc_backend used;
                    ck_assert_int_eq(rnncc_model_backend(m, N, &used, why, sizeof why), RNNCC_OK);
                    ck_assert_msg(strstr(why, "folded"), "%s", why);
                    fill_weights(m);
                    I = 16, Y = FOLD_H, ns[0] = N * 12, ns[1] = N * FOLD_H;
                }
                const float *h0[2] = {dev_copy(hs[0], ns[0]), dev_copy(hs[1], ns[1])};
                float *hT[2] = {dev_copy(NULL, ns[0]), dev_copy(NULL, ns[1])};
                float *in_place[2] = {dev_copy(hs[0], ns[0]), dev_copy(hs[1], ns[1])};
                float *apart[2], *carried[2];
                states_pass(m, T, N, I, Y, lengths, x, dy, h0, hT, training, apart);
                states_pass(m, T, N, I, Y, lengths, x, dy, (const float *const *)in_place, in_place, training, carried);
                ck_assert_msg(!memcmp(apart[0], carried[0], (size_t)(T * N * Y) * sizeof(float)), "cell %d, backend %d, "
                              "training %d: y", cell, bi, training);
                if (training)
                    ck_assert_msg(!memcmp(apart[1], carried[1], (size_t)(T * N * I) * sizeof(float)), "cell %d, backend %d: dx",
                                  cell, bi);
                for (int k = 0; k < 2; k++) {
                    float *a = host_copy(hT[k], ns[k]), *c = host_copy(in_place[k], ns[k]);
                    ck_assert_msg(!memcmp(a, c, (size_t)ns[k] * sizeof(float)), "cell %d, backend %d, training %d: hT[%d]",
                                  cell, bi, training, k);
                    const int64_t S = ns[k] / (cell == 0 ? 4 * N : N); /* sequence 1 has no step: its initial state */
                    for (int64_t u = 0; u < ns[k] / (N * S); u++)
                        for (int64_t j = 0; j < S; j++)
                            ck_assert_float_eq(c[(u * N + 1) * S + j], hs[k][(u * N + 1) * S + j]);
                    free(a), free(c), free(apart[k]), free(carried[k]);
                    cudaFree((void *)h0[k]), cudaFree(hT[k]), cudaFree(in_place[k]);
                }
                rnncc_model_destroy(m);
            }
    cudaFree(x), cudaFree(dy);
}
END_TEST

/* Asserts that the n halves at dev16 (device) are the n floats at dev (device) rounded to fp16, bit for bit. */
static void expect_rounded_f16(const float *dev, const void *dev16, int64_t n, const char *what) {
    float *f = malloc((size_t)n * sizeof(float));
    unsigned short *h = malloc((size_t)n * sizeof(unsigned short));
    ck_assert_int_eq(cudaMemcpy(f, dev, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(h, dev16, (size_t)n * sizeof(unsigned short), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(h[i] == rnn_round_f16(f[i]), "%s %lld: %#x, not %#x (%a rounded)", what, (long long)i, h[i],
                      rnn_round_f16(f[i]), (double)f[i]);
    free(f), free(h);
}

/* In the 16-bit modes a training forward keeps the weights' 16-bit copy in the reserve, where its
 * backward reads it and converts none (runtime/rt_half.c); inference keeps it in the workspace. So a
 * backward needs nothing of the forward's workspace: filled with NaNs between them, both backends'
 * gradients come out bit for bit as without. */
START_TEST(half_weights_kept_in_the_reserve) {
    const rnncc_backend backends[] = {RNNCC_BACKEND_PERSISTENT, RNNCC_BACKEND_CUBLAS};
    const int64_t T = 5, N = 3;
    for (int bi = 0; bi < 2; bi++) {
        rnncc_model *m = small_lstm_in(RNNCC_FP16, backends[bi]);
        int64_t count = fill_weights(m);
        const size_t copy = (size_t)(count + 8) * 2; /* the copy and its alignment (rt_regions) */
        RtRegions r;
        ck_assert_int_eq(rt_regions(m, T, N, 1, &r), RNNCC_OK);
        ck_assert_uint_le(r.half_weights + copy, r.reserve);
        rt_regions_free(&r);
        ck_assert_int_eq(rt_regions(m, T, N, 0, &r), RNNCC_OK);
        ck_assert_uint_eq(r.reserve, 0);
        ck_assert_uint_le(r.half_weights + copy, r.workspace);
        rt_regions_free(&r);
        size_t n = (size_t)(T * N * 16), nx = (size_t)(T * N * 8); /* [T][N][H], [T][N][I] */
        TrainBufs b = train_bufs(m, T, N);
        float *ys[] = {b.y};
        const float *dys[] = {b.dy};
        rnncc_io io = {T, N, b.x, ys, NULL, NULL, NULL};
        rnncc_grad_io gio = {T, N, NULL, b.x, dys, NULL, b.dx, NULL};
        float *got[2][2]; /* [run][dx, dw] */
        for (int run = 0; run < 2; run++) {
            ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
            if (run) ck_assert_int_eq(cudaMemset(b.ws, 0xff, b.wsb), cudaSuccess); /* NaNs */
            backward_into(m, &b, &gio, n, count, got[run]);
        }
        size_t nonzero = 0;
        for (size_t i = 0; i < nx; i++) {
            ck_assert_msg(got[0][0][i] == got[1][0][i], "backend %d, dx %zu: %g then %g", bi, i, got[0][0][i], got[1][0][i]);
            nonzero += got[0][0][i] != 0;
        }
        ck_assert_uint_gt(nonzero, 0);
        for (int64_t i = 0; i < count; i++)
            ck_assert_msg(got[0][1][i] == got[1][1][i], "backend %d, weight %lld: %g then %g", bi, (long long)i, got[0][1][i],
                          got[1][1][i]);
        /* the backward reads the reserve's copy: zeroed after the forward, it makes every dx 0 (the
         * input weights' products), where a backward converting the weights again would not; and the
         * weight gradients read x as the forward rounded it into the reserve: zeroed, W_i's gradient
         * is 0 (dW_i = dgate_i x^T) */
        ck_assert_int_eq(rt_regions(m, T, N, 1, &r), RNNCC_OK);
        char *kept = rt_align16((char *)b.rs + r.half_weights), *kept_x = rt_align16((char *)b.rs + r.half_x);
        rt_regions_free(&r);
        /* the forward writes both copies whole, each half its value rounded (poisoned first) */
        ck_assert_int_eq(cudaMemset(kept, 0xff, (size_t)count * 2), cudaSuccess);
        ck_assert_int_eq(cudaMemset(kept_x, 0xff, nx * 2), cudaSuccess);
        ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
        ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
        expect_rounded_f16(rnncc_model_weights(m, &count), kept, count, "the reserve's weight");
        expect_rounded_f16(b.x, kept_x, (int64_t)nx, "the reserve's x");
        ck_assert_int_eq(cudaMemset(kept, 0, (size_t)count * 2), cudaSuccess);
        ck_assert_msg(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
        float *dx = malloc(n * sizeof(float));
        ck_assert_int_eq(cudaMemcpy(dx, b.dx, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t i = 0; i < nx; i++) ck_assert_msg(dx[i] == 0, "backend %d, dx %zu: %g, not 0", bi, i, dx[i]);
        free(dx);
        rnncc_param_info info;
        ck_assert_int_eq(rnncc_model_param_info(m, 0, &info), RNNCC_OK); /* W_i */
        ck_assert_int_eq(cudaMemset(kept_x, 0, nx * 2), cudaSuccess);
        ck_assert_msg(rnncc_backward_weights(m, &gio, b.dw, RNNCC_WGRAD_SET, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK,
                      "%s", rnncc_model_error(m));
        float *dwi = malloc((size_t)(info.rows * info.cols) * sizeof(float));
        ck_assert_int_eq(cudaMemcpy(dwi, b.dw + info.offset, (size_t)(info.rows * info.cols) * sizeof(float),
                                    cudaMemcpyDeviceToHost), cudaSuccess);
        size_t was_nonzero = 0;
        for (int64_t i = 0; i < info.rows * info.cols; i++) {
            ck_assert_msg(dwi[i] == 0, "backend %d, dW_i %lld: %g, not 0", bi, (long long)i, dwi[i]);
            was_nonzero += got[0][1][info.offset + i] != 0;
        }
        ck_assert_uint_gt(was_nonzero, 0);
        free(dwi);
        for (int run = 0; run < 2; run++) free(got[run][0]), free(got[run][1]);
        train_bufs_free(&b);
        rnncc_model_destroy(m);
    }
}
END_TEST

/* The bytes of the fp32 buffer that unit 0's twinned adjoint of buffer i has apart from its twin in
 * regions r (T = r->T, N = r->N); 0 where it has none. */
static size_t fp32_of_twin(const rnncc_model *m, const RtRegions *r, int i) {
    if (!cg_adjoint_twinned(m->plan, i) || r->dbuf16[i] == RT_NO_TWIN || r->dbuf[i] == r->dbuf16[i]) return 0;
    return (size_t)(r->T * r->N * m->layout[0]->buffer_width[i]) * sizeof(float);
}

/* A fp16 persistent backward whose tile stages every result adjoint from its 16-bit twin
 * (cg_persist_twins_staged) stores those adjoints as twins alone (RnnArgs.twins_only): their fp32
 * buffers, which the reserve still holds, are neither written (NaN bytes set after the forward stay)
 * nor read (the gradients are bit for bit a run's without them). */
START_TEST(persistent_backward_stores_twins_alone) {
    const int64_t T = 5, N = 3;
    rnncc_model *m = small_lstm_in(RNNCC_FP16, RNNCC_BACKEND_PERSISTENT);
    int64_t count = fill_weights(m);
    const RtPersist *persist[2];
    ck_assert_int_eq(rt_persist_choose(m, N, 1, persist, NULL, 0), RNNCC_OK);
    ck_assert_ptr_nonnull(persist[0]);
    ck_assert_int_eq(cg_persist_twins_staged(m->plan, &persist[0]->plan), 1);
    TrainBufs b = train_bufs(m, T, N);
    float *ys[] = {b.y};
    const float *dys[] = {b.dy};
    rnncc_io io = {T, N, b.x, ys, NULL, NULL, NULL};
    rnncc_grad_io gio = {T, N, NULL, b.x, dys, NULL, b.dx, NULL};
    RtRegions r;
    ck_assert_int_eq(rt_regions(m, T, N, 1, &r), RNNCC_OK);
    const size_t nx = (size_t)(T * N * 8);
    float *got[2][2]; /* [run][dx, dw] */
    int twinned = 0;
    for (int run = 0; run < 2; run++) {
        ck_assert_msg(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
        for (int i = 0; run && i < m->plan->nbuffers; i++) {
            const size_t bytes = fp32_of_twin(m, &r, i);
            if (!bytes) continue;
            ck_assert_int_eq(cudaMemset((char *)b.rs + r.dbuf[i], 0xff, bytes), cudaSuccess);
            twinned++;
        }
        backward_into(m, &b, &gio, nx, count, got[run]);
    }
    ck_assert_int_gt(twinned, 0); /* the LSTM's gate adjoints, hoisted and step */
    for (int i = 0; i < m->plan->nbuffers; i++) {
        const size_t bytes = fp32_of_twin(m, &r, i);
        if (!bytes) continue;
        unsigned char *h = malloc(bytes);
        ck_assert_int_eq(cudaMemcpy(h, (char *)b.rs + r.dbuf[i], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t k = 0; k < bytes; k++) ck_assert_msg(h[k] == 0xff, "buffer %d, byte %zu written", i, k);
        free(h);
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < nx; i++) {
        ck_assert_msg(got[0][0][i] == got[1][0][i], "dx %zu: %g then %g", i, got[0][0][i], got[1][0][i]);
        nonzero += got[0][0][i] != 0;
    }
    ck_assert_uint_gt(nonzero, 0);
    for (int64_t i = 0; i < count; i++)
        ck_assert_msg(got[0][1][i] == got[1][1][i] && isfinite(got[1][1][i]), "weight %lld: %g then %g", (long long)i,
                      got[0][1][i], got[1][1][i]);
    for (int run = 0; run < 2; run++) free(got[run][0]), free(got[run][1]);
    rt_regions_free(&r);
    train_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* An inference forward of m over b's x (T steps, N sequences) with b's inference workspace; y into out. */
static void forward_y(rnncc_model *m, const TrainBufs *b, int64_t T, int64_t N, float *out) {
    float *ys[] = {b->y};
    rnncc_io io = {T, N, b->x, ys, NULL, NULL, NULL};
    ck_assert_msg(rnncc_forward(m, &io, b->iws, b->iwsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(cudaMemcpy(out, b->y, (size_t)(T * N * 16) * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
}

/* A training forward and backward data of m over b's buffers; dx into out. */
static void backward_dx(rnncc_model *m, const TrainBufs *b, int64_t T, int64_t N, float *out) {
    float *ys[] = {b->y};
    const float *dys[] = {b->dy};
    rnncc_io io = {T, N, b->x, ys, NULL, NULL, NULL};
    rnncc_grad_io gio = {T, N, NULL, b->x, dys, NULL, b->dx, NULL};
    ck_assert_msg(rnncc_forward(m, &io, b->ws, b->wsb, b->rs, b->rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(rnncc_backward_data(m, &gio, b->ws, b->wsb, b->rs, b->rsb, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(cudaMemcpy(out, b->dx, (size_t)(T * N * 8) * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
}

/* rnncc_model_set_param of a recurrent weight (read every step) right after a pass issued on the
 * legacy stream (a replayed graph of 3000 per-step steps, milliseconds long) and not waited for: that
 * pass reads the old weights bit for bit (the write waits for it), the next pass the new ones. */
START_TEST(set_param_waits_for_passes_before_it) {
    const int64_t T = 3000, N = 2, ny = T * N * 16;
    rnncc_model *m = small_lstm_on(RNNCC_BACKEND_CUBLAS);
    fill_weights(m);
    TrainBufs b = train_bufs(m, T, N);
    float *want = malloc((size_t)ny * sizeof(float)), *got = malloc((size_t)ny * sizeof(float)), uf[256];
    for (int i = 0; i < 3; i++) forward_y(m, &b, T, N, want); /* direct, captured, replayed */
    ck_assert_int_eq(rnncc_model_get_param(m, "U_f", 0, 0, uf, 256), RNNCC_OK); /* read every step */
    for (int i = 0; i < 256; i++) uf[i] = -2 * uf[i];
    float *ys[] = {b.y};
    rnncc_io io = {T, N, b.x, ys, NULL, NULL, NULL};
    ck_assert_msg(rnncc_forward(m, &io, b.iws, b.iwsb, NULL, 0, NULL) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_int_eq(rnncc_model_set_param(m, "U_f", 0, 0, uf, 256), RNNCC_OK);
    ck_assert_int_eq(cudaMemcpy(got, b.y, (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_msg(memcmp(got, want, (size_t)ny * sizeof(float)) == 0, "set_param changed the weights of a pass issued before it");
    forward_y(m, &b, T, N, got);
    ck_assert_msg(memcmp(got, want, (size_t)ny * sizeof(float)) != 0, "the next pass did not read set_param's weights");
    free(want), free(got);
    train_bufs_free(&b);
    rnncc_model_destroy(m);
}
END_TEST

/* A write of the model's own from the host (rt_upload) while a graph capture holds its stream 0, as a
 * caller's capture of an earlier pass would: refused by name, and the model goes on. */
START_TEST(model_writes_refused_while_captured) {
    rnncc_model *m = small_lstm();
    float w[128] = {0};
    ck_assert_int_eq(cudaStreamBeginCapture(m->streams[0], cudaStreamCaptureModeRelaxed), cudaSuccess);
    ck_assert_int_eq(rnncc_model_set_param(m, "W_f", 0, 0, w, 128), RNNCC_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(rnncc_model_error(m), "rnncc_model_set_param: not written while the caller's graph capture holds"),
                  "%s", rnncc_model_error(m));
    cudaGraph_t g = NULL;
    ck_assert_int_eq(cudaStreamEndCapture(m->streams[0], &g), cudaSuccess);
    cudaGraphDestroy(g);
    RtVerify v = {.T = 6, .N = 3, .varlen = 1, .random_h0 = 1, .backward = 1, .seed = 7};
    ck_assert_msg(rt_verify(m, &v) == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_double_le(v.worst, 1e-5);
    ck_assert_double_le(v.grad_worst, 1e-4);
    rnncc_model_destroy(m);
}
END_TEST

/* W_i (the first parameter, which only a GEMM reads: the vectors are read in fp32) of a 16-bit model on the host,
 * and the references of the 16-bit weight tests with the model rounding every forward: y as the weights are (want)
 * and with W_i halved (halved), dx too where dx_want and dx_halved are not NULL; the weights as they were after. */
typedef struct HalvedW {
    rnncc_param_info info;
    float *host;  /* every weight (the caller frees it) */
    float *first; /* W_i in it, as it was */
    int64_t nfirst;
} HalvedW;

/* Four inference forwards of m give y == want bit for bit (the last ones replaying the graph captured of them), then
 * four training forwards and backward data calls dx == dx_want; what names the case in a failure. */
static void expect_passes(rnncc_model *m, const TrainBufs *b, int64_t T, int64_t N, const float *want,
                          const float *dx_want, const char *what) {
    const size_t ybytes = (size_t)(T * N * 16) * sizeof(float), xbytes = (size_t)(T * N * 8) * sizeof(float);
    float *got = malloc(ybytes), *dx_got = malloc(xbytes);
    for (int run = 0; run < 4; run++) {
        forward_y(m, b, T, N, got);
        ck_assert_msg(memcmp(got, want, ybytes) == 0, "%s, run %d: y differs", what, run);
    }
    ck_assert_ptr_nonnull(m->graph[0].exec);
    for (int run = 0; run < 4; run++) {
        backward_dx(m, b, T, N, dx_got);
        ck_assert_msg(memcmp(dx_got, dx_want, xbytes) == 0, "%s, run %d: dx differs", what, run);
    }
    free(got), free(dx_got);
}

static HalvedW halved_references(rnncc_model *m, const TrainBufs *b, int64_t T, int64_t N, float *want, float *dx_want,
                                 float *halved, float *dx_halved) {
    int64_t count = 0;
    float *w = rnncc_model_weights(m, &count);
    HalvedW h = {.host = malloc((size_t)count * sizeof(float))};
    ck_assert_int_eq(cudaMemcpy(h.host, w, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_int_eq(rnncc_model_param_info(m, 0, &h.info), RNNCC_OK);
    ck_assert_int_gt(h.info.cols, 1);
    h.first = h.host + h.info.offset;
    h.nfirst = h.info.rows * h.info.cols;
    forward_y(m, b, T, N, want);
    if (dx_want) backward_dx(m, b, T, N, dx_want);
    for (int64_t i = 0; i < h.nfirst; i++) h.first[i] *= 0.5f;
    ck_assert_int_eq(rnncc_model_set_param(m, h.info.name, h.info.layer, h.info.direction, h.first, h.nfirst), RNNCC_OK);
    forward_y(m, b, T, N, halved);
    if (dx_halved) backward_dx(m, b, T, N, dx_halved);
    ck_assert_msg(memcmp(halved, want, (size_t)(T * N * 16) * sizeof(float)) != 0, "W_i halved changes nothing");
    ck_assert_msg(!dx_halved || memcmp(dx_halved, dx_want, (size_t)(T * N * 8) * sizeof(float)) != 0,
                  "W_i halved changes no dx");
    for (int64_t i = 0; i < h.nfirst; i++) h.first[i] *= 2;
    ck_assert_int_eq(rnncc_model_set_param(m, h.info.name, h.info.layer, h.info.direction, h.first, h.nfirst), RNNCC_OK);
    return h;
}

/* rnncc_model_keep_derived_weights in fp16 (and its earlier name, rnncc_model_keep_half_weights, which this
 * test turns it on with): the model rounds its weights to 16 bits once, and again only after
 * they change (rnncc_model_weights_changed, rnncc_model_set_param): bit for bit what a model that
 * rounds them every forward gives, through graph capture and replay (four passes of each kind, an
 * inference graph captured without the conversion before every change), in inference and training,
 * on both backends; weights written through rnncc_model_weights and not announced are not seen (the
 * copy is kept, which is how this test knows it is used); a backward after keep changed since its
 * forward is refused. */
START_TEST(half_weights_kept_by_the_model) {
    const rnncc_backend backends[] = {RNNCC_BACKEND_PERSISTENT, RNNCC_BACKEND_CUBLAS};
    const int64_t T = 5, N = 3, ny = T * N * 16, nx = T * N * 8;
    const size_t ybytes = (size_t)ny * sizeof(float), xbytes = (size_t)nx * sizeof(float);
    float *want = malloc(ybytes), *halved = malloc(ybytes), *got = malloc(ybytes);
    float *dx_want = malloc(xbytes), *dx_got = malloc(xbytes);
    for (int bi = 0; bi < 2; bi++) {
        rnncc_model *m = small_lstm_in(RNNCC_FP16, backends[bi]);
        fill_weights(m);
        ck_assert_int_eq(rnncc_model_keep_derived_weights(m, 2), RNNCC_ERR_INVALID_ARGUMENT);
        ck_assert_str_eq(rnncc_model_error(m), "keep must be 0 or 1, not 2");
        TrainBufs b = train_bufs(m, T, N);
        float *w = rnncc_model_weights(m, NULL);
        /* the references, rounded every forward: as filled, and with W_i halved */
        HalvedW hw = halved_references(m, &b, T, N, want, dx_want, halved, NULL);
        const rnncc_param_info info = hw.info;
        float *first = hw.first;
        const int64_t nfirst = hw.nfirst;
        /* kept: inference forwards direct, direct (no conversion), captured, replayed; then training */
        ck_assert_int_eq(rnncc_model_keep_half_weights(m, 1), RNNCC_OK);
        expect_passes(m, &b, T, N, want, dx_want, bi ? "cuBLAS" : "persistent");
        for (int run = 0; run < 4; run++) forward_y(m, &b, T, N, got); /* inference captured again, no conversion */
        ck_assert_ptr_nonnull(m->graph[0].exec);
        /* W_i halved through the pointer: not seen until announced, then seen by every pass after */
        for (int64_t i = 0; i < nfirst; i++) first[i] *= 0.5f;
        ck_assert_int_eq(cudaMemcpy(w + info.offset, first, (size_t)nfirst * sizeof(float), cudaMemcpyHostToDevice),
                         cudaSuccess);
        forward_y(m, &b, T, N, got);
        ck_assert_msg(memcmp(got, want, ybytes) == 0, "backend %d: unannounced weights were seen", bi);
        ck_assert_int_eq(rnncc_model_weights_changed(m), RNNCC_OK);
        for (int run = 0; run < 4; run++) {
            forward_y(m, &b, T, N, got);
            ck_assert_msg(memcmp(got, halved, ybytes) == 0, "backend %d, run %d: announced weights not seen", bi, run);
        }
        /* rnncc_model_set_param announces itself, after a captured pass too */
        for (int64_t i = 0; i < nfirst; i++) first[i] *= 2;
        ck_assert_int_eq(rnncc_model_set_param(m, info.name, info.layer, info.direction, first, nfirst), RNNCC_OK);
        for (int run = 0; run < 4; run++) {
            forward_y(m, &b, T, N, got);
            ck_assert_msg(memcmp(got, want, ybytes) == 0, "backend %d, run %d: set_param not seen", bi, run);
        }
        /* keep changed between a training forward and its backward: refused, by name */
        float *ys[] = {b.y};
        const float *dys[] = {b.dy};
        rnncc_io io = {T, N, b.x, ys, NULL, NULL, NULL};
        rnncc_grad_io gio = {T, N, NULL, b.x, dys, NULL, b.dx, NULL};
        ck_assert_int_eq(rnncc_forward(m, &io, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_OK);
        ck_assert_int_eq(rnncc_model_keep_derived_weights(m, 0), RNNCC_OK);
        ck_assert_int_eq(rnncc_backward_data(m, &gio, b.ws, b.wsb, b.rs, b.rsb, NULL), RNNCC_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "rnncc_model_keep_derived_weights changed since the training forward"));
        backward_dx(m, &b, T, N, dx_got); /* a forward again: the model goes on */
        ck_assert_msg(memcmp(dx_got, dx_want, xbytes) == 0, "backend %d: dx differs after keep 0", bi);
        free(hw.host);
        train_bufs_free(&b);
        rnncc_model_destroy(m);
    }
    /* fp32, an LSTM: nothing derived to keep */
    rnncc_model *m = small_lstm();
    ck_assert_int_eq(rnncc_model_keep_derived_weights(m, 1), RNNCC_OK);
    ck_assert_int_eq(rnncc_model_weights_changed(m), RNNCC_OK);
    rnncc_model_destroy(m);
    free(want), free(halved), free(got), free(dx_want), free(dx_got);
}
END_TEST

/* rnncc_model_weights16, for a caller that keeps 16-bit weights of its own, in fp16 and bf16 on both backends:
 * the copy it is handed holds the fp32 weights rounded (the CPU's bits); every pass after reads what the caller
 * writes there (W_i's values of the weights halved, rounded by the CPU, give bit for bit what a model whose fp32
 * W_i was halved gives, inference through graph capture and replay, and training), and asking again hands the same
 * copy unrounded; rnncc_model_set_param has the next forward round the fp32 weights into it again. A NULL
 * weights16, a call while a capture holds the model's stream (nothing kept), an fp32 model and a folded one are
 * refused, saying why (a NULL model: model_arguments_are_checked). */
START_TEST(weights16_written_by_the_caller) {
    const rnncc_backend backends[] = {RNNCC_BACKEND_PERSISTENT, RNNCC_BACKEND_CUBLAS};
    const int64_t T = 5, N = 3, ny = T * N * 16, nx = T * N * 8;
    const size_t ybytes = (size_t)ny * sizeof(float), xbytes = (size_t)nx * sizeof(float);
    float *want = malloc(ybytes), *halved = malloc(ybytes), *got = malloc(ybytes);
    float *dx_want = malloc(xbytes), *dx_halved = malloc(xbytes);
    for (int c = 0; c < 4; c++) {
        const int bf16 = c / 2;
        unsigned short (*round16)(float) = bf16 ? rnn_round_bf16 : rnn_round_f16;
        rnncc_model *m = small_lstm_in(bf16 ? RNNCC_BF16 : RNNCC_FP16, backends[c % 2]);
        const int64_t count = fill_weights(m);
        TrainBufs b = train_bufs(m, T, N);
        /* the references, rounded every forward: as filled, and with W_i halved */
        HalvedW hw = halved_references(m, &b, T, N, want, dx_want, halved, dx_halved);
        const rnncc_param_info info = hw.info;
        const float *host = hw.host, *first = hw.first;
        const int64_t nfirst = hw.nfirst;
        unsigned short *half16 = malloc((size_t)nfirst * sizeof(unsigned short)), *got16 = malloc((size_t)count * 2);
        for (int64_t i = 0; i < nfirst; i++) half16[i] = round16(first[i] * 0.5f); /* exact: the halved values set */
        /* handed over: the weights rounded, read as they are */
        uint16_t *w16 = NULL;
        int64_t n16 = 0;
        ck_assert_msg(rnncc_model_weights16(m, &w16, &n16) == RNNCC_OK, "%s", rnncc_model_error(m));
        ck_assert_ptr_nonnull(w16);
        ck_assert_int_eq(n16, count);
        ck_assert_int_eq(cudaMemcpy(got16, w16, (size_t)count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
        for (int64_t i = 0; i < count; i++)
            ck_assert_msg(got16[i] == round16(host[i]), "case %d, weight %lld: %#x, not %#x", c, (long long)i, got16[i],
                          round16(host[i]));
        forward_y(m, &b, T, N, got);
        ck_assert_msg(memcmp(got, want, ybytes) == 0, "case %d: y differs from the rounded weights'", c);
        /* the caller writes W_i halved in 16 bits: every pass after multiplies by it */
        ck_assert_int_eq(cudaMemcpy(w16 + info.offset, half16, (size_t)nfirst * 2, cudaMemcpyHostToDevice), cudaSuccess);
        char what[64];
        snprintf(what, sizeof what, "case %d, the caller's 16-bit weights", c);
        expect_passes(m, &b, T, N, halved, dx_halved, what);
        uint16_t *again = NULL;
        ck_assert_int_eq(rnncc_model_weights16(m, &again, NULL), RNNCC_OK);
        ck_assert_ptr_eq(again, w16);
        forward_y(m, &b, T, N, got);
        ck_assert_msg(memcmp(got, halved, ybytes) == 0, "case %d: asking again rounded the weights", c);
        /* set_param: the next forward rounds the fp32 weights again */
        ck_assert_int_eq(rnncc_model_set_param(m, info.name, info.layer, info.direction, first, nfirst), RNNCC_OK);
        forward_y(m, &b, T, N, got);
        ck_assert_msg(memcmp(got, want, ybytes) == 0, "case %d: set_param did not round the weights again", c);
        free(half16), free(got16), free(hw.host);
        train_bufs_free(&b);
        rnncc_model_destroy(m);
    }
    uint16_t *w16 = (uint16_t *)want;
    int64_t n16 = 7;
    rnncc_model *m = small_lstm_in(RNNCC_FP16, RNNCC_BACKEND_AUTO);
    ck_assert_int_eq(rnncc_model_weights16(m, NULL, &n16), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(rnncc_model_error(m), "rnncc_model_weights16: weights16 is NULL");
    /* while a capture holds the model's stream: refused before anything is allocated or kept */
    ck_assert_int_eq(cudaStreamBeginCapture(m->streams[0], cudaStreamCaptureModeRelaxed), cudaSuccess);
    ck_assert_int_eq(rnncc_model_weights16(m, &w16, &n16), RNNCC_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(rnncc_model_error(m), "rnncc_model_weights16: not while a graph capture is under way"), "%s",
                  rnncc_model_error(m));
    cudaGraph_t g = NULL;
    ck_assert_int_eq(cudaStreamEndCapture(m->streams[0], &g), cudaSuccess);
    cudaGraphDestroy(g);
    ck_assert(!m->keep_derived && !m->half_kept && w16 == NULL && n16 == 0);
    ck_assert_int_eq(rnncc_model_weights16(m, &w16, &n16), RNNCC_OK); /* and goes on */
    ck_assert(w16 != NULL && n16 > 0);
    rnncc_model_destroy(m);
    m = small_lstm();
    ck_assert_int_eq(rnncc_model_weights16(m, &w16, &n16), RNNCC_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(rnncc_model_error(m),
                     "rnncc_model_weights16: the model's precision is fp32: it has no 16-bit weights (fp16 and bf16 have)");
    ck_assert(w16 == NULL && n16 == 0);
    rnncc_model_destroy(m);
    m = lstmp_on(1, RNNCC_FP16, RNNCC_BACKEND_PERSISTENT, 5);
    ck_assert_int_eq(rnncc_model_weights16(m, &w16, &n16), RNNCC_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "runs its cell folded"));
    ck_assert_ptr_nonnull(strstr(rnncc_model_error(m), "rnncc_model_desc.fold = RNNCC_FOLD_OFF"));
    rnncc_model_destroy(m);
    free(want), free(halved), free(got), free(dx_want), free(dx_halved);
}
END_TEST

/* The twins' and the conversion kernels' rounding on the GPU (the prelude's rnn_twin16: the hardware's
 * cvt.rn) gives the bits the CPU's (rnn_round_f16, rnn_round_bf16, which the tests' CPU runs use) give:
 * every 65537th float and the edges (ties, subnormals, the largest values, infinities), NaN as a quiet
 * NaN, in fp16 and bf16. */
START_TEST(twin_rounding_on_the_gpu_is_the_cpus) {
    static const char kernel[] = "\nextern \"C\" __global__ void twins(const float *x, unsigned short *h, unsigned short *b, int n) {\n"
                                 "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
                                 "        h[i] = rnn_twin16(x[i], 0);\n"
                                 "        b[i] = rnn_twin16(x[i], 1);\n"
                                 "    }\n"
                                 "}\n";
    static const float edges[] = {0.0f, -0.0f, 1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f, 1.0f + 3 * 0x1p-11f,
                                  65504.0f, 65519.99f, 65520.0f, 1e30f, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f,
                                  0x1p-26f, 3 * 0x1p-25f, 0x1.ffcp-15f, 0x1.ffep-15f, 0x1.fffffep127f, INFINITY,
                                  -INFINITY, NAN, -NAN, -65520.0f, 1.00390625f, 1.01171875f};
    const int ne = (int)(sizeof edges / sizeof edges[0]), n = ne + (int)((1ull << 32) / 65537);
    float *x = malloc((size_t)n * sizeof *x);
    unsigned short *h = malloc((size_t)n * sizeof *h), *b = malloc((size_t)n * sizeof *b);
    ck_assert(x && h && b);
    for (int i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)((uint64_t)(i - ne) * 65537u);
        if (i < ne) x[i] = edges[i];
        else memcpy(&x[i], &u, sizeof x[i]);
    }
    int dev = 0, major = 0, minor = 0;
    ck_assert_int_eq(cudaGetDevice(&dev), cudaSuccess);
    ck_assert_int_eq(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
    ck_assert_int_eq(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), cudaSuccess);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    size_t len = strlen(cg_prelude_text) + sizeof kernel;
    char *src = malloc(len);
    ck_assert_ptr_nonnull(src);
    snprintf(src, len, "%s%s", cg_prelude_text, kernel);
    RtNvrtcResult res = {0};
    ck_assert_msg(rt_nvrtc_compile(src, "twins", RT_NVRTC_CUBIN, arch, &res) == RT_NVRTC_OK, "%s", res.log ? res.log : "");
    cudaLibrary_t lib;
    cudaKernel_t k;
    ck_assert_int_eq(cudaLibraryLoadData(&lib, res.image, NULL, NULL, 0, NULL, NULL, 0), cudaSuccess);
    ck_assert_int_eq(cudaLibraryGetKernel(&k, lib, "twins"), cudaSuccess);
    float *dx;
    unsigned short *dh, *db;
    ck_assert_int_eq(cudaMalloc((void **)&dx, (size_t)n * sizeof *dx), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&dh, (size_t)n * sizeof *dh), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&db, (size_t)n * sizeof *db), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(dx, x, (size_t)n * sizeof *x, cudaMemcpyHostToDevice), cudaSuccess);
    void *args[] = {&dx, &dh, &db, (void *)&n};
    const dim3 grid = {64, 1, 1}, block = {256, 1, 1};
    ck_assert_int_eq(cudaLaunchKernel((const void *)k, grid, block, args, 0, NULL), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(h, dh, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(b, db, (size_t)n * sizeof *b, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < n; i++) {
        if (isnan(x[i])) { /* quiet NaNs, payloads aside */
            ck_assert_msg((h[i] & 0x7e00) == 0x7e00 && (b[i] & 0x7fc0) == 0x7fc0, "NaN %a: %#x %#x", (double)x[i], h[i], b[i]);
            continue;
        }
        ck_assert_msg(h[i] == rnn_round_f16(x[i]), "fp16 of %a: the GPU's %#x, the CPU's %#x", (double)x[i], h[i], rnn_round_f16(x[i]));
        ck_assert_msg(b[i] == rnn_round_bf16(x[i]), "bf16 of %a: the GPU's %#x, the CPU's %#x", (double)x[i], b[i], rnn_round_bf16(x[i]));
    }
    cudaFree(dx);
    cudaFree(dh);
    cudaFree(db);
    cudaLibraryUnload(lib);
    rt_nvrtc_result_free(&res);
    free(src);
    free(x);
    free(h);
    free(b);
}
END_TEST

/* Zero initial states (io->h0 NULL) take 16 zero bits as their first slot's twin, set without a
 * kernel (rt_forward.c unit_begin): bit for bit the outputs of explicit zero states, which are
 * rounded, in inference and training, on both backends. */
START_TEST(zero_states_in_half_precisions) {
    const rnncc_backend backends[] = {RNNCC_BACKEND_PERSISTENT, RNNCC_BACKEND_CUBLAS};
    const int64_t T = 5, N = 3, ny = T * N * 16;
    float *want = malloc((size_t)ny * sizeof(float)), *got = malloc((size_t)ny * sizeof(float));
    for (int bi = 0; bi < 2; bi++) {
        rnncc_model *m = small_lstm_in(RNNCC_BF16, backends[bi]);
        fill_weights(m);
        TrainBufs b = train_bufs(m, T, N);
        float *zeros = NULL;
        ck_assert_int_eq(cudaMalloc((void **)&zeros, (size_t)N * 16 * sizeof(float)), cudaSuccess);
        ck_assert_int_eq(cudaMemset(zeros, 0, (size_t)N * 16 * sizeof(float)), cudaSuccess);
        float *ys[] = {b.y};
        const float *h0[] = {zeros, zeros};
        for (int training = 0; training < 2; training++) {
            for (int given = 0; given < 2; given++) {
                rnncc_io io = {T, N, b.x, ys, NULL, given ? h0 : NULL, NULL};
                /* NaNs in the buffers first, so that a twin left unset shows */
                ck_assert_int_eq(cudaMemset(training ? b.rs : b.iws, 0xff, training ? b.rsb : b.iwsb), cudaSuccess);
                ck_assert_msg(rnncc_forward(m, &io, training ? b.ws : b.iws, training ? b.wsb : b.iwsb,
                                            training ? b.rs : NULL, training ? b.rsb : 0, NULL) == RNNCC_OK,
                              "%s", rnncc_model_error(m));
                ck_assert_int_eq(cudaMemcpy(given ? got : want, b.y, (size_t)ny * sizeof(float), cudaMemcpyDeviceToHost),
                                 cudaSuccess);
            }
            for (int64_t i = 0; i < ny; i++)
                ck_assert_msg(got[i] == want[i] && want[i] == want[i], "backend %d, training %d, y %lld: %g, explicit zeros %g",
                              bi, training, (long long)i, want[i], got[i]);
        }
        cudaFree(zeros);
        train_bufs_free(&b);
        rnncc_model_destroy(m);
    }
    free(want), free(got);
}
END_TEST

/* The weight-gradient pass sums the biases' adjoints with a device vector of ones, which grows
 * for a larger T*N: the captured pass that read the old vector is dropped (a replay would read
 * freed memory, which on an H100 still held its ones, so only the dropped graph shows it), and
 * the same small pass after a larger one gives the same gradients. */
START_TEST(weights_pass_after_the_ones_grow) {
    /* _i 0: fp32; 1: fp16, whose folded biases' GEMM reads the ones' 16-bit twin, which grows with them */
    rnncc_model *m = _i ? small_lstm_in(RNNCC_FP16, RNNCC_BACKEND_AUTO) : small_lstm();
    int64_t count = fill_weights(m);
    TrainBufs b = train_bufs(m, 40, 50);
    float *first = malloc((size_t)count * sizeof(float)), *again = malloc((size_t)count * sizeof(float));
    train_pass(m, 2, 2, b.x, b.y, b.dy, b.ws, b.wsb, b.rs, b.rsb, b.dw); /* direct */
    train_pass(m, 2, 2, b.x, b.y, b.dy, b.ws, b.wsb, b.rs, b.rsb, b.dw); /* captured */
    ck_assert_int_eq(cudaMemcpy(first, b.dw, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_ptr_nonnull(m->graph[2].exec);
    train_pass(m, 40, 50, b.x, b.y, b.dy, b.ws, b.wsb, b.rs, b.rsb, b.dw); /* the ones grow to 2000 */
    ck_assert_ptr_null(m->graph[2].exec);
    train_pass(m, 2, 2, b.x, b.y, b.dy, b.ws, b.wsb, b.rs, b.rsb, b.dw);
    ck_assert_int_eq(cudaMemcpy(again, b.dw, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t i = 0; i < count; i++) ck_assert_msg(again[i] == first[i], "weight %lld: %g then %g", (long long)i, first[i], again[i]);
    train_bufs_free(&b);
    free(first); free(again);
    rnncc_model_destroy(m);
}
END_TEST

/* What the issue function of rt_run_falls_back_when_spoiled did: calls, and the value it set. */
typedef struct Issued {
    rnncc_model *m;
    int *dev;
    int calls, spoil_at;
} Issued;

/* Sets *dev to the call's number on the model's stream; at call spoil_at (a capture) it also
 * calls cudaDeviceSynchronize, which CUDA refuses during a capture and which invalidates it, as
 * another thread's synchronising call would. */
static rnncc_status issue_counted(void *ctx) {
    Issued *is = ctx;
    is->calls++;
    if (is->calls == is->spoil_at) cudaDeviceSynchronize();
    cudaError_t e = cudaMemsetAsync(is->dev, is->calls, 1, is->m->streams[0]);
    if (e != cudaSuccess) return rt_cuda_fail(is->m, e, "cudaMemsetAsync", __FILE__, __LINE__); /* as the runtime would */
    return RNNCC_OK;
}

/* Reserve bytes of training an LSTM (I = 8, H = 16) for T steps of N sequences. */
static size_t lstm_reserve(rnncc_precision precision, rnncc_backend backend, int64_t T, int64_t N) {
    rnncc_program *p = compile_ok("cells/lstm.cell");
    rnncc_model_desc desc = {NULL, lstm_dims, 2, 1, 0, precision, -1, backend};
    rnncc_model *m = NULL;
    ck_assert_msg(rnncc_model_create(p, &desc, &m) == RNNCC_OK, "%s", rnncc_model_error(m));
    size_t bytes = 0;
    ck_assert_msg(rnncc_reserve_size(m, T, N, &bytes) == RNNCC_OK, "%s", rnncc_model_error(m));
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    return bytes;
}

/* Where its step GEMM adds into the hoisted GEMM's columns (the cuBLAS per-step forward: in the
 * 16-bit modes, or past 64 sequences), an LSTM's training keeps no step results of its own: T*N*4H
 * floats less than where a persistent forward may run (the rule's at 8 sequences, or forced), or
 * than fp32 operands at 64 sequences or fewer. In the 16-bit modes, where no persistent backward may
 * run either, its gate adjoints are kept as 16-bit twins alone: T*N*4H floats less again. The
 * results equal the reference either way (configs). */
START_TEST(summed_and_twinned_keep_less) {
    const size_t step_results = (size_t)10 * 8 * 4 * 16 * sizeof(float);
    ck_assert_uint_eq(lstm_reserve(RNNCC_FP16, RNNCC_BACKEND_AUTO, 10, 8) -
                          lstm_reserve(RNNCC_FP16, RNNCC_BACKEND_CUBLAS, 10, 8), 2 * step_results);
    ck_assert_uint_eq(lstm_reserve(RNNCC_BF16, RNNCC_BACKEND_PERSISTENT, 10, 65) -
                          lstm_reserve(RNNCC_BF16, RNNCC_BACKEND_AUTO, 10, 65), 2 * step_results / 8 * 65);
    ck_assert_uint_eq(lstm_reserve(RNNCC_FP32, RNNCC_BACKEND_AUTO, 10, 8), lstm_reserve(RNNCC_FP32, RNNCC_BACKEND_CUBLAS, 10, 8));
    ck_assert_uint_eq(lstm_reserve(RNNCC_TF32, RNNCC_BACKEND_PERSISTENT, 10, 65) -
                          lstm_reserve(RNNCC_TF32, RNNCC_BACKEND_AUTO, 10, 65), step_results / 8 * 65);
}
END_TEST

/* A spoiled capture runs the work directly instead, and a later call with the same arguments
 * captures again: the graph state machine of rt_run (runtime/rt_forward.c). Spoiled on purpose
 * in the capturing thread: another thread's cudaDeviceSynchronize or cuBLAS handle destruction
 * spoils captures too, but crashed driver 580.159.04 when repeated during them. */
START_TEST(rt_run_falls_back_when_spoiled) {
    rnncc_model *m = small_lstm();
    Issued is = {.m = m, .spoil_at = 2};
    ck_assert_int_eq(cudaMalloc((void **)&is.dev, sizeof *is.dev), cudaSuccess);
    RtGraph g = {0};
    const char key[] = "arguments";
    int want_calls[] = {1, 3, 4, 4, 4}, got = 0;
    for (int call = 0; call < 5; call++) {
        /* 1: new arguments, direct; 2: capture spoiled (call 2), direct (3); 3: captured (4) and
         * replayed; 4, 5: replayed */
        ck_assert_msg(rt_run(m, &g, key, sizeof key, issue_counted, &is, NULL) == RNNCC_OK, "call %d: %s", call,
                      rnncc_model_error(m));
        ck_assert_str_eq(rnncc_model_error(m), ""); /* the spoiled calls' messages are not left behind */
        ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(&got, is.dev, 1, cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_int_eq(is.calls, want_calls[call]);
        ck_assert_int_eq(got & 0xff, want_calls[call]);
        ck_assert_int_eq(g.exec != NULL, call >= 2);
    }
    ck_assert_int_eq(m->spoiled_captures, 1);
    cudaGraphExecDestroy(g.exec);
    cudaFree(is.dev);
    rnncc_model_destroy(m);
}
END_TEST

/* A thread that makes and drops models (cuBLAS handles: rnncc_model_create and destroy) until told. */
typedef struct Churn {
    atomic_int stop;
    int made;
    char failed[300];
} Churn;

static void *churn_models(void *arg) {
    Churn *c = arg;
    rnncc_program *p = thread_gru(c->failed, sizeof c->failed);
    if (!p) return NULL;
    rnncc_model_desc desc = {NULL, thread_gru_dims, 2, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO};
    while (!atomic_load(&c->stop)) {
        rnncc_model *m = NULL;
        if (rnncc_model_create(p, &desc, &m) != RNNCC_OK) {
            snprintf(c->failed, sizeof c->failed, "%s", rnncc_model_error(m));
            rnncc_model_destroy(m);
            break;
        }
        rnncc_model_destroy(m);
        c->made++;
    }
    rnncc_program_destroy(p);
    return NULL;
}

/* Models made and destroyed on one thread while another model captures its passes (rt_verify
 * runs each pass with new buffers, so every call captures anew) on another: rnncc keeps its handle
 * changes and captures apart (docs/runtime.md, Threads), so no capture is spoiled. */
START_TEST(models_made_while_another_captures) {
    rnncc_model *m = small_lstm_on(_i ? RNNCC_BACKEND_CUBLAS : RNNCC_BACKEND_PERSISTENT);
    Churn c = {0};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, churn_models, &c), 0);
    rnncc_status s = RNNCC_OK;
    double worst = 0, grad_worst = 0;
    for (int i = 0; i < 12 && s == RNNCC_OK; i++) {
        RtVerify v = {.T = 9, .N = 3, .varlen = i & 1, .backward = 1, .repeat = 4, .seed = (uint64_t)i + 11};
        s = rt_verify(m, &v);
        if (s == RNNCC_OK) worst = fmax(worst, v.worst), grad_worst = fmax(grad_worst, v.grad_worst);
    }
    atomic_store(&c.stop, 1); /* before any assertion, so that the thread is always joined */
    pthread_join(t, NULL);
    ck_assert_msg(s == RNNCC_OK, "%s", rnncc_model_error(m));
    ck_assert_msg(worst <= 1e-5 && grad_worst <= 1e-4, "worst errors %g, gradients %g", worst, grad_worst);
    ck_assert_msg(!c.failed[0], "the other thread: %s", c.failed);
    ck_assert_int_gt(c.made, 0);
    ck_assert_int_eq(m->spoiled_captures, 0);
    rnncc_model_destroy(m);
}
END_TEST

/* The loop cases' range [*lo, *hi) of a table of n configurations: all of them, or the slice that
 * RNNCC_TEST_CONFIGS=FIRST-LAST names (indices, both included, clipped to the table), so that one
 * device call of a few minutes can run part of a table; exits 2 on a malformed value. */
static void config_range(int n, int *lo, int *hi) {
    const char *v = getenv("RNNCC_TEST_CONFIGS");
    *lo = 0, *hi = n;
    if (!v || !*v) return;
    int first, last, used = 0;
    if (sscanf(v, "%d-%d%n", &first, &last, &used) != 2 || v[used] || first < 0 || last < first) {
        fprintf(stderr, "check_runtime: RNNCC_TEST_CONFIGS: expected FIRST-LAST (0 <= FIRST <= LAST), got '%s'\n", v);
        exit(2);
    }
    *lo = first < n ? first : n;
    *hi = last + 1 < n ? last + 1 : n;
}

int main(void) {
    /* persistent kernels take the rule's tile unless a config (or the caller) asks for the search:
     * a search builds and times several tiles per kernel (the cases below check each kind) */
    setenv("RNNCC_PERSIST_SEARCH", "0", 0);
    Suite *s = suite_create("runtime");
    TCase *api = tcase_create("api");
    tcase_set_timeout(api, 60); /* host-only cases, but beside the other slices on a cold device machine (Check's 4 s ran out once) */
    tcase_add_test(api, status_strings);
    tcase_add_test(api, compile_errors_through_the_api);
    tcase_add_test(api, model_arguments_are_checked);
    tcase_add_test(api, no_gpu_is_a_clean_error);
    tcase_add_test(api, state_copies_take_their_own_blocks);
    tcase_add_test(api, split_chunks_fit_their_scratch);
    tcase_add_test(api, split_products_in_chunks_on_the_host);
    tcase_add_test(api, split_weights_take_floats_of_their_own);
    tcase_add_test(api, transposed_weights_where_they_pay);
    suite_add_tcase(s, api);
    if (gpu_present()) {
        /* CK_RUN_CASE=configs: the configuration table alone (a slice with RNNCC_TEST_CONFIGS) */
        TCase *table = tcase_create("configs");
        tcase_set_timeout(table, 300);
        int lo, hi;
        config_range((int)(sizeof configs / sizeof *configs), &lo, &hi);
        tcase_add_loop_test(table, every_cell_matches_the_reference, lo, hi);
        suite_add_tcase(s, table);
        TCase *gpu = tcase_create("gpu"); /* CK_RUN_CASE=gpu: the GPU tests but the table */
        tcase_set_timeout(gpu, 300);
        tcase_add_test(gpu, clusters_share_chunked_operands);
        tcase_add_test(gpu, tiles_train_in_tf32);
        tcase_add_test(gpu, flags_hand_off_any_state);
        tcase_add_test(gpu, backend_choice_is_stated);
        tcase_add_test(gpu, rule_fours_yield_to_pairs_holding_weights);
        tcase_add_test(gpu, tile_search_is_measured_and_cached);
        tcase_add_test(gpu, parameters_round_trip);
        tcase_add_test(gpu, bad_calls_leave_the_model_usable);
        tcase_add_test(gpu, training_calls_refuse_other_arguments);
        tcase_add_test(gpu, buffers_must_lie_apart);
        tcase_add_test(gpu, buffers_must_be_reachable);
        tcase_add_test(gpu, states_carried_in_place);
        tcase_add_test(gpu, zero_steps_returns_the_initial_state);
        tcase_add_loop_test(gpu, weights_pass_after_the_ones_grow, 0, 2);
        tcase_add_test(gpu, summed_and_twinned_keep_less);
        tcase_add_test(gpu, half_weights_kept_in_the_reserve);
        suite_add_tcase(s, gpu);
        TCase *half_table = tcase_create("half_configs"); /* CK_RUN_CASE=half_configs: the 16-bit table alone */
        tcase_set_timeout(half_table, 300);
        config_range((int)(sizeof half_configs / sizeof *half_configs), &lo, &hi);
        tcase_add_loop_test(half_table, half_precisions_match_the_reference, lo, hi);
        suite_add_tcase(s, half_table);
        TCase *x3 = tcase_create("split"); /* CK_RUN_CASE=split: RNNCC_TF32X3's table (a name device_checks.sh slices: letters) */
        tcase_set_timeout(x3, 300);
        tcase_add_loop_test(x3, split_tf32_matches_the_reference, 0, (int)(sizeof x3_configs / sizeof *x3_configs));
        tcase_add_test(x3, split_weights_stacked_and_alone);
        tcase_add_test(x3, split_state_written_before_its_gemm);
        suite_add_tcase(s, x3);
        TCase *post = tcase_create("post"); /* CK_RUN_CASE=post: the post program's cells */
        tcase_set_timeout(post, 600);
        tcase_add_loop_test(post, post_program_matches_the_reference, 0, TU_NPOST_CELLS);
        tcase_add_test(post, post_program_widths_per_layer);
        tcase_add_loop_test(post, fold_matches_the_reference, 0, FOLD_CONFIGS);
        tcase_add_loop_test(post, fold_edges_match_unfolded, 0, 2);
        tcase_add_test(post, fold_choice_is_stated);
        tcase_add_loop_test(post, fold_keeps_derived_weights, 0, sizeof keeps_derived / sizeof *keeps_derived);
        tcase_add_test(post, fold_rule_counts_kept_v);
        suite_add_tcase(s, post);
        TCase *half = tcase_create("half"); /* CK_RUN_CASE=half: the 16-bit GEMM inputs' other tests */
        tcase_set_timeout(half, 300);
        tcase_add_test(half, tiles_train_in_half_precisions);
        tcase_add_test(half, tile_search_in_half_precisions);
        tcase_add_test(half, half_weights_kept_by_the_model);
        tcase_add_test(half, weights16_written_by_the_caller);
        tcase_add_test(half, zero_states_in_half_precisions);
        tcase_add_test(half, twin_rounding_on_the_gpu_is_the_cpus);
        tcase_add_test(half, persistent_backward_stores_twins_alone);
        suite_add_tcase(s, half);
        TCase *random = tcase_create("random"); /* CK_RUN_CASE=random: cells no test was written for */
        tcase_set_timeout(random, 300);
        tcase_add_test(random, random_cells_match_the_reference);
        tcase_add_test(random, random_cells_in_half_precisions);
        TCase *wide = tcase_create("wide"); /* CK_RUN_CASE=wide: the wider family, P longer and shorter than H */
        tcase_set_timeout(wide, 300);
        tcase_add_test(wide, wide_random_cells_match_the_reference);
        suite_add_tcase(s, wide);
        suite_add_tcase(s, random);
        TCase *streams = tcase_create("streams"); /* CK_RUN_CASE=streams: what orders the model's writes and passes */
        tcase_set_timeout(streams, 120);
        tcase_add_loop_test(streams, runs_on_a_user_stream, 0, 2);
        tcase_add_test(streams, set_param_waits_for_passes_before_it);
        tcase_add_test(streams, model_writes_refused_while_captured);
        suite_add_tcase(s, streams);
        TCase *threads = tcase_create("threads"); /* CK_RUN_CASE=threads runs these alone */
        tcase_set_timeout(threads, 300);
        tcase_add_test(threads, models_on_two_threads);
        tcase_add_loop_test(threads, models_made_while_another_captures, 0, 2); /* persistent, cuBLAS */
        suite_add_tcase(s, threads);
        TCase *graphs = tcase_create("graphs"); /* CK_RUN_CASE=graphs: the capture state machine */
        tcase_set_tags(graphs, "spoils_captures"); /* deliberate CUDA API errors: device_checks.sh */
        tcase_set_timeout(graphs, 120);
        tcase_add_test(graphs, rt_run_falls_back_when_spoiled);
        suite_add_tcase(s, graphs);
    } else {
        printf("check_runtime: no GPU present: skipping the GPU cases (every cell forward and backward against the "
               "reference, parameters, error recovery, streams, threads)\n");
    }
    return tu_run_suite(s);
}
