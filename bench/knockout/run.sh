#!/usr/bin/env bash
# bench/knockout/run.sh (device): µs a training step of knockout variants of the persistent backward
# (or an inference step of the forward's: KNOCKOUT_FORWARD=1, below),
# interleaved rounds, each step (T = 256 less T = 64) / 192 from `rnncc run --train --backend
# persistent --no-check --repeat 30` with RNNCC_PERSIST_SEARCH=0. Results are wrong by design;
# only the timing counts (bench/NOTES.md section 61).
#   bash bench/knockout/run.sh ROUNDS "CELL --dim ... --batch N --precision P" VARIANT...
# VARIANT: none (the unit as generated), NAME (bench/knockout/NAME.sed), or a path to a .sed script
# or a whole .cu unit; a .cu unit with its own grid as FILE.cu@BLOCKS,THREADS,CLUSTER (hand.sh's:
# RNNCC_KNOCKOUT_LAUNCH). Each variant's unit (unit-NAME.cu, as compiled; none: nothing) and warm-up log
# (warm-NAME.log) go into one file, $OUT/knockout-files.tar (the device tool returns 8 files at most). Needs
# build/knockout/rnncc. The variants' kernel caches start empty (they are keyed by the generated
# unit, so an edited script would otherwise find the last one's kernel). KNOCKOUT_FORWARD=1: the
# variants are of the persistent forward unit instead, timed in inference (no --train);
# KNOCKOUT_FORWARD=train: of the forward unit, timed in training (forward and backward). KNOCKOUT_CACHES (default
# /tmp/rnncc-knockout-): the prefix of the variants' kernel caches, emptied first; KNOCKOUT_FILES (default
# /tmp/rnncc-knockout.files, not $OUT): where the units and logs gather before the tar, emptied first.
set -u
cd "$(dirname "$0")/../.."
rounds=$1 cfg=$2
shift 2
OUT=${OUT:-build/knockout/out}
mkdir -p "$OUT"
bin=build/knockout/rnncc
[ -x $bin ] || { echo "run.sh: no $bin (bash bench/knockout/build.sh, here)" >&2; exit 1; }
script() { # the file a variant names ("" for none)
    case ${1%@*} in none) echo "" ;; *.sed | *.cu) echo "${1%@*}" ;; *) echo "bench/knockout/$1.sed" ;; esac
}
launch() { # a variant's own grid (FILE.cu@B,T,C), or nothing
    case $1 in *@*) echo "${1#*@}" ;; *) echo "" ;; esac
}
name() { # a variant's name in the results
    local s
    s=$(script "$1")
    if [ -z "$s" ]; then echo none; else s=$(basename "$s"); echo "${s%.*}"; fi
}
caches=${KNOCKOUT_CACHES:-/tmp/rnncc-knockout-} # each variant's kernel cache: this prefix and its name
rm -rf "$caches"*
for v in "$@"; do
    s=$(script "$v")
    [ -z "$s" ] || [ -f "$s" ] || { echo "run.sh: no $s" >&2; exit 1; }
done
fwd=${KNOCKOUT_FORWARD:-}
train() { # train VARIANT T R [NAME=VALUE...]: R timed passes of T steps with the variant's unit
    local v=$1 t=$2 r=$3
    shift 3
    local grid mode=(--train) hook
    grid=$(launch "$v")
    hook=(RNNCC_KNOCKOUT_LAUNCH="$grid")
    [ -z "$fwd" ] || { [ "$fwd" = train ] || mode=(); hook=(RNNCC_KNOCKOUT_FORWARD=1 RNNCC_KNOCKOUT_LAUNCH_FORWARD="$grid"); }
    env RNNCC_PERSIST_SEARCH=0 RNNCC_CACHE_DIR="$caches$(name "$v")" RNNCC_KNOCKOUT="$(script "$v")" \
        "${hook[@]}" "$@" $bin run $cfg --seq "$t" "${mode[@]}" --backend persistent --no-check --repeat "$r"
}
ms() { train "$1" "$2" 30 2>&1 | grep -oE '[0-9.]+ ms per sequence' | awk '{print $1}'; } # ms VARIANT T: ms a sequence
# each variant's unit and warm-up log, gathered into one file in $OUT (the device tool returns 8 files at most)
files=${KNOCKOUT_FILES:-/tmp/rnncc-knockout.files}
[ "$(cd "$OUT" && pwd)" != "$(mkdir -p "$files" && cd "$files" && pwd)" ] || { echo "run.sh: KNOCKOUT_FILES must not be \$OUT" >&2; exit 2; }
rm -rf "$files" && mkdir -p "$files" || exit 1
keep() { tar -cf "$OUT/knockout-files.tar" -C "$files" . ; }
for v in "$@"; do # compile each variant once, and keep its unit
    train "$v" 64 2 RNNCC_KNOCKOUT_DUMP="$files/unit-$(name "$v").cu" > "$files/warm-$(name "$v").log" 2>&1 ||
        { keep; echo "run.sh: $v failed (its log: warm-$(name "$v").log in $OUT/knockout-files.tar)"; tail -5 "$files/warm-$(name "$v").log"; exit 1; }
done
keep
for r in $(seq "$rounds"); do
    line="round $r:"
    for v in "$@"; do
        a=$(ms "$v" 256) c=$(ms "$v" 64)
        line="$line $(name "$v")=$(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.2f", (a - c) / 192 * 1000 }')"
    done
    echo "$line"
done
