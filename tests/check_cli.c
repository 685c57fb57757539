/* Tests for the rnncc driver (compiler/): exit statuses, which stream gets what, standard
 * input, dumps and the messages for missing files and bad usage.
 * Key idea: the real binary runs as a child process (found beside this test's directory,
 * $(B)/rnncc), with its streams redirected to temporary files, so nothing can deadlock. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ir/arena.h"
#include "../ir/strbuf.h"
#include "testutil.h"

static const char *rnncc_path;        /* set by main from argv[0] */
static const char *random_cells_path; /* tests/random_cells.c's program, beside this one */
static Arena arena;

static void setup(void) { arena_init(&arena); }
static void teardown(void) { arena_free(&arena); }

typedef struct Run {
    int status; /* exit status, or -1 if it did not exit normally */
    const char *out, *err;
} Run;

static char *slurp(FILE *f) {
    StrBuf sb = {0};
    char buf[4096];
    size_t n;
    rewind(f);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(&sb, buf, n);
    ck_assert(!sb.failed);
    char *s = arena_strdup(&arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

/* Runs program with the given arguments (NULL-terminated) and standard input text. */
static Run run_program(const char *program, const char *input, const char *const *args) {
    FILE *in = tmpfile(), *out = tmpfile(), *err = tmpfile();
    ck_assert(in && out && err);
    if (input) fputs(input, in);
    fflush(in);
    rewind(in);
    const char *argv[16] = {program};
    int argc = 1;
    for (; args[argc - 1]; argc++) {
        ck_assert_int_lt(argc, 15);
        argv[argc] = args[argc - 1];
    }
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fileno(in), 0);
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        execv(program, (char *const *)argv);
        _exit(127);
    }
    int ws;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    Run r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, slurp(out), slurp(err)};
    ck_assert_msg(r.status != 127, "cannot run %s", program);
    fclose(in), fclose(out), fclose(err);
    return r;
}

/* Runs rnncc with the given arguments (NULL-terminated) and standard input text. */
static Run run(const char *input, const char *const *args) { return run_program(rnncc_path, input, args); }

#define RUN(input, ...) run(input, (const char *const[]){__VA_ARGS__, NULL})

/* rnncc emit's fp16 persistent forward unit of the LSTM (I = 64) at h ("H=768") and n sequences, with tile
 * option opt given value (NULL: without it). */
static Run emit_fp16_forward(const char *h, const char *n, const char *opt, const char *value) {
    const char *const args[] = {"emit", "cells/lstm.cell", "--dim", "I=64", "--dim", h, "--persistent", n, "--precision",
                                "fp16", "--forward", value ? opt : NULL, value, NULL};
    return run(NULL, args);
}

/* A tile option of rnncc emit (opt, "--blocks"): each of the n bad values refused with the values it
 * takes (values, as in the message), and the option refused without --persistent N. */
static void tile_option_refused(const char *opt, const char *values, const char *const *bad, size_t n) {
    char want[160];
    for (size_t i = 0; i < n; i++) {
        Run r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", opt, bad[i]);
        ck_assert_int_eq(r.status, 2);
        snprintf(want, sizeof want, "rnncc emit: error: %s must be %s, not '%s'\n", opt, values, bad[i]);
        ck_assert_str_eq(r.err, want);
    }
    Run r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", opt, "4");
    ck_assert_int_eq(r.status, 2);
    snprintf(want, sizeof want, "rnncc emit: error: %s applies to --persistent N (the per-step unit has no tile)\n", opt);
    ck_assert_str_eq(r.err, want);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)", path);
    char *s = slurp(f);
    fclose(f);
    return s;
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* ---- tests ------------------------------------------------------------------------- */

START_TEST(help_and_version) {
    Run r = RUN(NULL, "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "usage: rnncc COMMAND"));
    ck_assert_ptr_nonnull(strstr(r.out, "check FILE..."));
    ck_assert_str_eq(r.err, "");
    r = RUN(NULL, "-h");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "usage: rnncc COMMAND"));
    r = RUN(NULL, "--version");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "rnncc " RNNCC_VERSION "\n");
    ck_assert_str_eq(r.err, "");
    r = RUN(NULL, "check", "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "usage: rnncc check"));
    r = RUN(NULL, "dump", "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "usage: rnncc dump"));
    r = RUN(NULL, "run", "--help"); /* says which failed checks a kink can explain (docs/training.md) */
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "usage: rnncc run"));
    ck_assert_ptr_nonnull(strstr(r.out, "(relu, abs, min, max, clamp, hardsigmoid)"));
}
END_TEST

START_TEST(bad_usage) {
    Run r = RUN(NULL, "frobnicate");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "rnncc: error: unknown command 'frobnicate' (try 'rnncc --help')\n");
    r = run(NULL, (const char *const[]){NULL});
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    ck_assert(starts_with(r.err, "usage: rnncc"));
    r = RUN(NULL, "check");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc check: error: no input files (argument FILE)\n");
    r = RUN(NULL, "dump", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert(starts_with(r.err, "rnncc dump: error: say what to dump (--ir"));
    r = RUN(NULL, "dump", "--ir");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc dump: error: expected exactly one input file (argument FILE)\n");
    r = RUN(NULL, "dump", "--ir", "--cell", "gru", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "rnncc dump: error: no cell named 'gru' in cells/lstm.cell (option --cell)\n");
    r = RUN(NULL, "check", "--no-such-option", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
}
END_TEST

START_TEST(check_files) {
    Run r = RUN(NULL, "check", "cells/lstm.cell", "cells/gru.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "");
    /* A bad file: status 1 and the diagnostic, exactly as in its golden file, on stderr. */
    r = RUN(NULL, "check", "tests/bad/unknown_name.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, read_file("tests/bad/unknown_name.err"));
    /* Every file is checked even after a bad one. */
    r = RUN(NULL, "check", "tests/bad/cycle.cell", "cells/lstm.cell", "tests/bad/wrong_arity.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, arena_printf(&arena, "%s%s", read_file("tests/bad/cycle.err"),
                                         read_file("tests/bad/wrong_arity.err")));
    /* check plans each cell as the other commands do: what cannot be planned is an error here too */
    r = RUN("cell t(x[I]) -> h {\n  state h[H]\n  param W[H, H], V[H, I], b[H]\n  h' = tanh(W @ b + V @ x)\n}\n", "check", "-");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(starts_with(r.err, "<stdin>:4:15: error: 'W @ b' multiplies two parameters"), "%s", r.err);
    /* and lays out a cell whose every size is a literal: sizes past the bound (2^60 weights) are an error there */
    r = RUN("cell t(x[1073741824]) -> h {\n  state h[1073741824]\n  param U[1073741824, 1073741824]\n"
            "  h' = tanh(U @ h) + x\n}\n", "check", "-");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "<stdin>: error: cell 't': a size overflows with these dimensions\n");
    r = RUN("cell t(x[8]) -> h {\n  state h[8]\n  param U[8, 8]\n  h' = tanh(U @ h) + x\n}\n", "check", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    /* Warnings alone do not fail. */
    r = RUN("cell t(x[I]) -> y { param p[I]\n y = x }\n", "check", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.err, "<stdin>:1:27: warning: parameter 'p' is never used\n"));
}
END_TEST

START_TEST(check_stdin) {
    Run r = RUN(read_file("cells/gru.cell"), "check", "-", "-");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc check: error: '-' (standard input) is given 2 times; it can be read once\n");
    r = RUN(read_file("cells/gru.cell"), "check", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    r = RUN("cell t(x[I]) -> y {\n  y = x + z\n}\n", "check", "-");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "<stdin>:2:11: error: unknown name 'z'\n"
                            "    2 |   y = x + z\n"
                            "      |           ^\n");
    r = RUN("", "check", "-");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "<stdin>: error: no cell definitions in input\n");
}
END_TEST

START_TEST(missing_file) {
    Run r = RUN(NULL, "check", "tests/no_such_file.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "rnncc: error: cannot open 'tests/no_such_file.cell': No such file or directory\n");
    r = RUN(NULL, "dump", "--ir", "tests/no_such_file.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "'tests/no_such_file.cell'"));
    /* A directory cannot be read as a file. */
    r = RUN(NULL, "check", "cells");
    ck_assert_int_eq(r.status, 1);
    ck_assert(starts_with(r.err, "rnncc: error: cannot read 'cells': "));
}
END_TEST

/* rnncc run reads standard input as the other commands do (it named '-' a missing file before); a cell's errors
 * from it are located in <stdin>. Without a GPU the run stops at the device. */
START_TEST(run_reads_stdin) {
    Run r = RUN("cell t(x[I]) -> y {\n  y = x + z\n}\n", "run", "--dim", "I=4", "-");
    ck_assert_int_eq(r.status, 1);
    ck_assert(starts_with(r.err, "<stdin>:2:11: error: unknown name 'z'\n"));
    r = RUN(read_file("cells/lstm.cell"), "run", "--dim", "I=4", "--dim", "H=4", "--batch", "2", "--seq", "2", "-");
    ck_assert_msg((r.status == 0 && starts_with(r.out, "<stdin>: T=2 N=2")) ||
                      (r.status == 1 && strstr(r.err, "no CUDA device") && !strstr(r.err, "cannot")),
                  "status %d\n%s%s", r.status, r.out, r.err);
}
END_TEST

/* rnncc devices: --help, an argument refused as bad usage, "no CUDA device" an error on stderr. */
START_TEST(devices_arguments) {
    Run r = RUN(NULL, "devices", "--help");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "usage: rnncc devices\n"));
    ck_assert_str_eq(r.err, "");
    r = RUN(NULL, "devices", "--bogus");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "rnncc devices: error: unexpected argument '--bogus' (rnncc devices takes none)\n");
    r = RUN(NULL, "devices");
    ck_assert_msg((r.status == 0 && starts_with(r.out, "0: ")) ||
                      (r.status == 1 && strcmp(r.out, "") == 0 && starts_with(r.err, "rnncc devices: error: no CUDA device (")),
                  "status %d\n%s%s", r.status, r.out, r.err);
    /* run where devices found none: the error says so once, then CUDA's why */
    if (r.status == 1) {
        r = RUN(NULL, "run", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=8");
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(starts_with(r.err, "rnncc run: error: no CUDA device: ") && !strstr(r.err, "available"), "%s", r.err);
    }
}
END_TEST

/* A source past 64 MiB (RNNCC_MAX_SOURCE_BYTES, the library's limit too) is refused by name, by every command. */
START_TEST(source_size_limit) {
    char big[] = "/tmp/rnncc-big-XXXXXX";
    int fd = mkstemp(big);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)(64 << 20) + 1), 0);
    close(fd);
    const char *want = arena_printf(&arena, "rnncc: error: '%s' is longer than 67108864 bytes (64 MiB), the most a cell "
                                            "source may be\n", big);
    Run r = RUN(NULL, "check", big);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, want);
    r = RUN(NULL, "run", "--dim", "I=4", big);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, want);
    unlink(big);
}
END_TEST

/* An option given twice is refused, not "the last wins"; so are --forward with --backward, --arch without a
 * compile, an architecture NVRTC does not compile for, counts with a sign or blanks, and -o naming the input
 * (through a link too), which emit and dump would have overwritten before reading. */
START_TEST(options_once_and_apart) {
    static const struct { const char *args[12], *err; } cases[] = {
        {{"emit", "--persistent", "4", "--persistent", "8", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell"},
         "rnncc emit: error: --persistent is given twice\n"},
        {{"emit", "-o", "/tmp/a", "--output", "/tmp/b", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell"},
         "rnncc emit: error: -o/--output is given twice\n"},
        {{"emit", "--forward", "--backward", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell"},
         "rnncc emit: error: --forward and --backward exclude each other\n"},
        {{"emit", "--arch", "sm_90", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell"},
         "rnncc emit: error: --arch applies to --ptx or --cubin (the CUDA text is the same for every architecture)\n"},
        {{"dump", "--ir", "--cell", "lstm", "--cell", "gru", "cells/lstm.cell"}, "rnncc dump: error: --cell is given twice\n"},
        {{"run", "--seq", "2", "--seq", "3", "--dim", "I=4", "cells/lstm.cell"}, "rnncc run: error: --seq is given twice\n"},
        {{"run", "--batch", "+4", "--dim", "I=4", "cells/lstm.cell"},
         "rnncc run: error: --batch must be an integer in 1..2147483647, not '+4'\n"},
        {{"emit", "--persistent", " 4", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell"},
         "rnncc emit: error: --persistent takes a batch size N in 1..2147483647, not ' 4'\n"},
        {{"emit", "--dim", "cells/lstm.cell"}, "rnncc emit: error: --dim takes NAME=VALUE, not 'cells/lstm.cell'\n"},
        /* the model's arguments that come from options are named as the options */
        {{"run", "--dim", "I=4", "cells/lstm.cell"},
         "rnncc run: error: dimension H of cell 'lstm' is not bound (use H=VALUE) (option --dim)\n"},
        {{"run", "--dim", "I=4", "--dim", "H=4", "--cell", "gru", "cells/lstm.cell"},
         "rnncc run: error: no cell named 'gru' in cells/lstm.cell (option --cell)\n"},
        /* getopt's own complaints in the house's words: an unknown option, a value missing */
        {{"check", "--bogus", "cells/lstm.cell"}, "rnncc check: error: unknown option '--bogus' (rnncc check --help lists them)\n"},
        {{"emit", "-x", "cells/lstm.cell"}, "rnncc emit: error: unknown option '-x' (rnncc emit --help lists them)\n"},
        {{"emit", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell", "-o"}, "rnncc emit: error: option '-o' needs a value\n"},
        {{"run", "cells/lstm.cell", "--batch"}, "rnncc run: error: option '--batch' needs a value\n"},
        {{"dump", "--schedule", "cells/lstm.cell", "--dim"}, "rnncc dump: error: option '--dim' needs a value\n"},
        {{"check", "--json", "--json", "cells/lstm.cell"}, "rnncc check: error: --json is given twice\n"},
        {{"check", "--json=yes", "cells/lstm.cell"}, "rnncc check: error: option '--json' takes no value\n"},
        {{"run", "--b", "3", "cells/lstm.cell"}, "rnncc run: error: option '--b' is ambiguous (rnncc run --help lists them)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Run r = run(NULL, cases[i].args);
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.out, "");
        ck_assert_str_eq(r.err, cases[i].err);
    }
    Run r = RUN(NULL, "emit", "--ptx", "--arch", "sm_10", "--dim", "I=4", "--dim", "H=4", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(starts_with(r.err, "rnncc emit: error: --arch sm_10: this NVRTC compiles for sm_") && strstr(r.err, " sm_90 "),
                  "%s", r.err);
    r = RUN(NULL, "emit", "--dim", "I= 4", "--dim", "H=4", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "dimension I must be a positive integer below 2^31, not ' 4'"));
    /* -o naming the input, as given or through a link: refused, the input intact */
    char dir[] = "/tmp/rnncc-check-cli-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *in = arena_printf(&arena, "%s/in.cell", dir), *link = arena_printf(&arena, "%s/link.cell", dir);
    char *lstm = read_file("cells/lstm.cell");
    FILE *f = fopen(in, "w");
    ck_assert_ptr_nonnull(f);
    fputs(lstm, f);
    fclose(f);
    ck_assert_int_eq(symlink(in, link), 0);
    r = RUN(NULL, "emit", "--dim", "I=4", "--dim", "H=4", "-o", link, in);
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, arena_printf(&arena, "rnncc emit: error: -o '%s' is the input file '%s'\n", link, in));
    r = RUN(NULL, "dump", "--ir", "-o", in, in);
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(read_file(in), lstm);
    remove(link);
    remove(in);
    rmdir(dir);
}
END_TEST

/* Whether text is valid JSON (python3's parser: the suite's other tools need python3 too). */
static int valid_json(const char *text) {
    char path[] = "/tmp/rnncc-check-cli-XXXXXX", cmd[200]; /* a name of its own: two suites may run at once */
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 -c 'import json; json.load(open(\"%s\", encoding=\"utf-8\"))' 2>/dev/null", path);
    int rc = system(cmd);
    remove(path);
    return rc == 0;
}

/* check --json: one JSON object on stdout (tests/golden/check.json: a good file's cells, a bad one's diagnostics,
 * a missing one's read error), nothing on stderr, the exit status as without it; a path with quotes, a
 * backslash, a control byte and a byte that is not UTF-8 still gives valid JSON. */
START_TEST(check_json) {
    Run r = RUN(NULL, "check", "--json", "cells/lstm.cell", "tests/bad/several_errors.cell", "tests/no_such_file.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "");
    ck_assert_str_eq(r.out, read_file("tests/golden/check.json"));
    ck_assert(valid_json(r.out));
    r = RUN(read_file("cells/gru.cell"), "check", "--json", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert(starts_with(r.out, "{\"files\": [\n  {\"path\": \"<stdin>\", \"ok\": true,"));
    ck_assert(valid_json(r.out));
    /* run --json: one object on stdout, nothing on stderr, failures in its "error" (a cell's errors in its
     * "diagnostics"), the exit status as without it; where a GPU runs it, the measurements and checks */
    r = RUN("cell t(x[I]) -> h {\n  state h[H]\n  h' = q\n}\n", "run", "--json", "--dim", "I=4", "--dim", "H=4", "-");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(strstr(r.out, "\"diagnostics\": \"<stdin>:3:8: error: unknown name 'q'\\n") &&
                      strstr(r.out, "\"error\": \"the cell source has errors\",\n \"ok\": false}\n"), "%s", r.out);
    ck_assert(valid_json(r.out));
    r = RUN(NULL, "run", "--json", "--dim", "I=4", "tests/no_such_file.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(strstr(r.out, "\"error\": \"cannot open 'tests/no_such_file.cell': No such file or directory\""));
    ck_assert(valid_json(r.out));
    r = RUN(NULL, "run", "--json", "--train", "--dim", "I=4", "--dim", "H=4", "--batch", "2", "--seq", "3", "cells/lstm.cell");
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(valid_json(r.out), "%s", r.out);
    ck_assert_msg((r.status == 0 && strstr(r.out, "\"gradients\": {\"dx\": ") && strstr(r.out, "\"ok\": true}\n")) ||
                      (r.status == 1 && strstr(r.out, "\"error\": \"no CUDA device")),
                  "status %d\n%s", r.status, r.out);
    char dir[] = "/tmp/rnncc-check-cli-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *odd = arena_printf(&arena, "%s/rnncc \"q\\\x01\xff\xf5\x80\x80.cell", dir); /* F5: never a UTF-8 lead */
    FILE *f = fopen(odd, "w");
    ck_assert_ptr_nonnull(f);
    fputs("cell t(x[I]) -> h { h' = \"x }\n", f);
    fclose(f);
    r = RUN(NULL, "check", "--json", odd);
    remove(odd);
    rmdir(dir);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(strstr(r.out, arena_printf(&arena, "\"path\": \"%s/rnncc \\\"q\\\\\\u0001\\ufffd\\ufffd\\ufffd\\ufffd.cell\"", dir)),
                  "%s", r.out);
    ck_assert_msg(valid_json(r.out), "%s", r.out);
}
END_TEST

START_TEST(dump_ir_and_dot) {
    Run r = RUN(NULL, "dump", "--ir", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_str_eq(r.out, read_file("tests/golden/lstm.ir"));
    r = RUN(read_file("cells/lstm.cell"), "dump", "--ir", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, read_file("tests/golden/lstm.ir"));
    r = RUN(NULL, "dump", "--dot", "cells/gru.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "digraph \"gru\" {\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "label=\"output h\""));
    size_t n = strlen(r.out);
    ck_assert(n > 2 && strcmp(r.out + n - 2, "}\n") == 0);
    /* Several cells: all, blank-line separated, or one chosen with --cell. */
    static const char two[] = "cell a(x[I]) -> y { y = x }\ncell b(x[I]) -> y { y = -x }\n";
    r = RUN(two, "dump", "--ir", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "cell a\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "\n\ncell b\n"));
    r = RUN(two, "dump", "--ir", "--cell", "b", "-");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "cell b\n"));
    ck_assert_ptr_null(strstr(r.out, "cell a"));
    /* --fold: LSTMP's plan after the projection fold; a cell that does not fold says why and dumps nothing. */
    r = RUN(NULL, "dump", "--fold", "--schedule", "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, read_file("tests/golden/lstmp.fold"));
    r = RUN(NULL, "dump", "--fold", "--ir", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "rnncc dump: error: cell 'lstm' does not fold (option --fold): no state's next value is a matrix "
                            "product\n");
    /* With a batch, the fold's rule at those sizes and precision: which schedule the runtime runs. */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=1024", "--dim", "H=1024", "--dim", "P=512", "--batch", "4", "--precision",
            "tf32", "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "\n  fold (tf32): the runtime runs the cell folded (the rule: tf32 products); the "
                                        "schedule above is the cell as written, --fold dumps the one that runs\n"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=1024", "--dim", "H=1024", "--dim", "P=512", "--batch", "4", "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "\n  fold (fp32): the runtime runs the cell as written (the rule: fp32 products, V = "
                                        "U P 4.29 GFLOP in FFMA every pass, over 3): V costs more than the step's phase it saves "
                                        "(bench/NOTES.md section 83); a model that keeps V (keep_derived_weights) folds; rnncc "
                                        "run --fold on forces it (--fold dumps that schedule)\n"));
    /* for a model that keeps V (rnncc_model_desc.keep_derived_weights): formed once, so folded at any size */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=1024", "--dim", "H=1024", "--dim", "P=512", "--batch", "4",
            "--keep-derived-weights", "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "\n  fold (fp32): the runtime runs the cell folded (the rule: fp32 products, V = U P "
                                        "4.29 GFLOP in FFMA once, kept while the weights stay fixed); the schedule above is "
                                        "the cell as written, --fold dumps the one that runs\n"));
    r = RUN(NULL, "dump", "--fold", "--schedule", "--dim", "I=800", "--dim", "H=800", "--dim", "P=400", "--batch", "20",
            "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "\n  fold (fp32): the runtime runs the cell folded (the rule: fp32 products, V = U P "
                                        "2.05 GFLOP in FFMA every pass, at most 3)\n"));
    r = RUN(NULL, "dump", "--fold", "--schedule", "--dim", "I=8", "--dim", "H=8", "--dim", "P=4", "--batch", "2", "--precision",
            "tf32x3", "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "; the schedule above runs where the fold is forced (rnncc run --fold on)\n"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=8", "--batch", "2", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.out, "fold")); /* a cell the fold does not take: nothing said */
    /* A bad file dumps nothing. */
    r = RUN(NULL, "dump", "--ir", "tests/bad/cycle.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, read_file("tests/bad/cycle.err"));
}
END_TEST

START_TEST(dump_to_file) {
    char path[] = "/tmp/rnncc_cli_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    Run r = RUN(NULL, "dump", "--ir", "-o", path, "cells/gru.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(read_file(path), read_file("tests/golden/gru.ir"));
    unlink(path);
    r = RUN(NULL, "dump", "--ir", "-o", "/nonexistent-dir/x.ir", "cells/gru.cell");
    ck_assert_int_eq(r.status, 1);
    ck_assert(starts_with(r.err, "rnncc: error: cannot write '/nonexistent-dir/x.ir': "));
}
END_TEST

/* Argument errors of run, emit and dump --schedule name the option (exit 2); no GPU is needed
 * to reach them. Without a GPU, run reports that and exits 1. */
START_TEST(run_emit_schedule_arguments) {
    Run r = RUN(NULL, "run", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--precision", "fp8");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc run: error: --precision must be fp32, tf32, fp16, bf16 or tf32x3, not 'fp8'\n");
    r = RUN(NULL, "run", "cells/lstm.cell", "--batch", "0");
    ck_assert_int_eq(r.status, 2);
    ck_assert(starts_with(r.err, "rnncc run: error: --batch must be an integer in 1.."));
    r = RUN(NULL, "run", "--seq", "5");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc run: error: expected exactly one input file (argument FILE)\n");
    /* compiled, a part is the program the runtime compiles: its own kernels only */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--backward", "--ptx");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, ".entry rnncc_lstm_bs1("));
    ck_assert_ptr_null(strstr(r.out, ".entry rnncc_lstm_s1("));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--forward", "--ptx");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, ".entry rnncc_lstm_s1("));
    ck_assert_ptr_null(strstr(r.out, ".entry rnncc_lstm_bs1("));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--ptx");
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, ".entry rnncc_lstm_s1(") && strstr(r.out, ".entry rnncc_lstm_bs1("));
    /* --fold: the unit of LSTMP as the runtime runs it folded, its first line saying so, the user's parameters at
     * the offsets they have unfolded, its post program's backward a thread a (t, n, j); it compiles; a cell that does
     * not fold says why and prints nothing */
    r = RUN(NULL, "emit", "cells/lstmp.cell", "--dim", "I=4", "--dim", "H=8", "--dim", "P=4", "--fold");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "// folded: state h becomes h_fold, the operand of its next value P_h @ h_fold'; derived "
                                 "U_i_P_h = U_i P_h,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\n// Generated by rnncc from cell lstmp"));
    ck_assert_ptr_nonnull(strstr(r.out, "before GEMM G2^T; one thread per (t, n, j), j < 4 (J = P).\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "a.params[256 + j];  // param b_i [H]"));
    Run u = RUN(NULL, "emit", "cells/lstmp.cell", "--dim", "I=4", "--dim", "H=8", "--dim", "P=4");
    ck_assert_int_eq(u.status, 0);
    ck_assert_ptr_nonnull(strstr(u.out, "a.params[256 + j];  // param b_i [H]")); /* the same offset as written */
    ck_assert_ptr_null(strstr(u.out, "folded"));
    r = RUN(NULL, "emit", "cells/lstmp.cell", "--dim", "I=4", "--dim", "H=8", "--dim", "P=4", "--fold", "--backward", "--ptx");
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, ".entry rnncc_lstmp_bs1(") && strstr(r.out, ".entry rnncc_lstmp_bp1("));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--fold");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "rnncc emit: error: cell 'lstm' does not fold (option --fold): no state's next value is a matrix "
                            "product\n");
    r = RUN(NULL, "emit", "cells/gru.cell", "--dim", "I=4", "--dim", "H=8", "--backward");
    ck_assert_int_eq(r.status, 0);
    ck_assert(starts_with(r.out, "// ==== the backward kernels"));
    ck_assert_ptr_nonnull(strstr(r.out, "rnncc_gru_bs1"));
    ck_assert_ptr_null(strstr(r.out, "void __launch_bounds__(256) rnncc_gru_s1("));
    /* with every dimension bound, the schedule says which adjoints training keeps as one */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=4", "--dim", "H=8", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "  training: B1's adjoint is B0's in the forward direction (their products add up alone)\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "  training: B1's step GEMM adds into B0's columns in the forward direction where the forward "
                                        "runs per step (beta = 1)\n"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=4", "--dim", "H=8", "cells/gru.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.out, "adjoint is")); /* U_n h is multiplied by r before the sum */
    ck_assert_ptr_null(strstr(r.out, "adds into"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=4", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2); /* a --dim missing or naming no dimension: bad usage, as in emit */
    ck_assert_ptr_nonnull(strstr(r.err, "dimension H of cell 'lstm' is not bound (use H=VALUE)"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=16", "--dim", "P=8", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "cell 'lstm' has no dimension 'P'"));
    /* a dimension bound twice: to one value, as once; to two, an error; a name past 79 characters, an error */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=4", "--dim", "H=8", "--dim", "H=8", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=4", "--dim", "H=8", "--dim", "H=16", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "error: dimension H is bound twice, to 8 and to 16"), "%s", r.err);
    char long_dim[120];
    memset(long_dim, 'H', 100), strcpy(long_dim + 100, "=4");
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=4", "--dim", long_dim, "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "...': the name is longer than 79 characters"), "%s", r.err);
    r = RUN(NULL, "dump", "--ir", "--dim", "H=4", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc dump: error: --dim applies to --schedule only\n");
    /* a cell whose sizes are all numbers, given a --dim: the note says it takes none */
    r = RUN("cell c(x[8]) -> h { state h[8]\n param U[8, 8]\n h' = tanh(U @ h) + x }\n", "emit", "--dim", "I=8", "-");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "<stdin>: error: cell 'c' has no dimension 'I'\n"
                            "rnncc emit: note: cell 'c' takes no --dim (every size of it is a number)\n");
    /* two cells of other dimensions, one --dim for both: dump says --cell picks one */
    r = RUN("cell a(x[I]) -> h { state h[H]\n param W[H, I]\n h' = tanh(W @ x) }\n"
            "cell b(x[I]) -> h { state h[S]\n param W[S, I]\n h' = sigmoid(W @ x) }\n",
            "dump", "--schedule", "--dim", "I=8", "--dim", "S=4", "-");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "<stdin>: error: cell 'a' has no dimension 'S'\n"
                            "rnncc dump: note: <stdin> defines 2 cells, each bound by the same --dim; --cell NAME dumps one\n");
    /* a file of two cells: run asks for --cell, as emit does (not the C API's desc->cell) */
    r = RUN("cell a(x[I]) -> h { state h[H]\n param W[H, I]\n h' = tanh(W @ x) }\n"
            "cell b(x[I]) -> h { state h[H]\n param W[H, I]\n h' = sigmoid(W @ x) }\n",
            "run", "-", "--dim", "I=8", "--dim", "H=8");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc run: error: <stdin> defines 2 cells; choose one with --cell NAME\n");
    r = RUN(NULL, "run", "cells/lstm.cell", "--backend", "magic");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc run: error: --backend must be auto, cublas or persistent, not 'magic'\n");
    r = RUN(NULL, "run", "cells/lstmp.cell", "--fold", "yes");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc run: error: --fold must be auto, on or off, not 'yes'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "0");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --persistent takes a batch size N in 1..2147483647, not '0'\n");
    /* --backward picks the persistent backward unit; --forward the forward one (the default) */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--backward");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "void __launch_bounds__(256, 1) rnncc_lstm_pb("));
    ck_assert_ptr_nonnull(strstr(r.out, "[U_i; U_f; U_g; U_o]^T @ d(G1) -> d(h)"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--forward");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "void __launch_bounds__(256, 1) rnncc_lstm_p("));
    ck_assert_ptr_null(strstr(r.out, "rnncc_lstm_pb"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=4096", "--persistent", "4");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "rnncc emit: error: cell 'lstm' has no persistent kernel on an H100: step weights 268.4 MB "
                            "need 2050 KB of shared memory per block on 132 blocks; a block has 227 KB\n");
    /* an element-wise recurrence: no step weights, no products, and why clusters have nothing to share */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=64", "--dim", "H=64", "--batch", "8", "cells/indrnn.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.out, "  forward backend (batch 8, fp32, on an H100): persistent: no step weights (an element-wise "
                                "recurrence): 64 blocks of 8 warps, 0 KB of shared memory each; clusters of 2 refused: no step "
                                "product stages an operand for a cluster to share"), "%s", r.out);
    /* past what any block's layout is sized for, the weights' share a block (43.2 GB over 132 blocks), not a figure
     * of the unsized layout (it said 13664748 KB here) */
    r = RUN(NULL, "emit", "cells/gru.cell", "--dim", "I=16", "--dim", "H=60000", "--persistent", "8");
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "rnncc emit: error: cell 'gru' has no persistent kernel on an H100: step weights 43200.0 MB "
                            "need 319602 KB of shared memory per block on 132 blocks; a block has 227 KB\n");
    r = RUN(NULL, "dump", "--schedule", "--batch", "4", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc dump: error: --batch applies to --schedule with every dimension bound (--dim)\n");
    /* the schedule says which backend runs and why */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "4", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 4, fp32, on an H100): persistent: step weights 16.8 MB "
                                        "fit on chip: 132 blocks of 8 warps in clusters of 2, 150 KB of shared memory each, fp32 FFMA "
                                        "products, weights held in registers\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "  backward backend (batch 4, fp32, on an H100): persistent: step weights 16.8 MB "
                                        "fit on chip: 132 blocks of 8 warps in clusters of 2, "));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "128", "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "backend (batch 128, fp32, on an H100): cuBLAS per step: batch 128 > 64 (fp32)"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=2048", "--batch", "4", "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "cuBLAS per step: step weights 67.1 MB need 513 KB of shared memory per block"));
    /* --precision tf32: the persistent products run on tensor cores */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "4", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 4, tf32, on an H100): persistent: step weights 16.8 MB "
                                        "fit on chip: 132 blocks of 8 warps, "));
    ck_assert_ptr_nonnull(strstr(r.out, "tf32 tensor-core products\n"));
    /* a forward's tensor-core products run in clusters of 4 at 9-24 sequences only (cg_persist_cluster),
     * on the 120 blocks whose fours an H100 holds at once; in pairs where those fours would not hold
     * the step weights in registers and pairs would (H = 1024), as the runtime does */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=768", "--batch", "16", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 16, tf32, on an H100): persistent: step weights 9.4 MB "
                                        "fit on chip: 120 blocks of 8 warps in clusters of 4, "));
    ck_assert_ptr_null(strstr(r.out, "in pairs: "));
    /* a backward's at 9-16 sequences in fours splitting K (section 58), on those 120 blocks too */
    ck_assert_ptr_nonnull(strstr(r.out, "  backward backend (batch 16, tf32, on an H100): persistent: step weights 9.4 MB "
                                        "fit on chip: 120 blocks of 8 warps in clusters of 4 splitting K, "));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "16", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 16, tf32, on an H100): persistent: step weights 16.8 MB "
                                        "fit on chip: 132 blocks of 8 warps in clusters of 2, "));
    ck_assert_ptr_nonnull(strstr(r.out, ", weights held in registers; in pairs: its clusters of 4 would read the step "
                                        "weights from shared memory\n"));
    /* in fp16 and bf16 the runtime's rule without a search loads operands straight into registers where the plan
     * allows it (cg_persist_direct_rule): a forward unclustered on the fewest blocks that keep a block's work, a
     * backward in its clusters splitting K but where it stages one pass of sequences in waves (here, and at 32) */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "16", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 16, fp16, on an H100): persistent: step weights 8.4 MB "
                                        "fit on chip: 128 blocks of 8 warps, 119 KB of shared memory each, fp16 tensor-core "
                                        "products, weights held in registers, operands loaded straight into registers\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "  backward backend (batch 16, fp16, on an H100): persistent: step weights 8.4 MB "
                                        "fit on chip: 120 blocks of 8 warps in clusters of 4 splitting K, "));
    ck_assert_ptr_nonnull(strstr(r.out, "fp16 tensor-core products, weights held in registers, operands staged whole in 4 "
                                        "waves\n"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "48", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 48, tf32, on an H100): cuBLAS per step: batch 48 > 32 (tf32) in "
                                        "passes of 16 sequences (not 32), where per-step tensor-core GEMMs win"));
    /* where a pass takes 32 sequences, the persistent tf32 forward runs up to 64 (not beyond) */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=512", "--batch", "64", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 64, tf32, on an H100): persistent: step weights 4.2 MB "));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=512", "--batch", "65", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 65, tf32, on an H100): cuBLAS per step: batch 65 > 64 (tf32)"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--precision", "tf32");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_mma<1, 2, 1, 0, 20, 1>(w1, ")); /* its weights in registers */
    ck_assert_ptr_nonnull(strstr(r.out, "args.buf_step[1] == 0 ? RNN_KEPT_ONLY : RNN_TO_OUT, nullptr, &rnn_wf1);"));
    ck_assert_ptr_nonnull(strstr(r.out, "tf32 tensor-core products);"));
    /* the schedule says where each direction holds its weights in registers: at 16 sequences in fp16 both
     * (the backward's transposed weights, split K); at 32 in tf32 the forward alone (the backward's 128
     * registers are past its budget) */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=768", "--batch", "16", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "fp16 tensor-core products, weights held in registers, operands loaded straight into "
                                        "registers\n  backward backend "));
    ck_assert_ptr_nonnull(strstr(r.out, "in clusters of 4 splitting K, 97 KB of shared memory each, fp16 tensor-core products, "
                                        "weights held in registers, operands loaded straight into registers\n"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "32", "--precision", "tf32",
            "cells/lstm.cell");
    const char *held = strstr(r.out, "weights held in registers"), *back = strstr(r.out, "  backward backend ");
    ck_assert(held && back && held < back && !strstr(back, "weights held in registers"));
    /* in fp16 the schedule plans as the runtime asks (16-bit twins staged): at deepbench's 32 sequences both
     * directions hold their weights in registers and stage their own operand in waves (the forward without
     * clusters, the backward's pairs splitting K), both on the fewest blocks that keep a block's work (128 of the
     * 132: bench/NOTES.md section 119); at 4 a pass none */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "32", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 32, fp16, on an H100): persistent: step weights 8.4 MB fit "
                                        "on chip: 128 blocks of 8 warps, 176 KB of shared memory each, fp16 tensor-core "
                                        "products, weights held in registers, operands staged whole in 4 waves\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "in clusters of 2 splitting K, 219 KB of shared memory each, fp16 tensor-core "
                                        "products, weights held in registers, operands staged whole in 4 waves\n"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "4", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.out, "waves"));
    /* the 16-bit precisions round every GEMM's inputs; their persistent kernels hold 16-bit weights
     * (read from the runtime's rounded copy) and run 16-bit products, and their units write the
     * 16-bit twins of h (forward) and of the GEMM results' adjoints (backward) */
    Run t = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--precision", "tf32");
    ck_assert_ptr_null(strstr(t.out, "a.state16[0] = args.state16[0]")); /* tf32: no twin code */
    ck_assert_ptr_null(strstr(t.out, "rnn_put16(&a.state16"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--precision", "bf16");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_mma<1, 2, 3, 1, 20, 1>(w1, 288, rows1, 1, 8, 256, 1, rnn_x16_0, RNN_DIM_H, "));
    ck_assert_ptr_nonnull(strstr(r.out, "bf16 tensor-core products);"));
    ck_assert_ptr_nonnull(strstr(r.out, "unsigned short *const w1 = (unsigned short *)(rnn_smem + 0);"));
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_cp16(&w1[r * 288 + k], args.params16 + "));
    ck_assert_ptr_nonnull(strstr(r.out, "if (args.state16[0]) a.state16[0] = args.state16[0] + sn * args.N * RNN_DIM_H;"));
    ck_assert_ptr_nonnull(strstr(r.out, "if (a.state16[0]) rnn_put16(&a.state16[0][n * RNN_DIM_H + j], v39_h_next, 1);"));
    ck_assert_ptr_null(strstr(r.out, "a.state16[1]")); /* c is not multiplied */
    /* the twins' precision is the unit's, a literal (one conversion a twin), held by the prologue */
    ck_assert_ptr_nonnull(strstr(r.out, "if (args.bf16 != 1) __trap();"));
    ck_assert_ptr_null(strstr(r.out, "a.bf16"));
    t = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--precision", "tf32",
            "--backward");
    ck_assert_ptr_null(strstr(t.out, "rnn_put16(a.dbuf16"));
    ck_assert_ptr_nonnull(strstr(t.out, "rnn_mv_mma<1, 2, 1, 0, 20, 1>(w1, 144, rows1, 1, 32, 128, 1, a.dbuf[1], 32, ")); /* fp32 d(G1) */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--precision", "fp16",
            "--backward");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "if (args.dbuf16[1]) a.dbuf16[1] = args.dbuf16[1] + t * args.buf_step[1];"));
    ck_assert_ptr_nonnull(strstr(r.out, "if (a.dbuf16[0]) rnn_put16(a.dbuf16[0] + (&a.dbuf[0][col * 32 + j] - a.dbuf[0]), d15, 0);"));
    ck_assert_ptr_nonnull(strstr(r.out, "if (args.bf16 != 0) __trap();"));
    ck_assert_ptr_null(strstr(r.out, "a.bf16"));
    /* d(G1) ([N][4H], 4H = 32) staged from its twin, which the group above writes */
    ck_assert_ptr_nonnull(strstr(r.out, "if (!args.dbuf16[1]) __trap();"));
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_mma<1, 2, 2, 1, 20, 1>(w1, 288, rows1, 1, 32, 256, 1, a.dbuf16[1], 32, "));
    /* W's columns (H = 8: one 16-byte piece a row) by 16-byte loads of rows, transposed as stored */
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_load_transposed<0>(w1, 288, 8, args.params16 + 128, 8, 32, lo1, rows1);"));
    ck_assert_ptr_null(strstr(r.out, "v[u] = in ? args.params16["));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "4", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 4, fp16, on an H100): persistent: step weights 8.4 MB "));
    const char *back4 = strstr(r.out, "  backward backend (batch 4, fp16, on an H100): persistent: ");
    ck_assert(back4 && strstr(back4, "fp16 tensor-core products, weights held in registers, operands loaded straight into "
                                     "registers\n"));
    /* 16-bit weights: a pass takes 32 sequences at H=1024, so the forward stays persistent at 48 */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "48", "--precision", "bf16",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 48, bf16, on an H100): persistent: step weights 8.4 MB "));
    /* tf32x3 splits only the cuBLAS GEMMs' inputs: its persistent kernels are fp32's */
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "48", "--precision", "tf32x3",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 48, tf32x3, on an H100): persistent: step weights 16.8 MB "));
    ck_assert_ptr_nonnull(strstr(r.out, " of shared memory each, fp32 FFMA products, weights held in registers\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "\n  tf32x3: every cuBLAS GEMM (the hoisted ones, and the step's where it runs per step) "
                                        "as one tf32 GEMM over its inputs split in two parts (three products); the persistent "
                                        "kernels' products are fp32's\n"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--precision", "fp8");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --precision must be fp32, tf32, fp16, bf16 or tf32x3, not 'fp8'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--precision", "tf32");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --precision applies to --persistent N (the per-step unit is the same "
                            "for every precision)\n");
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=64", "--precision", "tf32", "cells/lstm.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc dump: error: --precision applies to --schedule with --batch N\n");
    r = RUN(NULL, "dump", "--schedule", "--keep-derived-weights", "cells/lstmp.cell");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc dump: error: --keep-derived-weights applies to --schedule with --batch N\n");
    /* --cluster C: blocks in clusters sharing the staged operand (built for sm_90a), or a note why not */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--cluster", "2");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "(8 blocks in clusters of 2, "));
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_CLUSTER 2"));
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_cluster_exit();"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--cluster", "2", "--ptx",
            "-o", "/tmp/rnncc_check_cli_cluster.ptx");
    ck_assert_msg(r.status == 0, "%s", r.err);
    char *ptx = tu_read_file("/tmp/rnncc_check_cli_cluster.ptx", NULL);
    remove("/tmp/rnncc_check_cli_cluster.ptx");
    ck_assert_ptr_nonnull(strstr(ptx, ".target sm_90a"));
    ck_assert_ptr_nonnull(strstr(ptx, "multicast::cluster"));
    free(ptx);
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--cluster", "2", "--ptx",
            "--arch", "sm_90");
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: the unit's clusters multicast their copies, a feature of "
                                        "architecture-specific targets (sm_90a); --arch sm_90 may compile it slower"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=9", "--persistent", "4", "--cluster", "4");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: cell 'lstm' is planned without clusters (--cluster 4): "));
    ck_assert_ptr_null(strstr(r.out, "rnn_cluster_init(rnn_xs"));
    /* emit plans as dump and the runtime do: the rule's fours on the 120 blocks an H100 holds at once
     * (H = 768), pairs with a note where those would not hold the step weights in registers (H = 1024),
     * and fours asked for on 120 blocks whatever they hold */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=768", "--persistent", "16", "--precision", "fp16");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "// (120 blocks in clusters of 4, "));
    ck_assert_str_eq(r.err, "");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=1024", "--persistent", "16", "--precision", "fp16");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "// (132 blocks in clusters of 2, "));
    ck_assert_str_eq(r.err, "rnncc emit: note: cell 'lstm' is planned in pairs: its clusters of 4 would read the step weights "
                            "from shared memory (--cluster 4 plans them)\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=1024", "--persistent", "16", "--precision", "fp16",
            "--cluster", "4");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "// (120 blocks in clusters of 4, "));
    ck_assert_str_eq(r.err, "");
    /* where the fours come out without clusters (H = 1023: lengths not whole 16-byte pieces), every
     * multiprocessor takes a block, as the runtime plans (not the 120 the fours would have had); dump too */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=1023", "--persistent", "16", "--precision", "fp16");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "// (132 blocks, "));
    ck_assert_str_eq(r.err, "");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=8", "--dim", "H=1023", "--persistent", "16", "--precision", "fp16",
            "--cluster", "4");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "// (132 blocks, "));
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: cell 'lstm' is planned without clusters (--cluster 4): step "
                                        "weights 8.4 MB fit on chip: 132 blocks of 8 warps, "));
    ck_assert_ptr_nonnull(strstr(r.err, "; clusters of 4 refused: clusters cannot share the staged operands"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1023", "--batch", "16", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  forward backend (batch 16, fp16, on an H100): persistent: step weights 8.4 MB "
                                        "fit on chip: 132 blocks of 8 warps, "));
    ck_assert_ptr_nonnull(strstr(r.out, "; clusters of 4 refused: clusters cannot share the staged operands (lengths not "
                                        "whole 16-byte pieces, or chunks past them)\n  backward backend"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--cluster", "3");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --cluster must be 1, 2 or 4, not '3'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--cluster", "2");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --cluster applies to --persistent N (the per-step unit has no tile)\n");
    /* the tile's other fields: warps a block and staging chunks */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=1024", "--persistent", "4", "--warps", "16",
            "--chunk", "512");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_WARPS 16  // warps a block (persist.cuh)"));
    ck_assert_ptr_nonnull(strstr(r.out, "__launch_bounds__(512, 1) rnncc_lstm_p("));
    ck_assert_ptr_nonnull(strstr(r.out, ", 1, 1024, 512, 2, a.state_prev[0]"));  /* K = 1024 in two chunks of 512 */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=64", "--persistent", "4", "--warps", "4");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "__launch_bounds__(128, 1) rnncc_lstm_p("));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--warps", "32");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --warps must be 4, 8 or 16, not '32'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--chunk", "128");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --chunk must be a number from 256 to 65536, not '128'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--chunk", "512x");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --chunk must be a number from 256 to 65536, not '512x'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--chunk", "65537");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --chunk must be a number from 256 to 65536, not '65537'\n");
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--seqs", "5");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --seqs must be 4, 8, 16 or 32, not '5'\n");
    /* 32 sequences, 8 a pass: NW = 2; each lane's one step of weights (a quarter of the warp's 16 k) held */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=64", "--persistent", "32", "--seqs", "8");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_t<1, 2, 8, 1>("));
    ck_assert_ptr_nonnull(strstr(r.out, ", 8 sequences a matrix-product pass, "));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--warps", "16");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --warps applies to --persistent N (the per-step unit has no tile)\n");
    /* how steps meet: at grid barriers, or with --handoff flags (without clusters) by flagged words */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--cluster", "1",
            "--handoff", "flags");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_flag_put(&rnn_flags_next0["));
    ck_assert_ptr_null(strstr(r.out, "rnn_grid_wait(args.sync"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--cluster", "1");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.out, "rnn_flag_put(&rnn_flags_next0["));
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_grid_wait(args.sync"));
    /* flags asked for without a cluster size take none; a backward unit keeps its barriers, and says so */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--handoff", "flags");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_flag_put(&rnn_flags_next0["));
    ck_assert_ptr_null(strstr(r.out, "rnn_cluster_init(rnn_xs"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--handoff", "flags",
            "--backward");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: cell 'lstm' is planned with grid barriers (--handoff flags)"));
    ck_assert_ptr_null(strstr(r.out, "rnn_flag_put(&rnn_flags_next0["));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--persistent", "4", "--handoff", "flag");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --handoff must be flags, barrier or direct, not 'flag'\n");
    /* --handoff direct: the barrier kept, operands loaded straight into the products' registers (fp16 and bf16,
     * no clusters); elsewhere staged, with a note that says what it needs */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--precision", "fp16",
            "--handoff", "direct");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_grid_wait(args.sync"));
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_mma<3, 4, 2, 2, "));
    ck_assert_ptr_null(strstr(r.out, "rnn_cluster_init(rnn_xs"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--precision", "tf32",
            "--handoff", "direct");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: cell 'lstm' is planned with staged operands (--handoff direct): "
                                        "loading them straight needs fp16 or bf16 products"));
    /* a backward's d(gates) loaded so too, in its clusters splitting K (fours at 16 sequences) */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--precision", "fp16",
            "--backward", "--handoff", "direct");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_SPLIT 4  //"));
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_mma<4, 4, 2, 2, 36, 3>(w1, "));
    /* its exchange without the cluster's meeting; a staged one keeps the meeting (persist.cuh rnn_split_finish) */
    ck_assert_ptr_nonnull(strstr(r.out, "\n#define RNN_SPLIT_ASYNC 1  //"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--precision", "fp16",
            "--backward");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rnn_mv_mma<4, 4, 2, 1, 36, 3>(w1, "));
    ck_assert_ptr_null(strstr(r.out, "#define RNN_SPLIT_ASYNC 1"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--handoff", "flags");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --handoff applies to --persistent N (the per-step unit has no tile)\n");
    /* a backward's clusters split K with --split; a forward's keep sharing their copies, and say so; a
     * backward's cluster that cannot split shares its copies and says why */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=256", "--persistent", "20", "--backward",
            "--cluster", "2", "--split");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_SPLIT 2  //"));
    ck_assert_ptr_nonnull(strstr(r.out, " in clusters of 2 splitting K, "));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=256", "--persistent", "20", "--cluster", "2",
            "--split");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: cell 'lstm' is planned with clusters sharing the staged operand"));
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_CLUSTER 2  //"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=16", "--persistent", "4", "--backward",
            "--cluster", "2", "--split");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "rnncc emit: note: cell 'lstm' is planned with clusters sharing the staged operand"));
    ck_assert_ptr_nonnull(strstr(r.err, "; G1's K (64, 1 rows a block) not split: a block would get no part of it\n"));
    ck_assert_ptr_null(strstr(r.out, "#define RNN_SPLIT 2"));
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_CLUSTER 2  //"));
    /* without --cluster, a tensor-core backward of 17-32 sequences splits K in pairs by rule; --cluster 2 alone shares */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=256", "--persistent", "20", "--backward",
            "--precision", "tf32");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_SPLIT 2  //"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=256", "--persistent", "20", "--backward",
            "--precision", "tf32", "--cluster", "2");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_null(strstr(r.out, "#define RNN_SPLIT 2"));
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_CLUSTER 2  //"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "32", "--precision", "fp16",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  backward backend (batch 32, fp16, on an H100): persistent: step weights 8.4 MB "
                                        "fit on chip: 128 blocks of 8 warps in clusters of 2 splitting K, "));
    /* at 9-16 sequences on tensor cores in fours (bench/NOTES.md section 58), on the 120 blocks an H100 holds */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=256", "--persistent", "12", "--backward",
            "--precision", "tf32");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "#define RNN_SPLIT 4  //"));
    r = RUN(NULL, "dump", "--schedule", "--dim", "I=8", "--dim", "H=1024", "--batch", "33", "--precision", "tf32",
            "cells/lstm.cell");
    ck_assert_ptr_nonnull(strstr(r.out, "  backward backend (batch 33, tf32, on an H100): cuBLAS per step: batch 33 > 32 "
                                        "(tf32, backward), where per-step tensor-core GEMMs win"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=4", "--dim", "H=8", "--split");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "rnncc emit: error: --split applies to --persistent N (the per-step unit has no tile)\n");
    /* --blocks G: at most G blocks (the search's fewer-blocks tile), a multiple of the cluster, at
     * most one a multiprocessor; anything else refused */
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--precision", "fp16",
            "--blocks", "96");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(strstr(r.out, "if (G != 96 || blockDim.x != 256) __trap();"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--precision", "fp16",
            "--blocks", "97", "--cluster", "2");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "rnncc emit: note: cell 'lstm' is planned on 96 blocks (--blocks 97): at most one a "
                            "multiprocessor of an H100, a multiple of the cluster (2), and no more than the work has\n");
    ck_assert_ptr_nonnull(strstr(r.out, "if (G != 96 || blockDim.x != 256) __trap();"));
    r = RUN(NULL, "emit", "cells/lstm.cell", "--dim", "I=64", "--dim", "H=768", "--persistent", "16", "--blocks", "1024");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "is planned on 132 blocks (--blocks 1024)"));
    ck_assert_ptr_nonnull(strstr(r.out, "if (G != 132 || blockDim.x != 256) __trap();"));
    static const char *const bad_blocks[] = {"0", "1025", "96x", "", "-4"};
    tile_option_refused("--blocks", "a number from 1 to 1024", bad_blocks, sizeof bad_blocks / sizeof *bad_blocks);
    /* --wregs R: at most R registers a thread of weights held in registers (0: none), 0 to 255 */
    static const struct { const char *wregs; int held; } wregs[] = {{NULL, 1}, {"0", 0}, {"47", 0}, {"48", 1}, {"255", 1}};
    for (size_t i = 0; i < sizeof wregs / sizeof *wregs; i++) {
        r = emit_fp16_forward("H=768", "16", "--wregs", wregs[i].wregs);
        ck_assert_int_eq(r.status, 0);
        ck_assert_int_eq(strstr(r.out, "rnn_wfrag_load<3, 4, 2>(rnn_wf1, w1, 800, 768);") != NULL, wregs[i].held);
    }
    static const char *const bad_wregs[] = {"256", "-1", "1x", ""};
    tile_option_refused("--wregs", "a number from 0 to 255", bad_wregs, sizeof bad_wregs / sizeof *bad_wregs);
    /* --waves W: at most W staging waves (0: in one go); deepbench's forward takes 4 by rule: its product's
     * last template argument (rnn_mv_mma's WS) */
    static const struct { const char *waves; const char *mma; } waves[] = {
        {NULL, "rnn_mv_mma<4, 8, 2, 1, 36, 4, 4>("}, {"0", "rnn_mv_mma<4, 8, 2, 1, 36, 4>("},
        {"2", "rnn_mv_mma<4, 8, 2, 1, 36, 4, 2>("}, {"4", "rnn_mv_mma<4, 8, 2, 1, 36, 4, 4>("}};
    for (size_t i = 0; i < sizeof waves / sizeof *waves; i++) {
        r = emit_fp16_forward("H=1024", "32", "--waves", waves[i].waves);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, waves[i].mma), "--waves %s", waves[i].waves ? waves[i].waves : "(none)");
    }
    static const char *const bad_waves[] = {"1", "3", "8", "-2", "2x", ""};
    tile_option_refused("--waves", "0, 2 or 4", bad_waves, sizeof bad_waves / sizeof *bad_waves);
}
END_TEST

/* random_cells (the GPU fuzz run's cells): each bad argument refused by name, and the cells written */
START_TEST(random_cells_arguments) {
    static const struct {
        const char *args[5], *err;
    } bad[] = {
        {{NULL}, "usage: random_cells [--wide] FIRST LAST DIR\n"},
        {{"--wide", "1", "2"}, "usage: random_cells [--wide] FIRST LAST DIR\n"},
        {{"-1", "2", "/tmp"}, "random_cells: FIRST must be a non-negative integer, not '-1'\n"},
        {{"1", "x", "/tmp"}, "random_cells: LAST must be a non-negative integer, not 'x'\n"},
        {{"1", "", "/tmp"}, "random_cells: LAST must be a non-negative integer, not ''\n"},
        {{"5", "3", "/tmp"}, "random_cells: LAST (3) is below FIRST (5)\n"},
        {{"1", "1", "/nonexistent-rnncc-dir"},
         "random_cells: cannot write '/nonexistent-rnncc-dir/rnd1.cell': No such file or directory\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Run r = run_program(random_cells_path, NULL, bad[i].args);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, bad[i].err);
    }
    char dir[] = "/tmp/rnncc_cells_XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    Run r = run_program(random_cells_path, NULL, (const char *const[]){"7", "7", dir, NULL});
    ck_assert_int_eq(r.status, 0);
    r = run_program(random_cells_path, NULL, (const char *const[]){"--wide", "2", "3", dir, NULL});
    ck_assert_int_eq(r.status, 0);
    static const char *const names[] = {"rnd7", "wide2", "wide3"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s.cell", dir, names[i]);
        char want[32];
        snprintf(want, sizeof want, "cell %s(x[I]) -> h", names[i]);
        ck_assert_msg(starts_with(read_file(path), want), "%s", path);
        ck_assert_int_eq(unlink(path), 0);
    }
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(int argc, char **argv) {
    (void)argc;
    /* The test binary is $(B)/tests/check_cli; the driver is $(B)/rnncc. */
    const char *slash = strrchr(argv[0], '/');
    size_t dir = slash ? (size_t)(slash - argv[0]) : 0;
    static char path[4096];
    snprintf(path, sizeof path, "%.*s%s../rnncc", (int)dir, argv[0], slash ? "/" : "");
    rnncc_path = path;
    static char cells_path[4096];
    snprintf(cells_path, sizeof cells_path, "%.*s%srandom_cells", (int)dir, argv[0], slash ? "/" : "");
    random_cells_path = cells_path;
    for (int k = 0; k < 2; k++)
        if (access(k ? random_cells_path : rnncc_path, X_OK) != 0) {
            fprintf(stderr, "check_cli: %s not found (build it first: make test)\n", k ? random_cells_path : rnncc_path);
            return EXIT_FAILURE;
        }
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, help_and_version);
    tcase_add_test(tc, bad_usage);
    tcase_add_test(tc, check_files);
    tcase_add_test(tc, check_stdin);
    tcase_add_test(tc, missing_file);
    tcase_add_test(tc, run_reads_stdin);
    tcase_add_test(tc, devices_arguments);
    tcase_add_test(tc, source_size_limit);
    tcase_add_test(tc, options_once_and_apart);
    tcase_add_test(tc, check_json);
    tcase_add_test(tc, dump_ir_and_dot);
    tcase_add_test(tc, dump_to_file);
    tcase_add_test(tc, run_emit_schedule_arguments);
    tcase_add_test(tc, random_cells_arguments);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
