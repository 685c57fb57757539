#!/usr/bin/env python3
"""Summarises a trace written by bench/kernel_trace.c (lines KIND START_NS END_NS STREAM GRAPH NAME): the
activities in start order, each with its start (us from the window's first), its duration, the GPU's idle
time before it (from the latest end so far; negative: it overlaps what ran before) and its stream and name;
then the window's span, busy time (the union of the activities), idle time and the sum of durations.
Lines of host API calls (KIND A: runtime, D: driver; RNNCC_TRACE_HOST=1) are left out unless --host.
Usage: trace_gaps.py FILE [--from NAME [--back K]] [--count N] [--width W] [--host US]
  --from NAME  the window starts at the last activity whose name contains NAME (K activities before it,
               default 0) and runs to the end: one pass of a program that ran several.
  --count N    only the window's first N activities.
  --width W    names cut to W characters (default 60).
  --host US    the host's API calls too, interleaved (kind A or D, thread in the stream column, no idle time; not
               in the totals), from US us before the window's first activity to its last one's end: what the host
               did before and while the GPU ran the window."""
import sys


def split_options(argv, names, prog, usage):
    """The one positional argument and the options named (each --NAME VALUE, the last one given) as a dict of
    strings; exits with a message on a missing value or a positional count other than one."""
    given, rest = {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in names:
            if i + 1 >= len(argv):
                sys.exit("%s: %s needs a value" % (prog, a))
            given[a[2:]] = argv[i + 1]
            i += 2
        else:
            rest.append(a)
            i += 1
    if len(rest) != 1:
        sys.exit(usage)
    return rest[0], given


def parse_args(argv):
    opts = {"from": None, "back": 0, "count": None, "width": 60, "host": None}
    path, given = split_options(argv, ("--from", "--back", "--count", "--width", "--host"), "trace_gaps.py", __doc__)
    for k, v in given.items():
        if k == "from":
            opts["from"] = v
            continue
        try:
            n = int(v)
        except ValueError:
            sys.exit("trace_gaps.py: --%s: not a whole number: %s" % (k, v))
        if n < 0 or (k not in ("back", "host") and n == 0):
            sys.exit("trace_gaps.py: --%s: out of range: %s" % (k, v))
        opts[k] = n
    if opts["back"] and opts["from"] is None:
        sys.exit("trace_gaps.py: --back counts back from --from's activity: give --from NAME")
    return path, opts


def read_trace(path):
    """The GPU's activities and the host's API calls, each sorted by start."""
    acts, host = [], []
    with open(path) as f:
        for no, line in enumerate(f, 1):
            parts = line.split(None, 5)
            try:
                if len(parts) < 6 or parts[0] not in ("K", "C", "S", "A", "D"):
                    raise ValueError
                start, end, stream, graph = int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4])
            except ValueError:
                sys.exit("trace_gaps.py: %s:%d: not a trace line: %r" % (path, no, line.rstrip("\n")))
            (host if parts[0] in ("A", "D") else acts).append((start, end, stream, graph, parts[0], parts[5].rstrip("\n")))
    acts.sort()
    host.sort()
    return acts, host


def busy_time(acts):
    """The time some activity of acts (sorted by start) runs: their union's length, in ns."""
    busy, latest = 0, acts[0][0] if acts else 0
    for a in acts:
        busy += max(0, a[1] - max(a[0], latest))
        latest = max(latest, a[1])
    return busy


def window(acts, name, back, count):
    lo = 0
    if name is not None:
        hits = [i for i, a in enumerate(acts) if name in a[5]]
        if not hits:
            sys.exit("trace_gaps.py: no activity named like %r" % name)
        lo = max(0, hits[-1] - back)
    w = acts[lo:]
    return w[:count] if count else w


def main():
    path, opts = parse_args(sys.argv[1:])
    all_acts, host = read_trace(path)
    acts = window(all_acts, opts["from"], opts["back"], opts["count"])
    if not acts:
        sys.exit("trace_gaps.py: %s: no activities" % path)
    t0 = acts[0][0]
    latest = t0
    idle = total = 0
    calls = []
    if opts["host"] is not None:
        if not host:
            sys.exit("trace_gaps.py: --host: %s has no host calls (trace with RNNCC_TRACE_HOST=1)" % path)
        last = max(a[1] for a in acts)
        calls = [c for c in host if t0 - opts["host"] * 1000 <= c[0] <= last]
    print("%9s %9s %8s %6s %5s  %s" % ("start_us", "dur_us", "idle_us", "stream", "graph", "name"))

    def show_call(c):  # a host call: no idle time, its thread in the stream column
        print("%9.2f %9.2f %8s %6d %5d  %s %s" % ((c[0] - t0) / 1e3, (c[1] - c[0]) / 1e3, "", c[2], c[3], c[4],
                                               c[5][:opts["width"]]))

    for start, end, stream, graph, kind, name in acts:
        while calls and calls[0][0] <= start:  # those before the window come before its first activity
            show_call(calls.pop(0))
        gap = start - latest
        if gap > 0:
            idle += gap
        total += end - start
        latest = max(latest, end)
        print("%9.2f %9.2f %8.2f %6d %5d  %s %s" % ((start - t0) / 1e3, (end - start) / 1e3, gap / 1e3, stream, graph,
                                                   kind, name[:opts["width"]]))
    for c in calls:  # those after the last activity's start, while it ran
        show_call(c)
    print("activities %d, span %.2f us, busy %.2f us, idle %.2f us, sum of durations %.2f us" %
          (len(acts), (latest - t0) / 1e3, busy_time(acts) / 1e3, idle / 1e3, total / 1e3))


if __name__ == "__main__":
    main()
