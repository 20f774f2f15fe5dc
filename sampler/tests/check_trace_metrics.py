#!/usr/bin/env python3
"""Samples in the OTF2 trace, read back independently: the Python OTF2 reader (python3-otf2)
and otf2-print.

sampler_trace_run writes a synthetic 3-rank trace plus real sampler files for each rank and
converts them; expected-metrics.json says what each rank sampled. Checks: one METRIC location
per rank in the rank's location group; metric members with names, units and modes; every sample
as a Metric event with the raw file's values (last values compared); timestamps not decreasing
and inside the trace's clock range; otf2-print shows the same number of METRIC records.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import otf2

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--maker", required=True)
    ap.add_argument("--otf2-print", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--invmw", help="also run `invmw trace check` (the project's own reader)")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    subprocess.run([a.maker, a.work], check=True)
    exp = json.load(open(os.path.join(a.work, "expected-metrics.json")))
    archive = os.path.join(a.work, "traces.otf2")

    by_loc = {}
    with otf2.reader.open(archive) as trace:
        d = trace.definitions
        metric_locs = [l for l in d.locations if l.type == otf2.LocationType.METRIC]
        check(len(metric_locs) == 3, "expected 3 metric locations, got %d" % len(metric_locs))
        members = {m.name: m for m in d.metric_members}
        for r in exp["ranks"]:
            for m in r["metrics"]:
                mm = members.get(m["name"])
                check(mm is not None, "metric member %s missing" % m["name"])
                if mm is None:
                    continue
                check(mm.unit == m["unit"], "%s: unit %s, expected %s" % (m["name"], mm.unit, m["unit"]))
                mode = otf2.MetricMode.ACCUMULATED_START if m["accumulated"] else otf2.MetricMode.ABSOLUTE_POINT
                check(mm.metric_mode == mode, "%s: mode %s" % (m["name"], mm.metric_mode))
        recorders = {(rec.metric_class, rec.recorder.name) for rec in d.metric_class_recorders}
        check(len(recorders) == 3, "expected a MetricClassRecorder per rank, got %d" % len(recorders))
        for loc, ev in trace.events:
            if isinstance(ev, otf2.events.Metric):
                by_loc.setdefault(loc, []).append(ev)
                check(loc.type == otf2.LocationType.METRIC, "Metric event on a non-metric location")
        total = sum(len(v) for v in by_loc.values())
        check(total == exp["metric_events"], "%d Metric events, converter wrote %d" % (total, exp["metric_events"]))
        for r in exp["ranks"]:
            locs = [l for l in by_loc if l.group.name == "rank %d" % r["rank"]]
            check(len(locs) == 1, "rank %d: %d metric locations with events" % (r["rank"], len(locs)))
            if not locs:
                continue
            evs = by_loc[locs[0]]
            check(len(evs) == r["samples"], "rank %d: %d Metric events, %d samples" % (r["rank"], len(evs), r["samples"]))
            times = [e.time for e in evs]
            check(times == sorted(times), "rank %d: timestamps decrease" % r["rank"])
            names = [m.name for m in evs[-1].metric.members]
            check(names == [m["name"] for m in r["metrics"]], "rank %d: member order differs" % r["rank"])
            check(list(evs[-1].values) == r["last_values"], "rank %d: last values differ" % r["rank"])
            # Accumulated metrics never decrease.
            for k, m in enumerate(r["metrics"]):
                if m["accumulated"]:
                    vs = [e.values[k] for e in evs]
                    check(all(b >= a_ for a_, b in zip(vs, vs[1:])), "rank %d: %s decreases" % (r["rank"], m["name"]))
            print("rank %d: %d Metric events, %d members, e.g. %s = %s" % (
                r["rank"], len(evs), len(names), names[0], evs[-1].values[0]))

    out = subprocess.run([a.otf2_print, archive], check=True, capture_output=True, text=True).stdout
    n = sum(1 for l in out.splitlines() if l.startswith("METRIC "))
    check(n == exp["metric_events"], "otf2-print shows %d METRIC records, expected %d" % (n, exp["metric_events"]))
    print("otf2-print: %d METRIC records" % n)
    defs = subprocess.run([a.otf2_print, "-G", archive], check=True, capture_output=True, text=True).stdout
    check("METRIC_MEMBER" in defs and "METRIC_CLASS" in defs, "otf2-print -G shows no metric definitions")
    if a.invmw:
        r = subprocess.run([a.invmw, "trace", "check", a.work], capture_output=True, text=True)
        print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr)
        check(r.returncode == 0, "invmw trace check failed:\n" + r.stdout + r.stderr)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
