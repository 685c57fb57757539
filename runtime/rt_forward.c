/* The forward pass on the GPU: per layer and direction, the hoisted GEMMs over all T*N
 * columns, then per step the plan's groups (generated kernels) and GEMMs (cuBLASLt).
 * Key idea: the whole pass is issued once into a CUDA graph on the model's own streams and
 * replayed while its arguments stay the same, so per-step launch overhead is paid once; the
 * two directions of a layer run on two streams, and the layers of a unidirectional stack
 * as a wavefront: layer l+1 works on a chunk of time as soon as layer l has finished it
 * (per-step backend only: a persistent kernel holds every multiprocessor). */
#include <string.h>

#include "codegen/cg.h"
#include "rt_internal.h"

static rnncc_status run_gemm(RtBind *is, int j, int64_t t) {
    rnncc_model *m = is->m;
    const SchedGemm *g = &m->plan->gemms[j];
    const PlanLayout *L = is->unit->layout;
    int hoisted = g->program == SCHED_HOIST, post = g->program == SCHED_POST;
    int64_t cols = hoisted ? is->hcols : post ? (is->pt1 - is->pt0) * is->r->N : is->r->N;
    if (cols == 0) return RNNCC_OK;
    int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer], ldb;
    if (M > INT32_MAX || K > INT32_MAX)
        return rt_fail(m, RNNCC_ERR_OVERFLOW, "a GEMM of %lld x %lld exceeds cuBLAS's 32-bit sizes", (long long)M, (long long)K);
    const float *w = rt_gemm_weights(is, m->weights, j);
    const float *b = rt_operand(is, g->operand, t, 0, &ldb);
    const unsigned short *b16 = rt_operand16(is, g->operand, t);
    float *c = rt_buffer_at(is, is->bufs, g->out_buffer, t);
    int group, out = post ? rt_post_direct(is, j, &group) : -1;
    if (out >= 0) c = is->y[out], W = is->ldy[out]; /* straight into the output its copy group would write */
    if (hoisted) { /* the window's columns only */
        b += is->hcol0 * ldb;
        if (b16) b16 += is->hcol0 * ldb;
        c += is->hcol0 * W;
    }
    if (post) { /* the window's steps' columns: of step and post values, all steps' kept from step 0's (t = 0) */
        b += is->pt0 * is->r->N * ldb;
        if (b16) b16 += is->pt0 * is->r->N * ldb;
        c += is->pt0 * is->r->N * W;
    }
    /* C[W x cols] (column-major) = W_stack^T (the row-major [M][K] block read as column-major K x M) * B[K x cols] */
    /* added into the hoisted partner's columns of the step, where c lies */
    int sum = rt_value_summed(is->r, is->unit, g->out_buffer) >= 0;
    if (post && rt_half(m) && !b16 && cg_value_twinned(m->plan, m->plan->node[g->operand].buffer) &&
        !(m->fold && sched_gemm_param(m->plan, j) >= m->fold->user->nparams))
        /* a value without its twin (a persistent forward in inference writes none: rt_buf16_at) multiplied with the
         * user's weights in tf32, fp32 operands as they are, not rounded to 16 bits in a launch of their own */
        return rt_gemm_lt(m, is->lane, is->stream, CUBLAS_OP_T, CUBLAS_OP_N, M, cols, K, w, K, b, ldb, c, W, sum, RNNCC_TF32);
    const float *wt;
    RT_TRY(rt_wt_weights(is, j, w, M, K, cols, b, ldb, c, W, sum, &wt));
    if (wt) /* C = W_stack (its transposed copy, column-major M x K) * B */
        return rt_gemm_lt(m, is->lane, is->stream, CUBLAS_OP_N, CUBLAS_OP_N, M, cols, K, wt, M, b, ldb, c, W, sum, RNNCC_FP32);
    return rt_gemm(m, is->lane, is->stream, CUBLAS_OP_T, CUBLAS_OP_N, M, cols, K, w, K, b, ldb, c, W, sum, NULL, b16,
                   g->program == SCHED_STEP ? rt_operand3(is, g->operand, t) : NULL);
}

void rt_args(const RtBind *is, SchedProgram prog, int64_t t, RnnArgs *a) {
    const rnncc_model *m = is->m;
    int hoisted = prog == SCHED_HOIST, step = prog == SCHED_STEP;
    memset(a, 0, sizeof *a);
    a->params = m->weights + is->unit->weight_offset;
    a->params16 = rt_half_params(m, is->unit->weight_offset);
    a->x = is->x + (hoisted ? is->hcol0 * is->ldx : 0);
    a->ldx = is->ldx;
    for (int b = 0; b < m->plan->nbuffers; b++) {
        a->buf[b] = rt_buffer_at(is, is->bufs, b, t);
        a->buf16[b] = rt_buf16_at(is, b, t);
        if (hoisted && m->plan->buffers[b].program == SCHED_HOIST) {
            a->buf[b] += is->hcol0 * is->unit->layout->buffer_width[b];
            if (a->buf16[b]) a->buf16[b] += is->hcol0 * is->unit->layout->buffer_width[b];
        }
    }
    for (int k = 0; k < m->cell->nstates; k++) {
        a->state_prev[k] = rt_state_slot(is, k, t);
        a->state_next[k] = rt_state_slot(is, k, t + 1);
        a->state16[k] = rt_state_slot16(is, k, t + 1);
        a->state3[k] = step ? rt_state_slot3(is, k, t + 1) : NULL;
        a->state_final[k] = step ? is->final[k] : NULL;
    }
    a->bf16 = m->precision == RNNCC_BF16;
    for (int o = 0; o < m->cell->noutputs; o++) { a->y[o] = is->y[o]; a->ldy[o] = is->ldy[o]; }
    a->lengths = is->lengths;
    a->t = (int)(prog == SCHED_POST ? is->pt0 : t); /* post kernels: their window of steps, from step 0's buffers */
    a->t_end = (int)(prog == SCHED_POST ? is->pt1 : 0);
    a->reverse = is->unit->dir;
    a->summed = rt_sums_values(is->r, is->unit);
    a->T = (int)(hoisted ? is->hcols / is->r->N : is->r->T);
    a->N = (int)is->r->N;
}

static rnncc_status run_group(RtBind *is, int gi, int64_t t) {
    rnncc_model *m = is->m;
    const RtModule *mod = is->unit->module;
    SchedProgram prog = m->plan->groups[gi].program;
    for (int j = 0, group; prog == SCHED_POST && j < m->plan->ngemms; j++)
        if (rt_post_direct(is, j, &group) >= 0 && group == gi) return RNNCC_OK; /* its GEMM wrote the output */
    /* a hoisted or post kernel covers its window's steps */
    int64_t T = prog == SCHED_HOIST ? is->hcols / is->r->N : prog == SCHED_POST ? is->pt1 - is->pt0 : is->r->T;
    int64_t items = cg_group_items(is->unit->layout, gi, T, is->r->N);
    if (items < 0) return rt_fail(m, RNNCC_ERR_OVERFLOW, "kernel %d: its work items overflow", gi);
    if (items == 0) return RNNCC_OK;
    RnnArgs a;
    rt_args(is, prog, prog == SCHED_POST ? 0 : t, &a);
    void *args[] = {&a};
    return rt_launch_group(m, (const void *)mod->kernels[gi], cg_grid_blocks(items), args, is->stream, 1);
}

static rnncc_status run_program(RtBind *is, SchedProgram prog, int64_t t) {
    const Plan *p = is->m->plan;
    for (int k = 0; k <= p->phases[prog]; k++) {
        for (int i = 0; i < p->ngroups; i++)
            if (p->groups[i].program == prog && p->groups[i].index == k) RT_TRY(run_group(is, i, t));
        for (int j = 0; j < p->ngemms; j++)
            if (p->gemms[j].program == prog && p->gemms[j].phase == k) RT_TRY(run_gemm(is, j, t));
    }
    return RNNCC_OK;
}

/* A layer-direction's initial states (from h0, or zeros), and where its last step writes its final
 * states (RtBind.final: io->hT's blocks); in the same launch, layer 0's rounded input and a
 * persistent kernel's zeros. */
static rnncc_status unit_begin(RtBind *is, const rnncc_io *io) {
    rnncc_model *m = is->m;
    const IrCell *c = m->cell;
    int u = is->unit->layer * m->dirs + is->unit->dir;
    RT_CUBLAS(m, cublasSetStream(is->blas, is->stream));
    RnnStateCopies a = {.count = c->nstates};
    for (int k = 0; k < c->nstates; k++) {
        int64_t n = io->N * ir_shape_numel(&c->states[k].shape, m->dimval[0]);
        /* slot 0, and its 16-bit twin, which the first step's GEMM reads (the kernels write every later
         * slot's): from h0, or zeros */
        const float *h0 = io->h0 && io->h0[k] ? io->h0[k] + u * n : NULL;
        is->final[k] = io->hT && io->hT[k] ? io->hT[k] + u * n : NULL;
        if (m->fold && k == m->fold->state) { /* the folded state from zero; s_0 enters and s_T leaves in rt_fold.c */
            int64_t un = io->N * rt_fold_rows(m, 2); /* the user's state, of P's rows */
            is->fold_s0 = io->h0 && io->h0[k] ? io->h0[k] + u * un : NULL;
            is->fold_sT = io->hT && io->hT[k] ? io->hT[k] + u * un : NULL;
            h0 = NULL;
            is->final[k] = is->fold_sT && !rt_fold_final_from_post(m) ? is->fold_z : NULL; /* z_T, for P z_T */
        }
        a.c[k] = (RnnStateCopy){.src = h0, .dst = rt_state_slot(is, k, 0), .dst16 = is->states16[k], .n = n};
    }
    /* the entry's s_0 in 16 bits (rt_fold_entry's operand, no rounding launch of its own) */
    unsigned short *s016 = is->fold_s0 ? is->fold_s016 : NULL;
    if (is->fold_s0_kept) { /* training: s_0, P and U_k kept for the weight gradients (rt_fold_wgrad) */
        RT_TRY(rt_copy_add(m, is->stream, &a, (RnnStateCopy){.src = is->fold_s0, .dst = is->fold_s0_kept, .dst16 = s016, .n = io->N * rt_fold_rows(m, 2)}));
        RT_TRY(rt_fold_keep(is, &a));
    } else if (s016) {
        RT_TRY(rt_copy_add(m, is->stream, &a, (RnnStateCopy){.src = is->fold_s0, .dst16 = s016, .n = io->N * rt_fold_rows(m, 2)}));
    }
    if (is->unit->layer == 0) rt_half_x_copy(m, &a); /* layer 0's input rounded in the same launch (rt_half_input) */
    if (is->persist && io->T > 0) RT_TRY(rt_persist_zeros(is, &a)); /* its kernel's counter and flags, zeroed */
    return rt_copy_states(m, is->stream, &a);
}

/* Steps t0 .. t1-1 of a layer-direction, after the hoisted program over the same steps'
 * columns (all of them when the whole sequence is one chunk), then the post program over them. */
static rnncc_status unit_chunk(RtBind *is, int64_t t0, int64_t t1) {
    is->hcol0 = t0 * is->r->N;
    is->hcols = (t1 - t0) * is->r->N;
    is->pt0 = t0;
    is->pt1 = t1;
    if (t1 == t0) return RNNCC_OK;
    RT_TRY(run_program(is, SCHED_HOIST, 0));
    if (t0 == 0) RT_TRY(rt_fold_entry(is)); /* into the first steps' hoisted columns, all in this chunk */
    if (is->persist) RT_TRY(rt_persist_launch(is, t0, t1)); /* zeroed by unit_begin */
    else
        for (int64_t t = t0; t < t1; t++) RT_TRY(run_program(is, SCHED_STEP, t));
    return run_program(is, SCHED_POST, 0);
}

/* A layer-direction's final states, into io->hT, where no step ran (T = 0: its initial states); else
 * its last step's kernels wrote them (RnnArgs.state_final). */
static rnncc_status unit_end(RtBind *is, const rnncc_io *io) {
    rnncc_model *m = is->m;
    const IrCell *c = m->cell;
    RT_TRY(rt_fold_final(is));
    if (io->T > 0) return RNNCC_OK;
    int u = is->unit->layer * m->dirs + is->unit->dir;
    RnnStateCopies a = {.count = 0};
    for (int k = 0; k < c->nstates; k++) {
        if (!io->hT || !io->hT[k] || (m->fold && k == m->fold->state)) continue;
        int64_t n = io->N * ir_shape_numel(&c->states[k].shape, m->dimval[0]);
        a.c[a.count++] = (RnnStateCopy){.src = rt_state_slot(is, k, io->T), .dst = io->hT[k] + u * n, .n = n};
    }
    return rt_copy_states(m, is->stream, &a);
}

/* Layers one after the other; the two directions of a layer on two streams. */
static rnncc_status issue_layers(rnncc_model *m, const rnncc_io *io, const RtRegions *r, char *ws, char *reserve,
                                 const RtPersist *const persist[2]) {
    for (int l = 0; l < m->layers; l++) {
        if (m->dirs == 2) RT_TRY(rt_fork_lanes(m)); /* both directions wait for everything before this layer */
        for (int d = 0; d < m->dirs; d++) {
            RtBind is;
            rt_bind(&is, m, r, l, d, d, io->x, io->y, ws, reserve); /* layer after layer: a direction's lane */
            is.lengths = io->lengths ? (const int *)(ws + r->lengths) : NULL;
            is.persist = persist[is.unit->layout != m->layout[0]];
            RT_TRY(unit_begin(&is, io));
            RT_TRY(unit_chunk(&is, 0, io->T));
            RT_TRY(unit_end(&is, io));
        }
        if (m->dirs == 2) RT_TRY(rt_join_lanes(m));
    }
    return RNNCC_OK;
}

/* A unidirectional stack as a wavefront: the sequence in RT_WAVE_CHUNKS chunks of steps;
 * layer l runs on stream l % 2 and starts chunk c once layer l-1 has finished it, so
 * neighbouring layers overlap. Layers l and l+2 share a stream (and, in inference, their
 * buffers), so they never overlap each other. */
static rnncc_status issue_wavefront(rnncc_model *m, const rnncc_io *io, const RtRegions *r, char *ws, char *reserve) {
    int64_t chunks = rt_wave_chunks(io->T), t0, t1;
    RT_TRY(rt_fork_lanes(m)); /* stream 1 starts after the caller's work */
    for (int l = 0; l < m->layers; l++) {
        RtBind is;
        rt_bind(&is, m, r, l, 0, l % 2, io->x, io->y, ws, reserve);
        is.lengths = io->lengths ? (const int *)(ws + r->lengths) : NULL;
        RT_TRY(unit_begin(&is, io));
        for (int64_t c = 0; c < chunks; c++) {
            if (l > 0) RT_CUDA(m, cudaStreamWaitEvent(is.stream, m->wave_events[(l - 1) * RT_WAVE_CHUNKS + c], 0));
            rt_wave_chunk(io->T, c, &t0, &t1);
            RT_TRY(unit_chunk(&is, t0, t1));
            RT_CUDA(m, cudaEventRecord(m->wave_events[l * RT_WAVE_CHUNKS + c], is.stream));
        }
        RT_TRY(unit_end(&is, io));
    }
    return rt_join_lanes(m); /* stream 0 ends after everything */
}

int64_t rt_wave_chunks(int64_t T) { return T < RT_WAVE_CHUNKS ? T : RT_WAVE_CHUNKS; }

void rt_wave_chunk(int64_t T, int64_t c, int64_t *t0, int64_t *t1) {
    int64_t chunks = rt_wave_chunks(T);
    *t0 = T * c / chunks;
    *t1 = T * (c + 1) / chunks;
}

rnncc_status rt_fork_lanes(rnncc_model *m) {
    RT_CUDA(m, cudaEventRecord(m->events[0], m->streams[0]));
    RT_CUDA(m, cudaStreamWaitEvent(m->streams[1], m->events[0], 0));
    return RNNCC_OK;
}

rnncc_status rt_join_lanes(rnncc_model *m) {
    RT_CUDA(m, cudaEventRecord(m->events[1], m->streams[1]));
    RT_CUDA(m, cudaStreamWaitEvent(m->streams[0], m->events[1], 0));
    return RNNCC_OK;
}

rnncc_status rt_issue_forward(rnncc_model *m, const rnncc_io *io, const RtRegions *r, char *ws, char *reserve) {
    const RtPersist *persist[2];
    RT_TRY(rt_persist_choose(m, io->N, 0, persist, NULL, 0));
    RT_TRY(rt_half_begin(m, r, ws, reserve, RT_HALF_CONVERT)); /* the 16-bit copy, but a folded cell's V: */
    RT_TRY(rt_fold_derive(m)); /* V = U P (in the 16-bit modes from the copy, into it), before anything reads it */
    RT_TRY(rt_half_input(m, r, ws, reserve, io->x, 1)); /* x rounded once for its GEMMs, in training the weights' too */
    rt_x3_begin(m, r, ws); /* RNNCC_TF32X3: the weights split as the GEMMs first take them */
    rt_wt_begin(m, r, ws); /* fp32: step GEMMs' weights transposed as they first take them, where that pays */
    /* a persistent kernel takes every multiprocessor, so layers cannot overlap: one launch a layer */
    if (m->wavefront && io->T > 0 && !persist[0]) return issue_wavefront(m, io, r, ws, reserve);
    return issue_layers(m, io, r, ws, reserve, persist);
}

rnncc_status rt_join_user_stream(rnncc_model *m, cudaStream_t user, int before) {
    cudaStream_t from = before ? user : m->streams[0], to = before ? m->streams[0] : user;
    RT_CUDA(m, cudaEventRecord(m->events[before ? 2 : 3], from));
    RT_CUDA(m, cudaStreamWaitEvent(to, m->events[before ? 2 : 3], 0));
    return RNNCC_OK;
}

/* The graph key: every argument the captured pass depends on. */
static size_t graph_key(const rnncc_model *m, const rnncc_io *io, const void *ws, const void *reserve, unsigned char *key) {
    size_t n = 0;
#define PUT(v) do { memcpy(key + n, &(v), sizeof(v)); n += sizeof(v); } while (0)
    const void *x = io->x, *len = io->lengths ? ws : NULL;
    /* whether the pass derives what the model keeps from the weights (a graph captured deriving would redo it
     * every replay; one without, never) */
    const int derives = m->keep_derived && !m->derived_fresh;
    PUT(io->T); PUT(io->N); PUT(x); PUT(ws); PUT(reserve); PUT(len); PUT(derives);
    for (int o = 0; o < m->cell->noutputs; o++) { const void *y = io->y ? io->y[o] : NULL; PUT(y); }
    for (int k = 0; k < m->cell->nstates; k++) {
        const void *h0 = io->h0 ? io->h0[k] : NULL, *hT = io->hT ? io->hT[k] : NULL;
        PUT(h0); PUT(hT);
    }
#undef PUT
    return n;
}

static rnncc_status validate_io(rnncc_model *m, const rnncc_io *io) {
    if (!io) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "io is NULL");
    RT_TRY(rt_check_sizes(m, io->T, io->N));
    RT_TRY(rt_host_readable(m, "io->lengths", io->lengths));
    RT_TRY(rt_host_readable(m, "io->y", io->y));
    RT_TRY(rt_host_readable(m, "io->h0", io->h0));
    RT_TRY(rt_host_readable(m, "io->hT", io->hT));
    if (io->T > 0 && !io->x) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "io->x is NULL");
    if (io->lengths)
        for (int64_t n = 0; n < io->N; n++)
            if (io->lengths[n] < 0 || io->lengths[n] > io->T)
                return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "io->lengths[%lld] is %d; it must be in 0..T (T = %lld)",
                               (long long)n, io->lengths[n], (long long)io->T);
    return RNNCC_OK;
}

/* Runs issue() directly: joins the user's stream before and after, and remembers key as seen. */
static rnncc_status run_direct(rnncc_model *m, RtGraph *g, const void *key, size_t keylen, rnncc_status (*issue)(void *),
                               void *ctx, cudaStream_t stream) {
    RT_TRY(rt_join_user_stream(m, stream, 1));
    RT_TRY(issue(ctx));
    memcpy(g->seen, key, keylen);
    g->seenlen = keylen;
    return rt_join_user_stream(m, stream, 0);
}

rnncc_status rt_streams_capturing(rnncc_model *m, int *capturing) {
    *capturing = -1;
    for (int i = 0; i < 2 && *capturing < 0; i++) {
        enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
        RT_CUDA(m, cudaStreamIsCapturing(m->streams[i], &st));
        if (st != cudaStreamCaptureStatusNone) *capturing = i;
    }
    return RNNCC_OK;
}

/* Fails when either of the model's streams is still capturing (after a capture ended, it must not). */
static rnncc_status streams_released(rnncc_model *m) {
    int i;
    RT_TRY(rt_streams_capturing(m, &i));
    if (i >= 0)
        return rt_fail(m, RNNCC_ERR_CUDA, "stream %d still captures after its capture ended: the model's streams "
                       "cannot be used again (destroy the model)", i);
    return RNNCC_OK;
}

/* Captures issue() into g, holding the process-wide lock (rt_lock.c). Returns 1 in *spoiled (and
 * RNNCC_OK) when another thread's call invalidated the capture (cudaDeviceSynchronize, destroying
 * a cuBLAS handle outside rnncc: docs/runtime.md, Threads): nothing captured ran. */
static rnncc_status capture(rnncc_model *m, RtGraph *g, const void *key, size_t keylen, rnncc_status (*issue)(void *),
                            void *ctx, int *spoiled) {
    *spoiled = 0;
    if (g->exec) { cudaGraphExecDestroy(g->exec); g->exec = NULL; }
    cudaGraph_t graph = NULL;
    rt_exclusive_begin();
    cudaError_t e = cudaStreamBeginCapture(m->streams[0], cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        rt_exclusive_end();
        return rt_cuda_fail(m, e, "cudaStreamBeginCapture", __FILE__, __LINE__);
    }
    m->capturing = 1;
    rnncc_status s = issue(ctx);
    m->capturing = 0;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t q = cudaStreamIsCapturing(m->streams[0], &st);
    e = cudaStreamEndCapture(m->streams[0], &graph);
    rt_exclusive_end();
    int invalidated = (q == cudaSuccess && st == cudaStreamCaptureStatusInvalidated) || e == cudaErrorStreamCaptureInvalidated;
    if (invalidated || s != RNNCC_OK || e != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError(); /* the failed calls' error, which is not sticky */
        RT_TRY(streams_released(m));
        if (!invalidated) return s != RNNCC_OK ? s : rt_cuda_fail(m, e, "cudaStreamEndCapture", __FILE__, __LINE__);
        m->error[0] = 0; /* what issue() said of its spoiled calls: this call goes on */
        m->spoiled_captures++;
        *spoiled = 1;
        return RNNCC_OK;
    }
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) { g->exec = NULL; return rt_cuda_fail(m, e, "cudaGraphInstantiate", __FILE__, __LINE__); }
    memcpy(g->key, key, keylen);
    g->keylen = keylen;
    return RNNCC_OK;
}

int rt_graph_knows(const RtGraph *g, const void *key, size_t keylen) {
    return (g->exec && keylen == g->keylen && memcmp(key, g->key, keylen) == 0) ||
           (keylen == g->seenlen && memcmp(key, g->seen, keylen) == 0);
}

rnncc_status rt_run(rnncc_model *m, RtGraph *g, const void *key, size_t keylen, rnncc_status (*issue)(void *),
                    void *ctx, cudaStream_t stream) {
    if (keylen > sizeof g->key) return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "graph key too long");
    int replay = m->use_graphs && g->exec && keylen == g->keylen && memcmp(key, g->key, keylen) == 0;
    int again = m->use_graphs && !replay && keylen == g->seenlen && memcmp(key, g->seen, keylen) == 0;
    if (!replay && !again) /* new arguments: run directly, timing new GEMM shapes on the way */
        return run_direct(m, g, key, keylen, issue, ctx, stream);
    if (again) {
        int spoiled;
        RT_TRY(capture(m, g, key, keylen, issue, ctx, &spoiled));
        if (spoiled) /* run it directly this time; the next call with these arguments captures again */
            return run_direct(m, g, key, keylen, issue, ctx, stream);
    }
    RT_CUDA(m, cudaGraphLaunch(g->exec, stream));
    /* the last replay on the caller's stream, which may read the model's kept 16-bit weights */
    if (m->half_kept) RT_CUDA(m, cudaEventRecord(m->events[4], stream));
    return RNNCC_OK;
}

typedef struct ForwardJob {
    rnncc_model *m;
    const rnncc_io *io;
    const RtRegions *r;
    char *ws, *reserve;
} ForwardJob;

static rnncc_status forward_job(void *p) {
    ForwardJob *j = p;
    return rt_issue_forward(j->m, j->io, j->r, j->ws, j->reserve);
}

/* The forward's buffers lie apart where it writes them, and lie where the GPU reaches them (rt_spans.c); h0 and hT
 * may be one buffer. A folded model's forward writes its weights too (V = U P derived into them, rt_fold_derive). */
static rnncc_status forward_spans(rnncc_model *m, const rnncc_io *io, const void *ws, const void *reserve,
                                  const RtRegions *r) {
    rnncc_model_sizes z;
    RT_TRY(rnncc_model_get_sizes(m, &z));
    RtSpans s;
    rt_spans_begin(&s, m, &z, ws, r->workspace, reserve, r->reserve, io->x, io->T, io->N, m->fold != NULL);
    rt_span_outputs(&s, m, &z, "io->y", (const float *const *)io->y, io->T, io->N, 1);
    rt_span_states(&s, m, &z, "io->h0", io->h0, io->N, 0, 1);
    rt_span_states(&s, m, &z, "io->hT", (const float *const *)io->hT, io->N, 1, 1);
    RT_TRY(rt_spans_check(m, &s));
    return rt_spans_reachable(m, &s);
}

static rnncc_status forward(rnncc_model *m, const rnncc_io *io, void *ws, size_t wsb, void *reserve, size_t rsb,
                            cudaStream_t stream, const RtRegions *r) {
    if (r->workspace && !ws)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "workspace is NULL; this call needs %zu bytes (rnncc_workspace_size)",
                       r->workspace);
    if (wsb < r->workspace)
        return rt_fail(m, RNNCC_ERR_WORKSPACE, "workspace has %zu bytes; this call needs %zu (rnncc_workspace_size)", wsb, r->workspace);
    if (reserve && rsb < r->reserve)
        return rt_fail(m, RNNCC_ERR_WORKSPACE, "reserve has %zu bytes; training needs %zu (rnncc_reserve_size)", rsb, r->reserve);
    unsigned char key[sizeof m->graph[0].key];
    size_t keylen = graph_key(m, io, ws, reserve, key);
    /* new arguments (the key holds every pointer and size the checks read): their buffers judged */
    if (!rt_graph_knows(&m->graph[0], key, keylen)) RT_TRY(forward_spans(m, io, ws, reserve, r));
    if (io->lengths)
        RT_CUDA(m, cudaMemcpyAsync((char *)ws + r->lengths, io->lengths, (size_t)io->N * sizeof(int), cudaMemcpyHostToDevice, stream));
    ForwardJob job = {m, io, r, ws, reserve};
    RT_TRY(rt_run(m, &m->graph[0], key, keylen, forward_job, &job, stream));
    /* this pass derived what the model keeps (the 16-bit copy, a folded cell's V), if the weights had changed;
     * not where the caller captures it into a graph of its own, which derives only when launched (until the
     * model sees an uncaptured forward, every forward derives) */
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (stream) RT_CUDA(m, cudaStreamIsCapturing(stream, &st));
    if (m->keep_derived && st == cudaStreamCaptureStatusNone) m->derived_fresh = 1;
    if (reserve && rt_half(m)) m->half_train_copy = m->half_kept ? 2 : 1;
    return RNNCC_OK;
}

rnncc_status rnncc_forward(rnncc_model *m, const rnncc_io *io, void *ws, size_t wsb, void *reserve, size_t rsb, void *stream) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    m->error[0] = 0;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaError_t e = cudaSetDevice(m->device); /* first: the checks ask the driver about pointers, on this device */
    RtRegions r;
    memset(&r, 0, sizeof r);
    rnncc_status s = e != cudaSuccess ? rt_cuda_fail(m, e, "cudaSetDevice", __FILE__, __LINE__) : validate_io(m, io);
    if (s == RNNCC_OK) s = rt_regions(m, io->T, io->N, reserve != NULL, &r);
    if (s == RNNCC_OK) {
        s = forward(m, io, ws, wsb, reserve, rsb, (cudaStream_t)stream, &r);
        rt_calls_forward(&m->calls, io, reserve, s == RNNCC_OK);
    }
    if (prev >= 0 && prev != m->device) cudaSetDevice(prev);
    rt_regions_free(&r);
    return s;
}
