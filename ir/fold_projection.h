/* The projection fold (bench/NOTES.md section 81): a cell whose state s is only ever multiplied
 * (U_k @ s) and whose next value is a product s' = P @ u is rewritten so that the state is u
 * itself: each U_k @ s becomes V_k @ u with derived weights V_k = U_k P, and s' = P @ u is left to
 * the outputs (the post program then runs it once after the loop), or dropped where none reads it. The step loses a phase and a
 * hand-off; what the user sees of s (its initial value, its final value, their gradients) is the
 * caller's to map, from what IrFold records. */
#ifndef RNNCC_FOLD_PROJECTION_H
#define RNNCC_FOLD_PROJECTION_H
#include "ir.h"
#include "sched.h"

typedef struct IrFold {
    const IrCell *user;   /* the cell as written */
    int state;            /* the folded state's index, the same in both cells */
    int proj;             /* P's parameter index */
    int nderived;         /* derived parameters V_k, appended after the user's: index user->nparams + k */
    const int *derived_from; /* [nderived]: U_k's parameter index for V_k */
    IrRef projected;      /* in the folded cell: the node P @ u (the user's s'), read by outputs only; IR_NONE
                             where no output reads it (dropped: the user's final s is then P z_T, computed by
                             the caller from z's last value) */
    const char *why_not;  /* when the cell does not fold: which condition failed (static text) */
} IrFold;

/* Returns the folded cell (allocated from arena, sharing the user cell's dimensions) and fills fold,
 * or NULL with fold->why_not set when no state of the cell has the shape above. */
const IrCell *ir_fold_projection(Arena *arena, const IrCell *user, IrFold *fold);
/* The entry of the user's initial value s_0: U_k s_0 is added, at each sequence's first step, to a
 * hoisted product summed with V_k @ z (the same sum's root, Plan.sum_root), so that both backends
 * read it with no change to the step. Writes that product per derived parameter into entry
 * ([fold->nderived]); returns 1 when each has one, else 0 (the fold then cannot run). */
int ir_fold_entries(const Plan *folded_plan, const IrFold *fold, IrRef *entry);
/* Packs the folded plan's parameters as user_plan packs the user's, so that each of them has the same offset
 * in both layouts at any dimensions (a stack whose products the fold moved to derived weights becomes a run
 * of unstacked ones, back to back), the derived parameters after them. Returns 0 (folded unchanged) where
 * the folded plan stacks the user's parameters otherwise, or memory runs out. */
int ir_fold_pack_like(Arena *arena, Plan *folded_plan, const Plan *user_plan, const IrFold *fold);
/* Where the derived parameters lie in a folded layout L: [*lo, *hi), with none of the user's parameters
 * inside (ir_fold_pack_like packs them after the user's); 0 where fold is NULL or derives nothing, or they do not. */
int ir_fold_derived_range(const IrFold *fold, const PlanLayout *L, int64_t *lo, int64_t *hi);
/* Writes one line saying what the fold did ("# folded: state h becomes h_fold, ...; derived U_P = U P"). */
void ir_fold_describe(const IrFold *fold, const IrCell *folded, StrBuf *out);

#endif
