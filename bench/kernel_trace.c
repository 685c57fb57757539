/* A CUPTI injection library: loaded into any CUDA program by CUDA_INJECTION64_PATH, it records every
 * kernel, memory copy and memset the program runs (graph replays included) with the GPU's start and
 * end times, and writes one line each to the file RNNCC_TRACE_FILE names (else stderr):
 *   KIND START_NS END_NS STREAM GRAPH_ID NAME
 * KIND is K (kernel), C (copy) or S (memset); GRAPH_ID is 0 outside graphs. With RNNCC_TRACE_HOST=1, every
 * CUDA runtime (KIND A) and driver (KIND D) API call too, with the host's start and end times on the same clock,
 * its thread in place of STREAM and its correlation id in place of GRAPH_ID. Each process that loads it
 * truncates the file: trace one CUDA process at a time. Lines come in the order CUPTI hands its buffers
 * over, not sorted: bench/tools/trace_gaps.py sorts and summarises them
 * (bench/README.md). Concurrent kernels keep running concurrently (CONCURRENT_KERNEL activity). */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TRACE_BUFFER_BYTES = 8 << 20, TRACE_ALIGN = 8 };

/* The output file, opened when the library is loaded; CUPTI may hand buffers over from its own thread, and
 * after the exit handler (a context torn down later), so every write holds the lock. */
static FILE *trace_out;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(TRACE_ALIGN, TRACE_BUFFER_BYTES);
    *size = *buffer ? TRACE_BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

/* One activity record as a line, or nothing for kinds not asked for. */
static void write_record(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
        fprintf(trace_out, "K %llu %llu %u %u %s\n", (unsigned long long)k->start, (unsigned long long)k->end,
                k->streamId, k->graphId, k->name ? k->name : "?");
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
        fprintf(trace_out, "C %llu %llu %u %u memcpy:%llu\n", (unsigned long long)m->start,
                (unsigned long long)m->end, m->streamId, m->graphId, (unsigned long long)m->bytes);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
        fprintf(trace_out, "S %llu %llu %u %u memset:%llu\n", (unsigned long long)m->start,
                (unsigned long long)m->end, m->streamId, m->graphId, (unsigned long long)m->bytes);
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
        const int runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        const char *name = NULL;
        if (cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &name) !=
            CUPTI_SUCCESS)
            name = NULL;
        fprintf(trace_out, "%c %llu %llu %u %u %s\n", runtime ? 'A' : 'D', (unsigned long long)a->start,
                (unsigned long long)a->end, a->threadId, a->correlationId, name ? name : "?");
        break;
    }
    default:
        break;
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *r = NULL;
    CUptiResult rc = CUPTI_SUCCESS;
    pthread_mutex_lock(&trace_lock);
    while ((rc = cuptiActivityGetNextRecord(buffer, valid, &r)) == CUPTI_SUCCESS) write_record(r);
    fflush(trace_out); /* the file stays open: buffers may still come after the exit handler */
    pthread_mutex_unlock(&trace_lock);
    if (rc != CUPTI_ERROR_MAX_LIMIT_REACHED) { /* the buffer's end; anything else cut it short */
        const char *msg = NULL;
        cuptiGetResultString(rc, &msg);
        fprintf(stderr, "kernel_trace: a buffer's records cut short: %s\n", msg ? msg : "unknown error");
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        fprintf(stderr, "kernel_trace: %zu records dropped\n", dropped);
    free(buffer);
}

static void flush_at_exit(void) { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

/* Tells why a CUPTI call failed, on stderr; returns whether it succeeded. */
static int cupti_ok(CUptiResult rc, const char *what) {
    if (rc == CUPTI_SUCCESS) return 1;
    const char *msg = NULL;
    cuptiGetResultString(rc, &msg);
    fprintf(stderr, "kernel_trace: %s: %s\n", what, msg ? msg : "unknown error");
    return 0;
}

/* Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH); returns 1 on success. */
int InitializeInjection(void) {
    const char *path = getenv("RNNCC_TRACE_FILE");
    trace_out = path && *path ? fopen(path, "w") : stderr;
    if (!trace_out) {
        fprintf(stderr, "kernel_trace: RNNCC_TRACE_FILE: cannot open %s\n", path);
        return 0;
    }
    if (!cupti_ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register callbacks") ||
        !cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernels") ||
        !cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable copies") ||
        !cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enable memsets"))
        return 0;
    const char *host = getenv("RNNCC_TRACE_HOST");
    if (host && strcmp(host, "1") == 0 &&
        (!cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enable runtime calls") ||
         !cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "enable driver calls")))
        return 0;
    atexit(flush_at_exit);
    return 1;
}
