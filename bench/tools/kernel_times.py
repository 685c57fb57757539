#!/usr/bin/env python3
"""Summarises an ncu CSV (--csv --metrics gpu__time_duration.sum) by kernel: count, total and
mean microseconds, sorted by total. Usage: kernel_times.py FILE.csv [STEPS] [--from NAME [--back K]]
With STEPS, also prints the per-step share (total / STEPS).
With --from NAME, prints instead the kernels in launch order from the last launch of a kernel named
NAME (K launches before it, default 0) to the end, each with its microseconds, and their sum: one
pass of a process that ran several (bench/ncu_pass.sh)."""
import csv, sys, collections

argv = sys.argv[1:]
start_name, back = None, 0
if "--from" in argv:
    i = argv.index("--from")
    start_name = argv[i + 1]
    del argv[i:i + 2]
if "--back" in argv:
    i = argv.index("--back")
    back = int(argv[i + 1])
    del argv[i:i + 2]
rows = list(csv.reader(open(argv[0])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
cols = rows[head]
name_i, val_i, unit_i = cols.index("Kernel Name"), cols.index("Metric Value"), cols.index("Metric Unit")
launches = []
for r in rows[head + 1:]:
    if len(r) <= val_i:
        continue
    v = float(r[val_i].replace(",", ""))
    unit = r[unit_i]
    us = v / 1000 if unit in ("nsecond", "ns") else v * 1000 if unit in ("msecond", "ms") else v
    launches.append((r[name_i].split("(")[0][:70], us))

if start_name is not None:
    at = [i for i, (n, _) in enumerate(launches) if n.strip() == start_name]
    if not at:
        sys.exit(f"kernel_times.py: no kernel named {start_name} in {argv[0]}")
    first = max(0, at[-1] - back)
    for n, us in launches[first:]:
        print(f"{us:9.1f}  {n}")
    print(f"{sum(us for _, us in launches[first:]):9.1f}  all {len(launches) - first} kernels")
    sys.exit(0)

agg = collections.defaultdict(lambda: [0, 0.0])
for n, us in launches:
    agg[n[:60]][0] += 1
    agg[n[:60]][1] += us
steps = float(argv[1]) if len(argv) > 1 else 0
total = sum(t for _, t in agg.values())
print(f"{'kernel':62s} {'count':>6s} {'total us':>10s} {'mean us':>9s}" + (" {:>10s}".format('us/step') if steps else ""))
for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{name:62s} {n:6d} {t:10.1f} {t / n:9.2f}" + (f" {t / steps:10.2f}" if steps else ""))
print(f"{'all kernels':62s} {sum(n for n, _ in agg.values()):6d} {total:10.1f}" + (f" {'':9s} {total / steps:10.2f}" if steps else ""))
