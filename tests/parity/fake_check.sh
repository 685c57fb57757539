#!/bin/sh
# The parity tool without torch (make test): writes tests/parity/fake_export.py's cases (a plain-Python
# transcription of PyTorch's nn.LSTM, with and without proj_size, and nn.GRU; gradients by the complex step) and runs
# each through build/parity/parity twice: with --reference (rnncc's double-precision reference, which must pass:
# within 1e-9 of the transcription), then on the GPU (must pass, or exit 77 where there is none).
#
#   sh tests/parity/fake_check.sh [BUILD_DIR]        (from the repository root; default BUILD_DIR: build)
#
# Exit status: 0 every check passed (GPU runs skipped without a device), 1 a failure.
set -u
B=${1:-build}
PARITY=$B/parity/parity
PYTHON=${PYTHON:-python3}
[ -x "$PARITY" ] || { echo "fake_check.sh: $PARITY is missing: build it with 'make parity'" >&2; exit 1; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$PYTHON" tests/parity/fake_export.py "$dir/cases" > "$dir/export.log" 2>&1 || { cat "$dir/export.log"; echo "fake_check.sh: fake_export.py failed" >&2; exit 1; }
fail=0 gpu=0 skipped=0
for c in "$dir"/cases/*/; do
    name=$(basename "$c")
    "$PARITY" --reference "$c" > "$dir/$name.ref.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then cat "$dir/$name.ref.log"; echo "fake_check.sh: $name: the reference FAILED (exit status $rc)" >&2; fail=1; fi
    echo "$name, reference: $(tail -1 "$dir/$name.ref.log")"
    "$PARITY" "$c" > "$dir/$name.gpu.log" 2>&1
    rc=$?
    case $rc in
    0) gpu=$((gpu + 1)); echo "$name, GPU: $(tail -1 "$dir/$name.gpu.log")" ;;
    77) skipped=$((skipped + 1)) ;;
    *) cat "$dir/$name.gpu.log"; echo "fake_check.sh: $name: the GPU run FAILED (exit status $rc)" >&2; fail=1 ;;
    esac
done
[ $skipped -eq 0 ] || echo "fake_check.sh: the GPU runs of $skipped cases skipped: no CUDA device (each case's manifest, tensors and cell were read and checked)"
[ $fail -eq 0 ] && echo "fake_check.sh: ok"
exit $fail
