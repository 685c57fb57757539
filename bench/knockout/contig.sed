# the backward's transposed weights loaded as if a copy held them transposed (rows of W^T contiguous): each row
# set's rows as 16-byte cp.async of contiguous memory, the same bytes, from U's region (values wrong by design):
# bounds what a pre-transposed copy would cost the prologue (LSTM at H = 1024, pairs splitting K; bench/NOTES.md
# section 118)
s/^\( *\)\(else \)\{0,1\}rnn_load_transposed<0>(\([a-z0-9_]*\) + (long long)r \* \([0-9]*\), \([0-9]*\), [^,]*, args\.params16 + \([0-9]*\) + (long long)rnn_rank \* [0-9]*, \([0-9]*\), rnn_kr\([0-9]\), lr, nr);$/\1\2{ const unsigned short *src_ = args.params16 + \6 + (long long)lr * 4096 + (long long)rnn_rank * 2048; unsigned short *dst_ = \3 + (long long)r * \4; for (int e = threadIdx.x; e < nr * (rnn_kr\8 \/ 8); e += RNN_P_THREADS) rnn_cp16(dst_ + (e \/ (rnn_kr\8 \/ 8)) * \5 + (e % (rnn_kr\8 \/ 8)) * 8, src_ + (long long)(e \/ (rnn_kr\8 \/ 8)) * 4096 + (e % (rnn_kr\8 \/ 8)) * 8, 16); }  \/\/ (contig.sed)/
