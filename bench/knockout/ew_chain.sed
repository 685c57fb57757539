# the backward's adjoint chain out, the recompute (its transcendentals, c' and h') kept: every adjoint is the seeds' sum plus h' (so that the recompute stays live), one value, so its 16-bit twins are one conversion
/backward through the values, last to first/,/d16 += d17 \* rnn_dop_add_1/c\
                d15 = d16 = d20 = d21 = d25 = d26 = d30 = d31 = d39_h_next + d37_c_next + v39_h_next; d2_c = d37_c_next;
