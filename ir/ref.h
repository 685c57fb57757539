/* The double-precision reference: runs one layer of a cell over a whole sequence, forward
 * and backward (reverse-mode over the DAG with the op table's derivative rules). It is the
 * oracle for every other executor, so it is a plain loop over steps, sequences and nodes. */
#ifndef RNNCC_REF_H
#define RNNCC_REF_H
#include <stdint.h>

#include "ir.h"

/* One problem: a cell, its bound dimensions, a batch of sequences and the parameters.
 * Layouts: x is [T][N][I] (sequence-major); each state is [N][S]; each output is [T][N][D];
 * matrix parameters are row-major [rows][cols], vector parameters [n]. */
typedef struct RefProblem {
    const IrCell *cell;
    const int64_t *dimval;        /* value of each cell dimension, indexed like cell->dims */
    int64_t T, N;                 /* steps, sequences */
    const int64_t *lengths;       /* [N], each in 0..T; NULL when every sequence has T steps */
    const double *x;              /* [T][N][I] */
    const double *const *h0;      /* per state: [N][S]; NULL (or a NULL entry) means zeros */
    const double *const *params;  /* per parameter, in declaration order */
} RefProblem;

/* Runs forward. y: per output, [T][N][D] (steps past a sequence's length are written as 0);
 * hT: per state, [N][S], the value after each sequence's own last step (may be NULL).
 * Returns 0, or -1 when memory runs out or the problem is malformed. */
int ref_forward(const RefProblem *p, double *const *y, double *const *hT);

/* Runs forward, then backward for the loss L = sum(dy .* y) + sum(dhT .* hT).
 * dy: per output [T][N][D] (NULL entries mean zero); dhT: per state [N][S] or NULL.
 * Writes dx [T][N][I], dh0 per state [N][S], dparams per parameter (overwritten, not
 * accumulated); any of the three may be NULL (or have NULL entries) to skip them.
 * Returns 0, or -1 when memory runs out or the problem is malformed. */
int ref_backward(const RefProblem *p, const double *const *dy, const double *const *dhT,
                 double *dx, double *const *dh0, double *const *dparams);

/* A stack of layers, each with one or two directions, composed from ref_forward: layer
 * l > 0 reads layer l-1's first output (both directions concatenated); the second direction
 * runs each sequence reversed within its own length. Units are numbered layer*dirs + dir. */
typedef struct RefStack {
    const IrCell *cell;
    const int64_t *dimval[2];        /* layer 0, and layers > 0 */
    int layers, dirs;
    int64_t T, N;
    const int64_t *lengths;          /* [N] or NULL */
    const double *x;                 /* [T][N][I] */
    const double *const *const *params; /* [unit][parameter] */
    const double *const *h0;         /* per state: [units][N][S], or NULL / NULL entries for zeros */
} RefStack;

/* y: per output of the last layer, [T][N][D*dirs] (entries may be NULL); hT: per state,
 * [units][N][S] (may be NULL). Returns 0, or -1 when memory runs out or the problem is malformed. */
int ref_stack_forward(const RefStack *s, double *const *y, double *const *hT);
/* Backward of the stack for the loss sum(dy .* y) + sum(dhT .* hT): dy per output of the
 * last layer [T][N][D*dirs] (NULL or NULL entries: zero), dhT per state [units][N][S] (or
 * NULL). Writes dx [T][N][I], dh0 per state [units][N][S] and dparams[unit][parameter]
 * (overwritten; any may be NULL). Returns 0, or -1 as ref_stack_forward. */
int ref_stack_backward(const RefStack *s, const double *const *dy, const double *const *dhT, double *dx,
                       double *const *dh0, double *const *const *dparams);
/* Reverses each sequence of a [T][N][D] array within its length (NULL: T) into out. */
void ref_reverse_sequences(const double *in, double *out, int64_t T, int64_t N, int64_t D, const int64_t *lengths);

#endif
