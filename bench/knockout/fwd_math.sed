# bench/knockout/fwd_math.sed: a persistent forward unit whose sigmoid and tanh are identities.
# Results wrong; only the time counts (bench/NOTES.md sections 50, 67).
s/^RNN_DEV float rnn_op_sigmoid(float a) { return rnn_sigmoid(a); }/RNN_DEV float rnn_op_sigmoid(float a) { return a; }/
s/^RNN_DEV float rnn_op_tanh(float a) { return rnn_tanh(a); }/RNN_DEV float rnn_op_tanh(float a) { return a; }/
