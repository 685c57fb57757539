/* The rnn_* helpers that the op table's expressions call, in double precision for the
 * CPU reference. Their float twins for CUDA live in codegen's prelude; keep the two in step
 * (tests/check_codegen compares them numerically through NVRTC-free CPU builds of the prelude). */
#ifndef RNNCC_OPMATH_H
#define RNNCC_OPMATH_H
#include <math.h>

static inline double rnn_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline double rnn_tanh(double x) { return tanh(x); }
static inline double rnn_relu(double x) { return x > 0 ? x : 0; }
static inline double rnn_step(double x) { return x > 0 ? 1 : 0; }
static inline double rnn_exp(double x) { return exp(x); }
static inline double rnn_log(double x) { return log(x); }
/* log(1 + e^x) without overflow for large x (PyTorch's softplus with beta = 1, no threshold). */
static inline double rnn_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static inline double rnn_abs(double x) { return fabs(x); }
static inline double rnn_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static inline double rnn_sqrt(double x) { return sqrt(x); }
static inline double rnn_min(double a, double b) { return a <= b ? a : b; }
static inline double rnn_max(double a, double b) { return a >= b ? a : b; }
static inline double rnn_le(double a, double b) { return a <= b ? 1 : 0; }
static inline double rnn_ge(double a, double b) { return a >= b ? 1 : 0; }
static inline double rnn_lt(double a, double b) { return a < b ? 1 : 0; }
static inline double rnn_gt(double a, double b) { return a > b ? 1 : 0; }
static inline double rnn_clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
static inline double rnn_inside(double x, double lo, double hi) { return x >= lo && x <= hi ? 1 : 0; }
/* PyTorch's hardsigmoid: clamp(x / 6 + 1/2, 0, 1). */
static inline double rnn_hardsigmoid(double x) { return x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + 0.5; }
static inline double rnn_hardsigmoid_d(double x) { return x > -3 && x < 3 ? 1.0 / 6 : 0; }
static inline double rnn_sin(double x) { return sin(x); }
static inline double rnn_cos(double x) { return cos(x); }

#endif
