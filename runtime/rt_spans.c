/* Overlapping device buffers (rt_spans.h). Key idea: a pass that writes a buffer while it reads
 * (or writes) another lying in the same bytes produces wrong results without any error of CUDA's,
 * and which ones depends on the backend and the timing; so every call lists the ranges it is
 * given (sizes from the model and T, N: the bytes the call touches, not what the caller
 * allocated) and refuses any pair where one side is written. Inputs may share bytes with each
 * other (both only read), and a layer-direction's initial and final states may be one buffer
 * (each unit reads its initial state before it writes its final one); nothing else may. */
#include <stdio.h>

#include "rt_internal.h"

void rt_span(RtSpans *s, const char *name, int index, const void *p, size_t bytes, int written, int twin) {
    if (!p || !bytes || s->n >= RT_MAX_SPANS) return;
    s->s[s->n++] = (RtSpan){name, index, p, bytes, written, twin};
}

static void put_name(const RtSpan *a, char *buf, size_t size) {
    if (a->index >= 0) snprintf(buf, size, "%s[%d]", a->name, a->index);
    else snprintf(buf, size, "%s", a->name);
}

int rt_spans_disjoint(const RtSpans *s, char *why, size_t why_size) {
    for (int i = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++) {
            const RtSpan *a = &s->s[i], *b = &s->s[j];
            if (!a->written && !b->written) continue;
            if (a->p >= b->p + b->bytes || b->p >= a->p + a->bytes) continue;
            if (a->twin > 0 && a->twin == b->twin && a->p == b->p && a->bytes == b->bytes) continue;
            char na[64], nb[64];
            put_name(a, na, sizeof na), put_name(b, nb, sizeof nb);
            const RtSpan *w = a->written ? a : b;
            snprintf(why, why_size, "%s overlaps %s (%zu and %zu bytes from %p and %p): the call writes %s, so they "
                                    "must lie apart",
                     nb, na, b->bytes, a->bytes, (const void *)b->p, (const void *)a->p, w == a ? na : nb);
            return 0;
        }
    return 1;
}

void rt_spans_begin(RtSpans *s, const rnncc_model *m, const rnncc_model_sizes *z, const void *ws, size_t ws_bytes,
                    const void *reserve, size_t reserve_bytes, const float *x, int64_t T, int64_t N, int weights_written) {
    s->n = 0;
    rt_span(s, "workspace", -1, ws, ws_bytes, 1, 0);
    rt_span(s, "reserve", -1, reserve, reserve_bytes, 1, 0);
    rt_span(s, "the model's weights", -1, m->weights, (size_t)m->weight_count * sizeof(float), weights_written, 0);
    rt_span(s, "io->x", -1, x, (size_t)(T * N * z->input) * sizeof(float), 0, 0);
}

void rt_span_outputs(RtSpans *s, const rnncc_model *m, const rnncc_model_sizes *z, const char *name,
                     const float *const *v, int64_t T, int64_t N, int written) {
    for (int o = 0; v && o < z->noutputs; o++)
        rt_span(s, name, o, v[o], (size_t)(T * N * z->output_size[o] * m->dirs) * sizeof(float), written, 0);
}

void rt_span_states(RtSpans *s, const rnncc_model *m, const rnncc_model_sizes *z, const char *name,
                    const float *const *v, int64_t N, int written, int twins) {
    for (int k = 0; v && k < z->nstates; k++)
        rt_span(s, name, k, v[k], (size_t)(m->layers * m->dirs * N * z->state_size[k]) * sizeof(float), written,
                twins ? k + 1 : 0);
}

rnncc_status rt_spans_check(rnncc_model *m, const RtSpans *s) {
    char why[512];
    return rt_spans_disjoint(s, why, sizeof why) ? RNNCC_OK : rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "%s", why);
}

/* The memory type of p, cudaMemoryTypeUnregistered where the driver does not know it; asked in relaxed capture mode,
 * so that a caller's graph capture in progress (the calls may be captured) is never invalidated by the question. */
static enum cudaMemoryType memory_type(const void *p) {
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not a pointer the driver knows: plain host memory */
        return cudaMemoryTypeUnregistered;
    }
    return a.type;
}

rnncc_status rt_spans_reachable(rnncc_model *m, const RtSpans *s) {
    for (int i = 0; i < s->n; i++) {
        const RtSpan *a = &s->s[i];
        char name[64];
        put_name(a, name, sizeof name);
        if ((uintptr_t)a->p % 4)
            return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "%s (%p) is not at a multiple of 4 bytes", name, (const void *)a->p);
        if (memory_type(a->p) == cudaMemoryTypeUnregistered && !m->pageable)
            return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                           "%s (%p) is host memory that the GPU cannot reach: allocate it with cudaMalloc (or "
                           "page-lock it: cudaHostRegister)", name, (const void *)a->p);
    }
    return RNNCC_OK;
}

rnncc_status rt_host_readable(rnncc_model *m, const char *name, const void *p) {
    enum { KNOWN = (int)(sizeof m->host_known / sizeof m->host_known[0]) };
    if (!p) return RNNCC_OK;
    for (int i = 0; i < KNOWN; i++)
        if (m->host_known[i] == p) return RNNCC_OK;
    enum cudaMemoryType t = memory_type(p);
    if (t == cudaMemoryTypeDevice)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "%s (%p) is device memory; it must be host memory (the library "
                                                      "reads it on the host)", name, p);
    if (t == cudaMemoryTypeUnregistered) { /* plain host memory lies outside the driver's range for good: kept */
        m->host_known[m->host_known_next] = p;
        m->host_known_next = (m->host_known_next + 1) % KNOWN;
    }
    return RNNCC_OK;
}
