/* Models: a cell bound to dimensions, planned, JIT-compiled and given device weights.
 * Key idea: every failure leaves a handle that says why (a failed model answers only
 * rnncc_model_error and destroy), and nothing is left allocated behind it. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

_Static_assert(RNN_MAX_STATES == IR_MAX_STATES && RNN_MAX_OUTPUTS == IR_MAX_OUTPUTS && RNN_MAX_BUFFERS == SCHED_MAX_BUFFERS,
               "the kernels' argument block holds exactly the states, outputs and buffers a cell's plan may have");

rnncc_status rt_fail(rnncc_model *m, rnncc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error, sizeof m->error, fmt, ap);
    va_end(ap);
    return status;
}

rnncc_status rt_cuda_fail(rnncc_model *m, cudaError_t e, const char *call, const char *file, int line) {
    rnncc_status s = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? RNNCC_ERR_NO_GPU : RNNCC_ERR_CUDA;
    cudaGetLastError(); /* clear a non-sticky error so the handle stays usable */
    return rt_fail(m, s, "%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorString(e), cudaGetErrorName(e));
}

rnncc_status rt_cublas_fail(rnncc_model *m, cublasStatus_t e, const char *call, const char *file, int line) {
    return rt_fail(m, RNNCC_ERR_CUBLAS, "%s:%d: %s failed: %s", file, line, call, cublasGetStatusString(e));
}

/* Not cudaMemcpy or cudaMemset: on the legacy stream they are not ordered before the model's
 * non-blocking streams, a pageable copy may return before its DMA lands, and a memset returns at once;
 * a copy on stream 0 could then land before an earlier memset and be zeroed (bench/NOTES.md section 55).
 * Stream 0 first waits for the legacy stream, which waits for every blocking stream's earlier work: a
 * pass still running on the caller's stream (a replayed graph runs there alone) reads the old values.
 * Not while a blocking stream is being captured (the legacy stream is unusable then, and touching it
 * would spoil that capture): the write then waits for the model's streams alone. */
static rnncc_status stream0_after_legacy(rnncc_model *m, const char *what) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    RT_CUDA(m, cudaStreamIsCapturing(m->streams[0], &st));
    if (st != cudaStreamCaptureStatusNone)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED,
                       "%s: not written while the caller's graph capture holds the model's stream (a pass captured "
                       "before it in the same capture): end the capture first, or run this call before it", what);
    cudaError_t e = cudaStreamIsCapturing(cudaStreamLegacy, &st); /* cudaErrorStreamCaptureImplicit: unusable */
    if (e == cudaErrorStreamCaptureImplicit) cudaGetLastError();
    else RT_CUDA(m, e);
    if (e == cudaSuccess && st == cudaStreamCaptureStatusNone) {
        RT_CUDA(m, cudaEventRecord(m->events[5], cudaStreamLegacy));
        RT_CUDA(m, cudaStreamWaitEvent(m->streams[0], m->events[5], 0));
    }
    return RNNCC_OK;
}

/* Refuses a call that allocates and writes (rnncc_model_weights16) while any graph capture is under way that it
 * could spoil: one holding the model's stream, or a blocking stream's (the legacy stream then unusable). */
static rnncc_status refuse_in_capture(rnncc_model *m, const char *what) {
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone, legacy = cudaStreamCaptureStatusNone;
    RT_CUDA(m, cudaStreamIsCapturing(m->streams[0], &st));
    cudaError_t e = cudaStreamIsCapturing(cudaStreamLegacy, &legacy);
    if (e == cudaErrorStreamCaptureImplicit) cudaGetLastError();
    else RT_CUDA(m, e);
    if (st != cudaStreamCaptureStatusNone || e == cudaErrorStreamCaptureImplicit || legacy != cudaStreamCaptureStatusNone)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED,
                       "%s: not while a graph capture is under way (it allocates and writes the model's 16-bit "
                       "weights): end the capture first, or run this call before it", what);
    return RNNCC_OK;
}

/* What write_on_device writes into dst. */
typedef enum DeviceWrite {
    WRITE_COPY,    /* bytes from host memory at src */
    WRITE_ZEROS,   /* bytes of zeros */
    WRITE_ROUNDED, /* every fp32 weight rounded to 16 bits (rnncc_model_weights16; dst the kept copy) */
} DeviceWrite;

/* Writes dst on stream 0 after the legacy stream and waits for it, the model's device current for the call
 * (the legacy stream is the current device's). */
static rnncc_status write_on_device(rnncc_model *m, const char *what, DeviceWrite how, void *dst, const void *src,
                                    size_t bytes) {
    RT_TRY(stream0_after_legacy(m, what));
    if (how == WRITE_COPY) RT_CUDA(m, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, m->streams[0]));
    else if (how == WRITE_ZEROS) RT_CUDA(m, cudaMemsetAsync(dst, 0, bytes, m->streams[0]));
    else { /* after the last graph replay on the caller's stream that read the copy (rt_run records it) */
        RT_CUDA(m, cudaStreamWaitEvent(m->streams[0], m->events[4], 0));
        RT_TRY(rt_half_round_weights(m, m->streams[0], dst));
    }
    RT_CUDA(m, cudaStreamSynchronize(m->streams[0]));
    return RNNCC_OK;
}

static rnncc_status on_device(rnncc_model *m, const char *what, DeviceWrite how, void *dst, const void *src,
                              size_t bytes) {
    int prev = -1;
    cudaGetDevice(&prev);
    cudaError_t e = prev == m->device ? cudaSuccess : cudaSetDevice(m->device);
    rnncc_status s = e != cudaSuccess ? rt_cuda_fail(m, e, "cudaSetDevice", __FILE__, __LINE__)
                                      : write_on_device(m, what, how, dst, src, bytes);
    if (prev >= 0 && prev != m->device) cudaSetDevice(prev);
    return s;
}

rnncc_status rt_upload(rnncc_model *m, const char *what, void *dst, const void *src, size_t bytes) {
    return bytes == 0 ? RNNCC_OK : on_device(m, what, src ? WRITE_COPY : WRITE_ZEROS, dst, src, bytes);
}

const char *rnncc_model_error(const rnncc_model *m) { return m ? m->error : "model is NULL"; }

/* Fails where a state of c changes size between layer 0 and layers > 0. */
static rnncc_status states_keep_size(rnncc_model *m, const IrCell *c) {
    for (int k = 0; m->layers > 1 && k < c->nstates; k++) {
        const IrState *s = &c->states[k];
        if (ir_shape_numel(&s->shape, m->dimval[0]) != ir_shape_numel(&s->shape, m->dimval[1]))
            return rt_fail(m, RNNCC_ERR_UNSUPPORTED,
                           "desc->layers: state '%s' changes size between layer 0 and layer 1 (it depends on the input size)",
                           s->name);
    }
    return RNNCC_OK;
}

/* Binds the dimensions of layer 0 and of layers > 0 (whose input is the previous layer's first
 * output, both directions concatenated). */
static rnncc_status bind_layers(rnncc_model *m, const rnncc_model_desc *desc) {
    const IrCell *c = m->api; /* a fold's cell shares its dimensions */
    Diags d;
    diag_init(&d, &m->arena, "desc.dims", NULL, 0);
    for (int i = 0; i < 2; i++)
        if (!(m->dimval[i] = arena_array(&m->arena, (size_t)c->ndims + 1, sizeof(int64_t))))
            return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    if (!ir_bind_dims(c, desc->dims, desc->ndims, m->dimval[0], &d)) {
        StrBuf sb = {0};
        for (const Diag *g = d.head; g; g = g->next) sb_printf(&sb, "%s%s", g == d.head ? "" : "; ", g->msg);
        rnncc_status st = rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->dims: %s", sb_str(&sb));
        sb_free(&sb);
        return st;
    }
    memcpy(m->dimval[1], m->dimval[0], (size_t)c->ndims * sizeof(int64_t));
    if (m->layers == 1) return RNNCC_OK;
    int in = c->inputs[0].shape.dims[0];
    int64_t out = ir_node_len(c, c->outputs[0].node, m->dimval[0]) * m->dirs;
    if (!c->dims[in].name && c->dims[in].literal != out)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "desc->layers: layer 1 reads layer 0's output of size %lld, but the cell's input size is the literal %lld",
                       (long long)out, (long long)c->dims[in].literal);
    m->dimval[1][in] = out;
    if (ir_node_len(c, c->outputs[0].node, m->dimval[1]) * m->dirs != out)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "desc->layers: the cell's input dimension %s also sizes its output, so layers cannot be stacked",
                       c->dims[in].name);
    return states_keep_size(m, c);
}

/* The projection fold's choice (rt_fold.c: it reads the bound dimensions), then the checks of the plan that runs:
 * its buffers, and the folded cell's states as bind_layers checks the cell's as written. */
static rnncc_status fold_and_check(rnncc_model *m) {
    RT_TRY(rt_fold_choose(m));
    if (m->plan->nbuffers > RNN_MAX_BUFFERS)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "cell '%s' needs %d buffers; at most %d are supported", m->cell->name,
                       m->plan->nbuffers, RNN_MAX_BUFFERS);
    m->input_gemm = m->fold ? -1 : sched_input_gemm(m->plan); /* a folded cell's backward as it was (rt_fold.c) */
    return m->cell != m->api ? states_keep_size(m, m->cell) : RNNCC_OK;
}

static rnncc_status validate_desc(rnncc_model *m, const rnncc_program *p, const rnncc_model_desc *desc) {
    if (!p) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "program is NULL");
    if (!p->module) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "program: the cell source has errors:\n%s", p->log);
    if (!desc) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc is NULL");
    if (desc->layers < 1 || desc->layers > 1024)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->layers must be between 1 and 1024, not %d", desc->layers);
    if (desc->bidirectional != 0 && desc->bidirectional != 1)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->bidirectional must be 0 or 1, not %d", desc->bidirectional);
    if (desc->precision < RNNCC_FP32 || desc->precision > RNNCC_TF32X3)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "desc->precision must be RNNCC_FP32, RNNCC_TF32, RNNCC_FP16, RNNCC_BF16 or RNNCC_TF32X3, not %d",
                       (int)desc->precision);
    if (desc->keep_derived_weights != 0 && desc->keep_derived_weights != 1)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->keep_derived_weights must be 0 or 1, not %d",
                       desc->keep_derived_weights);
    if (desc->fold != RNNCC_FOLD_AUTO && desc->fold != RNNCC_FOLD_ON && desc->fold != RNNCC_FOLD_OFF)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->fold must be RNNCC_FOLD_AUTO, RNNCC_FOLD_ON or RNNCC_FOLD_OFF, not %d",
                       (int)desc->fold);
    if (desc->backend != RNNCC_BACKEND_AUTO && desc->backend != RNNCC_BACKEND_CUBLAS &&
        desc->backend != RNNCC_BACKEND_PERSISTENT)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "desc->backend must be RNNCC_BACKEND_AUTO, RNNCC_BACKEND_CUBLAS or RNNCC_BACKEND_PERSISTENT, not %d",
                       (int)desc->backend);
    if (desc->device < -1)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->device is %d; it must be a device ordinal, or -1 for the "
                                                      "current device", desc->device);
    if (desc->ndims < 0)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->ndims is %d; it must be 0 or more", desc->ndims);
    if (desc->ndims > 0 && !desc->dims)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->dims is NULL but desc->ndims is %d", desc->ndims);
    for (int i = 0; i < desc->ndims; i++)
        if (!desc->dims[i]) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->dims[%d] is NULL", i);
    return RNNCC_OK;
}

/* Compiles the program's source again into the model's own arena, so the model outlives it. */
static rnncc_status own_cell(rnncc_model *m, const rnncc_program *p, const char *name) {
    m->source = malloc(p->len + 1);
    if (!m->source) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    memcpy(m->source, p->source, p->len + 1);
    Diags d;
    diag_init(&d, &m->arena, p->name, m->source, p->len);
    IrModule *mod = ir_compile(&m->arena, &d, m->source, p->len);
    if (!mod) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    m->cell = ir_find_cell(mod, name);
    if (!m->cell) {
        if (name) return rt_fail(m, RNNCC_ERR_NOT_FOUND, "desc->cell: no cell named '%s' in %s", name, p->name);
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->cell is NULL but %s defines %d cells; name one", p->name, mod->ncells);
    }
    const IrCell *c = m->cell; /* at most IR_MAX_STATES states and IR_MAX_OUTPUTS outputs: ir_compile's check */
    diag_init(&d, &m->arena, p->name, m->source, p->len);
    m->api = c;
    m->plan = sched_plan(&m->arena, c, &d);
    if (!m->plan) return rt_fail(m, RNNCC_ERR_UNSUPPORTED, "cell '%s': %s", c->name, d.head ? d.head->msg : "cannot schedule");
    return RNNCC_OK;
}

static rnncc_status layout_units(rnncc_model *m) {
    Diags d;
    diag_init(&d, &m->arena, "layout", NULL, 0);
    int distinct = m->layers > 1 && memcmp(m->dimval[0], m->dimval[1], (size_t)m->cell->ndims * sizeof(int64_t)) != 0;
    m->nmodules = 1 + distinct;
    for (int i = 0; i < m->nmodules; i++)
        if (!(m->layout[i] = sched_layout(&m->arena, m->plan, m->dimval[i], &d)))
            return d.head ? rt_fail(m, RNNCC_ERR_OVERFLOW, "desc->dims: %s", d.head->msg)
                          : rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory"); /* sched_layout says why it refuses */
    m->nunits = m->layers * m->dirs;
    m->units = arena_array(&m->arena, (size_t)m->nunits, sizeof *m->units);
    if (!m->units) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
    int64_t off = 0;
    for (int u = 0; u < m->nunits; u++) {
        int l = u / m->dirs, which = l > 0 && distinct;
        m->units[u] = (RtUnit){l, u % m->dirs, m->layout[which], &m->module[which], off};
        if (__builtin_add_overflow(off, m->layout[which]->packed_size, &off))
            return rt_fail(m, RNNCC_ERR_OVERFLOW, "desc: the weights of all layers overflow");
    }
    m->weight_count = off;
    return RNNCC_OK;
}

/* The model's cuBLAS and cuBLASLt handles, made under the process-wide lock (rt_lock.c). */
static rnncc_status create_handles(rnncc_model *m) {
    rt_exclusive_begin();
    cublasStatus_t s = cublasLtCreate(&m->gemm.lt);
    for (int i = 0; i < 2 && s == CUBLAS_STATUS_SUCCESS; i++) s = cublasCreate(&m->cublas[i]);
    rt_exclusive_end();
    if (s != CUBLAS_STATUS_SUCCESS)
        return rt_fail(m, RNNCC_ERR_CUBLAS, "creating the cuBLAS handles failed: %s", cublasGetStatusString(s));
    return RNNCC_OK;
}

static rnncc_status setup_handles(rnncc_model *m, const struct cudaDeviceProp *prop);

/* Device side: pick the device, set the kernels building, allocate weights, make handles and
 * streams meanwhile, then load the kernels. */
static rnncc_status setup_device(rnncc_model *m) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError();
        return rt_fail(m, RNNCC_ERR_NO_GPU, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    if (m->device < 0) RT_CUDA(m, cudaGetDevice(&m->device));
    if (m->device >= count)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "desc->device is %d but there are %d devices", m->device, count);
    RT_CUDA(m, cudaSetDevice(m->device));
    struct cudaDeviceProp prop;
    RT_CUDA(m, cudaGetDeviceProperties(&prop, m->device));
    snprintf(m->arch, sizeof m->arch, "sm_%d%d", prop.major, prop.minor);
    snprintf(m->device_name, sizeof m->device_name, "%s", prop.name);
    rt_cache_open(&m->cache);
    RtModuleBuilds builds;
    rnncc_status s = rt_modules_start(m, &builds);
    if (s == RNNCC_OK) s = setup_handles(m, &prop);
    rnncc_status b = rt_modules_finish(m, &builds, s != RNNCC_OK);
    return s != RNNCC_OK ? s : b;
}

/* What setup_device does while the kernels build: allocations, handles, streams, events. */
static rnncc_status setup_handles(rnncc_model *m, const struct cudaDeviceProp *prop) {
    m->sms = prop->multiProcessorCount;
    m->smem_optin = (int64_t)prop->sharedMemPerBlockOptin;
    m->coop = prop->cooperativeLaunch;
    RT_CUDA(m, cudaDeviceGetAttribute(&m->pageable, cudaDevAttrPageableMemoryAccess, m->device));
    const char *pdl = getenv("RNNCC_PDL"); /* RNNCC_PDL=0: forward kernels launched plainly */
    m->pdl = prop->major >= 9 && !(pdl && strcmp(pdl, "0") == 0);
    RT_CUDA(m, cudaDeviceGetAttribute(&m->cluster_launch, cudaDevAttrClusterLaunch, m->device));
    RT_CUDA(m, cudaMalloc((void **)&m->sync, 2 * sizeof *m->sync));
    size_t bytes;
    if (__builtin_mul_overflow((size_t)m->weight_count, sizeof(float), &bytes))
        return rt_fail(m, RNNCC_ERR_OVERFLOW, "desc: the weights overflow");
    RT_CUDA(m, cudaMalloc((void **)&m->weights, bytes ? bytes : 4));
    RT_TRY(create_handles(m));
    for (int i = 0; i < 2; i++) {
        RT_CUDA(m, cudaMalloc(&m->cublas_ws[i], RT_CUBLAS_WS));
        RT_CUBLAS(m, cublasSetWorkspace(m->cublas[i], m->cublas_ws[i], RT_CUBLAS_WS));
        RT_CUDA(m, cudaStreamCreateWithFlags(&m->streams[i], cudaStreamNonBlocking));
    }
    for (size_t i = 0; i < sizeof m->events / sizeof m->events[0]; i++)
        RT_CUDA(m, cudaEventCreateWithFlags(&m->events[i], cudaEventDisableTiming));
    RT_TRY(rt_upload(m, "zeroing the weights", m->weights, NULL, bytes)); /* after the streams and events it uses */
    for (int i = 0; i < 2; i++) RT_CUDA(m, cudaEventCreate(&m->tevents[i]));
    const char *g = getenv("RNNCC_GRAPHS"), *w = getenv("RNNCC_WAVEFRONT"), *pp = getenv("RNNCC_PROFILE_PERSIST");
    m->use_graphs = !(g && strcmp(g, "0") == 0);
    m->profile_persist = pp && strcmp(pp, "1") == 0;
    const char *st = getenv("RNNCC_PERSIST_STAGGER");
    m->persist_stagger = st && strcmp(st, "1") == 0;
    const char *xs = getenv("RNNCC_X3_SCRATCH"); /* a test tool: split operands in chunks of at most this many floats */
    m->x3_cap = xs && atoll(xs) > 0 ? atoll(xs) : 0;
    const char *wt = getenv("RNNCC_WT"); /* a test tool: fp32 step GEMMs on their transposed weights always (1), never (0) */
    m->wt_force = wt && (strcmp(wt, "0") == 0 || strcmp(wt, "1") == 0) ? wt[0] - '0' : -1;
    /* Layers overlap by chunks of time; the second direction would need all of the previous
     * layer first, so bidirectional stacks run layer after layer. The backward runs the mirror
     * wavefront (rt_backward.c). RNNCC_WAVEFRONT=0: both off. */
    m->wavefront = m->dirs == 1 && m->layers > 1 && !(w && strcmp(w, "0") == 0);
    if (m->wavefront) {
        m->wave_events = arena_array(&m->arena, (size_t)m->layers * RT_WAVE_CHUNKS, sizeof *m->wave_events);
        if (!m->wave_events) return rt_fail(m, RNNCC_ERR_NOMEM, "out of host memory");
        for (int i = 0; i < m->layers * RT_WAVE_CHUNKS; i++)
            RT_CUDA(m, cudaEventCreateWithFlags(&m->wave_events[i], cudaEventDisableTiming));
    }
    return RNNCC_OK;
}

/* RNNCC_BACKEND=auto|cublas|persistent (unset or empty: auto) forces a model created with AUTO. */
static rnncc_status backend_from_env(rnncc_model *m) {
    const char *b = getenv("RNNCC_BACKEND");
    if (!b || !*b || strcmp(b, "auto") == 0) return RNNCC_OK;
    if (strcmp(b, "cublas") != 0 && strcmp(b, "persistent") != 0)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_BACKEND is '%.64s'; it must be auto, cublas or persistent", b);
    if (m->backend == RNNCC_BACKEND_AUTO)
        m->backend = strcmp(b, "cublas") == 0 ? RNNCC_BACKEND_CUBLAS : RNNCC_BACKEND_PERSISTENT;
    return RNNCC_OK;
}

/* The persistent kernels' tile from the environment (unset or empty: the search decides):
 * RNNCC_PERSIST_CLUSTER=1|2|4 forces the blocks per cluster, RNNCC_PERSIST_WARPS=4|8|16 the warps a
 * block, RNNCC_PERSIST_CHUNK=K (256 to 65536) staging chunks of at most K columns,
 * RNNCC_PERSIST_SEQS=4|8|16|32 at most so many sequences a pass, RNNCC_PERSIST_HANDOFF=flags|barrier|direct
 * how a forward's steps meet (flags, or operands loaded straight, where the plan allows) and whether a
 * backward loads its operand straight, RNNCC_PERSIST_SPLIT=1|0 a backward's
 * clusters to split K instead of sharing copies (where the plan allows) or not, RNNCC_PERSIST_BLOCKS=G
 * (1 to 1024) at most G blocks (the fewer-blocks tile; a multiple of the cluster), RNNCC_PERSIST_WREGS=R (0 to
 * 255) at most R registers a thread of step weights held in registers, RNNCC_PERSIST_WAVES=0|2|4 at most so
 * many staging waves (0: none); RNNCC_PERSIST_SEARCH=0 turns the
 * measured search off (the rule's tile, cg_persist_cluster and cg_persist_split, with what is forced). */
static rnncc_status tile_from_env(rnncc_model *m) {
    const char *c = getenv("RNNCC_PERSIST_CLUSTER"), *w = getenv("RNNCC_PERSIST_WARPS"), *s = getenv("RNNCC_PERSIST_SEARCH");
    const char *k = getenv("RNNCC_PERSIST_CHUNK"), *q = getenv("RNNCC_PERSIST_SEQS");
    if (k && *k && !(m->persist_chunk = cg_persist_chunk_parse(k)))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_CHUNK is '%.64s'; it must be " CG_PERSIST_CHUNK_VALUES, k);
    int seqs = q && *q ? cg_persist_seqs_parse(q) : 0;
    if (q && *q && !seqs)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_SEQS is '%.64s'; it must be " CG_PERSIST_SEQS_VALUES, q);
    m->persist_nw = seqs / 4;
    const char *h = getenv("RNNCC_PERSIST_HANDOFF");
    m->persist_handoff = -1;
    if (h && *h && (m->persist_handoff = cg_persist_handoff_parse(h)) < 0)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_HANDOFF is '%.64s'; it must be " CG_PERSIST_HANDOFF_VALUES, h);
    if (c && *c && !(m->persist_cluster = cg_persist_cluster_parse(c)))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_CLUSTER is '%.64s'; it must be " CG_PERSIST_CLUSTER_VALUES, c);
    if (w && *w && !(m->persist_warps = cg_persist_warps_parse(w)))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_WARPS is '%.64s'; it must be " CG_PERSIST_WARPS_VALUES, w);
    const char *g = getenv("RNNCC_PERSIST_BLOCKS");
    if (g && *g && !(m->persist_blocks = cg_persist_blocks_parse(g)))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_BLOCKS is '%.64s'; it must be " CG_PERSIST_BLOCKS_VALUES, g);
    const char *r = getenv("RNNCC_PERSIST_WREGS");
    if (r && *r && !(m->persist_wregs = cg_persist_wregs_parse(r)))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_WREGS is '%.64s'; it must be " CG_PERSIST_WREGS_VALUES, r);
    const char *wv = getenv("RNNCC_PERSIST_WAVES");
    if (wv && *wv && !(m->persist_waves = cg_persist_waves_parse(wv)))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_WAVES is '%.64s'; it must be " CG_PERSIST_WAVES_VALUES, wv);
    const char *sk = getenv("RNNCC_PERSIST_SPLIT");
    if (sk && *sk && strcmp(sk, "0") != 0 && strcmp(sk, "1") != 0)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "the environment variable RNNCC_PERSIST_SPLIT is '%.64s'; it must be 0 or 1", sk);
    m->persist_split = sk && *sk ? strcmp(sk, "1") == 0 : -1;
    m->persist_search = 1;
    if (s && *s && strcmp(s, "1") != 0) {
        if (strcmp(s, "0") != 0)
            return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                           "the environment variable RNNCC_PERSIST_SEARCH is '%.64s'; it must be 0 or 1", s);
        m->persist_search = 0;
    }
    return RNNCC_OK;
}

rnncc_status rnncc_model_create(const rnncc_program *p, const rnncc_model_desc *desc, rnncc_model **out) {
    if (!out) return RNNCC_ERR_INVALID_ARGUMENT;
    rnncc_model *m = calloc(1, sizeof *m);
    *out = m;
    if (!m) return RNNCC_ERR_NOMEM;
    arena_init(&m->arena);
    int prev_device = -1;
    cudaGetDevice(&prev_device);
    cudaGetLastError();
    rnncc_status s = validate_desc(m, p, desc);
    if (s == RNNCC_OK) {
        m->layers = desc->layers;
        m->dirs = desc->bidirectional ? 2 : 1;
        m->precision = desc->precision;
        m->device = desc->device;
        m->backend = desc->backend;
        m->fold_asked = desc->fold;
        m->keep_asked = desc->keep_derived_weights;
        s = backend_from_env(m);
        if (s == RNNCC_OK) s = tile_from_env(m);
        if (s == RNNCC_OK) s = own_cell(m, p, desc->cell);
    }
    if (s == RNNCC_OK) s = bind_layers(m, desc);
    if (s == RNNCC_OK) s = fold_and_check(m);
    if (s == RNNCC_OK) s = layout_units(m);
    if (s == RNNCC_OK) s = setup_device(m);
    if (s == RNNCC_OK && m->keep_asked) s = rnncc_model_keep_derived_weights(m, 1);
    if (prev_device >= 0) cudaSetDevice(prev_device);
    if (s != RNNCC_OK) {
        char msg[sizeof m->error];
        memcpy(msg, m->error, sizeof msg);
        rnncc_model_destroy(m);
        m = calloc(1, sizeof *m);
        *out = m;
        if (!m) return s;
        m->failed = 1;
        memcpy(m->error, msg, sizeof msg);
    }
    return s;
}

void rnncc_model_destroy(rnncc_model *m) {
    if (!m) return;
    if (!m->failed && m->cell) {
        int prev = -1;
        cudaGetDevice(&prev);
        if (m->device >= 0) cudaSetDevice(m->device);
        for (int i = 0; i < 3; i++) if (m->graph[i].exec) cudaGraphExecDestroy(m->graph[i].exec);
        rt_exclusive_begin(); /* handles: rt_lock.c */
        rt_gemm_cache_free(&m->gemm);
        rt_calls_free(&m->calls);
        for (int i = 0; i < 2; i++) if (m->cublas[i]) cublasDestroy(m->cublas[i]);
        rt_exclusive_end();
        if (m->ones) cudaFree(m->ones);
        if (m->ones16) cudaFree(m->ones16);
        if (m->half_kept) cudaFree(m->half_kept);
        for (int i = 0; i < m->nmodules; i++) rt_module_unload(&m->module[i]);
        if (m->convert_lib) cudaLibraryUnload(m->convert_lib);
        rt_persist_unload(m);
        if (m->sync) cudaFree(m->sync);
        for (int i = 0; i < 2; i++) {
            if (m->cublas_ws[i]) cudaFree(m->cublas_ws[i]);
            if (m->streams[i]) cudaStreamDestroy(m->streams[i]);
        }
        for (size_t i = 0; i < sizeof m->events / sizeof m->events[0]; i++) if (m->events[i]) cudaEventDestroy(m->events[i]);
        for (int i = 0; i < 2; i++) if (m->tevents[i]) cudaEventDestroy(m->tevents[i]);
        for (int i = 0; m->wave_events && i < m->layers * RT_WAVE_CHUNKS; i++)
            if (m->wave_events[i]) cudaEventDestroy(m->wave_events[i]);
        if (m->weights) cudaFree(m->weights);
        cudaGetLastError();
        if (prev >= 0) cudaSetDevice(prev);
    }
    arena_free(&m->arena);
    free(m->x3_split.block);
    free(m->wt_blocks.block);
    free(m->source);
    free(m);
}

/* ---- parameters -------------------------------------------------------------------------- */

#define CHECK_MODEL(m)                                                                        \
    do {                                                                                      \
        if (!(m)) return RNNCC_ERR_INVALID_ARGUMENT;                                          \
        if ((m)->failed) return RNNCC_ERR_INVALID_ARGUMENT;                                   \
    } while (0)

int rnncc_model_param_count(const rnncc_model *m) {
    return m && !m->failed ? m->nunits * m->api->nparams : 0; /* the user's: a fold's derived weights are its own */
}

rnncc_status rnncc_model_param_info(const rnncc_model *m, int index, rnncc_param_info *info) {
    CHECK_MODEL(m);
    if (!info) return rt_fail((rnncc_model *)m, RNNCC_ERR_INVALID_ARGUMENT, "info is NULL");
    int np = m->api->nparams;
    if (index < 0 || index >= m->nunits * np)
        return rt_fail((rnncc_model *)m, RNNCC_ERR_INVALID_ARGUMENT, "index %d is outside 0..%d", index, m->nunits * np - 1);
    const RtUnit *u = &m->units[index / np];
    int k = index % np;
    *info = (rnncc_param_info){m->api->params[k].name, u->layer, u->dir, u->layout->param_rows[k],
                               u->layout->param_cols[k], u->weight_offset + u->layout->param_offset[k]};
    return RNNCC_OK;
}

/* Finds the tensor (name, layer, direction) and checks count against its size. */
static rnncc_status find_param(rnncc_model *m, const char *name, int layer, int dir, int64_t count, const void *values,
                               int64_t *offset) {
    if (!name) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "name is NULL");
    if (!values) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "values is NULL");
    if (layer < 0 || layer >= m->layers)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "layer is %d; the model has layers 0..%d", layer, m->layers - 1);
    if (dir < 0 || dir >= m->dirs)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "direction is %d; the model has directions 0..%d", dir, m->dirs - 1);
    for (int k = 0; k < m->api->nparams; k++) {
        if (strcmp(m->api->params[k].name, name) != 0) continue;
        const RtUnit *u = &m->units[layer * m->dirs + dir];
        int64_t n = u->layout->param_rows[k] * u->layout->param_cols[k];
        if (count != n)
            return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "count is %lld but parameter '%s' of layer %d has %lld elements",
                           (long long)count, name, layer, (long long)n);
        *offset = u->weight_offset + u->layout->param_offset[k];
        return RNNCC_OK;
    }
    return rt_fail(m, RNNCC_ERR_NOT_FOUND, "name: cell '%s' has no parameter '%s'", m->api->name, name);
}

rnncc_status rnncc_model_set_param(rnncc_model *m, const char *name, int layer, int dir, const float *values, int64_t count) {
    CHECK_MODEL(m);
    int64_t off;
    RT_TRY(find_param(m, name, layer, dir, count, values, &off));
    RT_TRY(rt_upload(m, "rnncc_model_set_param", m->weights + off, values, (size_t)count * sizeof(float)));
    m->derived_fresh = 0;
    rt_calls_weights_changed(&m->calls, "rnncc_model_set_param");
    return RNNCC_OK;
}

rnncc_status rnncc_model_get_param(rnncc_model *m, const char *name, int layer, int dir, float *values, int64_t count) {
    CHECK_MODEL(m);
    int64_t off;
    RT_TRY(find_param(m, name, layer, dir, count, values, &off));
    RT_CUDA(m, cudaMemcpy(values, m->weights + off, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost));
    return RNNCC_OK;
}

rnncc_status rnncc_model_keep_derived_weights(rnncc_model *m, int keep) {
    CHECK_MODEL(m);
    if (keep != 0 && keep != 1)
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "keep must be 0 or 1, not %d", keep);
    if (keep == m->keep_derived) return RNNCC_OK;
    /* the captured passes derive every replay, or read the other copy: dropped, to be captured again */
    for (int i = 0; i < 3; i++) {
        if (m->graph[i].exec) cudaGraphExecDestroy(m->graph[i].exec);
        memset(&m->graph[i], 0, sizeof m->graph[i]);
    }
    m->keep_derived = keep;
    m->derived_fresh = 0;
    if (!rt_half(m)) return RNNCC_OK;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaError_t e = cudaSetDevice(m->device);
    if (m->half_train_copy) m->half_train_copy = -1; /* a training forward's backward would read the other copy */
    if (e == cudaSuccess && !keep) { /* passes issued may still read it: on the model's streams, or replayed on
                                      * the caller's, whose last is recorded (rt_run) */
        e = cudaStreamSynchronize(m->streams[0]);
        if (e == cudaSuccess) e = cudaStreamSynchronize(m->streams[1]);
        if (e == cudaSuccess) e = cudaEventSynchronize(m->events[4]);
        if (e == cudaSuccess) e = cudaFree(m->half_kept);
        if (e == cudaSuccess) m->half_kept = NULL;
    } else if (e == cudaSuccess) {
        e = cudaMalloc(&m->half_kept, (size_t)m->weight_count * sizeof(unsigned short));
        if (e != cudaSuccess) m->half_kept = NULL;
    }
    if (prev >= 0 && prev != m->device) cudaSetDevice(prev);
    if (e != cudaSuccess) {
        m->keep_derived = m->half_kept != NULL; /* as the copy is */
        return rt_cuda_fail(m, e, keep ? "allocating the weights' 16-bit copy" : "freeing it", __FILE__, __LINE__);
    }
    return RNNCC_OK;
}

rnncc_status rnncc_model_keep_half_weights(rnncc_model *m, int keep) { return rnncc_model_keep_derived_weights(m, keep); }

rnncc_status rnncc_model_weights_changed(rnncc_model *m) {
    CHECK_MODEL(m);
    m->derived_fresh = 0;
    rt_calls_weights_changed(&m->calls, "rnncc_model_weights_changed");
    return RNNCC_OK;
}

rnncc_status rnncc_model_weights16(rnncc_model *m, uint16_t **weights16, int64_t *count) {
    if (weights16) *weights16 = NULL;
    if (count) *count = 0;
    CHECK_MODEL(m);
    if (!weights16) return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT, "rnncc_model_weights16: weights16 is NULL");
    if (!rt_half(m))
        return rt_fail(m, RNNCC_ERR_INVALID_ARGUMENT,
                       "rnncc_model_weights16: the model's precision is %s: it has no 16-bit weights (fp16 and bf16 have)",
                       rnncc_precision_name(m->precision));
    if (m->fold)
        return rt_fail(m, RNNCC_ERR_UNSUPPORTED,
                       "rnncc_model_weights16: the model runs its cell folded, deriving V = U P from its weights: "
                       "16-bit weights of the caller's need it to run as written (rnncc_model_desc.fold = RNNCC_FOLD_OFF)");
    RT_TRY(refuse_in_capture(m, "rnncc_model_weights16")); /* before keep's allocation and its graphs dropped */
    RT_TRY(rnncc_model_keep_derived_weights(m, 1));
    if (!m->derived_fresh) {
        RT_TRY(on_device(m, "rnncc_model_weights16", WRITE_ROUNDED, m->half_kept, NULL, 0));
        m->derived_fresh = 1; /* the forwards read the copy as it is */
    }
    *weights16 = m->half_kept;
    if (count) *count = m->weight_count;
    return RNNCC_OK;
}

float *rnncc_model_weights(rnncc_model *m, int64_t *count) {
    if (!m || m->failed) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = m->weight_count;
    return m->weights;
}

rnncc_status rnncc_model_get_sizes(const rnncc_model *m, rnncc_model_sizes *s) {
    CHECK_MODEL(m);
    if (!s) return rt_fail((rnncc_model *)m, RNNCC_ERR_INVALID_ARGUMENT, "sizes is NULL");
    const IrCell *c = m->api;
    memset(s, 0, sizeof *s);
    s->input = ir_shape_numel(&c->inputs[0].shape, m->dimval[0]);
    const int64_t *last = m->dimval[m->layers > 1]; /* the last layer's binding */
    s->output = ir_node_len(c, c->outputs[0].node, last) * m->dirs;
    s->nstates = c->nstates;
    s->noutputs = c->noutputs;
    for (int k = 0; k < c->nstates; k++) s->state_size[k] = ir_shape_numel(&c->states[k].shape, m->dimval[0]);
    for (int o = 0; o < c->noutputs; o++) s->output_size[o] = ir_node_len(c, c->outputs[o].node, last);
    return RNNCC_OK;
}
