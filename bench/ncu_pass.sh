#!/usr/bin/env bash
# bench/ncu_pass.sh (device): where one pass of `rnncc run` goes, kernel by kernel (bench/NOTES.md section 85).
# ncu (each kernel alone, clocks free, gpu__time_duration) over `rnncc run ARGS... --repeat 1 --no-check` with the
# persistent kernels in clusters of 1 (ncu cannot launch clusters: LaunchFailed) and rule tiles; prints the last
# pass's kernels in launch order, from K launches before the last launch of kernel FROM, and their sum (a sum of
# kernels run alone: more than a pass that overlaps them), then every kernel's count and total.
#   bash bench/ncu_pass.sh FROM K CSV ARGS...
#   bash bench/ncu_pass.sh rnncc_lstmp_p 6 $OUT/lstmp.csv cells/lstmp.cell --dim I=1024 --dim H=1024 --dim P=512 \
#        --batch 32 --seq 25 --precision fp16 --train
set -u
[ $# -ge 4 ] || { sed -n '2,9p' "$0"; exit 2; }
from=$1 back=$2 csv=$3
shift 3
cd "$(dirname "$0")/.." || exit 2
RNNCC_PERSIST_SEARCH=0 RNNCC_PERSIST_CLUSTER=1 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    ./build/rnncc run "$@" --repeat 1 --no-check > "$csv" 2> "$csv.err" || { echo "ncu_pass: ncu failed (rc $?): $csv.err"; tail -5 "$csv.err"; exit 1; }
echo "== one pass, from $back launches before the last $from"
python3 bench/tools/kernel_times.py "$csv" --from "$from" --back "$back"
echo "== every kernel of the process (the passes, GEMM timing candidates among them)"
python3 bench/tools/kernel_times.py "$csv"
