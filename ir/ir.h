/* The cell IR: one DAG per cell, an array of nodes referenced by 32-bit ids, created in
 * topological order (every operand id is smaller than its user's), hash-consed, each with
 * its source location. Shapes use symbolic dimensions bound only when a model is made. */
#ifndef RNNCC_IR_H
#define RNNCC_IR_H
#include <stdint.h>

#include "arena.h"
#include "diag.h"
#include "ops.h"
#include "strbuf.h"

typedef uint32_t IrRef;
#define IR_NONE UINT32_MAX
/* At most this many states and outputs a cell: the generated kernels' argument block holds that many
 * (runtime/rnn_args.h's RNN_MAX_STATES and RNN_MAX_OUTPUTS, which equal them). */
#define IR_MAX_STATES 8
#define IR_MAX_OUTPUTS 8

/* A dimension: a symbol (`H`) bound later, or an integer literal. */
typedef struct IrDim {
    const char *name; /* NULL for a literal */
    int64_t literal;  /* the value of a literal dimension */
} IrDim;

typedef enum { IR_SCALAR, IR_VECTOR, IR_MATRIX } IrShapeKind;

/* A value's shape. Scalars are literals (broadcast); vectors have dims[0] elements;
 * matrices (parameters only) are dims[0] rows by dims[1] columns, row-major. */
typedef struct IrShape {
    IrShapeKind kind;
    int dims[2]; /* indices into IrCell.dims */
} IrShape;

typedef struct IrNode {
    IrOp op;
    IrRef args[3];    /* operands; ir_ops[op].arity of them. MATVEC: args[0] matrix param, args[1] vector */
    IrShape shape;
    double value;     /* IR_CONST */
    int index;        /* IR_INPUT / IR_STATE / IR_PARAM: index into the cell's table */
    const char *name; /* the name the source gave this value, or NULL */
    SrcLoc loc;
} IrNode;

/* An input or parameter declaration. */
typedef struct IrVar {
    const char *name;
    IrShape shape;
    IrRef node; /* its leaf node */
    SrcLoc loc;
} IrVar;

typedef struct IrState {
    const char *name;
    IrShape shape; /* always a vector */
    IrRef node;    /* the value from the previous step (leaf) */
    IrRef next;    /* the primed value for the next step */
    SrcLoc loc;
} IrState;

typedef struct IrOutput {
    const char *name;
    IrRef node;
    SrcLoc loc;
} IrOutput;

typedef struct IrCell {
    const char *name;
    SrcLoc loc;
    IrDim *dims;       int ndims;
    IrVar *inputs;     int ninputs;  /* exactly one today: the per-step input */
    IrState *states;   int nstates;
    IrVar *params;     int nparams;
    IrOutput *outputs; int noutputs;
    IrNode *nodes;     uint32_t nnodes;
} IrCell;

typedef struct IrModule {
    const char *filename;
    IrCell **cells;
    int ncells;
} IrModule;

/* Parses and checks source text; returns the module, or NULL once any error was reported
 * into diags (whose filename names the source). Everything is allocated from arena. */
IrModule *ir_compile(Arena *arena, Diags *diags, const char *src, size_t len);
/* Returns the cell called name, the only cell when name is NULL and there is one, else NULL. */
const IrCell *ir_find_cell(const IrModule *m, const char *name);
/* Returns the index of the dimension symbol `name` in the cell, or -1. */
int ir_find_dim(const IrCell *c, const char *name);
/* Writes a dimension's text (its symbol or its literal) into buf. */
const char *ir_dim_text(const IrCell *c, int dim, char *buf, int bufsize);
/* Returns the number of elements of a shape given the value of each dimension (1 for scalars). */
int64_t ir_shape_numel(const IrShape *s, const int64_t *dimval);
/* Returns the length of a vector-shaped node given the dimension values. */
int64_t ir_node_len(const IrCell *c, IrRef ref, const int64_t *dimval);

/* Writes into buf (", "-separated, each once) the names of the ops of c whose derivatives jump
 * (ir_op_has_kink); returns how many. */
int ir_cell_kinks(const IrCell *c, char *buf, size_t size);

/* Binds "NAME=VALUE" strings to the cell's symbolic dimensions (literals bind themselves);
 * every symbol must be bound, each to a positive value (twice only to the same one; names up to
 * 79 characters). Returns 1 when all are bound, else 0 with the errors in diags (no location). */
int ir_bind_dims(const IrCell *c, const char *const *specs, int nspecs, int64_t *dimval, Diags *diags);
/* text as a whole decimal number in lo..hi (digits only: no sign, blank, base prefix or exponent) into *out;
 * 0 where it is not one. Every count the library and the CLI take from text is read so. */
int ir_parse_int(const char *text, long long lo, long long hi, long long *out);

/* Writes the stable text form of a cell (golden tests, `rnncc dump --ir`). */
void ir_dump(const IrCell *c, StrBuf *out);
/* Writes the cell's DAG in Graphviz dot form (`rnncc dump --dot`). */
void ir_dump_dot(const IrCell *c, StrBuf *out);

#endif
