set -u
export RNNCC_CACHE_DIR=/tmp/rnncc-cache
echo "=== gpu tests"; ./build/tests/check_runtime 2>&1 | tail -3
echo "=== sanitizers (persistent, training)"
for tool in racecheck synccheck initcheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 ./build/rnncc run cells/mlstm.cell --dim I=16 --dim H=24 --dim M=20 --seq 5 --batch 3 --layers 2 --bidirectional --varlen --train --repeat 1 --backend persistent > $OUT/san-$tool.log 2>&1; echo "$tool mlstm: exit $?"; tail -2 $OUT/san-$tool.log
  compute-sanitizer --tool $tool --error-exitcode 9 ./build/rnncc run cells/lstm.cell --dim I=16 --dim H=40 --seq 4 --batch 5 --varlen --train --repeat 1 --backend persistent > $OUT/san2-$tool.log 2>&1; echo "$tool lstm: exit $?"; tail -1 $OUT/san2-$tool.log
done
echo "=== profile"
RNNCC_PROFILE_PERSIST=1 ./build/bench/persist_profile cells/lstm.cell --dim I=1024 --dim H=1024 -T 100 -N 4 --train
echo "=== bench fp32"
timeout 330 ./build/bench/bench_rnn --precision fp32 --repeat 10 --warmup 3 --budget 300 --summary $OUT/sum4.txt --markdown $OUT/b4.md > $OUT/b4.log 2>&1
cat $OUT/sum4.txt
