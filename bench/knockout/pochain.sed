# bench/knockout/pochain.sed: a peephole LSTM's persistent forward whose output gate reads c, not c'
# (p_o * c): the gate no longer waits for c'. Results wrong; only the time counts (bench/NOTES.md
# section 87: whether that chain makes the flags tile's peephole step 0.4 us longer than the LSTM's).
s/rnn_op_mul(v13_p_o, v39_c_next)/rnn_op_mul(v13_p_o, v2_c)/
