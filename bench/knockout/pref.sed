# no prefetch of step t-1's values into L1
/rnn_prefetch(/d
