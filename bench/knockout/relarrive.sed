# bench/knockout/relarrive.sed: the grid barrier's arrival relaxed (red.relaxed.gpu: no wait for the
# block's stores to reach L2 before the counter moves); forward or backward units. Wrong ordering,
# results may be stale: only the time counts, a bound on what the release's wait costs a step, which
# a hand-off by self-validating (tagged) words after a relaxed count could save (bench/NOTES.md
# section 68, Next). KNOCKOUT_FORWARD=1 bash bench/knockout/run.sh ROUNDS "CELL ..." none relarrive
/^RNN_DEV void rnn_grid_arrive(unsigned \*count) {/,/^}/s/red\.release\.gpu\.global\.add\.u32/red.relaxed.gpu.global.add.u32/
