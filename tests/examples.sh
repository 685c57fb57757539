#!/usr/bin/env bash
# Runs the example programs (built beforehand by `make examples`) from the repository root:
# embed_lstm, then train_adding with the LSTM and with the GRU, in fp32, then the LSTM in fp16 and the GRU
# in bf16 (Adam writing the model's 16-bit weights). Each one's output is shown,
# then a line "ok", "SKIPPED" (it exited 77: no CUDA device) or "FAILED".
# Usage: bash tests/examples.sh [BUILD_DIR]     (default: $B, else build)
# Exit status: 0 when every example passed or was skipped; 1 when one failed or is not built.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-${B:-build}}
fail=0
summary=()

run() { # run NAME ARGS...: runs $B/examples/NAME ARGS... and records the outcome
    local name=$1; shift
    local exe=$B/examples/$name label="$name${*:+ $*}" rc
    if [ ! -x "$exe" ]; then
        echo "examples.sh: $exe is not built (run: make examples)" >&2
        summary+=("FAILED   $label (not built)"); fail=1; return
    fi
    echo "=== $label"
    "$exe" "$@"; rc=$?
    case $rc in
        0)  summary+=("ok       $label") ;;
        77) summary+=("SKIPPED  $label (no CUDA device)") ;;
        *)  summary+=("FAILED   $label (exit $rc)"); fail=1 ;;
    esac
}

run embed_lstm
run train_adding
run train_adding --cell gru
run train_adding --precision fp16
run train_adding --cell gru --precision bf16

printf '%s\n' "${summary[@]}"
exit $fail
