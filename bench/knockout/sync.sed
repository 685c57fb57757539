# no grid barrier in the step (the epoch still counts): the backward's whole barrier, or its halves where
# the prefetch of step t-1's values lies between them (bench/NOTES.md section 108)
s/rnn_grid_sync(args\.sync, ++epoch);/++epoch;/
s/rnn_grid_arrive(args\.sync);  \/\/ the barrier below/\/\/ (sync.sed: no arrival) the barrier below/
s/rnn_grid_wait(args\.sync, ++epoch);  \/\/ the transposed/++epoch;  \/\/ the transposed/
