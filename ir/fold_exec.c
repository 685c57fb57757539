/* The projection fold on the CPU: the user's problem mapped onto the folded plan and back
 * (fold_exec.h). Key idea: everything the fold adds around the plan is a few dense products per
 * layer (V = U P before, P z_T after, their transposes in the backward), so the executor runs the
 * folded plan unchanged and this file only moves values between the user's terms and the fold's. */
#include <stdlib.h>
#include <string.h>

#include "fold_exec.h"

/* out[R][C] (+)= a b, with a [R][K] (ta: stored [K][R]) and b [K][C] (tb: stored [C][K]). */
static void mm(double *out, const double *a, const double *b, int64_t R, int64_t K, int64_t C, int ta, int tb, int add) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            double s = add ? out[r * C + c] : 0;
            for (int64_t k = 0; k < K; k++) s += (ta ? a[k * R + r] : a[r * K + k]) * (tb ? b[c * K + k] : b[k * C + c]);
            out[r * C + c] = s;
        }
}

typedef struct FoldRun {
    const IrFold *f;
    const RefProblem *p;    /* the user's */
    RefProblem fp;          /* the folded cell's: V_k appended, the folded state from zero */
    const double **params, **h0;
    double **V;             /* [nderived] V_k = U_k P */
    SchedEntry *entry;      /* [nentries]: U_k s_0 per derived parameter, none without s_0 */
    int nentries;
    double *zT;             /* [N][Hs]: the folded state after each sequence's last step */
    int64_t Ps, Hs;         /* P's rows (the user's state) and columns (the folded one) */
} FoldRun;

static int64_t rows_of(const RefProblem *p, const IrVar *v) { return p->dimval[v->shape.dims[0]]; }
static int64_t seq_len(const RefProblem *p, int64_t n) { return p->lengths ? p->lengths[n] : p->T; }

static void run_free(FoldRun *r) {
    for (int k = 0; r->V && k < r->f->nderived; k++) free(r->V[k]);
    for (int k = 0; r->entry && k < r->nentries; k++) free((void *)r->entry[k].add), free(r->entry[k].adjoint);
    free(r->V), free(r->entry), free(r->params), free(r->h0), free(r->zT);
}

static int run_setup(FoldRun *r, const PlanLayout *L, const IrFold *f, const RefProblem *p, int backward) {
    const IrCell *u = f->user, *c = L->plan->cell;
    *r = (FoldRun){.f = f, .p = p};
    if (!p || p->cell != u || c->nparams != u->nparams + f->nderived || !p->params) return -1;
    const int64_t N = p->N;
    r->Ps = rows_of(p, &u->params[f->proj]);
    r->Hs = p->dimval[u->params[f->proj].shape.dims[1]];
    r->params = calloc((size_t)c->nparams, sizeof *r->params);
    r->h0 = calloc((size_t)u->nstates, sizeof *r->h0);
    r->V = calloc((size_t)f->nderived, sizeof *r->V);
    r->entry = calloc((size_t)f->nderived, sizeof *r->entry);
    r->zT = calloc((size_t)(N * r->Hs) + 1, sizeof *r->zT);
    IrRef *at = calloc((size_t)f->nderived, sizeof *at);
    int ok = r->params && r->h0 && r->V && r->entry && r->zT && at && ir_fold_entries(L->plan, f, at);
    for (int q = 0; ok && q < u->nparams; q++) r->params[q] = p->params[q];
    for (int k = 0; ok && k < f->nderived; k++) {
        const double *U = p->params[f->derived_from[k]];
        int64_t R = rows_of(p, &u->params[f->derived_from[k]]);
        ok = (r->V[k] = malloc((size_t)(R * r->Hs) * sizeof(double) + 8)) != NULL;
        if (ok) mm(r->V[k], U, p->params[f->proj], R, r->Ps, r->Hs, 0, 0, 0);
        r->params[u->nparams + k] = r->V[k];
    }
    const double *s0 = p->h0 ? p->h0[f->state] : NULL;
    for (int k = 0; ok && s0 && k < f->nderived; k++, r->nentries++) { /* U_k s_0 per sequence: [N][R] */
        int64_t R = rows_of(p, &u->params[f->derived_from[k]]);
        double *add = malloc((size_t)(N * R) * sizeof(double) + 8);
        r->entry[k] = (SchedEntry){at[k], add, backward ? calloc((size_t)(N * R) + 1, sizeof(double)) : NULL};
        ok = add && (!backward || r->entry[k].adjoint);
        if (ok) mm(add, s0, p->params[f->derived_from[k]], N, r->Ps, R, 0, 1, 0);
    }
    for (int k = 0; ok && k < u->nstates; k++) r->h0[k] = p->h0 && k != f->state ? p->h0[k] : NULL;
    free(at);
    r->fp = (RefProblem){c, p->dimval, p->T, N, p->lengths, p->x, r->h0, r->params};
    return ok ? 0 : -1;
}

/* The folded forward; the user's y and hT (the folded state's through P, s_0 where a sequence has no step). */
static int run_forward(FoldRun *r, const PlanLayout *L, int reverse, double *const *y, double *const *hT) {
    const IrCell *u = r->f->user;
    const int s = r->f->state;
    double **h = calloc((size_t)u->nstates, sizeof *h);
    if (!h) return -1;
    for (int k = 0; k < u->nstates; k++) h[k] = k == s ? r->zT : hT ? hT[k] : NULL;
    int rc = sched_exec_forward_entries(L, &r->fp, reverse, r->entry, r->nentries, y, h);
    free(h);
    if (rc != 0 || !hT || !hT[s]) return rc;
    mm(hT[s], r->zT, r->p->params[r->f->proj], r->p->N, r->Hs, r->Ps, 0, 1, 0); /* [N][Ps] = z_T P^T */
    for (int64_t n = 0; n < r->p->N; n++)
        if (seq_len(r->p, n) == 0)
            for (int64_t j = 0; j < r->Ps; j++) hT[s][n * r->Ps + j] = r->p->h0 && r->p->h0[s] ? r->p->h0[s][n * r->Ps + j] : 0;
    return 0;
}

int fold_exec_forward(const PlanLayout *L, const IrFold *f, const RefProblem *p, int reverse, double *const *y,
                      double *const *hT) {
    FoldRun r;
    int rc = run_setup(&r, L, f, p, 0);
    if (rc == 0) rc = run_forward(&r, L, reverse, y, hT);
    run_free(&r);
    return rc;
}

int fold_exec_backward(const PlanLayout *L, const IrFold *f, const RefProblem *p, int reverse, const double *const *dy,
                       const double *const *dhT, double *dx, double *const *dh0, double *const *dparams) {
    const IrCell *u = f->user, *c = L->plan->cell;
    const int s = f->state;
    const int64_t N = p->N;
    FoldRun r;
    int rc = run_setup(&r, L, f, p, 1);
    const double **dhTf = calloc((size_t)u->nstates, sizeof *dhTf);
    double **dh0f = calloc((size_t)u->nstates, sizeof *dh0f), **dpf = calloc((size_t)c->nparams, sizeof *dpf);
    double **zT = calloc((size_t)u->nstates, sizeof *zT); /* the folded state's final value, which dP needs */
    double *dzT = calloc((size_t)(N * r.Hs) + 1, sizeof *dzT);
    if (!dhTf || !dh0f || !dpf || !zT || !dzT) rc = -1;
    for (int q = 0; rc == 0 && q < c->nparams; q++)
        if (!(dpf[q] = calloc((size_t)(L->param_rows[q] * L->param_cols[q]) + 1, sizeof(double)))) rc = -1;
    if (rc == 0) {
        zT[s] = r.zT;
        /* the folded state's dhT: P^T dhT where a sequence has a step (else its s_T is s_0) */
        for (int64_t n = 0; dhT && dhT[s] && n < N; n++)
            if (seq_len(p, n) > 0) mm(dzT + n * r.Hs, dhT[s] + n * r.Ps, p->params[f->proj], 1, r.Ps, r.Hs, 0, 0, 0);
        for (int k = 0; k < u->nstates; k++) {
            dhTf[k] = k == s ? dzT : dhT ? dhT[k] : NULL;
            dh0f[k] = k == s || !dh0 ? NULL : dh0[k];
        }
        rc = sched_exec_backward_entries(L, &r.fp, reverse, r.entry, r.nentries, dy, dhTf, dx, dh0f, dpf, zT);
    }
    if (rc == 0 && dh0 && dh0[s]) { /* dh0 = sum_k U_k^T A_k, and dhT where a sequence has no step */
        memset(dh0[s], 0, (size_t)(N * r.Ps) * sizeof(double));
        for (int k = 0; k < r.nentries; k++)
            mm(dh0[s], r.entry[k].adjoint, p->params[f->derived_from[k]], N, rows_of(p, &u->params[f->derived_from[k]]),
               r.Ps, 0, 0, 1);
        for (int64_t n = 0; dhT && dhT[s] && n < N; n++)
            if (seq_len(p, n) == 0)
                for (int64_t j = 0; j < r.Ps; j++) dh0[s][n * r.Ps + j] += dhT[s][n * r.Ps + j];
    }
    if (rc == 0 && dparams) {
        /* dU_k += dV_k P^T + A_k^T s_0; dP += sum_k U_k^T dV_k + dhT^T z_T */
        for (int k = 0; k < f->nderived; k++) {
            int uk = f->derived_from[k];
            int64_t R = rows_of(p, &u->params[uk]);
            mm(dpf[uk], dpf[u->nparams + k], p->params[f->proj], R, r.Hs, r.Ps, 0, 1, 1);
            mm(dpf[f->proj], p->params[uk], dpf[u->nparams + k], r.Ps, R, r.Hs, 1, 0, 1);
            if (k < r.nentries) mm(dpf[uk], r.entry[k].adjoint, p->h0[s], R, N, r.Ps, 1, 0, 1);
        }
        if (dhT && dhT[s]) mm(dpf[f->proj], dhT[s], r.zT, r.Ps, N, r.Hs, 1, 0, 1); /* z_T is 0 where no step */
        for (int q = 0; q < u->nparams; q++)
            if (dparams[q]) memcpy(dparams[q], dpf[q], (size_t)(L->param_rows[q] * L->param_cols[q]) * sizeof(double));
    }
    for (int q = 0; dpf && q < c->nparams; q++) free(dpf[q]);
    free(dpf), free(dh0f), free(dhTf), free(zT), free(dzT);
    run_free(&r);
    return rc;
}
