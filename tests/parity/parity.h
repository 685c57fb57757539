/* parity (tests/parity/README.md): what its pieces share. A case written by tests/parity/export.py (its manifest,
 * tensors and sizes, and the one table from rnncc's parameters to PyTorch's tensors: parity_case.c), what rnncc
 * computed of it (on the GPU: parity_gpu.c; by its double-precision reference: parity_ref.c), compared in parity.c. */
#ifndef RNNCC_PARITY_H
#define RNNCC_PARITY_H
#include <stdint.h>

#include "rnncc.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_SKIP = 77 };
enum { VARIANT_SKIPPED = 3 }; /* run_rnncc: this device cannot run the backend a variant forces (not an exit status) */
enum { MAX_KEYS = 4096, MAX_DIMS = 4, MAX_STATES = 2, MAX_LAYERS = 64, MAX_GATES = 4, MAX_OUTPUTS = 8 };
/* PyTorch's tensors of a layer and direction, in kind_name's order (weight_hr only with proj_size). */
enum { KIND_W_IH, KIND_W_HH, KIND_B_IH, KIND_B_HH, KIND_W_HR, KINDS };

/* The two PyTorch results of each tensor: REF64 decides, REF32 informs. */
enum { REF64 = 0, REF32 = 1 };

/* PyTorch stacks the gates' rows: weight_ih_l{k} is [gate 0; gate 1; ...], H rows each. */
typedef enum Source {
    SRC_W_IH,     /* rows of weight_ih_l{k}{_reverse} */
    SRC_W_HH,     /* rows of weight_hh_l{k}{_reverse} */
    SRC_BIAS_SUM, /* bias_ih + bias_hh of the gate (its gradient is either one's: they are equal) */
    SRC_BIAS_IH,  /* bias_ih of the gate alone */
    SRC_BIAS_HH,  /* bias_hh of the gate alone */
    SRC_W_HR,     /* the whole of weight_hr_l{k}{_reverse} (nn.LSTM with proj_size: P rows) */
} Source;

/* One row of the table: an rnncc parameter and the PyTorch slice it is. */
typedef struct Map {
    const char *param; /* the name in the .cell file */
    Source src;
    int gate;          /* which H-row block (SRC_W_HR: 0, its one P-row block) */
} Map;

/* A state's size: the emitted state's (H, or P with proj_size) or the cell state's (H). */
typedef enum StateSize { SZ_OUT, SZ_H } StateSize;

/* A cell parity knows: its PyTorch module's gates and states, and its table. */
typedef struct CellSpec {
    const char *name;
    int ngates, nstates; /* states in declaration order: h, then c for the LSTM */
    int proj;            /* 1: nn.LSTM with proj_size (the manifest's P; weight_hr) */
    /* export.py's names per state: initial, final, final's cotangent, initial's gradient */
    const char *state_tensor[MAX_STATES][4];
    StateSize state_size[MAX_STATES];
    const Map *map;
    int nmap;
} CellSpec;
enum { ST_INIT, ST_FINAL, ST_DFINAL, ST_DINIT };

/* The names of the KIND_ tensors (export.py's, with _l{k} and _reverse appended). */
extern const char *const kind_name[KINDS];

/* The manifest: `key = value` lines, '#' comments. */
typedef struct Manifest {
    const char *dir;
    char *key[MAX_KEYS], *val[MAX_KEYS];
    int n;
} Manifest;

/* A tensor: raw little-endian float32 or float64 values. */
typedef struct Tensor {
    double *v;  /* the values, widened to double */
    int64_t n;
    int ndim, f64;
    int64_t dim[MAX_DIMS];
} Tensor;

/* A case: its sizes, what rnncc and PyTorch were both given, and PyTorch's results. */
typedef struct Case {
    const CellSpec *spec;
    int I, H, T, N, layers, dirs, backward;
    int P, O;                                     /* proj_size (0 without) and the emitted state's size: P or H */
    int nkinds;                                   /* PyTorch's tensors a layer and direction: 4, or 5 with weight_hr */
    int *lengths;                                 /* NULL: every sequence has T steps */
    /* what rnncc and PyTorch are both given (float32) */
    Tensor x, h0[MAX_STATES], dy, dhT[MAX_STATES];
    Tensor w[MAX_LAYERS][2][KINDS];               /* weight_ih, weight_hh, bias_ih, bias_hh (weight_hr) per layer, direction */
    /* PyTorch's results, [REF64] and [REF32] */
    Tensor y[2], hT[MAX_STATES][2];
    Tensor dx[2], dh0[MAX_STATES][2];             /* only when backward */
    Tensor gw[MAX_LAYERS][2][KINDS][2];           /* grad of w[l][d][j]; only when backward */
} Case;

/* What rnncc computed, widened to double (NaN where it wrote nothing). */
typedef struct Results {
    double *y, *hT[MAX_STATES];        /* inference forward */
    double *ty, *thT[MAX_STATES];      /* training forward (with a reserve) */
    double *dx, *dh0[MAX_STATES];      /* rnncc_backward_data */
    double *dw;                        /* rnncc_backward_weights: rnncc's packed weight layout */
    int64_t nw;                        /* its size in floats (rnncc_model_weights) */
    rnncc_param_info *info;            /* every parameter: name, layer, direction, shape, offset in dw */
    int ninfo;
} Results;

/* How rnncc runs a case: each backend forced in turn, and a cell the projection fold takes folded and as written. */
typedef struct Variant {
    rnncc_backend backend;
    rnncc_fold fold; /* ON or OFF only where the cell folds (spec->proj); AUTO otherwise */
    const char *name;
} Variant;

/* Reads dir/manifest into m. 1 on success, else 0 with the error printed. */
int manifest_read(const char *dir, Manifest *m);
/* Frees what manifest_read kept. */
void manifest_free(Manifest *m);
/* The value of key, or NULL. */
const char *manifest_get(const Manifest *m, const char *key);
/* Reads the manifest's sizes and every tensor into c, checking each shape. 1 on success, else 0 (error printed). */
int case_load(const Manifest *m, Case *c);
/* Frees a case's tensors and lengths. */
void case_free(Case *c);
/* The size of state k of the case's cell: H, or the emitted state's (P with proj_size). */
int state_size(const Case *c, int k);
/* The rows of one block of PyTorch's tensor of kind `kind`: a gate's H, or weight_hr's P (its one block). */
int64_t kind_rows(const Case *c, int kind);
/* The rows of one block of map's PyTorch tensor (kind_rows of its source's). */
int64_t block_rows(const Case *c, const Map *map);
/* Which of PyTorch's tensors of a layer and direction a source reads (into js; bias sums: both). Returns how many. */
int source_kinds(Source src, int js[2]);
/* The table's entry of rnncc's parameter, checked against its layer, direction and shape; NULL (error printed). */
const Map *param_source(const Case *c, const rnncc_param_info *info);
/* Copies one rnncc parameter's values out of PyTorch's tensors (a bias sum added in double). 1, or 0 (error printed). */
int fill_param(const Case *c, const rnncc_param_info *info, double *out);
/* The ways rnncc runs the case on the GPU (into *out); returns how many. */
int parity_variants(const Case *c, const Variant **out);
/* rnncc on the GPU, as v says, into r. 0 done, EXIT_SKIP without a CUDA device, VARIANT_SKIPPED where the device
 * cannot run the backend v forces (printed), EXIT_FAIL on an error. */
int run_rnncc(const Case *c, const char *cells_dir, const Variant *v, Results *r);
/* rnncc's double-precision reference (no GPU) into r: one forward (r->ty NULL), the gradients. 0 or EXIT_FAIL. */
int run_reference(const Case *c, const char *cells_dir, Results *r);

#endif
