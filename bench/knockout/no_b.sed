# no_b.sed (bench/NOTES.md section 106): a forward loading its operand straight (rnn_load_b) loads none of it (each
# fragment a register value of its own): what the operand's loads from L2 cost a step, all of it (results wrong).
s|            b\[ki\]\[j\] = n0 + g + 8 \* j < N \&\& k0 + KS \* ki < K ? rnn_ld_b16(x + 8 \* j \* ldx + KS \* ki, whole) : make_uint4(0u, 0u, 0u, 0u);|            b[ki][j] = make_uint4(threadIdx.x + ki, j, n0, k0);  // no_b.sed|
