/* parity --reference: rnncc's double-precision reference (ir/ref_stack.c) on a case, no GPU (tests/parity/README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "ir/ir.h"
#include "ir/ref.h"
#include "parity.h"

/* Runs rnncc's double-precision reference (ir/ref_stack.c, the oracle of every GPU check) on the case, from the same
 * mapping table, so that its cell file and the table are checked against PyTorch without a GPU: the cell compiled
 * from cells_dir, its parameters in declaration order per unit (their offsets in r->dw packed in that order), one
 * forward (r->ty stays NULL) and, when the case has them, the gradients. Returns 0 done, EXIT_FAIL on an error. */
int run_reference(const Case *c, const char *cells_dir, Results *r) {
    int status = EXIT_FAIL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.cell", cells_dir, c->spec->name);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "parity: error: cannot open %s (run from the repository root or pass --cells)\n", path); return EXIT_FAIL; }
    Arena arena;
    arena_init(&arena);
    StrBuf text = {0}, log = {0};
    int read_error = sb_read(&text, f, (size_t)1 << 30);
    fclose(f);
    if (read_error) { /* before anything compiles what was read of it */
        fprintf(stderr, "parity: error: reading %s: %s\n", path, strerror(read_error));
        sb_free(&text);
        arena_free(&arena);
        return EXIT_FAIL;
    }
    Diags diags;
    diag_init(&diags, &arena, path, sb_str(&text), text.len);
    const IrModule *mod = ir_compile(&arena, &diags, sb_str(&text), text.len);
    const IrCell *cell = mod ? ir_find_cell(mod, NULL) : NULL;
    int units = c->layers * c->dirs, nparams = cell ? cell->nparams : 0;
    double ***params = NULL, ***dparams = NULL, **dparam_at = NULL;
    int64_t *dimval[2] = {NULL, NULL}, *lengths = NULL;
    if (!cell) {
        diag_render(&diags, &log);
        fprintf(stderr, "%sparity: error: %s does not compile to one cell\n", sb_str(&log), path);
        goto out;
    }
    /* layer 0 reads I; layers > 0 read the layer below's output, both directions */
    char spec[3][32];
    const char *specs[3] = {spec[0], spec[1], spec[2]};
    for (int layer = 0; layer < 2; layer++) {
        snprintf(spec[0], sizeof spec[0], "I=%d", layer ? c->dirs * c->O : c->I);
        snprintf(spec[1], sizeof spec[1], "H=%d", c->H);
        snprintf(spec[2], sizeof spec[2], "P=%d", c->P);
        if (!(dimval[layer] = calloc((size_t)cell->ndims + 1, sizeof(int64_t)))) goto oom;
        if (!ir_bind_dims(cell, specs, c->spec->proj ? 3 : 2, dimval[layer], &diags)) {
            diag_render(&diags, &log);
            fprintf(stderr, "%sparity: error: binding %s's dimensions\n", sb_str(&log), path);
            goto out;
        }
    }
    if (cell->nstates != c->spec->nstates || cell->ninputs != 1 || cell->noutputs < 1 ||
        ir_node_len(cell, cell->outputs[0].node, dimval[0]) != c->O) {
        fprintf(stderr, "parity: error: %s has %d states, %d inputs and %d outputs (the first of %lld); expected %d states, one "
                "input, an output of %d\n", path, cell->nstates, cell->ninputs, cell->noutputs,
                cell->noutputs ? (long long)ir_node_len(cell, cell->outputs[0].node, dimval[0]) : 0LL, c->spec->nstates, c->O);
        goto out;
    }
    for (int k = 0; k < cell->nstates; k++)
        if (ir_shape_numel(&cell->states[k].shape, dimval[0]) != state_size(c, k)) {
            fprintf(stderr, "parity: error: %s's state %s has %lld values; PyTorch's has %d\n", path, cell->states[k].name,
                    (long long)ir_shape_numel(&cell->states[k].shape, dimval[0]), state_size(c, k));
            goto out;
        }
    if (nparams != c->spec->nmap) {
        fprintf(stderr, "parity: error: %s has %d parameters; the %s table maps %d\n", path, nparams, c->spec->name, c->spec->nmap);
        goto out;
    }
    /* every parameter of every unit from PyTorch's tensors; rnncc_param_info as the model would report it */
    if (!(params = calloc((size_t)units, sizeof *params)) || !(r->info = calloc((size_t)(units * nparams) + 1, sizeof *r->info)))
        goto oom;
    r->nw = 0;
    for (int u = 0; u < units; u++)
        for (int k = 0; k < nparams; k++) {
            const IrShape *sh = &cell->params[k].shape;
            const int64_t *dv = dimval[u / c->dirs > 0];
            rnncc_param_info info = {cell->params[k].name, u / c->dirs, u % c->dirs, dv[sh->dims[0]],
                                     sh->kind == IR_MATRIX ? dv[sh->dims[1]] : 1, r->nw};
            r->info[r->ninfo] = info;
            if (!(r->info[r->ninfo].name = strdup(info.name))) goto oom;
            r->ninfo++;
            r->nw += info.rows * info.cols;
        }
    for (int u = 0; u < units; u++) {
        if (!(params[u] = calloc((size_t)nparams + 1, sizeof *params[u]))) goto oom;
        for (int k = 0; k < nparams; k++) {
            const rnncc_param_info *info = &r->info[u * nparams + k];
            if (!(params[u][k] = malloc((size_t)(info->rows * info->cols) * sizeof(double) + sizeof(double)))) goto oom;
            if (!fill_param(c, info, params[u][k])) goto out;
        }
    }
    if (c->lengths) {
        if (!(lengths = calloc((size_t)c->N, sizeof *lengths))) goto oom;
        for (int n = 0; n < c->N; n++) lengths[n] = c->lengths[n];
    }
    RefStack st = {cell, {dimval[0], dimval[1]}, c->layers, c->dirs, c->T, c->N, lengths, c->x.v,
                   (const double *const *const *)params, (const double *const *)(const double *[MAX_STATES]){c->h0[0].v, c->h0[1].v}};
    double *ys[MAX_OUTPUTS] = {NULL};
    int64_t state_n[MAX_STATES] = {0, 0};
    if (!(ys[0] = r->y = malloc((size_t)c->y[REF64].n * sizeof(double) + sizeof(double)))) goto oom;
    for (int k = 0; k < c->spec->nstates; k++) {
        state_n[k] = (int64_t)units * c->N * state_size(c, k);
        if (!(r->hT[k] = malloc((size_t)state_n[k] * sizeof(double) + sizeof(double)))) goto oom;
    }
    if (ref_stack_forward(&st, ys, r->hT) != 0) { fprintf(stderr, "parity: error: the reference forward failed\n"); goto out; }
    if (c->backward) {
        const double *dys[MAX_OUTPUTS] = {c->dy.v}, *dhTs[MAX_STATES] = {c->dhT[0].v, c->dhT[1].v};
        if (!(dparams = calloc((size_t)units, sizeof *dparams)) ||
            !(dparam_at = calloc((size_t)(units * nparams) + 1, sizeof *dparam_at)) ||
            !(r->dx = malloc((size_t)c->x.n * sizeof(double) + sizeof(double))) ||
            !(r->dw = malloc((size_t)r->nw * sizeof(double) + sizeof(double))))
            goto oom;
        for (int k = 0; k < c->spec->nstates; k++)
            if (!(r->dh0[k] = malloc((size_t)state_n[k] * sizeof(double) + sizeof(double)))) goto oom;
        for (int u = 0; u < units; u++) { /* unit u's gradients where its parameters' offsets say, in r->dw */
            dparams[u] = dparam_at + u * nparams;
            for (int k = 0; k < nparams; k++) dparams[u][k] = r->dw + r->info[u * nparams + k].offset;
        }
        if (ref_stack_backward(&st, dys, dhTs, r->dx, r->dh0, (double *const *const *)dparams) != 0) {
            fprintf(stderr, "parity: error: the reference backward failed\n");
            goto out;
        }
    }
    status = 0;
    goto out;
oom:
    fprintf(stderr, "parity: error: out of memory\n");
out:
    for (int u = 0; params && u < units; u++) {
        for (int k = 0; params[u] && k < nparams; k++) free(params[u][k]);
        free(params[u]);
    }
    free(params);
    free(dparams);
    free(dparam_at);
    free(lengths);
    free(dimval[0]);
    free(dimval[1]);
    sb_free(&text);
    sb_free(&log);
    arena_free(&arena);
    return status;
}
