/* IR operators: the enum, their names, kinds and arities, all expanded from ops.def. */
#ifndef RNNCC_OPS_H
#define RNNCC_OPS_H

typedef enum {
    OPK_LEAF,   /* input, state, parameter, literal */
    OPK_MATVEC, /* matrix parameter @ vector */
    OPK_INFIX,  /* a + b, a - b, a * b, a / b */
    OPK_PREFIX, /* -a */
    OPK_FUNC,   /* name(a, ...) */
} OpKind;

typedef enum {
#define OP(E, name, kind, arity, value, d0, d1, d2) IR_##E,
#include "ops.def"
#undef OP
    IR_OP_COUNT
} IrOp;

typedef struct OpInfo {
    const char *name;  /* as written in .cell files (functions) and IR dumps */
    OpKind kind;
    int arity;
    const char *value; /* C/CUDA expression over a, b, c */
    const char *deriv[3]; /* d/da, d/db, d/dc over a, b, c, y */
} OpInfo;

/* The table, indexed by IrOp. */
extern const OpInfo ir_ops[IR_OP_COUNT];
/* Returns the function called `name` (OPK_FUNC only), or -1. */
int ir_op_find_function(const char *name);
/* Returns the element-wise op's value for operands a, b, c, in double precision. */
double ir_op_eval(IrOp op, double a, double b, double c);
/* Writes the element-wise op's partial derivatives d/da, d/db, d/dc given the operands and result y. */
void ir_op_deriv(IrOp op, double a, double b, double c, double y, double d[3]);
/* 1 when the op's derivative jumps across a threshold (relu and abs at 0, min and max at ties, clamp
 * and hardsigmoid at their bounds): its derivative text calls one of opmath.h's indicator functions. */
int ir_op_has_kink(IrOp op);
/* Returns true for an element-wise operator (infix, prefix or function). */
static inline int ir_op_is_elementwise(IrOp op) { return ir_ops[op].kind >= OPK_INFIX; }

#endif
