#!/usr/bin/env python3
"""Synthetic-trace test of the inverse mapping's Opal components (issue 20, item 4).

make_opal_otf2 writes OTF2 traces of an opal-mini-like run whose components are known by
construction (its header: a late arrival at a barrier, a server stalled after computing, a late
receiver, a late sender), once with rendezvous sends (the client's send holds the transfer) and
once with eager sends (the send returns before the data arrives, as Open MPI's TCP sends under
the 64 KiB eager limit do). `invmw analyze --opal` must give every component of both exactly
(1 ns: the timestamps are whole nanoseconds), and the same t_comm, t_sync and t_idle for both
protocols: the wire time of an eager request is t_comm, not the client's barrier wait.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys

COMPONENTS = ["t_wall", "t_par_comp", "t_seq_comp", "t_comm", "t_sync", "t_idle"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--maker", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if os.path.exists(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)
    failures = []
    for protocol in ("rendezvous", "eager"):
        for servers, steps in ((2, 3), (3, 5)):
            name = "%s-p%d" % (protocol, servers)
            tdir = os.path.join(a.work, name)
            r = subprocess.run([a.maker, tdir, protocol, str(servers), str(steps)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("make_opal_otf2 failed: " + r.stderr)
            with open(os.path.join(tdir, "expected.json")) as f:
                want = json.load(f)
            out = os.path.join(a.work, name + ".json")
            r = subprocess.run([a.invmw, "analyze", "--opal", "--quiet", "--threads", "1",
                                "--json", out, tdir], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append("%s: invmw analyze --opal failed (%d): %s"
                                % (name, r.returncode, r.stderr[-2000:]))
                continue
            with open(out) as f:
                got = json.load(f)["opal"]
            line = []
            for c in COMPONENTS:
                ok = abs(got[c] - want[c]) <= 1e-9
                line.append("%s %.6f/%.6f%s" % (c, got[c], want[c], "" if ok else " WRONG"))
                if not ok:
                    failures.append("%s: %s measured %.9f s, generated %.9f s"
                                    % (name, c, got[c], want[c]))
            print(name + ": " + "  ".join(line))
    failures += check_failed_write(a.invmw, os.path.join(a.work, "rendezvous-p2"), a.work)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("every component equals the generator's")
    return 0


def check_failed_write(invmw, trace_dir, work):
    """A write that fails (here: the file-size limit, as a full disk would) leaves the previous
    analysis JSON whole, exits non-zero naming the file, and leaves no temporary file behind."""
    out_dir = os.path.join(work, "failed-write")
    os.makedirs(out_dir)
    out = os.path.join(out_dir, "analysis.json")
    before = '{"previous": "analysis, kept whole"}\n'
    with open(out, "w") as f:
        f.write(before)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    r = subprocess.run([invmw, "analyze", "--opal", "--quiet", "--json", out, trace_dir],
                       capture_output=True, text=True, preexec_fn=limit)
    errors = []
    if r.returncode == 0:
        errors.append("analyze with a 64-byte file-size limit exited 0")
    if out not in r.stderr:
        errors.append("the error does not name %s: %r" % (out, r.stderr[-500:]))
    with open(out) as f:
        if f.read() != before:
            errors.append("a failed write changed the previous %s" % out)
    if os.listdir(out_dir) != ["analysis.json"]:
        errors.append("files left in %s: %s" % (out_dir, sorted(os.listdir(out_dir))))
    print("failed write: exit %d, %s" % (r.returncode, r.stderr.strip()[-200:]))
    return errors


if __name__ == "__main__":
    sys.exit(main())
