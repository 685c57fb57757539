# bench/knockout/peepconst.sed: a peephole LSTM's persistent forward whose peephole weights p_i, p_f, p_o
# (three parameter loads an item) are constants. Results wrong; only the time counts (bench/NOTES.md
# section 87).
/ q1_v1[123]_p_[ifo] = a\.params/s/= a\..*;/= 0.5f;/
s/: a\.params\[83886[0-9]* + j\];  \/\/ param p_\([ifo]\)/: 0.5f;  \/\/ param p_\1/
s/: a\.params\[838963[0-9]* + j\];  \/\/ param p_\([ifo]\)/: 0.5f;  \/\/ param p_\1/
s/: a\.params\[83906[0-9]* + j\];  \/\/ param p_\([ifo]\)/: 0.5f;  \/\/ param p_\1/
