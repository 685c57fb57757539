/* The CPU plan executor: runs a plan literally (GEMMs over the packed parameter buffer,
 * fused groups by their ops, the same buffers and indexing as the GPU kernels), in double
 * precision, so CI checks grouping, packing and fusion against the reference without a GPU. */
#ifndef RNNCC_SCHED_EXEC_H
#define RNNCC_SCHED_EXEC_H
#include "ref.h"
#include "sched.h"

/* Runs one layer forward through the plan. p gives the problem as for the reference (its
 * parameters are packed into the layout first); reverse = 1 runs the sequence backwards
 * from each sequence's own last step, as a bidirectional layer's second direction does.
 * y: per output [T][N][D]; hT: per state [N][S] (either may be NULL).
 * Returns 0, or -1 when memory runs out or the problem does not match the layout. */
int sched_exec_forward(const PlanLayout *layout, const RefProblem *p, int reverse,
                       double *const *y, double *const *hT);

/* An addend to a hoisted product's value at each sequence's first step (its first position; the last
 * of its length where reverse): the projection fold's entry of an initial state (ir/fold_exec.h). */
typedef struct SchedEntry {
    IrRef product;      /* a hoisted matvec node */
    const double *add;  /* [N][its rows] */
    double *adjoint;    /* backward: written [N][rows], the adjoint of those values (0 where a sequence has no
                           step); NULL when not wanted */
} SchedEntry;
/* sched_exec_forward with entries added after the hoisted program; -1 also when one names no hoisted product. */
int sched_exec_forward_entries(const PlanLayout *layout, const RefProblem *p, int reverse, const SchedEntry *entry,
                               int nentries, double *const *y, double *const *hT);
/* Copies per-parameter arrays (row-major, declaration order) into a packed buffer of
 * layout->packed_size elements (padding zeroed). */
void sched_pack_params(const PlanLayout *layout, const double *const *params, double *packed);

#endif

/* Runs forward, then backward through the plan for the loss sum(dy .* y) + sum(dhT .* hT),
 * as the GPU does (see the file comment of sched_exec.c). Arguments as ref_backward's; with
 * reverse as in sched_exec_forward. Returns 0, or -1 when memory runs out or the problem is
 * malformed. */
int sched_exec_backward(const PlanLayout *layout, const RefProblem *p, int reverse, const double *const *dy,
                        const double *const *dhT, double *dx, double *const *dh0, double *const *dparams);
/* sched_exec_backward with entries, as sched_exec_forward_entries; writes each entry's adjoint, and the
 * forward's final states into hT (as sched_exec_forward's; may be NULL). */
int sched_exec_backward_entries(const PlanLayout *layout, const RefProblem *p, int reverse, const SchedEntry *entry,
                                int nentries, const double *const *dy, const double *const *dhT, double *dx,
                                double *const *dh0, double *const *dparams, double *const *hT);
