/* The persistent kernel's tile by measurement: which cluster size, warps a block, staging chunk
 * and sequences a pass run a layer's step loop fastest on this device (issue 7; docs/backends.md).
 * Key idea: a small coordinate search from the rule's tile, one knob at a time, keeping what is
 * faster; each candidate is built through the kernel cache and timed on scratch memory of the real
 * batch (the difference between launches of LONG_STEPS and SHORT_STEPS steps, so that loading the
 * weights and the launch itself cancel out); the winner's request is cached on disk under a key of
 * the device, the versions, the cell, its dimensions and the batch, so that a later model builds
 * only the winner. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/c_locale.h"
#include "rt_internal.h"
#include "rt_nvrtc.h"

enum { SHORT_STEPS = 8, LONG_STEPS = 40, PROBE_RUNS = 5, MAX_TRIED = 20, PREBUILD_MAX = 10, CONFIRM_ROUNDS = 3 };
/* A searched tile replaces the rule's only if it is this much faster in the confirming rounds. */
#define CONFIRM_MARGIN 0.01

/* Memory a probe binds to: the regions of a pass of LONG_STEPS steps, all of it zeros. */
typedef struct Scratch {
    RtRegions r;
    char *ws, *reserve;
    float *x, *y[RNN_MAX_OUTPUTS];
} Scratch;

static void scratch_free(Scratch *s) {
    cudaFree(s->ws);
    cudaFree(s->reserve);
    cudaFree(s->x);
    for (int o = 0; o < RNN_MAX_OUTPUTS; o++) cudaFree(s->y[o]);
    rt_regions_free(&s->r);
    memset(s, 0, sizeof *s);
}

/* Allocates and zeroes `bytes` of device memory (at least a float) at *p. */
static rnncc_status zeros(rnncc_model *m, void **p, size_t bytes) {
    if (bytes == 0) bytes = sizeof(float);
    RT_CUDA(m, cudaMalloc(p, bytes));
    return rt_upload(m, "the tile search's scratch", *p, NULL, bytes);
}

static rnncc_status scratch_alloc(rnncc_model *m, int64_t N, int backward, Scratch *s) {
    const IrCell *c = m->cell;
    memset(s, 0, sizeof *s);
    RT_TRY(rt_regions(m, LONG_STEPS, N, backward, &s->r));
    RT_TRY(zeros(m, (void **)&s->ws, s->r.workspace));
    RT_TRY(zeros(m, (void **)&s->reserve, s->r.reserve));
    size_t cols = (size_t)(LONG_STEPS * N);
    RT_TRY(zeros(m, (void **)&s->x, cols * (size_t)ir_shape_numel(&c->inputs[0].shape, m->dimval[0]) * sizeof(float)));
    for (int o = 0; o < c->noutputs; o++) {
        int64_t D = ir_node_len(c, c->outputs[o].node, m->dimval[m->layers > 1]);
        if (ir_node_len(c, c->outputs[o].node, m->dimval[0]) > D) D = ir_node_len(c, c->outputs[o].node, m->dimval[0]);
        RT_TRY(zeros(m, (void **)&s->y[o], cols * (size_t)(D * m->dirs) * sizeof(float)));
    }
    return RNNCC_OK;
}

/* One launch of candidate p over the first `steps` steps of the scratch: layout li's first layer,
 * direction 0. */
static rnncc_status probe_launch(rnncc_model *m, int li, const RtPersist *p, Scratch *s, int steps) {
    RtBind b;
    rt_bind(&b, m, &s->r, li, 0, 0, s->x, s->y, s->ws, s->reserve);
    b.persist = p;
    RnnStateCopies z = {.count = 0}; /* one launch before the kernel: its zeros, a backward's state adjoints */
    RT_TRY(rt_persist_zeros(&b, &z));
    for (int k = 0; p->plan.backward && k < m->cell->nstates; k++) /* their three slots start at zero */
        RT_TRY(rt_copy_add(m, b.stream, &z,
                           (RnnStateCopy){.dst = b.dstate[k], .n = 3 * s->r.N * ir_shape_numel(&m->cell->states[k].shape, m->dimval[0])}));
    RT_TRY(rt_copy_states(m, b.stream, &z));
    if (!p->plan.backward) return rt_persist_launch(&b, 0, steps);
    RtRegions r = s->r; /* the backward runs steps steps-1 .. 0 */
    r.T = steps;
    b.r = &r;
    return rt_persist_backward_launch(&b);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of the n values at t (which it sorts). */
static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

/* The median over PROBE_RUNS launches of `steps` steps of candidate p, in µs. */
static rnncc_status probe_median(rnncc_model *m, int li, const RtPersist *p, Scratch *s, int steps, double *us) {
    cudaStream_t st = m->streams[0];
    double t[PROBE_RUNS];
    for (int i = 0; i < PROBE_RUNS; i++) {
        RT_CUDA(m, cudaEventRecord(m->tevents[0], st));
        RT_TRY(probe_launch(m, li, p, s, steps));
        RT_CUDA(m, cudaEventRecord(m->tevents[1], st));
        RT_CUDA(m, cudaEventSynchronize(m->tevents[1]));
        float ms = 0;
        RT_CUDA(m, cudaEventElapsedTime(&ms, m->tevents[0], m->tevents[1]));
        t[i] = ms * 1000.0;
    }
    *us = median(t, PROBE_RUNS);
    return RNNCC_OK;
}

/* Candidate p's time a step in µs: launches of LONG_STEPS and of SHORT_STEPS steps (after one to
 * warm up) differ by the steps between them alone. */
static rnncc_status probe_time(rnncc_model *m, int li, const RtPersist *p, Scratch *s, double *us) {
    RT_TRY(probe_launch(m, li, p, s, SHORT_STEPS));
    RT_CUDA(m, cudaStreamSynchronize(m->streams[0]));
    double lo = 0, hi = 0;
    RT_TRY(probe_median(m, li, p, s, SHORT_STEPS, &lo));
    RT_TRY(probe_median(m, li, p, s, LONG_STEPS, &hi));
    *us = (hi - lo) / (LONG_STEPS - SHORT_STEPS);
    return RNNCC_OK;
}

/* After a candidate failed: 1 when the device still works (the failure was the candidate's own:
 * a launch it refused), 0 when the context is broken (a fault, a trap), whose error is m's. */
static int device_still_works(rnncc_model *m) {
    cudaGetLastError();
    cudaError_t e = cudaStreamSynchronize(m->streams[0]);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) return 1;
    rt_cuda_fail(m, e, "a tile search probe", __FILE__, __LINE__);
    return 0;
}

/* The search's state: the best candidate so far, the rule's (kept loaded for the confirming
 * rounds; the same library as best while it is best) and the tiles already tried. */
typedef struct Search {
    rnncc_model *m;
    int li;
    Scratch scratch;
    RtPersist best, rule;
    CgPersistAsk best_ask;
    double best_us, rule_us;
    int confirmed;              /* 1: best beat the rule's in the confirming rounds; -1: the rule's was kept */
    double searched_us;         /* with confirmed == -1: the searched tile's time there */
    CgPersist tried[MAX_TRIED];
    int ntried, timed, failed;
    int alone;                  /* builds that compiled one at a time (not prebuilt, not cached) */
    double prebuild_ms, build_ms, probe_ms; /* where the search's time went */
    rnncc_status fatal;         /* the device broke during a probe (RNNCC_OK: it did not) */
} Search;

static void unload(RtPersist *p) {
    if (p->lib) cudaLibraryUnload(p->lib);
    p->lib = NULL;
}

/* Unloads the best candidate unless it is the rule's, which the confirming rounds still need. */
static void drop_best(Search *S) {
    if (S->best.lib != S->rule.lib) unload(&S->best);
    S->best.lib = NULL;
}

/* Has P's tile been tried already? */
static int tried(const Search *S, const CgPersist *P) {
    for (int i = 0; i < S->ntried; i++)
        if (cg_persist_same_tile(&S->tried[i], P)) return 1;
    return 0;
}

/* A candidate that did not build or run: passed over while the device works, else the search ends
 * with the device's error. */
static void candidate_failed(Search *S, RtPersist *c) {
    unload(c);
    S->failed++;
    if (!device_still_works(S->m)) S->fatal = RNNCC_ERR_CUDA;
    else S->m->error[0] = 0;
}

/* Builds and times the tile ask describes unless it plans a tile already tried (checked before the
 * build, and again after it, whose residency fallbacks may change the plan); keeps it when it is
 * the fastest so far. */
static void try_tile(Search *S, const CgPersistAsk *ask) {
    rnncc_model *m = S->m;
    if (S->ntried == MAX_TRIED || S->fatal != RNNCC_OK) return;
    RtPersist c;
    memset(&c, 0, sizeof c);
    char why[256]; /* (a plan's few bytes stay in the model's arena) */
    if (!cg_persist_plan(&m->arena, m->layout[S->li], ask, &c.plan, why, sizeof why) || tried(S, &c.plan)) return;
    double t0 = rt_now_ms();
    rnncc_status built = rt_persist_build(m, S->li, ask, &c);
    S->build_ms += rt_now_ms() - t0;
    S->alone += c.state == 1 && !c.from_cache;
    if (built != RNNCC_OK) {
        candidate_failed(S, &c);
        return;
    }
    if (c.state != 1 || tried(S, &c.plan)) {
        unload(&c);
        return;
    }
    S->tried[S->ntried++] = c.plan;
    double us = 0;
    t0 = rt_now_ms();
    rnncc_status probed = probe_time(m, S->li, &c, &S->scratch, &us);
    S->probe_ms += rt_now_ms() - t0;
    if (probed != RNNCC_OK) {
        candidate_failed(S, &c);
        return;
    }
    S->timed++;
    if (S->best.state == 1 && us >= S->best_us) {
        unload(&c);
        return;
    }
    drop_best(S);
    S->best = c;
    S->best_ask = *ask;
    S->best_us = us;
}

/* Compiles the units of the tiles asks describe side by side, each on an NVRTC thread of its own,
 * into the on-disk cache, so that the search's builds of them, one at a time and each timed after
 * it, find them there (nothing where the cache is off). Tiles already tried, planned twice or not
 * planned are skipped; a failure here is left for the search's own build to meet and report. */
static void prebuild(Search *S, const CgPersistAsk *asks, int n) {
    rnncc_model *m = S->m;
    double t0 = rt_now_ms();
    RtBuild b[PREBUILD_MAX];
    StrBuf src[PREBUILD_MAX];
    CgPersist planned[PREBUILD_MAX];
    char arch[PREBUILD_MAX][20], why[256];
    int k = 0;
    for (int i = 0; m->cache.enabled && i < n && k < PREBUILD_MAX; i++) {
        memset(&src[k], 0, sizeof src[k]);
        int made = rt_persist_source(m, S->li, &asks[i], &planned[k], &src[k], arch[k], why, sizeof why);
        int again = made == 1 && tried(S, &planned[k]);
        for (int j = 0; made == 1 && j < k; j++) again |= cg_persist_same_tile(&planned[j], &planned[k]);
        if (made != 1 || again) {
            sb_free(&src[k]);
            m->error[0] = 0;
            continue;
        }
        rt_build_start(m, &b[k], sb_str(&src[k]), arch[k], 0);
        k++;
    }
    for (int j = 0; j < k; j++) {
        if (rt_build_wait(m, &b[j]) != RNNCC_OK) m->error[0] = 0;
        rt_build_free(&b[j]);
        sb_free(&src[j]);
    }
    S->prebuild_ms += rt_now_ms() - t0;
}

/* The fewest blocks that keep the work of ask's tile (cg_persist_fewer_blocks), with its plan into *P;
 * 0 where the blocks are forced, ask does not plan, or no fewer blocks keep its work. */
static int fewest_blocks(const Search *S, const CgPersistAsk *ask, CgPersist *P) {
    rnncc_model *m = S->m;
    char why[256]; /* (a plan's few bytes stay in the model's arena) */
    if (m->persist_blocks || !cg_persist_plan(&m->arena, m->layout[S->li], ask, P, why, sizeof why)) return 0;
    return cg_persist_fewer_blocks(m->layout[S->li], ask, P);
}

/* The coordinate search from base: clusters (unless forced), a backward's clusters splitting K
 * (unless forced), a forward's steps handed off by flags and its operands loaded straight (unless
 * forced; without clusters), a backward's operand loaded straight (unless forced), warps
 * (unless forced), fewer blocks for the same work a block, then shorter staging chunks
 * and fewer sequences a pass while they gain. */
static void search(Search *S, const CgPersistAsk *base) {
    rnncc_model *m = S->m;
    static const int clusters[] = {1, 2, 4}, warps[] = {8, 16, 4};
    /* the first rounds change only clusters, split and hand-off, each from base: their tiles are
     * known before any is timed, and compile side by side first */
    CgPersistAsk first[PREBUILD_MAX];
    int nfirst = 0, try_clusters = !m->persist_cluster && m->cluster_launch &&
                                   !((m->persist_handoff == CG_HANDOFF_FLAGS || m->persist_handoff == CG_HANDOFF_DIRECT) &&
                                     !base->backward);
    first[nfirst++] = *base;
    for (int i = 0; try_clusters && i < 3; i++) { /* whole operands staged, unless a split is forced (the rule's may split) */
        CgPersistAsk a = *base;
        a.cluster = clusters[i];
        a.split = m->persist_split == 1;
        first[nfirst++] = a;
    }
    /* split K, in pairs and fours (a forced size: once; try_tile skips a tile tried): it wins where
     * staging takes much of a step and loses elsewhere (bench/NOTES.md section 32) */
    for (int i = 1; base->backward && m->persist_split < 0 && m->cluster_launch && i < 3; i++) {
        CgPersistAsk a = *base;
        a.split = 1;
        a.cluster = m->persist_cluster ? m->persist_cluster : clusters[i];
        first[nfirst++] = a;
    }
    if (m->persist_handoff < 0 && !base->backward) { /* steps handed off by flags, which take no clusters */
        CgPersistAsk a = *base;
        a.handoff = CG_HANDOFF_FLAGS;
        if (try_clusters) a.split = m->persist_split == 1;
        if (!m->persist_cluster) a.cluster = cg_persist_cluster(base->N, base->products, 0, CG_HANDOFF_FLAGS);
        first[nfirst++] = a;
        /* and operands loaded straight into registers, unclustered (16-bit products), also on the fewest blocks
         * that keep a block's work: what loads nothing into shared memory gains most from fewer blocks
         * (bench/NOTES.md section 100), where the first round would otherwise rank it at every block */
        if (base->products == CG_F16 || base->products == CG_BF16) {
            a.handoff = CG_HANDOFF_DIRECT;
            if (!m->persist_cluster) a.cluster = cg_persist_cluster(base->N, base->products, 0, CG_HANDOFF_DIRECT);
            first[nfirst++] = a;
            CgPersist direct;
            const int fewer = fewest_blocks(S, &a, &direct);
            if (fewer && direct.direct) {
                a.blocks = fewer;
                first[nfirst++] = a;
            }
        }
    }
    /* a 16-bit backward's d(gates) loaded straight into registers, in base's clusters splitting K (bench/NOTES.md
     * section 107: the rule's since, where the plan allows it; the barrier tile is base here) */
    if (m->persist_handoff < 0 && base->backward && (base->products == CG_F16 || base->products == CG_BF16)) {
        CgPersistAsk a = *base;
        a.handoff = CG_HANDOFF_DIRECT;
        first[nfirst++] = a;
    }
    /* base's fewer-blocks tile: a backward's is timed in the first rounds (the rule's split fours on 96 blocks
     * beat every tile of a flashrnn backward's search, whose blocks round saw only the first rounds' winner,
     * fours sharing the operand: bench/NOTES.md section 100); a forward's is built beside them, for the blocks
     * round when base stays best */
    CgPersist planned;
    int fewer = fewest_blocks(S, base, &planned);
    if (fewer && base->backward && nfirst < PREBUILD_MAX) {
        first[nfirst] = *base;
        first[nfirst++].blocks = fewer;
    }
    /* a guess beside them where cores are spare: the warps round's tiles of base, which wins the first
     * rounds more often than not, the backward's most of all (bench/NOTES.md section 39) */
    int nbuild = nfirst, spare = sysconf(_SC_NPROCESSORS_ONLN) >= nfirst + 3;
    for (int i = 0; !m->persist_warps && spare && i < 3 && nbuild < PREBUILD_MAX; i++) {
        first[nbuild] = *base;
        first[nbuild++].warps = warps[i];
    }
    if (fewer && !base->backward && spare && nbuild < PREBUILD_MAX) {
        first[nbuild] = *base;
        first[nbuild++].blocks = fewer;
    }
    prebuild(S, first, nbuild);
    S->best_ask = *base;
    try_tile(S, base);
    S->rule_us = S->best.state == 1 ? S->best_us : 0;
    if (S->best.state == 1) S->rule = S->best;
    for (int i = 1; i < nfirst; i++) { /* the split, flags and direct tiles take the best cluster's other fields: base's */
        CgPersistAsk a = S->best_ask;
        a.cluster = first[i].cluster;
        a.split = first[i].split;
        a.handoff = first[i].handoff;
        a.blocks = first[i].blocks;
        try_tile(S, &a);
    }
    if (!m->persist_warps) {
        CgPersistAsk w[3];
        for (int i = 0; i < 3; i++) {
            w[i] = S->best_ask;
            w[i].warps = warps[i];
        }
        prebuild(S, w, 3);
        for (int i = 0; i < 3; i++) try_tile(S, &w[i]);
    }
    if (S->best.state != 1) return;
    /* the fewest blocks that keep each block's work: less to stage, fewer at the barrier (bench/NOTES.md
     * sections 41 and 100; the GRU's more rows a block lose there, so timed, not a rule) */
    fewer = m->persist_blocks ? 0 : cg_persist_fewer_blocks(m->layout[S->li], &S->best_ask, &S->best.plan);
    if (fewer) {
        CgPersistAsk a = S->best_ask;
        a.blocks = fewer;
        try_tile(S, &a);
    }
    /* the chunk and sequence rounds go on while they gain, each from the last winner; what they would
     * try if the chunks gain (three caps at most) and, the chunks as they are, the sequences (two at
     * most), compiles first: a guess, so bounded */
    CgPersistAsk next[PREBUILD_MAX];
    int nnext = 0, nw_min = S->best.plan.mma ? 2 : 1;
    int64_t top = 256; /* the chunk round's first cap: the largest power of two below the best's chunk */
    while (top * 2 < S->best.plan.kc_max) top *= 2;
    for (int64_t cap = top; !m->persist_chunk && S->best.plan.kc_max > 256 && cap >= 256 && nnext < 3; cap /= 2) {
        next[nnext] = S->best_ask;
        next[nnext++].kc_cap = cap;
    }
    for (int nw = S->best.plan.nw; !m->persist_nw && nw / 2 >= nw_min && nnext < 5; nw /= 2) {
        next[nnext] = S->best_ask;
        next[nnext++].nw_max = nw / 2;
    }
    prebuild(S, next, nnext);
    for (int64_t kc = S->best.plan.kc_max; !m->persist_chunk && kc > 256;) { /* chunks overlap staging with the product */
        int64_t cap = 256;
        while (cap * 2 < kc) cap *= 2;
        CgPersistAsk a = S->best_ask;
        a.kc_cap = cap;
        double before = S->best_us;
        try_tile(S, &a);
        if (S->best_us >= before) break;
        kc = S->best.plan.kc_max;
    }
    for (int nw = S->best.plan.nw; !m->persist_nw && nw / 2 >= nw_min;) { /* fewer sequences a pass: fewer registers */
        CgPersistAsk a = S->best_ask;
        a.nw_max = nw / 2;
        double before = S->best_us;
        try_tile(S, &a);
        if (S->best_us >= before) break;
        nw = S->best.plan.nw;
    }
}

/* The confirming rounds, where the search's best is not the rule's tile: both timed again in
 * turn, CONFIRM_ROUNDS times each, after every other probe (so with the clocks up, which a search
 * starting on an idle GPU does not have for its first tiles); the searched tile stays only if its
 * median is CONFIRM_MARGIN faster than the rule's, else the rule's is kept (a search picking by
 * differences under its probes' noise took slower tiles: bench/NOTES.md sections 47-48). */
static void confirm(Search *S, const CgPersistAsk *base) {
    if (S->best.state != 1 || S->rule.state != 1 || S->best.lib == S->rule.lib || S->fatal != RNNCC_OK) return;
    double tb[CONFIRM_ROUNDS], tr[CONFIRM_ROUNDS];
    double t0 = rt_now_ms();
    for (int i = 0; i < CONFIRM_ROUNDS; i++) {
        const RtPersist *first = i % 2 ? &S->rule : &S->best, *second = i % 2 ? &S->best : &S->rule;
        double *tf = i % 2 ? tr : tb, *ts = i % 2 ? tb : tr;
        if (probe_time(S->m, S->li, first, &S->scratch, &tf[i]) != RNNCC_OK ||
            probe_time(S->m, S->li, second, &S->scratch, &ts[i]) != RNNCC_OK) {
            S->probe_ms += rt_now_ms() - t0;
            if (!device_still_works(S->m)) S->fatal = RNNCC_ERR_CUDA;
            else S->m->error[0] = 0;
            return; /* both ran before: keep the search's pick */
        }
    }
    S->probe_ms += rt_now_ms() - t0;
    double mb = median(tb, CONFIRM_ROUNDS), mr = median(tr, CONFIRM_ROUNDS);
    S->rule_us = mr;
    if (mb < mr * (1.0 - CONFIRM_MARGIN)) {
        S->confirmed = 1;
        S->best_us = mb;
        unload(&S->rule);
        return;
    }
    S->confirmed = -1;
    S->searched_us = mb;
    unload(&S->best);
    S->best = S->rule;
    S->best_ask = *base;
    S->best_us = mr;
}

/* Adds to h the generated source of base's unit (the rule's tile), so that a change of the code
 * generator, not only of persist.cuh, measures the tiles again; nothing where base does not fit. */
static void hash_generated(RtHash *h, const rnncc_model *m, int li, const CgPersistAsk *base) {
    Arena a;
    arena_init(&a);
    Diags d;
    diag_init(&d, &a, NULL, NULL, 0);
    CgPersist P;
    char why[256];
    StrBuf src = {0};
    if (cg_persist_plan(&a, m->layout[li], base, &P, why, sizeof why) &&
        cg_emit_persistent(&a, m->plan, m->layout[li], &P, &src, &d) && !src.failed)
        rt_hash_add(h, src.data, src.len);
    sb_free(&src);
    arena_free(&a);
}

/* The cache key of the search for layout li and base: device, driver and NVRTC versions, cell,
 * dimensions, request (the exact batch: the class's tile is tuned for its first batch), what is
 * forced, profiling, helpers, and the code the rule's tile generates. */
static void choice_key(const rnncc_model *m, int li, const CgPersistAsk *base, char key[33]) {
    RtHash h;
    rt_hash_init(&h);
    rt_hash_add_str(&h, "rnncc persistent tile v4 " RNNCC_VERSION); /* v4: a backward's search tries loading straight */
    int major = 0, minor = 0, driver = 0;
    rt_nvrtc_version(&major, &minor);
    cudaDriverGetVersion(&driver);
    rt_hash_add_str(&h, m->device_name);
    rt_hash_add_str(&h, m->arch);
    rt_hash_add_str(&h, m->source);
    rt_hash_add_str(&h, m->cell->name);
    rt_hash_add_str(&h, cg_persist_text);
    hash_generated(&h, m, li, base);
    rt_hash_add(&h, m->layout[li]->dimval, (size_t)m->cell->ndims * sizeof *m->layout[li]->dimval);
    int64_t fields[] = {base->N,          base->backward,   base->products,      base->sms,    base->smem_limit,
                        m->persist_cluster, m->persist_warps, m->persist_chunk,  m->persist_nw, m->cluster_launch,
                        m->profile_persist, major,            minor,              driver,        m->persist_handoff,
                        base->twins,      m->persist_split,  m->persist_blocks, m->persist_wregs,
                        m->persist_waves,  m->persist_stagger};
    rt_hash_add(&h, fields, sizeof fields);
    rt_hash_hex(&h, key);
}

/* The cached choice for key, into ask (base with the chosen fields); 1 when there is a valid one. */
static int choice_get(const rnncc_model *m, const char *key, const CgPersistAsk *base, CgPersistAsk *ask, double *us,
                      int *tried) {
    void *data = NULL;
    size_t len = 0;
    if (!rt_cache_get(&m->cache, key, &data, &len)) return 0;
    char text[256];
    snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1), (const char *)data);
    free(data);
    int cluster = 0, split = -1, warps = 0, nw = -1, handoff = -1, blocks = -1;
    long long kc = -1;
    CLocaleScope scope; /* us=0.123 whatever the locale of the process that wrote it or of this one */
    c_locale_enter(&scope);
    int got = sscanf(text, "rnncc-tile cluster=%d split=%d warps=%d kc_cap=%lld nw_max=%d handoff=%d blocks=%d us=%lf tried=%d",
                     &cluster, &split, &warps, &kc, &nw, &handoff, &blocks, us, tried);
    c_locale_leave(&scope);
    if (got != 9) return 0;
    if ((cluster != 1 && cluster != 2 && cluster != 4) || (split != 0 && split != 1) || (warps != 4 && warps != 8 && warps != 16) ||
        (kc != 0 && (kc < 256 || kc > 65536)) || (nw != 0 && nw != 1 && nw != 2 && nw != 4 && nw != 8) ||
        (handoff != CG_HANDOFF_BARRIER && handoff != CG_HANDOFF_FLAGS && handoff != CG_HANDOFF_DIRECT) || blocks < 0 ||
        blocks > 1024) /* a cap (0: none); one past the device's multiprocessors plans them all */
        return 0;
    *ask = *base;
    ask->cluster = cluster;
    ask->split = split;
    ask->warps = warps;
    ask->kc_cap = kc;
    ask->nw_max = nw;
    ask->handoff = handoff;
    ask->blocks = blocks;
    return 1;
}

static void choice_put(const rnncc_model *m, const char *key, const CgPersistAsk *ask, double us, int tried) {
    char text[256];
    CLocaleScope scope;
    c_locale_enter(&scope);
    int n = snprintf(text, sizeof text,
                     "rnncc-tile cluster=%d split=%d warps=%d kc_cap=%lld nw_max=%d handoff=%d blocks=%d us=%.3f tried=%d\n",
                     ask->cluster, ask->split, ask->warps ? ask->warps : CG_PERSIST_WARPS, (long long)ask->kc_cap, ask->nw_max,
                     ask->handoff, ask->blocks, us, tried);
    c_locale_leave(&scope);
    if (n > 0 && (size_t)n < sizeof text) rt_cache_put(&m->cache, key, text, (size_t)n);
}

rnncc_status rt_tile_search(rnncc_model *m, int li, const CgPersistAsk *base, RtPersist *p) {
    double t0 = rt_now_ms();
    char key[33], tile[160];
    choice_key(m, li, base, key);
    CgPersistAsk ask;
    double us = 0;
    int tried = 0;
    if (choice_get(m, key, base, &ask, &us, &tried)) {
        if (rt_persist_build(m, li, &ask, p) == RNNCC_OK && p->state == 1) {
            cg_persist_tile_text(&p->plan, tile, sizeof tile);
            snprintf(p->tile, sizeof p->tile, "tile %s: the fastest of %d measured before (%.2f us a step; search cache)",
                     tile, tried, us);
            return RNNCC_OK;
        }
        unload(p); /* the stored tile no longer builds here: search again */
        cudaGetLastError();
        m->error[0] = 0;
    }
    Search S;
    memset(&S, 0, sizeof S);
    S.m = m;
    S.li = li;
    rnncc_status s = scratch_alloc(m, base->N, base->backward, &S.scratch);
    /* 16-bit products read the weights' 16-bit copy (RnnArgs.params16): the scratch's, for the probes */
    if (s == RNNCC_OK) s = rt_half_begin(m, &S.scratch.r, S.scratch.ws, S.scratch.reserve, RT_HALF_CONVERT_HERE);
    if (s == RNNCC_OK) search(&S, base);
    if (s == RNNCC_OK) confirm(&S, base);
    rt_half_end(m);
    scratch_free(&S.scratch);
    if (s == RNNCC_OK) s = S.fatal;
    if (s != RNNCC_OK) {
        drop_best(&S);
        unload(&S.rule);
        return s;
    }
    if (S.best.lib != S.rule.lib) unload(&S.rule); /* only the best one stays loaded */
    if (S.best.state != 1) { /* no tile ran: the rule's build says why (or runs, if only its probe failed) */
        RT_TRY(rt_persist_build(m, li, base, p));
        if (p->state == 1) {
            cg_persist_tile_text(&p->plan, tile, sizeof tile);
            snprintf(p->tile, sizeof p->tile, "tile %s: by rule (no tile of the search ran: %d failed)", tile, S.failed);
        }
        return RNNCC_OK;
    }
    *p = S.best;
    p->tried = S.timed;
    choice_put(m, key, &S.best_ask, S.best_us, S.timed);
    cg_persist_tile_text(&p->plan, tile, sizeof tile);
    char rule[96] = "the rule's did not run";
    if (S.confirmed == -1)
        snprintf(rule, sizeof rule, "the searched tile's %.2f in %d rounds taken in turn", S.searched_us, CONFIRM_ROUNDS);
    else if (S.confirmed == 1)
        snprintf(rule, sizeof rule, "the rule's %.2f; confirmed in %d rounds taken in turn", S.rule_us, CONFIRM_ROUNDS);
    else if (S.rule_us > 0)
        snprintf(rule, sizeof rule, "the rule's %.2f", S.rule_us);
    char failed[40] = "";
    if (S.failed) snprintf(failed, sizeof failed, "; %d did not run", S.failed);
    char head[64] = "";
    if (S.confirmed == -1) snprintf(head, sizeof head, "the rule's, within %.0f%% of ", 100 * CONFIRM_MARGIN);
    snprintf(p->tile, sizeof p->tile,
             "tile %s: %sthe fastest of %d measured (%.2f us a step; %s; searched in %.1f s: %.1f compiling side by side, "
             "%.1f building (%d compiled alone), %.1f timing%s)",
             tile, head, S.timed, S.best_us, rule, (rt_now_ms() - t0) / 1000.0, S.prebuild_ms / 1000.0,
             S.build_ms / 1000.0, S.alone, S.probe_ms / 1000.0, failed);
    return RNNCC_OK;
}
