/* What the training calls on a reserve were given (rt_calls.c), so that a backward call given
 * other sizes, lengths or adjoints than the calls before it on that reserve, or a backward data
 * call after the model was told its weights changed, is refused by name. */
#ifndef RNNCC_RT_CALLS_H
#define RNNCC_RT_CALLS_H

#include <stdint.h>

#include "rnncc.h"

typedef enum RtCallsState {
    RT_CALLS_NONE = 0,          /* no training forward has run on the model */
    RT_CALLS_OK,                /* the last one, on reserve, ran */
    RT_CALLS_FAILED,            /* the last one, on reserve, failed: the reserve holds no forward */
    RT_CALLS_UNKNOWN,           /* the record could not be kept (out of host memory): nothing is judged */
} RtCallsState;

typedef struct RtCalls {
    RtCallsState state;
    const void *reserve;        /* the last training forward's reserve */
    int64_t T, N;
    int has_lengths;
    int *lengths;               /* [N] the forward's, where it had them (host, owned) */
    int64_t lengths_cap;
    int data;                   /* rnncc_backward_data has run on the reserve since that forward */
    uint32_t dy, dhT;           /* that data call's non-NULL entries, one bit an output or state */
    const char *changed;        /* the call that told the model its weights changed since that forward, or NULL */
} RtCalls;

/* Notes a training forward's arguments on reserve (ok = 0: the forward failed). */
void rt_calls_forward(RtCalls *c, const rnncc_io *io, const void *reserve, int ok);
/* Whether a backward call (weights = 0: rnncc_backward_data, 1: rnncc_backward_weights) on reserve agrees
 * with the calls noted before it; the message names the first argument that does not. No training forward
 * yet, or a failed last one on reserve, is refused too. Where the last training forward ran on another
 * reserve it cannot tell, and answers yes. */
int rt_calls_agree(const RtCalls *c, const rnncc_grad_io *io, const void *reserve, int noutputs, int nstates,
                   int weights, char *why, size_t why_size);
/* Notes that the weights changed, told by the call named (static text). */
void rt_calls_weights_changed(RtCalls *c, const char *by);
/* Notes an rnncc_backward_data call's adjoints on reserve (ok = 0: it failed, and the reserve holds no
 * adjoints a weights call may read). */
void rt_calls_data(RtCalls *c, const rnncc_grad_io *io, const void *reserve, int noutputs, int nstates, int ok);
/* Frees what the record holds. */
void rt_calls_free(RtCalls *c);

#endif
