/* The backward pass on the GPU, derived from the plan: per layer (last first) and direction,
 * the step program in reverse for t = T-1 .. 0 (each group's generated backward kernel, then
 * the transposed GEMMs of the phase before it), then the hoisted program in reverse; weight
 * gradients afterwards as one GEMM per stacked weight block over all T*N columns. On the
 * persistent backend the step loop is one launch of the generated backward kernel (rt_persist.c).
 * A unidirectional stack on the per-step backend runs as a wavefront over chunks of time, the
 * mirror of the forward's (issue_backward_wavefront).
 * Key idea: exactly the CPU executor's backward (ir/sched_exec.c), which is tested against the
 * reference: adjoints live where their values live and are accumulated (a kernel that alone sends
 * a value's adjoint writes it into its zeroed buffer); folded biases are summed from their GEMM
 * results' adjoints after the loop (Plan.param_fold). */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "rt_internal.h"

static int64_t numel(const rnncc_model *m, const IrShape *s) { return ir_shape_numel(s, m->dimval[0]); }

static rnncc_status validate(rnncc_model *m, const rnncc_grad_io *io, void *reserve, int weights) {
    if (!io) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "io is NULL");
    if (!reserve) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "reserve is NULL: run a training forward (with a reserve) first");
    RT_TRY(rt_check_sizes(m, io->T, io->N));
    RT_TRY(rt_host_readable(m, "io->lengths", io->lengths));
    RT_TRY(rt_host_readable(m, "io->dy", io->dy));
    RT_TRY(rt_host_readable(m, "io->dhT", io->dhT));
    RT_TRY(rt_host_readable(m, "io->dh0", io->dh0));
    if (io->T > 0 && !io->x) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "io->x is NULL");
    for (int64_t n = 0; io->lengths && n < io->N; n++)
        if (io->lengths[n] < 0 || io->lengths[n] > io->T)
            return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "io->lengths[%lld] is %d; it must be in 0..T (T = %lld)",
                           (long long)n, io->lengths[n], (long long)io->T);
    char why[512];
    if (!rt_calls_agree(&m->calls, io, reserve, m->api->noutputs, m->api->nstates, weights, why, sizeof why))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "%s", why);
    return RNNCC_OK;
}

static rnncc_status prepare(rnncc_model *m, const rnncc_grad_io *io, void *ws, size_t wsb, void *reserve, size_t rsb,
                            int weights, RtRegions *r) {
    RT_TRY(validate(m, io, reserve, weights));
    RT_TRY(rt_regions(m, io->T, io->N, 1, r));
    if (wsb < r->workspace || (r->workspace && !ws)) {
        rnncc_status s = !ws ? rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "workspace is NULL; training needs %zu bytes "
                                       "(rnncc_workspace_size with training = 1)", r->workspace)
                             : rt_fail(m, RNNCC_ERR_WORKSPACE, "workspace has %zu bytes; training needs %zu "
                                       "(rnncc_workspace_size with training = 1)", wsb, r->workspace);
        rt_regions_free(r);
        return s;
    }
    if (rsb < r->reserve) {
        rnncc_status s = rt_fail(m, RNNCC_ERR_WORKSPACE, "reserve has %zu bytes; training needs %zu (rnncc_reserve_size)", rsb, r->reserve);
        rt_regions_free(r);
        return s;
    }
    return RNNCC_OK;
}

/* The argument block of a backward kernel at step t (hoisted kernels: t unused; post kernels: t = 0, their
 * window in t, t_end, set by backward_group). */
static void backward_args(const RtBind *b, int64_t t, RnnArgs *a) {
    const rnncc_model *m = b->m;
    const IrCell *c = m->cell;
    memset(a, 0, sizeof *a);
    a->params = m->weights + b->unit->weight_offset;
    a->params16 = rt_half_params(m, b->unit->weight_offset);
    a->x = b->x;
    a->ldx = b->ldx;
    for (int i = 0; i < m->plan->nbuffers; i++) {
        a->buf[i] = rt_buffer_at(b, b->bufs, i, t);
        a->dbuf[i] = rt_buffer_at(b, b->dbufs, i, t);
        a->dbuf16[i] = rt_dbuf16_at(b, i, t);
        a->dbuf3[i] = b->dbufs3[i];
    }
    a->bf16 = m->precision == RNNCC_BF16;
    for (int k = 0; k < c->nstates; k++) {
        int64_t half = b->r->N * numel(m, &c->states[k].shape);
        a->state_prev[k] = rt_state_slot(b, k, t);
        a->state_next[k] = rt_state_slot(b, k, t + 1);
        a->dstate_prev[k] = b->dstate[k] + b->dcur * half;
        a->dstate_next[k] = b->dstate[k] + (1 - b->dcur) * half;
    }
    for (int o = 0; o < c->noutputs; o++) { a->dy[o] = b->dy[o]; a->ldy[o] = b->ldy[o]; }
    a->dx = b->dx;
    a->dparam = b->dparam;
    a->lengths = b->lengths;
    a->t = (int)t;
    a->reverse = b->unit->dir;
    a->dshared = rt_shares_adjoints(b->unit);
    a->summed = rt_sums_values(b->r, b->unit);
    a->twins_only = rt_twins_only(b);
    a->T = (int)b->r->T;
    a->N = (int)b->r->N;
}

static rnncc_status backward_group(RtBind *b, int gi, int64_t t) {
    rnncc_model *m = b->m;
    SchedProgram prog = m->plan->groups[gi].program;
    for (int j = 0, group; prog == SCHED_POST && j < m->plan->ngemms; j++)
        if (rt_post_direct_dy(b, j, &group) >= 0 && group == gi) return RNNCC_OK; /* dy is its adjoint */
    int64_t items = cg_backward_group_items(b->unit->layout, gi, prog == SCHED_POST ? b->pt1 - b->pt0 : b->r->T, b->r->N);
    if (items < 0) return rt_fail(m, RNNCC_ERR_OVERFLOW, "backward kernel %d: its work items overflow", gi);
    if (items == 0) return RNNCC_OK;
    RnnArgs a;
    backward_args(b, prog == SCHED_POST ? 0 : t, &a);
    if (prog != SCHED_STEP) memset(a.dbuf3, 0, sizeof a.dbuf3); /* one step's twins */
    if (prog == SCHED_POST) a.t = (int)b->pt0, a.t_end = (int)b->pt1;
    void *args[] = {&a};
    /* plainly: launched as dependents too, training changed within noise (bench/NOTES.md, section 16) */
    return rt_launch_group(m, (const void *)b->unit->module->bkernels[gi], cg_grid_blocks(items), args, b->stream, 0);
}

/* d(operand) += W^T d(out) over the GEMM's columns at step t (hoisted: over the bound window's); = where the GEMM
 * alone writes the input's adjoint (RtBind.dx_gemm: sched_input_gemm; no memset before it, bench/NOTES.md
 * section 117). */
static rnncc_status backward_gemm_data(RtBind *b, int j, int64_t t) {
    rnncc_model *m = b->m;
    const SchedGemm *g = &m->plan->gemms[j];
    const PlanLayout *L = b->unit->layout;
    int hoisted = g->program == SCHED_HOIST, post = g->program == SCHED_POST;
    int64_t cols = hoisted ? b->hcols : post ? (b->pt1 - b->pt0) * b->r->N : b->r->N, ldo;
    if (post) t = 0; /* from step 0's kept columns */
    float *dop = rt_operand(b, g->operand, t, 1, &ldo);
    if (!dop || cols == 0) return RNNCC_OK; /* the input's adjoint is not wanted */
    int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer];
    const float *dout = rt_buffer_at(b, b->dbufs, g->out_buffer, t);
    const unsigned short *dout16 = rt_dbuf16_at(b, g->out_buffer, t);
    int out = post ? rt_post_reads_dy(b, j) : -1;
    if (out >= 0) dout = b->dy[out], W = b->ldy[out], dout16 = NULL; /* the adjoint its copy group would have written */
    if (hoisted) { /* the window's columns only (a wavefront chunk), else all T*N */
        dop += b->hcol0 * ldo;
        dout += b->hcol0 * W;
        if (dout16) dout16 += b->hcol0 * W;
    }
    if (post) { /* the window's steps' columns */
        dop += b->pt0 * b->r->N * ldo;
        dout += b->pt0 * b->r->N * W;
        if (dout16) dout16 += b->pt0 * b->r->N * W;
    }
    /* the split twin of one step's adjoint, which the step's kernel wrote where it spans the buffer */
    const float *dout3 = g->program == SCHED_STEP && W == M ? b->dbufs3[g->out_buffer] : NULL;
    return rt_gemm(m, b->lane, b->stream, CUBLAS_OP_N, CUBLAS_OP_N, K, cols, M, rt_gemm_weights(b, m->weights, j), K,
                   dout, W, dop, ldo, j != b->dx_gemm, NULL, dout16, dout3);
}

static rnncc_status backward_program(RtBind *b, SchedProgram prog, int64_t t) {
    const Plan *p = b->m->plan;
    for (int k = p->phases[prog]; k >= 0; k--) {
        for (int i = 0; i < p->ngroups; i++)
            if (p->groups[i].program == prog && p->groups[i].index == k) RT_TRY(backward_group(b, i, t));
        for (int j = 0; k > 0 && j < p->ngemms; j++)
            if (p->gemms[j].program == prog && p->gemms[j].phase == k - 1) RT_TRY(backward_gemm_data(b, j, t));
    }
    return RNNCC_OK;
}

rnncc_status rt_persist_backward_launch(RtBind *b) {
    RnnArgs a;
    backward_args(b, 0, &a);
    for (int k = 0; k < b->m->cell->nstates; k++) a.dstate_prev[k] = b->dstate[k];
    a.t_end = (int)b->r->T;
    return rt_persist_run(b, &a);
}

/* A layer-direction's backward, first: zeroed adjoints, dhT into the state adjoints. */
static rnncc_status unit_backward_begin(RtBind *b, const rnncc_grad_io *io) {
    rnncc_model *m = b->m;
    const IrCell *c = m->cell;
    const RtRegions *r = b->r;
    int u = b->unit->layer * m->dirs + b->unit->dir;
    RT_CUBLAS(m, cublasSetStream(b->blas, b->stream));
    for (int i = 0; i < m->plan->nbuffers; i++) {
        /* an adjoint that one kernel alone stores, every element, is left as it is where every
         * sequence runs all T steps: no column is left unwritten (the large LSTM: 0.4 GB a pass, 0.6 with the fp16 twin) */
        if (!b->lengths && cg_adjoint_twinned(m->plan, i)) continue;
        if (rt_adjoint_shared(m, u, i) >= 0) continue; /* another buffer's, zeroed as that one */
        size_t n = (size_t)(r->T * r->N * b->unit->layout->buffer_width[i]);
        if (!(rt_twins_only(b) && b->dbufs16[i])) /* else only its twin is written and read */
            RT_CUDA(m, cudaMemsetAsync(b->dbufs[i], 0, n * sizeof(float), b->stream));
        if (b->dbufs16[i]) /* what no kernel writes (ended sequences) is 0 in the twin too */
            RT_CUDA(m, cudaMemsetAsync(b->dbufs16[i], 0, n * sizeof(unsigned short), b->stream));
        /* and in the split twin, one step's columns reused by every step: a sequence's columns are written
         * from its last step down to step 0, so zeroed once they stay 0 while it has not begun */
        if (b->dbufs3[i])
            RT_CUDA(m, cudaMemsetAsync(b->dbufs3[i], 0, (size_t)(3 * r->N * b->unit->layout->buffer_width[i]) * sizeof(float),
                                       b->stream));
    }
    /* in one launch (rt_copy_add): the vector-parameter sums zeroed; the state adjoints, per step
     * halves 0 and 1 (half 1 first holds dhT), persistent slots t % 3 (slot T % 3 first holds dhT),
     * the others zeros; a persistent kernel's barrier counter */
    RnnStateCopies a = {.count = 0};
    RT_TRY(rt_copy_add(m, b->stream, &a, (RnnStateCopy){.dst = b->dparam, .n = b->unit->layout->acc_rows * r->N}));
    int first = b->persist ? (int)(r->T % 3) : 1;
    const float *fold_seed = NULL; /* the user's dhT of a folded state, which rt_fold_seed maps */
    for (int k = 0; k < c->nstates; k++) {
        int64_t half = r->N * numel(m, &c->states[k].shape);
        const float *seed = io->dhT && io->dhT[k] ? io->dhT[k] + u * half : NULL;
        int seeded = seed != NULL; /* slot first holds a seed, so is not zeroed */
        if (m->fold && k == m->fold->state) { /* slot first: rt_fold_seed's product, written whole (on lane 1 where aside) */
            fold_seed = io->dhT && io->dhT[k] ? io->dhT[k] + u * r->N * rt_fold_rows(m, 2) : NULL;
            seed = NULL;
            seeded = fold_seed && r->T > 0;
        }
        if (!seeded) { /* all three zeros */
            RT_TRY(rt_copy_add(m, b->stream, &a, (RnnStateCopy){.dst = b->dstate[k], .n = 3 * half}));
            continue;
        }
        RT_TRY(rt_copy_add(m, b->stream, &a, (RnnStateCopy){.dst = b->dstate[k], .n = first * half}));
        if (seed) RT_TRY(rt_copy_add(m, b->stream, &a, (RnnStateCopy){.src = seed, .dst = b->dstate[k] + first * half, .n = half}));
        RT_TRY(rt_copy_add(m, b->stream, &a,
                           (RnnStateCopy){.dst = b->dstate[k] + (first + 1) * half, .n = (2 - first) * half}));
    }
    for (int j = 0, group, out; rt_half(m) && j < m->plan->ngemms; j++) /* dy into a copied post GEMM's adjoint twin */
        if ((out = rt_post_direct_dy(b, j, &group)) >= 0) {
            unsigned short *twin = rt_dbuf16_at(b, m->plan->gemms[j].out_buffer, 0);
            RT_TRY(rt_copy_add(m, b->stream, &a, (RnnStateCopy){.src = b->dy[out], .dst16 = twin, .n = r->T * r->N * b->ldy[out]}));
        }
    if (b->persist && r->T > 0) RT_TRY(rt_persist_zeros(b, &a));
    b->dcur = 0;
    RT_TRY(rt_copy_states(m, b->stream, &a));
    if (!fold_seed) return RNNCC_OK;
    int s = m->fold->state;
    return rt_fold_seed(b, fold_seed, b->dstate[s] + first * r->N * numel(m, &c->states[s].shape));
}

/* The folded state's dh0 (rt_fold_dh0): early, right after the step loop on lane 1 where rt_fold_dh0_aside; else as
 * the unit ends. */
static rnncc_status fold_dh0(RtBind *b, const rnncc_grad_io *io, int early) {
    rnncc_model *m = b->m;
    if (!m->fold || !io->dh0 || !io->dh0[m->fold->state] || early != rt_fold_dh0_aside(b)) return RNNCC_OK;
    const int s = m->fold->state, u = b->unit->layer * m->dirs + b->unit->dir;
    const int64_t un = b->r->N * rt_fold_rows(m, 2);
    return rt_fold_dh0(b, io->dhT && io->dhT[s] ? io->dhT[s] + u * un : NULL, io->dh0[s] + u * un);
}

/* The post program over steps t0 .. t1-1 first (its adjoints enter the steps' as dy does), then those steps
 * per step (after the steps t1 .. T-1), then the hoisted program over their columns. */
static rnncc_status unit_backward_chunk(RtBind *b, const rnncc_grad_io *io, int64_t t0, int64_t t1) {
    b->pt0 = t0;
    b->pt1 = t1;
    if (t1 > t0) RT_TRY(backward_program(b, SCHED_POST, 0));
    RT_TRY(rt_fold_join(b)); /* the seed, where it went on lane 1 */
    for (int64_t t = t1 - 1; t >= t0; t--) { /* dstate_prev is zero: unit_backward_begin's, or step t+1's kernels' */
        RT_TRY(backward_program(b, SCHED_STEP, t));
        b->dcur = 1 - b->dcur;
    }
    if (t0 == 0) RT_TRY(fold_dh0(b, io, 1)); /* beside the hoisted program's backward */
    b->hcol0 = t0 * b->r->N;
    b->hcols = (t1 - t0) * b->r->N;
    return t1 > t0 ? backward_program(b, SCHED_HOIST, 0) : RNNCC_OK;
}

/* A layer-direction's backward, last: the adjoint of h0 into io->dh0. */
static rnncc_status unit_backward_end(RtBind *b, const rnncc_grad_io *io) {
    rnncc_model *m = b->m;
    const IrCell *c = m->cell;
    int u = b->unit->layer * m->dirs + b->unit->dir;
    RnnStateCopies a = {.count = 0}; /* one launch */
    for (int k = 0; io->dh0 && k < c->nstates; k++) {
        if (!io->dh0[k] || (m->fold && k == m->fold->state)) continue; /* a folded state's: rt_fold_dh0 */
        int64_t half = b->r->N * numel(m, &c->states[k].shape);
        const RnnStateCopy c0 = {.src = b->dstate[k] + (1 - b->dcur) * half, .dst = io->dh0[k] + u * half, .n = half};
        RT_TRY(rt_copy_add(m, b->stream, &a, c0));
    }
    RT_TRY(rt_copy_states(m, b->stream, &a));
    RT_TRY(fold_dh0(b, io, 0));
    return rt_fold_join(b); /* the early dh0, where it went on lane 1 */
}

/* One layer-direction backward through time. */
static rnncc_status unit_backward(RtBind *b, const rnncc_grad_io *io) {
    RT_TRY(unit_backward_begin(b, io));
    if (!b->persist) RT_TRY(unit_backward_chunk(b, io, 0, b->r->T));
    else { /* the whole step loop in one launch; the adjoint of h0 ends in slot 0 (dhT's slot when T = 0) */
        if (b->r->T > 0) RT_TRY(backward_program(b, SCHED_POST, 0)); /* over [0, T): rt_bind's window */
        RT_TRY(rt_fold_join(b)); /* the seed, where it went on lane 1 */
        if (b->r->T > 0) RT_TRY(rt_persist_backward_launch(b)); /* zeroed by unit_backward_begin */
        RT_TRY(fold_dh0(b, io, 1)); /* beside the hoisted program's backward */
        b->dcur = 1; /* so that half 1 - dcur, in unit_backward_end, is slot 0 */
        if (b->r->T > 0) RT_TRY(backward_program(b, SCHED_HOIST, 0));
    }
    return unit_backward_end(b, io);
}

/* The bound unit's outputs' adjoints, its direction's columns: the last layer's the user's dy, an inner layer's first
 * output's inner (the layer above's input adjoint; NULL where no longer held: the weights call). */
static void bind_dy(RtBind *b, const rnncc_grad_io *io, const float *inner) {
    const rnncc_model *m = b->m;
    for (int o = 0; o < m->cell->noutputs; o++) {
        const float *base = b->unit->layer == m->layers - 1 ? (io->dy ? io->dy[o] : NULL) : o == 0 ? inner : NULL;
        b->dy[o] = base ? base + b->unit->dir * (b->ldy[o] / m->dirs) : NULL;
    }
}

/* Binds layer l, direction d for the backward: its lane and stream (lane: the direction, or the
 * layer's parity in a wavefront), where its input's adjoint goes (target: the user's dx or the
 * previous layer's output adjoint; per direction first when bidirectional) and its outputs' adjoints. */
static void bind_backward(RtBind *b, rnncc_model *m, const rnncc_grad_io *io, const RtRegions *r, char *ws, char *reserve,
                          int l, int d, float *target, int wave) {
    rt_bind(b, m, r, l, d, wave ? l % 2 : d, io->x, NULL, ws, reserve); /* layer after layer: a direction's lane */
    b->aside = !wave && m->dirs == 1; /* lane 1 idle: the fold's seed and dh0 go there */
    b->lengths = io->lengths ? (const int *)(ws + r->lengths) : NULL;
    b->dx = !target ? NULL : m->dirs == 2 ? (float *)(ws + r->dx_dir[d]) : target;
    b->dx_gemm = b->dx ? m->input_gemm : -1;
    bind_dy(b, io, (const float *)(ws + r->layer_dy[l % 2]));
}

/* Where layer l's input adjoint goes: the user's dx, or the previous layer's output adjoint. */
static float *input_adjoint(const rnncc_grad_io *io, const RtRegions *r, char *ws, int l) {
    return l == 0 ? io->dx : (float *)(ws + r->layer_dy[(l - 1) % 2]);
}

/* Floats of layer l's input (a column of its input adjoint). */
static int64_t input_len(const rnncc_model *m, int l) {
    const IrCell *c = m->cell;
    return l == 0 ? numel(m, &c->inputs[0].shape) : ir_node_len(c, c->outputs[0].node, m->dimval[0]) * m->dirs;
}

int rt_hoisted_groups(const Plan *p) {
    for (int i = 0; i < p->ngroups; i++)
        if (p->groups[i].program == SCHED_HOIST) return 1;
    return 0;
}

/* A unidirectional stack's backward as a wavefront, the mirror of the forward's (rt_forward.c):
 * the steps in RT_WAVE_CHUNKS chunks, the last first; layer l runs on stream l % 2 and takes
 * chunk c (its steps, then its hoisted backward over the chunk's columns, which writes its input's
 * adjoint there: the next layer down's output adjoint) once layer l+1 has finished chunk c, so
 * neighbouring layers overlap. Layers l and l+2 share a stream and their buffers. Each chunk's
 * columns of the input adjoint are zeroed just before the chunk: the layer above may still read
 * the other chunks of that buffer (layers l+1 and l-1 share it). */
static rnncc_status issue_backward_wavefront(rnncc_model *m, const rnncc_grad_io *io, const RtRegions *r, char *ws,
                                             char *reserve) {
    int64_t T = r->T, N = r->N, t0, t1;
    RT_TRY(rt_fork_lanes(m)); /* stream 1 starts after the caller's work */
    for (int l = m->layers - 1; l >= 0; l--) {
        RtBind b;
        int64_t in = input_len(m, l);
        bind_backward(&b, m, io, r, ws, reserve, l, 0, input_adjoint(io, r, ws, l), 1);
        RT_TRY(unit_backward_begin(&b, io));
        for (int64_t ci = rt_wave_chunks(T) - 1; ci >= 0; ci--) {
            rt_wave_chunk(T, ci, &t0, &t1);
            if (l < m->layers - 1) RT_CUDA(m, cudaStreamWaitEvent(b.stream, m->wave_events[(l + 1) * RT_WAVE_CHUNKS + ci], 0));
            if (b.dx && b.dx_gemm < 0)
                RT_CUDA(m, cudaMemsetAsync(b.dx + t0 * N * in, 0, (size_t)((t1 - t0) * N * in) * sizeof(float), b.stream));
            RT_TRY(unit_backward_chunk(&b, io, t0, t1));
            RT_CUDA(m, cudaEventRecord(m->wave_events[l * RT_WAVE_CHUNKS + ci], b.stream));
        }
        RT_TRY(unit_backward_end(&b, io));
    }
    return rt_join_lanes(m); /* stream 0 ends after everything */
}

int rt_backward_waves(const rnncc_model *m) { return m->wavefront && !rt_hoisted_groups(m->plan); }

static rnncc_status issue_backward_data(rnncc_model *m, const rnncc_grad_io *io, const RtRegions *r, char *ws, char *reserve) {
    const RtPersist *persist[2];
    RT_TRY(rt_persist_choose(m, io->N, 1, persist, NULL, 0));
    RT_TRY(rt_half_begin(m, r, ws, reserve, RT_HALF_KEPT)); /* the forward's copy, in the reserve */
    rt_x3_begin(m, r, ws); /* RNNCC_TF32X3: the weights split again, along their other side */
    /* a persistent kernel takes every multiprocessor, so layers cannot overlap: layer after layer */
    if (rt_backward_waves(m) && r->T > 0 && !persist[0]) return issue_backward_wavefront(m, io, r, ws, reserve);
    for (int l = m->layers - 1; l >= 0; l--) {
        float *target = input_adjoint(io, r, ws, l);
        int64_t in = input_len(m, l);
        size_t in_bytes = (size_t)(r->T * r->N * in) * sizeof(float);
        if (m->dirs == 2) RT_TRY(rt_fork_lanes(m));
        for (int d = 0; d < m->dirs; d++) {
            RtBind b;
            bind_backward(&b, m, io, r, ws, reserve, l, d, target, 0);
            b.persist = persist[b.unit->layout != m->layout[0]];
            if (b.dx && b.dx_gemm < 0) RT_CUDA(m, cudaMemsetAsync(b.dx, 0, in_bytes, b.stream));
            RT_TRY(unit_backward(&b, io));
        }
        if (m->dirs == 2) {
            RT_TRY(rt_join_lanes(m));
            if (target) { /* the two directions' input adjoints add up */
                const float one = 1;
                RT_CUBLAS(m, cublasSetStream(m->cublas[0], m->streams[0]));
                RT_CUBLAS(m, cublasSgeam(m->cublas[0], CUBLAS_OP_N, CUBLAS_OP_N, (int)in, (int)(r->T * r->N), &one,
                                         (const float *)(ws + r->dx_dir[0]), (int)in, &one, (const float *)(ws + r->dx_dir[1]),
                                         (int)in, target, (int)in));
            }
        }
    }
    return RNNCC_OK;
}

typedef struct Job {
    rnncc_model *m;
    const rnncc_grad_io *io;
    const RtRegions *r;
    char *ws, *reserve;
    float *dw;
    rnncc_wgrad_mode mode;
} Job;

static rnncc_status data_job(void *p) {
    Job *j = p;
    return issue_backward_data(j->m, j->io, j->r, j->ws, j->reserve);
}

/* Does folded parameter next continue the run of folded parameters from first (rows so far) in
 * both the weights and the buffer its matvec's adjoint lives in? */
static int folds_next(const Plan *p, const PlanLayout *L, int first, int next, int64_t rows) {
    IrRef f = p->param_fold[first], g = p->param_fold[next];
    return g != IR_NONE && p->gemms[p->node[g].gemm].out_buffer == p->gemms[p->node[f].gemm].out_buffer &&
           L->block_row[g] == L->block_row[f] + rows && L->param_offset[next] == L->param_offset[first] + rows;
}

/* dW = sum over all columns of operand d(out)^T, per GEMM; vector parameters: accumulators summed over
 * sequences, or (folded, Plan.param_fold) their matvec's adjoint summed over every column, one
 * product for a run of them side by side (folds_next). */
static rnncc_status weights_job(void *p) {
    Job *job = p;
    rnncc_model *m = job->m;
    const IrCell *c = m->cell;
    const RtRegions *r = job->r;
    int64_t cols = r->T * r->N;
    const float one = 1;
    RT_TRY(rt_half_begin(m, r, job->ws, job->reserve, RT_HALF_NO_WEIGHTS)); /* activations only */
    RT_TRY(rt_half_input(m, r, job->ws, job->reserve, job->io->x, 0)); /* x as its forward rounded it */
    rt_x3_begin(m, r, job->ws); /* RNNCC_TF32X3: activations split into the lane's scratch */
    if (job->mode == RNNCC_WGRAD_SET) /* every gradient below accumulates; unused parameters stay 0 */
        RT_CUDA(m, cudaMemsetAsync(job->dw, 0, (size_t)m->weight_count * sizeof(float), m->streams[0]));
    RT_CUBLAS(m, cublasSetStream(m->cublas[0], m->streams[0]));
    for (int l = 0; l < m->layers; l++)
        for (int d = 0; d < m->dirs; d++) {
            RtBind b;
            rt_bind(&b, m, r, l, d, 0, job->io->x, NULL, job->ws, job->reserve);
            b.lengths = job->io->lengths ? (const int *)(job->ws + r->lengths) : NULL;
            bind_dy(&b, job->io, NULL); /* the last layer's, which rt_post_direct_dy reads */
            const PlanLayout *L = b.unit->layout;
            if (job->mode == RNNCC_WGRAD_ADD) RT_TRY(rt_fold_wgrad(&b, NULL, job->dw, 1)); /* the derived weights' from 0 */
            const float *dhT = NULL;
            if (m->fold) { /* the map through the columns on lane 1, beside the GEMMs below (every unit's GEMMs are lane 0's) */
                const int s = m->fold->state, u = l * m->dirs + d;
                dhT = job->io->dhT && job->io->dhT[s] ? job->io->dhT[s] + u * r->N * rt_fold_rows(m, 2) : NULL;
                b.aside = 1;
                RT_TRY(rt_fold_wgrad_aside(&b, dhT, job->dw));
            }
            int waited = !b.aside_pending;
            for (int j = 0; cols > 0 && j < m->plan->ngemms; j++) {
                if (rt_fold_skips_gemm(&b, j)) continue; /* V's: rt_fold_wgrad maps it through the columns */
                if (!waited && rt_fold_touches_proj(&b, j)) { /* after the map's own additions into dP */
                    RT_CUDA(m, cudaStreamWaitEvent(m->streams[0], m->events[6], 0));
                    waited = 1;
                }
                const SchedGemm *g = &m->plan->gemms[j];
                int64_t M = L->gemm_rows[j], K = L->gemm_cols[j], W = L->buffer_width[g->out_buffer], ldo;
                const float *op = rt_operand(&b, g->operand, 0, 0, &ldo), *dout = rt_buffer_at(&b, b.dbufs, g->out_buffer, 0);
                const unsigned short *dout16 = rt_dbuf16_at(&b, g->out_buffer, 0);
                int out = rt_post_reads_dy(&b, j);
                if (out >= 0) dout = b.dy[out], W = b.ldy[out], dout16 = NULL; /* the post adjoint: dy itself */
                RT_TRY(rt_gemm(m, 0, m->streams[0], CUBLAS_OP_N, CUBLAS_OP_T, K, M, cols, op, ldo, dout, W,
                               rt_gemm_weights(&b, job->dw, j), K, 1, rt_operand16(&b, g->operand, 0), dout16, NULL));
            }
            for (int k = 0; k < c->nparams; k++) {
                float *dp = job->dw + b.unit->weight_offset + L->param_offset[k];
                int64_t rows = L->param_rows[k];
                IrRef f = m->plan->param_fold[k];
                if (f != IR_NONE && cols > 0) { /* folded: the sum of its matvec's adjoint over every column */
                    if (cols > INT32_MAX)
                        return rt_fail(m, RNNCC_ERR_OVERFLOW, "T*N = %lld exceeds cuBLAS's 32-bit sizes", (long long)cols);
                    int ob = m->plan->gemms[m->plan->node[f].gemm].out_buffer;
                    /* with the folded parameters after it that lie next to it in both the weights and the
                     * buffer (LSTM's b_i .. b_o): one matrix-vector product, not one each */
                    for (int first = k; k + 1 < c->nparams && folds_next(m->plan, L, first, k + 1, rows);)
                        rows += L->param_rows[++k];
                    const float *dres = rt_buffer_at(&b, b.dbufs, ob, 0) + L->block_row[f];
                    const unsigned short *dres16 = rt_dbuf16_at(&b, ob, 0);
                    if (dres16) /* the 16-bit twin, which every kernel writes (the fp32 adjoint only where not twins_only) */
                        RT_TRY(rt_gemm(m, 0, m->streams[0], CUBLAS_OP_N, CUBLAS_OP_N, rows, 1, cols, dres,
                                       L->buffer_width[ob], m->ones, cols, dp, rows, 1, dres16 + L->block_row[f],
                                       m->ones16, NULL));
                    else
                        RT_CUBLAS(m, cublasSgemv(b.blas, CUBLAS_OP_N, (int)rows, (int)cols, &one, dres,
                                                 (int)L->buffer_width[ob], m->ones, 1, &one, dp, 1));
                } else if (L->acc_offset[k] >= 0) { /* its per-sequence accumulators */
                    RT_CUBLAS(m, cublasSgemv(b.blas, CUBLAS_OP_N, (int)rows, (int)r->N, &one,
                                             b.dparam + r->N * L->acc_offset[k], (int)rows, m->ones, 1, &one, dp, 1));
                }
            }
            /* the derived weights' gradients mapped onto the user's (rt_fold.c), or lane 1's map joined */
            if (b.aside_pending) RT_TRY(rt_fold_join(&b));
            else if (m->fold) RT_TRY(rt_fold_wgrad(&b, dhT, job->dw, 0));
        }
    return RNNCC_OK;
}

/* Grows the model's device vector of ones to at least n, and in the 16-bit modes its 16-bit twin
 * (the folded biases' GEMM reads it as it is, converting none), synchronously, before rt_run captures
 * anything (a caller's capture that holds stream 0 already is refused: rt_upload). The captured
 * weights pass read the old vectors: it is dropped, to be captured again. */
static rnncc_status ensure_ones(rnncc_model *m, int64_t n) {
    if (m->ones_len >= n) return RNNCC_OK;
    float *host = malloc((size_t)n * sizeof(float) + 4);
    unsigned short *host16 = malloc((size_t)n * sizeof(unsigned short) + 2);
    if (!host || !host16) {
        free(host), free(host16);
        return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    }
    const unsigned short one16 = m->precision == RNNCC_BF16 ? 0x3F80 : 0x3C00; /* 1.0 in bf16, in fp16 */
    for (int64_t i = 0; i < n; i++) host[i] = 1, host16[i] = one16;
    RtGraph *g = &m->graph[2];
    if (g->exec) cudaGraphExecDestroy(g->exec);
    g->exec = NULL;
    g->keylen = 0;
    if (m->ones) cudaFree(m->ones);
    if (m->ones16) cudaFree(m->ones16);
    m->ones = NULL;
    m->ones16 = NULL;
    m->ones_len = 0;
    cudaError_t e = cudaMalloc((void **)&m->ones, (size_t)n * sizeof(float));
    if (e == cudaSuccess && rt_half(m)) e = cudaMalloc((void **)&m->ones16, (size_t)n * sizeof(unsigned short));
    rnncc_status s = e != cudaSuccess ? rt_cuda_fail(m, e, "allocating the ones vector", __FILE__, __LINE__)
                                      : rt_upload(m, "rnncc_backward_weights's ones vector", m->ones, host, (size_t)n * sizeof(float));
    if (s == RNNCC_OK && rt_half(m))
        s = rt_upload(m, "rnncc_backward_weights's ones vector", m->ones16, host16, (size_t)n * sizeof(unsigned short));
    free(host), free(host16);
    if (s == RNNCC_OK) m->ones_len = n;
    return s;
}

/* The graph key of a backward call: every argument its captured work depends on. */
static size_t backward_key(const rnncc_model *m, const rnncc_grad_io *io, const void *ws, const void *reserve,
                           const float *dw, rnncc_wgrad_mode mode, unsigned char *key) {
    size_t n = 0;
#define PUT(v) do { memcpy(key + n, &(v), sizeof(v)); n += sizeof(v); } while (0)
    const void *x = io->x, *len = io->lengths ? ws : NULL, *dx = io->dx;
    PUT(io->T); PUT(io->N); PUT(x); PUT(ws); PUT(reserve); PUT(len); PUT(dx); PUT(dw); PUT(mode);
    for (int o = 0; o < m->cell->noutputs; o++) { const void *dy = io->dy ? io->dy[o] : NULL; PUT(dy); }
    for (int k = 0; k < m->cell->nstates; k++) {
        const void *dhT = io->dhT ? io->dhT[k] : NULL, *dh0 = io->dh0 ? io->dh0[k] : NULL;
        PUT(dhT); PUT(dh0);
    }
#undef PUT
    return n;
}

/* A backward call's buffers lie apart where it writes them, and lie where the GPU reaches them (rt_spans.c): the
 * data call writes dx and dh0, the weights call dweights, both the workspace and the reserve. */
static rnncc_status backward_spans(rnncc_model *m, const rnncc_grad_io *io, const void *ws, const void *reserve,
                                   const float *dw, int weights, const RtRegions *r) {
    rnncc_model_sizes z;
    RT_TRY(rnncc_model_get_sizes(m, &z));
    RtSpans s;
    rt_spans_begin(&s, m, &z, ws, r->workspace, reserve, r->reserve, io->x, io->T, io->N, 0);
    rt_span_outputs(&s, m, &z, "io->dy", io->dy, io->T, io->N, 0);
    rt_span_states(&s, m, &z, "io->dhT", io->dhT, io->N, 0, 0);
    if (weights) {
        rt_span(&s, "dweights", -1, dw, (size_t)m->weight_count * sizeof(float), 1, 0);
    } else {
        rt_span(&s, "io->dx", -1, io->dx, (size_t)(io->T * io->N * z.input) * sizeof(float), 1, 0);
        rt_span_states(&s, m, &z, "io->dh0", (const float *const *)io->dh0, io->N, 1, 0);
    }
    RT_TRY(rt_spans_check(m, &s));
    return rt_spans_reachable(m, &s);
}

/* A backward call with the model's device current. */
static rnncc_status on_device(rnncc_model *m, const rnncc_grad_io *io, void *ws, size_t wsb, void *reserve, size_t rsb,
                              cudaStream_t stream, float *dw, rnncc_wgrad_mode mode, int weights) {
    RtRegions r;
    RT_TRY(prepare(m, io, ws, wsb, reserve, rsb, weights, &r));
    unsigned char key[sizeof m->graph[0].key];
    size_t keylen = backward_key(m, io, ws, reserve, dw, mode, key);
    rnncc_status refused = RNNCC_OK; /* new arguments (the key holds every pointer and size the checks read): judged */
    if (!rt_graph_knows(&m->graph[weights ? 2 : 1], key, keylen))
        refused = backward_spans(m, io, ws, reserve, dw, weights, &r);
    if (refused != RNNCC_OK) {
        rt_regions_free(&r);
        return refused;
    }
    rnncc_status s = RNNCC_OK;
    Job job = {m, io, &r, ws, reserve, dw, mode};
    if (io->lengths) {
        cudaError_t e = cudaMemcpyAsync((char *)ws + r.lengths, io->lengths, (size_t)io->N * sizeof(int), cudaMemcpyHostToDevice, stream);
        if (e != cudaSuccess) s = rt_cuda_fail(m, e, "cudaMemcpyAsync(lengths)", __FILE__, __LINE__);
    }
    int folds = 0; /* folded biases sum over T*N columns, accumulated ones over N */
    for (int k = 0; k < m->cell->nparams; k++) folds |= m->plan->param_fold[k] != IR_NONE;
    if (s == RNNCC_OK && weights) s = ensure_ones(m, folds && io->T * io->N > io->N ? io->T * io->N : io->N);
    if (s == RNNCC_OK)
        s = rt_run(m, &m->graph[weights ? 2 : 1], key, keylen, weights ? weights_job : data_job, &job, stream);
    if (!weights) rt_calls_data(&m->calls, io, reserve, m->api->noutputs, m->api->nstates, s == RNNCC_OK);
    rt_regions_free(&r);
    return s;
}

/* on_device with the model's device made current first (the checks ask the driver about pointers: on no other
 * device's context) and the caller's put back after. */
static rnncc_status with_device(rnncc_model *m, const rnncc_grad_io *io, void *ws, size_t wsb, void *reserve, size_t rsb,
                                cudaStream_t stream, float *dw, rnncc_wgrad_mode mode, int weights) {
    int prev = -1;
    cudaGetDevice(&prev);
    cudaError_t e = cudaSetDevice(m->device);
    rnncc_status s = e != cudaSuccess ? rt_cuda_fail(m, e, "cudaSetDevice", __FILE__, __LINE__)
                                      : on_device(m, io, ws, wsb, reserve, rsb, stream, dw, mode, weights);
    if (prev >= 0 && prev != m->device) cudaSetDevice(prev);
    return s;
}

rnncc_status rnncc_backward_data(rnncc_model *m, const rnncc_grad_io *io, void *ws, size_t wsb, void *reserve, size_t rsb,
                                 void *stream) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    m->error[0] = 0;
    return with_device(m, io, ws, wsb, reserve, rsb, (cudaStream_t)stream, NULL, RNNCC_WGRAD_SET, 0);
}

rnncc_status rnncc_backward_weights(rnncc_model *m, const rnncc_grad_io *io, float *dweights, rnncc_wgrad_mode mode,
                                    void *ws, size_t wsb, void *reserve, size_t rsb, void *stream) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    m->error[0] = 0;
    if (!dweights) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "dweights is NULL");
    if (mode != RNNCC_WGRAD_SET && mode != RNNCC_WGRAD_ADD)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "mode must be RNNCC_WGRAD_SET or RNNCC_WGRAD_ADD");
    return with_device(m, io, ws, wsb, reserve, rsb, (cudaStream_t)stream, dweights, mode, 1);
}
