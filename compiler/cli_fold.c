/* The projection fold for `rnncc dump --fold` and `rnncc emit --fold`: the cell the runtime runs folded, and
 * its plan packed as the runtime packs it (runtime/rt_fold.c), with the commands' error lines. */
#include <stdio.h>

#include "cli.h"

const IrCell *cli_fold_cell(CliSource *s, const char *cmd, const IrCell *ic, IrFold *f) {
    const IrCell *c = ir_fold_projection(&s->arena, ic, f);
    if (!c) fprintf(stderr, "rnncc %s: error: cell '%s' does not fold (option --fold): %s\n", cmd, ic->name, f->why_not);
    return c;
}

int cli_fold_pack_like(CliSource *s, const char *cmd, Plan *plan, const IrFold *f) {
    const Plan *user = sched_plan(&s->arena, f->user, &s->diags);
    if (user && ir_fold_pack_like(&s->arena, plan, user, f)) return 1;
    fprintf(stderr, "rnncc %s: error: cell '%s' folded would pack its parameters at other offsets (option --fold)\n", cmd,
            f->user->name);
    return 0;
}
