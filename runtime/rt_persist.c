/* The persistent backend at run time: which backend a pass takes, building the persistent
 * kernel of a layout and batch class on first use, and launching it cooperatively.
 * Key idea: the rule is stated (the step weights fit in shared memory on a co-resident grid,
 * and the batch is small enough: cg_persist_preferred), and the reason is kept in words so that
 * rnncc_model_backend, `rnncc run` and the benchmarks can say why. */
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

static rnncc_status get_kernel(rnncc_model *m, void *ctx) {
    RtPersist *p = ctx;
    char name[256];
    if (cg_persist_kernel_name(m->plan, p->plan.backward, name, sizeof name) < 0)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "the persistent kernel's name is too long");
    RT_CUDA(m, cudaLibraryGetKernel(&p->kernel, p->lib, name));
    RT_CUDA(m, cudaKernelSetAttributeForDevice(p->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)p->plan.smem, m->device));
    return RNNCC_OK;
}

/* A build that failed with status s: the model's message becomes the reason later passes fall
 * back (or, forced, fail) with. Returns s. */
static rnncc_status failed(rnncc_model *m, RtPersist *p, rnncc_status s) {
    char msg[201];
    snprintf(msg, sizeof msg, "%.200s", m->error);
    snprintf(p->why, sizeof p->why, "building its kernel failed: %s", msg);
    return s;
}

int rt_persist_source(rnncc_model *m, int li, const CgPersistAsk *ask, CgPersist *P, StrBuf *src, char arch[20],
                      char *why, size_t why_size) {
    if (!cg_persist_plan(&m->arena, m->layout[li], ask, P, why, why_size)) return 0;
    if (m->profile_persist) sb_puts(src, "#define RNN_PROFILE 1\n");
    if (m->persist_stagger) sb_puts(src, "#define RNN_STAGGER_ON 1\n");
    Diags d;
    diag_init(&d, &m->arena, m->cell->name, m->source, strlen(m->source));
    if (!cg_emit_persistent(&m->arena, m->plan, m->layout[li], P, src, &d) || src->failed) {
        rt_fail(m, RNNCC_ERR_UNSUPPORTED, "generating the persistent kernel of cell '%s': %s", m->cell->name,
                d.head ? d.head->msg : "out of memory");
        return -1;
    }
    /* clusters multicast their bulk copies: an arch-specific feature (sm_90a) */
    snprintf(arch, 20, "%s%s", m->arch, P->cluster > 1 ? "a" : "");
    return 1;
}

/* Plans, generates, compiles (through the cache) and loads the persistent kernel that ask
 * describes for layout li; afterwards p->state is 1 when it is loaded, else -1 with p->why. */
static rnncc_status load(rnncc_model *m, int li, const CgPersistAsk *ask, RtPersist *p) {
    p->state = -1;
    StrBuf src = {0};
    char arch[20];
    int made = rt_persist_source(m, li, ask, &p->plan, &src, arch, p->why, sizeof p->why);
    if (made <= 0) {
        sb_free(&src);
        return made == 0 ? RNNCC_OK : failed(m, p, RNNCC_ERR_UNSUPPORTED);
    }
    rnncc_status s = rt_module_library(m, sb_str(&src), arch, get_kernel, p, &p->lib, &p->from_cache);
    sb_free(&src);
    if (s != RNNCC_OK) return failed(m, p, s);
    p->state = 1;
    return RNNCC_OK;
}

/* p's launch on stream: grid, threads and shared memory, with attr[0] its cluster size and
 * attr[1] cooperative (cfg.attrs left for the caller to point into attr). */
static cudaLaunchConfig_t launch_config(const RtPersist *p, cudaStream_t stream, cudaLaunchAttribute attr[2]) {
    attr[0] = (cudaLaunchAttribute){.id = cudaLaunchAttributeClusterDimension,
                                    .val.clusterDim = {(unsigned)p->plan.cluster, 1, 1}};
    attr[1] = (cudaLaunchAttribute){.id = cudaLaunchAttributeCooperative, .val.cooperative = 1};
    return (cudaLaunchConfig_t){.gridDim = {(unsigned)p->plan.blocks, 1, 1},
                                .blockDim = {32u * (unsigned)p->plan.warps, 1, 1},
                                .dynamicSmemBytes = (size_t)p->plan.smem,
                                .stream = stream};
}

/* How many of p's blocks can be resident at once (clusters: whole clusters only). */
static rnncc_status resident_blocks(rnncc_model *m, const RtPersist *p, int *blocks) {
    if (p->plan.cluster > 1) {
        cudaLaunchAttribute attr[2];
        cudaLaunchConfig_t cfg = launch_config(p, NULL, attr);
        cfg.attrs = attr; /* the cluster size */
        cfg.numAttrs = 1;
        int clusters = 0;
        RT_CUDA(m, cudaOccupancyMaxActiveClusters(&clusters, (const void *)p->kernel, &cfg));
        *blocks = clusters * p->plan.cluster;
        return RNNCC_OK;
    }
    int per_sm = 0;
    RT_CUDA(m, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)p->kernel, 32 * p->plan.warps,
                                                             (size_t)p->plan.smem));
    *blocks = per_sm * m->sms;
    return RNNCC_OK;
}

/* The bytes of local memory a thread of p's kernel takes: spilled registers (the generated kernels
 * have no stack frame otherwise; bench/NOTES.md section 47). */
static rnncc_status local_bytes(rnncc_model *m, const RtPersist *p, size_t *bytes) {
    struct cudaFuncAttributes fa;
    RT_CUDA(m, cudaFuncGetAttributes(&fa, (const void *)p->kernel));
    *bytes = fa.localSizeBytes;
    return RNNCC_OK;
}

rnncc_status rt_persist_build(rnncc_model *m, int li, const CgPersistAsk *asked, RtPersist *p) {
    CgPersistAsk ask = *asked;
    p->state = -1;
    if (!m->cluster_launch) ask.cluster = 1; /* before compute capability 9.0 */
    size_t spilled = 0; /* the local bytes of the last build with weights in registers that spilled */
    int spilled_regs = 0; /* and its held weights' registers */
    size_t direct_spilled = 0; /* the local bytes of a build loading operands straight that spilled */
    int resized = 0; /* planned again for the clusters that fit (once, whatever builds came before) */
    for (int attempt = 0, spills = 0; attempt < 3 + spills; attempt++) {
        if (p->lib) cudaLibraryUnload(p->lib);
        p->lib = NULL;
        rnncc_status s = load(m, li, &ask, p);
        if (s != RNNCC_OK && p->plan.cluster > 1 && !m->persist_cluster) {
            /* clusters not forced did not build (an sm_XXa target the compiler or the device refuses) */
            m->error[0] = 0;
            ask.cluster = 1, ask.sms = m->sms;
            continue;
        }
        RT_TRY(s);
        /* planned for the blocks whose clusters can be resident, it did not fit or came out without
         * clusters: without clusters, every multiprocessor serves better */
        if (ask.sms != m->sms && (p->state < 0 || p->plan.cluster == 1)) {
            ask.cluster = 1, ask.sms = m->sms;
            continue;
        }
        if (p->state < 0) return RNNCC_OK; /* cg_persist_plan tried without clusters too */
        size_t local = 0;
        RT_TRY(local_bytes(m, p, &local));
        const int held = cg_persist_held_registers(&p->plan);
        if (local && p->plan.direct && ask.handoff == CG_HANDOFF_DIRECT) {
            /* the B fragments pushed other values out (ptxas is erratic near the bound the plan takes: an LSTM fp16
             * backward at H = 768, 16 sequences unclustered spilled 24 bytes, bench/NOTES.md section 107): staged
             * instead, the weights kept */
            direct_spilled = local;
            ask.handoff = CG_HANDOFF_BARRIER;
            spills++;
            continue;
        }
        if (local && held && spills < 8) { /* the held weights pushed other values out: hold fewer (the GEMMs needing most first) */
            spilled = local, spilled_regs = held;
            /* fewer by the registers spilled (its local bytes over 4), at least one: FFMA holds 4 a step,
             * so one at a time would take a build a step under a cap far past the budget
             * (RNNCC_PERSIST_WREGS=255) */
            const int fewer = local / 4 > 1 ? (int)(local / 4) : 1;
            ask.wregs = held > fewer ? held - fewer : -1;
            spills++;
            continue;
        }
        if (direct_spilled) {
            size_t at = strlen(p->why);
            snprintf(p->why + at, sizeof p->why - at, "; staged: loading its operands straight spilled %zu bytes a thread",
                     direct_spilled);
        }
        if (spilled) {
            size_t at = strlen(p->why);
            if (held)
                snprintf(p->why + at, sizeof p->why - at,
                         " (%d registers a thread: holding %d, the kernel spilled %zu bytes a thread)", held, spilled_regs,
                         spilled);
            else
                snprintf(p->why + at, sizeof p->why - at,
                         "; weights read from shared memory (holding %d registers of them, the kernel spilled %zu bytes a thread)",
                         spilled_regs, spilled);
        }
        int resident = 0;
        RT_TRY(resident_blocks(m, p, &resident));
        if (resident >= p->plan.blocks) return RNNCC_OK; /* a step barrier needs every block resident at once */
        p->state = -1;
        snprintf(p->why, sizeof p->why, "only %d of its %d blocks can be resident at once", resident, p->plan.blocks);
        if (p->plan.cluster == 1) return RNNCC_OK;
        if (!resized && resident > 0) ask.sms = resident, resized = 1; /* the clusters that fit */
        else ask.cluster = 1, ask.sms = m->sms;
    }
    return RNNCC_OK;
}

/* How model m's persistent kernels run their products: its precision's (CgProducts has rnncc.h's values;
 * RNNCC_TF32X3's are fp32's, cg_products_of). */
_Static_assert((int)CG_FFMA == (int)RNNCC_FP32 && (int)CG_TF32 == (int)RNNCC_TF32 && (int)CG_F16 == (int)RNNCC_FP16 &&
                   (int)CG_BF16 == (int)RNNCC_BF16 && (int)RNNCC_TF32X3 == 4,
               "CgProducts must have rnncc_precision's values");
static CgProducts products_of(const rnncc_model *m) { return cg_products_of(m->precision); }

/* Builds the persistent kernel (backward: the backward one) of layout li for batches of N: the
 * tile the search measured best (rt_tile.c), or with RNNCC_PERSIST_SEARCH=0 the rule's (clusters
 * by cg_persist_cluster, split as cg_persist_split says; or RNNCC_PERSIST_CLUSTER and _SPLIT; the
 * rule's fours become pairs where only the pairs hold the step weights in registers).
 * Afterwards p->state says whether it can run and p->why why. */
static rnncc_status build(rnncc_model *m, int li, int64_t N, int backward, RtPersist *p) {
    p->state = -1;
    if (!m->coop) {
        snprintf(p->why, sizeof p->why, "the device has no cooperative launch");
        return RNNCC_OK;
    }
    const CgProducts products = products_of(m);
    CgPersistAsk ask = {.N = N, .backward = backward, .products = products, .sms = m->sms, .smem_limit = m->smem_optin,
                        .cluster = m->persist_cluster ? m->persist_cluster
                                                      : cg_persist_cluster(N, products, backward, m->persist_handoff),
                        .split = m->persist_split >= 0 ? m->persist_split
                                                       : !m->persist_cluster && cg_persist_split(N, products, backward),
                        .warps = m->persist_warps, .kc_cap = m->persist_chunk, .nw_max = m->persist_nw,
                        .handoff = m->persist_handoff < 0 ? CG_HANDOFF_BARRIER : m->persist_handoff,
                        .twins = rt_half(m), .blocks = m->persist_blocks, .wregs = m->persist_wregs,
                        .waves = m->persist_waves};
    char why[256];
    CgPersist rule_plan; /* kept in p after the search or build, which overwrite p */
    if (!cg_persist_plan(&m->arena, m->layout[li], &ask, &rule_plan, why, sizeof why)) rule_plan.nw = 0;
    /* a capture (rnncc's, or the caller's that the model's streams joined) cannot time, nor synchronise */
    int capturing = -1;
    RT_TRY(rt_streams_capturing(m, &capturing));
    if (m->persist_search && !m->capturing && capturing < 0) {
        rnncc_status s = rt_tile_search(m, li, &ask, p);
        p->rule_plan = rule_plan;
        return s;
    }
    /* without a search, a 16-bit pass whose hand-off nothing forces loads its operands straight into
     * registers where the plan allows it (cg_persist_direct_rule) */
    if (m->persist_handoff < 0) cg_persist_direct_rule(&m->arena, m->layout[li], &ask, m->persist_cluster != 0, m->persist_blocks != 0);
    rnncc_status s = rt_persist_build(m, li, &ask, p);
    /* the rule's fours lose to pairs by half where fewer of them can be resident and their step
     * weights move to shared memory while the pairs' stay in registers (bench/NOTES.md section 52);
     * a backward's fours that cannot split K lose to the rule's earlier pairs (section 58) */
    int in_pairs = 0;
    if (s == RNNCC_OK && p->state == 1 && !m->persist_cluster && ask.cluster == 4 &&
        cg_persist_fours_yield(&m->arena, m->layout[li], &ask, &p->plan)) {
        CgPersistAsk pairs = cg_persist_pairs_ask(&ask);
        s = rt_persist_build(m, li, &pairs, p);
        /* kept only as planned: pairs (not without clusters), a forward's holding weights in registers */
        in_pairs = s == RNNCC_OK && p->state == 1 && cg_persist_pairs_serve(&p->plan);
        if (!in_pairs) { /* the fours again, which built */
            m->error[0] = 0;
            s = rt_persist_build(m, li, &ask, p);
        }
    }
    p->rule_plan = rule_plan;
    RT_TRY(s);
    if (p->state != 1) return RNNCC_OK;
    char tile[160];
    cg_persist_tile_text(&p->plan, tile, sizeof tile);
    snprintf(p->tile, sizeof p->tile, "tile %s: by rule (%s)%s%s", tile,
             m->persist_search ? "built during a graph capture, which cannot time" : "RNNCC_PERSIST_SEARCH=0",
             in_pairs ? ", in pairs: " : "", in_pairs ? cg_persist_pairs_reason(&p->plan) : "");
    return RNNCC_OK;
}

CgOverlap rt_overlap(const rnncc_model *m) {
    return m->dirs == 2 ? CG_BIDIRECTIONAL : m->wavefront ? CG_WAVEFRONT : CG_ALONE;
}

int rt_persist_considered(const rnncc_model *m, int64_t N, int backward, char *rule, size_t rule_size) {
    if (m->backend == RNNCC_BACKEND_CUBLAS) {
        snprintf(rule, rule_size, "forced");
        return 0;
    }
    return m->backend != RNNCC_BACKEND_AUTO ||
           cg_persist_preferred(N, products_of(m), backward, rt_overlap(m), NULL, rule, rule_size);
}

rnncc_status rt_persist_choose(rnncc_model *m, int64_t N, int backward, const RtPersist *out[2], char *why,
                               size_t why_size) {
    out[0] = out[1] = NULL;
    char buf[320];
    if (!why) {
        why = buf;
        why_size = sizeof buf;
    }
    char rule[160];
    if (!rt_persist_considered(m, N, backward, rule, sizeof rule)) {
        snprintf(why, why_size, "cuBLAS per step: %s", rule);
        return RNNCC_OK;
    }
    const CgProducts products = products_of(m);
    const CgOverlap overlap = rt_overlap(m);
    if (N < 1) {
        snprintf(why, why_size, "cuBLAS per step: an empty batch");
        return RNNCC_OK;
    }
    RtPersist *p[2] = {NULL, NULL};
    for (int li = 0; li < m->nmodules; li++) {
        p[li] = &m->persist[backward][li][cg_persist_class(N)];
        if (p[li]->state == 0) RT_TRY(build(m, li, N, backward, p[li]));
        if (p[li]->state < 0) {
            if (m->backend == RNNCC_BACKEND_PERSISTENT)
                return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "the persistent backend is forced but cannot run %s%s: %s",
                               backward ? "the backward of " : "", li ? "layers > 0" : "this model", p[li]->why);
            snprintf(why, why_size, "cuBLAS per step: %s", p[li]->why);
            return RNNCC_OK;
        }
        /* the rule again with the rule's own tile (the search may take fewer sequences a pass, and may
         * have run for another batch of the class) */
        if (m->backend == RNNCC_BACKEND_AUTO &&
            !cg_persist_preferred(N, products, backward, overlap, &p[li]->rule_plan, rule, sizeof rule)) {
            snprintf(why, why_size, "cuBLAS per step: %s%s", li ? "layers > 0: " : "", rule);
            return RNNCC_OK;
        }
    }
    int n = snprintf(why, why_size, "persistent%s: %s; %s", m->backend == RNNCC_BACKEND_PERSISTENT ? " (forced)" : "",
                     p[0]->why, p[0]->tile);
    if (p[1] && n >= 0 && (size_t)n < why_size) /* layers > 0 have a kernel (and a tile) of their own */
        snprintf(why + n, why_size - (size_t)n, "; layers > 0: %s", p[1]->tile);
    out[0] = p[0];
    out[1] = p[1] ? p[1] : p[0];
    return RNNCC_OK;
}

static rnncc_status choose_backend(rnncc_model *m, int64_t N, int backward, rnncc_backend *backend, char *why,
                                   size_t why_size) {
    if (!m || m->failed) return RNNCC_ERR_INVALID_ARGUMENT;
    if (!backend) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "backend is NULL");
    if (N < 0) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "N is %lld; it must be >= 0", (long long)N);
    const RtPersist *p[2];
    int prev = -1;
    cudaGetDevice(&prev);
    cudaError_t e = cudaSetDevice(m->device);
    rnncc_status s = e != cudaSuccess ? rt_cuda_fail(m, e, "cudaSetDevice(m->device)", __FILE__, __LINE__)
                                      : rt_persist_choose(m, N, backward, p, why, why_size);
    if (prev >= 0 && prev != m->device) cudaSetDevice(prev);
    if (s != RNNCC_OK) return s;
    *backend = p[0] ? RNNCC_BACKEND_PERSISTENT : RNNCC_BACKEND_CUBLAS;
    size_t len = why ? strlen(why) : 0;
    if (!p[0] && m->wavefront && why && len < why_size) /* how a stack's per-step layers run */
        snprintf(why + len, why_size - len, "; %s",
                 !backward || rt_backward_waves(m) ? "layers overlap as a wavefront"
                                                   : "layers one after another (hoisted element-wise kernels)");
    len = why ? strlen(why) : 0;
    if (m->fold && why && len < why_size) /* rt_fold.c */
        snprintf(why + len, why_size - len, "; folded (%s): state %s runs as %s, its projection after the loop", m->fold_by,
                 m->api->states[m->fold->state].name, m->cell->states[m->fold->state].name);
    else if (m->fold_why_not && why && len < why_size)
        snprintf(why + len, why_size - len, "; not folded (%s): %s", m->fold_by, m->fold_why_not);
    return s;
}

/* choose_backend with why written whatever happens: on failure, the error's message (rnncc_model_error's). */
static rnncc_status model_backend(rnncc_model *m, int64_t N, int backward, rnncc_backend *backend, char *why,
                                  size_t why_size) {
    if (why && why_size == 0) why = NULL;
    if (why) why[0] = '\0';
    rnncc_status s = choose_backend(m, N, backward, backend, why, why_size);
    if (s != RNNCC_OK && why) snprintf(why, why_size, "%s", rnncc_model_error(m));
    return s;
}

rnncc_status rnncc_model_backend(rnncc_model *m, int64_t N, rnncc_backend *backend, char *why, size_t why_size) {
    return model_backend(m, N, 0, backend, why, why_size);
}

rnncc_status rnncc_model_backward_backend(rnncc_model *m, int64_t N, rnncc_backend *backend, char *why, size_t why_size) {
    return model_backend(m, N, 1, backend, why, why_size);
}

rnncc_status rt_persist_zeros(RtBind *b, RnnStateCopies *a) {
    rnncc_model *m = b->m;
    RT_TRY(rt_copy_add(m, b->stream, a, (RnnStateCopy){.dst = (float *)(m->sync + b->lane), .n = 1}));
    if (b->persist->plan.flags && b->flags) /* flags start at 1: a zero word has not arrived (persist.cuh) */
        RT_TRY(rt_copy_add(m, b->stream, a, (RnnStateCopy){.dst = (float *)b->flags, .n = 2 * b->r->flag_words}));
    return RNNCC_OK;
}

rnncc_status rt_persist_run(RtBind *b, RnnArgs *a) {
    rnncc_model *m = b->m;
    const RtPersist *p = b->persist;
    for (int i = 0; i < m->plan->nbuffers; i++) /* step buffers are per step in training, else reused (0) */
        a->buf_step[i] = rt_buffer_at(b, b->bufs, i, 1) - rt_buffer_at(b, b->bufs, i, 0);
    a->sync = m->sync + b->lane;
    a->flags = b->flags;
    if (cg_persist_uses_words(b->unit->layout, &p->plan) &&
        (!b->flags || b->r->flag_words < cg_persist_flag_words(b->unit->layout, b->r->N)))
        return rt_fail(m, RNNCC_ERR_WORKSPACE, "the workspace was sized without the flagged words a persistent forward needs");
    void *args[] = {a};
    cudaLaunchAttribute attr[2];
    cudaLaunchConfig_t cfg = launch_config(p, b->stream, attr);
    cfg.attrs = p->plan.cluster > 1 ? attr : attr + 1; /* cooperative, in clusters when it has them */
    cfg.numAttrs = p->plan.cluster > 1 ? 2 : 1;
    RT_CUDA(m, cudaLaunchKernelExC(&cfg, (const void *)p->kernel, args));
    RT_CUDA(m, cudaGetLastError());
    return RNNCC_OK;
}

rnncc_status rt_persist_launch(RtBind *is, int64_t t0, int64_t t1) {
    rnncc_model *m = is->m;
    RnnArgs a;
    rt_args(is, SCHED_STEP, t0, &a);
    for (int k = 0; k < m->cell->nstates; k++) { /* twins: what the steps stage, and in training the weight gradients' */
        a.state_prev[k] = rt_state_slot(is, k, 0);
        a.state16[k] = is->states16[k];
    }
    for (int b = 0; b < m->plan->nbuffers; b++) {
        a.buf[b] = rt_buffer_at(is, is->bufs, b, 0);
        a.buf16[b] = rt_buf16_at(is, b, 0);
    }
    a.t_end = (int)t1;
    a.state_wrap = is->r->training ? 0 : 2;
    return rt_persist_run(is, &a);
}

void rt_persist_unload(rnncc_model *m) {
    for (int pass = 0; pass < 2; pass++)
        for (int li = 0; li < 2; li++)
            for (int c = 0; c < RT_PERSIST_CLASSES; c++)
                if (m->persist[pass][li][c].lib) cudaLibraryUnload(m->persist[pass][li][c].lib);
}
