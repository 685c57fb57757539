#!/usr/bin/env bash
# bench/knockout/build.sh: builds build/knockout/rnncc, a scratch rnncc whose NVRTC wrapper passes
# each persistent backward unit through a sed script (hook.patch; never in the library), from a copy
# of the tracked tree in build/knockout/src. Host only; carry build/ to the device, then run.sh there.
# The method and what it found: bench/NOTES.md section 61.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=build/knockout/src
rm -rf "$src" && mkdir -p "$src"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$src"
patch -s -p1 -d "$src" < bench/knockout/hook.patch || { echo "build.sh: hook.patch no longer applies to runtime/rt_nvrtc.c: remake it" >&2; exit 1; }
make -s -C "$src" -j"$(nproc)" build/rnncc
cp "$src/build/rnncc" build/knockout/rnncc
rm -rf "$src" # only the binary travels (the device tool carries 64 MiB)
echo "build/knockout/rnncc built"
