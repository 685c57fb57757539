/* rnncc: compile recurrent-network cells written as equations and run them on NVIDIA GPUs.
 *
 * The one public header. Opaque handles; every call that can fail returns an rnncc_status (the few that
 * answer a value say what they answer for a bad handle); a handle that
 * failed or whose last call failed says why through its *_error/_log function. No global
 * mutable state but one process-wide lock (a model's CUDA graph capture kept apart from other models'
 * cuBLAS handle creation and destruction: docs/runtime.md, Threads): distinct handles may be used from
 * distinct threads at once; one handle from one thread at a time. Device pointers are marked (device);
 * everything else is host memory.
 *
 *   rnncc_program *prog;   rnncc_compile_string(src, len, "lstm.cell", NULL, &prog);
 *   rnncc_model *model;    rnncc_model_create(prog, &desc, &model);
 *   rnncc_model_set_param(model, "W_i", 0, 0, host_weights, count);
 *   rnncc_forward(model, &io, workspace, ws_bytes, NULL, 0, stream);
 */
#ifndef RNNCC_H
#define RNNCC_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rnncc_status {
    RNNCC_OK = 0,
    RNNCC_ERR_INVALID_ARGUMENT, /* a NULL pointer, a bad value or size: the message names the argument */
    RNNCC_ERR_COMPILE,          /* the cell source has errors: see rnncc_program_log */
    RNNCC_ERR_NOMEM,            /* host memory ran out */
    RNNCC_ERR_OVERFLOW,         /* a size computed from the arguments overflows */
    RNNCC_ERR_NOT_FOUND,        /* no cell or parameter of that name; a file that cannot be opened or read
                                   (an unknown dimension is RNNCC_ERR_INVALID_ARGUMENT) */
    RNNCC_ERR_UNSUPPORTED,      /* a valid request this version cannot run: the message says what */
    RNNCC_ERR_NO_GPU,           /* no CUDA device, or the driver is missing */
    RNNCC_ERR_CUDA,             /* a CUDA runtime call failed (out of device memory among others) */
    RNNCC_ERR_CUBLAS,           /* a cuBLAS call failed */
    RNNCC_ERR_NVRTC,            /* run-time compilation of generated code failed: see the message */
    RNNCC_ERR_WORKSPACE,        /* workspace or reserve smaller than the size query asked for */
} rnncc_status;

/* A short constant description of a status. */
const char *rnncc_status_string(rnncc_status status);
/* The library's version, "MAJOR.MINOR.PATCH". */
const char *rnncc_version(void);

/* ---- programs: cell source, checked and scheduled (no GPU involved) ------------------- */

typedef struct rnncc_program rnncc_program;

/* Called once per diagnostic with its rendered text (file:line:col: level: message, the
 * source line and a caret); level is "error", "warning" or "note". */
typedef void (*rnncc_diag_fn)(void *user, const char *level, const char *text);

typedef struct rnncc_compile_options {
    rnncc_diag_fn on_diagnostic; /* optional */
    void *user;                  /* passed to on_diagnostic */
} rnncc_compile_options;

/* The most bytes a cell source may have (64 MiB): rnncc_compile_string refuses a longer one. */
#define RNNCC_MAX_SOURCE_BYTES ((size_t)64 << 20)

/* Compiles cell source text (len bytes, at most RNNCC_MAX_SOURCE_BYTES; name is used in diagnostics). On a compile error
 * (a longer source too) returns RNNCC_ERR_COMPILE and still sets *out, whose log holds the diagnostics;
 * destroy it. */
rnncc_status rnncc_compile_string(const char *source, size_t len, const char *name,
                                  const rnncc_compile_options *options, rnncc_program **out);
/* Reads and compiles a .cell file, as rnncc_compile_string; a file that cannot be opened or read gives
 * RNNCC_ERR_NOT_FOUND and *out NULL. A call refused before there is a program (that, a NULL argument) tells
 * on_diagnostic why: "path: error: cannot open: No such file or directory". */
rnncc_status rnncc_compile_file(const char *path, const rnncc_compile_options *options, rnncc_program **out);
/* The program's diagnostics as text (empty when there were none); valid until destroyed. */
const char *rnncc_program_log(const rnncc_program *program);
/* Frees a program. Models made from it stay valid (they keep what they need). NULL is ignored. */
void rnncc_program_destroy(rnncc_program *program);

/* ---- models: a cell instantiated on a GPU ------------------------------------------------ */

typedef struct rnncc_model rnncc_model;

typedef enum rnncc_precision {
    RNNCC_FP32 = 0,  /* strict fp32 everywhere */
    RNNCC_TF32 = 1,  /* GEMMs on tensor cores with TF32 inputs and fp32 accumulation */
    RNNCC_FP16 = 2,  /* every GEMM's inputs rounded to fp16 (fp32 accumulation; data, states and
                        element-wise math stay fp32), as cuDNN's TENSOR_OP_MATH_ALLOW_CONVERSION; the
                        persistent kernels hold their weights in fp16; a few small products (the projection
                        fold's, a post GEMM on a value a persistent forward stores without a 16-bit twin)
                        take TF32 inputs instead (docs/runtime.md, Precision) */
    RNNCC_BF16 = 3,  /* the same with bf16 GEMM inputs (fp32's range, 8 bits of mantissa) */
    RNNCC_TF32X3 = 4, /* fp32 data and errors near fp32's, the cuBLAS GEMMs on tensor cores: each input split
                         into two TF32 parts, three products of them summed (hi*hi + hi*lo + lo*hi) with fp32
                         accumulation; the persistent kernels as RNNCC_FP32 (docs/runtime.md, Precision) */
} rnncc_precision;
/* A precision's name: "fp32", "tf32", "fp16", "bf16" or "tf32x3"; "?" for any other value. */
const char *rnncc_precision_name(rnncc_precision precision);

/* How a layer's step loop runs (docs/backends.md). */
typedef enum rnncc_backend {
    RNNCC_BACKEND_AUTO = 0,       /* per pass, by a stated rule: see rnncc_model_backend */
    RNNCC_BACKEND_CUBLAS = 1,     /* per step: a cuBLAS GEMM and generated element-wise kernels */
    RNNCC_BACKEND_PERSISTENT = 2, /* one generated kernel per layer keeps the recurrent weights on chip */
} rnncc_backend;
/* Whether a cell the projection fold takes (an LSTMP: docs/runtime.md, The projection fold) runs folded. */
typedef enum rnncc_fold {
    RNNCC_FOLD_AUTO = 0, /* by the rule: folded where the products are tf32, fp16 or bf16, and in fp32 where
                            V = U P is at most 3 GFLOP a layer or the model keeps it (keep_derived_weights;
                            docs/runtime.md) */
    RNNCC_FOLD_ON = 1,   /* folded wherever the cell folds */
    RNNCC_FOLD_OFF = 2,  /* as written */
} rnncc_fold;
typedef struct rnncc_model_desc {
    const char *cell;               /* the cell's name; NULL when the program has one cell */
    const char *const *dims;        /* "NAME=VALUE" bindings of the cell's dimensions */
    int ndims;
    int layers;                     /* 1 to 1024; layer k > 0 reads layer k-1's first output */
    int bidirectional;              /* 0 or 1; outputs of the two directions are concatenated */
    rnncc_precision precision;
    int device;                     /* CUDA device ordinal; -1 for the current device */
    rnncc_backend backend;          /* AUTO (0) unless forced; the environment variable
                                       RNNCC_BACKEND=cublas|persistent forces AUTO models too
                                       (another value than those and auto fails the creation) */
    rnncc_fold fold;                /* AUTO (0) unless forced; RNNCC_FOLD=1|0 forces AUTO models too (another
                                       value than those, empty and unset fails the creation). rnncc_model_backend
                                       says whether the model runs folded, and why */
    int keep_derived_weights;       /* 0 or 1: the model starts as rnncc_model_keep_derived_weights(model, 1) leaves
                                       it, and the fold's rule counts V = U P once, not every forward (in fp32 it
                                       folds at any size); for weights that stay fixed over many passes */
} rnncc_model_desc;

/* Instantiates a cell: binds dimensions, plans it, generates and JIT-compiles its kernels for
 * the device (through the on-disk cache; on threads of its own, joined before it returns),
 * allocates its weights (zeroed). On failure, other than for memory, *out is a model that only
 * answers rnncc_model_error and destroy. */
rnncc_status rnncc_model_create(const rnncc_program *program, const rnncc_model_desc *desc, rnncc_model **out);
/* Frees a model and its device memory. NULL is ignored. */
void rnncc_model_destroy(rnncc_model *model);
/* The message of the model's last failed call (or of its failed creation); "" if none since the last
 * rnncc_forward, rnncc_backward_data or rnncc_backward_weights began (each clears it as it starts, as does a
 * kernel build that recovers from a tile the device refuses); "model is NULL" for NULL. */
const char *rnncc_model_error(const rnncc_model *model);

/* Describes one parameter tensor of the model. */
typedef struct rnncc_param_info {
    const char *name;    /* as declared in the cell */
    int layer, direction;
    int64_t rows, cols;  /* vectors have cols = 1; matrices are row-major */
    int64_t offset;      /* in elements from the start of the weight buffer */
} rnncc_param_info;

/* Number of parameter tensors: layers * directions * parameters of the cell; 0 for NULL or a failed model. */
int rnncc_model_param_count(const rnncc_model *model);
/* Fills *info for tensor index (0 <= index < rnncc_model_param_count). */
rnncc_status rnncc_model_param_info(const rnncc_model *model, int index, rnncc_param_info *info);
/* Copies count floats from host memory into the named parameter (count must be rows*cols); returns
 * once they are on the device. Passes issued before on the legacy or a blocking stream read the old
 * values; a pass still running on a non-blocking stream must be waited for first. */
rnncc_status rnncc_model_set_param(rnncc_model *model, const char *name, int layer, int direction,
                                   const float *values, int64_t count);
/* Copies the named parameter into host memory. */
rnncc_status rnncc_model_get_param(rnncc_model *model, const char *name, int layer, int direction,
                                   float *values, int64_t count);
/* The packed weight buffer (device) and its size in floats: every parameter at its offset. A model
 * that keeps what it derives from its weights must be told of writes through it
 * (rnncc_model_weights_changed). NULL (and *count 0) for NULL or a failed model. */
float *rnncc_model_weights(rnncc_model *model, int64_t *count);
/* keep = 1: the model keeps what it derives from the weights between passes and derives it again only
 * after they change, not every forward; for weights that stay fixed over many passes, as in inference:
 * in fp16 and bf16 the weights rounded to 16 bits (2 bytes a weight of device memory; 11-19 us of an
 * H200 pass at I = H = 1024), in every precision a folded cell's V = U P (22-29 us at H = 1024, P = 512).
 * keep = 0 (the default) derives them every forward (and frees the 16-bit copy). It allocates or
 * synchronises: not while a CUDA graph is being captured. A forward the caller captures into a graph of
 * its own derives them in that graph whenever the model has seen no uncaptured forward since they
 * changed. In fp16 and bf16 a backward whose forward ran before keep changed is refused (it would read
 * the other 16-bit copy; run the forward again); the other precisions derive nothing a backward reads. */
rnncc_status rnncc_model_keep_derived_weights(rnncc_model *model, int keep);
/* The same as rnncc_model_keep_derived_weights (its earlier name). */
rnncc_status rnncc_model_keep_half_weights(rnncc_model *model, int keep);
/* Tells a model that keeps what it derives from its weights (rnncc_model_keep_derived_weights) that the
 * weights were written through rnncc_model_weights (rnncc_model_set_param tells it itself): the next
 * forward derives them again. Passes already issued keep the copy they read. */
rnncc_status rnncc_model_weights_changed(rnncc_model *model);
/* For a caller that keeps 16-bit weights of its own, as cuDNN's fp16 callers do (an optimizer that writes them
 * beside its fp32 master copy): sets *weights16 to the model's 16-bit weights (fp16 or bf16 bits, as its precision;
 * *count of them, count may be NULL, at the offsets of rnncc_model_weights) and keeps them
 * (rnncc_model_keep_derived_weights(model, 1)), rounding the fp32 weights into them first where they changed since
 * (synchronously). Passes then round no weights: their GEMMs multiply by what the caller writes there between passes
 * (not between a training forward and its backward), until rnncc_model_set_param or rnncc_model_weights_changed
 * has the next forward round the fp32 weights into it again. The fp32 weights stay read too (the vectors; a
 * readout's matrix in a persistent inference forward, docs/runtime.md): keep both current. The pointer holds until
 * keep is turned off or the model destroyed. fp16 and bf16 models that run as written (not folded); not while a
 * CUDA graph is being captured (call it before capturing passes: a graph captured before keeps what it did). */
rnncc_status rnncc_model_weights16(rnncc_model *model, uint16_t **weights16, int64_t *count);

/* Which backend a pass over N sequences runs on, and why in words into why (may be NULL; 640 bytes
 * hold it), e.g. "persistent: step weights 16.8 MB fit on chip: ...; tile ...: the fastest of 7
 * measured"; on cuBLAS, a unidirectional stack's ends with how its layers run ("; layers overlap
 * as a wavefront"). The persistent kernel's tile is searched (or read from the cache) and the
 * kernel compiled (or loaded from the cache) on its first use. On failure why holds the error's message
 * (rnncc_model_error's) and *backend is not written. */
rnncc_status rnncc_model_backend(rnncc_model *model, int64_t N, rnncc_backend *backend, char *why, size_t why_size);
/* The same for a backward pass (rnncc_backward_data) over N sequences: its step loop runs on
 * the persistent backend when the transposed step weights fit on chip, by the same rule. */
rnncc_status rnncc_model_backward_backend(rnncc_model *model, int64_t N, rnncc_backend *backend, char *why,
                                          size_t why_size);
/* Sizes the model reports. */
typedef struct rnncc_model_sizes {
    int64_t input;        /* I of layer 0 */
    int64_t output;       /* elements per (step, sequence) of the first output of the last layer (x2 if bidirectional) */
    int nstates;          /* per state: its size S (see state_size) */
    int noutputs;
    int64_t state_size[8];
    int64_t output_size[8]; /* per output, per direction */
} rnncc_model_sizes;
rnncc_status rnncc_model_get_sizes(const rnncc_model *model, rnncc_model_sizes *sizes);

/* One forward pass's data. Shapes: T steps, N sequences; sequence-major [T][N][...]. The per-output and per-state
 * arrays (host memory) hold exactly rnncc_model_get_sizes' noutputs and nstates entries: the library reads that
 * many and cannot tell a shorter array (likewise rnncc_grad_io's). Buffers a call writes
 * may not overlap another of the call (refused, naming both), but hT[k] may be h0[k] itself; buffers the GPU
 * cannot reach, or not 4-byte aligned, are refused by name (docs/runtime.md). */
typedef struct rnncc_io {
    int64_t T, N;
    const float *x;            /* (device) [T][N][I] */
    float *const *y;           /* per output (device) [T][N][D*dirs] of the last layer; entries may be NULL */
    const int *lengths;        /* host [N], each in 0..T, or NULL: every sequence has T steps. Copied to the
                                  device on the stream (cudaMemcpyAsync): keep them unchanged until the stream has
                                  passed the call (page-locked memory is read only then; pageable memory the driver
                                  stages as the call runs, which CUDA's documentation does not promise) */
    const float *const *h0;    /* per state (device) [layers*dirs][N][S]; NULL or NULL entries: zeros */
    float *const *hT;          /* per state (device) [layers*dirs][N][S]; NULL entries: not written */
} rnncc_io;

/* Workspace bytes a forward (training = 0 or 1) of T steps and N sequences needs. */
rnncc_status rnncc_workspace_size(const rnncc_model *model, int64_t T, int64_t N, int training, size_t *bytes);
/* Reserve bytes a training forward keeps for the backward pass. */
rnncc_status rnncc_reserve_size(const rnncc_model *model, int64_t T, int64_t N, size_t *bytes);

/* Runs forward on stream (a cudaStream_t; NULL for the default stream). Inference when
 * reserve is NULL; training mode otherwise (the reserve then holds what backward needs).
 * Asynchronous: the results are ready when the stream reaches this point. */
rnncc_status rnncc_forward(rnncc_model *model, const rnncc_io *io, void *workspace, size_t workspace_bytes,
                           void *reserve, size_t reserve_bytes, void *stream);

/* ---- training: the backward pass, derived from the cell ------------------------------------ */

/* One backward pass's data; T, N and lengths must be those of the training forward (refused, by name,
 * where they differ from the last training forward's on the same reserve; docs/training.md), and the
 * weights unchanged until rnncc_backward_data (refused where the model was told of a change). */
typedef struct rnncc_grad_io {
    int64_t T, N;
    const int *lengths;          /* host [N] or NULL, as in the forward */
    const float *x;              /* (device) the forward's input [T][N][I] (weight gradients read it; in fp16 and
                                    bf16 as the forward rounded it into the reserve, where x is the forward's) */
    const float *const *dy;      /* per output of the last layer (device) [T][N][D*dirs]; NULL or NULL entries: zero */
    const float *const *dhT;     /* per state (device) [layers*dirs][N][S]; NULL or NULL entries: zero */
    float *dx;                   /* (device) [T][N][I]; NULL: not written */
    float *const *dh0;           /* per state (device) [layers*dirs][N][S]; NULL or NULL entries: not written */
} rnncc_grad_io;

typedef enum rnncc_wgrad_mode {
    RNNCC_WGRAD_SET = 0,         /* dweights = the gradient */
    RNNCC_WGRAD_ADD = 1,         /* dweights += the gradient (accumulate over batches) */
} rnncc_wgrad_mode;

/* Backward through time after a training forward (same model, weights, io sizes and reserve;
 * in fp16 and bf16 it multiplies by the forward's 16-bit weights, kept in the reserve or in the
 * model's own copy, rnncc_model_keep_derived_weights): writes dx
 * and dh0, and keeps in the reserve what rnncc_backward_weights needs. The workspace is sized by
 * rnncc_workspace_size(..., training = 1, ...) and need not hold the forward's. Async on stream. */
rnncc_status rnncc_backward_data(rnncc_model *model, const rnncc_grad_io *io, void *workspace, size_t workspace_bytes,
                                 void *reserve, size_t reserve_bytes, void *stream);
/* Weight gradients after rnncc_backward_data, into dweights (device; the layout and size of
 * rnncc_model_weights: every parameter at its offset), set or accumulated per mode; io as the data
 * call's, its x, dy and dhT unchanged (a dy or dhT entry NULL here and not there, or the reverse, or
 * no data call since the forward on that reserve: refused by name; docs/training.md). */
rnncc_status rnncc_backward_weights(rnncc_model *model, const rnncc_grad_io *io, float *dweights, rnncc_wgrad_mode mode,
                                    void *workspace, size_t workspace_bytes, void *reserve, size_t reserve_bytes,
                                    void *stream);

#ifdef __cplusplus
}
#endif
#endif
