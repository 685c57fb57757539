# bench/knockout/fwd_st.sed: a persistent forward unit without the element-wise code's fp32 stores of
# h', c' and the output (the 16-bit twin the next step stages stays). Results wrong; only the time
# counts: what the arrival's release waits for besides the twin (bench/NOTES.md sections 49, 50, 67).
/^ *a\.state_next\[[0-9]\]\[n \* RNN_DIM_H + j\] = v[0-9]/d
/^ *if (a\.y\[0\]) a\.y\[0\]\[col \* a\.ldy\[0\] + j\] = v[0-9]/d
