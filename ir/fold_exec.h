/* The projection fold on the CPU (ir/fold_projection.h): runs a user cell's problem through the
 * folded cell's plan as the runtime is to: derived weights V_k = U_k P, the folded state from zero
 * with U_k s_0 entering through the hoisted products (ir_fold_entries), the final state P z_T (s_0
 * where a sequence has no step), and the gradients mapped back to the user's parameters. */
#ifndef RNNCC_FOLD_EXEC_H
#define RNNCC_FOLD_EXEC_H
#include "fold_projection.h"
#include "sched_exec.h"

/* Runs one layer forward. folded: the layout of the folded cell's plan; p: the user's problem (its cell
 * fold->user, its parameters and initial states the user's); reverse, y and hT as sched_exec_forward's
 * (hT per user state). Returns 0, or -1 when memory runs out, the problem does not match, or the fold
 * has no entry (ir_fold_entries). */
int fold_exec_forward(const PlanLayout *folded, const IrFold *fold, const RefProblem *p, int reverse,
                      double *const *y, double *const *hT);
/* Forward, then backward, as sched_exec_backward's, in the user's terms: dhT and dh0 per user state,
 * dparams per user parameter. */
int fold_exec_backward(const PlanLayout *folded, const IrFold *fold, const RefProblem *p, int reverse,
                       const double *const *dy, const double *const *dhT, double *dx, double *const *dh0,
                       double *const *dparams);

#endif
