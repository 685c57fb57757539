#!/usr/bin/env bash
# bench/knockout/hand.sh (host): completes a hand-written persistent backward kernel (a file holding
# only the kernel and what it adds, e.g. bench/knockout/rows_lstm.cu) into a whole unit the knockout
# build can take: the generated backward unit of the same cell and sizes up to its kernel, then the
# file. Each NAME given writes a variant too, with `#define NAME 1` in front (the file's KO_* pieces).
#   bash bench/knockout/hand.sh OUT KERNEL "CELL --dim ... --persistent N --precision P" [NAME...]
# writes OUT.cu and OUT-NAME.cu; then, on the device, run.sh's variants OUT.cu@BLOCKS,THREADS,CLUSTER.
# Needs build/rnncc (make). bench/NOTES.md section 65.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { echo "usage: hand.sh OUT KERNEL \"CELL --dim ... --persistent N --precision P\" [NAME...]" >&2; exit 2; }
out=$1 kernel=$2 cfg=$3
shift 3
[ -f "$kernel" ] || { echo "hand.sh: no $kernel" >&2; exit 1; }
[ -x build/rnncc ] || { echo "hand.sh: no build/rnncc (make)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
unit=$(mktemp)
trap 'rm -f "$unit"' EXIT
# shellcheck disable=SC2086 # cfg is a command line
build/rnncc emit $cfg --backward -o "$unit"
cut=$(grep -n '^// ---- .*_pb: ' "$unit" | head -1 | cut -d: -f1)
[ -n "$cut" ] || { echo "hand.sh: no backward kernel in the unit of $cfg" >&2; exit 1; }
{ head -n $((cut - 1)) "$unit"; cat "$kernel"; } > "$out.cu"
for name in "$@"; do { echo "#define $name 1"; cat "$out.cu"; } > "$out-$name.cu"; done
echo "hand.sh: $out.cu${*:+ and ${#} variants}"
