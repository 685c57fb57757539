# bench/knockout/poll0.sed: the grid barrier polled by thread 0 again, as before 1033719 (bench/NOTES.md
# section 67); forward or backward units. Results are real.
/^RNN_DEV void rnn_grid_wait(unsigned \*count, unsigned epoch) {/,/^}/s/if (threadIdx\.x == blockDim\.x - 1) {/if (threadIdx.x == 0) {/
