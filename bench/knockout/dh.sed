# the seed d(h') from the next step (the step GEMM's result) read as 0 (and the ended sequences' carry of it)
s/+= a\.dstate_next\[0\]\[n \* RNN_DIM_H + j\];/+= 0.0f;/
