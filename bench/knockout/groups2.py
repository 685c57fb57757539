#!/usr/bin/env python3
"""bench/knockout/groups2.py IN OUT (host): the flashrnn LSTM fp16 persistent forward unit, as the rule plans it
(`rnncc emit cells/lstm.cell --dim I=768 --dim H=768 --persistent 16 --precision fp16 --handoff direct --blocks 96
--forward`), rewritten with its 16 sequences in two groups of 8 taken in turn, each with its own product pass
(rnn_mv_mma with NW = 2: one 8-sequence tile), element-wise items and grid counter, so that one group's hand-off
travels while the block works on the other (bench/NOTES.md section 105: cuDNN's step body takes 8 sequences at a
time). Group 1's counter is args.sync + 1 (lane 1's word: a unidirectional layer only), zeroed by block 0 at the
launch's start; every block's first arrival on it waits for group 0's first barrier, which orders that zero before
it. Inference only (the kernel traps where the forward stores its sums for a backward). A knockout unit whose
results are real: `RNNCC_KNOCKOUT=OUT RNNCC_KNOCKOUT_FORWARD=1 build/knockout/rnncc run ...` checks it against the
reference, and `KNOCKOUT_FORWARD=1 bash bench/knockout/run.sh R "CFG" none OUT` times it. A pattern that no longer
matches the emitted unit stops it (assert)."""
import sys
from unit_text import Unit
unit = Unit(sys.argv[1])
rep = unit.rep
rep('    unsigned epoch = 0;  // grid barriers passed\n',
    '    unsigned epoch0 = 0, epoch1 = 0;  // each group\'s grid barriers passed\n'
    '    unsigned *const rnn_sync1 = args.sync + 1;  // group 1\'s counter: lane 1\'s word (a unidirectional layer only)\n'
    '    if (args.buf_step[1]) __trap();  // inference only (the sums stored for the backward: not here)\n'
    '    if (s == 0 && threadIdx.x == 0) { *(volatile unsigned *)rnn_sync1 = 0u; __threadfence(); }\n')
# the group loop opens before the first item's loads and closes after the arrival
rep('        // K1\'s values from before the step for this thread\'s first item, loaded while the other blocks arrive and the GEMMs run\n',
    '        for (int rnn_g = 0; rnn_g < 2; rnn_g++) {\n'
    '        const int g0 = rnn_g * 8;  // the group\'s first sequence\n'
    '        // K1\'s values from before the step for this thread\'s first item, loaded while the other blocks arrive and the GEMMs run\n')
rep('            if (i < (long long)a.N * nj) {\n                const long long n = rnn_n1_H;  // the sequence\n',
    '            if (i < 8LL * nj && g0 + rnn_n1_H < a.N) {\n                const long long n = g0 + rnn_n1_H;  // the sequence\n')
rep('        if (t > args.t) rnn_grid_wait(args.sync, ++epoch);  // step t-1 is complete everywhere\n',
    '        if (t > args.t) rnn_grid_wait(rnn_g ? rnn_sync1 : args.sync, rnn_g ? ++epoch1 : ++epoch0);  // group g of step t-1 is complete everywhere\n')
rep('rnn_mv_mma<4, 4, 2, 2, 36, 3>(w1, 800, rows1, 1, 768, 768, 1, rnn_x16_0, RNN_DIM_H, a.N, ',
    'rnn_mv_mma<4, 2, 2, 2, 36, 3>(w1, 800, rows1, 1, 768, 768, 1, rnn_x16_0 + (long long)g0 * RNN_DIM_H, RNN_DIM_H, min(8, a.N - g0), ')
rep('            if (i < (long long)a.N * nj) do {\n                const long long n = rnn_n1_H;  // the sequence\n',
    '            if (i < 8LL * nj && g0 + rnn_n1_H < a.N) do {\n                const long long n = g0 + rnn_n1_H;  // the sequence\n')
rep('rnn_red_sum(rnn_red, 16, 36, (int)n, ', 'rnn_red_sum(rnn_red, 8, 36, (int)(n - g0), ', 4)  # the gate blocks' sums
rep('        if (t + 1 < args.t_end) rnn_grid_arrive(args.sync);  // this block is done with step t\n',
    '        if (t + 1 < args.t_end) {  // this block is done with group g of step t\n'
    '            if (rnn_g == 1 && t == args.t) rnn_grid_wait(args.sync, 1);  // block 0 zeroed group 1\'s counter before its first arrival\n'
    '            rnn_grid_arrive(rnn_g ? rnn_sync1 : args.sync);\n'
    '        } else {\n'
    '            __syncthreads();  // the next group\'s product writes rnn_red, which this one\'s items read\n'
    '        }\n'
    '        }  // the groups\n')
unit.save(sys.argv[2])
