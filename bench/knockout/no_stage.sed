# no_stage.sed (bench/NOTES.md section 106): as half_stage.sed, but no sequence copied from L2 at all (every copy
# zero-filled): what the waves' L2 reads cost a step, all of them (results wrong; timing only).
s|else if (WS > 0) rnn_stage_copies<(WS > 0 ? WS : 1)>(xt, xg, ldx, N, K, n0, 0, NP, KC, lds, rnn_rows_whole16(xg, ldx, K));|else if (WS > 0) rnn_stage_copies<(WS > 0 ? WS : 1)>(xt, xg, ldx, 0, K, n0, 0, NP, KC, lds, rnn_rows_whole16(xg, ldx, K));  // no_stage.sed|
