/* Kernels for one dimension binding: generate the CUDA source, look it up in the on-disk
 * cache, compile it with NVRTC on a miss, load it with the CUDA runtime.
 * Key idea: the cache key covers everything that determines the binary (source, options,
 * architecture, NVRTC and rnncc versions), so a hit can never be a stale binary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/cg.h"
#include "rt_internal.h"
#include "rt_nvrtc.h"

double rt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The cache key of a generated source compiled to CUBIN for arch. */
static int module_key(const char *source, const char *arch, char key[33]) {
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

/* Compiles source with NVRTC into a malloc'd CUBIN; on failure records NVRTC's report. */
static rnncc_status compile(rnncc_model *m, const char *source, const char *arch, void **bin, size_t *len) {
    RtNvrtcResult res;
    RtNvrtcStatus st = rt_nvrtc_compile(source, m->cell->name, RT_NVRTC_CUBIN, arch, &res);
    if (st != RT_NVRTC_OK) {
        StrBuf sb = {0};
        rt_nvrtc_report(&res, &sb);
        rnncc_status s = rt_fail(m, st == RT_NVRTC_ERR_NOMEM ? RNNCC_ERR_NOMEM : RNNCC_ERR_NVRTC,
                                 "compiling the kernels of cell '%s' for %s: %.1900s", m->cell->name, arch, sb_str(&sb));
        sb_free(&sb);
        rt_nvrtc_result_free(&res);
        return s;
    }
    *bin = res.image;
    *len = res.size;
    res.image = NULL;
    rt_nvrtc_result_free(&res);
    return RNNCC_OK;
}

/* The CUBIN of a generated source for arch: from the on-disk cache (unless fresh), else compiled
 * by NVRTC and cached. *bin is malloc'd. */
static rnncc_status module_binary(rnncc_model *m, const char *source, const char *arch, int fresh, void **bin,
                                  size_t *len, int *from_cache) {
    char key[33];
    int have_key = module_key(source, arch, key);
    *bin = NULL;
    *from_cache = !fresh && have_key && rt_cache_get(&m->cache, key, bin, len);
    if (*from_cache) return RNNCC_OK;
    RT_TRY(compile(m, source, arch, bin, len));
    if (have_key) rt_cache_put(&m->cache, key, *bin, *len);
    return RNNCC_OK;
}

rnncc_status rt_module_library(rnncc_model *m, const char *source, const char *arch,
                               rnncc_status (*get)(rnncc_model *, void *), void *ctx, cudaLibrary_t *lib, int *from_cache) {
    void *bin = NULL;
    size_t len = 0;
    *lib = NULL;
    if (!arch) arch = m->arch;
    for (int fresh = 0; fresh < 2; fresh++) {
        rnncc_status s = module_binary(m, source, arch, fresh, &bin, &len, from_cache);
        if (s != RNNCC_OK) return s;
        cudaError_t e = cudaLibraryLoadData(lib, bin, NULL, NULL, 0, NULL, NULL, 0);
        free(bin);
        s = e != cudaSuccess ? rt_cuda_fail(m, e, "cudaLibraryLoadData", __FILE__, __LINE__) : get(m, ctx);
        if (s == RNNCC_OK || !*from_cache) return s;
        /* a cached binary the driver refuses: compile afresh */
        if (*lib) cudaLibraryUnload(*lib);
        *lib = NULL;
        cudaGetLastError();
    }
    return RNNCC_OK;
}

/* Looks up the per-step unit's kernels in its library. */
static rnncc_status get_kernels(rnncc_model *m, void *ctx) {
    RtModule *out = ctx;
    for (int g = 0; g < m->plan->ngroups; g++) {
        char name[256];
        if (cg_kernel_name(m->plan, g, name, sizeof name) < 0)
            return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "kernel name of group %d too long", g);
        RT_CUDA(m, cudaLibraryGetKernel(&out->kernels[g], out->lib, name));
        if (cg_backward_kernel_name(m->plan, g, name, sizeof name) < 0)
            return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "backward kernel name of group %d too long", g);
        RT_CUDA(m, cudaLibraryGetKernel(&out->bkernels[g], out->lib, name));
    }
    RT_CUDA(m, cudaLibraryGetKernel(&out->to_half[0], out->lib, "rnncc_to_f16"));
    RT_CUDA(m, cudaLibraryGetKernel(&out->to_half[1], out->lib, "rnncc_to_bf16"));
    return RNNCC_OK;
}

rnncc_status rt_module_load(rnncc_model *m, const PlanLayout *layout, RtModule *out) {
    double t0 = rt_now_ms();
    memset(out, 0, sizeof *out);
    out->kernels = arena_array(&m->arena, (size_t)m->plan->ngroups + 1, sizeof *out->kernels);
    out->bkernels = arena_array(&m->arena, (size_t)m->plan->ngroups + 1, sizeof *out->bkernels);
    if (!out->kernels || !out->bkernels) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    StrBuf src = {0};
    Diags d;
    diag_init(&d, &m->arena, m->cell->name, m->source, strlen(m->source));
    if (!cg_emit_forward(&m->arena, m->plan, layout, &src, &d) || src.failed) {
        sb_free(&src);
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "generating the kernels of cell '%s': %s", m->cell->name,
                       d.head ? d.head->msg : "out of memory");
    }
    rnncc_status s = rt_module_library(m, sb_str(&src), NULL, get_kernels, out, &out->lib, &out->from_cache);
    sb_free(&src);
    out->compile_ms = rt_now_ms() - t0;
    return s;
}

void rt_module_unload(RtModule *mod) {
    if (mod->lib) cudaLibraryUnload(mod->lib);
    mod->lib = NULL;
}

rnncc_status rt_launch_group(rnncc_model *m, const void *fn, unsigned blocks, void **args, cudaStream_t stream,
                             int dependent) {
    cudaLaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = (dim3){blocks, 1, 1};
    cfg.blockDim = (dim3){CG_BLOCK_SIZE, 1, 1};
    cfg.stream = stream;
    cfg.attrs = dependent && m->pdl ? &attr : NULL;
    cfg.numAttrs = dependent && m->pdl ? 1 : 0;
    RT_CUDA(m, cudaLaunchKernelExC(&cfg, fn, args));
    RT_CUDA(m, cudaGetLastError());
    return RNNCC_OK;
}
