/* The translation unit of a plan and its forward kernels: one CUDA unit per (cell, bound
 * dimensions), one fused element-wise kernel per plan group (launch contract in cg.h), then
 * the backward kernels (cg_backward.c). Key idea: every value a kernel does not compute
 * itself is read through one function, cg_value_expr, which holds the plan's buffer
 * conventions; every node becomes one named local. Also the helpers both generators share. */
#include <stdio.h>
#include <string.h>

#include "cg_gen.h"

/* ---- names ------------------------------------------------------------------------ */

/* A node's source name: its declaration's for leaves, its statement's otherwise, or NULL. */
const char *cg_node_name(const IrCell *c, IrRef r) {
    const IrNode *n = &c->nodes[r];
    switch (n->op) {
    case IR_INPUT: return c->inputs[n->index].name;
    case IR_STATE: return c->states[n->index].name;
    case IR_PARAM: return c->params[n->index].name;
    default: return n->name;
    }
}

/* The local holding a node: v<id>, or v<id>_<name>; a primed name h' becomes v<id>_h_next.
 * Its adjoint (kind 'd') is d<id>[_name]. */
void cg_local_name(const IrCell *c, IrRef r, char kind, char *buf, size_t size) {
    const char *name = cg_node_name(c, r);
    if (!name) {
        snprintf(buf, size, "%c%u", kind, r);
        return;
    }
    int len = (int)strlen(name), primed = len > 0 && name[len - 1] == '\'';
    if (primed) len--;
    const char *suffix = !primed ? "" : len > 0 && name[len - 1] == '_' ? "next" : "_next";
    snprintf(buf, size, "%c%u_%.*s%s", kind, r, len, name, suffix);
}

void cg_first_name(const Gen *g, int gi, IrRef r, char *buf, size_t size) {
    char v[NAME_SIZE];
    cg_local_name(g->c, r, 'v', v, sizeof v);
    snprintf(buf, size, "q%d_%s", g->plan->groups[gi].index, v);
}

void cg_first_seed_name(const Gen *g, int gi, IrRef r, char *buf, size_t size) {
    char v[NAME_SIZE];
    cg_local_name(g->c, r, 'v', v, sizeof v);
    snprintf(buf, size, "qy%d_%s", g->plan->groups[gi].index, v);
}

/* Refuses names that are not plain identifiers (the front end already does; this keeps a
 * cell built some other way from pasting text into the source). */
static int check_one(Gen *g, const char *name, SrcLoc loc, int primed_ok) {
    char base[NAME_SIZE];
    size_t len = name ? strlen(name) : 0;
    if (primed_ok && len > 0 && name[len - 1] == '\'') len--;
    if (name && len < sizeof base) {
        memcpy(base, name, len);
        base[len] = 0;
        if (cg_ident_ok(base)) return 1;
    }
    diag_error(g->diags, loc, "cannot generate code for cell '%s': name '%s' is not a plain identifier",
               cg_ident_ok(g->c->name) ? g->c->name : "?", name ? name : "(null)");
    return 0;
}

static int check_names(Gen *g) {
    const IrCell *c = g->c;
    int ok = check_one(g, c->name, c->loc, 0);
    for (int d = 0; d < c->ndims; d++)
        if (c->dims[d].name) ok &= check_one(g, c->dims[d].name, c->loc, 0);
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (cg_node_name(c, i)) ok &= check_one(g, cg_node_name(c, i), c->nodes[i].loc, 1);
    for (int k = 0; k < c->noutputs; k++) ok &= check_one(g, c->outputs[k].name, c->outputs[k].loc, 0);
    for (int op = 0; op < IR_OP_COUNT; op++) ok &= check_one(g, ir_ops[op].name, c->loc, 0);
    return ok;
}

/* A dimension as code: RNN_DIM_<name>, or the literal's digits. */
const char *cg_dim_code(const IrCell *c, int d, char *buf, size_t size) {
    if (c->dims[d].name) snprintf(buf, size, "RNN_DIM_%s", c->dims[d].name);
    else snprintf(buf, size, "%lld", (long long)c->dims[d].literal);
    return buf;
}

const char *cg_dim_text(const IrCell *c, int d, char *buf) { return ir_dim_text(c, d, buf, 80); }

int64_t cg_node_len(const Gen *g, IrRef r) { return ir_node_len(g->c, r, g->L->dimval); }

/* ---- comments ---------------------------------------------------------------------- */

/* The statement text of a source line, for a comment: up to any '#' comment, only the
 * characters the scanner accepts in statements, blanks squeezed, at most ~100 columns. */
static int source_line(const Gen *g, int line, char *buf, size_t size) {
    buf[0] = 0;
    if (!g->line_at || line < g->line_lo || line > g->line_hi) return 0;
    const char *p = g->line_at[line - g->line_lo], *end = g->diags->src + g->diags->srclen;
    size_t n = 0;
    int blank = 0;
    for (; p < end && *p != '\n' && *p != '\r' && *p != '#' && n + 4 < size && n < 100; p++) {
        char ch = *p;
        int keep = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                   (ch && strchr("_'.-+*/@(),=[]{};", ch));
        if (!keep) { blank = n > 0; continue; }
        if (blank) buf[n++] = ' ';
        blank = 0;
        buf[n++] = ch;
    }
    if (p < end && *p != '\n' && *p != '\r' && *p != '#') { memcpy(buf + n, "...", 3); n += 3; }
    buf[n] = 0;
    return n > 0;
}

/* Names a value in comments: its source name, else %id. */
void cg_put_value(const IrCell *c, IrRef r, StrBuf *out) {
    const char *name = cg_node_name(c, r);
    if (name) sb_puts(out, name);
    else sb_printf(out, "%%%u", r);
}

/* A GEMM's stacked rows: "4H" when every block has the same rows, else "M+H". */
void cg_put_rows(const IrCell *c, const SchedGemm *gm, StrBuf *out) {
    char t[80];
    int d0 = c->params[c->nodes[c->nodes[gm->products[0]].args[0]].index].shape.dims[0], same = 1;
    for (int b = 1; b < gm->nproducts; b++)
        same &= c->params[c->nodes[c->nodes[gm->products[b]].args[0]].index].shape.dims[0] == d0;
    if (same) {
        if (gm->nproducts > 1) sb_printf(out, "%d", gm->nproducts);
        sb_puts(out, cg_dim_text(c, d0, t));
        return;
    }
    for (int b = 0; b < gm->nproducts; b++)
        sb_printf(out, "%s%s", b ? "+" : "",
                  cg_dim_text(c, c->params[c->nodes[c->nodes[gm->products[b]].args[0]].index].shape.dims[0], t));
}

/* Writes "W_i @ x". */
static void put_product(const IrCell *c, IrRef m, StrBuf *out) {
    sb_printf(out, "%s @ ", c->params[c->nodes[c->nodes[m].args[0]].index].name);
    cg_put_value(c, c->nodes[m].args[1], out);
}

/* Writes a node as an expression over its operands' names: "%17 + b_i", "tanh(c')", "W_i @ x". */
void cg_put_expr(const IrCell *c, IrRef r, StrBuf *out) {
    const IrNode *n = &c->nodes[r];
    const OpInfo *o = &ir_ops[n->op];
    if (n->op == IR_MATVEC) {
        put_product(c, r, out);
        return;
    }
    if (o->arity == 0) {
        if (n->op == IR_CONST) sb_printf(out, "%g", n->value);
        else cg_put_value(c, r, out);
        return;
    }
    if (o->kind == OPK_PREFIX) sb_puts(out, "-");
    else if (o->kind == OPK_FUNC) sb_printf(out, "%s(", o->name);
    for (int a = 0; a < o->arity; a++) {
        if (a && o->kind == OPK_INFIX) sb_putn(out, o->value + 1, strlen(o->value) - 2); /* "a + b": " + " */
        else if (a) sb_puts(out, ", ");
        IrRef q = n->args[a];
        if (c->nodes[q].op == IR_CONST) sb_printf(out, "%g", c->nodes[q].value);
        else cg_put_value(c, q, out);
    }
    if (o->kind == OPK_FUNC) sb_puts(out, ")");
}

/* Emits `// label   item, item, ...` from newline-separated items: joined by ", " and
 * wrapped at about 96 columns, or with joiner NULL one item a line. */
void cg_emit_list(StrBuf *out, const char *label, const StrBuf *items, const char *joiner) {
    const char *s = sb_str(items);
    StrBuf line = {0};
    sb_printf(&line, "// %-8s ", label);
    size_t start = line.len;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        if (line.len > start && (!joiner || line.len + n + 2 > 96)) {
            if (joiner) sb_putc(&line, ',');
            cg_emit(out, "%s", sb_str(&line));
            line.len = 0;
            sb_printf(&line, "// %-8s ", "");
        } else if (line.len > start) {
            sb_puts(&line, joiner);
        }
        sb_putn(&line, s, n);
        s = nl ? nl + 1 : s + n;
    }
    cg_emit(out, "%s", sb_str(&line));
    if (line.failed) out->failed = 1;
    sb_free(&line);
}

/* Quotes the source line of a node once, before the first node computed on it. */
void cg_line_comment(Gen *g, IrRef r) {
    int line = g->c->nodes[r].loc.line;
    if (line < 1 || line == g->last_line) return;
    g->last_line = line;
    char text[160];
    if (source_line(g, line, text, sizeof text)) cg_emit(g->out, "// line %d: %s", line, text);
    else cg_emit(g->out, "// line %d", line);
}

void cg_group_lines(const Gen *g, const SchedGroup *grp, int *lo, int *hi) {
    *lo = *hi = 0;
    for (int i = 0; i < grp->nnodes; i++) {
        int l = g->c->nodes[grp->nodes[i]].loc.line;
        if (l > 0 && (!*lo || l < *lo)) *lo = l;
        if (l > *hi) *hi = l;
    }
}

/* ---- reading values ------------------------------------------------------------------ */

/* The column a buffer of the given program is read at: this step's column for hoisted
 * buffers (T*N columns), the sequence for step buffers (N columns); in a post kernel, step
 * and post buffers at the step's column of every step kept (tc = t*N + n). */
static const char *column(Gen *g, int program) {
    if (program == SCHED_HOIST) {
        g->uses_col = 1;
        return "col";
    }
    return g->post ? "tc" : "n";
}


/* The expression reading a value the current group does not compute, and what it is; with
 * adjoint, the expression of the place its adjoint is added to (same column, same element). */
/* In a persistent forward kernel, a step GEMM's result in this block's own rows is read from
 * shared memory (where the block's matrix product left it: cg_persist_result_expr) instead of
 * global memory (expr), for the sequences the kernel keeps there. */
static void persist_result(const Gen *g, IrRef r, char *expr, size_t size) {
    const SchedNode *s = &g->plan->node[r];
    const CgPersist *P = g->persist;
    if (!P || g->plan->gemms[s->gemm].program != SCHED_STEP || cg_node_len(g, r) != g->group_width) return;
    for (int qi = 0; qi < P->ngemms; qi++) {
        const CgPersistGemm *q = &P->gemms[qi];
        if (q->gemm != s->gemm || !q->res_cap) continue;
        char global[EXPR_SIZE];
        snprintf(global, sizeof global, "%s", expr);
        cg_persist_result_expr(q, P, s->block, global, expr, size);
    }
}

void cg_value_expr(Gen *g, IrRef r, int adjoint, char *expr, size_t size, StrBuf *what) {
    const IrCell *c = g->c;
    const IrNode *n = &c->nodes[r];
    const SchedNode *s = &g->plan->node[r];
    const char *buf = adjoint ? "a.dbuf" : "a.buf";
    char d[NAME_SIZE], t[80];
    switch (n->op) {
    case IR_INPUT:
        g->uses_col = 1;
        snprintf(expr, size, "%s[col * a.ldx + j]", adjoint ? "a.dx" : "a.x");
        sb_printf(what, "input %s", c->inputs[n->index].name);
        return;
    case IR_STATE:
        if (g->post) what->failed = 1; /* the plan keeps a state's readers in the step */
        snprintf(expr, size, "%s[%d][n * %s + j]", adjoint ? "a.dstate_prev" : "a.state_prev", n->index,
                 cg_dim_code(c, n->shape.dims[0], d, sizeof d));
        sb_printf(what, "state %s", c->states[n->index].name);
        return;
    case IR_PARAM: {
        int64_t acc = g->L->acc_offset[n->index];
        if (!adjoint) snprintf(expr, size, "a.params[%lld + j]", (long long)g->L->param_offset[n->index]);
        else if (acc < 0) { snprintf(expr, size, "0"); what->failed = 1; } /* no accumulator: folded */
        else if (acc) snprintf(expr, size, "a.dparam[(long long)a.N * %lld + n * %s + j]", (long long)acc,
                               cg_dim_code(c, n->shape.dims[0], d, sizeof d));
        else snprintf(expr, size, "a.dparam[n * %s + j]", cg_dim_code(c, n->shape.dims[0], d, sizeof d));
        sb_printf(what, "param %s [%s]", c->params[n->index].name, cg_dim_text(c, n->shape.dims[0], t));
        return;
    }
    case IR_MATVEC: {
        const SchedGemm *gm = &g->plan->gemms[s->gemm];
        int b = gm->out_buffer;
        int64_t row = g->L->block_row[r];
        const char *col = column(g, gm->program);
        if (row) snprintf(expr, size, "%s[%d][%s * %lld + %lld + j]", buf, b, col, (long long)g->L->buffer_width[b], (long long)row);
        else snprintf(expr, size, "%s[%d][%s * %lld + j]", buf, b, col, (long long)g->L->buffer_width[b]);
        if (!adjoint) persist_result(g, r, expr, size);
        put_product(c, r, what);
        sb_printf(what, ": G%d block %d%s%s", s->gemm, s->block, gm->program == SCHED_STEP ? "" : ", ",
                  gm->program == SCHED_STEP ? "" : sched_program_name(gm->program));
        return;
    }
    default:
        snprintf(expr, size, "%s[%d][%s * %s + j]", buf, s->buffer, column(g, s->program),
                 cg_dim_code(c, n->shape.dims[0], d, sizeof d));
        cg_put_value(c, r, what);
        sb_printf(what, ": stored by %s group %d", sched_program_name(s->program), s->group);
        return;
    }
}

/* Makes sure a local holds r: loads it unless this group computes it. */
static void ensure_local(Gen *g, IrRef r) {
    if (g->computed[r] || g->loaded[r] || g->c->nodes[r].op == IR_CONST) return;
    g->loaded[r] = 1;
    char name[NAME_SIZE], expr[EXPR_SIZE];
    StrBuf what = {0};
    cg_local_name(g->c, r, 'v', name, sizeof name);
    cg_value_expr(g, r, 0, expr, sizeof expr, &what);
    /* a step GEMM result added into a hoisted one's columns where a.summed (cg_value_summed): read as
     * 0 there, the hoisted term holding both (never in a persistent forward, which computes it) */
    int into = g->c->nodes[r].op == IR_MATVEC && !g->persist
                   ? cg_value_summed(g->L, g->plan->gemms[g->plan->node[r].gemm].out_buffer)
                   : -1;
    char src[EXPR_SIZE + NAME_SIZE + 32];
    if (g->first[r] == g->group + 1) { /* the thread's first item (i == threadIdx.x): loaded before the GEMMs */
        char q[NAME_SIZE];
        cg_first_name(g, g->group, r, q, sizeof q);
        snprintf(src, sizeof src, into >= 0 ? "(i == threadIdx.x ? %s : %s)" : "i == threadIdx.x ? %s : %s", q, expr);
    } else snprintf(src, sizeof src, "%s", expr);
    if (into >= 0) cg_emit(g->out, "const float %s = a.summed ? 0.0f : %s;  // %s (in B%d's where a.summed)", name, src, sb_str(&what), into);
    else cg_emit(g->out, "const float %s = %s;  // %s", name, src, sb_str(&what));
    if (what.failed) g->out->failed = 1;
    sb_free(&what);
}

/* An operand as code: a float literal or a local's name. */
int cg_operand(Gen *g, IrRef r, char *buf, size_t size) {
    const IrNode *n = &g->c->nodes[r];
    if (n->op == IR_CONST) {
        if (cg_float_literal(n->value, buf, size)) return 1;
        diag_error(g->diags, n->loc, "constant %g does not fit in single precision", n->value);
        return 0;
    }
    ensure_local(g, r);
    cg_local_name(g->c, r, 'v', buf, size);
    return 1;
}

/* ---- kernels ------------------------------------------------------------------------- */

/* The copies of buffer b's element col * d + j (value v; col is n in a step kernel): its 16-bit twin
 * where a GEMM multiplies it (cg_value_twinned), and what this step's later phase stages in a
 * persistent forward (cg_flagged_buffer): its flagged word, or without flags its 16-bit twin in the
 * words' slots where the phase stages that; guard (or "") opens each line. */
static void emit_buffer_copy(Gen *g, const char *guard, int b, const char *col, const char *d, const char *v) {
    if (g->twins && cg_value_twinned(g->plan, b))
        cg_emit(g->out, "%sif (a.buf16[%d]) rnn_put16(&a.buf16[%d][%s * %s + j], %s, %s);  // its 16-bit twin", guard, b,
                b, col, d, v, cg_twin_bf16(g));
    if (cg_persist_buffer_flagged(g, b)) /* 8-byte words: no value staged from 16 bits with flags (the plan) */
        cg_emit(g->out, "%srnn_flag_put(&rnn_bflags%d[n * %s + j], %s, (unsigned)a.t + 1u);  // for this step's next phase",
                guard, b, d, v);
    else if (cg_persist_buffer16(g, b))
        cg_emit(g->out, "%srnn_put16(&rnn_b16_%d[n * %s + j], %s, %s);  // its 16-bit twin, for this step's next phase",
                guard, b, d, v, cg_twin_bf16(g));
}

/* Computes one element-wise node into its local (and, with store, its buffer when stored). */
int cg_emit_node(Gen *g, IrRef r, int store) {
    const IrNode *n = &g->c->nodes[r];
    const SchedNode *s = &g->plan->node[r];
    char args[3][NAME_SIZE], name[NAME_SIZE], d[NAME_SIZE];
    cg_line_comment(g, r);
    for (int a = 0; a < ir_ops[n->op].arity; a++)
        if (!cg_operand(g, n->args[a], args[a], sizeof args[a])) return 0;
    cg_local_name(g->c, r, 'v', name, sizeof name);
    switch (ir_ops[n->op].arity) {
    case 1: cg_emit(g->out, "const float %s = rnn_op_%s(%s);", name, ir_ops[n->op].name, args[0]); break;
    case 2: cg_emit(g->out, "const float %s = rnn_op_%s(%s, %s);", name, ir_ops[n->op].name, args[0], args[1]); break;
    default:
        cg_emit(g->out, "const float %s = rnn_op_%s(%s, %s, %s);", name, ir_ops[n->op].name, args[0], args[1], args[2]);
    }
    if (store && s->stored) {
        cg_emit(g->out, "a.buf[%d][%s * %s + j] = %s;  // stored for later kernels", s->buffer, column(g, s->program),
                cg_dim_code(g->c, n->shape.dims[0], d, sizeof d), name);
        emit_buffer_copy(g, "", s->buffer, column(g, s->program), d, name);
    }
    return 1;
}

/* The copies of state k's next value v (element n * d + j): those the next step's GEMMs read (its
 * flagged word in a persistent forward with flags, 16-bit where the GEMM stages the twin, its
 * 16-bit twin, and per step its tf32x3 split twin), and at the pass's last step the caller's final
 * state (RnnArgs.state_final, so that no launch copies the last slot out); guard (or "") opens each
 * line. */
static void emit_state_copies(Gen *g, const char *guard, int k, const char *d, const char *v) {
    cg_emit(g->out, "%sif (a.state_final[%d] && a.t == a.T - 1) a.state_final[%d][n * %s + j] = %s;  // the final %s (hT)",
            guard, k, k, d, v, g->c->states[k].name);
    if (cg_persist_flagged(g, k)) {
        const int w16 = cg_persist_flagged16(g, k);
        cg_emit(g->out, "%srnn_flag_put%s(&rnn_flags_next%d[n * %s + j], %s, (unsigned)a.t + 1u%s%s);  // for step t+1's GEMM",
                guard, w16 ? "16" : "", k, d, v, w16 ? ", " : "", w16 ? cg_twin_bf16(g) : "");
    }
    if (g->twins && cg_state_multiplied(g->plan, k))
        cg_emit(g->out, "%sif (a.state16[%d]) rnn_put16(&a.state16[%d][n * %s + j], %s, %s);  // its 16-bit twin", guard,
                k, k, d, v, cg_twin_bf16(g));
    if (g->split_twins && cg_state_multiplied(g->plan, k))
        cg_emit(g->out, "%sif (a.state3[%d]) rnn_x3_put(a.state3[%d] + 3 * n * %s + j, %s, %s, 1);  // its tf32x3 split twin",
                guard, k, k, d, d, v);
}

/* Writes one step result while the sequence runs: a state's next value or an output. */
static int emit_write(Gen *g, const SchedWrite *w) {
    char v[NAME_SIZE], d[NAME_SIZE];
    if (!cg_operand(g, w->node, v, sizeof v)) return 0;
    const IrCell *c = g->c;
    if (w->kind == WRITE_STATE) {
        cg_emit(g->out, "a.state_next[%d][n * %s + j] = %s;  // %s'", w->index,
                cg_dim_code(c, c->states[w->index].shape.dims[0], d, sizeof d), v, c->states[w->index].name);
        emit_state_copies(g, "", w->index, d, v);
    } else {
        g->uses_col = 1;
        cg_emit(g->out, "if (a.y[%d]) a.y[%d][col * a.ldy[%d] + j] = %s;  // output %s", w->index, w->index, w->index, v,
                c->outputs[w->index].name);
    }
    return 1;
}

/* The guard for values of length len in a kernel J wide: "" when none is needed. */
const char *cg_guard(const Gen *g, IrRef r, int64_t J, char *buf, size_t size) {
    char d[NAME_SIZE];
    if (cg_node_len(g, r) >= J) return "";
    snprintf(buf, size, "if (j < %s) ", cg_dim_code(g->c, g->c->nodes[r].shape.dims[0], d, sizeof d));
    return buf;
}

/* Item i of a group: its nodes, then the values its writes take. */
IrRef cg_item_node(const SchedGroup *grp, int i) {
    return i < grp->nnodes ? grp->nodes[i] : grp->writes[i - grp->nnodes].node;
}

int cg_open_length(Gen *g, const SchedGroup *grp, int start, int64_t J, int64_t *len) {
    IrRef first = cg_item_node(grp, start);
    *len = cg_node_len(g, first);
    for (int k = 0; k < start; k++)
        if (cg_node_len(g, cg_item_node(grp, k)) == *len) return -1;
    char gbuf[GUARD_SIZE], d[80];
    const char *gd = cg_guard(g, first, J, gbuf, sizeof gbuf);
    if (start > 0) cg_emit(g->out, "%s", ""); /* item 0 opens the first block */
    if (!*gd) return 0;
    cg_open(g->out, "%s{  // the values %s long", gd, cg_dim_text(g->c, g->c->nodes[first].shape.dims[0], d));
    return 1;
}

int cg_item_reads(const IrCell *c, const SchedGroup *grp, int i, IrRef args[3]) {
    if (i >= grp->nnodes) {
        args[0] = grp->writes[i - grp->nnodes].node;
        return 1;
    }
    const IrNode *n = &c->nodes[grp->nodes[i]];
    for (int a = 0; a < ir_ops[n->op].arity; a++) args[a] = n->args[a];
    return ir_ops[n->op].arity;
}

int cg_group_jdim(const Gen *g, int group) {
    const SchedGroup *grp = &g->plan->groups[group];
    int64_t J = cg_group_width(g->L, group);
    for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
        IrRef r = cg_item_node(grp, i);
        if (g->c->nodes[r].shape.kind == IR_VECTOR && cg_node_len(g, r) == J) return g->c->nodes[r].shape.dims[0];
    }
    return -1;
}

void cg_issued_emit(Gen *g, CgIssued *iss) {
    char line[CG_ISSUED_OPERANDS * (NAME_SIZE + 8) + 64], name[NAME_SIZE];
    for (int first = 0; first < iss->n; first += CG_ISSUED_OPERANDS) {
        int at = snprintf(line, sizeof line, "RNN_ISSUED(");
        for (int k = first; k < iss->n && k < first + CG_ISSUED_OPERANDS; k++) {
            if (iss->kind[k] == 'q') cg_first_name(g, g->group, iss->ref[k], name, sizeof name);
            else cg_local_name(g->c, iss->ref[k], iss->kind[k], name, sizeof name);
            at += snprintf(line + at, sizeof line - at, "%s\"f\"(%s)", k > first ? ", " : "", name);
        }
        cg_emit(g->out, "%s);  // the loads above, issued together", line);
    }
    iss->n = 0;
}

void cg_issued_add(Gen *g, CgIssued *iss, char kind, IrRef r) {
    for (int k = 0; k < iss->n; k++)
        if (iss->ref[k] == r && iss->kind[k] == kind) return;
    iss->ref[iss->n] = r;
    iss->kind[iss->n++] = kind;
    if (iss->n == CG_ISSUED_MAX) cg_issued_emit(g, iss);
}

void cg_load_reads(Gen *g, const SchedGroup *grp, int start, int end, int64_t len, CgIssued *iss) {
    for (int i = start; i < end; i++) {
        if (cg_node_len(g, cg_item_node(grp, i)) != len) continue;
        IrRef args[3];
        int na = cg_item_reads(g->c, grp, i, args);
        for (int a = 0; a < na; a++) {
            ensure_local(g, args[a]);
            if (!g->computed[args[a]] && g->c->nodes[args[a]].op != IR_CONST) cg_issued_add(g, iss, 'v', args[a]);
        }
    }
}

/* The group's nodes and writes, one block per distinct vector length (elements past a
 * shorter vector's end are skipped): nodes of different lengths never meet in a group,
 * since element-wise operands agree in shape. */
static int emit_active(Gen *g, const SchedGroup *grp, int64_t J) {
    int nitems = grp->nnodes + grp->nwrites;
    for (int start = 0; start < nitems; start++) {
        int64_t len;
        int guarded = cg_open_length(g, grp, start, J, &len);
        if (guarded < 0) continue;
        g->last_line = 0;
        CgIssued issued = {0};
        cg_load_reads(g, grp, start, nitems, len, &issued);
        cg_issued_emit(g, &issued);
        for (int i = start; i < grp->nnodes; i++)
            if (cg_node_len(g, grp->nodes[i]) == len && !cg_emit_node(g, grp->nodes[i], 1)) return 0;
        int any = 0;
        for (int w = 0; w < grp->nwrites; w++) {
            if (cg_node_len(g, grp->writes[w].node) != len) continue;
            if (!any++) cg_emit(g->out, "// this step's results");
            if (!emit_write(g, &grp->writes[w])) return 0;
        }
        if (guarded) cg_close(g->out, NULL);
    }
    return 1;
}

/* "if (j < X && cond) ", "if (cond) " or "if (j < X) ": the length guard of node r and cond. */
static const char *guard_and(const Gen *g, IrRef r, int64_t J, const char *cond, char *buf, size_t size) {
    char d[NAME_SIZE];
    if (cg_node_len(g, r) >= J) snprintf(buf, size, "if (%s) ", cond);
    else snprintf(buf, size, "if (j < %s && %s) ", cg_dim_code(g->c, g->c->nodes[r].shape.dims[0], d, sizeof d), cond);
    return buf;
}

/* Does an ended sequence's step write anything for this group? */
static int writes_when_finished(const Gen *g, const SchedGroup *grp) {
    int any = grp->nwrites > 0;
    for (int i = 0; i < grp->nnodes; i++) any |= g->plan->node[grp->nodes[i]].stored;
    return any;
}

/* A finished sequence keeps its states and gets zeros in its outputs (at step t) and in the
 * group's stored values: training keeps every step's buffers, and the weight-gradient GEMMs
 * read them at every column, so they never hold a stale or uninitialised value. */
static void emit_finished(Gen *g, const SchedGroup *grp, int64_t J) {
    const IrCell *c = g->c;
    char gbuf[GUARD_SIZE], d[NAME_SIZE], cond[64];
    for (int w = 0; w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        if (wr->kind != WRITE_STATE) continue;
        const char *gd = cg_guard(g, wr->node, J, gbuf, sizeof gbuf);
        cg_dim_code(c, c->states[wr->index].shape.dims[0], d, sizeof d);
        cg_emit(g->out, "%sa.state_next[%d][n * %s + j] = a.state_prev[%d][n * %s + j];  // %s' = %s", gd, wr->index,
                d, wr->index, d, c->states[wr->index].name, c->states[wr->index].name);
        char kept[2 * NAME_SIZE + 32];
        snprintf(kept, sizeof kept, "a.state_prev[%d][n * %s + j]", wr->index, d);
        emit_state_copies(g, gd, wr->index, d, kept);
    }
    for (int i = 0; i < grp->nnodes; i++) {
        IrRef r = grp->nodes[i];
        const SchedNode *s = &g->plan->node[r];
        if (!s->stored) continue;
        StrBuf what = {0};
        cg_put_value(c, r, &what);
        const char *gd = cg_guard(g, r, J, gbuf, sizeof gbuf);
        cg_emit(g->out, "%sa.buf[%d][%s * %s + j] = 0.0f;  // %s, stored: zero, never stale", gd, s->buffer,
                g->post ? "tc" : "n", cg_dim_code(c, c->nodes[r].shape.dims[0], d, sizeof d), sb_str(&what));
        emit_buffer_copy(g, gd, s->buffer, g->post ? "tc" : "n", d, "0.0f");
        if (what.failed) g->out->failed = 1;
        sb_free(&what);
    }
    for (int w = 0; w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        if (wr->kind != WRITE_OUTPUT) continue;
        snprintf(cond, sizeof cond, "a.y[%d]", wr->index);
        cg_emit(g->out, "%sa.y[%d][%s * a.ldy[%d] + j] = 0.0f;  // output %s", guard_and(g, wr->node, J, cond, gbuf, sizeof gbuf),
                wr->index, g->post ? "tc" : "((long long)a.t * a.N + n)", wr->index, c->outputs[wr->index].name);
    }
}

/* The comment block over a kernel: what it reads, computes, stores and writes. */
static void emit_kernel_comment(Gen *g, const SchedGroup *grp, const char *kname, int64_t J, int jdim) {
    const IrCell *c = g->c;
    const Plan *p = g->plan;
    StrBuf *out = g->out;
    char t[80];
    int step = grp->program == SCHED_STEP;
    cg_emit(out, "// ---- %s: %s group %d (kernel %c%d in `rnncc dump --schedule`)", kname, sched_program_name(grp->program),
            grp->index, sched_program_letter(grp->program), grp->index);
    StrBuf when = {0};
    if (step) sb_puts(&when, "Each step");
    else if (grp->program == SCHED_POST) sb_puts(&when, "Once per layer after the step loop, over the steps a.t .. a.t_end-1");
    else sb_puts(&when, "Once per layer over all T*N columns");
    int ngm = 0;
    for (int j = 0; j < p->ngemms; j++)
        if ((int)p->gemms[j].program == grp->program && p->gemms[j].phase == grp->index - 1)
            sb_printf(&when, "%s G%d", ngm++ ? "," : ", after GEMM", j);
    sb_printf(&when, "; one thread per (%s, j), j < %lld (J = %s).", step ? "n" : grp->program == SCHED_POST ? "t, n" : "col", (long long)J,
              cg_dim_text(c, jdim, t));
    cg_emit(out, "// %s", sb_str(&when));
    sb_free(&when);

    /* what it reads: GEMM results, stored values, then leaves by kind */
    char *listed = g->listed;
    memset(listed, 0, c->nnodes + (size_t)p->ngemms);
    StrBuf items = {0};
    static const char *const kinds[] = {"", "", "input", "state", "param"};
    static const char *const lead[] = {"", "", "T*N, ", "N, ", ""};
    for (int pass = 0; pass < 5; pass++) {
        StrBuf leaves = {0};
        int prev_dim = -1;
        for (int i = 0; i < grp->nnodes + grp->nwrites; i++) {
            IrRef users[3];
            int nu = cg_item_reads(c, grp, i, users);
            for (int u = 0; u < nu; u++) {
                IrRef r = users[u];
                const IrNode *n = &c->nodes[r];
                if (g->computed[r] || n->op == IR_CONST) continue;
                int kind = n->op == IR_MATVEC ? 0 : n->op == IR_INPUT ? 2 : n->op == IR_STATE ? 3 : n->op == IR_PARAM ? 4 : 1;
                if (kind != pass) continue;
                if (kind == 0) {
                    int j = p->node[r].gemm;
                    if (listed[c->nnodes + j]) continue;
                    listed[c->nnodes + j] = 1;
                    const SchedGemm *gm = &p->gemms[j];
                    sb_printf(&items, "%sG%d [%s, ", items.len ? "\n" : "", j, gm->program == SCHED_STEP && !g->post ? "N" : "T*N");
                    cg_put_rows(c, gm, &items);
                    sb_printf(&items, "] in B%d = [", gm->out_buffer);
                    for (int b = 0; b < gm->nproducts; b++)
                        sb_printf(&items, "%s%s", b ? "; " : "",
                                  c->params[c->nodes[c->nodes[gm->products[b]].args[0]].index].name);
                    sb_puts(&items, "] @ ");
                    cg_put_value(c, gm->operand, &items);
                    continue;
                }
                if (listed[r]) continue;
                listed[r] = 1;
                if (kind == 1) {
                    sb_puts(&items, items.len ? "\n" : "");
                    cg_put_value(c, r, &items);
                    sb_printf(&items, " [%s, %s] in B%d (stored by %s group %d)",
                              p->node[r].program == SCHED_STEP && !g->post ? "N" : "T*N", cg_dim_text(c, n->shape.dims[0], t),
                              p->node[r].buffer, sched_program_name(p->node[r].program), p->node[r].group);
                    continue;
                }
                /* leaves of one kind on one line, "params b_i, b_f [H], w [I]" */
                if (prev_dim >= 0 && prev_dim != n->shape.dims[0])
                    sb_printf(&leaves, " [%s%s]", lead[pass], cg_dim_text(c, prev_dim, t));
                sb_printf(&leaves, "%s%s", leaves.len ? ", " : "", cg_node_name(c, r));
                prev_dim = n->shape.dims[0];
            }
        }
        if (leaves.len) {
            sb_printf(&items, "%s%s%s %s [%s%s]", items.len ? "\n" : "", kinds[pass], strchr(sb_str(&leaves), ',') ? "s" : "",
                      sb_str(&leaves), lead[pass], cg_dim_text(c, prev_dim, t));
        }
        if (leaves.failed) items.failed = 1;
        sb_free(&leaves);
    }
    if (items.len) cg_emit_list(out, "reads", &items, NULL);
    items.len = 0;

    for (int i = 0; i < grp->nnodes; i++) {
        const IrNode *n = &c->nodes[grp->nodes[i]];
        sb_printf(&items, "%s%s", i ? "\n" : "", ir_ops[n->op].name);
        if (n->name) sb_printf(&items, " %s", n->name);
    }
    if (items.len) {
        sb_printf(&items, " (%d)", grp->nnodes);
        cg_emit_list(out, "computes", &items, ", ");
    }
    items.len = 0;
    for (int i = 0; i < grp->nnodes; i++) {
        IrRef r = grp->nodes[i];
        if (!p->node[r].stored) continue;
        sb_puts(&items, items.len ? "\n" : "");
        cg_put_value(c, r, &items);
        sb_printf(&items, " [%s, %s] in B%d", grp->program == SCHED_STEP ? "N" : "T*N",
                  cg_dim_text(c, c->nodes[r].shape.dims[0], t), p->node[r].buffer);
    }
    if (items.len) cg_emit_list(out, "stores", &items, ", ");
    items.len = 0;
    for (int w = 0; w < grp->nwrites; w++) {
        const SchedWrite *wr = &grp->writes[w];
        sb_puts(&items, w ? "\n" : "");
        if (wr->kind == WRITE_STATE)
            sb_printf(&items, "state %s' [N, %s]", c->states[wr->index].name,
                      cg_dim_text(c, c->states[wr->index].shape.dims[0], t));
        else
            sb_printf(&items, "output %s [T*N, %s]", c->outputs[wr->index].name,
                      cg_dim_text(c, c->nodes[wr->node].shape.dims[0], t));
    }
    if (items.len) cg_emit_list(out, "writes", &items, ", ");
    int lo, hi;
    cg_group_lines(g, grp, &lo, &hi);
    if (lo == hi && lo) cg_emit(out, "// %-8s line %d of cell %s", "source", lo, c->name);
    else if (lo) cg_emit(out, "// %-8s lines %d-%d of cell %s", "source", lo, hi, c->name);
    if (items.failed) out->failed = 1;
    sb_free(&items);
}

void cg_group_begin(Gen *g, int gi) {
    const SchedGroup *grp = &g->plan->groups[gi];
    memset(g->computed, 0, g->c->nnodes);
    memset(g->loaded, 0, g->c->nnodes);
    for (int i = 0; i < grp->nnodes; i++) g->computed[grp->nodes[i]] = 1;
    g->group = gi;
    g->uses_col = grp->program == SCHED_HOIST;
    g->post = grp->program == SCHED_POST;
    g->group_width = cg_group_width(g->L, gi);
}

int cg_emit_forward_body(Gen *g, int gi, StrBuf *body, int indent) {
    const SchedGroup *grp = &g->plan->groups[gi];
    return cg_emit_body(g, g->out, body, indent, emit_active, grp, cg_group_width(g->L, gi));
}

/* The rest of a step or post kernel's item, whose step is t ("a.t", or a post kernel's own "t"): its
 * sequence's length, what an ended one writes, the position and column it reads, then body. */
static void emit_item_rest(Gen *g, int gi, StrBuf *body, int post) {
    const SchedGroup *grp = &g->plan->groups[gi];
    StrBuf *out = g->out;
    const char *t = post ? "t" : "a.t";
    cg_emit(out, "const int len = a.lengths ? a.lengths[n] : a.T;");
    if (writes_when_finished(g, grp)) {
        cg_open(out, "if (%s >= len) {  // sequence n %s", t,
                post ? "had ended: zero its outputs and stored values" : "has ended: keep its states, zero its outputs and stored values");
        emit_finished(g, grp, cg_group_width(g->L, gi));
        cg_emit(out, "continue;");
        cg_close(out, NULL);
    } else {
        cg_emit(out, "if (%s >= len) continue;  // sequence n %s", t, post ? "had ended" : "has ended");
    }
    if (g->uses_col) cg_emit_position(out, t, post ? "step t read" : "this step reads");
    sb_putn(out, sb_str(body), body->len);
}

void cg_emit_position(StrBuf *out, const char *t, const char *which) {
    cg_emit(out, "const int pos = a.reverse ? len - 1 - %s : %s;  // the position %s", t, t, which);
    cg_emit(out, "const long long col = (long long)pos * a.N + n;  // its column of x, y and hoisted buffers");
}

void cg_emit_step_item(Gen *g, int gi, StrBuf *body) { emit_item_rest(g, gi, body, 0); }

void cg_emit_post_decode(StrBuf *out, const char *jd) {
    cg_emit(out, "const long long tn = i / %s;  // (t - a.t) * N + n", jd);
    cg_emit(out, "const int j = (int)(i %% %s);  // the element", jd);
    cg_emit(out, "const int t = a.t + (int)(tn / a.N);  // the step");
    cg_emit(out, "const long long n = tn %% a.N;  // the sequence");
    cg_emit(out, "const long long tc = (long long)t * a.N + n;  // its column of step and post buffers");
}

/* A post kernel's item (t, n, j) of the steps a.t .. a.t_end-1: as a step's, at column tc. */
static void emit_post_item(Gen *g, int gi, const char *jd, StrBuf *body) {
    cg_emit_post_decode(g->out, jd);
    emit_item_rest(g, gi, body, 1);
}

static int emit_kernel(Gen *g, int gi) {
    const Plan *p = g->plan;
    const IrCell *c = g->c;
    const SchedGroup *grp = &p->groups[gi];
    StrBuf *out = g->out;
    char kname[NAME_SIZE], jd[NAME_SIZE];
    int step = grp->program == SCHED_STEP;
    if (cg_kernel_name(p, gi, kname, sizeof kname) < 0) return 0;
    int64_t J = cg_group_width(g->L, gi);
    int jdim = cg_group_jdim(g, gi);
    if (jdim < 0) return 0;
    cg_dim_code(c, jdim, jd, sizeof jd);

    cg_group_begin(g, gi);
    emit_kernel_comment(g, grp, kname, J, jdim);
    StrBuf body = {0};
    if (!cg_emit_forward_body(g, gi, &body, 2)) return 0;
    int post = grp->program == SCHED_POST;
    cg_open_kernel(out, kname, step ? "(long long)a.N" : post ? "(long long)(a.t_end - a.t) * a.N" : "(long long)a.T * a.N", jd);
    if (post) {
        emit_post_item(g, gi, jd, &body);
    } else if (step) {
        cg_emit(out, "const long long n = i / %s;  // the sequence", jd);
        cg_emit(out, "const int j = (int)(i %% %s);  // the element", jd);
        cg_emit_step_item(g, gi, &body);
    } else {
        cg_emit(out, "const long long col = i / %s;  // the column: position * N + sequence", jd);
        cg_emit(out, "const int j = (int)(i %% %s);  // the element", jd);
        sb_putn(out, sb_str(&body), body.len);
    }
    sb_free(&body);
    cg_close(out, NULL);
    cg_close(out, NULL);
    return 1;
}

/* ---- the translation unit ----------------------------------------------------------------- */

static void emit_header(Gen *g) {
    const Plan *p = g->plan;
    const IrCell *c = g->c;
    StrBuf *out = g->out;
    StrBuf s = {0};
    char k[NAME_SIZE];
    for (int d = 0; d < c->ndims; d++)
        if (c->dims[d].name) sb_printf(&s, " %s=%lld", c->dims[d].name, (long long)g->L->dimval[d]);
    cg_emit(out, "// Generated by rnncc from cell %s (dimensions:%s). Do not edit.", c->name, s.len ? sb_str(&s) : " none");
    cg_emit(out, "// The element-wise kernels of one layer, forward and backward; cuBLAS runs the GEMMs between");
    cg_emit(out, "// them. See docs/codegen.md.");
    s.len = 0;
    for (int gi = 0; gi < p->ngroups; gi++)
        if (cg_kernel_name(p, gi, k, sizeof k) >= 0) sb_printf(&s, " %s", k);
    cg_emit(out, "// rnncc-kernels:%s", sb_str(&s));
    s.len = 0;
    for (int gi = 0; gi < p->ngroups; gi++)
        if (cg_backward_kernel_name(p, gi, k, sizeof k) >= 0) sb_printf(&s, " %s", k);
    cg_emit(out, "// rnncc-backward-kernels:%s", sb_str(&s));
    int post = sched_has_program(p, SCHED_POST); /* the post program's lines only where there is one */
    for (int prog = SCHED_HOIST; prog <= (post ? SCHED_POST : SCHED_STEP); prog++) {
        s.len = 0;
        for (int ph = 0; ph <= p->phases[prog]; ph++) {
            for (int gi = 0; gi < p->ngroups; gi++)
                if ((int)p->groups[gi].program == prog && p->groups[gi].index == ph &&
                    cg_kernel_name(p, gi, k, sizeof k) >= 0)
                    sb_printf(&s, "%s%s", s.len ? ", " : "", k);
            for (int j = 0; j < p->ngemms; j++)
                if ((int)p->gemms[j].program == prog && p->gemms[j].phase == ph)
                    sb_printf(&s, "%sGEMM G%d", s.len ? ", " : "", j);
        }
        cg_emit(out, "// %-27s %s", prog == SCHED_HOIST ? "hoisted, once per layer:" : prog == SCHED_POST ? "post, once, after the loop:" : "step, T times:",
                s.len ? sb_str(&s) : "(nothing)");
    }
    /* the backward: each program's phases in reverse, a group's kernel then the data backward
     * (d operand += W^T d result) of the GEMMs before it; the step program for t = T-1..0 first */
    static const int backward_order[] = {SCHED_POST, SCHED_STEP, SCHED_HOIST};
    for (int o = post ? 0 : 1; o < 3; o++) {
        int prog = backward_order[o];
        s.len = 0;
        for (int ph = p->phases[prog]; ph >= 0; ph--) {
            for (int gi = 0; gi < p->ngroups; gi++)
                if ((int)p->groups[gi].program == prog && p->groups[gi].index == ph &&
                    cg_backward_kernel_name(p, gi, k, sizeof k) >= 0)
                    sb_printf(&s, "%s%s", s.len ? ", " : "", k);
            for (int j = 0; ph > 0 && j < p->ngemms; j++)
                if ((int)p->gemms[j].program == prog && p->gemms[j].phase == ph - 1)
                    sb_printf(&s, "%sGEMM G%d^T", s.len ? ", " : "", j);
        }
        cg_emit(out, "// %-27s %s", prog == SCHED_HOIST ? "backward, hoisted, once:" : prog == SCHED_POST ? "backward, post, once:" : "backward, step, t = T-1..0:",
                s.len ? sb_str(&s) : "(nothing)");
    }
    cg_emit(out, "// %-27s %s", "then the weight gradients:", "per GEMM, dW += d(result) operand^T over every column");
    cg_emit(out, "// Launch each kernel 1-D: %d threads a block, items = N*J (step, backward) or T*N*J",
            CG_BLOCK_SIZE);
    cg_emit(out, "// (hoisted forward), any grid (grid-stride loops); codegen/cg.h has the whole contract.");
    if (post) {
        cg_emit(out, "// Post kernels: items (a.t_end - a.t)*N*J, over the steps a.t .. a.t_end-1; backward N*J where a");
        cg_emit(out, "// kernel sums a parameter's adjoint (each thread walking the steps of its sequence).");
    }
    if (s.failed) out->failed = 1;
    sb_free(&s);
    cg_emit(out, "%s", "");
}

/* The element-wise ops the cell uses, from the op table: value and partial derivatives. */
static void emit_ops(Gen *g) {
    static const char *const params[] = {"", "float a", "float a, float b", "float a, float b, float c"};
    const IrCell *c = g->c;
    char used[IR_OP_COUNT] = {0};
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (ir_op_is_elementwise(c->nodes[i].op) && g->plan->node[i].program != SCHED_NONE) used[c->nodes[i].op] = 1;
    cg_emit(g->out, "// ---- element-wise ops of this cell (ir/ops.def): value, then d/d(operand i) given the result y");
    for (int op = 0; op < IR_OP_COUNT; op++) {
        if (!used[op]) continue;
        const OpInfo *o = &ir_ops[op];
        cg_emit(g->out, "RNN_DEV float rnn_op_%s(%s) { return %s; }", o->name, params[o->arity], o->value);
        for (int i = 0; i < o->arity; i++)
            cg_emit(g->out, "RNN_DEV float rnn_dop_%s_%d(float a, float b, float c, float y) { return %s; }", o->name,
                    i, o->deriv[i]);
    }
    cg_emit(g->out, "%s", "");
}

void cg_emit_preamble(Gen *g) {
    const IrCell *c = g->c;
    sb_puts(g->out, cg_prelude_text);
    cg_emit(g->out, "%s", "");
    cg_emit(g->out, "// ---- bound dimensions");
    for (int d = 0; d < c->ndims; d++)
        if (c->dims[d].name) cg_emit(g->out, "#define RNN_DIM_%s %lld", c->dims[d].name, (long long)g->L->dimval[d]);
    cg_emit(g->out, "%s", "");
    emit_ops(g);
}

/* Where each source line the cell's nodes are on starts (Gen.line_at), found in one pass over the source up
 * to the last of them: a comment quotes its line without scanning from the file's start (which made emitting
 * a cell of n lines O(n^2)). */
static int index_lines(Gen *g, Arena *arena) {
    const Diags *d = g->diags;
    for (uint32_t i = 0; i < g->c->nnodes; i++) {
        int l = g->c->nodes[i].loc.line;
        if (l < 1) continue;
        if (!g->line_lo || l < g->line_lo) g->line_lo = l;
        if (l > g->line_hi) g->line_hi = l;
    }
    if (!d || !d->src || !g->line_lo) return 1;
    const char **at = arena_array(arena, (size_t)(g->line_hi - g->line_lo) + 1, sizeof *at);
    if (!at) return 0;
    const char *p = d->src, *end = d->src + d->srclen;
    for (int l = 1; l <= g->line_hi; l++) {
        if (l >= g->line_lo) at[l - g->line_lo] = p;
        p = src_next_line(p, end);
    }
    g->line_at = at;
    return 1;
}

int cg_gen_init(Gen *g, Arena *arena, const Plan *plan, const PlanLayout *layout, StrBuf *out, Diags *diags) {
    const IrCell *c = plan->cell;
    *g = (Gen){.plan = plan, .L = layout, .c = c, .diags = diags, .out = out};
    g->computed = arena_alloc(arena, c->nnodes + 1u);
    g->loaded = arena_alloc(arena, c->nnodes + 1u);
    g->listed = arena_alloc(arena, c->nnodes + (size_t)plan->ngemms + 1u);
    g->sent = arena_alloc(arena, c->nnodes + 1u);
    g->first = arena_alloc(arena, (c->nnodes + 1u) * sizeof *g->first);
    g->first_seed = arena_alloc(arena, c->nnodes + 1u);
    if (!g->computed || !g->loaded || !g->listed || !g->sent || !g->first || !g->first_seed || !index_lines(g, arena)) {
        diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory while generating code for cell '%s'", c->name);
        return 0;
    }
    return check_names(g);
}

int cg_emit_unit(Arena *arena, const Plan *plan, const PlanLayout *layout, int parts, StrBuf *out, Diags *diags) {
    const IrCell *c = plan->cell;
    Gen g;
    if (!cg_gen_init(&g, arena, plan, layout, out, diags)) return 0;
    g.twins = 1;
    g.split_twins = 1;
    int errors = diags->nerrors;
    emit_header(&g);
    cg_emit_preamble(&g);
    int gi;
    for (gi = 0; (parts & CG_UNIT_FORWARD) && gi < plan->ngroups; gi++) {
        if (gi) cg_emit(out, "%s", "");
        if (!emit_kernel(&g, gi)) goto fail;
    }
    if (parts & CG_UNIT_BACKWARD) {
        if (parts & CG_UNIT_FORWARD) cg_emit(out, "%s", "");
        cg_emit(out, "%s", CG_BACKWARD_MARK);
        for (gi = 0; gi < plan->ngroups; gi++) {
            cg_emit(out, "%s", "");
            if (!cg_emit_backward_kernel(&g, gi)) goto fail;
        }
    }
    if (out->failed) goto nomem;
    return 1;
fail:
    if (diags->nerrors == errors) diag_error(diags, c->loc, "cannot generate code for cell '%s' (group %d)", c->name, gi);
    return 0;
nomem:
    diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory while generating code for cell '%s'", c->name);
    return 0;
}

int cg_emit_forward(Arena *arena, const Plan *plan, const PlanLayout *layout, StrBuf *out, Diags *diags) {
    return cg_emit_unit(arena, plan, layout, CG_UNIT_WHOLE, out, diags);
}

int cg_emit_convert(StrBuf *out, unsigned what) {
    if (what & ~(unsigned)CG_CONVERT_ALL) return 0;
    sb_printf(out, "// Generated by rnncc: the state staging (twins in %s, where a model has them)%s%s%s. Do not edit.\n",
              what & CG_CONVERT_BF16 ? "bf16" : "fp16", what & CG_CONVERT_HALF ? ", the fp32 -> 16-bit operand conversion" : "",
              what & CG_CONVERT_X3 ? ", the tf32x3 split" : "", what & CG_CONVERT_FOLD ? ", the projection fold's columns" : "");
    sb_puts(out, cg_prelude_text);
    sb_printf(out, "\n#define RNN_CONVERT_ITEMS %d\n#define RNN_CONVERT_BF16 %d\n#define RNN_CONVERT_HALF %d\n"
                   "#define RNN_CONVERT_X3 %d\n#define RNN_CONVERT_FOLD %d\n",
              CG_CONVERT_ITEMS, !!(what & CG_CONVERT_BF16), !!(what & CG_CONVERT_HALF), !!(what & CG_CONVERT_X3),
              !!(what & CG_CONVERT_FOLD));
    sb_puts(out, cg_convert_text);
    return !out->failed;
}

/* ---- the launch contract's helpers ------------------------------------------------------- */

int cg_name_kernel(const Plan *plan, int group, const char *kind, char *buf, size_t size) {
    if (!plan || group < 0 || group >= plan->ngroups || !buf || size == 0) return -1;
    const SchedGroup *g = &plan->groups[group];
    int n = snprintf(buf, size, "rnncc_%s_%s%c%d", plan->cell->name, kind,
                     g->program == SCHED_HOIST ? 'h' : g->program == SCHED_POST ? 'p' : 's', g->index);
    if (n < 0 || (size_t)n >= size) {
        buf[0] = 0;
        return -1;
    }
    return n;
}

int cg_kernel_name(const Plan *plan, int group, char *buf, size_t size) { return cg_name_kernel(plan, group, "", buf, size); }

int64_t cg_group_width(const PlanLayout *layout, int group) {
    const Plan *p = layout->plan;
    if (group < 0 || group >= p->ngroups) return -1;
    const SchedGroup *g = &p->groups[group];
    int64_t J = 1;
    for (int i = 0; i < g->nnodes; i++) {
        int64_t len = ir_node_len(p->cell, g->nodes[i], layout->dimval);
        if (len > J) J = len;
    }
    for (int w = 0; w < g->nwrites; w++) {
        int64_t len = ir_node_len(p->cell, g->writes[w].node, layout->dimval);
        if (len > J) J = len;
    }
    return J;
}

int64_t cg_items(const PlanLayout *layout, int group, int64_t T, int64_t N, int backward) {
    int64_t J = layout ? cg_group_width(layout, group) : -1, r;
    if (J < 0 || T < 0 || N < 0) return -1;
    if (__builtin_mul_overflow(N, J, &r)) return -1;
    /* a hoisted or post forward kernel covers every step's columns (a post one's T: its window's steps); their
     * backward kernels' threads loop over them, but a post one's where it sums no parameter's adjoint */
    const SchedProgram prog = layout->plan->groups[group].program;
    const int every = prog != SCHED_STEP && (!backward || (prog == SCHED_POST && !cg_post_backward_walks(layout->plan, group)));
    if (every && __builtin_mul_overflow(r, T, &r)) return -1;
    return r;
}

int64_t cg_group_items(const PlanLayout *layout, int group, int64_t T, int64_t N) { return cg_items(layout, group, T, N, 0); }

unsigned cg_grid_blocks(int64_t items) {
    if (items <= CG_BLOCK_SIZE) return 1;
    int64_t blocks = (items - 1) / CG_BLOCK_SIZE + 1;
    return blocks > CG_MAX_GRID_BLOCKS ? CG_MAX_GRID_BLOCKS : (unsigned)blocks;
}

int cg_emit_body(Gen *g, StrBuf *out, StrBuf *body, int indent, int (*emit)(Gen *, const SchedGroup *, int64_t),
                 const SchedGroup *grp, int64_t J) {
    body->indent = indent;
    g->out = body;
    int ok = emit(g, grp, J);
    g->out = out;
    if (body->failed) out->failed = 1;
    if (!ok) sb_free(body);
    return ok;
}

void cg_open_kernel(StrBuf *out, const char *kname, const char *items_per_element, const char *J) {
    cg_emit(out, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const RnnArgs a)", CG_BLOCK_SIZE, kname);
    cg_open(out, "{");
    cg_emit(out, "RNN_AFTER_PREDECESSOR();");
    cg_emit(out, "const long long items = %s * %s;", items_per_element, J);
    cg_emit(out, "for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < items;");
    cg_open(out, "     i += (long long)gridDim.x * blockDim.x) {");
}
