/* The scheduler: from a checked cell to a plan of GEMM phases and fused element-wise
 * groups, with a packed parameter layout. Key ideas: a product whose operand depends only
 * on the input is hoisted out of the time loop; products in one phase sharing an operand
 * stack into one GEMM; an element-wise node is computed as late as its first consumer
 * allows, so it stays in registers unless a later kernel or a GEMM needs it stored; step work
 * that nothing in the step waits for takes no first kernel of its own (place_groups). */
#include <string.h>

#include "sched.h"

static int is_leaf(IrOp op) { return ir_ops[op].kind == OPK_LEAF; }

/* Which nodes depend only on the input, parameters and literals (never on a state). */
static void mark_hoistable(const IrCell *c, char *hoistable) {
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (is_leaf(n->op)) { hoistable[i] = n->op != IR_STATE; continue; }
        hoistable[i] = 1;
        for (int a = 0; a < ir_ops[n->op].arity; a++) hoistable[i] &= hoistable[n->args[a]];
    }
}

/* Hoisted: products with a hoistable operand, and the element-wise nodes feeding them. */
static void assign_programs(const IrCell *c, const char *hoistable, SchedNode *sn) {
    for (uint32_t i = 0; i < c->nnodes; i++) {
        IrOp op = c->nodes[i].op;
        sn[i].program = is_leaf(op) ? SCHED_NONE
                      : op == IR_MATVEC && hoistable[c->nodes[i].args[1]] ? SCHED_HOIST : SCHED_STEP;
    }
    for (uint32_t i = c->nnodes; i-- > 0;) {
        const IrNode *n = &c->nodes[i];
        if (sn[i].program != SCHED_HOIST) continue;
        IrRef feeds = n->op == IR_MATVEC ? n->args[1] : IR_NONE;
        if (n->op != IR_MATVEC)
            for (int a = 0; a < ir_ops[n->op].arity; a++) {
                IrRef r = n->args[a];
                if (ir_op_is_elementwise(c->nodes[r].op)) sn[r].program = SCHED_HOIST;
            }
        if (feeds != IR_NONE && ir_op_is_elementwise(c->nodes[feeds].op)) sn[feeds].program = SCHED_HOIST;
    }
}

/* The post program (SCHED_POST_PROGRAM): step products no state's next value depends on, and the
 * element-wise nodes after them with no state operand, that feed outputs only. A node reading a state
 * stays in the step (a state keeps two slots in inference), and so does a product anything in the step
 * reads. scratch: 2 * nnodes bytes. */
static void assign_post(const IrCell *c, SchedNode *sn, char *scratch) {
    char *feeds_state = scratch, *post = scratch + c->nnodes;
    memset(scratch, 0, 2 * (size_t)c->nnodes);
    for (int k = 0; k < c->nstates; k++) feeds_state[c->states[k].next] = 1;
    for (uint32_t i = c->nnodes; i-- > 0;)
        for (int a = 0; feeds_state[i] && a < ir_ops[c->nodes[i].op].arity; a++) feeds_state[c->nodes[i].args[a]] = 1;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (sn[i].program != SCHED_STEP || feeds_state[i]) continue;
        if (n->op == IR_MATVEC) { post[i] = c->nodes[n->args[1]].op != IR_STATE; continue; }
        int any = 0, state = 0;
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            any |= post[n->args[a]];
            state |= c->nodes[n->args[a]].op == IR_STATE;
        }
        post[i] = any && !state;
    }
    for (int changed = 1; changed;) { /* to a fixed point: nothing in the step reads the post program */
        changed = 0;
        for (uint32_t i = 0; i < c->nnodes; i++) {
            const IrNode *n = &c->nodes[i];
            if (sn[i].program == SCHED_NONE) continue;
            int any = 0;
            for (int a = 0; a < ir_ops[n->op].arity; a++) {
                IrRef r = n->args[a];
                if (post[r] && !post[i]) post[r] = 0, changed = 1;
                any |= post[r];
            }
            if (post[i] && n->op != IR_MATVEC && !any) post[i] = 0, changed = 1;
        }
    }
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (post[i]) sn[i].program = SCHED_POST;
}

/* Stage: the group after which a node's value exists. A product's stage is its operand's
 * plus one (its GEMM runs after the operand's group); leaves and values of the other
 * program are available from the start. */
static void compute_stages(const IrCell *c, SchedNode *sn, int *stage) {
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        stage[i] = 0;
        if (sn[i].program == SCHED_NONE) continue;
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            IrRef r = n->args[a];
            int s = sn[r].program == sn[i].program ? stage[r] : 0;
            if (n->op == IR_MATVEC && a == 0) continue; /* the matrix */
            if (s > stage[i]) stage[i] = s;
        }
        if (n->op == IR_MATVEC) {
            sn[i].group = stage[i]; /* its GEMM phase: the operand's stage */
            stage[i]++;
        }
    }
}

/* Places each element-wise node in the latest group its consumers allow; one that no node of its program reads (a
 * state's next value, an output, another program's operand) at its stage, or where last >= 0 and it is a step node,
 * in group last. */
static void place(const IrCell *c, SchedNode *sn, const int *stage, int last) {
    enum { UNSET = 1 << 30 };
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (ir_op_is_elementwise(c->nodes[i].op)) sn[i].group = UNSET;
    for (uint32_t i = c->nnodes; i-- > 0;) {
        const IrNode *n = &c->nodes[i];
        if (ir_op_is_elementwise(n->op) && sn[i].group == UNSET)
            sn[i].group = last >= 0 && sn[i].program == SCHED_STEP ? last : stage[i];
        if (sn[i].program == SCHED_NONE) continue;
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            IrRef r = n->args[a];
            if (!ir_op_is_elementwise(c->nodes[r].op) || sn[r].program != sn[i].program) continue;
            int need = sn[i].group; /* a consumer's group, or a product's GEMM phase */
            if (need < sn[r].group) sn[r].group = need;
        }
    }
}

/* place(), then: where the step's first group (before its first product) holds only work that no product and no
 * later group waits for (a state updated from itself and the input alone, as the folded h' = P @ tanh(W @ x)), that
 * work joins the step's last group instead, so that it takes no kernel of its own (a launch a step on the per-step
 * backend). Elsewhere the placement stays: the hoisted and post programs run once, and a post copy group must stay
 * empty for sched_post_copy's direct write. */
static void place_groups(const IrCell *c, SchedNode *sn, const int *stage) {
    place(c, sn, stage, -1);
    int last = 0, first = 0, needed = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        if (sn[i].program != SCHED_STEP) continue;
        if (stage[i] > last) last = stage[i];
        first |= ir_op_is_elementwise(c->nodes[i].op) && sn[i].group == 0;
        const IrNode *n = &c->nodes[i];
        for (int a = 0; a < ir_ops[n->op].arity; a++) { /* a group-0 value a product or a later group reads */
            IrRef r = n->args[a];
            needed |= ir_op_is_elementwise(c->nodes[r].op) && sn[r].program == SCHED_STEP && sn[r].group == 0 &&
                      (n->op == IR_MATVEC || sn[i].group != 0);
        }
    }
    if (first && !needed && last > 0) place(c, sn, stage, last);
}

/* The group that writes a state's next value or an output, and its program (*prog): the post
 * group computing a post value or right after its GEMM; else the step group computing it, the step
 * group right after its GEMM, or the step's last group for leaves and hoisted values. */
static int write_group(const Plan *p, IrRef r, SchedProgram *prog) {
    const SchedNode *sn = &p->node[r];
    *prog = sn->program == SCHED_POST ? SCHED_POST : SCHED_STEP;
    if (sn->program != SCHED_STEP && sn->program != SCHED_POST) return p->phases[SCHED_STEP];
    return p->cell->nodes[r].op == IR_MATVEC ? sn->group + 1 : sn->group;
}

/* Marks values that must leave registers: read by a later group, by a GEMM, or across programs. */
static void mark_stored(const IrCell *c, SchedNode *sn) {
    for (int k = 0; k < c->nstates + c->noutputs; k++) {
        IrRef r = k < c->nstates ? c->states[k].next : c->outputs[k - c->nstates].node;
        if (sn[r].program == SCHED_HOIST && ir_op_is_elementwise(c->nodes[r].op)) sn[r].stored = 1;
    }
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (sn[i].program == SCHED_NONE) continue;
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            IrRef r = n->args[a];
            if (!ir_op_is_elementwise(c->nodes[r].op)) continue;
            if (n->op == IR_MATVEC || sn[r].program != sn[i].program || sn[r].group != sn[i].group)
                sn[r].stored = 1;
        }
    }
}

typedef struct PlanBuilder {
    Arena *arena;
    const IrCell *cell;
    Plan *plan;
    int gemm_cap;
} PlanBuilder;

static SchedGemm *gemm_new(PlanBuilder *pb, SchedProgram prog, int phase, IrRef operand) {
    Plan *p = pb->plan;
    if (p->ngemms == pb->gemm_cap) {
        int cap = pb->gemm_cap ? pb->gemm_cap * 2 : 8;
        SchedGemm *g = arena_array(pb->arena, (size_t)cap, sizeof *g);
        if (!g) return NULL;
        if (p->ngemms) memcpy(g, p->gemms, (size_t)p->ngemms * sizeof *g);
        p->gemms = g;
        pb->gemm_cap = cap;
    }
    SchedGemm *g = &p->gemms[p->ngemms++];
    *g = (SchedGemm){.program = prog, .phase = phase, .operand = operand, .out_buffer = -1};
    g->products = arena_array(pb->arena, pb->cell->nparams + 1u, sizeof *g->products);
    return g->products ? g : NULL;
}

/* Groups the products of each program and phase by operand into GEMMs, in parameter
 * declaration order; a parameter is stacked in the first GEMM that uses it, and a later
 * product of the same parameter becomes a GEMM of its own on the weights in place. */
static int build_gemms(PlanBuilder *pb) {
    const IrCell *c = pb->cell;
    Plan *p = pb->plan;
    p->param_gemm = arena_array(pb->arena, c->nparams + 1u, sizeof *p->param_gemm);
    if (!p->param_gemm) return 0;
    for (int k = 0; k < c->nparams; k++) p->param_gemm[k] = -1;
    for (int prog = SCHED_HOIST; prog < SCHED_PROGRAMS; prog++)
        for (int phase = 0; phase < p->phases[prog]; phase++) {
            int first = p->ngemms;
            /* products by parameter declaration order, so stacks follow the source's order */
            for (int k = 0; k < c->nparams; k++)
                for (uint32_t i = 0; i < c->nnodes; i++) {
                    const IrNode *n = &c->nodes[i];
                    if (n->op != IR_MATVEC || c->nodes[n->args[0]].index != k) continue;
                    if ((int)p->node[i].program != prog || p->node[i].group != phase) continue;
                    SchedGemm *g = NULL;
                    int stack = p->param_gemm[k] < 0;
                    if (stack)
                        for (int j = first; j < p->ngemms; j++)
                            if (p->gemms[j].operand == n->args[1] && p->gemms[j].stacked) g = &p->gemms[j];
                    if (!g && !(g = gemm_new(pb, (SchedProgram)prog, phase, n->args[1]))) return 0;
                    g->stacked = stack;
                    if (stack) p->param_gemm[k] = (int)(g - p->gemms);
                    p->node[i].gemm = (int)(g - p->gemms);
                    p->node[i].block = g->nproducts;
                    g->products[g->nproducts++] = i;
                }
        }
    return 1;
}

static int add_buffer(PlanBuilder *pb, SchedBuffer b, int *cap) {
    Plan *p = pb->plan;
    if (p->nbuffers == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        SchedBuffer *nb = arena_array(pb->arena, (size_t)*cap, sizeof *nb);
        if (!nb) return -1;
        if (p->nbuffers) memcpy(nb, p->buffers, (size_t)p->nbuffers * sizeof *nb);
        p->buffers = nb;
    }
    p->buffers[p->nbuffers] = b;
    return p->nbuffers++;
}

static int build_buffers(PlanBuilder *pb) {
    const IrCell *c = pb->cell;
    Plan *p = pb->plan;
    int cap = 0;
    for (int j = 0; j < p->ngemms; j++) {
        SchedGemm *g = &p->gemms[j];
        g->out_buffer = add_buffer(pb, (SchedBuffer){BUF_GEMM_OUT, g->program, g->products[0], j, 0}, &cap);
        if (g->out_buffer < 0) return 0;
    }
    for (uint32_t i = 0; i < c->nnodes; i++) {
        p->node[i].buffer = -1;
        if (!p->node[i].stored) continue;
        p->node[i].buffer = add_buffer(pb, (SchedBuffer){BUF_VALUE, p->node[i].program, i, -1, 0}, &cap);
        if (p->node[i].buffer < 0) return 0;
    }
    /* step buffers the post program reads keep every step */
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (p->node[i].program != SCHED_POST) continue;
        for (int a = n->op == IR_MATVEC; a < ir_ops[n->op].arity; a++) {
            const SchedNode *s = &p->node[n->args[a]];
            int b = c->nodes[n->args[a]].op == IR_MATVEC ? p->gemms[s->gemm].out_buffer : s->buffer;
            if (s->program == SCHED_STEP && b >= 0) p->buffers[b].all_steps = 1;
        }
    }
    return 1;
}

static int build_groups(PlanBuilder *pb) {
    const IrCell *c = pb->cell;
    Plan *p = pb->plan;
    int max = p->phases[0] + p->phases[1] + p->phases[2] + SCHED_PROGRAMS;
    p->groups = arena_array(pb->arena, (size_t)max, sizeof *p->groups);
    if (!p->groups) return 0;
    int nres = c->nstates + c->noutputs;
    for (int prog = SCHED_HOIST; prog < SCHED_PROGRAMS; prog++)
        for (int k = 0; k <= p->phases[prog]; k++) {
            int count = 0, nwrites = 0;
            SchedProgram wp;
            for (uint32_t i = 0; i < c->nnodes; i++)
                count += ir_op_is_elementwise(c->nodes[i].op) && (int)p->node[i].program == prog && p->node[i].group == k;
            for (int w = 0; w < nres && prog != SCHED_HOIST; w++)
                nwrites += write_group(p, w < c->nstates ? c->states[w].next : c->outputs[w - c->nstates].node, &wp) == k &&
                           (int)wp == prog;
            if (!count && !nwrites) continue;
            SchedGroup *g = &p->groups[p->ngroups++];
            *g = (SchedGroup){.program = (SchedProgram)prog, .index = k,
                              .nodes = arena_array(pb->arena, (size_t)count + 1, sizeof(IrRef)),
                              .writes = arena_array(pb->arena, (size_t)nwrites + 1, sizeof(SchedWrite))};
            if (!g->nodes || !g->writes) return 0;
            for (uint32_t i = 0; i < c->nnodes; i++)
                if (ir_op_is_elementwise(c->nodes[i].op) && (int)p->node[i].program == prog && p->node[i].group == k)
                    g->nodes[g->nnodes++] = i;
            for (int w = 0; w < nres && prog != SCHED_HOIST; w++) {
                int is_state = w < c->nstates;
                IrRef r = is_state ? c->states[w].next : c->outputs[w - c->nstates].node;
                if (write_group(p, r, &wp) == k && (int)wp == prog)
                    g->writes[g->nwrites++] = (SchedWrite){is_state ? WRITE_STATE : WRITE_OUTPUT,
                                                           is_state ? w : w - c->nstates, r};
            }
        }
    return 1;
}

/* Packed order: parameters in declaration order, a stack placed whole where its first member is declared. */
static int build_pack(PlanBuilder *pb) {
    const IrCell *c = pb->cell;
    Plan *p = pb->plan;
    p->pack = arena_array(pb->arena, c->nparams + 1u, sizeof *p->pack);
    char *placed = arena_alloc(pb->arena, (size_t)p->ngemms + 1);
    if (!p->pack || !placed) return 0;
    for (int k = 0; k < c->nparams; k++) {
        int g = p->param_gemm[k];
        if (g >= 0 && placed[g]) continue;
        if (g >= 0) placed[g] = 1;
        p->pack[p->npack++] = (SchedPackItem){g, g >= 0 ? -1 : k, NULL, 0};
    }
    return 1;
}

int sched_pack_count(const Plan *p, const SchedPackItem *it) {
    return it->gemm >= 0 ? p->gemms[it->gemm].nproducts : it->param >= 0 ? 1 : it->nrun;
}

int sched_pack_param(const Plan *p, const SchedPackItem *it, int b) {
    if (it->gemm >= 0) return p->cell->nodes[p->cell->nodes[p->gemms[it->gemm].products[b]].args[0]].index;
    return it->param >= 0 ? it->param : it->run[b];
}

int sched_has_program(const Plan *p, SchedProgram prog) {
    for (int i = 0; i < p->ngroups; i++)
        if (p->groups[i].program == prog) return 1;
    for (int j = 0; j < p->ngemms; j++)
        if (p->gemms[j].program == prog) return 1;
    return 0;
}

int sched_input_gemm(const Plan *p) {
    const IrCell *c = p->cell;
    int j0 = -1;
    for (int j = 0; j < p->ngemms; j++)
        if (c->nodes[p->gemms[j].operand].op == IR_INPUT) {
            if (j0 >= 0 || p->gemms[j].program != SCHED_HOIST) return -1;
            j0 = j;
        }
    for (IrRef r = 0; j0 >= 0 && r < c->nnodes; r++) {
        const IrNode *n = &c->nodes[r];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            if (c->nodes[n->args[a]].op == IR_INPUT && (n->op != IR_MATVEC || p->node[r].gemm != j0)) return -1;
        for (int i = 0; n->op == IR_INPUT && i < p->ngroups; i++) /* a result that is the input itself */
            for (int w = 0; w < p->groups[i].nwrites; w++)
                if (p->groups[i].writes[w].node == r) return -1;
    }
    return j0;
}

int sched_post_copy(const Plan *p, int j, int *group, int *output) {
    const SchedGemm *g = &p->gemms[j];
    if (g->program != SCHED_POST || g->nproducts != 1) return 0;
    const IrRef pr = g->products[0];
    for (int k = 0; k < p->ngemms; k++) /* no GEMM multiplies the product (which then must be in its buffer) */
        if (p->gemms[k].operand == pr) return 0;
    int found = -1;
    for (int i = 0; i < p->ngroups; i++) {
        const SchedGroup *gr = &p->groups[i];
        if (gr->program != SCHED_POST) continue;
        for (int w = 0; w < gr->nwrites; w++)
            if (gr->writes[w].node == pr) {
                if (found >= 0 || gr->nnodes != 0 || gr->nwrites != 1 || gr->writes[w].kind != WRITE_OUTPUT) return 0;
                found = i;
            }
        for (int k = 0; k < gr->nnodes; k++) /* no other reader of the product */
            for (int a = 0; a < ir_ops[p->cell->nodes[gr->nodes[k]].op].arity; a++)
                if (p->cell->nodes[gr->nodes[k]].args[a] == pr) return 0;
    }
    if (found < 0) return 0;
    *group = found;
    *output = p->groups[found].writes[0].index;
    return 1;
}

Plan *sched_plan(Arena *arena, const IrCell *c, Diags *diags) { return sched_plan_opts(arena, c, diags, SCHED_POST_PROGRAM); }

Plan *sched_plan_opts(Arena *arena, const IrCell *c, Diags *diags, unsigned flags) {
    Plan *p = arena_alloc(arena, sizeof *p);
    char *hoistable = arena_alloc(arena, 2 * (size_t)c->nnodes + 1);
    int *stage = arena_array(arena, c->nnodes + 1, sizeof *stage);
    if (!p || !hoistable || !stage) goto nomem;
    p->cell = c;
    p->node = arena_array(arena, c->nnodes + 1, sizeof *p->node);
    if (!p->node) goto nomem;
    for (uint32_t i = 0; i < c->nnodes; i++) p->node[i] = (SchedNode){SCHED_NONE, 0, -1, -1, 0, -1};
    mark_hoistable(c, hoistable);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        if (n->op == IR_MATVEC && c->nodes[n->args[1]].op == IR_PARAM) {
            diag_error(diags, n->loc, "'%s @ %s' multiplies two parameters, which does not change over "
                       "time; make their product one parameter", c->params[c->nodes[n->args[0]].index].name,
                       c->params[c->nodes[n->args[1]].index].name);
            return NULL;
        }
    }
    assign_programs(c, hoistable, p->node);
    if (flags & SCHED_POST_PROGRAM) assign_post(c, p->node, hoistable); /* hoistable's use is over */
    compute_stages(c, p->node, stage);
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].op == IR_MATVEC) {
            int prog = p->node[i].program;
            if (p->node[i].group + 1 > p->phases[prog]) p->phases[prog] = p->node[i].group + 1;
        }
    place_groups(c, p->node, stage);
    mark_stored(c, p->node);
    PlanBuilder pb = {arena, c, p, 0};
    if (!build_gemms(&pb) || !build_buffers(&pb) || !build_groups(&pb) || !build_pack(&pb)) goto nomem;
    if (!(p->param_fold = sched_param_folds(arena, c)) || !(p->sum_root = sched_sum_roots(arena, c))) goto nomem;
    if (p->nbuffers > SCHED_MAX_BUFFERS) {
        diag_error(diags, c->loc, "cell '%s' needs %d buffers for its products and stored values; the kernels hold at "
                   "most %d (fewer products of products, or of separate values, need fewer)", c->name, p->nbuffers,
                   SCHED_MAX_BUFFERS);
        return NULL;
    }
    return p;
nomem:
    diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory while scheduling cell '%s'", c->name);
    return NULL;
}
