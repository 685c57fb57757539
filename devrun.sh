export RNNCC_CACHE_DIR=/tmp/rc
build/bench/bench_rnn --config large,fastrnns,deepbench,fastrnns_l2,fastrnns_bi --cell lstm,gru --precision fp32,tf32 --budget 400 --markdown $OUT/results.md --summary $OUT/summary.txt > $OUT/bench.log 2>&1; echo bench rc=$?
tail -25 $OUT/summary.txt
for c in threads graphs; do CK_RUN_CASE=$c build/tests/check_runtime 2>&1 | tail -1; done
compute-sanitizer --tool memcheck --error-exitcode 9 build/rnncc run cells/mlstm.cell --dim I=16 --dim H=32 --dim M=24 --seq 6 --batch 3 --layers 2 --train --backend cublas --repeat 2 > $OUT/memcheck.log 2>&1; echo memcheck-cublas rc=$?; tail -3 $OUT/memcheck.log
compute-sanitizer --tool memcheck --error-exitcode 9 build/rnncc run cells/gru.cell --dim I=16 --dim H=32 --seq 6 --batch 3 --bidirectional --varlen --train --backend cublas --repeat 2 > $OUT/memcheck2.log 2>&1; echo memcheck-cublas-bi rc=$?; tail -3 $OUT/memcheck2.log
