#!/usr/bin/env python3
"""Export PyTorch nn.LSTM / nn.GRU cases for rnncc's parity test (tests/parity/README.md).

    python3 tests/parity/export.py OUTDIR [CASE...]      # every case when none is named
    python3 tests/parity/export.py --list

Each case becomes OUTDIR/<case>/: one raw little-endian float32 file per tensor (C order,
no header) and a text `manifest` of `key = value` lines:

    cell = lstm                 (or gru: rnncc compiles cells/<cell>.cell)
    I = 12, H = 20, T = 7, N = 3, layers = 1, bidirectional = 0   (one per line)
    lengths = none              (or N integers: packed variable-length sequences)
    tensor.<name> = <file> <dim> <dim> ...

Tensors: x [T,N,I], h0 [L*D,N,H] (and c0 for lstm), y [T,N,D*H] (zeros past each
sequence's length, as pad_packed_sequence gives), hT, cT, every parameter under its
PyTorch name (weight_ih_l0, ..., bias_hh_l1_reverse), and for backward parity the
cotangents dy, dhT, dcT of loss = (y*dy).sum() + (hT*dhT).sum() (+ (cT*dcT).sum()) with
the gradients dx, dh0, dc0 and grad_<parameter name>. Needs only torch (no numpy).
"""
import array
import os
import sys

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

I, H, T, N = 12, 20, 7, 3
LENGTHS = [5, 7, 2]  # deliberately unsorted: rnncc takes lengths in batch order

# name: (cell, layers, bidirectional, variable lengths, seed)
CASES = {
    "lstm_l1": ("lstm", 1, False, False, 1),
    "lstm_l2_bidir": ("lstm", 2, True, False, 2),
    "lstm_l2_bidir_varlen": ("lstm", 2, True, True, 3),
    "gru_l1": ("gru", 1, False, False, 4),
    "gru_l2_bidir": ("gru", 2, True, False, 5),
    "gru_l2_bidir_varlen": ("gru", 2, True, True, 6),
}


def write_tensor(outdir, manifest, name, t):
    """Writes t as raw little-endian float32 and records it in the manifest."""
    t = t.detach().to("cpu", torch.float32).contiguous()
    values = array.array("f", t.reshape(-1).tolist())
    assert values.itemsize == 4, "this Python's 'f' array is not 4-byte float"
    if sys.byteorder != "little":
        values.byteswap()
    fname = name + ".f32"
    with open(os.path.join(outdir, fname), "wb") as f:
        values.tofile(f)
    shape = " ".join(str(d) for d in t.shape)
    manifest.append("tensor.%s = %s %s" % (name, fname, shape))


def export_case(root, name, device):
    cell, layers, bidir, varlen, seed = CASES[name]
    torch.manual_seed(seed)
    dirs = 2 if bidir else 1
    is_lstm = cell == "lstm"
    cls = nn.LSTM if is_lstm else nn.GRU
    rnn = cls(I, H, num_layers=layers, bidirectional=bidir, batch_first=False).to(device, torch.float32)
    rnn.train()  # dropout is 0, so this only lets cuDNN run backward

    x = torch.randn(T, N, I, device=device, requires_grad=True)
    h0 = torch.randn(layers * dirs, N, H, device=device, requires_grad=True)
    c0 = torch.randn(layers * dirs, N, H, device=device, requires_grad=True) if is_lstm else None
    state0 = (h0, c0) if is_lstm else h0

    if varlen:
        packed = pack_padded_sequence(x, torch.tensor(LENGTHS), enforce_sorted=False)
        out, stateT = rnn(packed, state0)
        y, _ = pad_packed_sequence(out, total_length=T)
    else:
        out, stateT = rnn(x, state0)
        y = out
    hT, cT = stateT if is_lstm else (stateT, None)
    assert y.shape == (T, N, dirs * H), y.shape

    # Backward of a random linear functional of the results. dy is zero past each
    # sequence's end so the gradients do not depend on what an RNN writes there.
    dy = torch.randn(T, N, dirs * H, device=device)
    if varlen:
        for n, L in enumerate(LENGTHS):
            dy[L:, n] = 0
    dhT = torch.randn_like(hT)
    loss = (y * dy).sum() + (hT * dhT).sum()
    if is_lstm:
        dcT = torch.randn_like(cT)
        loss = loss + (cT * dcT).sum()
    params = list(rnn.named_parameters())
    inputs = [x, h0] + ([c0] if is_lstm else []) + [p for _, p in params]
    grads = torch.autograd.grad(loss, inputs)

    outdir = os.path.join(root, name)
    os.makedirs(outdir, exist_ok=True)
    manifest = [
        "# rnncc parity case %s, written by tests/parity/export.py" % name,
        "# torch %s, device %s, float32, TF32 off; raw little-endian float32 files, C order"
        % (torch.__version__, device),
        "cell = %s" % cell,
        "I = %d" % I,
        "H = %d" % H,
        "T = %d" % T,
        "N = %d" % N,
        "layers = %d" % layers,
        "bidirectional = %d" % (1 if bidir else 0),
        "lengths = %s" % (" ".join(str(L) for L in LENGTHS) if varlen else "none"),
        "seed = %d" % seed,
    ]
    write_tensor(outdir, manifest, "x", x)
    write_tensor(outdir, manifest, "h0", h0)
    if is_lstm:
        write_tensor(outdir, manifest, "c0", c0)
    write_tensor(outdir, manifest, "y", y)
    write_tensor(outdir, manifest, "hT", hT)
    if is_lstm:
        write_tensor(outdir, manifest, "cT", cT)
    for pname, p in params:
        write_tensor(outdir, manifest, pname, p)
    write_tensor(outdir, manifest, "dy", dy)
    write_tensor(outdir, manifest, "dhT", dhT)
    if is_lstm:
        write_tensor(outdir, manifest, "dcT", dcT)
    gnames = ["dx", "dh0"] + (["dc0"] if is_lstm else []) + ["grad_" + n for n, _ in params]
    for gname, g in zip(gnames, grads):
        write_tensor(outdir, manifest, gname, g)
    with open(os.path.join(outdir, "manifest"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print("export.py: wrote %s (%s, %d layer%s%s%s)" % (outdir, cell, layers, "s" if layers > 1 else "",
          ", bidirectional" if bidir else "", ", lengths %s" % LENGTHS if varlen else ""))


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: export.py OUTDIR [CASE...] | --list\n")
        return 2
    names = argv[2:] or list(CASES)
    for n in names:
        if n not in CASES:
            sys.stderr.write("export.py: error: unknown case '%s' (known: %s)\n" % (n, ", ".join(CASES)))
            return 2
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("export.py: torch %s, CUDA %s, cuDNN %s, device %s%s" % (
        torch.__version__, torch.version.cuda, torch.backends.cudnn.version() if device == "cuda" else "-",
        device, " (%s)" % torch.cuda.get_device_name() if device == "cuda" else ""))
    for n in names:
        export_case(argv[1], n, device)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
