#!/usr/bin/env python3
"""bench/knockout/sentinel.py IN OUT (host): the flashrnn LSTM fp16 persistent forward unit (the rule's, IN as the
runtime compiles it, or groups2.py's two-group rewrite of it) with its grid barrier replaced by cuDNN's hand-off
(bench/NOTES.md sections 97 and 106): each step's 16-bit h goes to a slot of its own, filled beforehand with a
value no step writes (0xFFFF, a NaN; a step's own 0xFFFF is written as 0x7FFF), and each warp polls the operand
fragments it multiplies (relaxed 16-byte loads, the unset ones again in rounds) until none holds the sentinel:
no counter, no arrival, no block barrier between steps. The slots are a __device__ array of the unit's own
(1025 steps x 16 sequences x 768 halves, 25 MB), each block filling its own units' columns of the launch's steps
before one grid barrier (the rule's counter, epoch 1), which orders the fill before every poll. A step's first
operand (the launch's first step) is the runtime's twin, as in the rule. Inference only, a unidirectional layer
(both directions would share the one array), N <= 16, steps < 1025 (the kernel traps otherwise: a reverse
direction, or the others); a poll that spins past 2^26 rounds traps rather than hangs. A knockout unit whose
results are real: `RNNCC_KNOCKOUT=OUT RNNCC_KNOCKOUT_FORWARD=1 build/knockout/rnncc run ...` checks it, and
`KNOCKOUT_FORWARD=1 bash bench/knockout/run.sh R "CFG" none OUT` times it. A pattern that no longer matches stops
it (assert)."""
import re
import sys

from unit_text import Unit

unit = Unit(sys.argv[1])
rep = unit.rep
grouped = 'rnn_sync1' in unit.src  # groups2.py's output


# the slots, the poll and the put, after rnn_load_b (which they call) and before rnn_mv_mma (which calls them)
rep('/* Loads the four flagged words at src',
    '/* bench/knockout/sentinel.py: step t\'s 16-bit h at rnn_sl[t][n][j], 0xFFFF until written */\n'
    '#define RNN_SL_STEPS 1025\n'
    '#define RNN_SL_STEP (16 * 768)\n'
    '__device__ unsigned short rnn_sl[RNN_SL_STEPS * RNN_SL_STEP];\n'
    'RNN_DEV bool rnn_sl_is(const void *p) {\n'
    '    return (const unsigned short *)p >= rnn_sl && (const unsigned short *)p < rnn_sl + RNN_SL_STEPS * RNN_SL_STEP;\n'
    '}\n'
    'RNN_DEV bool rnn_sl_unset(uint4 v) {\n'
    '    return (__vcmpeq2(v.x, 0xFFFFFFFFu) | __vcmpeq2(v.y, 0xFFFFFFFFu) | __vcmpeq2(v.z, 0xFFFFFFFFu) | __vcmpeq2(v.w, 0xFFFFFFFFu)) != 0u;\n'
    '}\n'
    'template <int KI, int NT, int KS>\n'
    'RNN_DEV void rnn_load_b_poll(uint4 (&b)[KI][NT], const unsigned short *X, long long ldx, int N, int K, int n0, int k0) {\n'
    '    rnn_load_b<KI, NT, KS>(b, X, ldx, N, K, n0, k0);\n'
    '    const int g = (threadIdx.x & 31) >> 2;\n'
    '    const unsigned short *const x = X + (long long)(n0 + g) * ldx + k0;\n'
    '    const bool whole = (((unsigned long long)X) & 15) == 0;\n'
    '    for (unsigned round = 0;; round++) {\n'
    '        bool any = false;\n'
    '#pragma unroll\n'
    '        for (int ki = 0; ki < KI; ki++)\n'
    '#pragma unroll\n'
    '            for (int j = 0; j < NT; j++)\n'
    '                if (rnn_sl_unset(b[ki][j])) { any = true; b[ki][j] = rnn_ld_b16(x + 8 * j * ldx + KS * ki, whole); }\n'
    '        if (!any) break;\n'
    '        if (round > (1u << 26)) __trap();  // a value that never came: trap, not hang\n'
    '    }\n'
    '}\n'
    'RNN_DEV void rnn_sl_put(long long t, long long n, int j, float v, int bf16) {\n'
    '    unsigned short h = rnn_twin16(v, bf16);\n'
    '    if (h == 0xFFFFu) h = 0x7FFFu;  // never the sentinel\n'
    '    asm volatile("st.relaxed.gpu.global.b16 [%0], %1;" ::"l"(rnn_sl + t * RNN_SL_STEP + n * 768 + j), "h"(h) : "memory");\n'
    '}\n\n'
    '/* Loads the four flagged words at src')
rep('            if constexpr (XH == 2) rnn_load_b<KP, NT, KS>(bq, xg, ldx, N, K, n0, warp * kw + tk);\n',
    '            if constexpr (XH == 2) {\n'
    '                if (rnn_sl_is(xg)) rnn_load_b_poll<KP, NT, KS>(bq, xg, ldx, N, K, n0, warp * kw + tk);\n'
    '                else rnn_load_b<KP, NT, KS>(bq, xg, ldx, N, K, n0, warp * kw + tk);\n'
    '            }\n')
# the fill and the one grid barrier before the step loop
fill = ('    if (args.buf_step[1] || args.reverse || args.N > 16 || args.t_end >= RNN_SL_STEPS || RNN_DIM_H != 768) __trap();  // (sentinel.py)\n'
        '    for (long long e = threadIdx.x; e < (long long)(args.t_end - args.t) * args.N; e += blockDim.x) {\n'
        '        const long long tt = args.t + 1 + e / args.N, n = e % args.N;  // this block\'s columns of slot tt\n'
        '        for (int j = rnn_j0_H; j < rnn_j0_H + rnn_nj_H; j++) rnn_sl[tt * RNN_SL_STEP + n * RNN_DIM_H + j] = 0xFFFFu;\n'
        '    }\n'
        '    rnn_grid_sync(args.sync, 1);  // every block\'s fill before any poll\n')
if grouped:
    rep('    unsigned epoch0 = 0, epoch1 = 0;  // each group\'s grid barriers passed\n'
        '    unsigned *const rnn_sync1 = args.sync + 1;  // group 1\'s counter: lane 1\'s word (a unidirectional layer only)\n',
        fill)  # groups2.py's counters: none here
    rep('        if (t > args.t) rnn_grid_wait(rnn_g ? rnn_sync1 : args.sync, rnn_g ? ++epoch1 : ++epoch0);  // group g of step t-1 is complete everywhere\n',
        '')
    rep('        if (t + 1 < args.t_end) {  // this block is done with group g of step t\n'
        '            if (rnn_g == 1 && t == args.t) rnn_grid_wait(args.sync, 1);  // block 0 zeroed group 1\'s counter before its first arrival\n'
        '            rnn_grid_arrive(rnn_g ? rnn_sync1 : args.sync);\n'
        '        } else {\n'
        '            __syncthreads();  // the next group\'s product writes rnn_red, which this one\'s items read\n'
        '        }\n',
        '        __syncthreads();  // the next product writes rnn_red, which these items read (no arrival: the slots hand off)\n')
    # group 1's counter, zeroed by block 0 in groups2.py, is not used: drop the zeroing (the fill's barrier counts on args.sync)
    rep('    if (s == 0 && threadIdx.x == 0) { *(volatile unsigned *)rnn_sync1 = 0u; __threadfence(); }\n', '')
else:
    rep('    unsigned epoch = 0;  // grid barriers passed\n', fill)
    rep('        if (t > args.t) rnn_grid_wait(args.sync, ++epoch);  // step t-1 is complete everywhere\n', '')
    rep('        if (t + 1 < args.t_end) rnn_grid_arrive(args.sync);  // this block is done with step t\n',
        '        __syncthreads();  // the next product writes rnn_red, which these items read (no arrival: the slots hand off)\n')
# a step after the launch's first reads its slot; the first, the runtime's twin
rep('        const unsigned short *const rnn_x16_0 = args.state16[0] + sp * args.N * RNN_DIM_H;  // the twin this step stages\n',
    '        const unsigned short *const rnn_x16_0 = t > args.t ? rnn_sl + (long long)t * RNN_SL_STEP : args.state16[0] + sp * args.N * RNN_DIM_H;  // slot t (sentinel.py)\n')
# every twin store also fills step t+1's slot
pat = re.compile(r'(if \(a\.state16\[0\]\) rnn_put16\(&a\.state16\[0\]\[n \* RNN_DIM_H \+ j\], (.+?), (a\.bf16|[01])\);)')
n_put = len(pat.findall(unit.src))
assert n_put == 2, n_put
unit.src = pat.sub(lambda m: m.group(1) + ' rnn_sl_put(t + 1, n, j, ' + m.group(2) + ', ' + m.group(3) + ');', unit.src)
unit.save(sys.argv[2])
