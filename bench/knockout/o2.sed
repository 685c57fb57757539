# the home of d(c) (what this step's slot holds so far) read as 0
s/const float o2_c = a\.dstate_prev\[1\]\[n \* RNN_DIM_H + j\];/const float o2_c = 0.0f;/
