/* Backward kernels from a plan: per plan group, one kernel that recomputes the group's values
 * from what the forward kept and sends every adjoint back to where its value came from
 * (contract in cg.h; the semantics are ir/sched_exec.c's backward_group: the same sums,
 * except that the contributions to a value read here are added up in a register first).
 * Key idea: reverse mode inside one thread: an adjoint local per value the group computes and
 * an accumulator per value it reads, a sweep over the nodes last to first, then one `+=` (or `=`,
 * where this kernel alone sends it) per value read, into memory only this thread touches (no
 * atomics). Folded biases (Plan.param_fold) get no accumulator: the runtime sums them. */
#include <stdio.h>
#include <string.h>

#include "cg_gen.h"

/* A folded parameter (Plan.param_fold) has no accumulator: its gradient is summed after the loop
 * from the adjoint of the matvec it is added to, which this kernel sends anyway. */
static int folded(const Gen *g, IrRef r) {
    const IrNode *n = &g->c->nodes[r];
    return n->op == IR_PARAM && g->plan->param_fold[n->index] != IR_NONE;
}

/* Marks in g->sent the values group grp reads or writes without computing them (their
 * adjoints are accumulated in d<id> locals and added to memory at the end), except literals and
 * folded parameters, which have no adjoint here. */
static void mark_sent(Gen *g, const SchedGroup *grp) {
    const IrCell *c = g->c;
    memset(g->sent, 0, c->nnodes);
    for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
        IrRef users[3];
        int nu = cg_item_reads(c, grp, i, users);
        for (int u = 0; u < nu; u++)
            if (!g->computed[users[u]] && c->nodes[users[u]].op != IR_CONST && !folded(g, users[u])) g->sent[users[u]] = 1;
    }
}

/* A parameter's accumulator lives outside the hoisted and post kernels' loops over a sequence's columns. */
static int outside_loop(const Gen *g, const SchedGroup *grp, IrRef r) {
    return grp->program != SCHED_STEP && g->c->nodes[r].op == IR_PARAM;
}

int cg_post_backward_walks(const Plan *plan, int group) {
    const SchedGroup *grp = &plan->groups[group];
    if (grp->program != SCHED_POST) return 0;
    for (int i = 0; i < grp->nnodes; i++) {
        const IrNode *n = &plan->cell->nodes[grp->nodes[i]];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            if (plan->cell->nodes[n->args[a]].op == IR_PARAM) return 1; /* a vector parameter's adjoint, summed */
    }
    return 0;
}

int cg_group_reads(const IrCell *c, const SchedGroup *grp, IrRef r) {
    for (int i = 0; i < grp->nnodes; i++)
        if (grp->nodes[i] == r) return 0;
    for (int i = 0; i < grp->nnodes; i++) {
        const IrNode *n = &c->nodes[grp->nodes[i]];
        for (int a = 0; a < ir_ops[n->op].arity; a++)
            if (n->args[a] == r) return 1;
    }
    for (int w = 0; w < grp->nwrites; w++)
        if (grp->writes[w].node == r) return 1;
    return 0;
}

/* Whether group grp's kernel alone sends r's adjoint: r lives in a plan buffer (a GEMM result or
 * a stored value), which the backward zeroes, and no other group and no GEMM reads r. Its home
 * is then written (= d), not read and added to: one load less per value (bench/NOTES.md 12). */
static int sole_sender(const Gen *g, const SchedGroup *grp, IrRef r) {
    const Plan *p = g->plan;
    const SchedNode *sn = &p->node[r];
    if (sn->gemm < 0 && !(sn->stored && sn->buffer >= 0)) return 0;
    for (int j = 0; j < p->ngemms; j++)
        if (p->gemms[j].operand == r) return 0;
    for (int k = 0; k < p->ngroups; k++)
        if (&p->groups[k] != grp && cg_group_reads(g->c, &p->groups[k], r)) return 0;
    return 1;
}

int cg_adjoint_twinned(const Plan *p, int b) {
    int any = 0;
    for (int j = 0; j < p->ngemms; j++) {
        if (p->gemms[j].out_buffer != b) continue;
        for (uint32_t r = 0; r < p->cell->nnodes; r++) {
            if (p->node[r].gemm != j || p->cell->nodes[r].op != IR_MATVEC) continue;
            int readers = 0;
            for (int k = 0; k < p->ngemms; k++) readers += 2 * (p->gemms[k].operand == r); /* not sent by a kernel alone */
            for (int k = 0; k < p->ngroups; k++) readers += cg_group_reads(p->cell, &p->groups[k], r);
            if (readers != 1) return 0;
            any = 1;
        }
    }
    return any;
}

/* The group that reads r (the only one, for the matvecs of cg_adjoint_twinned's buffers), or -1. */
static int reader_group(const Plan *p, IrRef r) {
    for (int k = 0; k < p->ngroups; k++)
        if (cg_group_reads(p->cell, &p->groups[k], r)) return k;
    return -1;
}

/* A product of a GEMM into buffer a with r's adjoint (the same sum root, Plan.sum_root), sent by
 * the same group at the same rows of its buffer as r at its own; IR_NONE if none, and none where the
 * post program is in it (its buffers, or a post group the sender: not yet shared). */
static IrRef adjoint_partner(const PlanLayout *L, int a, IrRef r) {
    const Plan *p = L->plan;
    int reader = reader_group(p, r);
    if (p->buffers[a].program == SCHED_POST || (reader >= 0 && p->groups[reader].program == SCHED_POST)) return IR_NONE;
    for (int j = 0; j < p->ngemms; j++)
        for (int q = 0; p->gemms[j].out_buffer == a && q < p->gemms[j].nproducts; q++) {
            IrRef r2 = p->gemms[j].products[q];
            if (r2 != r && p->sum_root[r2] == p->sum_root[r] && L->block_row[r2] == L->block_row[r] &&
                reader_group(p, r2) == reader_group(p, r))
                return r2;
        }
    return IR_NONE;
}

int cg_adjoint_shared(const PlanLayout *L, int b) {
    const Plan *p = L->plan;
    if (b < 0 || b >= p->nbuffers || !cg_adjoint_twinned(p, b)) return -1;
    /* the first such buffer keeps no other's: the relation is transitive, so a buffer a's keeper
     * would come before a as b's partner too */
    for (int a = 0; a < b; a++) {
        if (L->buffer_width[a] != L->buffer_width[b] || !cg_adjoint_twinned(p, a)) continue;
        int all = 1;
        for (int j = 0; all && j < p->ngemms; j++)
            for (int q = 0; all && p->gemms[j].out_buffer == b && q < p->gemms[j].nproducts; q++)
                all = adjoint_partner(L, a, p->gemms[j].products[q]) != IR_NONE;
        if (all) return a;
    }
    return -1;
}

int cg_value_summed(const PlanLayout *L, int b) {
    int a = cg_adjoint_shared(L, b);
    return a >= 0 && L->plan->buffers[a].program == SCHED_HOIST && L->plan->buffers[b].program == SCHED_STEP ? a : -1;
}

int cg_adjoint_split_twinned(const PlanLayout *L, int b, int shared) {
    const Plan *p = L->plan;
    if (!cg_adjoint_twinned(p, b) || p->buffers[b].all_steps) return 0; /* post kernels send it all steps' at once */
    if (p->buffers[b].program == SCHED_STEP) return 1;
    for (int s = b + 1; shared && s < p->nbuffers; s++)
        if (p->buffers[s].program == SCHED_STEP && cg_adjoint_shared(L, s) == b) return 1;
    return 0;
}

/* Declares the accumulator of a value read here: `float d<id> = 0.0f;  // d(what)`. */
static void declare_sent(Gen *g, IrRef r, const char *note) {
    char name[NAME_SIZE];
    StrBuf what = {0};
    cg_local_name(g->c, r, 'd', name, sizeof name);
    if (cg_node_name(g->c, r)) cg_put_value(g->c, r, &what);
    else cg_put_expr(g->c, r, &what);
    cg_emit(g->out, "float %s = 0.0f;  // d(%s)%s", name, sb_str(&what), note);
    if (what.failed) g->out->failed = 1;
    sb_free(&what);
}

/* Reads the current value of the home of a value read here into o<id> (dx: 0 when not wanted; a
 * state whose slot this group writes first in a persistent step, Gen.fresh_states: 0 unless
 * a.lengths), ahead of the sweep: every home is this item's alone, so the loads of all of them can
 * be in flight together instead of one read-modify-write after another at the end. */
static void preload_home(Gen *g, IrRef r) {
    char name[NAME_SIZE], expr[EXPR_SIZE];
    StrBuf what = {0};
    cg_local_name(g->c, r, 'o', name, sizeof name);
    cg_value_expr(g, r, 1, expr, sizeof expr, &what);
    const IrNode *n = &g->c->nodes[r];
    if (n->op == IR_INPUT) cg_emit(g->out, "const float %s = a.dx ? %s : 0.0f;", name, expr);
    else if (n->op == IR_STATE && cg_state_in(g->fresh_states, n->index))
        cg_emit(g->out, "const float %s = a.lengths ? %s : 0.0f;  // this step's first to write it: zeroed only where sequences end",
                name, expr);
    else cg_emit(g->out, "const float %s = %s;", name, expr);
    if (what.failed) g->out->failed = 1;
    sb_free(&what);
}

const char *cg_output_adjoint(int w, char *buf, size_t size) {
    snprintf(buf, size, "a.dy[%d][col * a.ldy[%d] + j]", w, w);
    return buf;
}

/* How send() writes a home: home += d<id>; home = o<id> + d<id> (preloaded by preload_home);
 * home = d<id> (its sole sender, sole_sender). */
typedef enum { SEND_ADD, SEND_PRELOADED, SEND_STORE } SendMode;

/* Sends the accumulated adjoint d<id> of a value read here to its home: dx (when wanted),
 * dstate_prev, dparam, or the dbuf of a GEMM result or stored value. prefix: a guard or "". */
static void send(Gen *g, IrRef r, const char *prefix, SendMode mode) {
    char name[NAME_SIZE], old[NAME_SIZE], expr[EXPR_SIZE], rhs[2 * NAME_SIZE + 8];
    StrBuf what = {0};
    cg_local_name(g->c, r, 'd', name, sizeof name);
    cg_local_name(g->c, r, 'o', old, sizeof old);
    cg_value_expr(g, r, 1, expr, sizeof expr, &what);
    if (mode == SEND_PRELOADED) snprintf(rhs, sizeof rhs, "= %s + %s", old, name);
    else if (mode == SEND_STORE) snprintf(rhs, sizeof rhs, "= %s", name);
    else snprintf(rhs, sizeof rhs, "+= %s", name);
    /* a stored GEMM result's adjoint that another buffer's holds too (cg_adjoint_shared): not
     * stored where the runtime points its buffer there (a.dshared) */
    int b = g->c->nodes[r].op == IR_MATVEC ? g->plan->gemms[g->plan->node[r].gemm].out_buffer : -1;
    int shared = mode == SEND_STORE && b >= 0 ? cg_adjoint_shared(g->L, b) : -1;
    /* stored whole with its 16-bit twin (and per step its tf32x3 split twin): the fp32 store skipped where the
     * 16-bit twin is all that is read (a.twins_only) */
    int twinned = g->twins && mode == SEND_STORE && b >= 0 && cg_adjoint_twinned(g->plan, b);
    if (shared >= 0) sb_printf(&what, " (B%d's holds it where a.dshared)", shared);
    const char *guard = g->c->nodes[r].op == IR_INPUT       ? "if (a.dx) "
                        : shared >= 0 && twinned           ? "if (!a.dshared && !a.twins_only) "
                        : shared >= 0                      ? "if (!a.dshared) "
                        : twinned                          ? "if (!a.twins_only) "
                                                           : "";
    cg_emit(g->out, "%s%s%s %s;  // %s", prefix, guard, expr, rhs, sb_str(&what));
    const IrNode *n = &g->c->nodes[r];
    if (n->op == IR_STATE && cg_state_in(g->seed_states, n->index) && mode != SEND_ADD) /* the slot's one writer: rhs "= ..." */
        cg_emit(g->out, "%sif (i == threadIdx.x) rnn_seed%d %s, rnn_seed%d_set = !a.lengths;  // step t-1's seed d(%s')", prefix,
                n->index, rhs, n->index, g->c->states[n->index].name);
    if (twinned)
        cg_emit(g->out, "%sif (%sa.dbuf16[%d]) rnn_put16(a.dbuf16[%d] + (&%s - a.dbuf[%d]), %s, %s);  // its 16-bit twin",
                prefix, shared >= 0 ? "!a.dshared && " : "", b, b, expr, b, name, cg_twin_bf16(g));
    if (twinned && g->split_twins) /* one step's columns, for the step GEMM whose adjoint it is or holds (a.dshared) */
        cg_emit(g->out, "%sif (%sa.dbuf3[%d]) rnn_x3_twin(a.dbuf3[%d], &%s - a.dbuf[%d], %lld, a.N, %s);  // its tf32x3 split twin",
                prefix, shared >= 0 ? "!a.dshared && " : "", b, b, expr, b, (long long)g->L->buffer_width[b], name);
    if (what.failed) g->out->failed = 1;
    sb_free(&what);
}

/* The backward of the group's values of one vector length (they never meet values of
 * another length): the loads (the forward's operands, the adjoints kept for it, the homes, the
 * seeds) all issued first, the recompute, the sweep, then send what was read. */
static int emit_block(Gen *g, const SchedGroup *grp, int64_t len) {
    const IrCell *c = g->c;
    char name[NAME_SIZE], expr[EXPR_SIZE];
    int any = 0, nodes = 0;
    for (int i = 0; i < grp->nnodes; i++) nodes += cg_node_len(g, grp->nodes[i]) == len;

    CgIssued issued = {0}; /* every load below goes out before the first operation (cg_gen.h) */
    if (nodes) cg_emit(g->out, "// what the forward's values are computed from");
    cg_load_reads(g, grp, 0, grp->nnodes, len, &issued);

    if (nodes) {
        cg_emit(g->out, "// adjoints d(v) = dLoss/dv: of the values computed here (with what later kernels added),");
        cg_emit(g->out, "// then of the values read here");
    } else {
        cg_emit(g->out, "// adjoints d(v) = dLoss/dv of the values written here");
    }
    for (int i = 0; i < grp->nnodes; i++) {
        IrRef r = grp->nodes[i];
        if (cg_node_len(g, r) != len) continue;
        StrBuf what = {0};
        cg_local_name(c, r, 'd', name, sizeof name);
        sb_puts(&what, "d(");
        cg_put_value(c, r, &what);
        sb_puts(&what, "): adjoint of ");
        if (c->nodes[r].name) sb_printf(&what, "%s = ", c->nodes[r].name);
        cg_put_expr(c, r, &what);
        if (g->plan->node[r].stored) {
            StrBuf ignored = {0};
            cg_value_expr(g, r, 1, expr, sizeof expr, &ignored);
            sb_free(&ignored);
            cg_emit(g->out, "float %s = %s;  // %s", name, expr, sb_str(&what));
            cg_issued_add(g, &issued, 'd', r);
        } else {
            cg_emit(g->out, "float %s = 0.0f;  // %s", name, sb_str(&what));
        }
        if (what.failed) g->out->failed = 1;
        sb_free(&what);
    }
    for (uint32_t r = 0; r < c->nnodes; r++)
        if (g->sent[r] && cg_node_len(g, r) == len && !outside_loop(g, grp, r)) declare_sent(g, r, "");
    any = 0;
    for (uint32_t r = 0; r < c->nnodes; r++) {
        if (!g->sent[r] || cg_node_len(g, r) != len || outside_loop(g, grp, r) || sole_sender(g, grp, r)) continue;
        if (!any++) cg_emit(g->out, "// what the homes of the values read here hold so far (each is this item's alone)");
        preload_home(g, r);
        cg_issued_add(g, &issued, 'o', r);
    }
    any = 0;

    for (int w = 0; w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        if (cg_node_len(g, wr->node) != len || c->nodes[wr->node].op == IR_CONST) continue;
        if (!any++) cg_emit(g->out, "// seeds: the adjoints of this step's results");
        cg_local_name(c, wr->node, 'd', name, sizeof name);
        if (wr->kind == WRITE_STATE) {
            char d[NAME_SIZE], reg[NAME_SIZE + 48] = "";
            if (cg_state_in(g->seed_states, wr->index)) /* set by the slot's one writer (cg_persist.c) */
                snprintf(reg, sizeof reg, "i == threadIdx.x && rnn_seed%d_set ? rnn_seed%d : ", wr->index, wr->index);
            cg_emit(g->out, "%s += %sa.dstate_next[%d][n * %s + j];  // d(%s') from the next step", name, reg, wr->index,
                    cg_dim_code(c, c->states[wr->index].shape.dims[0], d, sizeof d), c->states[wr->index].name);
        } else {
            g->uses_col = 1;
            char dy[64], q[NAME_SIZE];
            cg_output_adjoint(wr->index, dy, sizeof dy);
            if (g->first_seed[wr->node]) { /* the thread's first item's: loaded during step t+1 (cg_persist.c) */
                cg_first_seed_name(g, g->group, wr->node, q, sizeof q);
                cg_emit(g->out, "if (a.dy[%d]) %s += i == threadIdx.x ? %s : %s;  // d(output %s)", wr->index, name, q, dy,
                        c->outputs[wr->index].name);
            } else {
                cg_emit(g->out, "if (a.dy[%d]) %s += %s;  // d(output %s)", wr->index, name, dy, c->outputs[wr->index].name);
            }
        }
        cg_issued_add(g, &issued, 'd', wr->node);
    }
    cg_issued_emit(g, &issued);

    if (nodes) cg_emit(g->out, "// the forward's values, recomputed");
    g->last_line = 0;
    for (int i = 0; i < grp->nnodes; i++)
        if (cg_node_len(g, grp->nodes[i]) == len && !cg_emit_node(g, grp->nodes[i], 0)) return 0;

    if (nodes) cg_emit(g->out, "// backward through the values, last to first: d(operand) += d(value) * d value/d operand");
    g->last_line = 0;
    for (int i = grp->nnodes; i-- > 0;) {
        IrRef r = grp->nodes[i];
        const IrNode *n = &c->nodes[r];
        if (cg_node_len(g, r) != len) continue;
        cg_line_comment(g, r);
        char args[3][NAME_SIZE], y[NAME_SIZE], dy[NAME_SIZE], da[NAME_SIZE];
        int arity = ir_ops[n->op].arity;
        for (int a = 0; a < 3; a++) {
            if (a >= arity) snprintf(args[a], sizeof args[a], "0.0f");
            else if (!cg_operand(g, n->args[a], args[a], sizeof args[a])) return 0;
        }
        cg_local_name(c, r, 'v', y, sizeof y);
        cg_local_name(c, r, 'd', dy, sizeof dy);
        for (int a = 0; a < arity; a++) {
            if (!g->computed[n->args[a]] && !g->sent[n->args[a]]) continue; /* a literal, a folded bias: no adjoint */
            cg_local_name(c, n->args[a], 'd', da, sizeof da);
            cg_emit(g->out, "%s += %s * rnn_dop_%s_%d(%s, %s, %s, %s);", da, dy, ir_ops[n->op].name, a, args[0],
                    args[1], args[2], y);
        }
    }

    any = 0;
    for (uint32_t r = 0; r < c->nnodes; r++) {
        if (!g->sent[r] || cg_node_len(g, r) != len || outside_loop(g, grp, r)) continue;
        if (!any++)
            cg_emit(g->out, "// the adjoints of the values read here, added where the values came from (written where "
                            "this kernel alone sends them)");
        send(g, r, "", sole_sender(g, grp, r) ? SEND_STORE : SEND_PRELOADED);
    }
    return 1;
}

/* Every block of the group, in the order of its first node or write of each length. */
static int emit_blocks(Gen *g, const SchedGroup *grp, int64_t J) {
    int nitems = grp->nnodes + grp->nwrites;
    for (int start = 0; start < nitems; start++) {
        int64_t len;
        int guarded = cg_open_length(g, grp, start, J, &len);
        if (guarded < 0) continue;
        if (!emit_block(g, grp, len)) return 0;
        if (guarded) cg_close(g->out, NULL);
    }
    return 1;
}

/* "dB0 [T*N, 4H] (G0), dstate_prev[1] (c), dparam (b_i, b_f)": where the kernel adds adjoints. */
static void put_destinations(const Gen *g, StrBuf *out) {
    const IrCell *c = g->c;
    const Plan *p = g->plan;
    char t[80];
    for (int b = 0; b < p->nbuffers; b++) { /* GEMM results and stored values, by buffer */
        const char *cols = p->buffers[b].program == SCHED_STEP && !g->post ? "N" : "T*N";
        for (uint32_t r = 0; r < c->nnodes; r++) {
            if (!g->sent[r]) continue;
            const IrNode *n = &c->nodes[r];
            int buf = n->op == IR_MATVEC ? p->gemms[p->node[r].gemm].out_buffer : p->node[r].buffer;
            if (buf != b || n->op == IR_INPUT || n->op == IR_STATE || n->op == IR_PARAM) continue;
            if (n->op == IR_MATVEC) {
                sb_printf(out, "%sdB%d [%s, ", out->len ? "\n" : "", b, cols);
                cg_put_rows(c, &p->gemms[p->node[r].gemm], out);
                sb_printf(out, "] (G%d)", p->node[r].gemm);
            } else {
                sb_printf(out, "%sdB%d [%s, %s] (", out->len ? "\n" : "", b, cols, cg_dim_text(c, n->shape.dims[0], t));
                cg_put_value(c, r, out);
                sb_puts(out, ")");
            }
            break;
        }
    }
    for (uint32_t r = 0; r < c->nnodes; r++)
        if (g->sent[r] && c->nodes[r].op == IR_STATE)
            sb_printf(out, "%sdstate_prev[%d] (%s)", out->len ? "\n" : "", c->nodes[r].index,
                      c->states[c->nodes[r].index].name);
    for (uint32_t r = 0; r < c->nnodes; r++)
        if (g->sent[r] && c->nodes[r].op == IR_INPUT)
            sb_printf(out, "%sdx, when wanted (%s)", out->len ? "\n" : "", c->inputs[c->nodes[r].index].name);
    int np = 0;
    for (uint32_t r = 0; r < c->nnodes; r++)
        if (g->sent[r] && c->nodes[r].op == IR_PARAM)
            sb_printf(out, "%s%s", np++ ? ", " : out->len ? "\ndparam (" : "dparam (", c->params[c->nodes[r].index].name);
    if (np) sb_puts(out, ")");
}

static void emit_comment(Gen *g, const SchedGroup *grp, int gi, const char *kname, int64_t J, int jdim, int per_step) {
    const IrCell *c = g->c;
    const Plan *p = g->plan;
    StrBuf *out = g->out;
    char fwd[NAME_SIZE], t[80];
    int step = grp->program == SCHED_STEP, post = grp->program == SCHED_POST;
    cg_kernel_name(p, gi, fwd, sizeof fwd);
    cg_emit(out, "// ---- %s: backward of %s group %d (%s)", kname, sched_program_name(grp->program), grp->index, fwd);
    StrBuf s = {0};
    sb_puts(&s, step ? "Each step, t = T-1 down to 0"
                : post ? "Once per layer, before the step program's backward, over the steps a.t .. a.t_end-1"
                       : "Once per layer, after the step program's backward");
    int ngm = 0;
    for (int j = 0; j < p->ngemms; j++)
        if ((int)p->gemms[j].program == grp->program && p->gemms[j].phase == grp->index - 1)
            sb_printf(&s, "%s G%d^T", ngm++ ? "," : ", before GEMM", j);
    sb_printf(&s, "; one thread per (%s), j < %lld (J = %s)%s", per_step ? "t, n, j" : "n, j", (long long)J,
              cg_dim_text(c, jdim, t), step || per_step ? "." : ",");
    cg_emit(out, "// %s", sb_str(&s));
    if (!step && !per_step) cg_emit(out, "// walking the %s of sequence n.", post ? "steps" : "positions");
    s.len = 0;
    for (int w = 0; w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        if (wr->kind == WRITE_STATE)
            sb_printf(&s, "%sd(%s') [N, %s] from dstate_next[%d]", w ? "\n" : "", c->states[wr->index].name,
                      cg_dim_text(c, c->states[wr->index].shape.dims[0], t), wr->index);
        else
            sb_printf(&s, "%sd(output %s) [T*N, %s] from dy[%d]", w ? "\n" : "", c->outputs[wr->index].name,
                      cg_dim_text(c, c->nodes[wr->node].shape.dims[0], t), wr->index);
    }
    if (s.len) cg_emit_list(out, "seeds", &s, ", ");
    s.len = 0;
    for (int i = 0; i < grp->nnodes; i++) {
        IrRef r = grp->nodes[i];
        if (!p->node[r].stored) continue;
        sb_puts(&s, s.len ? "\nd(" : "d(");
        cg_put_value(c, r, &s);
        sb_printf(&s, ") from dB%d", p->node[r].buffer);
    }
    if (s.len) cg_emit_list(out, "reads", &s, ", ");
    s.len = 0;
    put_destinations(g, &s);
    if (s.len) cg_emit_list(out, "adds to", &s, ", ");
    int lo, hi;
    cg_group_lines(g, grp, &lo, &hi);
    if (lo == hi && lo) cg_emit(out, "// %-8s line %d of cell %s", "source", lo, c->name);
    else if (lo) cg_emit(out, "// %-8s lines %d-%d of cell %s", "source", lo, hi, c->name);
    if (s.failed) out->failed = 1;
    sb_free(&s);
}

/* Resets the per-kernel state for group gi's backward: what it computes and what it reads. */
static void backward_begin(Gen *g, const SchedGroup *grp) {
    memset(g->computed, 0, g->c->nnodes);
    memset(g->loaded, 0, g->c->nnodes);
    for (int i = 0; i < grp->nnodes; i++) g->computed[grp->nodes[i]] = 1;
    mark_sent(g, grp);
    g->uses_col = grp->program == SCHED_HOIST;
    g->post = grp->program == SCHED_POST;
}

int cg_emit_backward_body(Gen *g, int gi, StrBuf *body, int indent) {
    const SchedGroup *grp = &g->plan->groups[gi];
    backward_begin(g, grp);
    g->group = gi; /* whose first-item registers (Gen.first, first_seed) its body takes */
    return cg_emit_body(g, g->out, body, indent, emit_blocks, grp, cg_group_width(g->L, gi));
}

/* Per-step kernels (g->clear_seeds): zero the state adjoints this item read from dstate_next, which
 * step t-1 adds to as its dstate_prev (so the runtime zeroes no state adjoint per step). */
static void clear_seeds(Gen *g, const SchedGroup *grp, int64_t J) {
    char d[NAME_SIZE], gbuf[GUARD_SIZE];
    for (int w = 0; g->clear_seeds && w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        if (wr->kind != WRITE_STATE) continue;
        cg_dim_code(g->c, g->c->states[wr->index].shape.dims[0], d, sizeof d);
        cg_emit(g->out, "%sa.dstate_next[%d][n * %s + j] = 0.0f;  // read: zero for step t-1",
                cg_guard(g, wr->node, J, gbuf, sizeof gbuf), wr->index, d);
    }
}

void cg_emit_backward_step_item(Gen *g, int gi, StrBuf *body) {
    const IrCell *c = g->c;
    const SchedGroup *grp = &g->plan->groups[gi];
    StrBuf *out = g->out;
    char gbuf[GUARD_SIZE];
    int64_t J = cg_group_width(g->L, gi);
    int carried = 0;
    for (int w = 0; w < grp->nwrites; w++) carried |= grp->writes[w].kind == WRITE_STATE;
    cg_emit(out, "const int len = a.lengths ? a.lengths[n] : a.T;");
    if (carried) {
        cg_open(out, "if (a.t >= len) {  // sequence n had ended: its states were carried, so are their adjoints");
        for (int w = 0; w < grp->nwrites; w++) {
            const SchedWrite *wr = &grp->writes[w];
            if (wr->kind != WRITE_STATE) continue;
            char d[NAME_SIZE];
            cg_dim_code(c, c->states[wr->index].shape.dims[0], d, sizeof d);
            cg_emit(out, "%sa.dstate_prev[%d][n * %s + j] += a.dstate_next[%d][n * %s + j];  // d(%s) += d(%s')",
                    cg_guard(g, wr->node, J, gbuf, sizeof gbuf), wr->index, d, wr->index, d, c->states[wr->index].name,
                    c->states[wr->index].name);
        }
        clear_seeds(g, grp, J);
        cg_emit(out, "continue;");
        cg_close(out, NULL);
    } else {
        cg_emit(out, "if (a.t >= len) continue;  // sequence n had ended: nothing flows back");
    }
    if (g->uses_col) cg_emit_position(out, "a.t", "this step read");
    sb_putn(out, sb_str(body), body->len);
    clear_seeds(g, grp, J);
}

int cg_emit_backward_kernel(Gen *g, int gi) {
    const Plan *p = g->plan;
    const IrCell *c = g->c;
    const SchedGroup *grp = &p->groups[gi];
    StrBuf *out = g->out;
    char kname[NAME_SIZE], jd[NAME_SIZE], gbuf[GUARD_SIZE];
    int step = grp->program == SCHED_STEP;
    if (cg_backward_kernel_name(p, gi, kname, sizeof kname) < 0) return 0;
    int64_t J = cg_group_width(g->L, gi);
    int jdim = cg_group_jdim(g, gi);
    if (jdim < 0) return 0;
    cg_dim_code(c, jdim, jd, sizeof jd);

    /* a post group that sums no parameter's adjoint: a thread a (t, n, j), as the forward kernel */
    const int per_step = grp->program == SCHED_POST && !cg_post_backward_walks(p, gi);
    backward_begin(g, grp);
    emit_comment(g, grp, gi, kname, J, jdim, per_step);
    StrBuf body = {0};
    if (!cg_emit_body(g, out, &body, step || per_step ? 2 : 3, emit_blocks, grp, J)) return 0;
    if (per_step) {
        cg_open_kernel(out, kname, "(long long)(a.t_end - a.t) * a.N", jd);
        cg_emit_post_decode(out, jd);
        cg_emit(out, "const int len = a.lengths ? a.lengths[n] : a.T;");
        cg_emit(out, "if (t >= len) continue;  // sequence n had ended: it sends nothing");
        if (g->uses_col) cg_emit_position(out, "t", "step t read");
        sb_putn(out, sb_str(&body), body.len);
        sb_free(&body);
        cg_close(out, NULL);
        cg_close(out, NULL);
        return 1;
    }
    cg_open_kernel(out, kname, "(long long)a.N", jd);
    cg_emit(out, "const long long n = i / %s;  // the sequence", jd);
    cg_emit(out, "const int j = (int)(i %% %s);  // the element", jd);
    if (step) {
        g->clear_seeds = 1;
        cg_emit_backward_step_item(g, gi, &body);
        g->clear_seeds = 0;
    } else {
        int post = grp->program == SCHED_POST;
        cg_emit(out, "const int len = a.lengths ? a.lengths[n] : a.T;");
        for (uint32_t r = 0; r < c->nnodes; r++)
            if (g->sent[r] && outside_loop(g, grp, r)) declare_sent(g, r, post ? ", over every step" : ", over every position");
        if (post) {
            cg_open(out, "for (int t = a.t; t < a.t_end && t < len; t++) {  // the steps sequence n ran; ended ones send nothing");
            cg_emit(out, "const long long tc = (long long)t * a.N + n;  // its column of step and post buffers");
            if (g->uses_col) cg_emit_position(out, "t", "step t read");
        } else {
            cg_open(out, "for (int pos = 0; pos < len; pos++) {  // the positions of sequence n; padding gets nothing");
            cg_emit(out, "const long long col = (long long)pos * a.N + n;  // the column");
        }
        sb_putn(out, sb_str(&body), body.len);
        cg_close(out, NULL);
        for (uint32_t r = 0; r < c->nnodes; r++)
            if (g->sent[r] && outside_loop(g, grp, r)) send(g, r, cg_guard(g, r, J, gbuf, sizeof gbuf), SEND_ADD);
    }
    sb_free(&body);
    cg_close(out, NULL);
    cg_close(out, NULL);
    return 1;
}

/* ---- the backward launch contract's helpers ------------------------------------------------- */

int cg_backward_kernel_name(const Plan *plan, int group, char *buf, size_t size) {
    return cg_name_kernel(plan, group, "b", buf, size);
}

int64_t cg_backward_group_items(const PlanLayout *layout, int group, int64_t T, int64_t N) {
    return cg_items(layout, group, T, N, 1);
}
