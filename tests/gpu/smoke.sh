#!/usr/bin/env bash
# Device smoke run: every shipped cell through `rnncc run` (GPU forward checked against the
# double-precision reference) in several configurations. Run on the GPU machine from the
# repository root, after building here: bash tests/gpu/smoke.sh
set -u
R=./build/rnncc
fail=0
run() { echo "+ rnncc run $*"; $R run "$@" --repeat 3 || { echo "FAILED: $*"; fail=1; }; }
$R devices
for c in lstm gru peephole cifg indrnn sru mgu; do
  run cells/$c.cell --dim I=32 --dim H=64 --seq 20 --batch 5
done
run cells/lstmp.cell --dim I=32 --dim H=64 --dim P=24 --seq 20 --batch 5
run cells/mlstm.cell --dim I=32 --dim H=64 --dim M=48 --seq 20 --batch 5
run cells/lstm.cell --dim I=37 --dim H=37 --seq 9 --batch 3 --layers 3 --bidirectional --varlen
run cells/gru.cell --dim I=16 --dim H=37 --seq 1 --batch 1
run cells/lstm.cell --dim I=512 --dim H=512 --seq 100 --batch 64 --precision tf32
RNNCC_GRAPHS=0 run cells/gru.cell --dim I=16 --dim H=32 --seq 7 --batch 4 --layers 2 --bidirectional --varlen
echo "smoke: $([ $fail = 0 ] && echo all passed || echo FAILURES)"
exit $fail
