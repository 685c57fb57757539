# warp_wait.sed (bench/NOTES.md section 106): the grid barrier's wait polled by lane 0 of every warp, each warp going
# on to its own operand loads after its __syncwarp, instead of one thread polling and the block meeting at
# __syncthreads (the arrival keeps its __syncthreads, which orders the shared partial sums between steps). Results
# real: does the block barrier after the poll cost the step's loads a wake-up?
/^RNN_DEV void rnn_grid_wait(unsigned \*count, unsigned epoch) {$/,/^}$/{
s|^    if (threadIdx.x == blockDim.x - 1) {$|    if ((threadIdx.x \& 31) == 0) {  // warp_wait.sed: every warp's lane 0|
s|^    __syncthreads();$|    __syncwarp();  // warp_wait.sed|
}
