set -u
export RNNCC_CACHE_DIR=/tmp/rnncc-cache
cat .commit; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
echo "=== gpu tests"; time ./build/tests/check_runtime 2>&1 | tail -15
echo "=== profile"
export RNNCC_PROFILE_PERSIST=1
./build/bench/persist_profile cells/lstm.cell --dim I=1024 --dim H=1024 -T 100 -N 4 --train
./build/bench/persist_profile cells/lstm.cell --dim I=512 --dim H=512 -T 100 -N 64 --train
./build/bench/persist_profile cells/gru.cell --dim I=1024 --dim H=1024 -T 100 -N 4
unset RNNCC_PROFILE_PERSIST
echo "=== bench"
./build/bench/bench_rnn --config small_b4,fastrnns,deepbench --precision fp32 --repeat 10 --warmup 3 --budget 200 --summary $OUT/sum1.txt --markdown $OUT/b1.md 2>&1 | grep -E "backend|ratio|\*\*\*|rnncc " | head -40
cat $OUT/sum1.txt
