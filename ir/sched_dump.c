/* Readable and Graphviz forms of a plan (`rnncc dump --schedule`, `--dot`).
 * Key idea: shapes print symbolically ([4H, I]) and, with a layout, as numbers too. */
#include <string.h>

#include "sched.h"

static const char *param_name(const IrCell *c, IrRef matvec) {
    return c->params[c->nodes[c->nodes[matvec].args[0]].index].name;
}

/* Names a value: its source name, its leaf's name, or %id. */
static void put_value(const IrCell *c, IrRef r, StrBuf *out) {
    const IrNode *n = &c->nodes[r];
    if (n->op == IR_INPUT) sb_puts(out, c->inputs[n->index].name);
    else if (n->op == IR_STATE) sb_puts(out, c->states[n->index].name);
    else if (n->op == IR_PARAM) sb_puts(out, c->params[n->index].name);
    else if (n->name) sb_printf(out, "%s", n->name);
    else sb_printf(out, "%%%u", r);
}

/* Lists r among group g's reads (counted in *reads) where it comes from a GEMM or another group's buffer. */
static void put_read(const Plan *p, const SchedGroup *g, IrRef r, int *reads, StrBuf *out) {
    const IrCell *c = p->cell;
    const SchedNode *s = &p->node[r];
    int from_gemm = c->nodes[r].op == IR_MATVEC;
    int from_buf = s->stored && (s->program != g->program || s->group != g->index);
    if (!from_gemm && !from_buf) return;
    sb_puts(out, (*reads)++ ? ", " : "      reads: ");
    put_value(c, r, out);
    if (from_gemm) sb_printf(out, " (G%d block %d)", s->gemm, s->block);
    else sb_printf(out, " (B%d)", s->buffer);
}

/* Writes the stacked row count: "4H" (or 4 times a literal, "64") when every block has the same rows, else "H+M". */
static void put_rows(const IrCell *c, const SchedGemm *g, StrBuf *out) {
    char t[32];
    int d0 = c->params[c->nodes[c->nodes[g->products[0]].args[0]].index].shape.dims[0], same = 1;
    for (int b = 1; b < g->nproducts; b++)
        same &= c->params[c->nodes[c->nodes[g->products[b]].args[0]].index].shape.dims[0] == d0;
    if (same && !c->dims[d0].name) { /* "216" would read 2 times 16 as a number */
        sb_printf(out, "%lld", (long long)g->nproducts * (long long)c->dims[d0].literal);
        return;
    }
    if (same) {
        if (g->nproducts > 1) sb_printf(out, "%d", g->nproducts);
        sb_puts(out, ir_dim_text(c, d0, t, sizeof t));
        return;
    }
    for (int b = 0; b < g->nproducts; b++) {
        int d = c->params[c->nodes[c->nodes[g->products[b]].args[0]].index].shape.dims[0];
        sb_printf(out, "%s%s", b ? "+" : "", ir_dim_text(c, d, t, sizeof t));
    }
}

static void put_gemm(const Plan *p, const PlanLayout *L, int j, StrBuf *out) {
    const IrCell *c = p->cell;
    const SchedGemm *g = &p->gemms[j];
    char t[32];
    int k = c->nodes[g->operand].shape.dims[0];
    sb_printf(out, "    gemm G%d: [", j);
    for (int b = 0; b < g->nproducts; b++) sb_printf(out, "%s%s", b ? "; " : "", param_name(c, g->products[b]));
    sb_puts(out, "] @ ");
    put_value(c, g->operand, out);
    sb_puts(out, " : [");
    put_rows(c, g, out);
    sb_printf(out, ", %s] x [%s, %s]", ir_dim_text(c, k, t, sizeof t), t, g->program == SCHED_STEP ? "N" : "T*N");
    if (L) sb_printf(out, " (%lld rows, %lld columns)", (long long)L->gemm_rows[j], (long long)L->gemm_cols[j]);
    sb_printf(out, "%s -> B%d\n", g->stacked ? "" : " (weights in place, not stacked)", g->out_buffer);
}

static void put_group(const Plan *p, const SchedGroup *g, StrBuf *out) {
    const IrCell *c = p->cell;
    sb_printf(out, "    kernel %c%d: %d op%s", sched_program_letter(g->program), g->index, g->nnodes,
              g->nnodes == 1 ? "" : "s");
    for (int i = 0; i < g->nnodes; i++) {
        const IrNode *n = &c->nodes[g->nodes[i]];
        sb_printf(out, "%s%s", i ? ", " : " (", ir_ops[n->op].name);
        if (n->name) sb_printf(out, " %s", n->name);
    }
    sb_puts(out, g->nnodes ? ")\n" : "\n");
    int reads = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const IrNode *n = &c->nodes[g->nodes[i]];
        for (int a = 0; a < ir_ops[n->op].arity; a++) put_read(p, g, n->args[a], &reads, out);
    }
    for (int w = 0; w < g->nwrites; w++) { /* a result the group writes but does not compute */
        IrRef r = g->writes[w].node;
        int seen = 0;
        for (int v = 0; v < w; v++) seen |= g->writes[v].node == r;
        if (!seen) put_read(p, g, r, &reads, out);
    }
    if (reads) sb_putc(out, '\n');
    int stores = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const SchedNode *s = &p->node[g->nodes[i]];
        if (!s->stored) continue;
        sb_puts(out, stores++ ? ", " : "      stores: ");
        put_value(c, g->nodes[i], out);
        sb_printf(out, " (B%d)", s->buffer);
    }
    if (stores) sb_putc(out, '\n');
    for (int w = 0; w < g->nwrites; w++) {
        const SchedWrite *wr = &g->writes[w];
        sb_puts(out, w ? ", " : "      writes: ");
        if (wr->kind == WRITE_STATE) sb_printf(out, "%s' = ", c->states[wr->index].name);
        else sb_printf(out, "output %s = ", c->outputs[wr->index].name);
        put_value(c, wr->node, out);
    }
    if (g->nwrites) sb_putc(out, '\n');
    for (int j = 0, group, o; j < p->ngemms; j++) /* a copy the runtime may skip (rt_post_direct, rt_post_direct_dy) */
        if (sched_post_copy(p, j, &group, &o) && &p->groups[group] == g)
            sb_printf(out,
                      "      (a copy: G%d writes output %s itself in the forward direction with no lengths, and in the last "
                      "layer's backward takes d%s as its adjoint)\n",
                      j, c->outputs[o].name, c->outputs[o].name);
}

static void put_program(const Plan *p, const PlanLayout *L, SchedProgram prog, StrBuf *out) {
    int any = 0;
    for (int k = 0; k <= p->phases[prog]; k++) {
        for (int i = 0; i < p->ngroups; i++)
            if (p->groups[i].program == prog && p->groups[i].index == k) { put_group(p, &p->groups[i], out); any = 1; }
        for (int j = 0; j < p->ngemms; j++)
            if (p->gemms[j].program == prog && p->gemms[j].phase == k) { put_gemm(p, L, j, out); any = 1; }
    }
    if (!any) sb_puts(out, "    (nothing)\n");
}

void sched_dump(const Plan *p, const PlanLayout *L, StrBuf *out) {
    const IrCell *c = p->cell;
    int step_kernels = 0, step_gemms = 0;
    for (int i = 0; i < p->ngroups; i++) step_kernels += p->groups[i].program == SCHED_STEP;
    for (int j = 0; j < p->ngemms; j++) step_gemms += p->gemms[j].program == SCHED_STEP;
    int post = sched_has_program(p, SCHED_POST); /* printed only where there is one: other plans read as before */
    sb_printf(out, "cell %s: %d recurrent GEMM%s and %d fused kernel%s per step, %d GEMM phase%s", c->name,
              step_gemms, step_gemms == 1 ? "" : "s", step_kernels, step_kernels == 1 ? "" : "s",
              p->phases[SCHED_STEP], p->phases[SCHED_STEP] == 1 ? "" : "s");
    if (post) sb_printf(out, "; %d GEMM phase%s after the loop", p->phases[SCHED_POST], p->phases[SCHED_POST] == 1 ? "" : "s");
    sb_puts(out, "\n  hoisted (once per layer, over all T*N columns):\n");
    put_program(p, L, SCHED_HOIST, out);
    sb_puts(out, "  step (T times, over N columns):\n");
    put_program(p, L, SCHED_STEP, out);
    if (post) {
        sb_puts(out, "  post (once per layer after the step loop, over all T*N step columns):\n");
        put_program(p, L, SCHED_POST, out);
    }
    sb_puts(out, "  buffers:\n");
    for (int b = 0; b < p->nbuffers; b++) {
        const SchedBuffer *buf = &p->buffers[b];
        sb_printf(out, "    B%d: %s %s", b, buf->program == SCHED_STEP && !buf->all_steps ? "[N," : "[T*N,",
                  buf->kind == BUF_GEMM_OUT ? "result of" : "value");
        if (buf->kind == BUF_GEMM_OUT) sb_printf(out, " G%d", buf->gemm);
        else { sb_putc(out, ' '); put_value(c, buf->node, out); }
        sb_puts(out, buf->all_steps ? "] (every step: the post program reads it)" : "]");
        if (L) sb_printf(out, " width %lld", (long long)L->buffer_width[b]);
        sb_putc(out, '\n');
    }
    sb_puts(out, "  packed parameters (declaration order; stacks contiguous):\n");
    for (int i = 0; i < p->npack; i++) {
        const SchedPackItem *it = &p->pack[i];
        int count = sched_pack_count(p, it);
        for (int b = 0; b < count; b++) {
            int k = sched_pack_param(p, it, b);
            const IrShape *s = &c->params[k].shape;
            char t0[32], t1[32];
            sb_printf(out, "    %-12s [%s%s%s]", c->params[k].name, ir_dim_text(c, s->dims[0], t0, sizeof t0),
                      s->kind == IR_MATRIX ? ", " : "", s->kind == IR_MATRIX ? ir_dim_text(c, s->dims[1], t1, sizeof t1) : "");
            if (it->gemm >= 0 && count > 1) sb_printf(out, "  stack G%d block %d", it->gemm, b);
            if (it->run) sb_printf(out, "  run %d of %d (unstacked, packed as a stack)", b, count);
            IrRef f = p->param_fold[k];
            if (f != IR_NONE) sb_printf(out, "  gradient: d(G%d block %d) summed", p->node[f].gemm, p->node[f].block);
            if (L) sb_printf(out, "  offset %lld", (long long)L->param_offset[k]);
            sb_putc(out, '\n');
        }
    }
    if (L) sb_printf(out, "  packed size: %lld elements\n", (long long)L->packed_size);
}

void sched_dump_dot(const Plan *p, StrBuf *out) {
    const IrCell *c = p->cell;
    sb_printf(out, "digraph \"%s_schedule\" {\n  rankdir=TB;\n  node [fontname=\"monospace\", shape=box];\n", c->name);
    for (int j = 0; j < p->ngemms; j++) {
        const SchedGemm *g = &p->gemms[j];
        sb_printf(out, "  G%d [style=filled, fillcolor=lightblue, label=\"%s GEMM G%d\\n[", j,
                  sched_program_name(g->program), j);
        for (int b = 0; b < g->nproducts; b++) sb_printf(out, "%s%s", b ? "; " : "", param_name(c, g->products[b]));
        sb_puts(out, "] @ ");
        put_value(c, g->operand, out);
        sb_puts(out, "\"];\n");
    }
    for (int i = 0; i < p->ngroups; i++) {
        const SchedGroup *g = &p->groups[i];
        char l = sched_program_letter(g->program);
        sb_printf(out, "  %c%d [style=filled, fillcolor=lightyellow, label=\"fused %c%d\\n", l, g->index, l, g->index);
        for (int n = 0; n < g->nnodes; n++) {
            const IrNode *node = &c->nodes[g->nodes[n]];
            if (node->name) sb_printf(out, "%s ", node->name);
        }
        sb_puts(out, "\"];\n");
    }
    /* edges: a group feeds the GEMMs of its phase; a GEMM feeds the groups reading it */
    for (int j = 0; j < p->ngemms; j++) {
        const SchedGemm *g = &p->gemms[j];
        const SchedNode *op = &p->node[g->operand];
        if (op->program != SCHED_NONE) sb_printf(out, "  %c%d -> G%d;\n", sched_program_letter(op->program), op->group, j);
        for (int i = 0; i < p->ngroups; i++) {
            const SchedGroup *gr = &p->groups[i];
            int reads = 0;
            for (int n = 0; n < gr->nnodes && !reads; n++) {
                const IrNode *node = &c->nodes[gr->nodes[n]];
                for (int a = 0; a < ir_ops[node->op].arity; a++) reads |= p->node[node->args[a]].gemm == j;
            }
            for (int w = 0; w < gr->nwrites; w++) reads |= p->node[gr->writes[w].node].gemm == j;
            if (reads) sb_printf(out, "  G%d -> %c%d;\n", j, sched_program_letter(gr->program), gr->index);
        }
    }
    sb_puts(out, "}\n");
}
