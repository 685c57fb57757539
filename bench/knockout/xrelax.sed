# the split exchange's cluster meeting with a relaxed arrival (no GPU-wide fence before it; wrong ordering: a bound only)
/    const int ro = sp->ro, rank = (int)rnn_cluster_rank();/,/sp->uses++;/ s/    rnn_cluster_sync();/    asm volatile("barrier.cluster.arrive.relaxed.aligned;\\n\\tbarrier.cluster.wait.aligned;" ::: "memory");/
