# bench/knockout/fwddefer.sed: a training forward whose step product keeps its sums in red (as
# inference), and writes step t-1's sums for the backward between step t's arrival and its wait
# (red holds them until step t's product, after the wait's __syncthreads), and the last step's after
# the loop: the stores leave the release's wait and the barrier's critical path. Results real. For
# the LSTM units of one pass over every sequence (NP = a.N; ldr 36; the output 4H wide), as at
# deepbench and flashrnn (bench/NOTES.md section 69).
# The generator emits this since d26d046 (rnn_red_store): the script applies to units before it.
#   KNOCKOUT_FORWARD=train bash bench/knockout/run.sh ROUNDS "CELL ..." none fwddefer
s/args\.buf_step\[1\] == 0 ? RNN_IN_RED : RNN_TO_OUT/RNN_IN_RED/
s|^\( *\)if (t > args.t) rnn_grid_arrive(args.sync);  // this block is done with step t-1|&\n\1if (t > args.t \&\& args.buf_step[1]) { float *const ko = args.buf[1] + (t - 1) * args.buf_step[1]; for (int e = threadIdx.x; e < rows1 * a.N; e += blockDim.x) { const int n = e / rows1, r = e - n * rows1; ko[(long long)n * 4 * RNN_DIM_H + map1[r]] = rnn_red_sum(rnn_red, a.N, 36, n, r); } }  // knockout fwddefer|
s|^\( *\)RNN_PROF_END();  // (RNN_PROFILE only)|\1if (args.buf_step[1] \&\& args.t_end > args.t) { float *const ko = args.buf[1] + (args.t_end - 1) * args.buf_step[1]; for (int e = threadIdx.x; e < rows1 * args.N; e += blockDim.x) { const int n = e / rows1, r = e - n * rows1; ko[(long long)n * 4 * RNN_DIM_H + map1[r]] = rnn_red_sum(rnn_red, args.N, 36, n, r); } }  // knockout fwddefer\n&|
