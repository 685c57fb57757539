/* Generated sources built into CUDA libraries through the on-disk cache, several at once: a
 * miss compiles with NVRTC on a thread of its own while the caller goes on (creating its cuBLAS
 * handles, compiling the other units), and the caller then waits, caches and loads.
 * Key idea: a worker touches nothing but its RtBuild (NVRTC compiles separate programs
 * concurrently); the model's error, the cache and every CUDA call stay with the calling thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* The cache key of a generated source compiled to CUBIN for arch. */
static int build_key(const char *source, const char *arch, char key[33]) {
    char opts[512];
    int major = 0, minor = 0;
    if (rt_nvrtc_options_text(RT_NVRTC_CUBIN, arch, opts, sizeof opts) < 0) return 0;
    if (rt_nvrtc_version(&major, &minor) != RT_NVRTC_OK) return 0;
    char versions[64];
    snprintf(versions, sizeof versions, "nvrtc %d.%d rnncc %s", major, minor, RNNCC_VERSION);
    RtHash h;
    rt_hash_init(&h);
    rt_hash_add_str(&h, source);
    rt_hash_add_str(&h, opts);
    rt_hash_add_str(&h, arch);
    rt_hash_add_str(&h, versions);
    rt_hash_hex(&h, key);
    return 1;
}

void rt_build_start(rnncc_model *m, RtBuild *b, const char *source, const char *arch, int fresh) {
    memset(b, 0, sizeof *b);
    if (!arch) arch = m->arch;
    b->have_key = build_key(source, arch, b->key);
    b->from_cache = !fresh && b->have_key && rt_cache_get(&m->cache, b->key, &b->bin, &b->len);
    if (b->from_cache) { /* no compile: the job only holds what a fresh one would take */
        b->job.source = source;
        b->job.name = m->cell->name;
        b->job.arch = arch;
        return;
    }
    rt_nvrtc_job_start(&b->job, source, m->cell->name, arch);
}

rnncc_status rt_build_wait(rnncc_model *m, RtBuild *b) {
    if (b->from_cache) return RNNCC_OK;
    rt_nvrtc_job_join(&b->job);
    RtNvrtcResult *res = &b->job.res;
    if (res->status != RT_NVRTC_OK) {
        StrBuf sb = {0};
        rt_nvrtc_report(res, &sb);
        rnncc_status s = rt_fail(m, res->status == RT_NVRTC_ERR_NOMEM ? RNNCC_ERR_NOMEM : RNNCC_ERR_NVRTC,
                                 "compiling the kernels of cell '%s' for %s: %.1900s", b->job.name, b->job.arch, sb_str(&sb));
        sb_free(&sb);
        return s;
    }
    if (b->bin) return RNNCC_OK; /* waited for before */
    b->bin = res->image;
    b->len = res->size;
    res->image = NULL;
    if (b->have_key) rt_cache_put(&m->cache, b->key, b->bin, b->len);
    return RNNCC_OK;
}

rnncc_status rt_build_load(rnncc_model *m, RtBuild *b, rnncc_status (*get)(rnncc_model *, void *), void *ctx,
                           cudaLibrary_t *lib) {
    *lib = NULL;
    for (int fresh = 0;; fresh = 1) {
        RT_TRY(rt_build_wait(m, b));
        cudaError_t e = cudaLibraryLoadData(lib, b->bin, NULL, NULL, 0, NULL, NULL, 0);
        rnncc_status s = e != cudaSuccess ? rt_cuda_fail(m, e, "cudaLibraryLoadData", __FILE__, __LINE__) : get(m, ctx);
        if (s == RNNCC_OK || !b->from_cache || fresh) return s;
        /* a cached binary the driver refuses: compile afresh, here */
        if (*lib) cudaLibraryUnload(*lib);
        *lib = NULL;
        cudaGetLastError();
        const char *source = b->job.source, *arch = b->job.arch;
        rt_build_free(b);
        rt_build_start(m, b, source, arch, 1);
    }
}

void rt_build_free(RtBuild *b) {
    rt_nvrtc_job_free(&b->job); /* never leave a worker behind its RtBuild */
    free(b->bin);
    memset(b, 0, sizeof *b);
}

rnncc_status rt_module_library(rnncc_model *m, const char *source, const char *arch,
                               rnncc_status (*get)(rnncc_model *, void *), void *ctx, cudaLibrary_t *lib, int *from_cache) {
    RtBuild b;
    rt_build_start(m, &b, source, arch, 0);
    rnncc_status s = rt_build_load(m, &b, get, ctx, lib);
    *from_cache = b.from_cache;
    rt_build_free(&b);
    return s;
}
