#!/usr/bin/env python3
"""Write parity cases in export.py's format without PyTorch (tests/parity/README.md).

    python3 tests/parity/fake_export.py OUTDIR

The expected y, hT, cT come from a plain-Python transcription of PyTorch's documented
nn.LSTM / nn.GRU equations and layouts (stacked gate rows, two bias vectors, reverse
direction over each sequence's own length, zeros past it). It exists to test parity.c
itself where torch is missing (manifest parsing, tensor files, the no-GPU skip) and, on a
GPU, as a second opinion independent of torch. The computation is in Python's float64, so
its results are written as the float64 reference (y64, hT64, cT64) and, rounded, as the
"float32" ones (y, hT, cT). Forward only: no gradients are written (manifest: backward = 0).
"""
import array
import math
import os
import random
import sys

I, H, T, N = 5, 6, 4, 3

# name: (cell, layers, bidirectional, lengths or None, seed)
CASES = {
    "fake_lstm_l1": ("lstm", 1, False, None, 11),
    "fake_gru_l2_bidir_varlen": ("gru", 2, True, [3, 4, 1], 12),
    "fake_lstm_l2_bidir_varlen": ("lstm", 2, True, [2, 4, 3], 13),
}


def sigmoid(v):
    return 1.0 / (1.0 + math.exp(-v))


def f32(v):
    """Rounds to float32, as the files store it."""
    return array.array("f", [v])[0]


def matvec(W, v):
    return [sum(w * e for w, e in zip(row, v)) for row in W]


def step(cell, p, x, h, c):
    """One step of PyTorch's cell; p = (W_ih, W_hh, b_ih, b_hh), gates stacked in rows."""
    W_ih, W_hh, b_ih, b_hh = p
    gi = [a + b for a, b in zip(matvec(W_ih, x), b_ih)]
    gh = [a + b for a, b in zip(matvec(W_hh, h), b_hh)]
    if cell == "lstm":  # i, f, g, o
        i = [sigmoid(gi[r] + gh[r]) for r in range(H)]
        f = [sigmoid(gi[H + r] + gh[H + r]) for r in range(H)]
        g = [math.tanh(gi[2 * H + r] + gh[2 * H + r]) for r in range(H)]
        o = [sigmoid(gi[3 * H + r] + gh[3 * H + r]) for r in range(H)]
        c = [f[r] * c[r] + i[r] * g[r] for r in range(H)]
        h = [o[r] * math.tanh(c[r]) for r in range(H)]
        return h, c
    # gru: r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    r_ = [sigmoid(gi[r] + gh[r]) for r in range(H)]
    z = [sigmoid(gi[H + r] + gh[H + r]) for r in range(H)]
    n = [math.tanh(gi[2 * H + r] + r_[r] * gh[2 * H + r]) for r in range(H)]
    return [(1 - z[r]) * n[r] + z[r] * h[r] for r in range(H)], None


def write(outdir, manifest, name, shape, flat, f64=False):
    assert len(flat) == math.prod(shape), name
    values = array.array("d" if f64 else "f", flat)
    if sys.byteorder != "little":
        values.byteswap()
    ext, word = ("f64", "float64") if f64 else ("f32", "float32")
    with open(os.path.join(outdir, "%s.%s" % (name, ext)), "wb") as f:
        values.tofile(f)
    manifest.append("tensor.%s = %s.%s %s %s" % (name, name, ext, word, " ".join(str(d) for d in shape)))


def make_case(root, name):
    cell, layers, bidir, lengths, seed = CASES[name]
    rng = random.Random(seed)
    D = 2 if bidir else 1
    G = 4 if cell == "lstm" else 3
    k = 1 / math.sqrt(H)
    uni = lambda: f32(rng.uniform(-k, k))
    lens = lengths or [T] * N
    x = [[[f32(rng.gauss(0, 1)) for _ in range(I)] for _ in range(N)] for _ in range(T)]
    h0 = [[[f32(rng.gauss(0, 1)) for _ in range(H)] for _ in range(N)] for _ in range(layers * D)]
    c0 = [[[f32(rng.gauss(0, 1)) for _ in range(H)] for _ in range(N)] for _ in range(layers * D)]
    params = {}
    for l in range(layers):
        for d in range(D):
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            cols = I if l == 0 else D * H
            params["weight_ih" + sfx] = [[uni() for _ in range(cols)] for _ in range(G * H)]
            params["weight_hh" + sfx] = [[uni() for _ in range(H)] for _ in range(G * H)]
            params["bias_ih" + sfx] = [uni() for _ in range(G * H)]
            params["bias_hh" + sfx] = [uni() for _ in range(G * H)]

    hT = [None] * (layers * D)
    cT = [None] * (layers * D)
    inp = x
    for l in range(layers):
        out = [[[0.0] * (D * H) for _ in range(N)] for _ in range(T)]
        for d in range(D):
            u = l * D + d
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            p = tuple(params[kind + sfx] for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            hT[u], cT[u] = [], []
            for n in range(N):
                h, c = h0[u][n], c0[u][n]
                order = range(lens[n]) if d == 0 else range(lens[n] - 1, -1, -1)
                for t in order:
                    h, c = step(cell, p, inp[t][n], h, c)
                    out[t][n][d * H:(d + 1) * H] = h
                hT[u].append(h)
                cT[u].append(c)
        inp = out

    outdir = os.path.join(root, name)
    os.makedirs(outdir, exist_ok=True)
    m = ["# fake parity case %s, written by tests/parity/fake_export.py (no torch)" % name,
         "cell = %s" % cell, "I = %d" % I, "H = %d" % H, "T = %d" % T, "N = %d" % N,
         "layers = %d" % layers, "bidirectional = %d" % (D - 1),
         "lengths = %s" % (" ".join(map(str, lengths)) if lengths else "none"), "backward = 0",
         "torch = none (plain Python)", "torch_fp32_device = none (the float64 results rounded)",
         "torch_fp64_device = plain Python"]
    flat3 = lambda a: [v for b in a for r in b for v in r]
    flat2 = lambda a: [v for r in a for v in r]
    write(outdir, m, "x", [T, N, I], flat3(x))
    write(outdir, m, "h0", [layers * D, N, H], flat3(h0))
    if cell == "lstm":
        write(outdir, m, "c0", [layers * D, N, H], flat3(c0))
    for f64, sfx in ((False, ""), (True, "64")):
        write(outdir, m, "y" + sfx, [T, N, D * H], flat3(inp), f64)
        write(outdir, m, "hT" + sfx, [layers * D, N, H], flat3(hT), f64)
        if cell == "lstm":
            write(outdir, m, "cT" + sfx, [layers * D, N, H], flat3(cT), f64)
    for pname, v in params.items():
        if isinstance(v[0], list):
            write(outdir, m, pname, [len(v), len(v[0])], flat2(v))
        else:
            write(outdir, m, pname, [len(v)], v)
    with open(os.path.join(outdir, "manifest"), "w") as f:
        f.write("\n".join(m) + "\n")
    print("fake_export.py: wrote %s" % outdir)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: fake_export.py OUTDIR\n")
        return 2
    for name in CASES:
        make_case(argv[1], name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
