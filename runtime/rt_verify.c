/* The model against the reference on random data (see rt_verify.h).
 * Key idea: the GPU and the reference start from the same float-rounded weights and inputs,
 * so the error measured is the GPU's alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ref.h"
#include "rt_internal.h"
#include "rt_verify.h"

static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [-k, k), rounded to float. */
static double uniform(uint64_t *s, double k) { return (double)(float)(((double)(next_rand(s) >> 11) * 0x1.0p-53 * 2 - 1) * k); }

static double rel_err(const float *a, const double *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (isnan(e)) return INFINITY;
        if (e > num) num = e;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Host and device memory of one verification, freed together. */
typedef struct Bufs {
    double ***params, *x, *h0[RNN_MAX_STATES], *ry[RNN_MAX_OUTPUTS], *rh[RNN_MAX_STATES];
    float *xf, *host;
    int64_t host_len;             /* floats host holds: the largest copy back (input, outputs, states) */
    int *lengths;
    int64_t *lengths64;
    float *dx, *dy[RNN_MAX_OUTPUTS], *dh0[RNN_MAX_STATES], *dhT[RNN_MAX_STATES];
    /* backward */
    double *gy[RNN_MAX_OUTPUTS], *ghT[RNN_MAX_STATES], *rdx, *rdh0[RNN_MAX_STATES], ***rdp;
    float *ddy[RNN_MAX_OUTPUTS], *ddhT[RNN_MAX_STATES], *ddx, *ddh0[RNN_MAX_STATES], *ddw, *hostw;
    void *ws, *ws_base, *reserve, *rs_base; /* ws: ws_base + RtVerify.ws_offset; reserve: rs_base + .rs_offset */
    float *times;
    cudaEvent_t e0, e1;
} Bufs;

static void free_bufs(const rnncc_model *m, Bufs *b) {
    for (int u = 0; b->params && u < m->nunits; u++) {
        for (int p = 0; b->params[u] && p < m->api->nparams; p++) free(b->params[u][p]);
        free(b->params[u]);
    }
    free(b->params);
    for (int i = 0; i < RNN_MAX_STATES; i++) { free(b->h0[i]); free(b->rh[i]); cudaFree(b->dh0[i]); cudaFree(b->dhT[i]); }
    for (int i = 0; i < RNN_MAX_OUTPUTS; i++) { free(b->ry[i]); cudaFree(b->dy[i]); }
    free(b->x); free(b->xf); free(b->host); free(b->lengths); free(b->lengths64); free(b->times);
    cudaFree(b->dx); cudaFree(b->ws_base); cudaFree(b->rs_base);
    for (int i = 0; i < RNN_MAX_OUTPUTS; i++) { free(b->gy[i]); cudaFree(b->ddy[i]); }
    for (int i = 0; i < RNN_MAX_STATES; i++) { free(b->ghT[i]); free(b->rdh0[i]); cudaFree(b->ddhT[i]); cudaFree(b->ddh0[i]); }
    for (int u = 0; b->rdp && u < m->nunits; u++) {
        for (int p = 0; b->rdp[u] && p < m->api->nparams; p++) free(b->rdp[u][p]);
        free(b->rdp[u]);
    }
    free(b->rdp); free(b->rdx); free(b->hostw);
    cudaFree(b->ddx); cudaFree(b->ddw);
    if (b->e0) cudaEventDestroy(b->e0);
    if (b->e1) cudaEventDestroy(b->e1);
}

static rnncc_status dev_alloc(rnncc_model *m, void *p, int64_t floats) {
    RT_CUDA(m, cudaMalloc((void **)p, (size_t)(floats > 0 ? floats : 1) * sizeof(float)));
    return RNNCC_OK;
}

/* Random output and final-state adjoints (double for the reference, float on the device),
 * and the gradient buffers the backward writes (poisoned with NaN: every element must be written). */
static rnncc_status prepare_backward(rnncc_model *m, Bufs *b, uint64_t *seed, rnncc_grad_io *gio) {
    const IrCell *c = m->api;
    int64_t T = gio->T, N = gio->N, I = ir_shape_numel(&c->inputs[0].shape, m->dimval[0]);
    const int64_t *dvl = m->dimval[m->layers > 1];
    for (int o = 0; o < c->noutputs; o++) {
        int64_t n = T * N * ir_node_len(c, c->outputs[o].node, dvl) * m->dirs;
        float *f = malloc((size_t)n * sizeof(float) + 4);
        if (!f || !(b->gy[o] = malloc((size_t)n * sizeof(double) + 8))) { free(f); return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory"); }
        for (int64_t i = 0; i < n; i++) f[i] = (float)(b->gy[o][i] = uniform(seed, 1));
        rnncc_status s = dev_alloc(m, &b->ddy[o], n);
        cudaError_t e = s == RNNCC_OK ? cudaMemcpy(b->ddy[o], f, (size_t)n * sizeof(float), cudaMemcpyHostToDevice) : cudaSuccess;
        free(f);
        RT_TRY(s);
        RT_CUDA(m, e);
    }
    for (int q = 0; q < c->nstates; q++) {
        int64_t n = m->nunits * N * ir_shape_numel(&c->states[q].shape, m->dimval[0]);
        float *f = malloc((size_t)n * sizeof(float) + 4);
        if (!f || !(b->ghT[q] = malloc((size_t)n * sizeof(double) + 8)) || !(b->rdh0[q] = calloc((size_t)n + 1, sizeof(double)))) {
            free(f);
            return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        }
        for (int64_t i = 0; i < n; i++) f[i] = (float)(b->ghT[q][i] = uniform(seed, 1));
        rnncc_status s = dev_alloc(m, &b->ddhT[q], n);
        if (s == RNNCC_OK) s = dev_alloc(m, &b->ddh0[q], n);
        cudaError_t e = s == RNNCC_OK ? cudaMemcpy(b->ddhT[q], f, (size_t)n * sizeof(float), cudaMemcpyHostToDevice) : cudaSuccess;
        free(f);
        RT_TRY(s);
        RT_CUDA(m, e);
        RT_CUDA(m, cudaMemset(b->ddh0[q], 0xff, (size_t)n * sizeof(float)));
    }
    RT_TRY(dev_alloc(m, &b->ddx, T * N * I));
    RT_CUDA(m, cudaMemset(b->ddx, 0xff, (size_t)(T * N * I) * sizeof(float)));
    RT_TRY(dev_alloc(m, &b->ddw, m->weight_count));
    RT_CUDA(m, cudaMemset(b->ddw, 0xff, (size_t)m->weight_count * sizeof(float)));
    gio->dy = (const float *const *)b->ddy;
    gio->dhT = (const float *const *)b->ddhT;
    gio->dx = b->ddx;
    gio->dh0 = b->ddh0;
    return RNNCC_OK;
}

/* The device's gradients against the stacked reference backward on the same values. */
static rnncc_status check_backward(rnncc_model *m, RtVerify *v, Bufs *b, const RefStack *rs) {
    const IrCell *c = m->api;
    int64_t T = v->T, N = v->N, I = ir_shape_numel(&c->inputs[0].shape, m->dimval[0]);
    if (!(b->rdx = calloc((size_t)(T * N * I) + 1, sizeof(double))) || !(b->rdp = calloc((size_t)m->nunits, sizeof *b->rdp)))
        return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    for (int u = 0; u < m->nunits; u++) {
        const PlanLayout *L = m->units[u].layout;
        if (!(b->rdp[u] = calloc((size_t)c->nparams + 1, sizeof **b->rdp))) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        for (int p = 0; p < c->nparams; p++)
            if (!(b->rdp[u][p] = calloc((size_t)(L->param_rows[p] * L->param_cols[p]) + 1, sizeof(double))))
                return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    }
    if (ref_stack_backward(rs, (const double *const *)b->gy, (const double *const *)b->ghT, b->rdx, b->rdh0,
                           (double *const *const *)b->rdp) != 0)
        return rt_fail(m, RNNCC_ERR_NOMEM, "verify: the reference backward failed");
    if (m->weight_count > b->host_len) { /* the weight gradients too (the rest fits already) */
        float *host = realloc(b->host, (size_t)m->weight_count * sizeof(float) + 4);
        if (!host) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        b->host = host;
        b->host_len = m->weight_count;
    }
    float *host = b->host;
    RT_CUDA(m, cudaMemcpy(host, b->ddx, (size_t)(T * N * I) * sizeof(float), cudaMemcpyDeviceToHost));
    v->dx_err = rel_err(host, b->rdx, T * N * I);
    v->dh0_err = 0;
    for (int q = 0; q < c->nstates; q++) {
        int64_t n = m->nunits * N * ir_shape_numel(&c->states[q].shape, m->dimval[0]);
        RT_CUDA(m, cudaMemcpy(host, b->ddh0[q], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
        double e = rel_err(host, b->rdh0[q], n);
        if (!(e <= v->dh0_err)) v->dh0_err = e;
    }
    RT_CUDA(m, cudaMemcpy(host, b->ddw, (size_t)m->weight_count * sizeof(float), cudaMemcpyDeviceToHost));
    v->dw_err = 0;
    for (int u = 0; u < m->nunits; u++) {
        const PlanLayout *L = m->units[u].layout;
        for (int p = 0; p < c->nparams; p++) {
            double e = rel_err(host + m->units[u].weight_offset + L->param_offset[p], b->rdp[u][p], L->param_rows[p] * L->param_cols[p]);
            if (!(e <= v->dw_err)) {
                v->dw_err = e;
                snprintf(v->dw_worst_name, sizeof v->dw_worst_name, "%s (layer %d, direction %d)", c->params[p].name,
                         m->units[u].layer, m->units[u].dir);
            }
        }
    }
    v->grad_worst = v->dx_err;
    if (!(v->dh0_err <= v->grad_worst)) v->grad_worst = v->dh0_err;
    if (!(v->dw_err <= v->grad_worst)) v->grad_worst = v->dw_err;
    return RNNCC_OK;
}

static rnncc_status run(rnncc_model *m, RtVerify *v, Bufs *b) {
    const IrCell *c = m->api;
    int units = m->nunits, np = c->nparams, dirs = m->dirs;
    int64_t T = v->T, N = v->N, I = ir_shape_numel(&c->inputs[0].shape, m->dimval[0]);
    const int64_t *dvl = m->dimval[m->layers > 1];
    uint64_t seed = v->seed;
    double k = 1 / sqrt((double)(c->nstates ? ir_shape_numel(&c->states[0].shape, m->dimval[0]) : 1));
    if (T < 0 || N < 1) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "verify: T must be >= 0 and N >= 1");
    if (v->backward) v->training = 1;
    b->params = calloc((size_t)units, sizeof *b->params);
    b->x = calloc((size_t)(T * N * I) + 1, sizeof *b->x);
    b->xf = calloc((size_t)(T * N * I) + 1, sizeof *b->xf);
    if (!b->params || !b->x || !b->xf) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    for (int64_t i = 0; i < T * N * I; i++) b->xf[i] = (float)(b->x[i] = uniform(&seed, 1));
    if (v->varlen) {
        b->lengths = calloc((size_t)N, sizeof *b->lengths);
        b->lengths64 = calloc((size_t)N, sizeof *b->lengths64);
        if (!b->lengths || !b->lengths64) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        for (int64_t n = 0; n < N; n++) b->lengths64[n] = b->lengths[n] = n == 0 ? (int)T : (int)(next_rand(&seed) % (uint64_t)(T + 1));
    }
    for (int u = 0; u < units; u++) {
        if (!(b->params[u] = calloc((size_t)np + 1, sizeof **b->params))) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        const PlanLayout *L = m->units[u].layout;
        for (int p = 0; p < np; p++) {
            int64_t n = L->param_rows[p] * L->param_cols[p];
            float *f = malloc((size_t)n * sizeof(float) + 4);
            if (!f || !(b->params[u][p] = malloc((size_t)n * sizeof(double) + 8))) { free(f); return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory"); }
            for (int64_t i = 0; i < n; i++) f[i] = (float)(b->params[u][p][i] = uniform(&seed, k));
            rnncc_status s = rnncc_model_set_param(m, c->params[p].name, m->units[u].layer, m->units[u].dir, f, n);
            free(f);
            if (s != RNNCC_OK) return s;
        }
    }
    RT_TRY(dev_alloc(m, &b->dx, T * N * I));
    RT_CUDA(m, cudaMemcpy(b->dx, b->xf, (size_t)(T * N * I) * sizeof(float), cudaMemcpyHostToDevice));
    int64_t maxn = T * N * I;
    for (int o = 0; o < c->noutputs; o++) {
        int64_t n = T * N * ir_node_len(c, c->outputs[o].node, dvl) * dirs;
        RT_TRY(dev_alloc(m, &b->dy[o], n));
        RT_CUDA(m, cudaMemset(b->dy[o], 0xff, (size_t)n * sizeof(float))); /* NaN: every element must be written */
        if (n > maxn) maxn = n;
    }
    for (int q = 0; q < c->nstates; q++) {
        int64_t n = units * N * ir_shape_numel(&c->states[q].shape, m->dimval[0]);
        RT_TRY(dev_alloc(m, &b->dhT[q], n));
        RT_CUDA(m, cudaMemset(b->dhT[q], 0xff, (size_t)n * sizeof(float)));
        if (n > maxn) maxn = n;
        if (v->random_h0) {
            if (!(b->h0[q] = malloc((size_t)n * sizeof(double) + 8))) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
            float *f = malloc((size_t)n * sizeof(float) + 4);
            if (!f) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
            for (int64_t i = 0; i < n; i++) f[i] = (float)(b->h0[q][i] = uniform(&seed, 1));
            RT_TRY(dev_alloc(m, &b->dh0[q], n));
            cudaError_t e = cudaMemcpy(b->dh0[q], f, (size_t)n * sizeof(float), cudaMemcpyHostToDevice);
            free(f);
            RT_CUDA(m, e);
        }
    }
    size_t wsb = 0, rsb = 0;
    RT_TRY(rnncc_workspace_size(m, T, N, v->training, &wsb));
    if (v->training) RT_TRY(rnncc_reserve_size(m, T, N, &rsb));
    RT_CUDA(m, cudaMalloc(&b->ws_base, wsb + (size_t)v->ws_offset + 4));
    b->ws = (char *)b->ws_base + v->ws_offset;
    if (v->training) {
        RT_CUDA(m, cudaMalloc(&b->rs_base, rsb + (size_t)v->rs_offset + 4));
        b->reserve = (char *)b->rs_base + v->rs_offset;
    }
    rnncc_io io = {T, N, b->dx, b->dy, b->lengths, v->random_h0 ? (const float *const *)b->dh0 : NULL, b->dhT};
    RT_CUDA(m, cudaEventCreate(&b->e0));
    RT_CUDA(m, cudaEventCreate(&b->e1));
    int repeat = v->repeat > 0 ? v->repeat : 0;
    if (repeat && !(b->times = calloc((size_t)repeat, sizeof *b->times))) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    cudaStream_t stream = (cudaStream_t)v->stream;
    rnncc_grad_io gio = {T, N, b->lengths, b->dx, NULL, NULL, NULL, NULL};
    if (v->backward) RT_TRY(prepare_backward(m, b, &seed, &gio));
    /* the inputs written above (cudaMemcpy, cudaMemset: the legacy stream) have landed before the
     * passes run on stream, which may be a non-blocking one */
    RT_CUDA(m, cudaStreamSynchronize(cudaStreamLegacy));
    for (int r = repeat ? -3 : 0; r < (repeat ? repeat : 1); r++) {
        /* NaN in every float of the reserve before each checked pass (untimed): what a pass reads
         * before it writes it shows, stale values of an earlier pass included */
        if (v->training && !v->time_only) RT_CUDA(m, cudaMemsetAsync(b->reserve, 0xff, rsb ? rsb : 4, stream));
        if (v->nan_workspace && !v->time_only) RT_CUDA(m, cudaMemsetAsync(b->ws, 0xff, wsb ? wsb : 4, stream));
        RT_CUDA(m, cudaEventRecord(b->e0, stream));
        RT_TRY(rnncc_forward(m, &io, b->ws, wsb, b->reserve, rsb, stream));
        if (v->backward) {
            RT_TRY(rnncc_backward_data(m, &gio, b->ws, wsb, b->reserve, rsb, stream));
            RT_TRY(rnncc_backward_weights(m, &gio, b->ddw, RNNCC_WGRAD_SET, b->ws, wsb, b->reserve, rsb, stream));
        }
        RT_CUDA(m, cudaEventRecord(b->e1, stream));
        RT_CUDA(m, cudaEventSynchronize(b->e1));
        if (repeat && r >= 0) RT_CUDA(m, cudaEventElapsedTime(&b->times[r], b->e0, b->e1));
    }
    if (repeat) {
        qsort(b->times, (size_t)repeat, sizeof *b->times, cmp_float);
        v->median_ms = b->times[repeat / 2];
    }
    if (v->time_only) return RNNCC_OK;
    /* the reference, on the same values */
    for (int o = 0; o < c->noutputs; o++)
        if (!(b->ry[o] = calloc((size_t)(T * N * ir_node_len(c, c->outputs[o].node, dvl) * dirs) + 1, sizeof(double))))
            return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    for (int q = 0; q < c->nstates; q++)
        if (!(b->rh[q] = calloc((size_t)(units * N * ir_shape_numel(&c->states[q].shape, m->dimval[0])) + 1, sizeof(double))))
            return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    RefStack rs = {c, {m->dimval[0], m->dimval[1]}, m->layers, dirs, T, N, b->lengths64, b->x,
                   (const double *const *const *)b->params, (const double *const *)b->h0};
    if (ref_stack_forward(&rs, b->ry, b->rh) != 0) return rt_fail(m, RNNCC_ERR_NOMEM, "verify: the reference failed");
    if (!(b->host = malloc((size_t)maxn * sizeof(float) + 4))) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    b->host_len = maxn;
    v->worst = 0;
    for (int o = 0; o < c->noutputs; o++) {
        int64_t n = T * N * ir_node_len(c, c->outputs[o].node, dvl) * dirs;
        RT_CUDA(m, cudaMemcpy(b->host, b->dy[o], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
        v->out_err[o] = rel_err(b->host, b->ry[o], n);
        if (!(v->out_err[o] <= v->worst)) v->worst = v->out_err[o];
    }
    for (int q = 0; q < c->nstates; q++) {
        int64_t n = units * N * ir_shape_numel(&c->states[q].shape, m->dimval[0]);
        RT_CUDA(m, cudaMemcpy(b->host, b->dhT[q], (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
        v->state_err[q] = rel_err(b->host, b->rh[q], n);
        if (!(v->state_err[q] <= v->worst)) v->worst = v->state_err[q];
    }
    if (v->backward) RT_TRY(check_backward(m, v, b, &rs));
    return RNNCC_OK;
}

rnncc_status rt_verify(rnncc_model *m, RtVerify *v) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    if (!v) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "verify: v is NULL");
    ir_cell_kinks(m->api, v->kinks, sizeof v->kinks);
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(m->device);
    Bufs b;
    memset(&b, 0, sizeof b);
    rnncc_status s = run(m, v, &b);
    free_bufs(m, &b);
    if (prev >= 0) cudaSetDevice(prev);
    return s;
}

double rt_verify_bound(rnncc_precision p, int gradient) {
    switch (p) {
    case RNNCC_TF32:
    case RNNCC_FP16: return gradient ? 5e-2 : 5e-3;
    case RNNCC_BF16: return gradient ? 2e-1 : 2e-2;
    case RNNCC_TF32X3: return gradient ? 5e-4 : 5e-5; /* products' errors ~10x fp32's FFMA (bench/NOTES.md section 77) */
    default: return gradient ? 1e-4 : 1e-5;
    }
}
