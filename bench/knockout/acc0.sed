# the products' results stored, not added to what the slot held (rnn_mv_finish / rnn_split_finish)
s/\*o = acc ? \*o + v : v;/*o = v;/g
