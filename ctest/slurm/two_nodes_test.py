#!/usr/bin/env python3
"""A 4-rank job across two Slurm nodes (slurm_cluster.py --nodes 2: node1 and node2, two slurmd
daemons on this host, each in a UTS namespace named after its node).

  1. `invmw run --trace -- srun -N 2 --ntasks-per-node=2 -n 4 APP` gives the same profile counts
     and OTF2 events per location as `invmw run --trace -- mpirun -n 4 APP` (as
     srun_vs_mpirun.py checks on one node), the profile places ranks 0-1 on node1 and 2-3 on
     node2, and `invmw trace check` accepts the trace;
  2. `invmw experiment run` of a one-run design with 4 ranks on a Slurm platform with nodes = 2
     and ntasks_per_node = 2: the row is ok, its node_list is Slurm's `node[1-2]` and its host
     the batch node, the run's profile has ranks on both nodes, and its analysis (response
     `events`) counts as many trace events as step 1 traced.

usage: two_nodes_test.py --invmw BIN --workdir DIR -- APP ARGS...
(run inside `slurm_cluster.py --nodes 2`, which sets SLURM_CONF)
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srun_vs_mpirun as svm  # noqa: E402

NODES = {0: "node1", 1: "node1", 2: "node2", 3: "node2"}


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def hosts_of(run_dir):
    with open(os.path.join(run_dir, "profile.json")) as f:
        p = json.load(f)
    return {r["rank"]: r.get("host") for r in p["ranks"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("app", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    app = a.app[1:] if a.app[:1] == ["--"] else a.app
    invmw = os.path.abspath(a.invmw)
    app[0] = os.path.abspath(app[0])
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    r = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True)
    if r.stdout.split() != ["node1", "node2"]:
        fail(f"expected the nodes node1 and node2, sinfo says {r.stdout!r}")

    # 1. invmw run -- srun across both nodes against mpirun.
    mp, sr = os.path.join(a.workdir, "mpirun"), os.path.join(a.workdir, "srun")
    svm.run(invmw, mp, ["mpirun", "--oversubscribe", "-n", "4"], app, a.workdir)
    svm.run(invmw, sr, ["srun", "-N", "2", "--ntasks-per-node=2", "-n", "4"], app, a.workdir)
    errors = []
    ranks_m, prof_m = svm.profile_counts(mp)
    ranks_s, prof_s = svm.profile_counts(sr)
    if ranks_m != 4 or ranks_s != 4:
        errors.append(f"ranks: mpirun profile {ranks_m}, srun profile {ranks_s}, expected 4")
    for key in sorted(set(prof_m) | set(prof_s)):
        if prof_m.get(key) != prof_s.get(key):
            errors.append(f"profile rank {key[0]} {key[1]}: mpirun {prof_m.get(key)}, "
                          f"srun {prof_s.get(key)}")
    tr_m, tr_s = svm.trace_counts(mp), svm.trace_counts(sr)
    for key in sorted(set(tr_m) | set(tr_s)):
        if key[1] != "Metric" and tr_m.get(key) != tr_s.get(key):
            errors.append(f"trace {key}: mpirun {tr_m.get(key)}, srun {tr_s.get(key)}")
    hosts = hosts_of(sr)
    if hosts != NODES:
        errors.append(f"profile hosts per rank {hosts}, expected {NODES}")
    c = subprocess.run([invmw, "trace", "check", os.path.join(sr, "traces.otf2")],
                       capture_output=True, text=True)
    if c.returncode != 0:
        errors.append(f"invmw trace check: exit {c.returncode}: {c.stdout}{c.stderr}")
    for e in errors[:40]:
        print("FAIL: " + e)
    if errors:
        return 1
    events = sum(v for k, v in tr_s.items() if k[1] != "Metric")
    print(f"srun -N 2 -n 4: ranks on {hosts}; {len(prof_s)} (rank, function) profile rows and "
          f"{events} trace events, as under mpirun; trace check ok", flush=True)

    # 2. invmw experiment run on a two-node Slurm platform.
    plat = os.path.join(a.workdir, "platforms")
    os.makedirs(plat)
    with open(os.path.join(plat, "two.toml"), "w") as f:
        f.write('kind = "slurm"\nname = "two"\ndescription = "two nodes, two ranks each"\n'
                'partition = "debug"\ntime_limit = "5"\nnodes = 2\nntasks_per_node = 2\n'
                'poll_interval = 0.3\n')
    design = os.path.join(a.workdir, "spread.toml")
    args = "".join(f', "{x}"' for x in app[1:])
    with open(design, "w") as f:
        f.write('name = "spread"\ndescription = "one 4-rank run over two nodes"\n'
                'responses = ["wall_s", "events"]\ntimeout = "120s"\n'
                '[[factor]]\nname = "x"\nlevels = [1]\n'
                f'[command]\nranks = 4\nlauncher = ["srun"]\nprogram = "{app[0]}"\n'
                f'args = [{args[2:]}]\n')
    db = os.path.join(a.workdir, "results.db")
    env = dict(os.environ, INVMW_SLURM_PLATFORMS_DIR=plat)
    r = subprocess.run([invmw, "experiment", "run", design, "--platform", "two", "--db", db,
                        "--no-progress"], env=env, capture_output=True, text=True, timeout=300)
    print(r.stdout + r.stderr, flush=True)
    if r.returncode != 0:
        fail(f"invmw experiment run: exit {r.returncode}")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT status, error, job_id, node_list, host, trace_dir, responses "
                       "FROM runs")
    rows = rows.fetchall()
    con.close()
    if len(rows) != 1:
        fail(f"expected one row, got {rows}")
    status, error, job_id, node_list, host, run_dir, responses = rows[0]
    if status != "ok":
        fail(f"row status {status}: {error}")
    if node_list != "node[1-2]" or host != "node1":
        fail(f"row node_list {node_list!r} host {host!r}, expected 'node[1-2]' and 'node1'")
    hosts = hosts_of(run_dir)
    if hosts != NODES:
        fail(f"the run's profile hosts per rank {hosts}, expected {NODES}")
    got = json.loads(responses).get("events")
    if got != events:
        fail(f"the run's analysis counted {got} events, invmw run -- srun traced {events}")
    print(f"PASS: job {job_id} on {node_list}, ranks on both nodes, {got} events", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
