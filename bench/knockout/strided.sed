# the backward's transposed weights read from HEAD's strided addresses (a block's 16-byte piece of each of its part's
# rows of W) but as 16-byte cp.async straight into shared memory, as contig.sed copies them, untransposed (values
# wrong by design): beside contig.sed, splits the load's cost into the global side (the strided reads) and the
# block's side (registers and 2-byte transposing stores). For 8 units a block (128 blocks at deepbench), where a
# block's strip is one piece a row (LSTM at H = 1024, pairs splitting K; bench/NOTES.md section 119)
s/^\( *\)\(else \)\{0,1\}rnn_load_transposed<0>(\([a-z0-9_]*\) + (long long)r \* \([0-9]*\), \([0-9]*\), [^,]*, args\.params16 + \([0-9]*\) + (long long)rnn_rank \* \([0-9]*\), \([0-9]*\), rnn_kr\([0-9]\), lr, nr);$/\1\2{ const unsigned short *src_ = args.params16 + \6 + (long long)rnn_rank * \7 + (lr - lr % 8); unsigned short *dst_ = \3 + (long long)r * \4; for (int e = threadIdx.x; e < nr * (rnn_kr\9 \/ 8); e += RNN_P_THREADS) rnn_cp16(dst_ + (e \/ (rnn_kr\9 \/ 8)) * \5 + (e % (rnn_kr\9 \/ 8)) * 8, src_ + (long long)(e % rnn_kr\9) * \8, 16); }  \/\/ (strided.sed)/
