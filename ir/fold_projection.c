/* The projection fold: finds a state that is only multiplied and whose next value is a product,
 * and rebuilds the cell with the product's operand as the state (fold_projection.h).
 * Key idea: the new parameters' leaves go first, so every old node keeps its order (ids shift by
 * their count) and the DAG stays topological; nothing else of the cell changes. */
#include "fold_projection.h"

#include <string.h>

/* Why state k cannot fold (NULL when it can); users counts each node's uses by other nodes. */
static const char *state_why_not(const IrCell *c, int k, const int *users) {
    const IrState *s = &c->states[k];
    const IrNode *next = &c->nodes[s->next];
    if (next->op != IR_MATVEC) return "no state's next value is a matrix product";
    if (next->args[1] == s->node) return "the state's next value multiplies the state itself";
    int uses = 0; /* the state's uses, each of which must be the right operand of a product */
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        for (int a = 0; a < ir_ops[n->op].arity; a++) {
            if (n->args[a] != s->node) continue;
            if (n->op != IR_MATVEC || a != 1) return "the state is read other than as a matrix product's operand";
            uses++;
        }
    }
    for (int o = 0; o < c->noutputs; o++)
        if (c->outputs[o].node == s->node) return "the state is read other than as a matrix product's operand";
    for (int j = 0; j < c->nstates; j++) /* another state's next value is this one's current (g' = h) */
        if (c->states[j].next == s->node) return "the state is read other than as a matrix product's operand";
    if (!uses) return "the state is never multiplied";
    if (users[s->next]) return "the state's next value is read within the step";
    return NULL;
}

/* Removes node r, which nothing reads, from c (whose arrays the fold owns): later nodes move down one, and every
 * reference to them with them. */
static void drop_node(IrCell *c, IrRef r) {
    IrNode *nodes = c->nodes;
#define MOVED(ref) ((ref) != IR_NONE && (ref) > r ? (ref) - 1 : (ref))
    for (uint32_t i = r; i + 1 < c->nnodes; i++) nodes[i] = nodes[i + 1];
    c->nnodes--;
    for (uint32_t i = 0; i < c->nnodes; i++)
        for (int a = 0; a < ir_ops[nodes[i].op].arity; a++) nodes[i].args[a] = MOVED(nodes[i].args[a]);
    for (int k = 0; k < c->nparams; k++) c->params[k].node = MOVED(c->params[k].node);
    for (int k = 0; k < c->ninputs; k++) c->inputs[k].node = MOVED(c->inputs[k].node);
    for (int k = 0; k < c->nstates; k++)
        c->states[k].node = MOVED(c->states[k].node), c->states[k].next = MOVED(c->states[k].next);
    for (int k = 0; k < c->noutputs; k++) c->outputs[k].node = MOVED(c->outputs[k].node);
#undef MOVED
}

/* Whether name is taken in c (a variable, a named node, a dimension, an output) or among the first
 * n of extra. */
static int name_taken(const IrCell *c, const IrVar *extra, int n, const char *name) {
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].name && !strcmp(c->nodes[i].name, name)) return 1;
    for (int k = 0; k < c->nparams; k++)
        if (!strcmp(c->params[k].name, name)) return 1;
    for (int k = 0; k < c->ninputs; k++)
        if (!strcmp(c->inputs[k].name, name)) return 1;
    for (int k = 0; k < c->nstates; k++)
        if (!strcmp(c->states[k].name, name)) return 1;
    for (int d = 0; d < c->ndims; d++)
        if (c->dims[d].name && !strcmp(c->dims[d].name, name)) return 1;
    for (int o = 0; o < c->noutputs; o++)
        if (!strcmp(c->outputs[o].name, name)) return 1;
    for (int k = 0; k < n; k++)
        if (!strcmp(extra[k].name, name)) return 1;
    return 0;
}

/* A plain identifier (the generated code pastes names in) that names nothing of c nor the first n
 * of extra: "<a>_<b>", else "<a>_<b>_2", "_3", ...; NULL when out of memory. */
static const char *fresh_name(Arena *arena, const IrCell *c, const IrVar *extra, int n, const char *a, const char *b) {
    const char *name = arena_printf(arena, "%s_%s", a, b);
    for (int k = 2; name && name_taken(c, extra, n, name); k++) name = arena_printf(arena, "%s_%s_%d", a, b, k);
    return name;
}

const IrCell *ir_fold_projection(Arena *arena, const IrCell *user, IrFold *fold) {
    *fold = (IrFold){.user = user, .state = -1, .projected = IR_NONE};
    int *users = arena_array(arena, user->nnodes + 1, sizeof *users);
    if (!users) return fold->why_not = "out of memory", NULL;
    for (uint32_t i = 0; i < user->nnodes; i++)
        for (int a = 0; a < ir_ops[user->nodes[i].op].arity; a++) users[user->nodes[i].args[a]]++;
    fold->why_not = user->nstates ? "no state's next value is a matrix product" : "the cell has no state";
    for (int k = 0, said = 0; k < user->nstates && fold->state < 0; k++) {
        const char *why = state_why_not(user, k, users);
        if (!why) fold->state = k;
        else if (!said && user->nodes[user->states[k].next].op == IR_MATVEC)
            fold->why_not = why, said = 1; /* the first state whose next value is a product says why it stays */
    }
    if (fold->state < 0) return NULL;
    fold->why_not = NULL;

    const IrState *s = &user->states[fold->state];
    const IrNode *next = &user->nodes[s->next];
    fold->proj = user->nodes[next->args[0]].index;
    int nv = 0;
    for (uint32_t i = 0; i < user->nnodes; i++) nv += user->nodes[i].op == IR_MATVEC && user->nodes[i].args[1] == s->node;

    IrCell *c = arena_alloc(arena, sizeof *c);
    IrNode *nodes = arena_array(arena, user->nnodes + (uint32_t)nv, sizeof *nodes);
    IrVar *params = arena_array(arena, (size_t)user->nparams + (size_t)nv, sizeof *params);
    IrVar *inputs = arena_array(arena, (size_t)user->ninputs + 1, sizeof *inputs);
    IrState *states = arena_array(arena, (size_t)user->nstates, sizeof *states);
    IrOutput *outputs = arena_array(arena, (size_t)user->noutputs + 1, sizeof *outputs);
    int *from = arena_array(arena, (size_t)nv, sizeof *from);
    if (!c || !nodes || !params || !inputs || !states || !outputs || !from) return fold->why_not = "out of memory", NULL;

    *c = *user;
    const IrVar *P = &user->params[fold->proj];
    const int inner = P->shape.dims[1]; /* u's length: the folded state's */
    for (int p = 0; p < user->nparams; p++) params[p] = user->params[p], params[p].node += (IrRef)nv;
    int v = 0;
    for (uint32_t i = 0; i < user->nnodes; i++) {
        IrNode n = user->nodes[i];
        for (int a = 0; a < ir_ops[n.op].arity; a++) n.args[a] += (IrRef)nv;
        if (n.op == IR_MATVEC && user->nodes[i].args[1] == s->node) {
            const IrVar *U = &user->params[user->nodes[user->nodes[i].args[0]].index];
            from[v] = (int)(U - user->params);
            params[user->nparams + v] = (IrVar){fresh_name(arena, user, params + user->nparams, v, U->name, P->name),
                                                {IR_MATRIX, {U->shape.dims[0], inner}}, (IrRef)v, U->loc};
            if (!params[user->nparams + v].name) return fold->why_not = "out of memory", NULL;
            nodes[v] = (IrNode){.op = IR_PARAM, .shape = params[user->nparams + v].shape,
                                .index = user->nparams + v, .name = params[user->nparams + v].name, .loc = U->loc};
            n.args[0] = (IrRef)v++;
        }
        nodes[i + (uint32_t)nv] = n;
    }
    for (int j = 0; j < user->ninputs; j++) inputs[j] = user->inputs[j], inputs[j].node += (IrRef)nv;
    for (int j = 0; j < user->nstates; j++) states[j] = user->states[j], states[j].node += (IrRef)nv, states[j].next += (IrRef)nv;
    for (int j = 0; j < user->noutputs; j++) outputs[j] = user->outputs[j], outputs[j].node += (IrRef)nv;
    IrState *z = &states[fold->state];
    z->name = fresh_name(arena, user, params + user->nparams, nv, s->name, "fold");
    z->shape = (IrShape){IR_VECTOR, {inner, 0}};
    z->next = next->args[1] + (IrRef)nv;
    nodes[z->node].shape = z->shape;
    nodes[z->node].name = z->name;
    if (!z->name) return fold->why_not = "out of memory", NULL;

    c->nodes = nodes, c->nnodes = user->nnodes + (uint32_t)nv;
    c->params = params, c->nparams = user->nparams + nv;
    c->inputs = inputs, c->states = states, c->outputs = outputs;
    fold->nderived = nv;
    fold->derived_from = from;
    fold->projected = s->next + (IrRef)nv;
    int read = 0; /* by an output, or as another state's next value too (identical expressions are one node) */
    for (int j = 0; j < c->noutputs; j++) read |= outputs[j].node == fold->projected;
    for (int j = 0; j < c->nstates; j++) read |= j != fold->state && states[j].next == fold->projected;
    if (!read) drop_node(c, fold->projected), fold->projected = IR_NONE;
    return c;
}

/* The folded item that holds user item it's parameters in the same order (a stack of exactly them, a lone one,
 * or a run made here of unstacked ones); 0 when they are stacked otherwise. */
static int item_like(Arena *arena, const Plan *folded, const Plan *user, const SchedPackItem *it, SchedPackItem *out) {
    const int n = sched_pack_count(user, it), first = sched_pack_param(user, it, 0), g = folded->param_gemm[first];
    if (g >= 0) { /* the same stack, block for block */
        if (folded->gemms[g].nproducts != n) return 0;
        for (int b = 0; b < n; b++)
            if (sched_pack_param(folded, &(SchedPackItem){g, -1, NULL, 0}, b) != sched_pack_param(user, it, b)) return 0;
        *out = (SchedPackItem){g, -1, NULL, 0};
        return 1;
    }
    if (n == 1) return *out = (SchedPackItem){-1, first, NULL, 0}, 1;
    int *run = arena_array(arena, (size_t)n, sizeof *run);
    if (!run) return 0;
    for (int b = 0; b < n; b++)
        if ((run[b] = sched_pack_param(user, it, b)) < 0 || folded->param_gemm[run[b]] >= 0) return 0;
    *out = (SchedPackItem){-1, -1, run, n};
    return 1;
}

int ir_fold_pack_like(Arena *arena, Plan *folded, const Plan *user, const IrFold *fold) {
    const int nuser = fold->user->nparams;
    SchedPackItem *pack = arena_array(arena, (size_t)user->npack + (size_t)folded->npack + 1, sizeof *pack);
    if (!pack) return 0;
    int n = 0;
    for (int i = 0; i < user->npack; i++)
        if (!item_like(arena, folded, user, &user->pack[i], &pack[n++])) return 0;
    for (int i = 0; i < folded->npack; i++) { /* then the derived parameters' items, in the folded plan's order */
        const SchedPackItem *it = &folded->pack[i];
        int derived = 0, count = sched_pack_count(folded, it);
        for (int b = 0; b < count; b++) derived += sched_pack_param(folded, it, b) >= nuser;
        if (derived && derived < count) return 0; /* a user parameter stacked with a derived one */
        if (derived) pack[n++] = *it;
    }
    folded->pack = pack, folded->npack = n;
    return 1;
}

void ir_fold_describe(const IrFold *f, const IrCell *c, StrBuf *out) {
    const IrCell *u = f->user;
    sb_printf(out, "# folded: state %s becomes %s, the operand of its next value %s @ %s'; derived", u->states[f->state].name,
              c->states[f->state].name, u->params[f->proj].name, c->states[f->state].name);
    for (int k = 0; k < f->nderived; k++)
        sb_printf(out, "%s %s = %s %s", k ? "," : "", c->params[u->nparams + k].name, u->params[f->derived_from[k]].name,
                  u->params[f->proj].name);
    sb_putc(out, '\n');
}

int ir_fold_entries(const Plan *p, const IrFold *f, IrRef *entry) {
    const IrCell *c = p->cell;
    for (int k = 0; k < f->nderived; k++) {
        entry[k] = IR_NONE;
        IrRef vz = IR_NONE; /* V_k @ z */
        for (uint32_t i = 0; i < c->nnodes && vz == IR_NONE; i++)
            if (c->nodes[i].op == IR_MATVEC && c->nodes[c->nodes[i].args[0]].index == f->user->nparams + k) vz = i;
        for (uint32_t i = 0; vz != IR_NONE && i < c->nnodes && entry[k] == IR_NONE; i++)
            if (c->nodes[i].op == IR_MATVEC && p->node[i].program == SCHED_HOIST && p->sum_root[i] == p->sum_root[vz] &&
                c->nodes[i].shape.dims[0] == c->nodes[vz].shape.dims[0])
                entry[k] = i;
        if (entry[k] == IR_NONE) return 0;
    }
    return 1;
}

int ir_fold_derived_range(const IrFold *f, const PlanLayout *L, int64_t *lo, int64_t *hi) {
    if (!f || f->nderived == 0) return 0;
    const int64_t *off = L->param_offset;
    *lo = INT64_MAX, *hi = 0;
    for (int k = 0; k < f->nderived; k++) {
        const int p = f->user->nparams + k;
        const int64_t end = off[p] + L->param_rows[p] * L->param_cols[p];
        if (off[p] < *lo) *lo = off[p];
        if (end > *hi) *hi = end;
    }
    for (int p = 0; p < f->user->nparams; p++) /* the user's parameters all outside it */
        if (off[p] < *hi && off[p] + L->param_rows[p] * L->param_cols[p] > *lo) return 0;
    return 1;
}
