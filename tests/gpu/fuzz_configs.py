#!/usr/bin/env python3
"""Random configurations through `rnncc run`, each checked against the double-precision reference.

Device run (the GPU machine, build/ built here and carried):
    python3 tests/gpu/fuzz_configs.py [--seconds S] [--jobs J] [--seed K] [--out DIR]
draws configurations (a shipped cell or one of tests/random_cells' two families; sizes, batch, steps,
layers, directions, variable lengths, training, precision, backend, and the persistent tile's
environment knobs) and runs J of them at a time for S seconds. A run that fails its bound is run
again at another precision with the same data, and kept as a suspect where the error does not
shrink with the unit roundoff (a wrong index or a race errs as much in fp32 as in tf32;
a sensitive cell amplifies rounding alike in both precisions, so its error falls ~2^13-fold from
tf32 to fp32: at least RATIO-fold counts as rounding; a tf32x3 run is set beside tf32 too). Rounding is then run once more on the other
backend at the same precision, which errs about as much (within ~5-fold) where it is rounding; a
RATIO-fold gap makes it a suspect (a race that missed the rerun: NOTES section 75). Only the GEMMs'
inputs change with the precision, so rounding elsewhere (the element-wise code is fp32 in every
precision) stays "suspect" and needs a look (bench/NOTES.md section 74). Failed bounds on gradients with the reference's
note on a kink (relu, abs...: docs/training.md) count as kinks. Crashes, hangs and suspects are
defects; runs refused with an error message are listed. Prints a summary; writes every non-pass to
DIR/fuzz-SEED.txt. Exit status 0 when no defect was found, 1 otherwise.

Host checks (`make test`):
    python3 tests/gpu/fuzz_configs.py --host-check N
runs N drawn configurations' command lines; without a GPU each must reach the device (fail with
"no CUDA device") rather than be refused for its arguments, its environment or its cell.
    python3 tests/gpu/fuzz_configs.py --self-test
checks the verdicts on canned reports (an error that is not finite in fp32 is never rounding).
"""
import argparse
import glob
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = [1, 2, 3, 5, 7, 8, 12, 16, 17, 24, 31, 32, 40, 48, 63, 64, 65, 96, 100, 127, 128, 129, 160, 192, 255,
         256, 257, 300]
RATIO = 30  # the error's fall from a 16-bit or tf32 run to fp32 that marks it as rounding
NO_DEVICE = "no CUDA device"


def symbols(path):
    """The dimension symbols a cell file uses (its shapes' capital names), sorted."""
    with open(path) as f:
        return sorted(set(re.findall(r"\b([A-Z])\b(?=[^\[\]]*\])", f.read())))


def draw(seed, k, shipped, random_cells):
    """Configuration k of the campaign seed: (arguments after `rnncc run`, environment)."""
    r = random.Random(seed * 1000003 + k)
    cell = r.choice(shipped) if r.random() < 0.4 or not random_cells else r.choice(random_cells)
    H = r.choice(SIZES)
    dims = [f"H={H}"]
    for sym in symbols(cell):
        if sym == "I":
            # inputs at most 4H long: `rnncc run` draws weights in +-1/sqrt(H) and inputs in +-1, so a
            # longer input saturates the gates (I = 192 at H = 1: tanh(~8)), where 1 - g^2 from a rounded g
            # loses its digits in any precision and a gradient's check says nothing (NOTES section 74)
            dims.append(f"I={r.choice([i for i in SIZES if i <= 4 * H] + [H] * 5)}")
        elif sym != "H":  # P, M: projections and second states
            dims.append(f"{sym}={r.choice([1, 3, 5, 8, 16, 33, 64, 100, 128, 200])}")
    args = [cell] + [a for d in dims for a in ("--dim", d)]
    args += ["--batch", str(r.choice([1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 24, 31, 32, 33, 40, 64])),
             "--seq", str(r.choice([1, 2, 3, 5, 8, 13])), "--repeat", "1", "--seed", str(r.randrange(1000))]
    if r.random() < 0.35:
        args += ["--layers", str(r.choice([2, 3]))]
    if r.random() < 0.3:
        args.append("--bidirectional")
    if r.random() < 0.5:
        args.append("--varlen")
    if r.random() < 0.6:
        args.append("--train")
    precision = r.choice(["fp32", "fp32", "tf32", "fp16", "bf16", "tf32x3"])
    backend = r.choice(["auto", "persistent", "persistent", "cublas"])
    args += ["--precision", precision, "--backend", backend]
    if r.random() < 0.2:  # the 16-bit copy in fp16 and bf16, a folded cell's V in every precision
        args.append("--keep-derived-weights")
    env = {"RNNCC_PERSIST_SEARCH": "0" if r.random() < 0.85 else "1"}
    if backend != "cublas":
        knobs = [("RNNCC_PERSIST_HANDOFF", 0.3, ["flags", "barrier"]), ("RNNCC_PERSIST_CLUSTER", 0.3, ["1", "2", "4"]),
                 ("RNNCC_PERSIST_WARPS", 0.2, ["4", "8", "16"]), ("RNNCC_PERSIST_SEQS", 0.2, ["4", "8", "16"]),
                 ("RNNCC_PERSIST_WAVES", 0.15, ["0", "2", "4"]), ("RNNCC_PERSIST_SPLIT", 0.15, ["0", "1"]),
                 ("RNNCC_PERSIST_BLOCKS", 0.15, ["8", "32", "64", "96", "128"]),
                 ("RNNCC_PERSIST_CHUNK", 0.1, ["256", "512"])]
        for var, p, values in knobs:
            if r.random() < p:
                env[var] = r.choice(values)
    for var in ("RNNCC_GRAPHS", "RNNCC_WAVEFRONT"):
        if r.random() < 0.15:
            env[var] = "0"
    return args, env


def run(rnncc, args, env, timeout=180):
    """(exit status or "timeout", output) of `rnncc run ARGS` with env added."""
    e = dict(os.environ)
    e.update(env)
    try:
        p = subprocess.run([rnncc, "run"] + args, env=e, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def errors(text):
    """From `rnncc run`'s report: (forward worst, past its bound), (gradient worst, past its bound)
    (None for either that the report lacks), and whether the reference's kink note is given."""
    fwd = re.search(r"worst relative error against the double-precision reference: (\S+) \(bound \S+\): (.*)", text)
    grad = re.search(r"gradients: dx (\S+), dh0 (\S+), weights (\S+) .*bound \S+: (.*)", text)
    return ((float(fwd.group(1)), fwd.group(2) != "ok") if fwd else None,
            (max(float(g) for g in grad.groups()[:3]), grad.group(4) != "ok") if grad else None,
            "derivative jumps" in text)


def worst(result, which):
    """The forward (which 0) or gradient (1) worst error of a rerun's (exit status, output), or None
    where it timed out or its report lacks that line."""
    rc, text = result
    e = errors(text)[which] if rc != "timeout" else None
    return e[0] if e else None


def at_precision(args, precision):
    """args with the precision replaced."""
    out = list(args)
    out[out.index("--precision") + 1] = precision
    return out


def judge(rerun, args, rc, text):
    """The outcome of one run: (kind, detail); kinds pass, kink, rounding, refused, and the defects
    crash, hang, suspect. rerun(args) runs args again: (exit status or "timeout", output)."""
    if rc == 0:
        return "pass", ""
    if rc == "timeout":
        return "hang", "no exit within 180 s"
    if rc < 0:
        return "crash", f"signal {-rc}"
    fwd, grad, kink = errors(text)
    if fwd is None:
        return "refused", text.strip().splitlines()[-1] if text.strip() else f"exit {rc}, no output"
    if not fwd[1] and grad and grad[1] and kink:
        return "kink", f"gradients {grad[0]:.3g} past their bound at a kink"
    which = 0 if fwd[1] else 1  # the error compared across precisions: forward, else gradients
    if which == 1 and not (grad and grad[1]):
        return "suspect", f"exit {rc} with every error within its bound"
    mine = (fwd, grad)[which][0]
    precision = args[args.index("--precision") + 1]
    # fp32 and tf32x3 (whose products err ~2^-19, tf32's ~2^-11) beside tf32; the others beside fp32
    other = "tf32" if precision in ("fp32", "tf32x3") else "fp32"
    first = rerun(at_precision(args, other))
    theirs = worst(first, which)
    if theirs is None:
        return "suspect", f"{precision} {mine:.3g}; the {other} run gave no error ({first[0]})"
    low, high = (theirs, mine) if other == "fp32" else (mine, theirs)
    detail = f"{['forward', 'gradients'][which]}: {precision} {mine:.3g}, {other} {theirs:.3g}"
    # an fp32 error that is not finite is no rounding (inf >= 30 * inf held: a race gave inf in both)
    if not (math.isfinite(low) and high >= RATIO * low):
        return "suspect", detail
    # a race may miss the rerun: the other backend at this precision errs as much if it is rounding
    # (a sensitive cell's errors differ up to ~5-fold between them, NOTES section 74)
    persistent = re.search(r"^\s*backend: persistent", text, re.M) is not None
    again = list(args)
    again[again.index("--backend") + 1] = "cublas" if persistent else "persistent"
    alt = worst(rerun(again), which)
    if alt is None:  # the other backend refused the configuration
        return "rounding", detail
    detail += f"; {'cuBLAS' if persistent else 'persistent'} {precision} {alt:.3g}"
    return ("suspect", detail) if not math.isfinite(mine) or mine >= RATIO * alt else ("rounding", detail)


def host_check(rnncc, n, shipped, random_cells):
    """Draws n configurations and runs each: 0 when every one reaches the device (or passes)."""
    bad = 0
    for k in range(n):
        args, env = draw(1, k, shipped, random_cells)
        rc, text = run(rnncc, args, env)
        if rc != 0 and NO_DEVICE not in text:
            bad += 1
            print(f"fuzz_configs: configuration {k} refused: {env} rnncc run {' '.join(args)}\n{text}", file=sys.stderr)
    print(f"fuzz_configs --host-check: {n - bad} of {n} configurations reach the device"
          + ("" if not bad else f"; {bad} refused"))
    return 1 if bad else 0


def report(fwd, bound, grad=None):
    """The lines of `rnncc run`'s report that errors() reads (self_test's canned runs)."""
    text = f"  worst relative error against the double-precision reference: {fwd} (bound {bound}): " + \
        ("ok" if float(fwd) <= bound else "TOO LARGE") + "\n"
    if grad is not None:
        text += f"  gradients: dx {grad}, dh0 {grad}, weights {grad} (worst: U0); bound 1e-04: " + \
            ("ok" if float(grad) <= 1e-4 else "TOO LARGE") + "\n"
    return text


def self_test():
    """judge's verdicts on canned reports (`make test`): 0 when each is the expected one."""
    args = ["c.cell", "--precision", "tf32", "--backend", "auto"]
    used = "  backend: persistent: step weights 0.1 MB fit on chip\n"
    cases = [  # (first run's exit status, its report, the fp32 run's, the other backend's, the verdict)
        (0, report("1e-6", 5e-3), None, None, "pass"),
        (1, report("0.02", 5e-3), report("3e-7", 1e-5), None, "rounding"),  # falls 66-fold; the other backend refused
        (1, used + report("0.02", 5e-3), report("3e-7", 1e-5), report("0.005", 5e-3), "rounding"),  # alike
        (1, used + report("0.02", 5e-3), report("3e-7", 1e-5), report("1e-4", 5e-3), "suspect"),  # 200-fold
        (1, report("0.02", 5e-3), report("0.01", 1e-5), None, "suspect"),  # an index or a race errs alike
        (1, report("inf", 5e-3), report("inf", 1e-5), None, "suspect"),  # inf >= 30 * inf held before
        (1, report("nan", 5e-3), report("nan", 1e-5), None, "suspect"),
        (1, report("1e-3", 5e-3, "0.2") + "derivative jumps", None, None, "kink"),
        (-11, "", None, None, "crash"),
        ("timeout", "", None, None, "hang"),
    ]
    cases = [(args,) + c for c in cases]
    # tf32x3 beside tf32 (the second report): a sensitive cell's error grows ~2^8-fold there; a fault's does not
    x3 = ["c.cell", "--precision", "tf32x3", "--backend", "auto"]
    cases += [(x3, 1, report("1e-4", 5e-5), report("0.02", 5e-3), None, "rounding"),
              (x3, 1, report("1e-4", 5e-5), report("3e-4", 5e-3), None, "suspect")]
    bad = 0
    for case_args, rc, first, second, third, want in cases:
        def rerun(again, second=second, third=third, mine=case_args[case_args.index("--precision") + 1]):
            same = again[again.index("--precision") + 1] == mine  # the other backend, same precision
            return (1, (third if same else second) or "")
        got, detail = judge(rerun, case_args, rc, first)
        if got != want:
            bad += 1
            print(f"fuzz_configs --self-test: {want} expected, {got} given ({detail}) for:\n{first}", file=sys.stderr)
    print(f"fuzz_configs --self-test: {len(cases) - bad} of {len(cases)} verdicts as expected")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300, help="how long to draw new runs (default 300)")
    ap.add_argument("--jobs", type=int, default=12, help="runs at a time (default 12)")
    ap.add_argument("--seed", type=int, default=1, help="the campaign's seed (default 1)")
    ap.add_argument("--out", default=".", help="folder of the report fuzz-SEED.txt (default .)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build folder (default build)")
    ap.add_argument("--cells", type=int, default=200, help="random cells of each family drawn from (default 200)")
    ap.add_argument("--host-check", type=int, metavar="N", help="only check N configurations' command lines")
    ap.add_argument("--self-test", action="store_true", help="only check the verdicts on canned reports")
    o = ap.parse_args()
    if o.self_test:
        return self_test()
    rnncc = os.path.join(o.build, "rnncc")
    gen = os.path.join(o.build, "tests", "random_cells")
    for exe in (rnncc, gen):
        if not os.access(exe, os.X_OK):
            sys.exit(f"fuzz_configs: {exe} is not built (make {os.path.relpath(exe, ROOT)}, here)")
    shipped = sorted(glob.glob(os.path.join(ROOT, "cells", "*.cell")))
    with tempfile.TemporaryDirectory() as cells_dir:
        subprocess.run([gen, "1", str(o.cells), cells_dir], check=True)
        subprocess.run([gen, "--wide", "1", str(o.cells), cells_dir], check=True)
        random_cells = sorted(glob.glob(os.path.join(cells_dir, "*.cell")))
        if o.host_check is not None:
            return host_check(rnncc, o.host_check, shipped, random_cells)
        start, results = time.time(), []

        def one(k):
            args, env = draw(o.seed, k, shipped, random_cells)
            t0 = time.time()
            rc, text = run(rnncc, args, env)
            kind, detail = judge(lambda again: run(rnncc, again, env), args, rc, text)
            return k, kind, detail, time.time() - t0, args, env, text

        with ThreadPoolExecutor(o.jobs) as pool:
            pending, k = [], 0
            while time.time() - start < o.seconds:
                results += [f.result() for f in pending if f.done()]
                pending = [f for f in pending if not f.done()]
                while len(pending) < 2 * o.jobs:
                    pending.append(pool.submit(one, k))
                    k += 1
                time.sleep(0.2)
            for f in pending:  # the queued ones are dropped, the running ones finish
                if not f.cancel():
                    results.append(f.result())
    counts, defects = {}, 0
    report = os.path.join(o.out, f"fuzz-{o.seed}.txt")
    with open(report, "w") as log:
        for k, kind, detail, dt, args, env, text in sorted(results, key=lambda x: x[0]):
            counts[kind] = counts.get(kind, 0) + 1
            defects += kind in ("crash", "hang", "suspect")
            if kind != "pass":
                cell = os.path.basename(args[0])
                family = re.match(r"(rnd|wide)(\d+)\.cell$", cell)
                if family:
                    wide = " --wide" if family.group(1) == "wide" else ""
                    cell += f" (random_cells{wide} {family.group(2)} {family.group(2)} DIR)"
                envs = " ".join(f"{a}={b}" for a, b in env.items())
                log.write(f"### {k} {kind}: {detail} ({dt:.1f} s)\n{cell}: {envs} rnncc run {' '.join(args[1:])}\n"
                          f"{text[-1500:]}\n")
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    print(f"fuzz_configs seed {o.seed}: {len(results)} runs in {time.time() - start:.0f} s: {summary}; "
          f"{defects} defects (report: {report})")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
