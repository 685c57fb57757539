/* The record of a model's training calls on its last training forward's reserve (rt_calls.h).
 * Key idea: the three calls of a training step must agree (T, N and lengths as the forward's; the
 * weights call's dy and dhT as the data call's, docs/training.md), and calls that do not read a
 * reserve written for other work without any error of CUDA's; nor may the weights change between
 * the forward and the data call, which recomputes from them (changes the model is told of: through
 * rnncc_model_set_param and rnncc_model_weights_changed). Host memory only; one record a
 * model (a model is used from one thread at a time); a reserve other than the last forward's is
 * not judged, so interleaving two reserves is never refused; but a backward call before any
 * training forward of the model, or on a reserve whose last forward failed, is. Only NULL-ness of the adjoints is
 * compared: a copy of dy at another address is the same gradient. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_calls.h"

void rt_calls_forward(RtCalls *c, const rnncc_io *io, const void *reserve, int ok) {
    if (!reserve) return;
    c->reserve = reserve;
    c->changed = NULL;
    c->state = ok ? RT_CALLS_OK : RT_CALLS_FAILED;
    if (!ok) return;
    if (io->lengths && io->N > c->lengths_cap) {
        int *l = realloc(c->lengths, (size_t)io->N * sizeof(int));
        if (!l) {
            c->state = RT_CALLS_UNKNOWN; /* out of host memory: nothing noted, nothing judged */
            return;
        }
        c->lengths = l;
        c->lengths_cap = io->N;
    }
    if (io->lengths) memcpy(c->lengths, io->lengths, (size_t)io->N * sizeof(int));
    c->T = io->T;
    c->N = io->N;
    c->has_lengths = io->lengths != NULL;
    c->data = 0;
    c->dy = c->dhT = 0;
}

static uint32_t given(const float *const *v, int n) {
    uint32_t bits = 0;
    for (int i = 0; v && i < n && i < 32; i++) bits |= (uint32_t)(v[i] != NULL) << i;
    return bits;
}

/* The first entry where had and has differ, named (name "dy": "io->dy[1] is NULL ..."), or 0. */
static int adjoints_agree(uint32_t had, uint32_t has, const char *name, char *why, size_t why_size) {
    if (had == has) return 1;
    int i = 0;
    while (((had ^ has) >> i & 1) == 0) i++;
    snprintf(why, why_size,
             "io->%s[%d] is %s, but the rnncc_backward_data call on this reserve %s: give rnncc_backward_weights "
             "the data call's rnncc_grad_io (docs/training.md)",
             name, i, has >> i & 1 ? "given" : "NULL", had >> i & 1 ? "was given it" : "had it NULL");
    return 0;
}

int rt_calls_agree(const RtCalls *c, const rnncc_grad_io *io, const void *reserve, int noutputs, int nstates,
                   int weights, char *why, size_t why_size) {
    if (c->state == RT_CALLS_NONE) {
        snprintf(why, why_size, "reserve: no training forward has run on this model (rnncc_forward with a reserve "
                                "comes before the backward calls)");
        return 0;
    }
    if (c->state == RT_CALLS_UNKNOWN || c->reserve != reserve) return 1;
    if (c->state == RT_CALLS_FAILED) {
        snprintf(why, why_size, "reserve: the last training forward on it failed, so it holds no forward pass (run "
                                "the forward again)");
        return 0;
    }
    const char *tail = "backward calls must have the training forward's T, N and lengths (docs/training.md)";
    if (io->T != c->T || io->N != c->N) {
        snprintf(why, why_size, "io->%s is %lld, but the training forward on this reserve had %lld: %s",
                 io->T != c->T ? "T" : "N", (long long)(io->T != c->T ? io->T : io->N),
                 (long long)(io->T != c->T ? c->T : c->N), tail);
        return 0;
    }
    if ((io->lengths != NULL) != c->has_lengths) {
        snprintf(why, why_size, "io->lengths is %s, but the training forward on this reserve had %s: %s",
                 io->lengths ? "given" : "NULL", c->has_lengths ? "lengths" : "none", tail);
        return 0;
    }
    for (int64_t n = 0; io->lengths && n < io->N; n++)
        if (io->lengths[n] != c->lengths[n]) {
            snprintf(why, why_size, "io->lengths[%lld] is %d, but the training forward on this reserve had %d: %s",
                     (long long)n, io->lengths[n], c->lengths[n], tail);
            return 0;
        }
    if (!weights && c->changed) {
        snprintf(why, why_size,
                 "reserve: the weights changed (%s) since the training forward on it, and rnncc_backward_data "
                 "recomputes from them: change them after rnncc_backward_data, or run the forward again",
                 c->changed);
        return 0;
    }
    if (!weights) return 1;
    if (!c->data) {
        snprintf(why, why_size, "reserve: rnncc_backward_data has not run on it since its training forward "
                                "(rnncc_backward_weights reads what that call leaves there)");
        return 0;
    }
    return adjoints_agree(c->dy, given(io->dy, noutputs), "dy", why, why_size) &&
           adjoints_agree(c->dhT, given(io->dhT, nstates), "dhT", why, why_size);
}

void rt_calls_weights_changed(RtCalls *c, const char *by) {
    if (c->state == RT_CALLS_OK) c->changed = by;
}

void rt_calls_data(RtCalls *c, const rnncc_grad_io *io, const void *reserve, int noutputs, int nstates, int ok) {
    if (c->state != RT_CALLS_OK || c->reserve != reserve) return;
    c->data = ok;
    c->dy = given(io->dy, noutputs);
    c->dhT = given(io->dhT, nstates);
}

void rt_calls_free(RtCalls *c) {
    free(c->lengths);
    memset(c, 0, sizeof *c);
}
