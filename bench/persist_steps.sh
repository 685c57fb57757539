#!/usr/bin/env bash
# Microseconds per step of rnncc's backends on the issue's configurations (LSTM and GRU,
# inference and training), through `rnncc run --no-check` (median of R runs), and optionally of a
# second build beside it (A/B), each configuration's runs interleaved.
# Usage (repository root, on the device): bash bench/persist_steps.sh [R [CONFIG...]]
#   CONFIG: small_b4, ds2, deepbench, flashrnn, fastrnns (default all of them)
#   PRECS="fp32 tf32" (default; also fp16, bf16)   BACKENDS="cublas persistent" (default; also auto)
#   BASE=build/rnncc_base: a second rnncc binary, timed before build/rnncc in every cell of the table
#   (columns "base/backend" and "backend", then their ratio new / base)
set -u
R=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
known=" small_b4 ds2 deepbench flashrnn fastrnns "
want=" ${*:-small_b4 ds2 deepbench flashrnn fastrnns} "
for c in $want; do
    [[ $known == *" $c "* ]] || { echo "persist_steps.sh: error: unknown configuration '$c' (known:$known)" >&2; exit 2; }
done
PRECS=${PRECS:-fp32 tf32}
BACKENDS=${BACKENDS:-cublas persistent}
BASE=${BASE:-}
for p in $PRECS; do
    [[ " fp32 tf32 fp16 bf16 " == *" $p "* ]] || { echo "persist_steps.sh: error: PRECS: unknown precision '$p'" >&2; exit 2; }
done
for b in $BACKENDS; do
    [[ " auto cublas persistent " == *" $b "* ]] || { echo "persist_steps.sh: error: BACKENDS: unknown backend '$b'" >&2; exit 2; }
done
if [ -n "$BASE" ] && [ ! -x "$BASE" ]; then echo "persist_steps.sh: error: BASE: '$BASE' is not an executable" >&2; exit 2; fi
export RNNCC_CACHE_DIR=${RNNCC_CACHE_DIR:-/tmp/rnncc-cache}
# us_per_step BINARY BACKEND ARGS...: the run's microseconds a step, or "fail"
us_per_step() {
    local bin=$1 be=$2 line; shift 2
    line=$("$bin" run "$@" --backend "$be" --no-check --repeat "$R" 2>&1 | grep 'us per step')
    line=$(echo "$line" | sed -n 's/.*, \([0-9.]*\) us per step.*/\1/p')
    echo "${line:-fail}"
}
header=$(printf '%-10s %-5s %-6s %-9s' config cell mode precision)
for be in $BACKENDS; do
    if [ -n "$BASE" ]; then header+=$(printf ' %16s %12s %6s' "base/$be" "$be" new/base); else header+=$(printf ' %12s' "$be"); fi
done
echo "$header"
for cfg in "small_b4 100 4 1024" "ds2 300 20 800" "deepbench 25 32 1024" "flashrnn 1024 16 768" "fastrnns 100 64 512"; do
    set -- $cfg
    [[ $want == *" $1 "* ]] || continue
    for cell in lstm gru; do
        for mode in infer train; do
            for prec in $PRECS; do
                args=(cells/$cell.cell --dim I=$4 --dim H=$4 --seq $2 --batch $3 --precision $prec)
                [ $mode = train ] && args+=(--train)
                row=$(printf '%-10s %-5s %-6s %-9s' $1 $cell $mode $prec)
                for be in $BACKENDS; do
                    if [ -n "$BASE" ]; then
                        a=$(us_per_step "$BASE" $be "${args[@]}")
                        b=$(us_per_step ./build/rnncc $be "${args[@]}")
                        ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", b / a; else print "-" }')
                        row+=$(printf ' %16s %12s %6s' "$a" "$b" "$ratio")
                    else
                        row+=$(printf ' %12s' "$(us_per_step ./build/rnncc $be "${args[@]}")")
                    fi
                done
                echo "$row"
            done
        done
    done
done
