#!/usr/bin/env bash
# Microseconds per step of rnncc's two backends on the issue's configurations (LSTM and GRU,
# fp32 and tf32, inference and training), through `rnncc run --no-check` (median of R runs).
# Usage (repository root, on the device): bash bench/persist_steps.sh [R [CONFIG...]]
# (CONFIG: small_b4, ds2, deepbench, flashrnn, fastrnns; default all of them)
set -u
R=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
known=" small_b4 ds2 deepbench flashrnn fastrnns "
want=" ${*:-small_b4 ds2 deepbench flashrnn fastrnns} "
for c in $want; do
    [[ $known == *" $c "* ]] || { echo "persist_steps.sh: error: unknown configuration '$c' (known:$known)" >&2; exit 2; }
done
export RNNCC_CACHE_DIR=${RNNCC_CACHE_DIR:-/tmp/rnncc-cache}
printf '%-10s %-5s %-6s %-9s %10s %10s\n' config cell mode precision cublas persistent
for cfg in "small_b4 100 4 1024" "ds2 300 20 800" "deepbench 25 32 1024" "flashrnn 1024 16 768" "fastrnns 100 64 512"; do
    set -- $cfg
    [[ $want == *" $1 "* ]] || continue
    for cell in lstm gru; do
        for mode in infer train; do
            for prec in fp32 tf32; do
                extra=""; [ $mode = train ] && extra=--train
                t=()
                for be in cublas persistent; do
                    line=$(./build/rnncc run cells/$cell.cell --dim I=$4 --dim H=$4 --seq $2 --batch $3 --precision $prec \
                        --backend $be --no-check --repeat $R $extra 2>&1 | grep 'us per step')
                    t+=("$(echo "$line" | sed -n 's/.*, \([0-9.]*\) us per step.*/\1/p')")
                done
                printf '%-10s %-5s %-6s %-9s %10s %10s\n' $1 $cell $mode $prec "${t[0]:-fail}" "${t[1]:-fail}"
            done
        done
    done
done
