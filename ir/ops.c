/* The op table expanded: names, kinds, and the double-precision evaluators.
 * Key idea: the same expression text is compiled here and stringified for CUDA. */
#include "ops.h"

#include <string.h>

#include "opmath.h"

const OpInfo ir_ops[IR_OP_COUNT] = {
#define OP(E, name, kind, arity, value, d0, d1, d2) \
    [IR_##E] = {name, kind, arity, #value, {#d0, #d1, #d2}},
#include "ops.def"
#undef OP
};

int ir_op_find_function(const char *name) {
    for (int i = 0; i < IR_OP_COUNT; i++)
        if (ir_ops[i].kind == OPK_FUNC && strcmp(ir_ops[i].name, name) == 0) return i;
    return -1;
}

int ir_op_has_kink(IrOp op) {
    static const char *const indicators[] = {"rnn_step(", "rnn_sign(", "rnn_le(", "rnn_ge(", "rnn_lt(", "rnn_gt(",
                                             "rnn_inside(", "rnn_hardsigmoid_d("};
    if ((int)op < 0 || op >= IR_OP_COUNT) return 0;
    for (int d = 0; d < 3; d++)
        for (size_t k = 0; k < sizeof indicators / sizeof *indicators; k++)
            if (strstr(ir_ops[op].deriv[d], indicators[k])) return 1;
    return 0;
}

/* Leaf and matvec rows have value 0 and are never evaluated here. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-but-set-parameter"
#endif

double ir_op_eval(IrOp op, double a, double b, double c) {
    switch (op) {
#define OP(E, name, kind, arity, value, d0, d1, d2) \
    case IR_##E: return (value);
#include "ops.def"
#undef OP
    default: return 0;
    }
}

void ir_op_deriv(IrOp op, double a, double b, double c, double y, double d[3]) {
    switch (op) {
#define OP(E, name, kind, arity, value, d0, d1, d2) \
    case IR_##E: d[0] = (d0); d[1] = (d1); d[2] = (d2); return;
#include "ops.def"
#undef OP
    default: d[0] = d[1] = d[2] = 0;
    }
}
