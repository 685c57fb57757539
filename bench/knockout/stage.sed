# no staging of the transposed products' operand (d(gates)): the product reads what shared memory holds
s/else rnn_mv_stage(xt, 0, xg, ldx, N, K, n0, 0, NP, KC, lds);/else __syncthreads();/
