#!/usr/bin/env python3
"""Each side's time a step and its pass's fixed cost, from two bench_rnn markdown tables of the same runs at two
lengths (bench_rnn --steps T1 and --steps T2, --markdown): prints both tables' NAME@T rows, then per configuration,
cell, precision and mode, best cuDNN's and rnncc's µs a step (the slope) and fixed µs a pass (the intercept: what
does not grow with T) and their difference. Rows present at one length only, or not timed (skip, n/a, FAIL,
MISMATCH), are named and left out.
Usage: fixed_cost.py T1.md T2.md (bench/fixed_cost.sh runs it; bench/NOTES.md section 112)."""
import re, sys

ROW = re.compile(r"^\| (\S+)@(\d+) \(")
LINE = "%-12s %-4s %-4s %-9s %-22s %-22s %s"


def first_ms(text):
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)(?:\s+(\S+))?\s*$", text)
    return (float(m.group(1)), m.group(2) or "") if m else (None, "")


def read(path):
    """{(config, cell, precision, mode): (T, best ms, best's algorithm, rnncc ms)}"""
    rows = {}
    for line in open(path):
        m = ROW.match(line)
        if not m:
            continue
        print(line.rstrip("\n"))
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) < 10:
            continue
        best, algo = first_ms(cols[8])
        rn, _ = first_ms(cols[9])
        rows[(m.group(1), cols[1], cols[2], cols[3])] = (int(m.group(2)), best, algo, rn)
    return rows


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__.split("\n")[-1] + "\n")
        return 2
    a, b = read(argv[1]), read(argv[2])
    if not a or not b:
        sys.stderr.write("fixed_cost.py: no NAME@T rows in %s\n" % (argv[1] if not a else argv[2]))
        return 1
    print(LINE % ("config", "cell", "prec", "mode", "cuDNN: us a step, fixed", "rnncc: us a step, fixed",
                  "fixed, rnncc - cuDNN"))
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print("%s %s %s %s: at one length only" % key)
            continue
        (t1, c1, al1, r1), (t2, c2, al2, r2) = a[key], b[key]
        if t1 == t2:
            print("%s %s %s %s: both tables at T = %d" % (key + (t1,)))
            continue
        cells = []
        for x1, x2 in ((c1, c2), (r1, r2)):
            if x1 is None or x2 is None:
                cells.append(None)
                continue
            step = (x2 - x1) / (t2 - t1) * 1e3
            cells.append((step, x1 * 1e3 - t1 * step))
        text = ["%8.2f %8.1f" % c if c else "     not timed" for c in cells]
        diff = "%+.1f us" % (cells[1][1] - cells[0][1]) if all(cells) else "n/a"
        note = "" if al1 == al2 or not (al1 and al2) else "  (cuDNN's best: %s at T = %d, %s at T = %d)" % (al1, t1, al2, t2)
        print(LINE % (key + (text[0], text[1], diff)) + note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
