# no store of d(c) into its home
/a\.dstate_prev\[1\]\[n \* RNN_DIM_H + j\] = o2_c/d
