#!/usr/bin/env bash
# Everything that needs the GPU, in one run on the device machine (build/ built here and
# carried): the GPU test suite, random configurations (fuzz), compute-sanitizer over the suite,
# training smoke runs of every cell, the embedding example, and PyTorch parity; small batches take
# the persistent backend by the automatic rule, and the sanitizers run both backends. Prints a
# summary last.
# Usage (repository root): bash tests/gpu/device_checks.sh [STEPS]
#   STEPS: an extended regular expression; only the steps whose names match it run (all by default),
#   so that the checks can be split over several device calls of at most 10 minutes each.
# The GPU suite one case after another runs past 9 minutes on a fresh machine (cold NVRTC caches);
# suite_in_slices runs its cases (CK_RUN_CASE) and slices of its tables (RNNCC_TEST_CONFIGS=FIRST-LAST,
# tests/check_runtime.c) side by side, each with its own cache. Measured on an H100 (bench/NOTES.md
# section 51): the tables so 125 s on 16 cores, `gpu` alone 234 s; all of them at once not yet timed.
set -u
only=${1:-.}
export RNNCC_CACHE_DIR=${RNNCC_CACHE_DIR:-/tmp/rnncc-cache}
# the steps check the rule's tile, or the one they force; train-searched runs the measured search
export RNNCC_PERSIST_SEARCH=0
OUT=${OUT:-/tmp/rnncc-device-out}
mkdir -p "$OUT"
summary=()
# DEVICE_CHECKS_DRY=1 (make test, on a machine without a GPU): a step whose command runs ./build/rnncc (itself, or
# under env, timeout, compute-sanitizer or racecheck_own) runs it without the sanitizer and passes only where it
# stops for want of a device, not on its arguments, its environment or its cell; the other steps are skipped. So a
# step's mistake shows before it costs device time. Usage: DEVICE_CHECKS_DRY=1 bash tests/gpu/device_checks.sh [STEPS]
dry=${DEVICE_CHECKS_DRY:-0}
[ "$dry" = 1 ] && export CUDA_VISIBLE_DEVICES= # no device even where there is one
dry_run() { # dry_run COMMAND...: the rnncc command inside the step's wrappers, with their NAME=VALUE settings
    local vars=()
    while [ $# -gt 0 ]; do
        case "$1" in
            racecheck_own) shift ;;
            env) shift; while [ $# -gt 0 ] && [[ $1 == *=* ]]; do vars+=("$1"); shift; done ;;
            timeout) shift 2 ;;
            compute-sanitizer) shift; while [ $# -gt 1 ] && [[ $1 == --* ]]; do shift 2; done ;;
            *) break ;;
        esac
    done
    if [ "${1:-}" != ./build/rnncc ]; then echo "skipped: not an rnncc command ($*)"; return 3; fi
    local log
    log=$(env "${vars[@]}" "$@" 2>&1)
    printf '%s\n' "$log"
    grep -q 'no CUDA device' <<< "$log"
}
step() { # step NAME COMMAND...: runs it, logs to $OUT/NAME.log, records the outcome
    local name=$1; shift
    [[ $name =~ $only ]] || return 0
    echo "=== $name: $*"
    if [ "$dry" = 1 ]; then
        dry_run "$@" > "$OUT/$name.log" 2>&1
        case $? in
            0) summary+=("ok      $name (up to the device)") ;;
            3) summary+=("skipped $name") ;;
            *) summary+=("FAILED  $name: $(grep -m1 -i 'error' "$OUT/$name.log")") ;;
        esac
        return 0
    fi
    if "$@" > "$OUT/$name.log" 2>&1; then summary+=("ok      $name"); else summary+=("FAILED  $name (exit $?)"); fi
    tail -n 6 "$OUT/$name.log"
}
# racecheck_own COMMAND...: racecheck over a run that fails only on hazards in rnncc's code (its kernels,
# rnncc_*, and persist.cuh's device functions, rnn_*, which racecheck names as "void rnn_mv_mma<...>"):
# cuBLAS's own sm_90 kernels (nvjet_*, the weight gradients) report some, and restricting the check to
# rnncc's kernels (--kernel-name kns=rnncc_) made cuBLAS's launches fail under it
racecheck_own() {
    local log rc
    log=$(compute-sanitizer --tool racecheck "$@" 2>&1)
    rc=$?
    printf '%s\n' "$log"
    [ $rc -eq 0 ] && ! grep -Eq 'access at (void )?rnn' <<< "$log"
}
# three_checks NAME COMMAND...: steps memcheck-NAME, initcheck-NAME and racecheck-NAME (rnncc's hazards) of one command
three_checks() {
    local name=$1 tool; shift
    for tool in memcheck initcheck; do step "$tool-$name" compute-sanitizer --tool $tool --error-exitcode 9 "$@"; done
    step "racecheck-$name" racecheck_own "$@"
}
# suite_in_slices [NAME=VALUE...]: the GPU suite (every case of tests/check_runtime.c's main) in slices run
# side by side with the environment given, each with its own kernel cache, its log in $OUT/slice-*.log
# (CK_VERBOSITY=verbose: each test in TAP as it ends, so a slice cut off shows how far it got); fails if
# one fails or runs no test
suite_in_slices() {
    local pids=() names=() i rc=0 tag=${RANDOM}
    slice() { # slice NAME NAME=VALUE...
        local name=$1; shift
        env "$@" RNNCC_CACHE_DIR="$RNNCC_CACHE_DIR/slice-$name" CK_VERBOSITY=verbose ./build/tests/check_runtime \
            > "$OUT/slice-$tag-$name.log" 2>&1 &
        pids+=($!) names+=("$name")
    }
    local r
    for r in 0-11 12-22 23-30 31-38 39-46 47-54 55-61 62-9999; do slice "configs-$r" "$@" CK_RUN_CASE=configs RNNCC_TEST_CONFIGS=$r; done
    for r in 0-7 8-14 15-9999; do slice "half_configs-$r" "$@" CK_RUN_CASE=half_configs RNNCC_TEST_CONFIGS=$r; done
    # the other cases, each whole: every tcase_create of the suite's source but the tables
    for r in $(grep -o 'tcase_create("[a-z_]*")' tests/check_runtime.c | cut -d'"' -f2 | grep -vx 'configs\|half_configs'); do
        slice "$r" "$@" CK_RUN_CASE=$r
    done
    for i in "${!pids[@]}"; do
        # a slice that ran no test (no GPU, a case renamed, a table shorter than its slices) fails too
        if wait "${pids[$i]}" && grep -Eq '^100%: Checks: [1-9]' "$OUT/slice-$tag-${names[$i]}.log"; then echo "ok      ${names[$i]}: $(grep -E '^[0-9]+%' "$OUT/slice-$tag-${names[$i]}.log")"
        else echo "FAILED  ${names[$i]}: $OUT/slice-$tag-${names[$i]}.log"; grep -E '^not ok' "$OUT/slice-$tag-${names[$i]}.log" | head -5; rc=1; fi
    done
    return $rc
}
[ "$dry" = 1 ] || nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step gpu-tests suite_in_slices
# random configurations of shipped and random cells (tests/gpu/fuzz_configs.py): FUZZ_SECONDS (default 240)
# of new runs, 12 at a time; its report in $OUT/fuzz-1.txt
step fuzz python3 tests/gpu/fuzz_configs.py --seconds "${FUZZ_SECONDS:-240}" --jobs 12 --out "$OUT"
# the random cells' cases with hand-off races made visible: RNNCC_PERSIST_STAGGER=1 builds units in which every
# fifth block by (block, step, group) sleeps ~4 us before a step group (persist.cuh's RNN_STAGGER), so that a block
# reading another's values before their hand-off reads stale ones (bench/NOTES.md section 75)
step stagger-wide env RNNCC_PERSIST_STAGGER=1 CK_RUN_CASE=wide ./build/tests/check_runtime
step stagger-random env RNNCC_PERSIST_STAGGER=1 CK_RUN_CASE=random ./build/tests/check_runtime
# and random configurations so (FUZZ_SECONDS again, another seed; its report in $OUT/fuzz-3.txt)
step fuzz-stagger env RNNCC_PERSIST_STAGGER=1 python3 tests/gpu/fuzz_configs.py --seconds "${FUZZ_SECONDS:-240}" --jobs 12 \
    --seed 3 --out "$OUT"
# a random cell whose step groups and states differ in length (the fuzz tool's wide51, at P longer than H: its
# group over P reads c[H], which its units load after the barrier, bench/NOTES.md section 75), persistent training
wide_dir=$(mktemp -d)
trap 'rm -rf "$wide_dir"' EXIT # its cell, once the script ends
./build/tests/random_cells --wide 51 51 "$wide_dir" > /dev/null
for p in fp32 fp16; do
    wide51=(./build/rnncc run "$wide_dir/wide51.cell" --dim I=8 --dim H=8 --dim P=64 --seq 5 --batch 6 --varlen --train
        --repeat 1 --precision $p --backend persistent)
    for tool in memcheck initcheck synccheck; do
        step "$tool-wide51-$p" compute-sanitizer --tool $tool --error-exitcode 9 "${wide51[@]}"
    done
    step "racecheck-wide51-$p" racecheck_own "${wide51[@]}"
done
# a readout after the loop (the post program: wide2's y = Y @ h' runs once over every step's columns, from h' kept
# for every step), per step and persistent, inference and training
./build/tests/random_cells --wide 2 2 "$wide_dir" > /dev/null
for be in cublas persistent; do
    for mode in infer train; do
        post=(./build/rnncc run "$wide_dir/wide2.cell" --dim I=8 --dim H=24 --dim P=40 --seq 5 --batch 6 --varlen
            --repeat 1 --precision fp32 --backend $be)
        [ $mode = train ] && post+=(--train)
        three_checks "post-$be-$mode" "${post[@]}"
    done
done
# a readout whose cell then has no step product: its persistent kernel runs no GEMM and meets no barrier a step
printf '%s\n' 'cell ew(x[I]) -> y {' '    state h[H]' '    param W[H, I], u[H], V[O, H]' "    h' = tanh(W @ x + u * h)" \
    "    y = V @ h'" '}' > "$wide_dir/ew.cell"
for mode in infer train; do
    ew=(./build/rnncc run "$wide_dir/ew.cell" --dim I=8 --dim H=40 --dim O=24 --seq 6 --batch 6 --varlen --repeat 1
        --precision fp32 --backend persistent)
    [ $mode = train ] && ew+=(--train)
    step "memcheck-post-ew-$mode" compute-sanitizer --tool memcheck --error-exitcode 9 "${ew[@]}"
    step "racecheck-post-ew-$mode" racecheck_own "${ew[@]}"
    step "synccheck-post-ew-$mode" compute-sanitizer --tool synccheck --error-exitcode 9 "${ew[@]}"
done
# training with no lengths: the copied readout's adjoint is dy itself (rt_post_direct_dy: read in place in fp32,
# rounded into its twin by the backward's first launch in fp16), its copy kernel's backward not run
for p in fp32 fp16; do
    for be in cublas persistent; do
        three_checks "post-direct-$p-$be" ./build/rnncc run "$wide_dir/ew.cell" --dim I=8 --dim H=40 --dim O=24 --seq 6 \
            --batch 6 --repeat 1 --precision $p --backend $be --train
    done
done
# LSTMP folded (RNNCC_FOLD=1, runtime/rt_fold.c): its state from h0 through the hoisted products, the final
# state P z_T, the backward's seed, gather and gradient map; per step and persistent, inference and training,
# both directions, with lengths and without (h0's entry then added by its GEMM into the first step's columns)
# (exported for these steps alone, so that the sanitizers see it as rnncc does)
export RNNCC_FOLD=1
for be in cublas persistent; do
    for mode in infer train; do
        for lengths in varlen nolengths; do
            fold=(./build/rnncc run cells/lstmp.cell --dim I=16 --dim H=48 --dim P=24 --seq 6 --batch 7
                --bidirectional --repeat 1 --precision fp32 --backend $be)
            [ $mode = train ] && fold+=(--train)
            suffix=-nolengths
            [ $lengths = varlen ] && fold+=(--varlen) && suffix=
            three_checks "fold-$be-$mode$suffix" "${fold[@]}"
        done
    done
    # fp16 training (T N < 4H): V's gradient mapped through the columns in 16-bit products on the adjoint's and
    # the states' twins, P and the U_k kept as 16-bit twins alone
    for tool in memcheck initcheck; do
        step "$tool-fold-$be-train-fp16" compute-sanitizer --tool $tool --error-exitcode 9 ./build/rnncc run cells/lstmp.cell \
            --dim I=16 --dim H=48 --dim P=24 --seq 6 --batch 7 --bidirectional --varlen --train --repeat 1 --precision fp16 \
            --backend $be
    done
    # V kept (rnncc_model_keep_derived_weights): the passes after the first form no V
    for tool in memcheck initcheck; do
        step "$tool-fold-$be-kept" compute-sanitizer --tool $tool --error-exitcode 9 ./build/rnncc run cells/lstmp.cell \
            --dim I=16 --dim H=48 --dim P=24 --seq 6 --batch 7 --bidirectional --repeat 3 --precision tf32 --backend $be \
            --keep-derived-weights
    done
done
unset RNNCC_FOLD
for tool in racecheck initcheck synccheck; do
    for be in cublas persistent; do
        step "$tool-$be" compute-sanitizer --tool $tool --error-exitcode 9 ./build/rnncc run cells/mlstm.cell --dim I=16 \
            --dim H=24 --dim M=20 --seq 5 --batch 3 --layers 2 --bidirectional --varlen --train --repeat 1 --backend $be
    done
    # the persistent kernels' tf32 tensor-core products (rnn_mv_mma), odd and even row tiles, two passes of sequences
    step "$tool-persistent-tf32" compute-sanitizer --tool $tool --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
        --dim I=40 --dim H=300 --seq 4 --batch 19 --varlen --train --repeat 1 --precision tf32 --backend persistent
done
# clusters with 8 sequences a pass and more than 8 sequences (several passes a step, tile 0 refilled between
# them: NOTES section 25), tensor-core products in tf32 and from 16-bit twins, training
for p in tf32 bf16; do
    seqs8=(./build/rnncc run cells/lstm.cell --dim I=32 --dim H=200 --seq 6 --batch 12 --varlen --train --repeat 1
        --precision $p --backend persistent)
    RNNCC_PERSIST_CLUSTER=2 RNNCC_PERSIST_SEQS=8 step "racecheck-cluster2-seqs8-$p" racecheck_own "${seqs8[@]}"
    RNNCC_PERSIST_CLUSTER=2 RNNCC_PERSIST_SEQS=8 step "synccheck-cluster2-seqs8-$p" compute-sanitizer --tool synccheck \
        --error-exitcode 9 "${seqs8[@]}"
done
# thread-block clusters sharing the staged operand (RNNCC_PERSIST_CLUSTER forces a size), both products, pairs and 4s
for c in 2 4; do
    for tool in racecheck synccheck; do
        step "$tool-cluster$c" env RNNCC_PERSIST_CLUSTER=$c compute-sanitizer --tool $tool --error-exitcode 9 \
            ./build/rnncc run cells/lstm.cell --dim I=40 --dim H=300 --seq 4 --batch 19 --varlen --train --repeat 1 \
            --precision tf32 --backend persistent
    done
done
# a backward's clusters splitting K (RNNCC_PERSIST_SPLIT=1: partial sums exchanged through distributed shared
# memory), pairs and fours, 16-bit and fp32 products, training (the log says "splitting K" where it ran so)
for c in 2 4; do
    split=(./build/rnncc run cells/lstm.cell --dim I=64 --dim H=256 --seq 3 --batch 20 --varlen --train --repeat 1
        --precision fp16 --backend persistent)
    RNNCC_PERSIST_CLUSTER=$c RNNCC_PERSIST_SPLIT=1 step "racecheck-split$c" racecheck_own "${split[@]}"
    for tool in synccheck memcheck; do
        RNNCC_PERSIST_CLUSTER=$c RNNCC_PERSIST_SPLIT=1 step "$tool-split$c" compute-sanitizer --tool $tool --error-exitcode 9 \
            "${split[@]/fp16/fp32}"
    done
done
# the rule's fours splitting K at 9-16 sequences on tensor cores (bench/NOTES.md section 58), at H = 1024: 9 elements
# a block on the 120 blocks whose clusters are resident, the cluster's 36 rows in one pass of five row groups
split5=(./build/rnncc run cells/lstm.cell --dim I=64 --dim H=1024 --seq 2 --batch 12 --varlen --train --repeat 1
    --precision fp16 --backend persistent)
step "racecheck-split4-rows36" racecheck_own "${split5[@]}"
step "synccheck-split4-rows36" compute-sanitizer --tool synccheck --error-exitcode 9 "${split5[@]}"
# tiles staged in waves (CgPersistGemm.waves, persist.cuh rnn_stage_copies: no clusters, weights in registers, 16 sequences a pass or
# more): the forward's four at H = 1024 without clusters, and a backward's pairs splitting K at 32 sequences
waves=(./build/rnncc run cells/lstm.cell --dim I=64 --dim H=1024 --seq 2 --batch 16 --varlen --train --repeat 1
    --precision fp16 --backend persistent)
RNNCC_PERSIST_CLUSTER=1 step "racecheck-waves" racecheck_own "${waves[@]}"
RNNCC_PERSIST_CLUSTER=1 step "synccheck-waves" compute-sanitizer --tool synccheck --error-exitcode 9 "${waves[@]}"
waves32=(./build/rnncc run cells/lstm.cell --dim I=64 --dim H=1024 --seq 2 --batch 32 --varlen --train --repeat 1
    --precision fp16 --backend persistent)
RNNCC_PERSIST_CLUSTER=2 RNNCC_PERSIST_SPLIT=1 step "racecheck-waves-split2" racecheck_own "${waves32[@]}"
RNNCC_PERSIST_CLUSTER=2 RNNCC_PERSIST_SPLIT=1 step "synccheck-waves-split2" compute-sanitizer --tool synccheck \
    --error-exitcode 9 "${waves32[@]}"
# the waves' copies without range checks where a whole pass is in range (rnn_stage_wave's stepped addresses,
# bench/NOTES.md section 108), beside checked passes (--varlen, 20 sequences: a short last pass), fp16 and tf32
RNNCC_PERSIST_CLUSTER=1 step "memcheck-waves" compute-sanitizer --tool memcheck --error-exitcode 9 "${waves[@]}"
RNNCC_PERSIST_CLUSTER=2 RNNCC_PERSIST_SPLIT=1 step "memcheck-waves-split2" compute-sanitizer --tool memcheck \
    --error-exitcode 9 "${waves32[@]}"
step "memcheck-waves-tf32" compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell --dim I=64 \
    --dim H=1024 --seq 2 --batch 32 --varlen --train --repeat 1 --precision tf32 --backend persistent
step "memcheck-waves-20" compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell --dim I=64 \
    --dim H=1024 --seq 2 --batch 20 --train --repeat 1 --precision fp16 --backend persistent
# a forward's steps handed off by flagged words (RNNCC_PERSIST_HANDOFF=flags, no clusters), both products,
# odd and even operand lengths (pairs of words, single words), several passes of sequences
for p in fp32 tf32; do
    for tool in racecheck synccheck memcheck; do
        step "$tool-flags-$p" env RNNCC_PERSIST_HANDOFF=flags RNNCC_PERSIST_CLUSTER=1 compute-sanitizer --tool $tool \
            --error-exitcode 9 ./build/rnncc run cells/lstm.cell --dim I=40 --dim H=301 --seq 6 --batch 19 --varlen \
            --train --repeat 1 --precision $p --backend persistent
    done
    step "racecheck-flags-gru-$p" env RNNCC_PERSIST_HANDOFF=flags RNNCC_PERSIST_CLUSTER=1 compute-sanitizer --tool racecheck \
        --error-exitcode 9 ./build/rnncc run cells/gru.cell --dim I=40 --dim H=256 --seq 6 --batch 4 --layers 2 \
        --bidirectional --varlen --repeat 1 --precision $p --backend persistent
done
# operands loaded straight into the products' registers (RNNCC_PERSIST_HANDOFF=direct: the barrier kept, nothing
# staged), fp16 and bf16, training with lengths (racecheck on rnncc's kernels only), a stack both ways, two passes
for p in fp16 bf16; do
    direct=(./build/rnncc run cells/lstm.cell --dim I=40 --dim H=256 --seq 6 --batch 19 --varlen --train --repeat 1
        --precision $p --backend persistent)
    RNNCC_PERSIST_HANDOFF=direct step "racecheck-direct-$p" racecheck_own "${direct[@]}"
    for tool in synccheck memcheck; do
        step "$tool-direct-$p" env RNNCC_PERSIST_HANDOFF=direct compute-sanitizer --tool $tool --error-exitcode 9 "${direct[@]}"
    done
    step "memcheck-direct-gru-$p" env RNNCC_PERSIST_HANDOFF=direct compute-sanitizer --tool memcheck --error-exitcode 9 \
        ./build/rnncc run cells/gru.cell --dim I=40 --dim H=256 --seq 6 --batch 40 --layers 2 --bidirectional --varlen \
        --repeat 1 --precision $p --backend persistent
done
# a 16-bit backward's d(gates) loaded straight by rule (nothing forced: bench/NOTES.md section 107), in its fours
# splitting K (12 sequences) with lengths, and unclustered (4 sequences, bf16)
bwd_direct=(./build/rnncc run cells/lstm.cell --dim I=40 --dim H=256 --seq 6 --batch 12 --varlen --train --repeat 1
    --precision fp16 --backend persistent)
step "racecheck-direct-bwd-fours" racecheck_own "${bwd_direct[@]}"
for tool in synccheck memcheck; do
    step "$tool-direct-bwd-fours" compute-sanitizer --tool $tool --error-exitcode 9 "${bwd_direct[@]}"
done
step "memcheck-direct-bwd-4" compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/gru.cell --dim I=40 \
    --dim H=256 --seq 6 --batch 4 --layers 2 --varlen --train --repeat 1 --precision bf16 --backend persistent
# flags carrying 16-bit values (a state staged from its twin: 4-byte words), training (racecheck on rnncc's
# kernels only: cuBLAS's 16-bit weight-gradient kernels report their own)
for p in fp16 bf16; do
    flags16=(./build/rnncc run cells/lstm.cell --dim I=32 --dim H=200 --seq 6 --batch 12 --varlen --train --repeat 1
        --precision $p --backend persistent)
    RNNCC_PERSIST_HANDOFF=flags step "racecheck-flags-$p" racecheck_own "${flags16[@]}"
    for tool in synccheck memcheck; do
        RNNCC_PERSIST_HANDOFF=flags step "$tool-flags-$p" compute-sanitizer --tool $tool --error-exitcode 9 "${flags16[@]}"
    done
done
# the other tiles the search tries (rt_tile.c): 16 and 4 warps a block, staging chunks of 256, both products
for w in 16 4; do
    for tool in racecheck synccheck; do
        step "$tool-warps$w" env RNNCC_PERSIST_WARPS=$w RNNCC_PERSIST_CHUNK=256 compute-sanitizer --tool $tool \
            --error-exitcode 9 ./build/rnncc run cells/lstm.cell --dim I=40 --dim H=300 --seq 4 --batch 19 --varlen \
            --train --repeat 1 --precision tf32 --backend persistent
    done
    step "memcheck-warps$w" env RNNCC_PERSIST_WARPS=$w RNNCC_PERSIST_CHUNK=256 compute-sanitizer --tool memcheck \
        --error-exitcode 9 ./build/rnncc run cells/gru.cell --dim I=40 --dim H=300 --seq 4 --batch 19 --layers 2 \
        --bidirectional --varlen --train --repeat 1 --precision tf32 --backend persistent
    step "racecheck-warps$w-fp32" env RNNCC_PERSIST_WARPS=$w RNNCC_PERSIST_CLUSTER=2 compute-sanitizer --tool racecheck \
        --error-exitcode 9 ./build/rnncc run cells/mlstm.cell --dim I=16 --dim H=24 --dim M=20 --seq 5 --batch 3 --layers 2 \
        --bidirectional --varlen --train --repeat 1 --backend persistent
done
# fewer blocks than multiprocessors, more rows a block (the search's fewer-blocks tile, RNNCC_PERSIST_BLOCKS):
# 16-bit and tf32 products, pairs, training
for g in 96 7; do
    blocks=(./build/rnncc run cells/lstm.cell --dim I=64 --dim H=200 --seq 5 --batch 16 --varlen --train --repeat 1
        --precision fp16 --backend persistent)
    RNNCC_PERSIST_BLOCKS=$g step "racecheck-blocks$g" racecheck_own "${blocks[@]}"
    for tool in synccheck memcheck; do
        RNNCC_PERSIST_BLOCKS=$g step "$tool-blocks$g" compute-sanitizer --tool $tool --error-exitcode 9 "${blocks[@]/fp16/tf32}"
    done
done
# the search itself, on a cell and batch of its own (the suite takes the rule's tile but for a few cases)
step train-searched env RNNCC_PERSIST_SEARCH=1 ./build/rnncc run cells/gru.cell --dim I=64 --dim H=512 --seq 20 --batch 8 \
    --layers 2 --bidirectional --varlen --train --repeat 3
step memcheck-searched env RNNCC_PERSIST_SEARCH=1 RNNCC_CACHE_DIR=/tmp/rnncc-cache-memcheck-searched compute-sanitizer \
    --tool memcheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell --dim I=40 --dim H=300 --seq 4 --batch 19 \
    --layers 2 --bidirectional --varlen --train --repeat 1
step memcheck-cluster2 env RNNCC_PERSIST_CLUSTER=2 compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run \
    cells/gru.cell --dim I=40 --dim H=300 --seq 4 --batch 19 --layers 2 --bidirectional --varlen --train --repeat 1 \
    --backend persistent
# the whole GPU suite with every persistent kernel without clusters (the rule pairs FFMA products and
# a backward's tensor-core ones at 9-32 sequences, and takes fours for a forward's at 9-24), and with
# every one in pairs
step gpu-tests-cluster1 suite_in_slices RNNCC_PERSIST_CLUSTER=1
step gpu-tests-cluster2 suite_in_slices RNNCC_PERSIST_CLUSTER=2
step memcheck-persistent-tf32 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 ./build/rnncc run \
    cells/gru.cell --dim I=40 --dim H=300 --seq 4 --batch 19 --layers 2 --bidirectional --varlen --train --repeat 1 \
    --precision tf32 --backend persistent
# GEMM inputs in 16 bits (rt_half.c): the conversions' reads and writes, both backends, training
for p in fp16 bf16; do
    step "memcheck-$p" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 ./build/rnncc run \
        cells/gru.cell --dim I=40 --dim H=301 --seq 4 --batch 19 --layers 2 --bidirectional --varlen --train --repeat 1 \
        --precision $p --backend cublas
    step "racecheck-$p" compute-sanitizer --tool racecheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
        --dim I=32 --dim H=64 --seq 6 --batch 5 --layers 3 --varlen --train --repeat 1 --precision $p --backend cublas
done
# GEMM inputs split in two tf32 parts (RNNCC_TF32X3, rt_x3.c): the split's reads and writes at odd and
# four-aligned lengths, in chunks forced small (RNNCC_X3_SCRATCH), both lanes of a bidirectional stack, training;
# and an H = 1024 LSTM against the reference at the mode's bounds
for h in 301 304; do
    step "memcheck-tf32x3-$h" env RNNCC_X3_SCRATCH=5000 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
        ./build/rnncc run cells/gru.cell --dim I=40 --dim H=$h --seq 4 --batch 19 --layers 2 --bidirectional --varlen --train \
        --repeat 1 --precision tf32x3 --backend cublas
done
step racecheck-tf32x3 compute-sanitizer --tool racecheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
    --dim I=32 --dim H=64 --seq 6 --batch 5 --layers 2 --bidirectional --varlen --train --repeat 1 --precision tf32x3 --backend cublas
# fp32 step GEMMs on a transposed copy of their weights (rt_wt.c): the copies' region and the transposes' reads and
# writes, both lanes of a bidirectional stack, training, two passes (each transposes anew); forced (RNNCC_WT=1) and
# as timed (the timing's own GEMMs on the copy; a copy read before its transpose would read the NaN workspace that
# rnncc run fills before each pass and fail its check, not initcheck's)
for wt in 1 timed; do
    step "memcheck-wt-$wt" env RNNCC_WT=${wt/timed/} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
        ./build/rnncc run cells/gru.cell --dim I=40 --dim H=301 --seq 4 --batch 19 --layers 2 --bidirectional --varlen --train \
        --repeat 2 --precision fp32 --backend cublas
    step "initcheck-wt-$wt" env RNNCC_WT=${wt/timed/} compute-sanitizer --tool initcheck --error-exitcode 9 ./build/rnncc run \
        cells/lstm.cell --dim I=32 --dim H=64 --seq 6 --batch 5 --layers 2 --bidirectional --varlen --repeat 2 --precision fp32 \
        --backend cublas
done
step train-lstm-tf32x3-1024 ./build/rnncc run cells/lstm.cell --dim I=1024 --dim H=1024 --seq 30 --batch 64 --train --repeat 2 \
    --precision tf32x3
# 16-bit products in the persistent kernels: weights from the rounded copy (16-byte copies at H=304,
# eight halves a thread at H=301 and in every backward), both products, training, stacks both ways
for p in fp16 bf16; do
    step "memcheck-$p-persistent" compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
        --dim I=40 --dim H=304 --seq 4 --batch 19 --varlen --train --repeat 1 --precision $p --backend persistent
    step "memcheck-$p-persistent-odd" compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/gru.cell \
        --dim I=40 --dim H=301 --seq 4 --batch 19 --layers 2 --bidirectional --varlen --train --repeat 1 --precision $p \
        --backend persistent
    step "synccheck-$p-persistent" compute-sanitizer --tool synccheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
        --dim I=32 --dim H=200 --seq 6 --batch 12 --layers 2 --varlen --train --repeat 1 --precision $p --backend persistent
    step "racecheck-$p-persistent" racecheck_own ./build/rnncc run cells/lstm.cell \
        --dim I=32 --dim H=200 --seq 6 --batch 12 --layers 2 --varlen --train --repeat 1 --precision $p --backend persistent
done
# every sequence whole: adjoints one kernel alone writes are not zeroed, and the LSTM's W x and U h share one
# adjoint in the forward direction (not in the reverse one); both backends, with 16-bit twins
for be in cublas persistent; do
    step "memcheck-whole-$be" compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
        --dim I=40 --dim H=304 --seq 4 --batch 19 --layers 2 --bidirectional --train --repeat 1 --precision fp16 --backend $be
    step "racecheck-whole-$be" racecheck_own ./build/rnncc run cells/lstm.cell \
        --dim I=32 --dim H=200 --seq 6 --batch 12 --layers 2 --bidirectional --train --repeat 1 --precision fp16 --backend $be
done
# a later phase's operand (mLSTM's m, LSTMP's projected input, MGU's f * h) handed off by flags, and at barriers
# in 16 bits staged from its twin in its flagged words' slots (bench/NOTES.md section 44); training, stacks
for p in fp32 fp16; do
    RNNCC_PERSIST_HANDOFF=flags RNNCC_PERSIST_CLUSTER=1 step "racecheck-phases-flags-$p" racecheck_own ./build/rnncc run \
        cells/mlstm.cell --dim I=32 --dim H=200 --dim M=152 --seq 6 --batch 12 --layers 2 --varlen --train --repeat 1 \
        --precision $p --backend persistent
    RNNCC_PERSIST_HANDOFF=flags RNNCC_PERSIST_CLUSTER=1 step "synccheck-phases-flags-$p" compute-sanitizer --tool synccheck \
        --error-exitcode 9 ./build/rnncc run cells/lstmp.cell --dim I=32 --dim H=200 --dim P=136 --seq 6 --batch 12 --varlen \
        --train --repeat 1 --precision $p --backend persistent --fold off # as written: two phases (fp16 folds by the rule)
done
step memcheck-phases-twin-bf16 compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/mgu.cell \
    --dim I=32 --dim H=200 --seq 6 --batch 12 --layers 2 --bidirectional --varlen --train --repeat 1 --precision bf16 \
    --backend persistent
RNNCC_PERSIST_CLUSTER=2 step racecheck-phases-twin-cluster2-fp16 racecheck_own ./build/rnncc run cells/mlstm.cell \
    --dim I=32 --dim H=200 --dim M=152 --seq 6 --batch 12 --varlen --train --repeat 1 --precision fp16 --backend persistent
# step results added into the hoisted GEMM's columns (fp32 operands past 64 sequences; the 16-bit modes
# above): lengths, a stack, beside a reverse direction
step memcheck-summed compute-sanitizer --tool memcheck --error-exitcode 9 ./build/rnncc run cells/lstm.cell \
    --dim I=24 --dim H=40 --seq 5 --batch 67 --layers 2 --bidirectional --varlen --train --repeat 1 --precision fp32
step gpu-tests-half env CK_RUN_CASE=half ./build/tests/check_runtime
for c in lstm gru peephole cifg indrnn sru mgu; do
    step "train-$c" ./build/rnncc run cells/$c.cell --dim I=32 --dim H=64 --seq 20 --batch 5 --layers 2 --bidirectional --varlen --train --repeat 3
done
step train-lstm-cublas ./build/rnncc run cells/lstm.cell --dim I=32 --dim H=64 --seq 20 --batch 5 --layers 2 --bidirectional --varlen --train --repeat 3 --backend cublas
step train-lstmp ./build/rnncc run cells/lstmp.cell --dim I=32 --dim H=64 --dim P=24 --seq 20 --batch 5 --train --varlen --repeat 3
step train-mlstm ./build/rnncc run cells/mlstm.cell --dim I=32 --dim H=64 --dim M=48 --seq 20 --batch 5 --train --varlen --repeat 3
step examples bash tests/examples.sh build
# the command line's suite where `rnncc run` runs: run's standard input, its --json measurements and checks
step cli-gpu ./build/tests/check_cli
step reserve-sizes ./build/bench/reserve_sizes
if [ -x build/parity/parity ]; then step parity sh tests/parity/run.sh "$OUT/parity-cases"; fi
# last, and bounded (MEMCHECK_TIMEOUT seconds, default 1800): the whole GPU suite under memcheck is slow
# the tcase that spoils captures on purpose makes CUDA API errors: memory errors only there
step memcheck-graphs env CK_FORK=no CK_RUN_CASE=graphs compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 ./build/tests/check_runtime
step memcheck timeout "${MEMCHECK_TIMEOUT:-1800}" env CK_FORK=no CK_EXCLUDE_TAGS=spoils_captures compute-sanitizer \
    --tool memcheck --leak-check full --error-exitcode 9 ./build/tests/check_runtime
echo "=== summary"
printf '%s\n' "${summary[@]}"
! printf '%s\n' "${summary[@]}" | grep -q FAILED
