/* The projection fold's rule (fold_rule.h). Measured on an H200 (bench/NOTES.md sections 82 and 83): on
 * tensor cores every configuration but T = 25 at 4 sequences gained; in fp32, H = 512-800 (V 0.5-2.1 GFLOP)
 * gained 10-45% and H = 1024 (4.3 GFLOP, ~90 us a pass) lost 1-22%. */
#include <stdio.h>

#include "fold_rule.h"

double ir_fold_derived_flops(const IrFold *f, const int64_t *dimval) {
    double u = 0; /* every U_k's elements, each [rows][P's rows] */
    for (int k = 0; k < f->nderived; k++) u += (double)ir_shape_numel(&f->user->params[f->derived_from[k]].shape, dimval);
    return 2 * u * (double)dimval[f->user->params[f->proj].shape.dims[1]];
}

const char *ir_fold_rule(IrFoldProducts products, const char *precision, double flops, int kept, char *by, size_t by_size) {
    if (products != IR_FOLD_FP32) {
        snprintf(by, by_size, "the rule: %s products", precision);
        return products == IR_FOLD_TENSOR_CORES ? NULL : "V = U P and the fold's other GEMMs would run in fp32 FFMA; not measured";
    }
    if (kept) { /* formed once while the weights stay fixed: the saved phase is every pass's */
        snprintf(by, by_size, "the rule: %s products, V = U P %.2f GFLOP in FFMA once, kept while the weights stay fixed",
                 precision, flops * 1e-9);
        return NULL;
    }
    const int over = flops > IR_FOLD_FP32_MAX_FLOPS;
    snprintf(by, by_size, "the rule: %s products, V = U P %.2f GFLOP in FFMA every pass, %s %.0f", precision, flops * 1e-9,
             over ? "over" : "at most", IR_FOLD_FP32_MAX_FLOPS * 1e-9);
    return over ? "V costs more than the step's phase it saves (bench/NOTES.md section 83); a model that keeps V "
                  "(keep_derived_weights) folds"
                : NULL;
}
