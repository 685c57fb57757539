# bench/knockout/lastarrive.sed: the grid barrier's arrival made by the block's last thread too (the
# thread that polls since 1033719), so that the polling warp is also the one whose release waits and
# thread 0's warp issues its items' loads at once; forward or backward units. To try against small_b4's
# 1.5% (bench/NOTES.md section 67, Next 3), beside poll0.sed. Results are real.
/^RNN_DEV void rnn_grid_arrive(unsigned \*count) {/,/^}/s/if (threadIdx\.x == 0) asm volatile("red\.release/if (threadIdx.x == blockDim.x - 1) asm volatile("red.release/
