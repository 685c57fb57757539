#!/bin/sh
# rnncc against PyTorch: export every case with tests/parity/export.py, then run each through
# build/parity/parity. Run from the repository root after `make parity`:
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
for c in $CASES; do
    [ -f "$OUT/$c/manifest" ] || { echo "run.sh: $OUT/$c/manifest was not written" >&2; failed=$((failed + 1)); continue; }
    "$PARITY" "$OUT/$c"
    rc=$?
    case $rc in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) echo "run.sh: case $c FAILED (exit status $rc)" >&2; failed=$((failed + 1)) ;;
    esac
done

echo "== parity cases: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || { echo "run.sh: cases were skipped (no CUDA device for rnncc): nothing was compared" >&2; exit 77; }
exit 0
