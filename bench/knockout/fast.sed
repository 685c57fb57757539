# the hardware's approximate tanh and exp in the recompute (a bound on the arithmetic)
s/{ return tanhf(x); }/{ float r; asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }/
s/RNN_SIGMOID_QUOTIENT(1.0f + expf(-x))/RNN_SIGMOID_QUOTIENT(1.0f + __expf(-x))/
