/* parity: rnncc on the GPU on a case, each backend forced in turn (an LSTMP folded and as written): the model created,
 * filled from PyTorch's tensors, run forward (inference and training) and backward (tests/parity/README.md). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"

static void *dev_alloc(const char *what, int64_t floats, int fill_nan) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, (size_t)(floats > 0 ? floats : 1) * sizeof(float));
    if (e == cudaSuccess && fill_nan) e = cudaMemset(p, 0xff, (size_t)(floats > 0 ? floats : 1) * sizeof(float)); /* all-ones bytes: NaN */
    if (e != cudaSuccess) {
        fprintf(stderr, "parity: error: allocating %s on the device: %s\n", what, cudaGetErrorString(e));
        if (p) cudaFree(p);
        return NULL;
    }
    return p;
}

/* Allocates a device copy of t (float32 values, exact: inputs are float32 files). */
static float *upload(const char *what, const Tensor *t) {
    float *h = malloc((size_t)t->n * sizeof(float) + sizeof(float)), *d = NULL;
    if (!h) { fprintf(stderr, "parity: error: out of memory\n"); return NULL; }
    for (int64_t i = 0; i < t->n; i++) h[i] = (float)t->v[i];
    if ((d = dev_alloc(what, t->n, 0))) {
        cudaError_t e = cudaMemcpy(d, h, (size_t)t->n * sizeof(float), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            fprintf(stderr, "parity: error: cudaMemcpy of %s to the device: %s\n", what, cudaGetErrorString(e));
            cudaFree(d);
            d = NULL;
        }
    }
    free(h);
    return d;
}

static double *download(const void *src, int64_t n) {
    float *h = malloc((size_t)n * sizeof(float) + sizeof(float));
    double *w = malloc((size_t)n * sizeof(double) + sizeof(double));
    cudaError_t e = h && w ? cudaMemcpy(h, src, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost) : cudaSuccess;
    if (!h || !w || e != cudaSuccess) {
        fprintf(stderr, "parity: error: cudaMemcpy from the device: %s\n", h && w ? cudaGetErrorString(e) : "out of memory");
        free(h);
        free(w);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) w[i] = h[i];
    free(h);
    return w;
}

static void print_versions(int device) {
    int rt = 0, drv = 0;
    struct cudaDeviceProp prop;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) snprintf(prop.name, sizeof prop.name, "?");
    printf("  rnncc %s, CUDA runtime %d.%d, driver %d.%d, device %d: %s\n", rnncc_version(), rt / 1000, rt % 1000 / 10,
           drv / 1000, drv % 1000 / 10, device, prop.name);
}

/* Device memory of one run, freed together. */
typedef struct Dev {
    float *x, *h0[MAX_STATES];                   /* inputs */
    float *y, *hT[MAX_STATES], *ty, *thT[MAX_STATES]; /* forward results (NaN-poisoned) */
    float *dy, *dhT[MAX_STATES];                 /* cotangents */
    float *dx, *dh0[MAX_STATES], *dw;            /* gradients (NaN-poisoned) */
    void *ws, *reserve;
} Dev;

static void dev_free(Dev *g) {
    void *all[] = {g->x, g->y, g->ty, g->dy, g->dx, g->dw, g->ws, g->reserve};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) cudaFree(all[i]);
    for (int k = 0; k < MAX_STATES; k++) {
        void *st[] = {g->h0[k], g->hT[k], g->thT[k], g->dhT[k], g->dh0[k]};
        for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
            if (st[i]) cudaFree(st[i]);
    }
}

#define TRY_RNNCC(call)                                                                                            \
    do {                                                                                                           \
        rnncc_status s_ = (call);                                                                                  \
        if (s_ != RNNCC_OK) {                                                                                      \
            fprintf(stderr, "parity: error: %s: %s: %s\n", #call, rnncc_status_string(s_), rnncc_model_error(model)); \
            goto out;                                                                                              \
        }                                                                                                          \
    } while (0)

static const Variant plain_variants[] = {
    {RNNCC_BACKEND_PERSISTENT, RNNCC_FOLD_AUTO, "persistent"},
    {RNNCC_BACKEND_CUBLAS, RNNCC_FOLD_AUTO, "cuBLAS per step"},
};
static const Variant fold_variants[] = {
    {RNNCC_BACKEND_PERSISTENT, RNNCC_FOLD_ON, "persistent, folded"},
    {RNNCC_BACKEND_PERSISTENT, RNNCC_FOLD_OFF, "persistent, as written"},
    {RNNCC_BACKEND_CUBLAS, RNNCC_FOLD_ON, "cuBLAS per step, folded"},
    {RNNCC_BACKEND_CUBLAS, RNNCC_FOLD_OFF, "cuBLAS per step, as written"},
};

int parity_variants(const Case *c, const Variant **out) {
    *out = c->spec->proj ? fold_variants : plain_variants;
    return c->spec->proj ? (int)(sizeof fold_variants / sizeof fold_variants[0])
                         : (int)(sizeof plain_variants / sizeof plain_variants[0]);
}

/* Prints which backend runs each pass of the model and why (with the fold's verdict), and checks that it is the one v
 * forces and, where v forces the fold on or off, that the model runs folded or as written. 1 when it is, VARIANT_SKIPPED
 * where the persistent backend is forced and this device cannot run it (rnncc says why), else 0. */
static int check_variant(rnncc_model *model, const Case *c, const Variant *v) {
    char why[1024], bwhy[1024];
    rnncc_backend fwd, bwd;
    rnncc_status s = rnncc_model_backend(model, c->N, &fwd, why, sizeof why);
    if (s == RNNCC_OK) s = rnncc_model_backward_backend(model, c->N, &bwd, bwhy, sizeof bwhy);
    if (s == RNNCC_ERR_UNSUPPORTED && v->backend == RNNCC_BACKEND_PERSISTENT) {
        printf("  skipped: %s\n", rnncc_model_error(model));
        return VARIANT_SKIPPED;
    }
    if (s != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_model_backend: %s\n", rnncc_model_error(model));
        return 0;
    }
    printf("  rnncc forward: %s\n  rnncc backward: %s\n", why, bwhy);
    if (fwd != v->backend || bwd != v->backend) {
        fprintf(stderr, "parity: error: the model runs %s forward and %s backward; the variant forces %s\n",
                fwd == RNNCC_BACKEND_CUBLAS ? "cuBLAS" : "persistent", bwd == RNNCC_BACKEND_CUBLAS ? "cuBLAS" : "persistent",
                v->name);
        return 0;
    }
    const char *folded = strstr(why, "; folded ("), *not_folded = strstr(why, "; not folded (");
    if ((v->fold == RNNCC_FOLD_ON && !folded) || (v->fold == RNNCC_FOLD_OFF && !not_folded)) {
        fprintf(stderr, "parity: error: the variant forces the fold %s, and rnncc_model_backend does not say it runs %s\n",
                v->fold == RNNCC_FOLD_ON ? "on" : "off", v->fold == RNNCC_FOLD_ON ? "folded" : "as written");
        return 0;
    }
    return 1;
}

/* Compiles the cell, creates the model as v says, fills it from PyTorch's parameters, runs the inference forward,
 * the training forward and (when the case has them) both backward passes, and copies every
 * result back into r. Returns 0 done, EXIT_SKIP without a CUDA device, VARIANT_SKIPPED where the device cannot run
 * the backend v forces, EXIT_FAIL on an error. */
int run_rnncc(const Case *c, const char *cells_dir, const Variant *v, Results *r) {
    int status = EXIT_FAIL;
    rnncc_program *prog = NULL;
    rnncc_model *model = NULL;
    Dev g;
    memset(&g, 0, sizeof g);
    float *pbuf = NULL;
    double *dbuf = NULL;

    /* Compile the cell: rnncc's own file, not a copy, so the test covers what users run. */
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.cell", cells_dir, c->spec->name);
    rnncc_status s = rnncc_compile_file(path, NULL, &prog);
    if (s != RNNCC_OK) {
        fprintf(stderr, "%sparity: error: compiling %s: %s\n", prog ? rnncc_program_log(prog) : "", path,
                s == RNNCC_ERR_NOT_FOUND ? "cannot open the file (run from the repository root or pass --cells)"
                                         : rnncc_status_string(s));
        goto out;
    }
    char dim_i[32], dim_h[32], dim_p[32];
    snprintf(dim_i, sizeof dim_i, "I=%d", c->I);
    snprintf(dim_h, sizeof dim_h, "H=%d", c->H);
    snprintf(dim_p, sizeof dim_p, "P=%d", c->P);
    const char *dims[] = {dim_i, dim_h, dim_p};
    rnncc_model_desc desc = {NULL, dims, c->spec->proj ? 3 : 2, c->layers, c->dirs == 2, RNNCC_FP32, -1, v->backend, v->fold, 0};
    s = rnncc_model_create(prog, &desc, &model);
    if (s == RNNCC_ERR_NO_GPU) {
        printf("parity: %s; skipped (the manifest, every tensor and %s were read and checked)\n", rnncc_model_error(model), path);
        status = EXIT_SKIP;
        goto out;
    }
    if (s != RNNCC_OK) {
        fprintf(stderr, "parity: error: rnncc_model_create: %s: %s\n", rnncc_status_string(s), rnncc_model_error(model));
        goto out;
    }
    int device = 0;
    cudaGetDevice(&device);
    print_versions(device);
    int checked = check_variant(model, c, v);
    if (checked == VARIANT_SKIPPED) status = VARIANT_SKIPPED;
    if (checked != 1) goto out;

    /* The model's own shape report must match PyTorch's. */
    rnncc_model_sizes sz;
    TRY_RNNCC(rnncc_model_get_sizes(model, &sz));
    int shapes_ok = sz.input == c->I && sz.output == (int64_t)c->dirs * c->O && sz.noutputs >= 1 &&
                    sz.noutputs <= MAX_OUTPUTS && sz.nstates == c->spec->nstates;
    for (int k = 0; shapes_ok && k < sz.nstates; k++) shapes_ok = sz.state_size[k] == state_size(c, k);
    if (!shapes_ok) {
        fprintf(stderr, "parity: error: rnncc's model has input %lld, output %lld, %d states (sizes %lld, %lld); expected %d, %d, "
                "%d states (sizes %d, %d)\n", (long long)sz.input, (long long)sz.output, sz.nstates, (long long)sz.state_size[0],
                (long long)(sz.nstates > 1 ? sz.state_size[1] : 0), c->I, c->dirs * c->O, c->spec->nstates, state_size(c, 0),
                c->spec->nstates > 1 ? state_size(c, 1) : 0);
        goto out;
    }

    /* Every parameter of every layer and direction, by name, from PyTorch's tensors. */
    int nparams = rnncc_model_param_count(model);
    if (nparams != c->layers * c->dirs * c->spec->nmap) {
        fprintf(stderr, "parity: error: rnncc's model has %d parameter tensors; expected %d\n", nparams,
                c->layers * c->dirs * c->spec->nmap);
        goto out;
    }
    if (!rnncc_model_weights(model, &r->nw) || !(r->info = calloc((size_t)nparams, sizeof *r->info))) {
        fprintf(stderr, "parity: error: rnncc_model_weights: %s\n", rnncc_model_error(model));
        goto out;
    }
    for (int p = 0; p < nparams; p++) {
        rnncc_param_info info;
        TRY_RNNCC(rnncc_model_param_info(model, p, &info));
        r->info[p] = info;
        if (!(r->info[p].name = strdup(info.name))) { fprintf(stderr, "parity: error: out of memory\n"); goto out; }
        r->ninfo = p + 1;
        free(pbuf);
        free(dbuf);
        int64_t n = info.rows * info.cols;
        pbuf = malloc((size_t)n * sizeof(float) + sizeof(float));
        dbuf = malloc((size_t)n * sizeof(double) + sizeof(double));
        if (!pbuf || !dbuf) {
            fprintf(stderr, "parity: error: out of memory\n");
            goto out;
        }
        if (!fill_param(c, &info, dbuf)) goto out;
        for (int64_t i = 0; i < n; i++) pbuf[i] = (float)dbuf[i]; /* a bias sum rounded once */
        TRY_RNNCC(rnncc_model_set_param(model, info.name, info.layer, info.direction, pbuf, info.rows * info.cols));
    }

    /* Device data. Every result starts as NaN so anything rnncc does not write fails. */
    int64_t units = (int64_t)c->layers * c->dirs, state_n[MAX_STATES] = {0, 0}, ny = c->y[REF64].n;
    for (int k = 0; k < c->spec->nstates; k++) state_n[k] = units * c->N * state_size(c, k);
    if (!(g.x = upload("x", &c->x)) || !(g.y = dev_alloc("y", ny, 1)) || !(g.ty = dev_alloc("y", ny, 1))) goto out;
    for (int k = 0; k < c->spec->nstates; k++)
        if (!(g.h0[k] = upload("h0", &c->h0[k])) || !(g.hT[k] = dev_alloc("hT", state_n[k], 1)) ||
            !(g.thT[k] = dev_alloc("hT", state_n[k], 1)))
            goto out;
    if (c->backward) {
        if (!(g.dy = upload("dy", &c->dy)) || !(g.dx = dev_alloc("dx", c->x.n, 1)) || !(g.dw = dev_alloc("dweights", r->nw, 1)))
            goto out;
        for (int k = 0; k < c->spec->nstates; k++)
            if (!(g.dhT[k] = upload("dhT", &c->dhT[k])) || !(g.dh0[k] = dev_alloc("dh0", state_n[k], 1))) goto out;
    }
    size_t wsb = 0, wsb_train = 0, rsb = 0;
    TRY_RNNCC(rnncc_workspace_size(model, c->T, c->N, 0, &wsb));
    TRY_RNNCC(rnncc_workspace_size(model, c->T, c->N, 1, &wsb_train));
    TRY_RNNCC(rnncc_reserve_size(model, c->T, c->N, &rsb));
    if (wsb_train > wsb) wsb = wsb_train;
    if (!(g.ws = dev_alloc("the workspace", (int64_t)((wsb + 3) / 4), 0)) ||
        !(g.reserve = dev_alloc("the reserve", (int64_t)((rsb + 3) / 4), 0)))
        goto out;

    /* Inference forward, then the training forward whose reserve the backward passes read. */
    float *ys[MAX_OUTPUTS] = {g.y}, *tys[MAX_OUTPUTS] = {g.ty};
    const float *h0s[MAX_STATES] = {g.h0[0], g.h0[1]};
    float *hTs[MAX_STATES] = {g.hT[0], g.hT[1]}, *thTs[MAX_STATES] = {g.thT[0], g.thT[1]};
    rnncc_io io = {c->T, c->N, g.x, ys, c->lengths, h0s, hTs};
    rnncc_io tio = {c->T, c->N, g.x, tys, c->lengths, h0s, thTs};
    TRY_RNNCC(rnncc_forward(model, &io, g.ws, wsb, NULL, 0, NULL));
    TRY_RNNCC(rnncc_forward(model, &tio, g.ws, wsb, g.reserve, rsb, NULL));
    if (c->backward) {
        const float *dys[MAX_OUTPUTS] = {g.dy}, *dhTs[MAX_STATES] = {g.dhT[0], g.dhT[1]};
        float *dh0s[MAX_STATES] = {g.dh0[0], g.dh0[1]};
        rnncc_grad_io gio = {c->T, c->N, c->lengths, g.x, dys, dhTs, g.dx, dh0s};
        TRY_RNNCC(rnncc_backward_data(model, &gio, g.ws, wsb, g.reserve, rsb, NULL));
        TRY_RNNCC(rnncc_backward_weights(model, &gio, g.dw, RNNCC_WGRAD_SET, g.ws, wsb, g.reserve, rsb, NULL));
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "parity: error: rnncc failed on the device: %s\n", cudaGetErrorString(e));
        goto out;
    }

    if (!(r->y = download(g.y, ny)) || !(r->ty = download(g.ty, ny))) goto out;
    for (int k = 0; k < c->spec->nstates; k++)
        if (!(r->hT[k] = download(g.hT[k], state_n[k])) || !(r->thT[k] = download(g.thT[k], state_n[k]))) goto out;
    if (c->backward) {
        if (!(r->dx = download(g.dx, c->x.n)) || !(r->dw = download(g.dw, r->nw))) goto out;
        for (int k = 0; k < c->spec->nstates; k++)
            if (!(r->dh0[k] = download(g.dh0[k], state_n[k]))) goto out;
    }
    status = 0;
out:
    dev_free(&g);
    free(pbuf);
    free(dbuf);
    rnncc_model_destroy(model);
    rnncc_program_destroy(prog);
    return status;
}
