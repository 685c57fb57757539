#!/usr/bin/env bash
# bench/patches/build.sh [DIR...] (host): builds an rnncc for HEAD and for each patch of each DIR
# (default bench/patches; bench/patches/fold_ko: the fold's knockouts) and for all of them together
# (where they apply together) into build/patches/NAME/rnncc (emptied first), each from a scratch
# worktree of HEAD, for bench/patches/ab.sh on the device (carry build). NAME: base, the patch's file
# name without .patch, and all. PATCH_BENCH=1: each NAME's bench/bench_rnn too (build/patches/NAME/bench_rnn:
# its JIT lines time rnncc_model_create).
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
[ $# -gt 0 ] || set -- bench/patches
rm -rf build/patches
mkdir -p build/patches
one() { # one NAME PATCH...: HEAD with the patches applied, built; a patch that does not apply skips NAME
    local name=$1 dir
    shift
    dir=$(mktemp -d)
    git worktree add -f --detach "$dir" HEAD > /dev/null 2>&1
    for p in "$@"; do
        if ! (cd "$dir" && git apply "$root/$p" 2> /dev/null); then
            git worktree remove --force "$dir"
            echo "build/patches/$name: not built, $p does not apply${2:+ beside the others}"
            return 0
        fi
    done
    (cd "$dir" && make -j2 build/rnncc ${PATCH_BENCH:+build/bench/bench_rnn} > /dev/null)
    mkdir -p "build/patches/$name"
    cp "$dir/build/rnncc" "build/patches/$name/rnncc"
    [ -z "${PATCH_BENCH:-}" ] || cp "$dir/build/bench/bench_rnn" "build/patches/$name/bench_rnn"
    git worktree remove --force "$dir"
    echo "build/patches/$name/rnncc: HEAD${*:+ with $*}"
}
one base
patches=()
for from in "$@"; do patches+=("$from"/*.patch); done
for p in "${patches[@]}"; do one "$(basename "$p" .patch)" "$p"; done
[ ${#patches[@]} -lt 2 ] || one all "${patches[@]}"
