# the element-wise phase's math out, its loads (issued together) and stores kept: each item's adjoints are its seeds' sum
/the forward's values, recomputed/,/d16 += d17 \* rnn_dop_add_1/c\
                d15 = d16 = d20 = d21 = d25 = d26 = d30 = d31 = d39_h_next + d37_c_next; d2_c = d37_c_next;
