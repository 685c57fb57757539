#!/usr/bin/env python3
"""The timed passes of a trace written by bench/kernel_trace.c with RNNCC_TRACE_HOST=1 (the host's API calls beside
the GPU's activities), as bench_rnn's bench_time and rnncc run's rt_verify time them: an event recorded, the pass
issued, an event recorded, cudaEventSynchronize, cudaEventElapsedTime. A pass's first event is the first
cudaEventRecord after the blocking call before it (a synchronisation or the last pass's elapsed time); its GPU
activities are those that start after that record began and end before the synchronisation returned. Per pass:
the lead (from the first record's return to the GPU's first activity: what the events see of the host's issue
before the GPU starts), the GPU span from the first activity's start to the last one's end, its busy and idle
time, the host's time from the first record to the second, the activities and the first one's name; then the
medians. Bench_rnn's own GEMM timings inside rnncc (cuBLASLt's, by events too) count as passes as well: --with
keeps only the passes with an activity whose name contains NAME (rnncc_, or cuDNN's RNN_). A pass's activities are
told by the host's time of its first record, not the GPU's: work issued just before it that the GPU starts after
it counts too, as `rnncc run`'s checked passes' NaN fills do (trace `rnncc run --no-check`, as ab.sh runs it).
Usage: trace_passes.py FILE [--with NAME] [--width W]"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_gaps import busy_time, read_trace, split_options  # noqa: E402

BLOCKING = ("cudaEventSynchronize", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventElapsedTime")


def base_name(name):
    """An API call's name without its version suffix (cudaEventRecord_v3020: cudaEventRecord)."""
    return name.split("_v")[0]


def parse_args(argv):
    opts = {"with": None, "width": 40}
    path, given = split_options(argv, ("--with", "--width"), "trace_passes.py", __doc__)
    opts.update(given)
    if "width" in given:
        if not given["width"].isdigit() or int(given["width"]) == 0:
            sys.exit("trace_passes.py: --width: not a positive whole number: %s" % given["width"])
        opts["width"] = int(given["width"])
    return path, opts


def passes(acts, host):
    """Each timed pass as (lead, span, busy, idle, host issue, activities, first name), in ns."""
    calls = [(c[0], c[1], base_name(c[5])) for c in host if c[4] == "A"]
    found = []
    for s, (start, end, name) in enumerate(calls):
        if name != "cudaEventSynchronize" or s + 1 >= len(calls) or calls[s + 1][2] != "cudaEventElapsedTime":
            continue
        e1 = next((k for k in range(s - 1, -1, -1) if calls[k][2] == "cudaEventRecord"), None)
        prev = next((k for k in range(s - 1, -1, -1) if calls[k][2] in BLOCKING), -1)
        e0 = next((k for k in range(prev + 1, s) if calls[k][2] == "cudaEventRecord"), None)
        if e1 is None or e0 is None or e0 >= e1:
            continue
        inside = [a for a in acts if a[0] >= calls[e0][0] and a[1] <= end]
        if not inside:
            continue
        first, last, busy = inside[0][0], max(a[1] for a in inside), busy_time(inside)
        found.append((first - calls[e0][1], last - first, busy, last - first - busy, calls[e1][0] - calls[e0][0],
                      inside))
    return found


def main():
    path, opts = parse_args(sys.argv[1:])
    acts, host = read_trace(path)
    if not host:
        sys.exit("trace_passes.py: %s: no host calls (trace with RNNCC_TRACE_HOST=1)" % path)
    found = [p for p in passes(acts, host) if opts["with"] is None or any(opts["with"] in a[5] for a in p[5])]
    if not found:
        sys.exit("trace_passes.py: %s: no timed pass%s" % (path, "" if opts["with"] is None else
                                                             " with an activity named like %r" % opts["with"]))
    print("%4s %9s %9s %9s %9s %9s %5s  %s" % ("pass", "lead_us", "span_us", "busy_us", "idle_us", "issue_us", "acts",
                                               "first"))
    for i, (lead, span, busy, idle, issue, inside) in enumerate(found):
        print("%4d %9.2f %9.2f %9.2f %9.2f %9.2f %5d  %s" % (i, lead / 1e3, span / 1e3, busy / 1e3, idle / 1e3,
                                                            issue / 1e3, len(inside), inside[0][5][:opts["width"]]))
    med = [statistics.median(p[k] for p in found) / 1e3 for k in range(5)]
    print("passes %d, medians: lead %.2f us, span %.2f us, busy %.2f us, idle %.2f us, issue %.2f us" %
          (len(found), *med))


if __name__ == "__main__":
    main()
