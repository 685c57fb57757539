# the backward's 16-bit twins of d(gates) stored without their conversions (a constant's bits), the fp32 adjoints and the chain kept
/the adjoints of the values read here, added where the values came from/,/RNN_PROF(4)/ s/rnn_put16(\(a\.dbuf16\[[0-9]\] + ([^;]*\)), d[0-9]*, \(a\.bf16\|[01]\));/*(\1)) = (unsigned short)0x3c00;/
