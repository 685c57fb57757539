# half_b.sed (bench/NOTES.md section 106): a forward loading its operand straight (rnn_load_b) loads only the first
# 8-sequence tile of each k step and reuses it for the others: half the operand's bytes from L2 a step at 16
# sequences (results wrong; timing only): is the step's operand traffic (96 blocks x 24 KB from L2) a cost of its own?
s|            b\[ki\]\[j\] = n0 + g + 8 \* j < N \&\& k0 + KS \* ki < K ? rnn_ld_b16(x + 8 \* j \* ldx + KS \* ki, whole) : make_uint4(0u, 0u, 0u, 0u);|            b[ki][j] = j == 0 ? (n0 + g < N \&\& k0 + KS * ki < K ? rnn_ld_b16(x + KS * ki, whole) : make_uint4(0u, 0u, 0u, 0u)) : b[ki][0];  // half_b.sed|
