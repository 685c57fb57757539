#!/usr/bin/env bash
# bench/jit_fresh.sh [BENCH_RNN...] (device): where a cold rnncc_model_create's time goes on a freshly started
# machine. Meant as a session's first device call: on a fresh machine the first creates took 921-1003 ms, on one in
# use 139-409 (bench/NOTES.md sections 100 and 101). Runs bench_rnn's JIT measurement (the quick shape, LSTM and GRU,
# fp32: sources new to NVRTC, rnncc's own cache empty) with each BENCH_RNN given (default build/bench/bench_rnn; say
# build/patches/base/bench_rnn build/patches/NAME/bench_rnn for an A/B) in four rounds: as the machine comes (the
# first GPU process), again, with CUDA_CACHE_PATH a new folder each run and with CUDA_CACHE_DISABLE=1 (the device's NVRTC
# reuses compiles across processes, section 26, and libnvrtc reads the CUDA cache's variables: whether that cache is
# where it keeps them, and an empty one what a fresh machine pays, is what these two rounds tell); then the CUDA
# cache's size and a cold read of a large file no run touched (the disk's speed when cold). Prints each round's JIT
# lines. Exit 2 on a BENCH_RNN that is not an executable.
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -gt 0 ] || set -- build/bench/bench_rnn
for b in "$@"; do
    [ -x "$b" ] || { echo "jit_fresh.sh: $b is not an executable (usage: bash bench/jit_fresh.sh [BENCH_RNN...])" >&2; exit 2; }
done
t0=$(date +%s.%N)
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
mark() { echo "[$(since "$t0") s] $*"; }
# round NAME [empty | VAR=VALUE...]: each bench_rnn's JIT lines with the variables set (empty: CUDA_CACHE_PATH a
# new empty folder for each run, its size after the run printed)
round() {
    local name=$1 b cache="" vars
    shift
    for b in "${BENCHES[@]}"; do
        mark "$name: $b"
        vars=("$@")
        if [ "${1:-}" = empty ]; then cache=$(mktemp -d) && vars=(CUDA_CACHE_PATH="$cache"); fi
        out=$(env "${vars[@]}" "$b" --config quick --cell lstm,gru --precision fp32 --algo STD --mode inference --repeat 1 --warmup 1 2>&1)
        if grep -q '^JIT' <<< "$out"; then grep '^JIT' <<< "$out" | sed 's/: sources new to NVRTC)/)/'; else tail -2 <<< "$out"; fi
        if [ -n "$cache" ]; then echo "its CUDA cache folder after the run: $(du -sh "$cache" | cut -f1)"; rm -rf "$cache"; fi
    done
}
BENCHES=("$@")
mark "machine: up $(cut -d' ' -f1 /proc/uptime) s; $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader 2>&1)"
echo "CUDA cache before: $(du -sh ~/.nv/ComputeCache 2>&1 | cut -f1)"
round first
round again
round "CUDA cache empty" empty
round "CUDA cache off" CUDA_CACHE_DISABLE=1
echo "CUDA cache after: $(du -sh ~/.nv/ComputeCache 2>&1 | cut -f1)"
big=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cuda.so'))" 2>/dev/null)
if [ -f "$big" ]; then
    s=$(date +%s.%N)
    bytes=$(stat -c %s "$big")
    cat "$big" > /dev/null
    mark "cold read of $big: $((bytes >> 20)) MB in $(since "$s") s"
fi
