/* When the projection fold pays (bench/NOTES.md sections 82 and 83): the rule by which a cell the fold
 * takes runs folded, applied by the runtime (runtime/rt_fold.c) and by `rnncc dump --schedule`.
 * Key idea: the fold trades a phase and a hand-off a step for V = U P formed every pass (and the
 * gradients mapped back); on tensor cores V is cheap, in strict fp32 FFMA it is paid only while small. */
#ifndef RNNCC_FOLD_RULE_H
#define RNNCC_FOLD_RULE_H
#include <stddef.h>

#include "fold_projection.h"

/* How the model's products run, as the rule tells them apart. */
typedef enum IrFoldProducts {
    IR_FOLD_TENSOR_CORES, /* tf32, fp16, bf16: V = U P and the fold's other GEMMs run in tf32 */
    IR_FOLD_FP32,         /* strict fp32: V in FFMA every pass */
    IR_FOLD_UNMEASURED,   /* tf32x3: not measured, so as written */
} IrFoldProducts;
/* The rule's kind of a model in precision (rnncc.h's rnncc_precision: 0 fp32, 4 tf32x3, the others on tensor
 * cores), as codegen/cg.h's cg_products_of reads it. */
static inline IrFoldProducts ir_fold_products_of(int precision) {
    return precision == 0 ? IR_FOLD_FP32 : precision == 4 ? IR_FOLD_UNMEASURED : IR_FOLD_TENSOR_CORES;
}

/* fp32 folds where V = U P is at most so many floating-point operations a layer-direction. */
#define IR_FOLD_FP32_MAX_FLOPS 3e9

/* V = U P's floating-point operations (two a multiply-add) in one layer-direction at the dimension values
 * dimval (IrCell.dims' indices): every U_k's elements times P's columns. */
double ir_fold_derived_flops(const IrFold *fold, const int64_t *dimval);
/* The rule, for products named precision (e.g. "fp32"), V's flops, and whether the model keeps V (forms it once,
 * not every forward: rnncc_model_desc.keep_derived_weights): writes who decides into by ("the rule: fp32 products,
 * V = U P 2.05 GFLOP in FFMA every pass, at most 3") and returns NULL where the cell runs folded, else why not
 * (static text). */
const char *ir_fold_rule(IrFoldProducts products, const char *precision, double flops, int kept, char *by, size_t by_size);

#endif
