#!/usr/bin/env python3
"""A batch job killed at its time limit leaves a recoverable profile and trace.

Inside a single-host Slurm (slurm_cluster.py; KillWait 2 s), a one-run design of c_abnormal
`hang` (it makes known MPI calls, then sleeps) on a Slurm platform with time_limit = 1 minute:
Slurm sends SIGTERM to every process of the job at the limit and SIGKILL after KillWait. Then:
  - the row is failed, names the job's TIMEOUT state, and has the job id and node list;
  - the run directory has a profile (profile.json, or one that `invmw profile --json` builds
    from the raw dumps) marked incomplete whose per-rank counts are the calls the program made
    (MPI_Sendrecv 1, MPI_Allreduce 1, MPI_Bcast 3, MPI_Barrier 1 on each of the 2 ranks);
  - traces.otf2 is there (or `invmw trace recover` builds it) and python3-otf2 reads those
    calls' enter events on both ranks.
Takes about 1.5 minutes (Slurm's smallest time limit is one minute): label slow.

With --design-timeout S, the design's own per-run timeout (S seconds) ends the job instead: the
platform's limit is 5 minutes, the job's --time is the design timeout rounded up to a minute
(command.txt), and the runner cancels the job once squeue says it ran longer than S seconds. The
row then says "timed out after S s (design timeout)", as under the local runner, the job's state
is CANCELLED (not TIMEOUT), and profile and trace are recoverable as above. About 15 s.

usage: time_limit_test.py --invmw BIN --program C_ABNORMAL --workdir DIR [--design-timeout S]
"""
import argparse
import collections
import json
import os
import shutil
import sqlite3
import subprocess
import sys

KNOWN = {"MPI_Sendrecv": 1, "MPI_Allreduce": 1, "MPI_Bcast": 3, "MPI_Barrier": 1}


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--design-timeout", type=int)
    a = ap.parse_args()
    invmw, program = os.path.abspath(a.invmw), os.path.abspath(a.program)
    shutil.rmtree(a.workdir, ignore_errors=True)
    plat = os.path.join(a.workdir, "platforms")
    os.makedirs(plat)
    with open(os.path.join(plat, "limit1.toml"), "w") as f:
        if a.design_timeout:
            f.write('kind = "slurm"\nname = "limit1"\ndescription = "five minutes per run"\n'
                    'partition = "debug"\ntime_limit = "5"\npoll_interval = 0.5\n')
        else:
            f.write('kind = "slurm"\nname = "limit1"\ndescription = "one minute per run"\n'
                    'partition = "debug"\ntime_limit = "1"\npoll_interval = 1\n')
    timeout = f"{a.design_timeout}s" if a.design_timeout else "600s"
    design = os.path.join(a.workdir, "hang.toml")
    with open(design, "w") as f:
        f.write('name = "hang"\ndescription = "c_abnormal hang until the time limit"\n'
                f'responses = ["t_wall"]\ntimeout = "{timeout}"\n'
                '[[factor]]\nname = "x"\nlevels = [1]\n'
                f'[command]\nranks = 2\nlauncher = ["srun"]\nprogram = "{program}"\n'
                'args = ["hang"]\n')
    env = dict(os.environ, INVMW_SLURM_PLATFORMS_DIR=plat)
    db = os.path.join(a.workdir, "results.db")
    r = subprocess.run([invmw, "experiment", "run", design, "--platform", "limit1", "--db", db,
                        "--no-progress"], env=env, capture_output=True, text=True, timeout=400)
    print(r.stdout + r.stderr, flush=True)
    if not os.path.exists(db) or "job" not in r.stdout:
        fail(f"invmw experiment run (status {r.returncode}) submitted nothing")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT status, error, job_id, node_list, trace_dir, exit_status "
                       "FROM runs").fetchall()
    con.close()
    if len(rows) != 1:
        fail(f"expected one row, got {rows}")
    status, error, job_id, nodes, run_dir, exit_status = rows[0]
    print(f"row: {status}, exit {exit_status}, job {job_id} on {nodes}: {error}", flush=True)
    if not job_id or not nodes:
        fail("no job id or node list in the row")
    with open(os.path.join(run_dir, "runner.log")) as f:
        log = f.read()
    if a.design_timeout:
        if status != "failed" or \
                f"timed out after {a.design_timeout} s (design timeout)" not in (error or ""):
            fail("the row does not record the design timeout")
        with open(os.path.join(run_dir, "command.txt")) as f:
            command = f.read()
        if "--time=0-00:01:00" not in command.split():
            fail("the job's --time is not the design timeout rounded up to a minute: " + command)
        q = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"],
                           capture_output=True, text=True)
        if q.stdout.strip() != "CANCELLED":
            fail(f"job {job_id} state {q.stdout.strip()!r}, expected CANCELLED (by the runner)")
        if "CANCELLED" not in log:
            fail("the job log does not show the cancellation:\n" + log[-2000:])
    else:
        if status != "failed" or "TIMEOUT" not in (error or ""):
            fail("the row does not record the time limit")
        if "TIME LIMIT" not in log:
            fail("the job log does not show Slurm's time limit:\n" + log[-2000:])

    prof_path = os.path.join(run_dir, "profile.json")
    if os.path.exists(prof_path):
        with open(prof_path) as f:
            profile = json.load(f)
        print("invmw run built the profile inside the job", flush=True)
    else:
        m = subprocess.run([invmw, "profile", "--json", run_dir], capture_output=True, text=True)
        if m.returncode != 0:
            fail(f"invmw profile --json {run_dir}: {m.stderr}")
        profile = json.loads(m.stdout)
    if not profile.get("incomplete"):
        fail("the profile is not marked incomplete")
    ranks = {r["rank"]: r for r in profile["ranks"]}
    if sorted(ranks) != [0, 1]:
        fail(f"profile ranks {sorted(ranks)}, expected [0, 1]")
    for rk, r in ranks.items():
        print(f"rank {rk}: end={r.get('end')} signal={r.get('end_signal')}", flush=True)
        for fn, calls in KNOWN.items():
            got = r["functions"].get(fn, {}).get("calls")
            if got != calls:
                fail(f"rank {rk} {fn}: {got} calls in the profile, the program made {calls}")

    trace = os.path.join(run_dir, "traces.otf2")
    if not os.path.exists(trace):
        t = subprocess.run([invmw, "trace", "recover", run_dir], capture_output=True, text=True)
        print("trace recover: " + t.stdout + t.stderr, flush=True)
    if not os.path.exists(trace):
        fail("no traces.otf2, and invmw trace recover built none")
    import otf2
    enters = collections.Counter()
    with otf2.reader.open(trace) as tr:
        for loc, ev in tr.events:
            if type(ev).__name__ == "Enter" and ev.region.name in KNOWN:
                enters[(loc.group.name if loc.group else loc.name, ev.region.name)] += 1
    per_rank = collections.Counter()
    for (grp, fn), n in enters.items():
        if n != KNOWN[fn]:
            fail(f"trace {grp}: {n} enters of {fn}, the program made {KNOWN[fn]}")
        per_rank[grp] += 1
    if len(per_rank) != 2 or any(v != len(KNOWN) for v in per_rank.values()):
        fail(f"trace: known calls per location group {dict(per_rank)}, expected 2 ranks with "
             f"{len(KNOWN)} functions each")
    print("PASS: profile and trace of the timed-out job hold every call made", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
