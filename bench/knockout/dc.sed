# the seed d(c') from the next step read as 0 (and the ended sequences' carry of it)
s/+= a\.dstate_next\[1\]\[n \* RNN_DIM_H + j\];/+= 0.0f;/
