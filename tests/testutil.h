/* Shared test helpers: a deterministic generator, compiling cells from files or strings,
 * random problems for a cell, and error measures. Linked into every test binary. */
#ifndef RNNCC_TESTUTIL_H
#define RNNCC_TESTUTIL_H
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>

#include "../ir/ir.h"
#include "../ir/ref.h"

/* splitmix64; one per test, no shared state. */
typedef struct Rng { uint64_t s; } Rng;
uint64_t tu_next(Rng *r);
/* Uniform in [-0.5, 0.5). */
double tu_unif(Rng *r);
/* Fills v with uniform values in [lo, hi). */
void tu_fill(Rng *r, double *v, size_t n, double lo, double hi);
/* calloc that fails the test instead of returning NULL. */
void *tu_alloc(size_t n, size_t size);

/* Reads a whole file (NUL-terminated, malloc'd); fails the test if it cannot. */
char *tu_read_file(const char *path, size_t *len);
/* Compiles text; fails the test with the rendered diagnostics if it has errors. */
const IrModule *tu_compile(Arena *arena, const char *filename, const char *src, size_t len);
/* Compiles a file (its text is kept in the arena). */
const IrModule *tu_compile_file(Arena *arena, const char *path);
/* early.cell: a multiplied state written in its step's first group, before that step's GEMM reads its
 * last value (tf32x3's state twin in two slots, rt_state_slot3); check_codegen and check_runtime run it. */
extern const char tu_early_cell[];
/* Cells with readouts, which plans with SCHED_POST_PROGRAM run after the step loop (check_sched names
 * what each covers); TU_NPOST_CELLS of them. */
enum { TU_NPOST_CELLS = 5 };
extern const char *const tu_post_cells[TU_NPOST_CELLS];
/* Lists the .cell files in cells/ sorted by name; returns the count, paths malloc'd in *paths (free with tu_free_list). */
int tu_list_cells(char ***paths);
void tu_free_list(char **paths, int n);

/* A random problem for one cell: dims bound to the given value per symbol (or random in
 * [lo, hi] when value <= 0), inputs, initial states and parameters in [-0.5, 0.5),
 * optional random lengths (at least one full, one shorter when N > 1). */
typedef struct TuProblem {
    RefProblem p;
    int64_t *dimval;
    int64_t *lengths;
    double *x;
    double **h0, **params;
} TuProblem;
void tu_problem(TuProblem *tp, Rng *r, const IrCell *c, int64_t T, int64_t N, int64_t dim_lo, int64_t dim_hi,
                int varlen);
void tu_problem_free(TuProblem *tp);
/* Per output [T][N][D] and per state [N][S] result arrays for a problem. */
double **tu_alloc_outputs(const TuProblem *tp);
double **tu_alloc_states(const TuProblem *tp);
void tu_free_arrays(double **a, int n);
/* Elements of output o / state k. */
int64_t tu_output_len(const TuProblem *tp, int o);
int64_t tu_state_len(const TuProblem *tp, int k);

/* Writes a random valid cell named rnd<seed> (input x[I], states h[H] and maybe c[H]) into buf:
 * 2-5 gates sigmoid/tanh(W x + U v + b) whose recurrent operand v is a state, an earlier gate,
 * a gate times a state or V h (a GEMM of a GEMM's result), so 1-5 GEMM phases a step, all
 * combined into bounded next states.
 * Returns the text's length, or -1 if size is too small. */
int tu_random_cell(uint64_t seed, char *buf, size_t size);
/* Writes a random valid cell named wide<seed> of a wider family into buf: states h[H] and maybe
 * c[H] and s[P]; 2-5 gates, each a sigmoid, tanh, hardsigmoid, clamp or tanh of relu or softplus
 * of W x + U v + b (plus maybe Q s and a peephole p * c), v a state, an earlier gate, a gate times h,
 * V h, max(h, g), abs(h) or h - h^2 / 2; h' and c' convex in [0, 1] gates, s' either a product of
 * the step's new h (LSTMP's projection) or its own recurrence; maybe a second output y, a product
 * of the new h or element-wise. Returns the text's length, or -1 if size is too small. */
int tu_random_cell_wide(uint64_t seed, char *buf, size_t size);
/* Binds c's named dimensions as "NAME=VALUE" texts into specs, dims[i] pointing at each (at most 8):
 * the input's to in, the first state's to size, the others to second (to size where second is 0).
 * Returns how many. */
int tu_dim_specs(const IrCell *c, int64_t in, int64_t size, int64_t second, char specs[8][32], const char **dims);

/* Runs a Check suite, output as CK_VERBOSITY says (normal when unset; verbose: each test in TAP as it
 * ends, then the normal summary); returns the process's exit status (0 = all passed). */
struct Suite;
int tu_run_suite(struct Suite *s);

/* Reverses each sequence of a [T][N][D] array within its length (NULL: T), in place. */
void tu_reverse_in_place(double *a, int64_t T, int64_t N, int64_t D, const int64_t *lengths);

/* A locale whose decimal point is a comma (de_DE.UTF-8, built by localedef into a temporary folder named
 * by LOCPATH: .ci/install-deps installs its sources); fails the calling test where it cannot be had. */
locale_t tu_comma_locale(void);

/* max |a - b| / (floor + |b|) over n elements; NaN anywhere gives infinity. */
double tu_max_rel_err(const double *a, const double *b, size_t n, double floor);

#endif
