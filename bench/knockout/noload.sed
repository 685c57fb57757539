# no load of the backward's transposed weights in the prologue (shared memory keeps whatever it held): bounds
# what the load costs a pass (time whole passes at short T, not steps; bench/NOTES.md section 118)
s/^\( *\)\(else \)\{0,1\}rnn_load_transposed\(_sets\)\{0,1\}<[^>]*>(.*);$/\1\2{}  \/\/ (noload.sed: no rnn_load_transposed)/
