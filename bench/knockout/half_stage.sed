# half_stage.sed (bench/NOTES.md section 106): a product staged in waves (rnn_stage_copies: the deepbench backward's
# split-K operand) copies only its first half of the sequences from L2 and zero-fills the rest (cp.async with no
# source bytes): the same copies and shared-memory writes, half the bytes from L2 (results wrong; timing only).
# Would multicast across two split-K pairs (section 69's Next, half the L2 bytes a pair) pay?
s|else if (WS > 0) rnn_stage_copies<(WS > 0 ? WS : 1)>(xt, xg, ldx, N, K, n0, 0, NP, KC, lds, rnn_rows_whole16(xg, ldx, K));|else if (WS > 0) rnn_stage_copies<(WS > 0 ? WS : 1)>(xt, xg, ldx, N / 2, K, n0, 0, NP, KC, lds, rnn_rows_whole16(xg, ldx, K));  // half_stage.sed|
