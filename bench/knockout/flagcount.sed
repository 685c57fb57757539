# bench/knockout/flagcount.sed: a forward handed off by flagged words (RNNCC_PERSIST_HANDOFF=flags,
# clusters of 1) that first counts its blocks' arrivals relaxed: each block adds 1 to the barrier's
# counter (red.relaxed: no wait for its stores) once its words of step t-1 are issued, and waits,
# polling relaxed from its last thread, until every block has, before staging the words. The words
# still say themselves whether they have arrived (rnn_flag_stage16 re-reads a stale one), so results
# are real (`rnncc run` checks them); the count only keeps the staging from polling 24-48 KB of words
# a block before they can have landed. bench/NOTES.md section 68, Next 3.
#   RNNCC_PERSIST_HANDOFF=flags RNNCC_PERSIST_CLUSTER=1 KNOCKOUT_FORWARD=1 bash bench/knockout/run.sh ROUNDS "CELL ..." none flagcount
s|^\( *\)// no barrier: step t-1's states arrive as flagged words, each saying itself that it has (persist.cuh)|\1if (t > args.t) { __syncthreads(); if (threadIdx.x == 0) asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(args.sync) : "memory"); }  // knockout flagcount: arrive, relaxed|
0,/^\( *\)rnn_mv_mma</s//\1if (t > args.t) { if (threadIdx.x == blockDim.x - 1) { const unsigned target = (unsigned)(t - args.t) * gridDim.x; unsigned v; do { asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(args.sync) : "memory"); } while ((int)(v - target) < 0); } __syncthreads(); }  \/\/ knockout flagcount: every block's words issued\n\1rnn_mv_mma</
