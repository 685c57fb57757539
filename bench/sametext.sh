#!/usr/bin/env bash
# bench/sametext.sh (host, no GPU): does a change keep the persistent kernels' machine code? Builds each
# persistent unit of a list with two rnncc binaries (`rnncc emit --persistent N ... --cubin`: NVRTC with
# the runtime's options, line info included) and compares the cubins' code sections (`.text.*`, read
# with readelf): SAME or DIFF, with their sizes. A refactor meant to change nothing should print SAME;
# where it prints DIFF, plain A/Bs on the device decide (bench/NOTES.md section 72: nvcc's cubins of
# a unit agreed while NVRTC's did not, and the device timed the difference).
#   bash bench/sametext.sh OLD_RNNCC NEW_RNNCC [UNIT...]
# UNIT: CELL:H:N:PRECISION:forward|backward (cells/CELL.cell at I = H, N sequences), each further
# ':'-separated word an emit option without its dashes (cluster=2 -> --cluster 2, split -> --split);
# default: LSTM and GRU at small_b4, flashrnn and deepbench sizes, fp16, tf32 and fp32, both
# directions. Exit status: 0 all SAME, 1 some DIFF, 2 a unit did not build.
set -u
cd "$(dirname "$0")/.." || exit 2
[ $# -ge 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 new=$2
shift 2
for b in "$old" "$new"; do [ -x "$b" ] || { echo "sametext.sh: no executable '$b'" >&2; exit 2; }; done
units=("$@")
if [ ${#units[@]} -eq 0 ]; then
    for cell in lstm gru; do
        for d in forward backward; do
            units+=("$cell:1024:4:fp16:$d" "$cell:768:16:fp16:$d" "$cell:1024:32:fp16:$d" "$cell:1024:32:tf32:$d"
                "$cell:1024:32:fp32:$d")
        done
    done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
text() { # text CUBIN: each code section's name, size and hex (readelf), one line a section
    readelf -W -S "$1" 2>/dev/null | grep -oE '\.text\.[A-Za-z0-9_]+' | sort -u | while read -r s; do
        printf '%s %s\n' "$s" "$(readelf -W -x "$s" "$1" 2>/dev/null | grep '^  0x' | cut -c14-48 | tr -d ' \n')"
    done
}
status=0
for u in "${units[@]}"; do
    IFS=: read -r cell h n prec dir rest <<< "$u"
    opts=()
    IFS=: read -r -a extra <<< "${rest:-}"
    for o in "${extra[@]}"; do
        [ -n "$o" ] || continue
        case $o in *=*) opts+=("--${o%%=*}" "${o#*=}") ;; *) opts+=("--$o") ;; esac
    done
    for side in old new; do
        bin=$old; [ $side = new ] && bin=$new
        if ! "$bin" emit "cells/$cell.cell" --dim "I=$h" --dim "H=$h" --persistent "$n" --precision "$prec" "--$dir" \
            "${opts[@]}" --cubin -o "$tmp/$side.cubin" > "$tmp/$side.log" 2>&1; then
            echo "sametext.sh: $u did not build with $bin:" >&2
            cat "$tmp/$side.log" >&2
            exit 2
        fi
        text "$tmp/$side.cubin" > "$tmp/$side.text"
    done
    if cmp -s "$tmp/old.text" "$tmp/new.text"; then
        verdict=SAME
    else
        verdict=DIFF
        status=1
    fi
    sizes=$(paste -d' ' <(awk '{print $1, length($2) / 2}' "$tmp/old.text") <(awk '{print length($2) / 2}' "$tmp/new.text") |
        awk '{printf "%s%s %d -> %d bytes", (NR > 1 ? "; " : ""), $1, $2, $3}')
    printf '%-4s %-40s %s\n' "$verdict" "$u" "$sizes"
done
exit $status
