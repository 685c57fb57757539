#!/usr/bin/env python3
"""Write parity cases in export.py's format without PyTorch (tests/parity/README.md).

    python3 tests/parity/fake_export.py OUTDIR

The expected y, hT, cT come from a plain-Python transcription of PyTorch's documented
nn.LSTM (with and without proj_size) / nn.GRU equations and layouts (stacked gate rows, two
bias vectors, h = weight_hr (o * tanh(c)) with proj_size, reverse direction over each
sequence's own length, zeros past it). It exists to test parity.c itself where torch is
missing (manifest parsing, tensor files, the mapping table, the no-GPU skip, and with
--reference rnncc's reference against the transcription) and, on a GPU, as a second opinion
independent of torch. The computation is in Python's float64, so its results are written as
the float64 reference (y64, hT64, cT64, ...) and, rounded, as the "float32" ones (y, hT, cT, ...).

Cases marked backward also carry the gradients of loss = (y*dy).sum() + (hT*dhT).sum()
(+ (cT*dcT).sum()) with respect to x, h0, c0 and every parameter, by the complex step: each
input's value v becomes v + i*1e-30, and the loss's imaginary part / 1e-30 is its derivative,
exact to float64 rounding (no difference is taken, so nothing cancels). The others are
forward only (manifest: backward = 0).
"""
import array
import cmath
import math
import os
import random
import sys

I, H, T, N = 5, 6, 4, 3
P = 4  # proj_size of the lstmp cases
STEP = 1e-30  # the complex step

# name: (cell, layers, bidirectional, lengths or None, seed, backward)
CASES = {
    "fake_lstm_l1": ("lstm", 1, False, None, 11, True),
    "fake_gru_l2_bidir_varlen": ("gru", 2, True, [3, 4, 1], 12, False),
    "fake_lstm_l2_bidir_varlen": ("lstm", 2, True, [2, 4, 3], 13, False),
    "fake_gru_l1_varlen": ("gru", 1, False, [4, 0, 2], 15, True),
    "fake_lstmp_l2_bidir_varlen": ("lstmp", 2, True, [4, 1, 3], 14, True),
}


def sigmoid(v):
    return 1.0 / (1.0 + cmath.exp(-v))


def f32(v):
    """Rounds to float32, as the files store it."""
    return array.array("f", [v])[0]


def matvec(W, cols, v):
    """W flat [rows][cols] times v."""
    return [sum(W[r * cols + q] * v[q] for q in range(cols)) for r in range(len(W) // cols)]


def step(cell, p, x, h, c):
    """One step of PyTorch's cell; p = (W_ih, W_hh, b_ih, b_hh[, W_hr]) flat, gates stacked in rows."""
    W_ih, W_hh, b_ih, b_hh = p[:4]
    gi = [a + b for a, b in zip(matvec(W_ih, len(x), x), b_ih)]
    gh = [a + b for a, b in zip(matvec(W_hh, len(h), h), b_hh)]
    if cell in ("lstm", "lstmp"):  # i, f, g, o
        i = [sigmoid(gi[r] + gh[r]) for r in range(H)]
        f = [sigmoid(gi[H + r] + gh[H + r]) for r in range(H)]
        g = [cmath.tanh(gi[2 * H + r] + gh[2 * H + r]) for r in range(H)]
        o = [sigmoid(gi[3 * H + r] + gh[3 * H + r]) for r in range(H)]
        c = [f[r] * c[r] + i[r] * g[r] for r in range(H)]
        h = [o[r] * cmath.tanh(c[r]) for r in range(H)]
        return (h if cell == "lstm" else matvec(p[4], H, h)), c  # lstmp: h = W_hr (o * tanh(c))
    # gru: r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    r_ = [sigmoid(gi[r] + gh[r]) for r in range(H)]
    z = [sigmoid(gi[H + r] + gh[H + r]) for r in range(H)]
    n = [cmath.tanh(gi[2 * H + r] + r_[r] * gh[2 * H + r]) for r in range(H)]
    return [(1 - z[r]) * n[r] + z[r] * h[r] for r in range(H)], None


class Case:
    """One case's sizes and tensors, each a flat list with its shape."""

    def __init__(self, name):
        self.cell, self.layers, bidir, lengths, seed, self.backward = CASES[name]
        self.name, self.lengths = name, lengths
        self.D = 2 if bidir else 1
        self.O = P if self.cell == "lstmp" else H  # the size of h and of y's features per direction
        self.lens = lengths or [T] * N
        rng = random.Random(seed)
        G = 3 if self.cell == "gru" else 4
        k = 1 / math.sqrt(H)
        units = self.layers * self.D
        gauss = lambda shape: (shape, [f32(rng.gauss(0, 1)) for _ in range(math.prod(shape))])
        uni = lambda shape: (shape, [f32(rng.uniform(-k, k)) for _ in range(math.prod(shape))])
        self.inputs = {"x": gauss([T, N, I]), "h0": gauss([units, N, self.O])}
        if self.cell != "gru":
            self.inputs["c0"] = gauss([units, N, H])
        self.params = []  # names in PyTorch's order
        for l in range(self.layers):
            for d in range(self.D):
                sfx = "_l%d%s" % (l, "_reverse" if d else "")
                cols = I if l == 0 else self.D * self.O
                shapes = [("weight_ih", [G * H, cols]), ("weight_hh", [G * H, self.O]), ("bias_ih", [G * H]),
                          ("bias_hh", [G * H])] + ([("weight_hr", [P, H])] if self.cell == "lstmp" else [])
                for kind, shape in shapes:
                    self.inputs[kind + sfx] = uni(shape)
                    self.params.append(kind + sfx)
        # cotangents: dy zero past each sequence's end
        self.cot = {"dy": gauss([T, N, self.D * self.O]), "dhT": gauss([units, N, self.O])}
        if self.cell != "gru":
            self.cot["dcT"] = gauss([units, N, H])
        dy = self.cot["dy"][1]
        for n, L in enumerate(self.lens):
            for t in range(L, T):
                for j in range(self.D * self.O):
                    dy[(t * N + n) * self.D * self.O + j] = 0.0

    def forward(self):
        """y [T][N][D O], hT [units][N][O], cT [units][N][H] (flat; None for the GRU's cT)."""
        v = {name: t[1] for name, t in self.inputs.items()}
        D, O, units = self.D, self.O, self.layers * self.D
        hT, cT = [0.0] * (units * N * O), [0.0] * (units * N * H)
        inp, width = v["x"], I
        for l in range(self.layers):
            out = [0.0] * (T * N * D * O)
            for d in range(D):
                u = l * D + d
                sfx = "_l%d%s" % (l, "_reverse" if d else "")
                kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh") + (("weight_hr",) if self.cell == "lstmp" else ())
                p = tuple(v[kind + sfx] for kind in kinds)
                for n in range(N):
                    h = v["h0"][(u * N + n) * O:(u * N + n + 1) * O]
                    c = v["c0"][(u * N + n) * H:(u * N + n + 1) * H] if "c0" in v else None
                    order = range(self.lens[n]) if d == 0 else range(self.lens[n] - 1, -1, -1)
                    for t in order:
                        h, c = step(self.cell, p, inp[(t * N + n) * width:(t * N + n + 1) * width], h, c)
                        at = (t * N + n) * D * O + d * O
                        out[at:at + O] = h
                    hT[(u * N + n) * O:(u * N + n + 1) * O] = h
                    if c is not None:
                        cT[(u * N + n) * H:(u * N + n + 1) * H] = c
            inp, width = out, D * O
        return inp, hT, (cT if self.cell != "gru" else None)

    def loss(self, y, hT, cT):
        s = sum(a * b for a, b in zip(y, self.cot["dy"][1])) + sum(a * b for a, b in zip(hT, self.cot["dhT"][1]))
        return s + (sum(a * b for a, b in zip(cT, self.cot["dcT"][1])) if cT is not None else 0)

    def gradient(self, name):
        """d loss / d inputs[name], element by element by the complex step."""
        values, g = self.inputs[name][1], []
        for e in range(len(values)):
            keep = values[e]
            values[e] = keep + 1j * STEP
            g.append(self.loss(*self.forward()).imag / STEP)
            values[e] = keep
        return g


def write(outdir, manifest, name, shape, flat, f64=False):
    assert len(flat) == math.prod(shape), name
    values = array.array("d" if f64 else "f", [complex(v).real for v in flat])
    if sys.byteorder != "little":
        values.byteswap()
    ext, word = ("f64", "float64") if f64 else ("f32", "float32")
    with open(os.path.join(outdir, "%s.%s" % (name, ext)), "wb") as f:
        values.tofile(f)
    manifest.append("tensor.%s = %s.%s %s %s" % (name, name, ext, word, " ".join(str(d) for d in shape)))


def make_case(root, name):
    c = Case(name)
    D, O, units = c.D, c.O, c.layers * c.D
    y, hT, cT = c.forward()
    outdir = os.path.join(root, name)
    os.makedirs(outdir, exist_ok=True)
    m = ["# fake parity case %s, written by tests/parity/fake_export.py (no torch)" % name,
         "cell = %s" % c.cell, "I = %d" % I, "H = %d" % H] + (["P = %d" % P] if c.cell == "lstmp" else []) + [
         "T = %d" % T, "N = %d" % N, "layers = %d" % c.layers, "bidirectional = %d" % (D - 1),
         "lengths = %s" % (" ".join(map(str, c.lengths)) if c.lengths else "none"),
         "backward = %d" % (1 if c.backward else 0),
         "torch = none (plain Python)", "torch_fp32_device = none (the float64 results rounded)",
         "torch_fp64_device = plain Python"]
    for name_, (shape, v) in c.inputs.items():
        write(outdir, m, name_, shape, v)
    results = [("y", [T, N, D * O], y), ("hT", [units, N, O], hT)] + ([("cT", [units, N, H], cT)] if cT else [])
    if c.backward:
        for name_, (shape, v) in c.cot.items():
            write(outdir, m, name_, shape, v)
        grads = {"x": "dx", "h0": "dh0", "c0": "dc0"}
        for name_ in c.inputs:
            results.append((grads.get(name_, "grad_" + name_), c.inputs[name_][0], c.gradient(name_)))
    for rname, shape, v in results:  # float64 names: y64, hT64, dx64, dh064, grad64_weight_ih_l0, ...
        r64 = rname.replace("grad_", "grad64_") if rname.startswith("grad_") else rname + "64"
        write(outdir, m, rname, shape, v)
        write(outdir, m, r64, shape, v, True)
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
