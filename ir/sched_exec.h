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
