#!/usr/bin/env python3
"""`invmw run --trace -- srun -n N APP` must give the same profile and trace as
`invmw run --trace -- mpirun -n N APP`: the same calls, bytes sent and received per function and
rank in profile.json, and the same number of OTF2 events of each kind per location in
traces.otf2 (read with python3-otf2). Timings differ, counts may not.

Runs inside ctest/slurm/slurm_cluster.py (SLURM_CONF set); usage:
  srun_vs_mpirun.py --invmw BIN --workdir DIR --np N -- APP ARGS...
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

FIELDS = ("calls", "bytes_sent", "bytes_recv")


def run(invmw, out, launcher, app, workdir):
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    for k in list(env):
        if k == "LD_PRELOAD" or k.startswith("INVMW_"):
            del env[k]
    cmd = [invmw, "run", "--trace", "--out", out, "--"] + launcher + app
    r = subprocess.run(cmd, env=env, cwd=workdir, capture_output=True, text=True, timeout=120)
    print(f"{' '.join(cmd)}: exit {r.returncode}", flush=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {cmd[5]} run failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r


def profile_counts(out):
    with open(os.path.join(out, "profile.json")) as f:
        p = json.load(f)
    counts = {}
    for rank in p["ranks"]:
        for name, fn in rank["functions"].items():
            counts[(rank["rank"], name)] = tuple(fn[k] for k in FIELDS)
    return p["metadata"]["ranks"], counts


def trace_counts(out):
    import otf2
    counts = collections.Counter()
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as trace:
        for loc, event in trace.events:
            name = getattr(getattr(event, "region", None), "name", "")
            counts[(loc.name, type(event).__name__, name)] += 1
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("app", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    app = a.app[1:] if a.app[:1] == ["--"] else a.app
    a.invmw = os.path.abspath(a.invmw)
    if os.path.exists(app[0]):
        app[0] = os.path.abspath(app[0])
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    n = str(a.np)
    mp = os.path.join(a.workdir, "mpirun")
    sr = os.path.join(a.workdir, "srun")
    run(a.invmw, mp, ["mpirun", "--oversubscribe", "-n", n], app, a.workdir)
    r = run(a.invmw, sr, ["srun", "-n", n], app, a.workdir)
    errors = []
    ranks_m, prof_m = profile_counts(mp)
    ranks_s, prof_s = profile_counts(sr)
    if ranks_m != a.np or ranks_s != a.np:
        errors.append(f"ranks: mpirun profile {ranks_m}, srun profile {ranks_s}, expected {a.np}")
    for key in sorted(set(prof_m) | set(prof_s)):
        if prof_m.get(key) != prof_s.get(key):
            errors.append(f"profile rank {key[0]} {key[1]} (calls, sent, received): mpirun "
                          f"{prof_m.get(key)}, srun {prof_s.get(key)}")
    tr_m, tr_s = trace_counts(mp), trace_counts(sr)
    for key in sorted(set(tr_m) | set(tr_s)):
        # The sampler's metric events come from a timer: their number depends on run time.
        if key[1] == "Metric":
            continue
        if tr_m.get(key) != tr_s.get(key):
            errors.append(f"trace location {key[0]!r} {key[1]} {key[2]}: mpirun "
                          f"{tr_m.get(key)}, srun {tr_s.get(key)}")
    locations = {k[0] for k in tr_s}
    events = sum(v for k, v in tr_s.items() if k[1] != "Metric")
    print(f"profile: {len(prof_s)} (rank, function) rows; trace: {events} events "
          f"(metric samples left out) on {len(locations)} locations", flush=True)
    if errors:
        for e in errors[:40]:
            print("FAIL: " + e)
        print("--- srun run stderr ---\n" + r.stderr[-3000:])
        return 1
    print("PASS: srun and mpirun give the same profile counts and trace events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
