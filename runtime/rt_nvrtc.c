/* The NVRTC wrapper: create, compile with fixed options, fetch the log and the image,
 * destroy. Key idea: NVRTC_CHECK is the only way an NVRTC call is made; it records the
 * first failure (call text, status, file:line) in the result and returns a status. */
#include "rt_nvrtc.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records the first failure in res; later ones (cleanup after an error) keep it. */
static RtNvrtcStatus failed(RtNvrtcResult *res, RtNvrtcStatus st, const char *call, int code, const char *file,
                            int line, const char *why) {
    if (res->status != RT_NVRTC_OK) return st;
    res->status = st;
    res->call = call;
    res->code = code;
    res->file = file;
    res->line = line;
    snprintf(res->message, sizeof res->message, "%s:%d: %s failed: %s", file, line, call, why);
    return st;
}

static RtNvrtcStatus nvrtc_failed(RtNvrtcResult *res, nvrtcResult rc, const char *call, const char *file,
                                  int line) {
    RtNvrtcStatus st = rc == NVRTC_ERROR_COMPILATION     ? RT_NVRTC_ERR_COMPILE
                       : rc == NVRTC_ERROR_OUT_OF_MEMORY ? RT_NVRTC_ERR_NOMEM
                                                         : RT_NVRTC_ERR_NVRTC;
    return failed(res, st, call, (int)rc, file, line, nvrtcGetErrorString(rc));
}

/* Makes one NVRTC call; on failure records it and returns its status from the caller. */
#define NVRTC_CHECK(res, call)                                                         \
    do {                                                                               \
        nvrtcResult rc_ = (call);                                                      \
        if (rc_ != NVRTC_SUCCESS) return nvrtc_failed((res), rc_, #call, __FILE__, __LINE__); \
    } while (0)

#define NOMEM(res, what) failed((res), RT_NVRTC_ERR_NOMEM, (what), 0, __FILE__, __LINE__, "out of memory")

/* Checks arch and writes the --gpu-architecture value for target into buf. */
static int arch_option(RtNvrtcTarget target, const char *arch, char *buf, size_t size) {
    const char *digits;
    if (!arch) return 0;
    if (strncmp(arch, "sm_", 3) == 0) digits = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0 && target == RT_NVRTC_PTX) digits = arch + 8;
    else return 0;
    size_t n = 0;
    while (digits[n] >= '0' && digits[n] <= '9') n++;
    if (n < 2 || n > 3 || (digits[n] && (digits[n] < 'a' || digits[n] > 'z' || digits[n + 1]))) return 0;
    int len = snprintf(buf, size, "--gpu-architecture=%s_%s", target == RT_NVRTC_PTX ? "compute" : "sm", digits);
    return len > 0 && (size_t)len < size;
}

/* The fixed options: accurate math (no --use_fast_math; fused multiply-add allowed, as
 * nvcc's default), C++17, line info for compute-sanitizer and profilers, and for a CUBIN ptxas's
 * warning on spilled registers in the log (a successful compile's log is otherwise empty: the tests
 * hold every unit they compile to that, and rnncc emit --cubin prints it). */
static int options(RtNvrtcTarget target, const char *arch, char *archbuf, size_t size, const char **opts) {
    if (!arch_option(target, arch, archbuf, size)) return -1;
    int n = 0;
    opts[n++] = archbuf;
    opts[n++] = "--std=c++17";
    opts[n++] = "--fmad=true";
    opts[n++] = "--generate-line-info";
    if (target == RT_NVRTC_CUBIN) opts[n++] = "--ptxas-options=--warn-on-spills";
    return n;
}

int rt_nvrtc_options_text(RtNvrtcTarget target, const char *arch, char *buf, size_t size) {
    char archbuf[64];
    const char *opts[RT_NVRTC_MAX_OPTIONS];
    int n = options(target, arch, archbuf, sizeof archbuf, opts);
    if (n < 0 || !buf || size == 0) return -1;
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? " " : "", opts[i]);
        if (w < 0 || (size_t)w >= size - len) {
            buf[0] = 0;
            return -1;
        }
        len += (size_t)w;
    }
    return (int)len;
}

RtNvrtcStatus rt_nvrtc_version(int *major, int *minor) {
    RtNvrtcResult scratch = {0};
    NVRTC_CHECK(&scratch, nvrtcVersion(major, minor));
    return RT_NVRTC_OK;
}

/* Compiles and fetches the image. */
static RtNvrtcStatus compile_program(RtNvrtcResult *res, nvrtcProgram prog, int nopts, const char **opts,
                                     RtNvrtcTarget target) {
    NVRTC_CHECK(res, nvrtcCompileProgram(prog, nopts, opts));
    size_t n = 0;
    if (target == RT_NVRTC_PTX) NVRTC_CHECK(res, nvrtcGetPTXSize(prog, &n));
    else NVRTC_CHECK(res, nvrtcGetCUBINSize(prog, &n));
    char *image = malloc(n + 1);
    if (!image) return NOMEM(res, "malloc(image)");
    image[n] = 0;
    res->image = image;
    if (target == RT_NVRTC_PTX) {
        NVRTC_CHECK(res, nvrtcGetPTX(prog, image));
        res->size = strlen(image); /* the size NVRTC gives counts the NUL */
    } else {
        NVRTC_CHECK(res, nvrtcGetCUBIN(prog, image));
        res->size = n;
    }
    return RT_NVRTC_OK;
}

/* Fetches the program log (kept on success too: it holds the warnings). */
static RtNvrtcStatus fetch_log(RtNvrtcResult *res, nvrtcProgram prog) {
    size_t n = 0;
    NVRTC_CHECK(res, nvrtcGetProgramLogSize(prog, &n));
    res->log = calloc(n + 1, 1);
    if (!res->log) return NOMEM(res, "malloc(log)");
    NVRTC_CHECK(res, nvrtcGetProgramLog(prog, res->log));
    return RT_NVRTC_OK;
}

static RtNvrtcStatus create_program(RtNvrtcResult *res, nvrtcProgram *prog, const char *source, const char *name) {
    NVRTC_CHECK(res, nvrtcCreateProgram(prog, source, name, 0, NULL, NULL));
    return RT_NVRTC_OK;
}

static RtNvrtcStatus destroy_program(RtNvrtcResult *res, nvrtcProgram *prog) {
    NVRTC_CHECK(res, nvrtcDestroyProgram(prog));
    return RT_NVRTC_OK;
}

RtNvrtcStatus rt_nvrtc_compile(const char *source, const char *name, RtNvrtcTarget target, const char *arch,
                               RtNvrtcResult *res) {
    memset(res, 0, sizeof *res);
    char archbuf[64];
    const char *opts[RT_NVRTC_MAX_OPTIONS];
    int nopts = options(target, arch, archbuf, sizeof archbuf, opts);
    if (nopts < 0) {
        failed(res, RT_NVRTC_ERR_ARCH, "rt_nvrtc_compile", 0, __FILE__, __LINE__, "");
        snprintf(res->message, sizeof res->message, "invalid GPU architecture '%.40s' for %s (expected %s)",
                 arch ? arch : "(null)", target == RT_NVRTC_PTX ? "PTX" : "CUBIN",
                 target == RT_NVRTC_PTX ? "sm_XX or compute_XX, e.g. sm_90" : "sm_XX, e.g. sm_90");
        return res->status;
    }
    if (!source) return failed(res, RT_NVRTC_ERR_NVRTC, "rt_nvrtc_compile", 0, __FILE__, __LINE__, "no source");
    nvrtcProgram prog = NULL;
    if (create_program(res, &prog, source, name ? name : "rnncc.cu") != RT_NVRTC_OK) return res->status;
    RtNvrtcStatus st = compile_program(res, prog, nopts, opts, target);
    fetch_log(res, prog);
    destroy_program(res, &prog);
    if (res->status != RT_NVRTC_OK) {
        free(res->image);
        res->image = NULL;
        res->size = 0;
    }
    if (st == RT_NVRTC_ERR_COMPILE) {
        StrBuf sb = {0};
        rt_nvrtc_listing(source, &sb);
        res->listing = sb_take(&sb);
    }
    return res->status;
}

void rt_nvrtc_result_free(RtNvrtcResult *res) {
    free(res->image);
    free(res->log);
    free(res->listing);
    memset(res, 0, sizeof *res);
}

static void *job_thread(void *arg) {
    RtNvrtcJob *job = arg;
    rt_nvrtc_compile(job->source, job->name, RT_NVRTC_CUBIN, job->arch, &job->res);
    return NULL;
}

void rt_nvrtc_job_start(RtNvrtcJob *job, const char *source, const char *name, const char *arch) {
    memset(job, 0, sizeof *job);
    job->source = source;
    job->name = name;
    job->arch = arch;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return; /* no worker: rt_nvrtc_job_join compiles it */
    job->threaded = pthread_attr_setstacksize(&attr, (size_t)16 << 20) == 0 &&
                    pthread_create(&job->thread, &attr, job_thread, job) == 0;
    pthread_attr_destroy(&attr);
}

void rt_nvrtc_job_join(RtNvrtcJob *job) {
    if (job->done) return;
    if (job->threaded) pthread_join(job->thread, NULL);
    else job_thread(job); /* no worker could be made: compile here */
    job->threaded = 0;
    job->done = 1;
}

void rt_nvrtc_job_free(RtNvrtcJob *job) {
    if (job->threaded) pthread_join(job->thread, NULL); /* never leave a worker behind its job */
    rt_nvrtc_result_free(&job->res);
    memset(job, 0, sizeof *job);
}

void rt_nvrtc_listing(const char *source, StrBuf *out) {
    int line = 1;
    for (const char *p = source; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        sb_printf(out, "%5d | ", line++);
        sb_putn(out, p, n);
        sb_putc(out, '\n');
        p += n + (nl != NULL);
    }
}

void rt_nvrtc_report(const RtNvrtcResult *res, StrBuf *out) {
    sb_printf(out, "%s\n", res->message);
    if (res->log && res->log[0]) {
        sb_puts(out, "NVRTC log:\n");
        sb_puts(out, res->log);
        if (res->log[strlen(res->log) - 1] != '\n') sb_putc(out, '\n');
    }
    if (res->listing) {
        sb_puts(out, "source:\n");
        sb_puts(out, res->listing);
    }
}

int rt_nvrtc_arch_known(const char *arch, char *known, size_t size) {
    const char *digits = strncmp(arch, "sm_", 3) == 0 ? arch + 3 : strncmp(arch, "compute_", 8) == 0 ? arch + 8 : arch;
    int want = atoi(digits), n = 0, found = 0;
    if (size) known[0] = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return 1; /* cannot tell: let the compile say */
    int *archs = malloc((size_t)n * sizeof *archs);
    if (!archs || nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS) {
        free(archs);
        return 1;
    }
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        found |= archs[i] == want;
        int w = size > len ? snprintf(known + len, size - len, "%ssm_%d", i ? " " : "", archs[i]) : 0;
        if (w > 0) len += (size_t)w < size - len ? (size_t)w : size - len - 1;
    }
    free(archs);
    return found;
}
