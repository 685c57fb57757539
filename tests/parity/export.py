#!/usr/bin/env python3
"""Export PyTorch nn.LSTM (with and without proj_size) / nn.GRU cases for rnncc's parity test
(tests/parity/README.md).

    python3 tests/parity/export.py OUTDIR [CASE...]      # every case when none is named
    python3 tests/parity/export.py --list

Each case becomes OUTDIR/<case>/: one raw little-endian file per tensor (C order, no
header; float32 `.f32` or float64 `.f64`) and a text `manifest` of `key = value` lines:

    cell = lstm                 (or gru, or lstmp: nn.LSTM with proj_size; rnncc compiles cells/<cell>.cell)
    I = 12, H = 20, T = 7, N = 3, layers = 1, bidirectional = 0   (one per line)
    P = 8                       (lstmp only: proj_size, the size of h, y's features and weight_hr's rows)
    lengths = none              (or N integers: packed variable-length sequences)
    backward = 1                (the cotangents and gradients below are present)
    tensor.<name> = <file> <float32|float64> <dim> <dim> ...

The module runs twice on the same float32 weights, inputs and cotangents: in float32 on
CUDA when torch has it (else on the CPU), TF32 off, and a deep copy in float64 on the CPU
(the exact function, up to float64 rounding). Tensors (float32 unless said):

  x [T,N,I], h0 [L*D,N,O] (and c0 [L*D,N,H] for lstm and lstmp; O = P for lstmp, else H), every
  parameter under its PyTorch name (weight_ih_l0, ..., bias_hh_l1_reverse, weight_hr_l0 for lstmp),
  and the cotangents dy [T,N,D*O] (zero past each
  sequence's end), dhT, dcT of loss = (y*dy).sum() + (hT*dhT).sum() (+ (cT*dcT).sum());
  the float32 run's y [T,N,D*O] (zeros past each sequence's length, as pad_packed_sequence
  gives), hT, cT and gradients dx, dh0, dc0, grad_<parameter name>;
  the float64 run's y64, hT64, cT64, dx64, dh064, dc064, grad64_<parameter name>, as float64.

Needs only torch (no numpy).
"""
import array
import copy
import os
import sys

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

I, H, T, N = 12, 20, 7, 3
P = 8  # proj_size of the lstmp cases
LENGTHS = [5, 7, 2]  # deliberately unsorted: rnncc takes lengths in batch order

# name: (cell, layers, bidirectional, variable lengths, seed)
CASES = {
    "lstm_l1": ("lstm", 1, False, False, 1),
    "lstm_l2_bidir": ("lstm", 2, True, False, 2),
    "lstm_l2_bidir_varlen": ("lstm", 2, True, True, 3),
    "gru_l1": ("gru", 1, False, False, 4),
    "gru_l2_bidir": ("gru", 2, True, False, 5),
    "gru_l2_bidir_varlen": ("gru", 2, True, True, 6),
    "lstmp_l1": ("lstmp", 1, False, False, 7),
    "lstmp_l2_bidir": ("lstmp", 2, True, False, 8),
    "lstmp_l2_bidir_varlen": ("lstmp", 2, True, True, 9),
}


# Float64 results disagreeing with float32 ones by more than this (max|a-b|/max|b|) mean the
# two runs were not of the same function: export.py refuses to write such a case.
SANITY_BOUND = 1e-3


def write_tensor(outdir, manifest, name, t, dtype=torch.float32):
    """Writes t as raw little-endian float32 or float64 and records it in the manifest."""
    t = t.detach().to("cpu", dtype).contiguous()
    code, ext, word, size = ("f", "f32", "float32", 4) if dtype == torch.float32 else ("d", "f64", "float64", 8)
    values = array.array(code, t.reshape(-1).tolist())
    assert values.itemsize == size, "this Python's '%s' array is not %d-byte" % (code, size)
    if sys.byteorder != "little":
        values.byteswap()
    fname = name + "." + ext
    with open(os.path.join(outdir, fname), "wb") as f:
        values.tofile(f)
    shape = " ".join(str(d) for d in t.shape)
    manifest.append("tensor.%s = %s %s %s" % (name, fname, word, shape))


def run(rnn, is_lstm, varlen, x, h0, c0, dy, dhT, dcT):
    """Forward, then the gradients of loss = (y*dy).sum() + (hT*dhT).sum() (+ (cT*dcT).sum())
    with respect to x, h0, (c0) and every parameter. Returns (y, hT, cT, grads)."""
    state0 = (h0, c0) if is_lstm else h0
    if varlen:
        packed = pack_padded_sequence(x, torch.tensor(LENGTHS), enforce_sorted=False)
        out, stateT = rnn(packed, state0)
        y, _ = pad_packed_sequence(out, total_length=T)
    else:
        out, stateT = rnn(x, state0)
        y = out
    hT, cT = stateT if is_lstm else (stateT, None)
    loss = (y * dy).sum() + (hT * dhT).sum()
    if is_lstm:
        loss = loss + (cT * dcT).sum()
    inputs = [x, h0] + ([c0] if is_lstm else []) + [p for _, p in rnn.named_parameters()]
    return y, hT, cT, torch.autograd.grad(loss, inputs)


def rel_err(a, b):
    """max|a-b| / max|b| in float64 on the CPU (max|a-b| when b is all zero)."""
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    den = b.abs().max().item()
    num = (a - b).abs().max().item()
    return num / den if den > 0 else num


def export_case(root, name, device):
    cell, layers, bidir, varlen, seed = CASES[name]
    torch.manual_seed(seed)
    dirs = 2 if bidir else 1
    is_lstm = cell in ("lstm", "lstmp")
    proj = P if cell == "lstmp" else 0
    O = proj or H  # the size of h and of y's features per direction
    extra = {"proj_size": proj} if proj else {}
    cls = nn.LSTM if is_lstm else nn.GRU
    rnn = cls(I, H, num_layers=layers, bidirectional=bidir, batch_first=False, **extra).to(device, torch.float32)
    rnn.train()  # dropout is 0, so this only lets cuDNN run backward

    x = torch.randn(T, N, I, device=device, requires_grad=True)
    h0 = torch.randn(layers * dirs, N, O, device=device, requires_grad=True)
    c0 = torch.randn(layers * dirs, N, H, device=device, requires_grad=True) if is_lstm else None
    # Cotangents of a random linear functional of the results. dy is zero past each
    # sequence's end so the gradients do not depend on what an RNN writes there.
    dy = torch.randn(T, N, dirs * O, device=device)
    if varlen:
        for n, L in enumerate(LENGTHS):
            dy[L:, n] = 0
    dhT = torch.randn(layers * dirs, N, O, device=device)
    dcT = torch.randn(layers * dirs, N, H, device=device) if is_lstm else None

    y, hT, cT, grads = run(rnn, is_lstm, varlen, x, h0, c0, dy, dhT, dcT)
    assert y.shape == (T, N, dirs * O), y.shape

    # The same module, weights, inputs and cotangents in float64 on the CPU: every float32
    # value converts exactly, so this is the exact function the float32 run approximates.
    rnn64 = copy.deepcopy(rnn).double().cpu()
    f64 = lambda t, grad: None if t is None else t.detach().cpu().double().requires_grad_(grad)
    y64, hT64, cT64, grads64 = run(rnn64, is_lstm, varlen, f64(x, True), f64(h0, True), f64(c0, True) if is_lstm else None,
                                   f64(dy, False), f64(dhT, False), f64(dcT, False))
    params = list(rnn.named_parameters())
    for (n32, p32), (n64, p64) in zip(params, rnn64.named_parameters()):
        assert n32 == n64 and p64.dtype == torch.float64 and torch.equal(p32.detach().cpu().double(), p64.detach()), n32
    gnames = ["dx", "dh0"] + (["dc0"] if is_lstm else []) + ["grad_" + n for n, _ in params]
    g64names = ["dx64", "dh064"] + (["dc064"] if is_lstm else []) + ["grad64_" + n for n, _ in params]
    pairs = [("y", y, y64), ("hT", hT, hT64)] + ([("cT", cT, cT64)] if is_lstm else []) + list(zip(gnames, grads, grads64))
    worst = max((rel_err(a, b), n) for n, a, b in pairs)
    if not worst[0] <= SANITY_BOUND:
        raise SystemExit("export.py: error: %s: the float32 and float64 runs disagree (%s: %.3g > %g): not one function"
                         % (name, worst[1], worst[0], SANITY_BOUND))

    outdir = os.path.join(root, name)
    os.makedirs(outdir, exist_ok=True)
    manifest = [
        "# rnncc parity case %s, written by tests/parity/export.py" % name,
        "# torch %s: float32 on %s (TF32 off), float64 on cpu; raw little-endian files, C order"
        % (torch.__version__, device),
        "cell = %s" % cell,
        "I = %d" % I,
        "H = %d" % H,
    ] + (["P = %d" % proj] if proj else []) + [
        "T = %d" % T,
        "N = %d" % N,
        "layers = %d" % layers,
        "bidirectional = %d" % (1 if bidir else 0),
        "lengths = %s" % (" ".join(str(L) for L in LENGTHS) if varlen else "none"),
        "seed = %d" % seed,
        "backward = 1",
        "torch = %s" % torch.__version__,
        "torch_fp32_device = %s" % (device if device == "cpu" else "%s (%s, cuDNN %s)" % (
            device, torch.cuda.get_device_name(), torch.backends.cudnn.version())),
        "torch_fp64_device = cpu",
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
    for gname, g in zip(gnames, grads):
        write_tensor(outdir, manifest, gname, g)
    write_tensor(outdir, manifest, "y64", y64, torch.float64)
    write_tensor(outdir, manifest, "hT64", hT64, torch.float64)
    if is_lstm:
        write_tensor(outdir, manifest, "cT64", cT64, torch.float64)
    for gname, g in zip(g64names, grads64):
        write_tensor(outdir, manifest, gname, g, torch.float64)
    with open(os.path.join(outdir, "manifest"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print("export.py: wrote %s (%s, %d layer%s%s%s; torch float32 vs float64: worst %.3g, %s)" % (
          outdir, cell, layers, "s" if layers > 1 else "", ", bidirectional" if bidir else "",
          ", lengths %s" % LENGTHS if varlen else "", worst[0], worst[1]))


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
