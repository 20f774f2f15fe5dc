#!/usr/bin/env python3
"""`invmw trace check` and `invmw trace export` stream (docs/otf2.md, "Large traces"): on
synthetic traces (make_synthetic_otf2: 8 ranks, matched sends and receives, an Allreduce per
iteration) of SMALL and LARGE events, both verbs succeed with the expected counts, and their peak
resident memory (ru_maxrss of the child) grows by less than GROWTH_MIB from the small trace to
the large one, and stays under BOUND_MIB.

The in-memory design they replaced kept every event (ReadTrace, about 64 bytes per event plus the
matching lists): from 10^5 to 10^6 events its peak grew by about 70 MiB (check) and 59 MiB
(export), to 120 and 108 MiB, far over the default bounds. The streamed export holds up to 5 MiB of
arrows to sort (FlowSorter), hence 12 MiB rather than less.
"""
import argparse
import os
import re
import shutil
import sys

from synthetic_trace import (fresh_dir, make_synthetic, report, run_measured,
                             synthetic_iterations)


def peak_mib(u):
    """(exit status, stdout, peak RSS in MiB, CPU seconds) of a run_measured child."""
    return u.status, u.out, u.peak_kib / 1024.0, u.cpu_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--maker", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--small", type=float, default=1e5)
    ap.add_argument("--large", type=float, default=1e6)
    ap.add_argument("--growth-mib", type=float, default=12)
    # 0: no memory bound (sanitizer builds, whose shadow memory inflates the RSS).
    ap.add_argument("--bound-mib", type=float, default=64)
    a = ap.parse_args()
    fresh_dir(a.work)
    failures = []
    peaks = {}
    for label, n in (("small", a.small), ("large", a.large)):
        tdir = os.path.join(a.work, label)
        ranks = 8
        events, _ = make_synthetic(a.maker, tdir, n, ranks)
        iterations = synthetic_iterations(events, ranks)
        rc, out, peak, cpu = peak_mib(run_measured([a.invmw, "trace", "check", tdir], capture=True))
        print("%s (%d events): trace check: peak RSS %.1f MiB, CPU %.2f s" % (label, events, peak, cpu))
        peaks[(label, "check")] = peak
        if rc != 0 or "check passed" not in out:
            failures.append("%s: trace check exited %d: %s" % (label, rc, out[-1500:]))
        if "%d events, %d messages" % (events, iterations * ranks) not in out:
            failures.append("%s: trace check does not count %d events and %d messages: %s"
                            % (label, events, iterations * ranks, out[:300]))
        json_out = os.path.join(a.work, label + ".json")
        rc, out, peak, cpu = peak_mib(
            run_measured([a.invmw, "trace", "export", "-o", json_out, tdir], capture=True))
        print("%s (%d events): trace export: peak RSS %.1f MiB, CPU %.2f s, %d bytes written"
              % (label, events, peak, cpu, os.path.getsize(json_out) if os.path.exists(json_out) else 0))
        peaks[(label, "export")] = peak
        m = re.search(r"(\d+) slices \((\d+) with args\), (\d+) message arrows", out)
        # Slices: one per Enter (init, finalize, per iteration send, recv, allreduce).
        slices = ranks * (2 + 3 * iterations)
        if rc != 0 or not m:
            failures.append("%s: trace export exited %d: %s" % (label, rc, out[-1500:]))
        elif int(m.group(1)) != slices or int(m.group(3)) != iterations * ranks:
            failures.append("%s: export wrote %s slices and %s arrows, expected %d and %d"
                            % (label, m.group(1), m.group(3), slices, iterations * ranks))
        else:
            with open(json_out, "rb") as f:
                head = f.read(40)
                f.seek(-4, os.SEEK_END)
                tail = f.read()
            if not head.startswith(b'{"displayTimeUnit":"ns","traceEvents":[') or tail != b"\n]}\n":
                failures.append("%s: the export is not a complete JSON document" % label)
        shutil.rmtree(tdir)
        if os.path.exists(json_out):
            os.unlink(json_out)
    for verb in ("check", "export"):
        growth = peaks[("large", verb)] - peaks[("small", verb)]
        print("trace %s: peak RSS grows by %.1f MiB from %g to %g events (bound %.0f MiB)"
              % (verb, growth, a.small, a.large, a.growth_mib))
        if a.bound_mib > 0 and growth > a.growth_mib:
            failures.append("trace %s: peak RSS grows by %.1f MiB (%.1f -> %.1f), over %.0f MiB"
                            % (verb, growth, peaks[("small", verb)], peaks[("large", verb)],
                               a.growth_mib))
        if a.bound_mib > 0 and peaks[("large", verb)] > a.bound_mib:
            failures.append("trace %s: peak RSS %.1f MiB over %.0f MiB"
                            % (verb, peaks[("large", verb)], a.bound_mib))
    return report(failures, a.work, "streaming trace check and export: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
