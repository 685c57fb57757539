# no staging of the transposed products' operand (d(gates)): the product reads what shared memory holds (in one
# go or in waves: the waits find nothing in flight)
s/else rnn_mv_stage(xt, 0, xg, ldx, N, K, n0, 0, NP, KC, lds);/else __syncthreads();/
s/else if (WS > 0) rnn_stage_copies<(WS > 0 ? WS : 1)>(xt, xg, ldx, N, K, n0, 0, NP, KC, lds, rnn_rows_whole16(xg, ldx, K));/else if (WS > 0) __syncthreads();/
