#!/bin/sh
# rnncc against PyTorch: export every case with tests/parity/export.py, then run each through
# build/parity/parity, with --reference (rnncc's CPU reference) and on the GPU; then the same for
# tests/parity/fake_export.py's cases. Run from the repository root after `make parity`:
#
#   sh tests/parity/run.sh [OUTDIR]          (default OUTDIR: build/parity/cases)
#
# Exit status: 0 every case passed, 1 any failure, 77 when no CUDA device let rnncc run.
set -u

OUT=${1:-build/parity/cases}
PARITY=${PARITY:-./build/parity/parity}
PYTHON=${PYTHON:-python3}

die() { echo "run.sh: error: $*" >&2; exit 1; }

[ -f tests/parity/export.py ] || die "run me from the repository root (tests/parity/export.py not found)"
[ -x "$PARITY" ] || die "$PARITY is missing: build it with 'make parity'"
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found"

echo "== versions"
"$PYTHON" -c '
import sys, torch
print("python", sys.version.split()[0])
print("torch", torch.__version__, "CUDA", torch.version.cuda,
      "cuDNN", torch.backends.cudnn.version() if torch.cuda.is_available() else "-",
      "device", torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (no CUDA in torch)")
' || die "cannot import torch with $PYTHON"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
fi

echo "== export ($OUT)"
CASES=$("$PYTHON" tests/parity/export.py --list) || die "export.py --list failed"
[ -n "$CASES" ] || die "export.py lists no cases"
mkdir -p "$OUT" || die "cannot create $OUT"
for c in $CASES; do rm -f "$OUT/$c/manifest"; done  # so a case export.py did not write cannot pass
"$PYTHON" tests/parity/export.py "$OUT" || die "export.py failed"

echo "== parity"
passed=0 failed=0 skipped=0
# One case: rnncc's double-precision reference (no GPU; within 1e-9 of PyTorch's float64), then the GPU run
# (each backend; an LSTMP folded and as written); a case fails once when either fails.
run_case() {
    [ -f "$1/manifest" ] || { echo "run.sh: $1/manifest was not written" >&2; failed=$((failed + 1)); return; }
    "$PARITY" --reference "$1"
    ref=$?
    [ $ref -eq 0 ] || echo "run.sh: case $1 FAILED against the reference (exit status $ref)" >&2
    "$PARITY" "$1"
    rc=$?
    case $rc in
    0) [ $ref -eq 0 ] && passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) echo "run.sh: case $1 FAILED on the GPU (exit status $rc)" >&2 ;;
    esac
    [ $ref -eq 0 ] && { [ $rc -eq 0 ] || [ $rc -eq 77 ]; } || failed=$((failed + 1))
}
for c in $CASES; do run_case "$OUT/$c"; done

echo "== the cases of tests/parity/fake_export.py (a plain-Python transcription of PyTorch's equations: a second opinion)"
rm -rf "$OUT/fake"
if "$PYTHON" tests/parity/fake_export.py "$OUT/fake"; then
    for c in "$OUT"/fake/*/; do run_case "${c%/}"; done
else
    echo "run.sh: fake_export.py failed" >&2; failed=$((failed + 1))
fi

echo "== parity cases: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || { echo "run.sh: the GPU runs of $skipped cases were skipped (no CUDA device for rnncc): nothing was compared on the GPU" >&2; exit 77; }
exit 0
