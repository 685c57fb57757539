/* Small queries over a checked cell: finding cells and dimensions, sizes of shapes,
 * and binding symbolic dimensions to values. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

const IrCell *ir_find_cell(const IrModule *m, const char *name) {
    if (!m) return NULL;
    if (!name) return m->ncells == 1 ? m->cells[0] : NULL;
    for (int i = 0; i < m->ncells; i++)
        if (strcmp(m->cells[i]->name, name) == 0) return m->cells[i];
    return NULL;
}

int ir_find_dim(const IrCell *c, const char *name) {
    for (int i = 0; i < c->ndims; i++)
        if (c->dims[i].name && strcmp(c->dims[i].name, name) == 0) return i;
    return -1;
}

const char *ir_dim_text(const IrCell *c, int dim, char *buf, int bufsize) {
    if (c->dims[dim].name) snprintf(buf, (size_t)bufsize, "%s", c->dims[dim].name);
    else snprintf(buf, (size_t)bufsize, "%lld", (long long)c->dims[dim].literal);
    return buf;
}

int64_t ir_shape_numel(const IrShape *s, const int64_t *dimval) {
    switch (s->kind) {
    case IR_SCALAR: return 1;
    case IR_VECTOR: return dimval[s->dims[0]];
    default: return dimval[s->dims[0]] * dimval[s->dims[1]];
    }
}

int64_t ir_node_len(const IrCell *c, IrRef ref, const int64_t *dimval) {
    return ir_shape_numel(&c->nodes[ref].shape, dimval);
}

int ir_cell_kinks(const IrCell *c, char *buf, size_t size) {
    int n = 0, seen[IR_OP_COUNT] = {0};
    size_t at = 0;
    if (size) buf[0] = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        IrOp op = c->nodes[i].op;
        if (seen[op] || !ir_op_has_kink(op)) continue;
        seen[op] = 1;
        n++;
        int w = snprintf(buf + at, at < size ? size - at : 0, "%s%s", n > 1 ? ", " : "", ir_ops[op].name);
        if (w > 0) at += (size_t)w;
        if (at >= size) at = size ? size - 1 : 0;
    }
    return n;
}

int ir_bind_dims(const IrCell *c, const char *const *specs, int nspecs, int64_t *dimval, Diags *diags) {
    int ok = 1;
    for (int i = 0; i < c->ndims; i++) dimval[i] = c->dims[i].name ? 0 : c->dims[i].literal;
    for (int k = 0; k < nspecs; k++) {
        const char *eq = strchr(specs[k], '=');
        if (!eq || eq == specs[k]) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "dimension binding '%s' is not NAME=VALUE", specs[k]);
            ok = 0;
            continue;
        }
        char name[80];
        if (eq - specs[k] >= (ptrdiff_t)sizeof name) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "dimension binding '%.40s...': the name is longer than %d characters",
                       specs[k], (int)sizeof name - 1);
            ok = 0;
            continue;
        }
        snprintf(name, sizeof name, "%.*s", (int)(eq - specs[k]), specs[k]);
        int d = ir_find_dim(c, name);
        if (d < 0) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "cell '%s' has no dimension '%s'", c->name, name);
            ok = 0;
            continue;
        }
        long long v;
        if (!ir_parse_int(eq + 1, 1, INT32_MAX, &v)) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "dimension %s must be a positive integer below 2^31, not '%s'",
                       name, eq + 1);
            ok = 0;
            continue;
        }
        if (dimval[d] && dimval[d] != v && c->dims[d].name) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "dimension %s is bound twice, to %lld and to %lld", name,
                       (long long)dimval[d], v);
            ok = 0;
            continue;
        }
        dimval[d] = v;
    }
    /* Unbound symbols, all of them, unless a binding was already wrong. */
    int specs_ok = ok;
    for (int i = 0; i < c->ndims; i++)
        if (dimval[i] == 0 && specs_ok) {
            diag_error(diags, (SrcLoc){0, 0, 1}, "dimension %s of cell '%s' is not bound (use %s=VALUE)",
                       c->dims[i].name, c->name, c->dims[i].name);
            ok = 0;
        }
    return ok;
}

int ir_parse_int(const char *text, long long lo, long long hi, long long *out) {
    if (!text || !*text) return 0;
    for (const char *p = text; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}
