#!/usr/bin/env python3
"""The experiment runner on a PVM program: a 2^2 design of opal-mini-pvm run by
`invmw experiment run` (each point under `invmw run --trace`, which picks the PVM library and
merges the tasks) must fill the results database with one ok row per point whose responses come
from the merged traces (and match the analysis.json each run left)."""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

DESIGN = '''name = "pvm-opal"
description = "opal-mini-pvm with one server: n x u (2^2)"
type = "full"
replications = 1
seed = 7
platform = "local"
timeout = "60s"
responses = ["t_wall", "t_par_comp", "t_seq_comp", "t_comm", "t_sync", "t_idle"]

[[factor]]
name = "n"
levels = [96, 192]

[[factor]]
name = "u"
levels = [0.5, 1]

[command]
ranks = 2
launcher = []
program = "%s"
args = ["--p", "1", "--n", "{n}", "--u", "{u}", "--s", "2"]
'''


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--invmw", required=True)
    p.add_argument("--pvm", required=True, help="the opal-mini-pvm binary")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    design = os.path.join(a.out, "pvm-opal.toml")
    with open(design, "w") as f:
        f.write(DESIGN % a.pvm)
    db = os.path.join(a.out, "results.db")
    r = subprocess.run([a.invmw, "experiment", "run", design, "--db", db, "--runs-dir",
                        os.path.join(a.out, "runs"), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    sys.stdout.write(r.stdout + r.stderr)
    errors = []
    if r.returncode != 0:
        errors.append("experiment run exit status %d" % r.returncode)
    rows = sqlite3.connect(db).execute(
        "select point, status, responses, trace_dir, error from runs where design='pvm-opal'"
    ).fetchall()
    if sorted(row[0] for row in rows) != [0, 1, 2, 3]:
        errors.append("rows for points %s, expected 0..3" % sorted(row[0] for row in rows))
    for point, status, responses, trace_dir, error in rows:
        if status != "ok":
            errors.append("point %d: %s (%s)" % (point, status, error))
            continue
        resp = json.loads(responses)
        if not resp.get("t_wall", 0) > 0 or not resp.get("t_par_comp", 0) > 0:
            errors.append("point %d: responses %s" % (point, resp))
        if not os.path.exists(os.path.join(trace_dir, "traces.otf2")):
            errors.append("point %d: no merged trace in %s" % (point, trace_dir))
        with open(os.path.join(trace_dir, "analysis.json")) as f:
            analysis = json.load(f)
        opal = analysis.get("opal", {})
        if opal and abs(opal.get("t_wall", -1) - resp["t_wall"]) > 1e-12:
            errors.append("point %d: t_wall %s differs from analysis.json %s"
                          % (point, resp["t_wall"], opal.get("t_wall")))
        print("ok   point %d: t_wall %.6f s, t_par_comp %.6f s (from the merged PVM trace)"
              % (point, resp["t_wall"], resp["t_par_comp"]))
    for e in errors:
        print("FAIL " + e)
    if not errors:
        shutil.rmtree(a.out, ignore_errors=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
