# bench/knockout/fwd_q1.sed: a persistent forward unit whose element-wise code's first-item loads
# (the hoisted values, parameters and states loaded between the barrier's halves, q1_*) are constants.
# Results wrong; only the time counts (bench/NOTES.md section 67: 0.30 us of a flashrnn step before
# the poll moved, 0.04 after). KNOCKOUT_FORWARD=1 bash bench/knockout/run.sh ... fwd_q1
/^ *q1_v[0-9a-z_]* = a\./s/= a\..*;/= 0.5f;/
