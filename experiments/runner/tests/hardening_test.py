#!/usr/bin/env python3
"""Hardening of the runner's verbs and of the results database's readers (issue 16).

  reset:   hostile --platform values and design platforms ("/abs", "../x") are refused before
           anything is touched; only directories with the runner's ownership marker are deleted;
           symbolic links planted in the runs tree are not followed; a retry never empties a
           run directory the runner did not make.
  readers: `experiment status`, `results export`, `effects`, `fit --db` with a mistyped --db
           create no file or directory; a WAL database in a read-only directory is read (as
           nobody when this runs as root, since root ignores permissions).
  export:  the CSV of `results export` is read by `fit --data`.

usage: hardening_test.py INVMW
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

INVMW = os.path.abspath(sys.argv[1])
MARKER = ".invmw-runner-owned"
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def run(args, expect=None, user=None):
    cmd = [INVMW, *args]
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if expect is not None:
        check(p.returncode == expect, f"{' '.join(args)}: exit {p.returncode}, expected {expect}"
              f"; stdout: {p.stdout[-800:]} stderr: {p.stderr[-800:]}")
    return p


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


TINY = """name = "tiny"
platform = "{platform}"
timeout = "60s"
responses = ["t_wall"]
[[factor]]
name = "n"
levels = [1, 2]
[command]
program = "/bin/true"
args = ["{{n}}"]
"""


def reset_is_safe(w):
    db = os.path.join(w, "db", "results.db")
    runs = os.path.join(w, "db", "runs")
    victim = os.path.join(w, "outside", "victim")
    write(os.path.join(victim, "keep"), "precious\n")
    write(os.path.join(victim, MARKER), "a marker behind a link is not trusted\n")
    design = os.path.join(w, "tiny.toml")
    write(design, TINY.format(platform="local"))
    # Two runs (ok or failed does not matter here): their directories are the runner's.
    run(["experiment", "run", design, "--db", db, "--no-progress"])
    for p in ("p0-r0", "p1-r0"):
        check(os.path.isfile(os.path.join(runs, "tiny", "local", p, MARKER)),
              f"run directory {p} has no ownership marker")
    rows = lambda: len(sqlite3.connect(db).execute(
        "SELECT * FROM runs WHERE design='tiny'").fetchall())
    check(rows() == 2, f"expected 2 rows, have {rows()}")

    # Hostile --platform values: refused, nothing deleted, no row forgotten.
    hostile = [os.path.relpath(victim, os.path.join(runs, "tiny")), victim, "..", ".", "../..",
               "a/b", ""]
    for h in hostile:
        for verb in ("reset", "run", "status"):
            p = run(["experiment", verb, design, "--db", db, "--platform", h])
            if h == "":  # empty means the design's platform
                continue
            check(p.returncode == 2 and "--platform '" + h + "'" in p.stderr,
                  f"experiment {verb} --platform {h!r}: exit {p.returncode}, stderr {p.stderr!r}")
    check(os.path.exists(os.path.join(victim, "keep")), "hostile --platform deleted the victim")
    check(rows() == 2, "a refused reset forgot rows")

    # A design whose platform is a path: refused with the file, line and field.
    for bad in (victim, "../../outside/victim", ".."):
        bad_design = os.path.join(w, "bad.toml")
        write(bad_design, TINY.format(platform=bad))
        for verb in ("reset", "run", "status"):
            p = run(["experiment", verb, bad_design, "--db", db], expect=2)
            check("bad.toml:2: field 'platform'" in p.stderr and "not a platform name" in p.stderr,
                  f"design platform {bad!r}, experiment {verb}: stderr {p.stderr!r}")
    check(os.path.exists(os.path.join(victim, "keep")), "a design platform deleted the victim")

    # Planted: an unmarked run directory, links to the victim, a platform directory by hand.
    write(os.path.join(runs, "tiny", "local", "p7-r0", "data"), "not the runner's\n")
    os.symlink(victim, os.path.join(runs, "tiny", "local", "p8-r0"))
    write(os.path.join(runs, "tiny", "byhand", "p0-r0", "data"), "not the runner's\n")
    os.symlink(victim, os.path.join(runs, "tiny", "linked"))
    p = run(["experiment", "reset", design, "--db", db], expect=0)
    check("forgot 2 runs, removed 2 run directories" in p.stdout, f"reset said {p.stdout!r}")
    check("p7-r0" in p.stderr and "p8-r0" in p.stderr, f"reset names what it kept: {p.stderr!r}")
    check(rows() == 0, "reset left rows")
    for p_ in ("p0-r0", "p1-r0"):
        check(not os.path.exists(os.path.join(runs, "tiny", "local", p_)), f"{p_} not removed")
    check(os.path.exists(os.path.join(runs, "tiny", "local", "p7-r0", "data")),
          "an unmarked run directory was deleted")
    check(os.path.islink(os.path.join(runs, "tiny", "local", "p8-r0")), "a planted link vanished")
    for plat in ("byhand", "linked"):
        run(["experiment", "reset", design, "--db", db, "--platform", plat], expect=0)
    check(os.path.exists(os.path.join(runs, "tiny", "byhand", "p0-r0", "data")),
          "a platform directory made by hand was deleted")
    check(os.path.exists(os.path.join(victim, "keep")) and
          os.path.exists(os.path.join(victim, MARKER)), "a link in the runs tree was followed")

    # A retry never empties a run directory the runner did not make.
    shutil.rmtree(os.path.join(runs, "tiny", "local", "p7-r0"), ignore_errors=True)  # ours
    if os.path.islink(os.path.join(runs, "tiny", "local", "p8-r0")):
        os.unlink(os.path.join(runs, "tiny", "local", "p8-r0"))
    write(os.path.join(runs, "tiny", "local", "p0-r0", "precious"), "mine\n")
    p = run(["experiment", "run", design, "--db", db, "--point", "0", "--no-progress"])
    check(p.returncode != 0 and "was not made by the runner" in p.stderr,
          f"run into an unmarked directory: exit {p.returncode}, stderr {p.stderr!r}")
    check(os.path.exists(os.path.join(runs, "tiny", "local", "p0-r0", "precious")),
          "the runner emptied a directory it did not make")


PP = """name = "pp"
platform = "local"
responses = ["t_wall"]
replications = 2
[[factor]]
name = "bytes"
levels = [100, 1000, 10000, 100000]
[[factor]]
name = "mpi"
levels = ["openmpi", "mpich"]
[command]
program = "/bin/true"
"""


MODEL = """schema = 1
name = "pp"
description = "the pingpong model on the column t_wall"
[factors]
bytes = { description = "message size", unit = "bytes" }
[parameters]
a1 = { unit = "MB/s", kind = "platform", initial = 10, lower = 1e-3, upper = 1e6, description = "rate" }
b1 = { unit = "s", kind = "platform", initial = 1e-4, lower = 0, upper = 10, description = "overhead" }
[total]
name = "t_msg"
column = "t_wall"
expr = "b1 + bytes/(a1*1e6)"
"""


def make_pp_db(path):
    """MODEL's data, t_wall = 1e-5 + bytes / 1e8 (1% more in replication 1), in a WAL database."""
    db = sqlite3.connect(path)
    db.executescript("""
      PRAGMA journal_mode=WAL;
      CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
      INSERT INTO meta VALUES ('schema', '1');
      CREATE TABLE runs(
        id INTEGER PRIMARY KEY, design TEXT NOT NULL, point INTEGER NOT NULL,
        replication INTEGER NOT NULL, platform TEXT NOT NULL, run_order INTEGER,
        factors TEXT NOT NULL, responses TEXT, host TEXT, start_time TEXT, duration REAL,
        exit_status INTEGER, status TEXT NOT NULL CHECK(status IN ('ok','failed')), error TEXT,
        trace_dir TEXT, UNIQUE(design, point, replication, platform));""")
    order = 0
    for rep in range(2):
        for m, mpi in enumerate(["openmpi", "mpich"]):
            for b, nbytes in enumerate([100, 1000, 10000, 100000]):
                t = 1e-5 + nbytes / 1e8 * (1 + 0.01 * rep)
                db.execute(
                    "INSERT INTO runs(design, point, replication, platform, run_order, factors, "
                    "responses, status, exit_status, duration) VALUES "
                    "('pp', ?, ?, 'local', ?, ?, ?, 'ok', 0, 1.0)",
                    (m * 4 + b, rep, order, json.dumps({"bytes": nbytes, "mpi": mpi}),
                     json.dumps({"t_wall": t})))
                order += 1
    db.commit()
    db.close()
    check(not os.path.exists(path + "-wal"), "the WAL was not checkpointed on close")


def readers_create_nothing(w):
    design = os.path.join(w, "pp.toml")
    write(design, PP)
    write(os.path.join(w, "pp_model.toml"), MODEL)
    model = os.path.join(w, "pp_model.toml")
    for i, args in enumerate([
            ["experiment", "status", design],
            ["results", "export", "--design", "pp", "--format", "csv"],
            ["effects", "--design", "pp"],
            ["fit", "--model", model, "--design", "pp"]]):
        missing = os.path.join(w, "typo%d" % i, "sub", "results.db")
        p = run(args + ["--db", missing])
        check(p.returncode != 0 and missing in p.stderr,
              f"{args[:2]} with a missing --db: exit {p.returncode}, stderr {p.stderr!r}")
        check(not os.path.exists(os.path.join(w, "typo%d" % i)),
              f"{args[:2]} with a missing --db created {os.path.join(w, 'typo%d' % i)}")
    missing = os.path.join(w, "typo-reset", "results.db")
    p = run(["experiment", "reset", design, "--db", missing], expect=0)
    check("no database there" in p.stdout, f"reset of a missing database said {p.stdout!r}")
    check(not os.path.exists(os.path.dirname(missing)), "reset created the missing database")


def read_only_wal(w):
    """A WAL database in a directory the reader cannot write."""
    os.chmod(w, 0o755)
    ro = os.path.join(w, "ro")
    os.makedirs(ro)
    db = os.path.join(ro, "results.db")
    make_pp_db(db)
    out = os.path.join(w, "out")
    os.makedirs(out)
    os.chmod(out, 0o777)
    os.chmod(db, 0o444)
    os.chmod(ro, 0o555)
    user = None
    if os.getuid() == 0:
        if shutil.which("setpriv") is None:
            print("note: no setpriv; the read-only directory part needs a non-root reader")
            return
        user = 65534  # nobody: root would write the -shm regardless of the mode bits
    design = os.path.join(w, "pp.toml")
    p = run(["experiment", "status", design, "--db", db], expect=0, user=user)
    check("of 16 runs ok and complete, 0 failed, 0 not run" in p.stdout,
          f"status on a read-only WAL database: {p.stdout!r}")
    csv_path = os.path.join(out, "pp.csv")
    run(["results", "export", "--design", "pp", "--db", db, "--format", "csv", "-o", csv_path],
        expect=0, user=user)
    p = run(["effects", "--design", "pp", "--db", db], expect=0, user=user)
    check("bytes" in p.stdout, f"effects on a read-only WAL database: {p.stdout[-400:]!r}")
    model = os.path.join(w, "pp_model.toml")
    p = run(["fit", "--model", model, "--design", "pp", "--db", db, "--no-cv", "--json"],
            expect=0, user=user)
    check(sorted(os.listdir(ro)) == ["results.db"],
          f"readers created files next to the database: {os.listdir(ro)}")
    os.chmod(ro, 0o755)


def export_then_fit(w):
    db = os.path.join(w, "rw", "results.db")
    os.makedirs(os.path.dirname(db))
    make_pp_db(db)
    csv_path = os.path.join(w, "rw", "pp.csv")
    run(["results", "export", "--design", "pp", "--db", db, "--format", "csv", "-o", csv_path],
        expect=0)
    with open(csv_path) as f:
        head = f.readline().strip()
    check(head == "point,replication,platform,bytes,mpi,t_wall", f"export header {head!r}")
    model = os.path.join(w, "pp_model.toml")
    p = run(["fit", "--model", model, "--data", csv_path, "--no-cv", "--json"], expect=0)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        check(False, f"fit --data on the export printed no JSON: {p.stdout[:300]!r}")
        return
    check(j.get("observations") == 16,
          f"fit --data read {j.get('observations')} of the export's 16 rows")
    params = {prm.get("name"): prm.get("value") for prm in j.get("parameters", [])}
    a1 = params.get("a1")
    check(a1 is not None and abs(a1 - 100) < 2, f"a1 from the export: {a1} (expected ~100)")


def ctest_output_keeps_neighbours(w):
    """`design ctest --output OUT` writes through a temporary of its own: a file the user has at
    OUT.tmp stays as it was (it used to be truncated and renamed away)."""
    design = os.path.join(w, "pp-ctest.toml")
    write(design, PP)
    out = os.path.join(w, "pp.cmake")
    write(out + ".tmp", "the user's own file\n")
    p = run(["design", "ctest", design, "--db", os.path.join(w, "ctest.db"), "--output", out])
    check(p.returncode == 0, f"design ctest --output: exit {p.returncode}, {p.stderr!r}")
    check(os.path.exists(out) and "add_test(" in open(out).read(), "no CTest script written")
    check(os.path.exists(out + ".tmp") and open(out + ".tmp").read() == "the user's own file\n",
          "design ctest --output changed or removed OUT.tmp")


def main():
    w = tempfile.mkdtemp(prefix="invmw-hardening-")
    try:
        for part in (reset_is_safe, readers_create_nothing, read_only_wal, export_then_fit,
                     ctest_output_keeps_neighbours):
            try:
                part(w)
            except Exception as e:  # a part that breaks must not hide the others
                check(False, f"{part.__name__}: {type(e).__name__}: {e}")
    finally:
        for root, dirs, _ in os.walk(w):
            for d in dirs:
                p = os.path.join(root, d)
                if not os.path.islink(p):
                    os.chmod(p, 0o755)
        shutil.rmtree(w)  # this test's own directory
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
