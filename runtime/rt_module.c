/* Kernels for each dimension binding: generate the CUDA sources (a unit's forward and backward
 * parts, and the conversion unit: every mode's state staging, and what else the model launches), build
 * them through the on-disk cache, all at once (rt_build.c), load them with the CUDA runtime. Key idea: the cache key covers everything that
 * determines the binary (source, options, architecture, NVRTC and rnncc versions), so a hit can
 * never be a stale binary; parts compiled apart compile side by side. */
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

/* What get_kernels looks up in one part's library. */
typedef struct PartKernels {
    RtModule *mod;
    int part; /* 0: forward, 1: backward */
} PartKernels;

/* Looks up one part's kernels in its library: each plan group's forward or backward kernel. */
static rnncc_status get_kernels(rnncc_model *m, void *ctx) {
    PartKernels *k = ctx;
    for (int g = 0; g < m->plan->ngroups; g++) {
        char name[256];
        int n = k->part ? cg_backward_kernel_name(m->plan, g, name, sizeof name) : cg_kernel_name(m->plan, g, name, sizeof name);
        if (n < 0) return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "%skernel name of group %d too long", k->part ? "backward " : "", g);
        RT_CUDA(m, cudaLibraryGetKernel(k->part ? &k->mod->bkernels[g] : &k->mod->kernels[g], k->mod->lib[k->part], name));
    }
    return RNNCC_OK;
}

/* The conversion unit's part that model m launches (CG_CONVERT_* bits): its state staging's rounding, and
 * the 16-bit modes' conversions, RNNCC_TF32X3's split, the projection fold's column moves where it has them. */
unsigned rt_convert_needs(const rnncc_model *m) {
    const int half = m->precision == RNNCC_FP16 || m->precision == RNNCC_BF16;
    return (m->precision == RNNCC_BF16 ? CG_CONVERT_BF16 : 0u) | (half ? CG_CONVERT_HALF : 0u) |
           (m->precision == RNNCC_TF32X3 ? CG_CONVERT_X3 : 0u) | (m->fold ? CG_CONVERT_FOLD : 0u);
}

static rnncc_status get_conversions(rnncc_model *m, void *ctx) {
    (void)ctx;
    const unsigned what = rt_convert_needs(m);
    const int bf16 = !!(what & CG_CONVERT_BF16);
    memset(m->to_half, 0, sizeof m->to_half);
    memset(m->stage_states, 0, sizeof m->stage_states);
    memset(m->fold_columns, 0, sizeof m->fold_columns);
    m->to_x3 = NULL;
    if (what & CG_CONVERT_HALF) RT_CUDA(m, cudaLibraryGetKernel(&m->to_half[bf16], m->convert_lib, bf16 ? "rnncc_to_bf16" : "rnncc_to_f16"));
    if (what & CG_CONVERT_X3) RT_CUDA(m, cudaLibraryGetKernel(&m->to_x3, m->convert_lib, "rnncc_to_x3"));
    RT_CUDA(m, cudaLibraryGetKernel(&m->stage_states[bf16], m->convert_lib, bf16 ? "rnncc_states_bf16" : "rnncc_states_f16"));
    if (what & CG_CONVERT_FOLD) {
        RT_CUDA(m, cudaLibraryGetKernel(&m->fold_columns[0], m->convert_lib, "rnncc_fold_entry"));
        RT_CUDA(m, cudaLibraryGetKernel(&m->fold_columns[1], m->convert_lib, "rnncc_fold_final"));
        RT_CUDA(m, cudaLibraryGetKernel(&m->fold_columns[2], m->convert_lib, "rnncc_fold_gather"));
    }
    return RNNCC_OK;
}

/* Generates one source into mb's next slot and starts building it. */
static rnncc_status start_one(rnncc_model *m, RtModuleBuilds *mb, const PlanLayout *layout, int part) {
    StrBuf *src = &mb->src[mb->n];
    Diags d;
    diag_init(&d, &m->arena, m->cell->name, m->source, strlen(m->source));
    int ok = layout ? cg_emit_unit(&m->arena, m->plan, layout, part ? CG_UNIT_BACKWARD : CG_UNIT_FORWARD, src, &d)
                    : cg_emit_convert(src, rt_convert_needs(m));
    if (!ok || src->failed) { /* what the generator refuses, it says (d); failing without a word, memory ran out */
        int refused = !src->failed && layout && d.head;
        sb_free(src);
        return refused ? rt_fail(m, RNNCC_ERR_UNSUPPORTED, "generating the kernels of cell '%s': %s", m->cell->name,
                                 d.head->msg)
                       : rt_fail(m, RNNCC_ERR_NOMEM, "generating the kernels of cell '%s': out of host memory",
                                 m->cell->name);
    }
    rt_build_start(m, &mb->build[mb->n++], sb_str(src), NULL, 0);
    return RNNCC_OK;
}

rnncc_status rt_modules_start(rnncc_model *m, RtModuleBuilds *mb) {
    memset(mb, 0, sizeof *mb);
    for (int i = 0; i < m->nmodules; i++) {
        RtModule *out = &m->module[i];
        memset(out, 0, sizeof *out);
        out->kernels = arena_array(&m->arena, (size_t)m->plan->ngroups + 1, sizeof *out->kernels);
        out->bkernels = arena_array(&m->arena, (size_t)m->plan->ngroups + 1, sizeof *out->bkernels);
        if (!out->kernels || !out->bkernels) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        for (int part = 0; part < 2; part++) RT_TRY(start_one(m, mb, m->layout[i], part));
    }
    RT_TRY(start_one(m, mb, NULL, 0)); /* conversions and state staging: every precision stages states */
    return RNNCC_OK;
}

rnncc_status rt_modules_finish(rnncc_model *m, RtModuleBuilds *mb, int abandon) {
    rnncc_status s = RNNCC_OK;
    for (int b = 0; b < mb->n; b++) { /* as rt_modules_start ordered them: module i's parts at 2i, 2i+1, then the conversions */
        if (s == RNNCC_OK && !abandon) {
            int i = b / 2, part = b % 2;
            PartKernels k = {&m->module[i < m->nmodules ? i : 0], part};
            s = i < m->nmodules ? rt_build_load(m, &mb->build[b], get_kernels, &k, &m->module[i].lib[part])
                                : rt_build_load(m, &mb->build[b], get_conversions, NULL, &m->convert_lib);
        }
        rt_build_free(&mb->build[b]);
        sb_free(&mb->src[b]);
    }
    mb->n = 0;
    return s;
}

void rt_module_unload(RtModule *mod) {
    for (int part = 0; part < 2; part++) {
        if (mod->lib[part]) cudaLibraryUnload(mod->lib[part]);
        mod->lib[part] = NULL;
    }
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
