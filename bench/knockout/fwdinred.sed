# bench/knockout/fwdinred.sed: a training forward whose step product keeps its sums in red only, as
# inference does (RNN_IN_RED): the pass over red that adds them up again and the stores of the step
# GEMM's output for the backward are gone. Results wrong (the backward reads stale products): only
# the time counts, a bound on what writing them costs a training step (bench/NOTES.md section 69).
# Since d26d046 the units a barrier hands off in do this and store the sums late (fwddefer.sed).
#   KNOCKOUT_FORWARD=train bash bench/knockout/run.sh ROUNDS "CELL ..." none fwdinred
s/args\.buf_step\[1\] == 0 ? RNN_IN_RED : RNN_TO_OUT/RNN_IN_RED/
