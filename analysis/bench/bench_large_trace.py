#!/usr/bin/env python3
"""Benchmark (not a test): end-to-end `invmw analyze` on a synthetic OTF2 trace of N events
(make_synthetic_otf2, 8 ranks), reading included, with 1 and 2 threads, and its steps timed
apart by bench_large_trace; peak memory of each (ru_maxrss of the child, VmHWM).

  bench_large_trace.py --bin BUILD/bin [--events 1e7] [--ranks 8] [--repeats 3] [--work DIR]

Prints wall time, CPU time (user + system of the child) and peak RSS per run, and the best
wall time per thread count. On a machine shared with other jobs, wall times vary with their
load; the CPU times do not (the speed-up is wall 1 thread / wall 2 threads, the best of the
repeats). The trace is written to --work (default a temporary directory, removed afterwards).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "otf2_reader", "tests"))
from synthetic_trace import make_synthetic, run_measured  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="build/bin with invmw, make_synthetic_otf2, "
                    "bench_large_trace")
    ap.add_argument("--events", default="1e7")
    ap.add_argument("--ranks", default="8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work")
    a = ap.parse_args()
    own = a.work is None
    work = a.work or tempfile.mkdtemp(prefix="invmw-bench-large-")
    tdir = os.path.join(work, "trace")
    try:
        t0 = time.monotonic()
        events, made = make_synthetic(os.path.join(a.bin, "make_synthetic_otf2"), tdir, a.events,
                                      a.ranks)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tdir) for f in fs)
        print("%s (%.1f s to write, %.0f MiB on disk)" % (made, time.monotonic() - t0,
                                                         size / 2**20))
        best = {}
        for rep in range(a.repeats):
            for threads in (1, 2):
                u = run_measured([os.path.join(a.bin, "invmw"), "analyze", "--quiet", "--threads",
                                  str(threads), "--json", os.path.join(work, "a.json"), tdir])
                rc, wall, cpu, peak = u.status, u.wall_s, u.cpu_s, u.peak_kib / 1024
                print("invmw analyze --threads %d: exit %d, wall %.2f s (%.2f M events/s), CPU "
                      "%.2f s (%.2f M events per CPU-s), peak RSS %.0f MiB (%.0f bytes/event)"
                      % (threads, rc, wall, events / wall / 1e6, cpu, events / cpu / 1e6, peak,
                         peak * 2**20 / events))
                best[threads] = min(best.get(threads, 1e300), wall)
        for threads in (1, 2):
            r = subprocess.run([os.path.join(a.bin, "bench_large_trace"),
                                os.path.join(tdir, "traces.otf2"), str(threads)],
                               capture_output=True, text=True)
            print((r.stdout or r.stderr).strip())
        print("best wall: 1 thread %.2f s (%.2f M events/s), 2 threads %.2f s (%.2f M events/s), "
              "speed-up %.2f" % (best[1], events / best[1] / 1e6, best[2], events / best[2] / 1e6,
                                 best[1] / best[2]))
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
