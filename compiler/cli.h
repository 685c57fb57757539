/* The rnncc command-line driver's shared pieces: loading and checking sources. */
#ifndef RNNCC_CLI_H
#define RNNCC_CLI_H
#include <getopt.h>
#include <stdio.h>

#include "ir/fold_projection.h"
#include "ir/ir.h"
#include "ir/sched.h"
#include "runtime/rnncc.h"

enum { CLI_OK = 0, CLI_INPUT_ERROR = 1, CLI_USAGE_ERROR = 2 };

/* One source file compiled: its text, the arena that owns everything, its diagnostics. */
typedef struct CliSource {
    const char *path;   /* as given ("-" for standard input) */
    char *text;         /* malloc'd */
    size_t len;
    Arena arena;
    Diags diags;
    IrModule *module;   /* NULL when it had errors */
    char why[600];      /* why the file could not be read ("" when it was) */
} CliSource;

/* Reads the whole of path ("-": standard input) into *text (malloc'd), at most RNNCC_MAX_SOURCE_BYTES; returns
 * CLI_OK, or CLI_INPUT_ERROR with why it failed in why (why_size bytes: "cannot open 'f': ..."). */
int cli_read(const char *path, char **text, size_t *len, char *why, size_t why_size);
/* The name a source is shown by: "<stdin>" for "-", else path. */
static inline const char *cli_source_name(const char *path) { return path[0] == '-' && !path[1] ? "<stdin>" : path; }
/* Reads and compiles path ("-" reads standard input) and prints nothing: a read error in s->why, the
 * diagnostics in s->diags. Returns CLI_OK, or CLI_INPUT_ERROR when the file cannot be read or has errors. */
int cli_parse_source(CliSource *s, const char *path);
/* Plans every cell of s's module, as rnncc check does, into s->diags (what cannot be planned is an error there);
 * 1 when every cell planned (or there is no module), 0 otherwise. */
int cli_plan_cells(CliSource *s);
/* Reads and compiles path ("-" reads standard input); prints its diagnostics to stderr.
 * Returns CLI_OK, or CLI_INPUT_ERROR when the file cannot be read or has errors. */
int cli_load(CliSource *s, const char *path);
/* Frees everything cli_load made. */
void cli_source_free(CliSource *s);
/* getopt_long over argv with the house's messages: an unknown option or one missing its value is said on stderr
 * ("rnncc CMD: error: unknown option '--x' (rnncc CMD --help lists them)", "... option '--dim' needs a value")
 * and answered '?'; otherwise what getopt_long answers. */
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *opts);
/* Records option c (getopt_long's value, among opts) in seen (zeroed by the caller, 256 entries); 0 with
 * "rnncc CMD: error: --NAME is given twice" on stderr where it was seen before (the last would win). */
int cli_once(const char *cmd, const struct option *opts, int c, unsigned char seen[256]);
/* 0 with "rnncc CMD: error: -o 'OUT' is the input file" on stderr where out_path names in_path's file (through
 * links too: writing it would destroy the input before it is read); 1 otherwise. */
int cli_output_apart(const char *cmd, const char *out_path, const char *in_path);
/* Adds --dim's arg to dims (*n of them, at most max); 0 with the error on stderr where arg is not NAME=VALUE
 * (the option took the file name: "--dim cells/lstm.cell") or there are too many. */
int cli_add_dim(const char *cmd, const char *arg, const char **dims, int *n, int max);
/* Writes text to stdout or to the file named by out_path; returns a CLI status. */
int cli_write_output(const char *out_path, const char *text, size_t len);

/* The cell ic after the projection fold (what it did in f), or NULL with "rnncc CMD: error: cell '...' does not
 * fold (option --fold): why" on stderr. */
const IrCell *cli_fold_cell(CliSource *s, const char *cmd, const IrCell *ic, IrFold *f);
/* Packs plan, the folded cell's, as the cell as written packs its parameters (runtime/rt_fold.c does the same);
 * returns 0 with an error line on stderr where it cannot. */
int cli_fold_pack_like(CliSource *s, const char *cmd, Plan *plan, const IrFold *f);

/* Subcommands: each takes argc/argv starting at the subcommand's name. */
/* Parses a batch size (1 .. 2^31-1) given to option opt of command cmd; prints the error and
 * returns 0 when arg is not one. */
int cli_parse_batch(const char *cmd, const char *opt, const char *arg, long long *out);
/* Parses --precision's argument of command cmd: fp32, tf32, fp16, bf16 or tf32x3 (rnncc_precision_name);
 * prints the error and returns 0 for anything else. */
int cli_parse_precision(const char *cmd, const char *arg, rnncc_precision *out);

int cli_check(int argc, char **argv);
/* rnncc check --json of the nfiles paths: one JSON object on stdout, nothing on stderr; a CLI status. */
int cli_check_json(int nfiles, char **paths);
int cli_dump(int argc, char **argv);
int cli_emit(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_devices(int argc, char **argv);

#endif
