#!/usr/bin/env python3
"""`invmw experiment run DESIGN --platform NAME` on a Slurm platform (platforms/slurm/NAME.toml):
every run is one batch job, the runner survives being killed, and rows carry job id and nodes.

Inside a single-host Slurm (slurm_cluster.py) with a platform file in a scratch directory
(INVMW_SLURM_PLATFORMS_DIR):
  1. the runner is started and SIGKILLed as soon as it has submitted 3 jobs; the jobs it
     submitted keep running in Slurm;
  2. it is started again: it collects the earlier jobs (adopts them, no second submission) and
     submits the rest, ending with one ok row per run, each with its own job id, the node list
     and the responses; Slurm saw exactly one job per run (none submitted twice);
  3. it is started once more: nothing is submitted.
With --node-local, the platform writes each run to node-local storage (node_local_dir) and the
batch script gathers it into the run directory: the results are there, nothing is left below the
node-local directory.

usage: experiment_slurm_test.py --invmw BIN --design TOML --workdir DIR [--node-local]
(run inside slurm_cluster.py, which sets SLURM_CONF)
"""
import argparse
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def rows(db):
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db, timeout=30)
    try:
        cur = con.execute("SELECT point, replication, status, job_id, node_list, responses, "
                          "trace_dir, error FROM runs ORDER BY point, replication")
        return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
    finally:
        con.close()


def slurm_jobs():
    r = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %j %T"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail("squeue: " + r.stderr)
    return [l.split() for l in r.stdout.splitlines() if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--design", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--node-local", action="store_true")
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    plat_dir = os.path.join(a.workdir, "platforms")
    os.makedirs(plat_dir)
    node_local = os.path.join(a.workdir, "node-local")
    os.makedirs(node_local)
    with open(os.path.join(plat_dir, "testslurm.toml"), "w") as f:
        f.write('kind = "slurm"\nname = "testslurm"\n'
                'description = "the test\'s single-host Slurm"\n'
                'partition = "debug"\ntime_limit = "5"\nnodes = 1\npoll_interval = 0.3\n')
        if a.node_local:
            f.write(f'node_local_dir = "{node_local}"\n')
    env = dict(os.environ)
    env["INVMW_SLURM_PLATFORMS_DIR"] = plat_dir
    db = os.path.join(a.workdir, "results.db")
    cmd = [a.invmw, "experiment", "run", a.design, "--platform", "testslurm", "--db", db,
           "--no-progress"]

    # 1. Killed after its third submission.
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    submitted = []
    for line in p.stdout:
        print("run 1: " + line.rstrip(), flush=True)
        m = re.search(r"submitted job (\d+)", line)
        if m:
            submitted.append(m.group(1))
        if len(submitted) == 3:
            p.send_signal(signal.SIGKILL)
            break
    p.wait()
    p.stdout.close()
    if len(submitted) < 3:
        fail(f"the runner ended (status {p.returncode}) before submitting 3 jobs")
    print(f"runner SIGKILLed after submitting jobs {submitted}; rows so far: {len(rows(db))}",
          flush=True)

    # 2. Resumed: adopts, submits the rest, records everything.
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    print("run 2:\n" + r.stdout + r.stderr, flush=True)
    if r.returncode != 0:
        fail(f"resumed runner exit status {r.returncode}")
    collected = re.findall(r"collecting earlier job (\d+)", r.stdout)
    resubmitted = re.findall(r"submitted job (\d+)", r.stdout)
    done_rows = rows(db)
    n_runs = len(done_rows)
    if n_runs == 0:
        fail("no rows")
    bad = [x for x in done_rows if x["status"] != "ok"]
    if bad:
        fail(f"failed rows: {bad}")
    # Every submitted job of run 1 whose row was not written yet was collected, not resubmitted.
    for j in submitted:
        if j in resubmitted:
            fail(f"job {j} of the killed runner was submitted again")
    ids = [x["job_id"] for x in done_rows]
    if None in ids or len(set(ids)) != len(ids):
        fail(f"job ids in the rows not one per run: {ids}")
    for x in done_rows:
        if not x["node_list"]:
            fail(f"row of point {x['point']} has no node list")
        if not x["responses"] or "t_wall" not in x["responses"]:
            fail(f"row of point {x['point']} has no responses: {x}")
        if not os.path.exists(os.path.join(x["trace_dir"], "traces.otf2")):
            fail(f"no traces.otf2 in {x['trace_dir']}")
        if x["job_id"] not in submitted + collected + resubmitted:
            fail(f"row of point {x['point']}: job {x['job_id']} was never submitted")
    ours = [j for j in slurm_jobs() if j[1].startswith("invmw-")]
    if len(ours) != n_runs:
        fail(f"Slurm saw {len(ours)} jobs for {n_runs} runs: {ours}")
    print(f"resume: {len(collected)} collected, {len(resubmitted)} submitted, {n_runs} ok rows "
          f"with distinct job ids, {time.monotonic() - t0:.1f} s", flush=True)

    # 3. Nothing left to do.
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "submitted job" in r.stdout:
        fail(f"third run: status {r.returncode}, output:\n{r.stdout}{r.stderr}")
    if len(slurm_jobs()) != len(ours):
        fail("the third run submitted jobs")

    if a.node_local:
        left = os.listdir(node_local)
        if left:
            fail(f"left below the node-local directory: {left}")
        for x in done_rows:
            if not os.path.exists(os.path.join(x["trace_dir"], "profile.json")):
                fail(f"the gather step brought no profile.json into {x['trace_dir']}")
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
