#!/usr/bin/env python3
"""Summarises an ncu CSV (--csv --metrics gpu__time_duration.sum) by kernel: count, total and
mean microseconds, sorted by total. Usage: kernel_times.py FILE.csv [STEPS]
With STEPS, also prints the per-step share (total / STEPS)."""
import csv, sys, collections

rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
cols = rows[head]
name_i, val_i, unit_i = cols.index("Kernel Name"), cols.index("Metric Value"), cols.index("Metric Unit")
agg = collections.defaultdict(lambda: [0, 0.0])
for r in rows[head + 1:]:
    if len(r) <= val_i:
        continue
    v = float(r[val_i].replace(",", ""))
    us = v / 1000 if r[unit_i] == "nsecond" or r[unit_i] == "ns" else v / 1e6 * 1e6 if r[unit_i] == "msecond" else v
    if r[unit_i] in ("usecond", "us"):
        us = v
    name = r[name_i].split("(")[0][:60]
    agg[name][0] += 1
    agg[name][1] += us
steps = float(sys.argv[2]) if len(sys.argv) > 2 else 0
total = sum(t for _, t in agg.values())
print(f"{'kernel':62s} {'count':>6s} {'total us':>10s} {'mean us':>9s}" + (" {:>10s}".format('us/step') if steps else ""))
for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{name:62s} {n:6d} {t:10.1f} {t / n:9.2f}" + (f" {t / steps:10.2f}" if steps else ""))
print(f"{'all kernels':62s} {sum(n for n, _ in agg.values()):6d} {total:10.1f}" + (f" {'':9s} {total / steps:10.2f}" if steps else ""))
