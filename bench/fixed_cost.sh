#!/usr/bin/env bash
# bench/fixed_cost.sh (device): each side's time a step and its pass's fixed cost, best cuDNN against rnncc, from
# bench_rnn at two lengths (--steps T1, then T2; every other argument passed on), through bench/tools/fixed_cost.py:
# a ratio at a short T may be the fixed cost's, not the step's (bench/NOTES.md section 112). Prints both runs' rows
# and the slopes and intercepts; the two markdown tables and logs stay in $OUT (else build/bench/out).
#   bash bench/fixed_cost.sh T1 T2 [BENCH_RNN ARGS...]
#   bash bench/fixed_cost.sh 25 100 --config deepbench --cell lstm --precision fp16 --algo PS --mode training
# BENCH_RNN: the program (default build/bench/bench_rnn). Relative paths in BENCH_RNN and OUT are the caller's.
# Exit: 0; 1 a run failed or disagreed (its rows still read where it wrote any); 2 usage; 77 no CUDA device.
set -u
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
usage() { sed -n '6,8p' "$self" | sed 's/^# //' >&2; exit 2; }
[ $# -ge 2 ] || usage
t1=$1 t2=$2
shift 2
for t in "$t1" "$t2"; do
    case $t in '' | *[!0-9]*) echo "fixed_cost.sh: T1 and T2 are step counts, not '$t'" >&2; usage ;; esac
    [ ${#t} -le 6 ] && [ $((10#$t)) -ge 1 ] && [ $((10#$t)) -le 100000 ] || { echo "fixed_cost.sh: a step count is 1 to 100000, not '$t'" >&2; exit 2; }
done
t1=$((10#$t1)) t2=$((10#$t2))
[ "$t1" -ne "$t2" ] || { echo "fixed_cost.sh: T1 and T2 must differ" >&2; exit 2; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
bench=$(abs "${BENCH_RNN:-$(dirname "$self")/../build/bench/bench_rnn}")
out=$(abs "${OUT:-$(dirname "$self")/../build/bench/out}")
cd "$(dirname "$self")/.." || exit 2
[ -x "$bench" ] || { echo "fixed_cost.sh: $bench is not an executable (make bench, here)" >&2; exit 2; }
mkdir -p "$out" || exit 2
status=0
for t in "$t1" "$t2"; do
    rm -f "$out/steps-$t.md"
    "$bench" "$@" --steps "$t" --markdown "$out/steps-$t.md" > "$out/steps-$t.log" 2>&1
    rc=$?
    [ $rc -ne 77 ] || { echo "fixed_cost.sh: no CUDA device ($out/steps-$t.log)"; exit 77; }
    [ -s "$out/steps-$t.md" ] || { echo "fixed_cost.sh: bench_rnn at T = $t (exit $rc) wrote no table (its log: $out/steps-$t.log)"; tail -5 "$out/steps-$t.log"; exit 1; }
    [ $rc -eq 0 ] || { echo "fixed_cost.sh: bench_rnn at T = $t exited $rc (its log: $out/steps-$t.log); its rows are read as they are"; status=1; }
done
python3 bench/tools/fixed_cost.py "$out/steps-$t1.md" "$out/steps-$t2.md" || exit 1
exit $status
