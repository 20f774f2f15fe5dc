#!/usr/bin/env python3
"""Simulated clusters as run platforms (issue 19 item 2), end to end through the runner.

1. Determinism and meaning: opal-mini (n = 1500, s = 4) on sim-16-fast-cops, p = 1 and p = 15
   (16 ranks on the 16-node cluster), two replications each: the replications' t_wall agree
   within 1%, every Opal response is there, and with one server t_par_comp is the declared work
   over the table's host speed: s x (10 + 100) flops x n(n-1)/2 pairs x a3 / 100.
2. Scale: 64 and 256 ranks on sim-256-fast-cops run and give the responses; the servers' part
   shrinks with p as the work is divided. master-worker (validation-master-worker, one point)
   takes its workers' declared work; probe-barrier-smpi gives one b5 in both replications.
3. Bad input: no smpirun on PATH, a table without a1, a broken platform file, a program
   without an SMPI build, `platform probe` on a simulated cluster: each a clear error naming
   what is wrong.
Exit 77 (skip) when smpirun or the SMPI builds are missing.
"""
import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time

FAST_COPS_A3 = 9.80392e-07  # platforms/tables/fast-cops.toml


def design(path, name, platform, p_levels, reps, program="opal-mini"):
    with open(path, "w") as f:
        f.write(f'''name = "{name}"
description = "simulated-platform test"
type = "full"
replications = {reps}
seed = 7
platform = "{platform}"
timeout = "120s"
responses = ["t_wall", "t_par_comp", "t_seq_comp", "t_comm", "t_sync", "t_idle"]

[[factor]]
name = "p"
description = "servers"
levels = [{", ".join(str(p) for p in p_levels)}]

[command]
ranks = "p + 1"
launcher = ["mpirun", "--oversubscribe", "-np", "{{ranks}}"]
program = "{program}"
args = ["--n", "1500", "--u", "1", "--rc", "0", "--s", "4", "--seed", "1"]
''')


def run(cmd, env=None, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if check and r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    return r


def rows(invmw, db, name):
    out = run([invmw, "results", "export", "--design", name, "--format", "csv", "--db", db]).stdout
    return list(csv.DictReader(io.StringIO(out)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    args = ap.parse_args()
    invmw = os.path.abspath(args.invmw)
    bindir = os.path.dirname(invmw)
    if not shutil.which("smpirun"):
        print("SKIP: smpirun not on PATH (Debian libsimgrid-dev)")
        return 77
    for prog in ("opal-mini-smpi", "master-worker-smpi", "probe-barrier-smpi"):
        if not os.access(os.path.join(bindir, prog), os.X_OK):
            print(f"SKIP: {prog} is not built (smpicc)")
            return 77
    failures = []
    work = tempfile.mkdtemp(prefix="invmw-simulated-")
    try:
        # 1. Determinism and the declared work.
        d1 = os.path.join(work, "det.toml")
        design(d1, "sim-det", "sim-16-fast-cops", [1, 15], 2)
        db = os.path.join(work, "r.db")
        run([invmw, "experiment", "run", d1, "--db", db])
        by = {}
        for r in rows(invmw, db, "sim-det"):
            for k in ("t_wall", "t_par_comp", "t_seq_comp", "t_comm", "t_sync", "t_idle"):
                if r[k] == "":
                    failures.append(f"p={r['p']} rep {r['replication']}: no {k}")
            by.setdefault(int(r["p"]), []).append(r)
        for p, rs in sorted(by.items()):
            if len(rs) != 2:
                failures.append(f"p={p}: {len(rs)} runs, expected 2")
                continue
            w = [float(r["t_wall"]) for r in rs]
            spread = abs(w[0] - w[1]) / max(w)
            print(f"determinism: p={p} ({p + 1} ranks) t_wall {w[0]:.6f} s and {w[1]:.6f} s "
                  f"(spread {spread:.2e})")
            if spread > 0.01:
                failures.append(f"p={p}: t_wall {w} differ by {spread:.1%} (> 1%)")
            for r in rs:
                if float(r["t_wall"]) + 1e-9 < float(r["t_par_comp"]):
                    failures.append(f"p={p}: t_wall < t_par_comp: {r}")
        n, s = 1500, 4
        expected = s * 110 * n * (n - 1) / 2 * FAST_COPS_A3 / 100
        if 1 in by and by[1]:
            got = float(by[1][0]["t_par_comp"])
            print(f"declared work: p=1 t_par_comp {got:.6f} s, expected {expected:.6f} s")
            if abs(got - expected) / expected > 0.02:
                failures.append(f"p=1: t_par_comp {got} is not the declared work "
                                f"{expected} (> 2% off)")

        # 2. 64 and 256 ranks.
        d2 = os.path.join(work, "big.toml")
        design(d2, "sim-big", "sim-256-fast-cops", [63, 255], 1)
        t0 = time.monotonic()
        run([invmw, "experiment", "run", d2, "--db", db])
        print(f"64 and 256 ranks: {time.monotonic() - t0:.1f} s for both runs")
        big = {int(r["p"]): r for r in rows(invmw, db, "sim-big")}
        for p in (63, 255):
            if p not in big:
                failures.append(f"{p + 1} ranks: no row")
                continue
            r = big[p]
            par = float(r["t_par_comp"])
            print(f"{p + 1} ranks: t_wall {float(r['t_wall']):.6f} s, t_par_comp {par:.6f} s")
            if not expected / p * 0.9 <= par <= expected / p * 2:
                failures.append(f"{p + 1} ranks: t_par_comp {par} is not about the one-server "
                                f"work / {p} = {expected / p}")

        # master-worker's shipped validation design, point 3 (3 workers, 2000 units of 2000
        # flops per task, 48 tasks, 1000 bytes): the workers' declared work bounds the wall time.
        mw = os.path.join(os.path.dirname(__file__), "..", "..", "..", "experiments", "designs",
                          "validation-master-worker.toml")
        run([invmw, "experiment", "run", mw, "--platform", "sim-16-fast-cops", "--point", "3",
             "--db", db])
        r = rows(invmw, db, "validation-master-worker")[0]
        ideal = 48 * 2000 * 2000 / 102e6 / 3
        wall = float(r["wall_s"])
        print(f"master-worker: w=3 wall_s {wall:.6f} s, declared work / 3 workers {ideal:.6f} s")
        if not ideal <= wall <= ideal * 1.15:
            failures.append(f"master-worker: wall_s {wall} not within [1, 1.15] x {ideal}")

        # probe-barrier's SMPI build on the simulated cluster: b5 there, the same every time.
        r = run([invmw, "platform", "exec", "sim-16-fast-cops", "--ranks", "8", "--",
                 os.path.join(bindir, "probe-barrier-smpi"), "--reps", "50", "--replications",
                 "2"])
        means = [l for l in r.stdout.splitlines() if l.startswith('{"probe":"barrier"')]
        vals = {l.split('"mean_s":')[1].rstrip("}") for l in means}
        print("probe-barrier-smpi:", means)
        if len(means) != 2 or len(vals) != 1 or not float(vals.pop()) > 1.5e-05:
            failures.append(f"probe-barrier-smpi: {means}")

        # 3. Bad input.
        empty = os.path.join(work, "empty-path")
        os.mkdir(empty)
        env = dict(os.environ, PATH=empty)
        r = run([invmw, "platform", "exec", "sim-16-fast-cops", "--ranks", "2", "--",
                 os.path.join(bindir, "opal-mini-smpi")], env=env, check=False)
        if r.returncode != 125 or "smpirun" not in r.stdout or "not on PATH" not in r.stdout:
            failures.append(f"no smpirun: exit {r.returncode}, said: {r.stdout!r}")
        else:
            print("no smpirun:", r.stdout.strip())

        emu = os.path.join(work, "emulated")
        sim = os.path.join(work, "simulated")
        os.mkdir(emu)
        os.mkdir(sim)
        src = os.path.join(os.path.dirname(__file__), "..", "..", "tables", "fast-cops.toml")
        with open(src) as f:
            table = [l for l in f if not l.startswith("a1 ")]
        with open(os.path.join(sim, "nobw-table.toml"), "w") as f:
            f.writelines(table)
        with open(os.path.join(sim, "nobw.toml"), "w") as f:
            f.write('name = "nobw"\ndescription = "a table without a1"\nkind = "simgrid"\n'
                    'table = "./nobw-table.toml"\nnodes = 4\n')
        with open(os.path.join(sim, "badnodes.toml"), "w") as f:
            f.write('name = "badnodes"\ndescription = "x"\nkind = "simgrid"\n'
                    'table = "fast-cops"\nnodes = 1\n')
        env = dict(os.environ, INVMW_EMULATE_DIR=emu)
        r = run([invmw, "platform", "exec", "nobw", "--ranks", "2", "--",
                 os.path.join(bindir, "opal-mini-smpi")], env=env, check=False)
        if r.returncode != 125 or "parameters.a1" not in r.stdout:
            failures.append(f"table without a1: exit {r.returncode}, said: {r.stdout!r}")
        else:
            print("table without bandwidth:", r.stdout.strip())
        r = run([invmw, "platform", "exec", "badnodes", "--", "/bin/true"], env=env, check=False)
        if r.returncode == 0 or "badnodes.toml:5:" not in r.stdout or "'nodes'" not in r.stdout:
            failures.append(f"nodes = 1: exit {r.returncode}, said: {r.stdout!r}")
        else:
            print("bad platform file:", r.stdout.strip())
        r = run([invmw, "platform", "list"], env=env, check=False)
        if "badnodes" not in r.stdout or "INVALID" not in r.stdout or "nobw" not in r.stdout:
            failures.append(f"platform list with simulated files: {r.stdout!r}")

        r = run([invmw, "platform", "probe", "--name", "x", "--platform", "sim-16-fast-cops",
                 "--out", os.path.join(work, "p.toml")], check=False)
        if r.returncode == 0 or "is a simulated cluster" not in r.stdout:
            failures.append(f"probe on a simulated platform: exit {r.returncode}, {r.stdout!r}")

        prog = os.path.join(work, "no-smpi-build")
        shutil.copy("/bin/true", prog)
        d3 = os.path.join(work, "nosmpi.toml")
        design(d3, "sim-nosmpi", "sim-16-fast-cops", [1], 1, program=prog)
        r = run([invmw, "experiment", "run", d3, "--db", db], check=False)
        if r.returncode == 0 or "has no SMPI build" not in r.stdout:
            failures.append(f"program without SMPI build: exit {r.returncode}, said {r.stdout!r}")
        else:
            print("no SMPI build:", r.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
