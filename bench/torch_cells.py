#!/usr/bin/env python3
"""torch_cells: what the same recurrent cells cost in PyTorch, for comparison with rnncc.

Times, at bench_rnn's configurations (T, N, I=H):
  * nn.LSTM (cuDNN through PyTorch),
  * eager Python loops of the cells cuDNN cannot run: peephole LSTM, multiplicative LSTM
    (M = H), LSTM with a projection (P = H/2), coupled input-forget gate LSTM (CIFG),
  * the same loops with the step function compiled by torch.compile (by default only for
    the configurations named by --compile-configs, since compiling is slow),
in fp32 with TF32 off and in tf32 (TF32 on for matmuls and cuDNN). Inference = one forward
under no_grad; training = forward + backward of y against a random dy (parameter and input
gradients accumulate, as cuDNN's and rnncc's ADD mode). The input projection W x is hoisted
out of the loop as one GEMM over all steps (the usual fast way to write such loops).

Timing: CUDA events around each call, warm-ups first, median of up to --repeat runs (a
measurement stops early, after --min-repeat runs, once it has taken --max-seconds). A time
budget (--budget) skips what is left once spent; rows that fail say "failed: <reason>".
Runs offline; needs torch and a CUDA GPU (or --device cpu for a functional check).
"""
import argparse
import math
import os
import statistics
import sys
import time
import traceback
import warnings

# name, T, N, I, H, layers, bidirectional: as bench/common.c
CONFIGS = [
    ("ds2", 300, 20, 800, 800, 1, False),
    ("fastrnns", 100, 64, 512, 512, 1, False),
    ("small_b4", 100, 4, 1024, 1024, 1, False),
    ("large", 100, 256, 1024, 1024, 1, False),
    ("deepbench", 25, 32, 1024, 1024, 1, False),
    ("flashrnn", 1024, 16, 768, 768, 1, False),
    ("fastrnns_l2", 100, 64, 512, 512, 2, False),
    ("fastrnns_bi", 100, 64, 512, 512, 1, True),
]
QUICK_CONFIGS = [
    ("quick", 16, 8, 128, 128, 1, False),
    ("quick_l2", 16, 8, 128, 128, 2, False),
    ("quick_bi", 16, 8, 128, 128, 1, True),
]
CELLS = ["peephole", "mlstm", "lstmp", "cifg"]
COLUMNS = CELLS + ["nn.LSTM"]

torch = None  # imported in main(), so that --help and py_compile need no torch


# ---- the cells: one step each, the input projection gx = W x + b hoisted -------------------
# Gate order i, f, g, o as in cells/*.cell; weights uniform in +-1/sqrt(H).

def peephole_step(gx, h, c, U, p_i, p_f, p_o):
    g = torch.addmm(gx, h, U.t())
    i, f, gg, o = g.chunk(4, 1)
    i = torch.sigmoid(i + p_i * c)
    f = torch.sigmoid(f + p_f * c)
    c = f * c + i * torch.tanh(gg)
    o = torch.sigmoid(o + p_o * c)          # the output gate reads the new cell state
    return o * torch.tanh(c), c


def mlstm_step(gx, mx, h, c, U, U_m):
    m = mx * (h @ U_m.t())                  # m = (W_m x) * (U_m h)
    g = torch.addmm(gx, m, U.t())
    i, f, gg, o = g.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
    return torch.sigmoid(o) * torch.tanh(c), c


def lstmp_step(gx, h, c, U, P_h):
    g = torch.addmm(gx, h, U.t())           # h has P units
    i, f, gg, o = g.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
    return (torch.sigmoid(o) * torch.tanh(c)) @ P_h.t(), c


def cifg_step(gx, h, c, U):
    g = torch.addmm(gx, h, U.t())
    i, gg, o = g.chunk(3, 1)
    i = torch.sigmoid(i)
    c = (1 - i) * c + i * torch.tanh(gg)    # f = 1 - i
    return torch.sigmoid(o) * torch.tanh(c), c


STEPS = {"peephole": peephole_step, "mlstm": mlstm_step, "lstmp": lstmp_step, "cifg": cifg_step}


def cell_sizes(cell, H):
    """(gates, size of the emitted state h) of a cell."""
    gates = 3 if cell == "cifg" else 4
    out = H // 2 if cell == "lstmp" else H
    return gates, out


def make_params(cell, cfg, dev, gen):
    """Parameters per unit (layer * dirs + dir): dicts of tensors, uniform +-1/sqrt(H)."""
    _, T, N, I, H, layers, bidir = cfg
    dirs = 2 if bidir else 1
    G, out = cell_sizes(cell, H)
    k = 1.0 / math.sqrt(H)

    def u(*shape):
        return ((torch.rand(*shape, generator=gen, device=dev) * 2 - 1) * k).requires_grad_()

    units = []
    for layer in range(layers):
        inp = I if layer == 0 else out * dirs
        for _ in range(dirs):
            p = {"W": u(G * H, inp), "b": u(G * H), "U": u(G * H, out)}
            if cell == "peephole":
                p.update(p_i=u(H), p_f=u(H), p_o=u(H))
            elif cell == "mlstm":            # M = H
                p.update(W_m=u(H, inp), U_m=u(H, H))
            elif cell == "lstmp":            # P = H/2
                p.update(P_h=u(out, H))
            units.append(p)
    return units


def step_args(cell, p):
    if cell == "peephole":
        return (p["U"], p["p_i"], p["p_f"], p["p_o"])
    if cell == "mlstm":
        return (p["U"], p["U_m"])
    if cell == "lstmp":
        return (p["U"], p["P_h"])
    return (p["U"],)


def run_layer(cell, step, p, x, h, c):
    T, N = x.shape[0], x.shape[1]
    flat = x.reshape(T * N, x.shape[2])
    gx = torch.addmm(p["b"], flat, p["W"].t()).view(T, N, -1)       # one GEMM for every step
    mx = (flat @ p["W_m"].t()).view(T, N, -1) if cell == "mlstm" else None
    args = step_args(cell, p)
    ys = []
    for t in range(T):
        if mx is None:
            h, c = step(gx[t], h, c, *args)
        else:
            h, c = step(gx[t], mx[t], h, c, *args)
        ys.append(h)
    return torch.stack(ys), h, c


def run_stack(cell, step, units, x, h0, c0, layers, dirs):
    """Layers in order; the reverse direction reads the sequence backwards; the directions'
    outputs are concatenated (as nn.LSTM and rnncc do)."""
    inp = x
    hs, cs = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            unit = layer * dirs + d
            xi = inp if d == 0 else inp.flip(0)
            y, h, c = run_layer(cell, step, units[unit], xi, h0[unit], c0[unit])
            outs.append(y if d == 0 else y.flip(0))
            hs.append(h)
            cs.append(c)
        inp = outs[0] if dirs == 1 else torch.cat(outs, dim=2)
    return inp, hs, cs


# ---- precision -------------------------------------------------------------------------------

def set_tf32(on):
    """TF32 for matmuls (cuBLAS, and what inductor calls) and for cuDNN (nn.LSTM). Returns a
    description of the state read back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.backends.cuda.matmul.allow_tf32 = on
            torch.backends.cudnn.allow_tf32 = on
        except Exception:  # newer PyTorch: the fp32_precision API
            torch.backends.cuda.matmul.fp32_precision = "tf32" if on else "ieee"
            torch.backends.cudnn.fp32_precision = "tf32" if on else "ieee"
        try:
            torch.set_float32_matmul_precision("high" if on else "highest")
        except Exception:
            pass
        try:
            state = "matmul allow_tf32=%s, cudnn allow_tf32=%s" % (
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        except Exception:
            state = "matmul fp32_precision=%s, cudnn fp32_precision=%s" % (
                getattr(torch.backends.cuda.matmul, "fp32_precision", "?"),
                getattr(torch.backends.cudnn, "fp32_precision", "?"))
    return state


# ---- timing ------------------------------------------------------------------------------------

class Timer:
    def __init__(self, args, dev):
        self.args, self.dev = args, dev

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize()

    def measure(self, fn, warmup):
        """Median ms of fn() (CUDA events; host clock on a CPU), and the runs taken."""
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        start = time.perf_counter()
        for _ in range(self.args.repeat):
            if self.dev.type == "cuda":
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                fn()
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
            else:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            if len(times) >= self.args.min_repeat and time.perf_counter() - start > self.args.max_seconds:
                break
        return statistics.median(times), min(times), max(times), len(times)


def rel_err(a, b):
    """max|a-b| / max|b| (inf when anything is not finite)."""
    a, b = a.detach().double(), b.detach().double()
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return float("inf")
    den = b.abs().max().item()
    num = (a - b).abs().max().item()
    return num / den if den > 0 else num


# ---- one measurement group: a model at a configuration and precision, both modes ----------------

class Bench:
    def __init__(self, args, dev):
        self.args, self.dev = args, dev
        self.timer = Timer(args, dev)
        self.rows = []
        self.t0 = time.perf_counter()
        self.md = open(args.markdown, "a") if args.markdown else None
        if self.md:
            self.md.write("\n### torch_cells: %s, torch %s, median of up to %d runs (ms per whole sequence)\n\n"
                          "| model | implementation | config (T, N, I=H, layers, dirs) | precision | mode | ms | "
                          "µs/step | runs | note |\n|---|---|---|---|---|---|---|---|---|\n"
                          % (device_name(dev), torch.__version__, args.repeat))
            self.md.flush()

    def over_budget(self):
        return self.args.budget > 0 and time.perf_counter() - self.t0 > self.args.budget

    def add(self, model, impl, cfg, prec, mode, ms=None, runs=0, note="", spread=None):
        row = dict(model=model, impl=impl, cfg=cfg, prec=prec, mode=mode, ms=ms, runs=runs, note=note)
        self.rows.append(row)
        name, T, N, I, H, layers, bidir = cfg
        if ms is not None:
            extra = " (min %.3f, max %.3f)" % spread if spread else ""
            print("  %-9s %-7s %-12s %s %-5s %10.3f ms%s, %d runs, %.1f us/step %s"
                  % (model, impl, name, prec, mode, ms, extra, runs, ms * 1e3 / T, note), flush=True)
        else:
            print("  %-9s %-7s %-12s %s %-5s %s" % (model, impl, name, prec, mode, note), flush=True)
        if self.md:
            self.md.write("| %s | %s | %s (%d, %d, %d, %d, %d) | %s | %s | %s | %s | %d | %s |\n" % (
                model, impl, name, T, N, H, layers, 2 if bidir else 1, prec,
                "inference" if mode == "infer" else "training",
                "%.3f" % ms if ms is not None else "n/a", "%.1f" % (ms * 1e3 / T) if ms is not None else "n/a",
                runs, note.replace("|", "/")))
            self.md.flush()

    def skip_both(self, model, impl, cfg, prec, why):
        for mode in ("infer", "train"):
            if mode in self.args.modes:
                self.add(model, impl, cfg, prec, mode, note=why)

    def data(self, cfg, out, seed):
        _, T, N, I, H, layers, bidir = cfg
        dirs = 2 if bidir else 1
        gen = torch.Generator(device=self.dev)
        gen.manual_seed(seed)
        x = (torch.rand(T, N, I, generator=gen, device=self.dev) * 2 - 1).requires_grad_()
        h0 = [(torch.rand(N, out, generator=gen, device=self.dev) * 2 - 1) for _ in range(layers * dirs)]
        c0 = [(torch.rand(N, H, generator=gen, device=self.dev) * 2 - 1) for _ in range(layers * dirs)]
        dy = torch.rand(T, N, out * dirs, generator=gen, device=self.dev) * 2 - 1
        return gen, x, h0, c0, dy

    def custom(self, cell, impl, cfg, prec, seed):
        """A custom cell, eager or with its step compiled."""
        name, T, N, I, H, layers, bidir = cfg
        dirs = 2 if bidir else 1
        _, out = cell_sizes(cell, H)
        gen, x, h0, c0, dy = self.data(cfg, out, seed)
        units = make_params(cell, cfg, self.dev, gen)
        step = STEPS[cell]
        note = ""
        if impl == "compile":
            torch._dynamo.reset()
            graphs0 = unique_graphs()
            step = torch.compile(step, dynamic=False)
        # eager reference output for the compiled version's check
        ref = None
        if impl == "compile":
            with torch.no_grad():
                ref = run_stack(cell, STEPS[cell], units, x, h0, c0, layers, dirs)[0]

        def infer():
            with torch.no_grad():
                return run_stack(cell, step, units, x, h0, c0, layers, dirs)[0]

        def train():
            y = run_stack(cell, step, units, x, h0, c0, layers, dirs)[0]
            y.backward(dy)

        for mode in ("infer", "train"):
            if mode not in self.args.modes:
                continue
            if self.over_budget():
                self.add(cell, impl, cfg, prec, mode, note="skipped: time budget")
                continue
            fn = infer if mode == "infer" else train
            try:
                t0 = time.perf_counter()
                y = fn()                                  # compiles, for torch.compile
                self.timer.sync()
                first_s = time.perf_counter() - t0
                note = ""
                if mode == "infer":
                    if impl == "compile":
                        e = rel_err(y, ref)
                        tol = 1e-3 if prec == "fp32" else 2e-2
                        if not e <= tol:
                            self.add(cell, impl, cfg, prec, mode,
                                     note="failed: compiled output differs from eager by %.2e > %.0e" % (e, tol))
                            continue
                        note = "first call %.1f s; err vs eager %.1e" % (first_s, e)
                    elif not bool(torch.isfinite(y).all()):
                        self.add(cell, impl, cfg, prec, mode, note="failed: non-finite output")
                        continue
                elif impl == "compile":
                    note = "first call %.1f s" % first_s
                ms, lo, hi, runs = self.timer.measure(fn, self.args.warmup)
                if impl == "compile":
                    g = unique_graphs() - graphs0
                    if g > 4:
                        note += "; %d graphs compiled (recompilations)" % g
                self.add(cell, impl, cfg, prec, mode, ms, runs, note, (lo, hi))
            except Exception as exc:  # report, go on
                self.add(cell, impl, cfg, prec, mode, note="failed: %s" % short(exc))
                if self.args.verbose:
                    traceback.print_exc()

    def nn_lstm(self, cfg, prec, seed):
        name, T, N, I, H, layers, bidir = cfg
        dirs = 2 if bidir else 1
        gen, x, _, _, dy = self.data(cfg, H, seed)
        try:
            lstm = torch.nn.LSTM(I, H, num_layers=layers, bidirectional=bidir).to(self.dev)
            h0 = torch.rand(layers * dirs, N, H, generator=gen, device=self.dev) * 2 - 1
            c0 = torch.rand(layers * dirs, N, H, generator=gen, device=self.dev) * 2 - 1
        except Exception as exc:
            self.skip_both("nn.LSTM", "cudnn", cfg, prec, "failed: %s" % short(exc))
            return

        def infer():
            with torch.no_grad():
                return lstm(x, (h0, c0))[0]

        def train():
            y = lstm(x, (h0, c0))[0]
            y.backward(dy)

        for mode in ("infer", "train"):
            if mode not in self.args.modes:
                continue
            if self.over_budget():
                self.add("nn.LSTM", "cudnn", cfg, prec, mode, note="skipped: time budget")
                continue
            try:
                ms, lo, hi, runs = self.timer.measure(infer if mode == "infer" else train, max(self.args.warmup, 3))
                self.add("nn.LSTM", "cudnn", cfg, prec, mode, ms, runs, "", (lo, hi))
            except Exception as exc:
                self.add("nn.LSTM", "cudnn", cfg, prec, mode, note="failed: %s" % short(exc))
                if self.args.verbose:
                    traceback.print_exc()


def unique_graphs():
    try:
        return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    except Exception:
        return 0


def short(exc):
    text = ("%s: %s" % (type(exc).__name__, exc)).replace("\n", " ")
    return text[:300]


def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return "cpu"


# ---- tables ---------------------------------------------------------------------------------------

def summary_lines(rows, precs, configs, impls):
    """One line per (config, precision, implementation): each model's inference / training ms."""
    def cell(model, impl, cfg, prec):
        got = {}
        for r in rows:
            if r["model"] == model and r["impl"] == impl and r["cfg"][0] == cfg[0] and r["prec"] == prec:
                got[r["mode"]] = r
        parts = []
        for mode in ("infer", "train"):
            r = got.get(mode)
            if r is None:
                parts.append("-")
            elif r["ms"] is not None:
                parts.append("%.3g" % r["ms"])
            elif r["note"].startswith("skipped"):
                parts.append("skip")
            else:
                parts.append("FAIL")
        return "/".join(parts)

    lines = ["%-12s %-4s %-8s" % ("config", "prec", "impl") + "".join(" %15s" % c for c in COLUMNS)]
    for prec in precs:
        for cfg in configs:
            for impl in impls:
                cols = []
                for model in COLUMNS:
                    m_impl = "cudnn" if model == "nn.LSTM" else impl
                    if model == "nn.LSTM" and impl != "eager":
                        cols.append("-")
                    else:
                        cols.append(cell(model, m_impl, cfg, prec))
                if all(c in ("-", "-/-") for c in cols):
                    continue
                lines.append("%-12s %-4s %-8s" % (cfg[0], prec, impl) + "".join(" %15s" % c for c in cols))
    return lines


def main(argv=None):
    global torch
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", default=[], help="configuration name (repeatable, or comma list)")
    ap.add_argument("--cells", default=",".join(CELLS), help="custom cells to run (default: all four)")
    ap.add_argument("--precision", action="append", default=[], help="fp32 and/or tf32 (default: both)")
    ap.add_argument("--mode", choices=["both", "inference", "training"], default="both")
    ap.add_argument("--impl", default="cudnn,eager,compile",
                    help="which implementations: cudnn (nn.LSTM), eager, compile (default: all)")
    ap.add_argument("--compile-configs", default=None,
                    help="configurations for torch.compile rows: names, 'all', or 'T<=100' "
                         "(default: fastrnns; with --quick: quick)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs at most (default 20)")
    ap.add_argument("--min-repeat", type=int, default=5, help="timed runs at least (default 5)")
    ap.add_argument("--max-seconds", type=float, default=2.0,
                    help="stop a measurement after this long once --min-repeat runs are in (default 2)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    ap.add_argument("--budget", type=float, default=280.0,
                    help="seconds for the whole script; what is left is skipped (default 280; 0 = none)")
    ap.add_argument("--quick", action="store_true", help="small shapes, for a smoke test")
    ap.add_argument("--markdown", help="append markdown rows to this file")
    ap.add_argument("--summary", help="append the compact table to this file")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (a functional check only)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="print tracebacks of failed rows")
    args = ap.parse_args(argv)

    def names(values):
        out = []
        for v in values:
            out += [s for s in v.split(",") if s]
        return out

    table = QUICK_CONFIGS if args.quick else CONFIGS
    by_name = {c[0]: c for c in CONFIGS + QUICK_CONFIGS}
    try:
        configs = [by_name[n] for n in names(args.config)] or list(table)
    except KeyError as exc:
        ap.error("unknown configuration %s; known: %s" % (exc, ", ".join(by_name)))
    precs = names(args.precision) or ["fp32", "tf32"]
    if any(p not in ("fp32", "tf32") for p in precs):
        ap.error("--precision takes fp32 and tf32")
    cells = names([args.cells])
    if any(c not in CELLS for c in cells):
        ap.error("--cells takes %s" % ", ".join(CELLS))
    impls = names([args.impl])
    if any(i not in ("cudnn", "eager", "compile") for i in impls):
        ap.error("--impl takes cudnn, eager, compile")
    args.modes = {"both": ("infer", "train"), "inference": ("infer",), "training": ("train",)}[args.mode]
    cc = args.compile_configs or ("quick" if args.quick else "fastrnns")
    if cc == "all":
        compile_configs = list(configs)
    elif cc == "T<=100":
        compile_configs = [c for c in configs if c[1] <= 100]
    else:
        wanted = names([cc])
        compile_configs = [c for c in configs if c[0] in wanted]

    try:
        import torch as _torch
    except Exception as exc:
        print("torch_cells: cannot import torch (%s): nothing to measure" % short(exc), file=sys.stderr)
        return 77
    torch = _torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_cells: no CUDA device: nothing to measure (--device cpu runs a functional check)", file=sys.stderr)
        return 77
    dev = torch.device(args.device)
    try:
        import torch._dynamo  # noqa: F401  (for reset and the counters)
    except Exception:
        if "compile" in impls:
            print("torch_cells: torch._dynamo is unavailable: no compile rows", flush=True)
            impls = [i for i in impls if i != "compile"]

    b = Bench(args, dev)
    print("torch_cells: torch %s on %s; cuDNN %s; median of up to %d runs (at least %d, stopping after %.1f s), "
          "%d warm-ups; budget %.0f s" % (torch.__version__, device_name(dev),
                                          torch.backends.cudnn.version() if dev.type == "cuda" else "-",
                                          args.repeat, args.min_repeat, args.max_seconds, args.warmup, args.budget),
          flush=True)
    # order: the cheap and most asked-for first, compilation last (the budget cuts from the end)
    for prec in precs:
        print("== %s: %s" % (prec, set_tf32(prec == "tf32")), flush=True)
        if "cudnn" in impls:
            for i, cfg in enumerate(configs):
                if b.over_budget():
                    b.skip_both("nn.LSTM", "cudnn", cfg, prec, "skipped: time budget")
                    continue
                b.nn_lstm(cfg, prec, args.seed * 1000 + i)
        if "eager" in impls:
            for i, cfg in enumerate(configs):
                for k, cell in enumerate(cells):
                    if b.over_budget():
                        b.skip_both(cell, "eager", cfg, prec, "skipped: time budget")
                        continue
                    b.custom(cell, "eager", cfg, prec, args.seed * 1000 + i * 10 + k)
    if "compile" in impls:
        for prec in precs:
            print("== %s, torch.compile: %s" % (prec, set_tf32(prec == "tf32")), flush=True)
            for i, cfg in enumerate(compile_configs):
                for k, cell in enumerate(cells):
                    if b.over_budget():
                        b.skip_both(cell, "compile", cfg, prec, "skipped: time budget")
                        continue
                    b.custom(cell, "compile", cfg, prec, args.seed * 1000 + i * 10 + k)
    set_tf32(False)

    lines = summary_lines(b.rows, precs, configs, [i for i in ("eager", "compile") if i in impls] or ["eager"])
    head = ("== torch_cells: PyTorch ms per whole sequence, inference/training (eager and torch.compile loops of "
            "the custom cells; nn.LSTM = cuDNN through PyTorch), %s" % device_name(dev))
    if b.md:
        b.md.close()
    if args.summary:
        with open(args.summary, "a") as f:
            f.write("\n" + head + "\n" + "\n".join(lines) + "\n")
    failed = sum(1 for r in b.rows if r["note"].startswith("failed"))
    print("\n" + head)
    print("\n".join(lines))
    print("torch_cells: %d rows, %d failed, %d skipped; %.0f s" % (
        len(b.rows), failed, sum(1 for r in b.rows if r["note"].startswith("skipped")), time.perf_counter() - b.t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
