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
