/* Multi-layer and bidirectional forward in double precision, composed from ref_forward.
 * Key idea: nothing new is computed here; only sequences are reversed and concatenated,
 * so the stack is as trustworthy as the single-layer reference. */
#include <stdlib.h>
#include <string.h>

#include "ref.h"

void ref_reverse_sequences(const double *in, double *out, int64_t T, int64_t N, int64_t D, const int64_t *len) {
    memset(out, 0, (size_t)(T * N * D) * sizeof *out);
    for (int64_t n = 0; n < N; n++) {
        int64_t L = len ? len[n] : T;
        for (int64_t t = 0; t < L; t++)
            memcpy(out + ((L - 1 - t) * N + n) * D, in + (t * N + n) * D, (size_t)D * sizeof *out);
    }
}

static double *zalloc(int64_t n) { return n >= 0 ? calloc((size_t)n + 1, sizeof(double)) : NULL; }

/* Runs one direction of one layer; writes its outputs into columns [d*D, (d+1)*D) of the
 * concatenated outputs and its final states into the unit's slice of hT. */
static int run_unit(const RefStack *s, int l, int d, const double *xin, int64_t I, double **ycat, double *const *hT) {
    const IrCell *c = s->cell;
    const int64_t *dv = s->dimval[l > 0];
    int u = l * s->dirs + d, rc = -1;
    int64_t T = s->T, N = s->N;
    double **y = calloc((size_t)c->noutputs + 1, sizeof *y), **h = calloc((size_t)c->nstates + 1, sizeof *h);
    const double **h0 = calloc((size_t)c->nstates + 1, sizeof *h0);
    double *xr = d ? zalloc(T * N * I) : NULL;
    if (!y || !h || !h0 || (d && !xr)) goto out;
    for (int o = 0; o < c->noutputs; o++)
        if (!(y[o] = zalloc(T * N * ir_node_len(c, c->outputs[o].node, dv)))) goto out;
    for (int k = 0; k < c->nstates; k++) {
        int64_t S = ir_shape_numel(&c->states[k].shape, dv);
        if (!(h[k] = zalloc(N * S))) goto out;
        h0[k] = s->h0 && s->h0[k] ? s->h0[k] + (size_t)(u * N * S) : NULL;
    }
    if (d) ref_reverse_sequences(xin, xr, T, N, I, s->lengths);
    RefProblem p = {c, dv, T, N, s->lengths, d ? xr : xin, h0, s->params[u]};
    if (ref_forward(&p, y, h) != 0) goto out;
    for (int o = 0; o < c->noutputs; o++) {
        int64_t D = ir_node_len(c, c->outputs[o].node, dv);
        double *src = y[o], *tmp = NULL;
        if (d) {
            if (!(tmp = zalloc(T * N * D))) goto out;
            ref_reverse_sequences(y[o], tmp, T, N, D, s->lengths);
            src = tmp;
        }
        for (int64_t i = 0; ycat[o] && i < T * N; i++)
            memcpy(ycat[o] + i * D * s->dirs + d * D, src + i * D, (size_t)D * sizeof(double));
        free(tmp);
    }
    for (int k = 0; hT && k < c->nstates; k++) {
        int64_t S = ir_shape_numel(&c->states[k].shape, dv);
        if (hT[k]) memcpy(hT[k] + (size_t)(u * N * S), h[k], (size_t)(N * S) * sizeof(double));
    }
    rc = 0;
out:
    for (int o = 0; y && o < c->noutputs; o++) free(y[o]);
    for (int k = 0; h && k < c->nstates; k++) free(h[k]);
    free(y); free(h); free(h0); free(xr);
    return rc;
}

int ref_stack_forward(const RefStack *s, double *const *y, double *const *hT) {
    if (!s || !s->cell || !s->x || !s->params || s->layers < 1 || s->dirs < 1 || s->dirs > 2 || s->T < 0 || s->N < 0)
        return -1;
    const IrCell *c = s->cell;
    int rc = -1;
    double **cat = calloc((size_t)c->noutputs + 1, sizeof *cat);
    const double *xin = s->x;
    double *prev = NULL;
    if (!cat) return -1;
    for (int l = 0; l < s->layers; l++) {
        const int64_t *dv = s->dimval[l > 0];
        int64_t I = ir_shape_numel(&c->inputs[0].shape, dv);
        int last = l == s->layers - 1;
        for (int o = 0; o < c->noutputs; o++) {
            cat[o] = last ? (y ? y[o] : NULL) : o == 0 ? zalloc(s->T * s->N * ir_node_len(c, c->outputs[0].node, dv) * s->dirs) : NULL;
            if (!last && o == 0 && !cat[0]) goto out;
        }
        for (int d = 0; d < s->dirs; d++)
            if (run_unit(s, l, d, xin, I, cat, hT) != 0) { if (!last) free(cat[0]); goto out; }
        free(prev);
        prev = last ? NULL : cat[0];
        xin = prev;
    }
    rc = 0;
out:
    free(prev);
    free(cat);
    return rc;
}

/* Each layer's input, kept by a forward pass of the stack: [layers] of [T][N][I_l]. */
static double **layer_inputs(const RefStack *s) {
    const IrCell *c = s->cell;
    double **in = calloc((size_t)s->layers, sizeof *in);
    if (!in) return NULL;
    in[0] = (double *)s->x;
    for (int l = 1; l < s->layers; l++) {
        int64_t D = ir_node_len(c, c->outputs[0].node, s->dimval[l - 1 > 0]) * s->dirs;
        double **cat = calloc((size_t)c->noutputs + 1, sizeof *cat);
        in[l] = zalloc(s->T * s->N * D);
        if (!cat || !in[l]) { free(cat); goto fail; }
        cat[0] = in[l];
        for (int d = 0; d < s->dirs; d++)
            if (run_unit(s, l - 1, d, in[l - 1], ir_shape_numel(&c->inputs[0].shape, s->dimval[l - 1 > 0]), cat, NULL) != 0) {
                free(cat);
                goto fail;
            }
        free(cat);
    }
    return in;
fail:
    for (int l = 1; l < s->layers; l++) free(in[l]);
    free(in);
    return NULL;
}

int ref_stack_backward(const RefStack *s, const double *const *dy, const double *const *dhT, double *dx,
                       double *const *dh0, double *const *const *dparams) {
    if (!s || !s->cell || !s->x || !s->params || s->layers < 1 || s->dirs < 1 || s->dirs > 2 || s->T < 0 || s->N < 0)
        return -1;
    const IrCell *c = s->cell;
    int64_t T = s->T, N = s->N;
    int rc = -1;
    double **in = layer_inputs(s);
    double *dcat = NULL; /* adjoint of the current layer's first output, [T][N][D0*dirs] */
    double **ydir = calloc((size_t)c->noutputs + 1, sizeof *ydir);
    const double **h0 = calloc((size_t)c->nstates + 1, sizeof *h0), **dhTu = calloc((size_t)c->nstates + 1, sizeof *dhTu);
    double **dh0u = calloc((size_t)c->nstates + 1, sizeof *dh0u);
    if (!in || !ydir || !h0 || !dhTu || !dh0u) goto out;
    for (int l = s->layers - 1; l >= 0; l--) {
        const int64_t *dv = s->dimval[l > 0];
        int64_t I = ir_shape_numel(&c->inputs[0].shape, dv);
        double *dxl = l == 0 ? dx : zalloc(T * N * I), *xr = zalloc(T * N * I), *dxd = zalloc(T * N * I);
        if ((l > 0 && !dxl) || !xr || !dxd) { if (l > 0) free(dxl); free(xr); free(dxd); goto out; }
        if (dxl) memset(dxl, 0, (size_t)(T * N * I) * sizeof(double));
        for (int d = 0; d < s->dirs; d++) {
            int u = l * s->dirs + d;
            int ok = 1;
            for (int o = 0; o < c->noutputs; o++) { /* this direction's columns of each output adjoint */
                int64_t D = ir_node_len(c, c->outputs[o].node, dv);
                const double *src = l == s->layers - 1 ? (dy ? dy[o] : NULL) : o == 0 ? dcat : NULL;
                free(ydir[o]);
                ydir[o] = zalloc(T * N * D);
                double *tmp = zalloc(T * N * D);
                if (!ydir[o] || !tmp) { free(tmp); ok = 0; break; }
                for (int64_t i = 0; src && i < T * N; i++) memcpy(tmp + i * D, src + i * D * s->dirs + d * D, (size_t)D * sizeof(double));
                if (d) ref_reverse_sequences(tmp, ydir[o], T, N, D, s->lengths);
                else memcpy(ydir[o], tmp, (size_t)(T * N * D) * sizeof(double));
                free(tmp);
            }
            for (int k = 0; ok && k < c->nstates; k++) {
                int64_t S = ir_shape_numel(&c->states[k].shape, dv);
                h0[k] = s->h0 && s->h0[k] ? s->h0[k] + u * N * S : NULL;
                dhTu[k] = dhT && dhT[k] ? dhT[k] + u * N * S : NULL;
                dh0u[k] = dh0 && dh0[k] ? dh0[k] + u * N * S : NULL;
            }
            if (d) ref_reverse_sequences(in[l], xr, T, N, I, s->lengths);
            RefProblem p = {c, dv, T, N, s->lengths, d ? xr : in[l], h0, s->params[u]};
            if (!ok || ref_backward(&p, (const double *const *)ydir, dhTu, dxd, dh0u, dparams ? dparams[u] : NULL) != 0) {
                if (l > 0) free(dxl);
                free(xr); free(dxd);
                goto out;
            }
            if (d) { ref_reverse_sequences(dxd, xr, T, N, I, s->lengths); memcpy(dxd, xr, (size_t)(T * N * I) * sizeof(double)); }
            for (int64_t i = 0; dxl && i < T * N * I; i++) dxl[i] += dxd[i];
        }
        free(xr);
        free(dxd);
        free(dcat);
        dcat = l > 0 ? dxl : NULL;
    }
    rc = 0;
out:
    free(dcat);
    for (int l = 1; in && l < s->layers; l++) free(in[l]);
    free(in);
    for (int o = 0; ydir && o < c->noutputs; o++) free(ydir[o]);
    free(ydir); free(h0); free(dhTu); free(dh0u);
    return rc;
}
