#!/usr/bin/env bash
# bench/patches/ab.sh (device): ms a pass of each rnncc that bench/patches/build.sh built, at the rows
# bench/NOTES.md section 73 measured (persistent backend and fp16 unless said, tiles forced where said,
# `rnncc run --no-check`), the binaries in turn and then in reverse, ROUNDS times (default 1).
#   bash bench/patches/ab.sh [ROUNDS] [fold]
# fold: instead, LSTMP folded where the fold's fixed costs show (tf32 at small_b4, T = 25 and 100, and
# deepbench; fp16 there with the weights kept and in training; fp32 at fastrnns), inference and training,
# for the knockouts of bench/patches/fold_ko (section 83) and section 84's changes.
set -u
cd "$(dirname "$0")/../.."
rounds=${1:-1}
bins=(build/patches/*/rnncc)
[ -x "${bins[0]}" ] || { echo "ab.sh: no build/patches/*/rnncc (bash bench/patches/build.sh, here)" >&2; exit 2; }
export RNNCC_CACHE_DIR=${RNNCC_CACHE_DIR:-$(mktemp -d)} RNNCC_PERSIST_SEARCH=0
flags="RNNCC_PERSIST_HANDOFF=flags RNNCC_PERSIST_CLUSTER=1"
rows=(
    "LSTMP flashrnn flags tile|$flags RNNCC_PERSIST_BLOCKS=96|cells/lstmp.cell --dim I=768 --dim H=768 --dim P=384 --batch 16 --seq 256 --repeat 30"
    "LSTMP flashrnn rule tile||cells/lstmp.cell --dim I=768 --dim H=768 --dim P=384 --batch 16 --seq 256 --repeat 30"
    "mLSTM small_b4 flags tile|$flags RNNCC_PERSIST_BLOCKS=128 RNNCC_PERSIST_SEQS=8|cells/mlstm.cell --dim I=1024 --dim H=1024 --dim M=1024 --batch 4 --seq 100 --repeat 50"
    "LSTM flashrnn||cells/lstm.cell --dim I=768 --dim H=768 --batch 16 --seq 256 --repeat 30"
    "GRU flashrnn||cells/gru.cell --dim I=768 --dim H=768 --batch 16 --seq 256 --repeat 30"
    "LSTM deepbench inference||cells/lstm.cell --dim I=1024 --dim H=1024 --batch 32 --seq 25 --repeat 50"
    "LSTM deepbench training||cells/lstm.cell --dim I=1024 --dim H=1024 --batch 32 --seq 25 --repeat 50 --train"
    "LSTM small_b4 inference||cells/lstm.cell --dim I=1024 --dim H=1024 --batch 4 --seq 100 --repeat 50"
    "LSTM small_b4 fp32 inference||cells/lstm.cell --dim I=1024 --dim H=1024 --batch 4 --seq 100 --repeat 50 --precision fp32"
    "LSTM small_b4 flags tile|RNNCC_PERSIST_HANDOFF=flags|cells/lstm.cell --dim I=1024 --dim H=1024 --batch 4 --seq 100 --repeat 50"
)
[ "${2:-}" = fold ] && rows=(
    "LSTMP small_b4 T=25 inference||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 4 --seq 25 --repeat 50 --precision tf32"
    "LSTMP small_b4 T=25 training||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 4 --seq 25 --repeat 50 --precision tf32 --train"
    "LSTMP small_b4 inference||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 4 --seq 100 --repeat 50 --precision tf32"
    "LSTMP small_b4 training||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 4 --seq 100 --repeat 50 --precision tf32 --train"
    "LSTMP deepbench inference||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 32 --seq 25 --repeat 50 --precision tf32"
    "LSTMP deepbench training||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 32 --seq 25 --repeat 50 --precision tf32 --train"
    "LSTM small_b4 T=25 inference (no fold: unchanged)||cells/lstm.cell --dim I=1024 --dim H=1024 --batch 4 --seq 25 --repeat 50 --precision tf32"
    "LSTMP small_b4 T=25 fp16 inference, weights kept||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 4 --seq 25 --repeat 50 --precision fp16 --keep-half-weights"
    "LSTMP deepbench fp16 inference, weights kept||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 32 --seq 25 --repeat 50 --precision fp16 --keep-half-weights"
    "LSTMP deepbench fp16 training||cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 --batch 32 --seq 25 --repeat 50 --precision fp16 --train"
    "LSTMP fastrnns fp32 inference (folded by the rule)||cells/lstmp.cell --dim I=512 --dim H=512 --dim P=256 --batch 64 --seq 100 --repeat 20 --precision fp32 --backend auto"
    "LSTMP fastrnns fp32 training||cells/lstmp.cell --dim I=512 --dim H=512 --dim P=256 --batch 64 --seq 100 --repeat 20 --precision fp32 --train --backend auto"
)
echo "binaries: ${bins[*]}"
for row in "${rows[@]}"; do
    IFS='|' read -r name envs args <<< "$row"
    case $args in *--precision*) ;; *) args="$args --precision fp16" ;; esac
    case $args in *--backend*) ;; *) args="$args --backend persistent" ;; esac
    line="$name:"
    for r in $(seq "$rounds"); do
        for b in "${bins[@]}" $(printf '%s\n' "${bins[@]}" | tac); do
            ms=$(env $envs "$b" run $args --no-check 2>&1 | grep -oE '[0-9.]+ ms per' | cut -d' ' -f1)
            line="$line $(basename "$(dirname "$b")")=${ms:-FAILED}"
        done
    done
    echo "$line"
done
