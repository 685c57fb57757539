#!/bin/sh
# The parity tool without torch (make test): writes tests/parity/fake_export.py's cases (a plain-Python
# transcription of PyTorch's nn.LSTM, with and without proj_size, and nn.GRU; gradients by the complex step) and runs
# each through build/parity/parity twice: with --reference (rnncc's double-precision reference, which must pass:
# within 1e-9 of the transcription), then on the GPU (must pass, or exit 77 where there is none); then spoils cases
# (a manifest's key, a tensor's file, shape or type) and checks that each is refused with its message.
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
# bad input: a case spoiled one way each (CASE|shell command on $b|what the error must say) is refused with exit
# status 1 and that message, before any GPU work
bad=0
refused() { # refused WHAT SAYS ARGS...: parity --reference ARGS exits 1 saying SAYS, else a failure naming WHAT
    what=$1 says=$2
    shift 2
    "$PARITY" --reference "$@" > "$dir/bad.log" 2>&1
    rc=$?
    if [ $rc -ne 1 ] || ! grep -qF -- "$says" "$dir/bad.log"; then
        cat "$dir/bad.log"
        echo "fake_check.sh: $what: exit status $rc; expected 1 and the message '$says'" >&2
        fail=1
    fi
    bad=$((bad + 1))
}
while IFS='|' read -r case spoil says; do
    b=$dir/bad
    rm -rf "$b" && cp -r "$dir/cases/$case" "$b" && (cd "$b" && eval "$spoil") || { echo "fake_check.sh: cannot spoil $case" >&2; fail=1; continue; }
    refused "$case spoiled by '$spoil'" "$says" "$b"
done << 'EOF_BAD'
fake_lstm_l1|echo 'P = 3' >> manifest|'P' (proj_size) is for cell lstmp, not lstm
fake_lstm_l1|sed -i 's/^cell = lstm/cell = rnn/' manifest|unknown cell 'rnn' (lstm, gru or lstmp)
fake_lstm_l1|sed -i '/^cell = /d' manifest|manifest has no 'cell'
fake_lstm_l1|sed -i 's/^lengths = .*/lengths = 9 9 9/' manifest|lengths must be 'none' or 3 integers in 0..4, not '9 9 9'
fake_lstm_l1|echo 'I = 5' >> manifest|'I' given twice
fake_lstm_l1|echo 'garbage' >> manifest|expected 'key = value'
fake_lstm_l1|head -c 10 x.f32 > t && mv t x.f32|x.f32 must hold exactly 60 float32 values (240 bytes)
fake_lstm_l1|sed -i 's/^tensor.x = x.f32 float32 4 3 5/tensor.x = x.f32 float32 4 3 7/' manifest|'x' has shape [4 3 7]; expected [4 3 5]
fake_lstm_l1|sed -i 's/^tensor.x = x.f32/tensor.x = ..\/x.f32/' manifest|bad file name in 'tensor.x = ../x.f32 float32 4 3 5'
fake_lstm_l1|sed -i 's/^tensor.x = x.f32 float32/tensor.x = x.f32 int8/' manifest|the type must be float32 or float64
fake_lstm_l1|sed -i 's/^T = .*/T = -3/' manifest|'T' must be an integer in 0..1048576, not '-3'
fake_lstm_l1|sed -i '/^backward = /d' manifest|manifest has no 'backward'
fake_lstm_l1|rm manifest|cannot open
fake_lstmp_l2_bidir_varlen|sed -i '/^P = /d' manifest|manifest has no 'P'
fake_lstmp_l2_bidir_varlen|sed -i 's/^P = .*/P = 6/' manifest|'P' must be an integer in 1..5, not '6'
EOF_BAD
# a cell that cannot be read (a directory where --cells names the cell file) is refused with the reader's error
mkdir -p "$dir/cells/lstm.cell"
refused "a directory as the cell" "parity: error: reading $dir/cells/lstm.cell: Is a directory" --cells "$dir/cells" "$dir/cases/fake_lstm_l1"
echo "fake_check.sh: $bad spoiled cases refused with their messages"
[ $fail -eq 0 ] && echo "fake_check.sh: ok"
exit $fail
