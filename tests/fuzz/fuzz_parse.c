/* libFuzzer target for the front end: compile any bytes, render the diagnostics, dump every
 * cell that compiles (text and dot); a fresh arena each time, everything freed.
 * Key idea: it also aborts on broken promises (an error without a module or the reverse, a
 * non-topological IR, a dump holding a name or byte the checker should have refused). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/ir.h"
#include "fuzz_util.h"

static int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* The rule every name that reaches an output obeys (ir/build.c check_name). */
static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 64 || !is_alpha(s[0]) || strstr(s, "__")) return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '_') return 0;
    return 1;
}

static void check_cell(const IrCell *c) {
    CHECK(name_ok(c->name));
    for (int i = 0; i < c->ndims; i++) CHECK(!c->dims[i].name ? c->dims[i].literal > 0 : name_ok(c->dims[i].name));
    CHECK(c->ninputs == 1);
    for (int k = 0; k < c->ninputs; k++) CHECK(name_ok(c->inputs[k].name) && c->inputs[k].node < c->nnodes);
    for (int k = 0; k < c->nparams; k++) CHECK(name_ok(c->params[k].name) && c->params[k].node < c->nnodes);
    for (int k = 0; k < c->nstates; k++) {
        CHECK(name_ok(c->states[k].name));
        CHECK(c->states[k].node < c->nnodes && c->states[k].next < c->nnodes);
        CHECK(c->states[k].shape.kind == IR_VECTOR);
    }
    CHECK(c->noutputs > 0);
    for (int k = 0; k < c->noutputs; k++) {
        CHECK(name_ok(c->outputs[k].name) && c->outputs[k].node < c->nnodes);
        CHECK(c->nodes[c->outputs[k].node].shape.kind == IR_VECTOR);
    }
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const IrNode *n = &c->nodes[i];
        CHECK(n->op < IR_OP_COUNT);
        for (int a = 0; a < ir_ops[n->op].arity; a++) CHECK(n->args[a] < i);
        for (int d = 0; d < (n->shape.kind == IR_MATRIX ? 2 : n->shape.kind == IR_VECTOR ? 1 : 0); d++)
            CHECK(n->shape.dims[d] >= 0 && n->shape.dims[d] < c->ndims);
        if (n->op == IR_MATVEC) CHECK(c->nodes[n->args[0]].op == IR_PARAM && c->nodes[n->args[0]].shape.kind == IR_MATRIX);
        if (n->op != IR_PARAM) CHECK(n->shape.kind != IR_MATRIX);
    }
    /* Bind every symbol to 3: it must succeed. */
    const char **specs = calloc((size_t)c->ndims + 1, sizeof *specs);
    char (*text)[80] = calloc((size_t)c->ndims + 1, sizeof *text);
    CHECK(specs && text);
    int n = 0;
    for (int i = 0; i < c->ndims; i++)
        if (c->dims[i].name) {
            snprintf(text[n], sizeof text[n], "%s=3", c->dims[i].name);
            specs[n] = text[n];
            n++;
        }
    int64_t *dimval = calloc((size_t)c->ndims + 1, sizeof *dimval);
    Arena a;
    arena_init(&a);
    Diags d;
    diag_init(&d, &a, "bind", NULL, 0);
    CHECK(dimval && ir_bind_dims(c, specs, n, dimval, &d) && d.nerrors == 0);
    arena_free(&a);
    free(dimval);
    free(text);
    free(specs);

    StrBuf sb = {0};
    ir_dump(c, &sb);
    CHECK(!sb.failed && text_ok(&sb));
    sb_free(&sb);
    ir_dump_dot(c, &sb);
    CHECK(!sb.failed && text_ok(&sb));
    sb_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Arena arena;
    Diags diags;
    const IrModule *m = fuzz_compile_input(&arena, &diags, data, size);
    StrBuf sb = {0};
    diag_render(&diags, &sb);
    CHECK(!sb.failed);
    sb_free(&sb);
    if (m) {
        CHECK(diags.nerrors == 0 && m->ncells > 0);
        for (int i = 0; i < m->ncells; i++) check_cell(m->cells[i]);
    } else {
        CHECK(diags.nerrors > 0);
    }
    arena_free(&arena);
    return 0;
}
