#!/usr/bin/env python3
"""`invmw platform list` shows the Slurm run platforms (platforms/slurm/*.toml, or
$INVMW_SLURM_PLATFORMS_DIR) beside the emulated and simulated ones: name, kind and what they ask
sbatch for (partition, nodes, time limit, ...); a broken file is listed as INVALID with its file,
line and field, and the exit status is then 1.

usage: check_list_slurm.py --invmw BIN --shipped DIR   (DIR: the source tree's platforms/slurm)
"""
import argparse
import os
import subprocess
import sys
import tempfile

GOOD = '''kind = "slurm"
name = "site"
description = "two nodes of partition compute"
partition = "compute"
account = "proj42"
time_limit = "00:15:00"
nodes = 2
ntasks_per_node = 16
sbatch_options = ["--exclusive"]
srun_options = ["--mpi=pmix"]
'''
DEFAULTS = '''kind = "slurm"
name = "plain"
description = "whatever the site gives by default"
'''
BAD = '''kind = "slurm"
name = "broken"
description = "a time limit Slurm would refuse"
time_limit = "ten minutes"
'''


def run(invmw, env, *args):
    r = subprocess.run([invmw, "platform", "list", *args], env=env, capture_output=True,
                       text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def line_of(out, name):
    for l in out.splitlines():
        if l.split()[:1] == [name]:
            return l
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--shipped", required=True)
    a = ap.parse_args()
    failures = []
    env = dict(os.environ)
    env.pop("INVMW_SLURM_PLATFORMS_DIR", None)

    # The shipped template, beside the emulated platforms.
    rc, out = run(a.invmw, env)
    print(out)
    ex = line_of(out, "example")
    if rc != 0 or not ex or not line_of(out, "emu-4x50-shm"):
        failures.append(f"shipped platforms: exit {rc}, example line {ex!r}")
    elif not ("Slurm" in ex and "partition compute" in ex and "1 node" in ex
              and "time limit 00:10:00" in ex):
        failures.append(f"example's line lacks kind, partition, nodes or time limit: {ex!r}")
    if f"Slurm run platforms in {os.path.realpath(a.shipped)}" not in out and \
            f"Slurm run platforms in {a.shipped}" not in out:
        failures.append("the Slurm platforms' directory is not named")

    with tempfile.TemporaryDirectory() as d:
        env["INVMW_SLURM_PLATFORMS_DIR"] = d
        for name, text in (("site", GOOD), ("plain", DEFAULTS)):
            with open(os.path.join(d, name + ".toml"), "w") as f:
                f.write(text)
        rc, out = run(a.invmw, env, "--verbose")
        print(out)
        site, plain = line_of(out, "site"), line_of(out, "plain")
        want = ["Slurm batch jobs", "partition compute", "account proj42", "2 nodes",
                "16 tasks per node", "time limit 00:15:00"]
        if rc != 0 or not site or any(w not in site for w in want):
            failures.append(f"site: exit {rc}, line {site!r}, expected {want}")
        if not plain or "partition (site default)" not in plain or \
                "time limit (partition default)" not in plain:
            failures.append(f"plain: line {plain!r}")
        if "sbatch --partition=compute --account=proj42 --time=00:15:00 --nodes=2 " \
                "--ntasks-per-node=16 --exclusive" not in out or "srun --mpi=pmix" not in out:
            failures.append("--verbose does not show the sbatch and srun options")
        if "example" in out.split("Slurm run platforms", 1)[-1]:
            failures.append("INVMW_SLURM_PLATFORMS_DIR did not replace the shipped directory")

        with open(os.path.join(d, "broken.toml"), "w") as f:
            f.write(BAD)
        rc, out = run(a.invmw, env)
        print(out)
        bad = line_of(out, "broken")
        if rc != 1 or not bad or "INVALID" not in bad or "broken.toml:4:" not in bad or \
                "'time_limit'" not in bad:
            failures.append(f"broken file: exit {rc}, line {bad!r}")
        if not line_of(out, "site"):
            failures.append("a broken file hides the valid ones")

    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
