/* The device buffers a call is given, as byte ranges (rt_spans.c), so that one the call writes
 * and another it reads or writes overlapping it is refused by both arguments' names. */
#ifndef RNNCC_RT_SPANS_H
#define RNNCC_RT_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "rnncc.h"

#define RT_MAX_SPANS 48

typedef struct RtSpan {
    const char *name;           /* the argument, e.g. "io->y" or "workspace" (static text) */
    int index;                  /* its entry (io->y[index]), or -1 */
    const char *p;
    size_t bytes;
    int written;                /* the call writes it */
    int twin;                   /* > 0: a span of the same twin, range and all, may lie exactly on it (h0 and hT) */
} RtSpan;

typedef struct RtSpans {
    RtSpan s[RT_MAX_SPANS];
    int n;
} RtSpans;

/* Adds a buffer (p NULL or bytes 0: nothing; past RT_MAX_SPANS: not judged). */
void rt_span(RtSpans *s, const char *name, int index, const void *p, size_t bytes, int written, int twin);
/* Whether no written span overlaps another span, twins lying exactly on each other apart; else the
 * first such pair in why ("io->y[0] overlaps io->x: ..."). */
int rt_spans_disjoint(const RtSpans *s, char *why, size_t why_size);
/* Starts s with what every call of m over T steps and N sequences is given: the workspace and the reserve (written;
 * the bytes the call takes of them), the model's weights (written where weights_written) and the input x [T][N][I]
 * (read); z is m's sizes (rnncc_model_get_sizes). */
void rt_spans_begin(RtSpans *s, const rnncc_model *m, const rnncc_model_sizes *z, const void *ws, size_t ws_bytes,
                    const void *reserve, size_t reserve_bytes, const float *x, int64_t T, int64_t N, int weights_written);
/* Adds m's per-output buffers v[o] of T steps and N sequences ([T][N][D*dirs]; v or entries may be NULL). */
void rt_span_outputs(RtSpans *s, const rnncc_model *m, const rnncc_model_sizes *z, const char *name,
                     const float *const *v, int64_t T, int64_t N, int written);
/* Adds m's per-state buffers v[k] of N sequences ([layers*dirs][N][S]), each state k a twin of its own
 * where twins (twins = 0: none). */
void rt_span_states(RtSpans *s, const rnncc_model *m, const rnncc_model_sizes *z, const char *name,
                    const float *const *v, int64_t N, int written, int twins);
/* RNNCC_OK where rt_spans_disjoint, else RNNCC_ERR_INVALID_ARGUMENT with why as m's error. */
rnncc_status rt_spans_check(rnncc_model *m, const RtSpans *s);
/* Every span is memory m's GPU reaches (device, managed or page-locked host memory; other host memory where the
 * device reads pageable memory) at a 4-byte boundary, else RNNCC_ERR_INVALID_ARGUMENT naming it. A driver call
 * a span: the calls ask it for arguments they have not run with before (rt_graph_knows). */
rnncc_status rt_spans_reachable(rnncc_model *m, const RtSpans *s);
/* p (named name) is host memory the library may read on the host, not device memory; NULL passes. Plain host
 * memory is asked of the driver once (a question costs ~1.5 us in a call: bench/NOTES.md section 95), then known. */
rnncc_status rt_host_readable(rnncc_model *m, const char *name, const void *p);

#endif
