# no exchange of the partial sums and no store of the products' results (rnn_mv_finish)
s/rnn_mv_finish(red, RPP, LDR, NP, p, passes, rows, n0, N, out, ldo, rowmap, acc, sres, res_cap, kept_only, sp);/__syncthreads();/
