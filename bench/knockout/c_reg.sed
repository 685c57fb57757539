# bench/knockout/c_reg.sed: a persistent forward (LSTM-like: state c) whose thread's first item keeps c' in a
# register for its next step instead of loading it back, its stores unchanged (bench/NOTES.md section 104).
s|^    unsigned epoch = 0;  // grid barriers passed$|&\n    float rnn_ck = 0.0f;\n    int rnn_ckv = 0;|
s|^                    q1_v2_c = a.state_prev\[1\]\[n \* RNN_DIM_H + j\];  // state c$|                    q1_v2_c = rnn_ckv ? rnn_ck : a.state_prev[1][n * RNN_DIM_H + j];  // state c (kept)|
s|^                a.state_next\[1\]\[n \* RNN_DIM_H + j\] = v37_c_next;  // c'$|&\n                if (i == threadIdx.x) { rnn_ck = v37_c_next; rnn_ckv = 1; }  // (kept)|
