# bench/knockout/fwd_red.sed: a persistent unit whose element-wise code reads one warp's partial sums
# of each product row instead of adding up every warp's (rnn_red_sum). Results wrong; only the time
# counts (bench/NOTES.md sections 50, 67).
/^RNN_DEV float rnn_red_sum(/,/^}/s/w < RNN_WARPS/w < 1/
