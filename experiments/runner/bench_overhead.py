#!/usr/bin/env python3
"""Overhead of the experiment runner per design point.

Runs a design with `invmw experiment run` into a scratch database, then the same commands
directly (without invmw), alternating design runs and direct runs over --rounds rounds, and
prints per point:
  - runner overhead: the runner's wall time minus the time of the measured commands
    (loading the design, starting the command, extracting the responses from the trace,
    writing the row), from the total and from the runner's own per-run figures;
  - what `invmw run --trace` adds to the command itself (preload, trace writing and
    conversion): the recorded duration minus the direct run's time.
Local platform designs only (the direct run does not set up emulated platforms).

usage: bench_overhead.py --invmw build/bin/invmw --design experiments/designs/smoke.toml
"""
import argparse
import os
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--design", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = tempfile.mkdtemp(prefix="invmw-bench-runner-")
    db = os.path.join(work, "results.db")
    per_point_overhead, analysis, dbw, tool, n_points = [], [], [], [], 0
    try:
        for rnd in range(args.rounds):
            t0 = time.monotonic()
            out = subprocess.run([args.invmw, "experiment", "run", args.design, "--db", db,
                                  "--rerun", "--no-progress"], env=env, capture_output=True,
                                 text=True, check=True).stdout
            total = time.monotonic() - t0
            con = sqlite3.connect(db)
            recs = con.execute("SELECT duration, trace_dir FROM runs WHERE status='ok'").fetchall()
            con.close()
            n_points = len(recs)
            per_point_overhead.append((total - sum(r[0] for r in recs)) / n_points)
            for m in re.finditer(r"analysis ([0-9.]+) s, db write ([0-9.]+) s", out):
                analysis.append(float(m.group(1)))
                dbw.append(float(m.group(2)))
            # The same commands without invmw.
            for duration, trace_dir in recs:
                with open(os.path.join(trace_dir, "command.txt")) as f:
                    argv = shlex.split(f.read())
                cmd = argv[argv.index("--") + 1:]
                t1 = time.monotonic()
                subprocess.run(cmd, env=env, cwd=trace_dir, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=True)
                tool.append(duration - (time.monotonic() - t1))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ms(xs):
        return "mean %.1f ms, median %.1f ms" % (1e3 * statistics.mean(xs),
                                                 1e3 * statistics.median(xs))
    print("design %s: %d points x %d rounds" % (args.design, n_points, args.rounds))
    print("runner overhead per point (wall time outside the measured command): " +
          ms(per_point_overhead))
    print("  of which response extraction from the trace: " + ms(analysis))
    print("  of which database write: " + ms(dbw))
    print("invmw run --trace added to the command itself: " + ms(tool))


if __name__ == "__main__":
    main()
