/* Text and Graphviz dumps of a cell's IR.
 * Key idea: the text form is stable (ids, names, shapes, source lines) for golden tests. */
#include <stdio.h>
#include <string.h>

#include "ir.h"

static void put_shape(const IrCell *c, const IrShape *s, StrBuf *out) {
    char a[32], b[32];
    if (s->kind == IR_SCALAR) sb_puts(out, "[]");
    else if (s->kind == IR_VECTOR) sb_printf(out, "[%s]", ir_dim_text(c, s->dims[0], a, sizeof a));
    else sb_printf(out, "[%s, %s]", ir_dim_text(c, s->dims[0], a, sizeof a), ir_dim_text(c, s->dims[1], b, sizeof b));
}

static const char *leaf_name(const IrCell *c, const IrNode *n) {
    switch (n->op) {
    case IR_INPUT: return c->inputs[n->index].name;
    case IR_STATE: return c->states[n->index].name;
    case IR_PARAM: return c->params[n->index].name;
    default: return NULL;
    }
}

void ir_dump(const IrCell *c, StrBuf *out) {
    sb_printf(out, "cell %s\n", c->name);
    sb_puts(out, "  dims");
    for (int i = 0; i < c->ndims; i++) {
        char t[32];
        sb_printf(out, " %s", ir_dim_text(c, i, t, sizeof t));
    }
    sb_putc(out, '\n');
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        StrBuf line = {0};
        sb_printf(&line, "  %%%u = %s", i, ir_ops[n->op].name);
        if (n->op == IR_CONST) sb_printf(&line, " %.17g", n->value);
        else if (leaf_name(c, n)) sb_printf(&line, " %s", leaf_name(c, n));
        for (int a = 0; a < ir_ops[n->op].arity; a++) sb_printf(&line, "%s%%%u", a ? ", " : " ", n->args[a]);
        sb_puts(&line, " : ");
        put_shape(c, &n->shape, &line);
        sb_printf(out, "%-44s", sb_str(&line));
        sb_free(&line);
        if (n->name) sb_printf(out, "  ; %s", n->name);
        if (n->loc.line) sb_printf(out, "%s line %d", n->name ? "," : "  ;", n->loc.line);
        sb_putc(out, '\n');
    }
    for (int k = 0; k < c->nstates; k++) sb_printf(out, "  next %s = %%%u\n", c->states[k].name, c->states[k].next);
    for (int k = 0; k < c->noutputs; k++) sb_printf(out, "  output %s = %%%u\n", c->outputs[k].name, c->outputs[k].node);
}

void ir_dump_dot(const IrCell *c, StrBuf *out) {
    sb_printf(out, "digraph \"%s\" {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n", c->name);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        const char *shape = n->op == IR_PARAM ? "box" : n->op == IR_INPUT || n->op == IR_STATE ? "invhouse"
                          : n->op == IR_MATVEC ? "doubleoctagon" : n->op == IR_CONST ? "plaintext" : "ellipse";
        sb_printf(out, "  n%u [shape=%s, label=\"", i, shape);
        if (n->op == IR_CONST) sb_printf(out, "%g", n->value);
        else if (leaf_name(c, n)) sb_printf(out, "%s %s", ir_ops[n->op].name, leaf_name(c, n));
        else sb_printf(out, "%s%s%s", n->name ? n->name : "", n->name ? " = " : "", n->op == IR_MATVEC ? "@" : ir_ops[n->op].name);
        sb_puts(out, "\"];\n");
        for (int a = 0; a < ir_ops[n->op].arity; a++) sb_printf(out, "  n%u -> n%u;\n", n->args[a], i);
    }
    for (int k = 0; k < c->nstates; k++) {
        sb_printf(out, "  next%d [shape=house, label=\"%s'\"];\n  n%u -> next%d;\n", k, c->states[k].name, c->states[k].next, k);
        sb_printf(out, "  next%d -> n%u [style=dashed, constraint=false, label=\"next step\"];\n", k, c->states[k].node);
    }
    for (int k = 0; k < c->noutputs; k++)
        sb_printf(out, "  out%d [shape=house, label=\"output %s\"];\n  n%u -> out%d;\n", k, c->outputs[k].name, c->outputs[k].node, k);
    sb_puts(out, "}\n");
}
