# bench/knockout/late_wait.sed: a persistent forward (LSTM-like: states h, c; output y) whose thread's first
# item keeps c' in a register for its next step and stores h', c' and y after the next step's product
# (and after the loop), so that the arrival's release waits for the 16-bit twin alone (bench/NOTES.md
# section 104). Results correct for batches without lengths, as far as the probe goes.
s|^    unsigned epoch = 0;  // grid barriers passed$|&\n    float *rnn_lh = nullptr, *rnn_lc = nullptr, *rnn_ly = nullptr, rnn_lhv = 0.0f, rnn_lcv = 0.0f, rnn_lyv = 0.0f, rnn_ck = 0.0f;\n    int rnn_ckv = 0;|
s|^                    q1_v2_c = a.state_prev\[1\]\[n \* RNN_DIM_H + j\];  // state c$|                    q1_v2_c = rnn_ckv ? rnn_ck : a.state_prev[1][n * RNN_DIM_H + j];  // state c (late)|
s|^        rnn_mv_mma<.*$|&\n        if (rnn_lh) { *rnn_lh = rnn_lhv; *rnn_lc = rnn_lcv; if (rnn_ly) *rnn_ly = rnn_lyv; rnn_lh = nullptr; }  // (late)|
s|^                a.state_next\[0\]\[n \* RNN_DIM_H + j\] = v39_h_next;  // h'$|                if (i == threadIdx.x) { rnn_lh = \&a.state_next[0][n * RNN_DIM_H + j]; rnn_lhv = v39_h_next; } else a.state_next[0][n * RNN_DIM_H + j] = v39_h_next;  // h' (late)|
s|^                a.state_next\[1\]\[n \* RNN_DIM_H + j\] = v37_c_next;  // c'$|                if (i == threadIdx.x) { rnn_lc = \&a.state_next[1][n * RNN_DIM_H + j]; rnn_lcv = v37_c_next; rnn_ck = v37_c_next; rnn_ckv = 1; } else a.state_next[1][n * RNN_DIM_H + j] = v37_c_next;  // c' (late)|
s|^                if (a.y\[0\]) a.y\[0\]\[col \* a.ldy\[0\] + j\] = v39_h_next;  // output h$|                if (i == threadIdx.x) { rnn_ly = a.y[0] ? \&a.y[0][col * a.ldy[0] + j] : nullptr; rnn_lyv = v39_h_next; } else if (a.y[0]) a.y[0][col * a.ldy[0] + j] = v39_h_next;  // output h (late)|
s|^    RNN_PROF_END();  // (RNN_PROFILE only)$|    if (rnn_lh) { *rnn_lh = rnn_lhv; *rnn_lc = rnn_lcv; if (rnn_ly) *rnn_ly = rnn_lyv; }  // (late)\n&|
