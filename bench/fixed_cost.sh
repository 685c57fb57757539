#!/usr/bin/env bash
# bench/fixed_cost.sh (device): each side's time a step and its pass's fixed cost, best cuDNN against rnncc, from
# bench_rnn at two lengths (--steps T1, then T2; every other argument passed on), through bench/tools/fixed_cost.py:
# a ratio at a short T may be the fixed cost's, not the step's (bench/NOTES.md section 112). Prints both runs'
# tables' rows and the slopes and intercepts; the two markdown tables stay in $OUT (else build/bench/out).
#   bash bench/fixed_cost.sh T1 T2 [BENCH_RNN ARGS...]
#   bash bench/fixed_cost.sh 25 100 --config deepbench --cell lstm --precision fp16 --algo PS --mode training
# BENCH_RNN: the program (default build/bench/bench_rnn). Exit: 0, 1 a run failed, 2 usage.
set -u
cd "$(dirname "$0")/.." || exit 2
usage() { sed -n '6,8p' "$0" | sed 's/^# //' >&2; exit 2; }
[ $# -ge 2 ] || usage
t1=$1 t2=$2
shift 2
for t in "$t1" "$t2"; do case $t in '' | *[!0-9]*) echo "fixed_cost.sh: T1 and T2 are step counts, not '$t'" >&2; usage ;; esac; done
[ "$t1" != "$t2" ] || { echo "fixed_cost.sh: T1 and T2 must differ" >&2; exit 2; }
bench=${BENCH_RNN:-build/bench/bench_rnn}
[ -x "$bench" ] || { echo "fixed_cost.sh: $bench is not an executable (make bench, here)" >&2; exit 2; }
out=${OUT:-build/bench/out}
mkdir -p "$out"
for t in "$t1" "$t2"; do
    rm -f "$out/steps-$t.md"
    "$bench" "$@" --steps "$t" --markdown "$out/steps-$t.md" > "$out/steps-$t.log" 2>&1
    rc=$?
    grep -E '^\| [^ ]+@[0-9]+ \(' "$out/steps-$t.md" 2>/dev/null
    [ $rc -eq 0 ] || { echo "fixed_cost.sh: bench_rnn at T = $t exited $rc (its log: $out/steps-$t.log)"; tail -5 "$out/steps-$t.log"; exit 1; }
done
python3 bench/tools/fixed_cost.py "$out/steps-$t1.md" "$out/steps-$t2.md"
