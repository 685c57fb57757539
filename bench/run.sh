#!/usr/bin/env bash
# bench/run.sh: the one device script. Builds nothing (build/bench/ must be carried, made here
# by `make bench`); runs bench_rnn (rnncc against every cuDNN algorithm, LSTM and GRU, fp32,
# tf32 and cuDNN-only fp16), custom_cells (cells cuDNN cannot run), then torch_cells.py
# (PyTorch eager / torch.compile / nn.LSTM); prints the combined summary last. After bench_rnn, its
# JIT lines again with the CUDA cache off (CUDA_CACHE_DISABLE=1: the creates a fresh machine sees).
#
#   bash bench/run.sh [--quick] [--only rnn,custom,torch] [COMMIT]
#
# Files go to $OUT when set (the device tool's output folder), else to build/bench/out:
# run.log (everything), results.md (markdown tables), summary.txt (the compact tables), env.txt.
# Each program has a time budget and a hard timeout, so the whole run ends within ~9 minutes
# on an H100 (--quick: ~2). Extra arguments for each program: $BENCH_RNN_ARGS, $CUSTOM_ARGS,
# $TORCH_ARGS; an option they give replaces the script's own (the programs' list options add up:
# "--precision fp16" alone measures fp16 only), and a --budget given sets the hard limit 45 s past it. Exit status: 0 when every part passed, else the first failing part's status.
set -u
cd "$(dirname "$0")/.." || exit 2

quick=0
only="rnn,custom,torch"
commit=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --only) shift; only="${1:-}" ;;
        --only=*) only="${1#--only=}" ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
        *) commit="$1" ;;
    esac
    shift
done

out="${OUT:-build/bench/out}"
mkdir -p "$out" || exit 2
log="$out/run.log"
md="$out/results.md"
sum="$out/summary.txt"
env_txt="$out/env.txt"
: > "$log"; : > "$sum"; : > "$env_txt"
[ -f "$md" ] || : > "$md"
say() { echo "$@" | tee -a "$log"; }

# ---- where and what -----------------------------------------------------------------------------
if git rev-parse HEAD > /dev/null 2>&1; then
    rev="$(git rev-parse HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
elif [ -n "$commit" ]; then
    rev="$commit (given to run.sh; no git here)"
else
    rev="unknown (no git here; pass the commit as an argument)"
fi
# of the programs that measure rnncc: what each was linked from (make bench writes PROGRAM.built-from beside it: the
# device's copy of the tree may carry older git metadata than the binaries it runs; bench/NOTES.md section 111), and
# which were linked before the library was built again, so measure the older library (section 110)
built="" stale=""
for b in build/bench/bench_rnn build/bench/custom_cells; do
    [ -f "$b.built-from" ] && built="$built${built:+; }${b#build/bench/} $(head -1 "$b.built-from")"
    if [ -e "$b" ] && [ build/librnncc.a -nt "$b" ]; then stale="$stale ${b#build/bench/}"; fi
done
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit: $rev"
    echo "built from: ${built:-unknown (no build/bench/*.built-from: linked before make bench wrote them)}"
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader 2>&1 | head -1)"
    echo "mode: $([ $quick = 1 ] && echo quick || echo full); parts: $only"
    [ -z "$stale" ] || echo "WARNING: linked before build/librnncc.a:$stale; their rnncc figures are an older library's (make bench, then run again)"
} > "$env_txt"
tee -a "$log" < "$env_txt"
grep '^WARNING: linked before' "$env_txt" >> "$md"
cat "$env_txt" >> "$sum"
nvidia-smi >> "$log" 2>&1 || say "run.sh: nvidia-smi failed"
echo "results of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $rev, built from ${built:-unknown}: see bench/README.md for the columns" >> "$md"

# cuDNN: the system's, else the one PyTorch's wheels bring (nvidia-cudnn-*)
bin=build/bench
if [ -x "$bin/bench_rnn" ] && ldd "$bin/bench_rnn" 2>/dev/null | grep -q 'libcudnn.*not found'; then
    dir=$(python3 - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    roots = []
for root in roots:
    hits = sorted(glob.glob(os.path.join(root, "**", "libcudnn.so.9*"), recursive=True))
    if hits:
        print(os.path.dirname(hits[0]))
        break
EOF
)
    if [ -n "$dir" ]; then
        export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        say "run.sh: using cuDNN from $dir"
    else
        say "run.sh: libcudnn.so.9 not found on this machine: bench_rnn cannot run"
    fi
fi
[ -x "$bin/bench_rnn" ] && ldd "$bin/bench_rnn" 2>/dev/null | grep -E 'cudnn|cublas|nvrtc|cudart' >> "$env_txt"

cache=$(mktemp -d /tmp/rnncc-cache-XXXXXX) && export RNNCC_CACHE_DIR="$cache"   # starts empty, mode 0700
export PYTHONUNBUFFERED=1

if [ $quick = 1 ]; then
    rnn_args="--quick --precision fp32,tf32,fp16 --budget 60"; rnn_timeout=100
    custom_args="--quick --budget 25"; custom_timeout=45
    torch_args="--quick --budget 50"; torch_timeout=75
else
    # budgets are soft (checked between cases); the hard limits add up to 530 s
    rnn_args="--cell lstm,gru --precision fp32,tf32,fp16 --budget 210"; rnn_timeout=255
    custom_args="--precision fp32,tf32 --budget 100"; custom_timeout=125
    torch_args="--budget 130"; torch_timeout=150
fi

# own_args DEFAULTS EXTRA: the script's options (flags, or options with one value) that EXTRA does not give
own_args() {
    local out="" extra=" $2 "
    set -- $1
    while [ $# -gt 0 ]; do
        case "$1" in
            --quick) [[ $extra == *" --quick "* ]] || out="$out $1"; shift ;;
            *) [[ $extra == *" $1 "* || $extra == *" $1="* ]] || out="$out $1 $2"; shift 2 ;;
        esac
    done
    echo "$out"
}
# limit_for TIMEOUT EXTRA: the hard limit, 45 s past a --budget EXTRA gives, else TIMEOUT
limit_for() {
    local b
    b=$(sed -n 's/.*--budget[ =]\([0-9][0-9]*\).*/\1/p' <<< "$2")
    if [ -n "$b" ]; then echo $((b + 45)); else echo "$1"; fi
}
rnn_timeout=$(limit_for "$rnn_timeout" "${BENCH_RNN_ARGS:-}"); rnn_args=$(own_args "$rnn_args" "${BENCH_RNN_ARGS:-}")
custom_timeout=$(limit_for "$custom_timeout" "${CUSTOM_ARGS:-}"); custom_args=$(own_args "$custom_args" "${CUSTOM_ARGS:-}")
torch_timeout=$(limit_for "$torch_timeout" "${TORCH_ARGS:-}"); torch_args=$(own_args "$torch_args" "${TORCH_ARGS:-}")

status=0
part() { # name, timeout, command...
    local name=$1 limit=$2
    shift 2
    say ""
    say "===== $name: $* (hard limit ${limit} s)"
    local t0=$SECONDS
    timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    say "===== $name: exit $rc after $((SECONDS - t0)) s$([ "$rc" = 124 ] && echo ' (TIMED OUT: its summary rows so far are kept)')"
    if [ "$rc" != 0 ]; then
        echo "$name: exit status $rc$([ "$rc" = 77 ] && echo ' (skipped: no GPU or no torch)')" >> "$sum"
        [ "$status" = 0 ] && status=$rc
    fi
}

case ",$only," in *,rnn,*)
    if [ -x "$bin/bench_rnn" ]; then
        # shellcheck disable=SC2086
        part bench_rnn $rnn_timeout "$bin/bench_rnn" $rnn_args --markdown "$md" --summary "$sum" ${BENCH_RNN_ARGS:-}
        # the JIT as a fresh machine meets it: the device's NVRTC keeps its compiles in the CUDA cache, which a
        # machine just started has empty (bench/NOTES.md section 102); bench_rnn's JIT lines again with it off
        part jit_uncached 60 env CUDA_CACHE_DISABLE=1 "$bin/bench_rnn" --config quick --cell lstm,gru --precision fp32 \
            --algo STD --mode inference --repeat 1 --warmup 1
        sed -n '/^===== jit_uncached: /,$p' "$log" | grep '^JIT' | awk '!seen[$0]++' | sed 's/^JIT /JIT, the CUDA cache off: /' >> "$sum"
    else
        say "run.sh: $bin/bench_rnn is missing: run 'make bench' and carry build/bench"; echo "bench_rnn: not built" >> "$sum"; status=1
    fi ;;
esac
case ",$only," in *,custom,*)
    if [ -x "$bin/custom_cells" ]; then
        # shellcheck disable=SC2086
        part custom_cells $custom_timeout "$bin/custom_cells" $custom_args --markdown "$md" --summary "$sum" ${CUSTOM_ARGS:-}
    else
        say "run.sh: $bin/custom_cells is missing: run 'make bench' and carry build/bench"; echo "custom_cells: not built" >> "$sum"; status=1
    fi ;;
esac
case ",$only," in *,torch,*)
    # shellcheck disable=SC2086
    part torch_cells $torch_timeout python3 bench/torch_cells.py $torch_args --markdown "$md" --summary "$sum" ${TORCH_ARGS:-} ;;
esac

rm -rf "$cache"
# the combined table last: the device tool returns the tail of the output
say ""
say "===================================== SUMMARY ====================================="
tee -a "$log" < "$sum"
say "run.sh: files in $out: run.log results.md summary.txt env.txt; exit $status"
exit "$status"
