# no 16-bit twin stores of the element-wise phase's adjoints (d(gates))
/rnn_put16(a\.dbuf16/d
