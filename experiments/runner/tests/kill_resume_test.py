#!/usr/bin/env python3
"""An interrupted design resumes without losing or repeating runs.

Runs an 8-point design with `invmw experiment run` into a scratch database and
  1. kills the runner with SIGKILL once 3 runs are recorded: the run in progress must not
     leave processes behind, and nothing half-written may appear in the database;
  2. starts it again and interrupts it with SIGINT (Ctrl-C) after one more run: exit status
     130, only complete rows;
  3. starts it again: it runs only what is missing, ending with 8 rows, one per point, the
     first rows untouched (same start_time and run_order), run_order 0..7;
  4. starts it once more: nothing is run.
Every row's responses must be the ones the inverse mapping derived from that run's trace
(the run directory's analysis.json, written from traces.otf2).
With --platform (an emulated cluster; needs root, else exit 77 = skipped), the killed run may
leave its cgroups and network namespace behind, but the next start removes them: after the
resume no invmw-* cgroup or namespace remains, and the rows carry the platform's name.
"""
import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "platforms", "emulate", "tests"))
import emulate_test as et  # noqa: E402  (root checks and the invmw-* resource listing)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def rows(db):
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db, timeout=30)
    try:
        cur = con.execute("SELECT point, replication, platform, run_order, status, responses, "
                          "start_time, trace_dir, error FROM runs ORDER BY run_order")
        return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def stray_processes(marker):
    """Processes (other than us) whose command line mentions the scratch directory."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append("%s: %s" % (pid, cmd[:200]))
    return found


def run_cmd(args, db):
    cmd = [args.invmw, "experiment", "run", args.design, "--db", db, "--no-progress"]
    return cmd + (["--platform", args.platform] if args.platform else [])


def start(args, db, log):
    return subprocess.Popen(run_cmd(args, db), stdout=log, stderr=subprocess.STDOUT)


def wait_rows(proc, db, count, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if len(rows(db)) >= count:
            return
        if proc.poll() is not None:
            fail("runner ended (status %s) before %d rows were recorded" % (proc.returncode, count))
        time.sleep(0.05)
    fail("no %d rows after %d s" % (count, timeout))


def check_sound(db, n_points):
    for r in rows(db):
        if r["status"] != "ok":
            fail("point %d failed: %s" % (r["point"], r["error"]))
        resp = json.loads(r["responses"])
        with open(os.path.join(r["trace_dir"], "analysis.json")) as f:
            analysis = json.load(f)
        if not os.path.exists(os.path.join(r["trace_dir"], "traces.otf2")):
            fail("point %d: no trace in %s" % (r["point"], r["trace_dir"]))
        opal = analysis.get("opal", {})
        for k in ("t_wall", "t_par_comp", "t_seq_comp", "t_comm", "t_sync", "t_idle"):
            if not isinstance(resp.get(k), (int, float)):
                fail("point %d: response %s missing in %s" % (r["point"], k, r["responses"]))
            if k not in opal or abs(opal[k] - resp[k]) > 1e-12 * max(1.0, abs(resp[k])):
                fail("point %d: %s = %s is not the trace's %s" % (r["point"], k, resp[k],
                                                                  opal.get(k)))
        if not 0 <= r["point"] < n_points:
            fail("bad point %d" % r["point"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--design", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--platform", help="run on this emulated platform (root)")
    args = ap.parse_args()
    if args.platform:
        et.need(netns=True)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    db = os.path.join(args.workdir, "results.db")
    log = open(os.path.join(args.workdir, "runner.log"), "w")
    n_points = 8

    # 1. SIGKILL after 3 rows.
    p = start(args, db, log)
    wait_rows(p, db, 3, 90)
    p.kill()
    p.wait()
    first = {r["point"]: r for r in rows(db)}
    print("killed the runner with %d rows recorded" % len(first))
    deadline = time.time() + 20
    while stray_processes(args.workdir) and time.time() < deadline:
        time.sleep(0.2)
    left = stray_processes(args.workdir)
    if left:
        fail("processes of the killed run remain:\n  " + "\n  ".join(left))
    check_sound(db, n_points)
    if args.platform:
        print("left by the killed run (the next start removes them): %s" % et.resources())

    # 2. SIGINT after one more row.
    p = start(args, db, log)
    wait_rows(p, db, len(first) + 1, 90)
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=60)
    if rc != 128 + signal.SIGINT:
        fail("runner interrupted by SIGINT exited with %d, expected 130" % rc)
    after_int = len(rows(db))
    print("interrupted with SIGINT, %d rows recorded" % after_int)
    check_sound(db, n_points)

    # 3. Finish.
    p = start(args, db, log)
    rc = p.wait(timeout=120)
    if rc != 0:
        fail("resumed runner exited with %d (see %s/runner.log)" % (rc, args.workdir))
    final = rows(db)
    keys = [(r["point"], r["replication"], r["platform"]) for r in final]
    if len(final) != n_points or len(set(keys)) != n_points:
        fail("expected %d distinct rows, got %s" % (n_points, keys))
    if sorted(r["run_order"] for r in final) != list(range(n_points)):
        fail("run_order is not 0..%d: %s" % (n_points - 1, [r["run_order"] for r in final]))
    for r in final:
        if r["point"] in first and (r["start_time"] != first[r["point"]]["start_time"] or
                                    r["run_order"] != first[r["point"]]["run_order"]):
            fail("point %d, done before the kill, was run again" % r["point"])
    check_sound(db, n_points)
    if args.platform:
        if any(r["platform"] != args.platform for r in final):
            fail("rows not on %s: %s" % (args.platform, [r["platform"] for r in final]))
        if et.resources():
            fail("cgroups or namespaces remain after the resume: %s" % et.resources())

    # 4. Nothing left to do.
    out = subprocess.run(run_cmd(args, db), capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or "8 of 8 runs already done" not in out.stdout:
        fail("a complete design ran again: %s %s" % (out.stdout, out.stderr))
    if [(r["point"], r["start_time"]) for r in rows(db)] != \
            [(r["point"], r["start_time"]) for r in final]:
        fail("rows changed although nothing was to run")
    print("OK: 3 rows before SIGKILL, %d before SIGINT, 8 after the resume, none repeated"
          % after_int)
    shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
