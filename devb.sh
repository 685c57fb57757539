#!/usr/bin/env bash
export RNNCC_CACHE_DIR=/tmp/rc
date -u > $OUT/env.txt; nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader >> $OUT/env.txt
for s in 1 0; do
  RNNCC_PERSIST_SEARCH=$s timeout 280 ./build/bench/bench_rnn --config small_b4,ds2,deepbench,flashrnn,fastrnns --cell lstm,gru \
     --precision fp32,tf32 --budget 250 --markdown $OUT/results_s$s.md --summary $OUT/summary_s$s.txt > $OUT/bench_s$s.log 2>&1
  echo "search=$s rc=$?" >> $OUT/env.txt
done
cat $OUT/env.txt; cat $OUT/summary_s1.txt | head -60
