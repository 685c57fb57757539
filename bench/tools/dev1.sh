set -u
export RNNCC_CACHE_DIR=/tmp/rnncc-cache
echo "=== gpu tests"; ./build/tests/check_runtime 2>&1 | tail -4
echo "=== profile"
export RNNCC_PROFILE_PERSIST=1
./build/bench/persist_profile cells/lstm.cell --dim I=1024 --dim H=1024 -T 100 -N 4 --train
./build/bench/persist_profile cells/lstm.cell --dim I=768 --dim H=768 -T 100 -N 16 --train
./build/bench/persist_profile cells/lstm.cell --dim I=512 --dim H=512 -T 100 -N 64 --train
unset RNNCC_PROFILE_PERSIST
echo "=== bench auto"
timeout 300 ./build/bench/bench_rnn --config small_b4,deepbench,fastrnns,flashrnn,ds2 --precision fp32 --repeat 10 --warmup 3 --budget 250 --summary $OUT/sum2.txt --markdown $OUT/b2.md > $OUT/b2.log 2>&1
cat $OUT/sum2.txt
echo "=== bench forced persistent (training)"
RNNCC_BACKEND=persistent timeout 120 ./build/bench/bench_rnn --config deepbench,fastrnns,flashrnn,ds2 --cell lstm --precision fp32 --mode training --algo STD --repeat 5 --warmup 2 --budget 100 --summary $OUT/sum3.txt > $OUT/b3.log 2>&1
cat $OUT/sum3.txt
