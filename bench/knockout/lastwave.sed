# a tile staged in waves (persist.cuh rnn_stage_copies) not waited for past its first waves: the last wave's
# wait for its copies taken out (the block's __syncthreads stays), so the product reads that quarter before it lands
s/    case 0: rnn_cp_wait_all(); break;/    case 0: break;/
