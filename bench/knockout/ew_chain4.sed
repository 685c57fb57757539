# the backward's adjoint chain out, the recompute kept: each gate's adjoint is the seed d(h') plus its gate (four values, four 16-bit twins converted), d(c) the seed d(c') plus c'
/backward through the values, last to first/,/d16 += d17 \* rnn_dop_add_1/c\
                d15 = d16 = d39_h_next + v19_i; d20 = d21 = d39_h_next + v24_f; d25 = d26 = d39_h_next + v29_g; d30 = d31 = d39_h_next + v34_o; d2_c = d37_c_next + v37_c_next + v38;
