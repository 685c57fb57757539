/* NVRTC: generated CUDA source to PTX or CUBIN for one architecture. Needs no GPU.
 * Key idea: a fixed option list (no fast math), every NVRTC call checked by one macro that
 * records the call, its status and file:line and returns a status; a failed compile keeps
 * NVRTC's log and the numbered source for the user. Thread-safe: no global state. */
#ifndef RNNCC_RT_NVRTC_H
#define RNNCC_RT_NVRTC_H
#include <pthread.h>
#include <stddef.h>

#include "ir/strbuf.h"

typedef enum {
    RT_NVRTC_OK = 0,
    RT_NVRTC_ERR_NOMEM,   /* memory ran out (ours or NVRTC's) */
    RT_NVRTC_ERR_ARCH,    /* the architecture is not sm_XX[a-z] / compute_XX[a-z] (CUBIN: sm_ only) */
    RT_NVRTC_ERR_COMPILE, /* the source did not compile: see log and listing */
    RT_NVRTC_ERR_NVRTC,   /* another NVRTC call failed: see call and code */
} RtNvrtcStatus;

typedef enum { RT_NVRTC_PTX, RT_NVRTC_CUBIN } RtNvrtcTarget;

typedef struct RtNvrtcResult {
    RtNvrtcStatus status;
    char *image;          /* malloc'd: PTX text (NUL-terminated) or CUBIN bytes; NULL on failure */
    size_t size;          /* bytes of image (PTX: not counting its NUL) */
    char *log;            /* malloc'd: NVRTC's program log ("" when empty; warnings may appear
                             on success), or NULL when no program was made */
    char *listing;        /* malloc'd on RT_NVRTC_ERR_COMPILE: the source with line numbers */
    /* The first failing call, when status != RT_NVRTC_OK: */
    const char *call;     /* its text, e.g. "nvrtcCompileProgram(prog, nopts, opts)" */
    int code;             /* its nvrtcResult (0 when the failure was not NVRTC's) */
    const char *file;     /* where it was made */
    int line;
    char message[320];    /* one line: "file:line: call failed: NVRTC_ERROR_..." or the reason */
} RtNvrtcResult;

/* Most options rt_nvrtc_options writes. */
enum { RT_NVRTC_MAX_OPTIONS = 8 };

/* Compiles source (a whole translation unit, no #includes) for arch ("sm_90", "sm_80",
 * "sm_90a"; PTX also takes "compute_90"), naming it name in NVRTC's messages (NULL:
 * "rnncc.cu"). Fills res (free it with rt_nvrtc_result_free, whatever the status). */
RtNvrtcStatus rt_nvrtc_compile(const char *source, const char *name, RtNvrtcTarget target, const char *arch,
                               RtNvrtcResult *res);
/* Frees what a result holds and clears it. */
void rt_nvrtc_result_free(RtNvrtcResult *res);

/* One CUBIN compile on a thread of its own (16 MB of stack: NVRTC's optimizer recurses), as the runtime's
 * builds and the tests' side-by-side compiles run theirs; where no thread can be made it compiles at the join. */
typedef struct RtNvrtcJob {
    const char *source, *name, *arch; /* the caller's, alive until the job is joined or freed */
    int threaded;                     /* a worker compiles it */
    int done;                         /* compiled and joined: res holds the result */
    pthread_t thread;
    RtNvrtcResult res;
} RtNvrtcJob;
/* Clears job and starts compiling source to a CUBIN for arch, named name (as rt_nvrtc_compile). */
void rt_nvrtc_job_start(RtNvrtcJob *job, const char *source, const char *name, const char *arch);
/* Waits for job's compile (compiling it here where no worker was made); job->res then holds it. Once only. */
void rt_nvrtc_job_join(RtNvrtcJob *job);
/* Joins a worker still running, without compiling what none started, frees the result and clears job. */
void rt_nvrtc_job_free(RtNvrtcJob *job);

/* The exact options rt_nvrtc_compile passes for target and arch, space-separated, into buf
 * (for cache keys). Returns the length, or -1 when arch is invalid or buf too small. */
int rt_nvrtc_options_text(RtNvrtcTarget target, const char *arch, char *buf, size_t size);
/* NVRTC's version (part of every cache key). */
RtNvrtcStatus rt_nvrtc_version(int *major, int *minor);
/* Whether this NVRTC compiles for arch's number (the digits of sm_90, sm_90a, compute_90); the numbers it
 * compiles for, as "sm_75 sm_80 ...", into known (size bytes). */
int rt_nvrtc_arch_known(const char *arch, char *known, size_t size);
/* Writes source with each line prefixed by its number ("   12 | ..."), as NVRTC's log counts. */
void rt_nvrtc_listing(const char *source, StrBuf *out);
/* Writes a failed result for a person: the message, NVRTC's log, and the listing. */
void rt_nvrtc_report(const RtNvrtcResult *res, StrBuf *out);

#endif
