#!/usr/bin/python3
"""The sampler under the preload, end to end: a 2-rank run of known shape (rank 0 busy-loops,
rank 1 writes a known file then sleeps) traced with a 5 ms sampling interval. Checks what the
issue asks of it, reading the run's own outputs back: the profile's resource summaries, the OTF2
metrics (Python OTF2 bindings and otf2-print), and the one-time fallback notice.

Also --nonmpi: a program that never calls MPI, preloaded with INVMW_RUNTIME_NONMPI=1, must keep
its exit status and leave a profile with its resources.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import otf2

failures = []


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg, flush=True)
    if not ok:
        failures.append(msg)


def run(cmd, env=None, timeout=120):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def check_mpi(a):
    out = os.path.join(a.work, "run")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(a.work, exist_ok=True)
    busy, interval, nbytes = 1.0, 0.005, 3 * 1024 * 1024 + 123
    launcher = [a.launcher, "--oversubscribe", "-np", "2"]
    r = run([a.invmw, "run", "--out", out, "--trace", "--env", "INVMW_SAMPLER_INTERVAL=5ms",
             "--"] + launcher + [a.app, str(busy), os.path.join(a.work, "written.dat"), str(nbytes)])
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    check(r.returncode == 0, "run exit status %d" % r.returncode)
    notices = r.stderr.count("software events")
    hw_missing = notices > 0
    check(notices <= 1, "the counter fallback is announced at most once (%d times)" % notices)

    prof = json.load(open(os.path.join(out, "profile.json")))
    res = {x["rank"]: x for x in prof.get("resources", {}).get("ranks", [])}
    check(sorted(res) == [0, 1], "profile.json has resources for ranks 0 and 1: %s" % sorted(res))
    if sorted(res) != [0, 1]:
        return
    for rank, x in sorted(res.items()):
        expected = x["wall_s"] / interval
        check(x["wall_s"] >= busy, "rank %d: sampled span %.3f s covers the %.1f s run" % (rank, x["wall_s"], busy))
        check(abs(x["samples"] - expected) <= 0.25 * expected,
              "rank %d: %d samples, duration/interval = %.0f (within 25%%)" % (rank, x["samples"], expected))
        counters = {k: v for k, v in x.get("counters", {}).items() if v > 0}
        check(len(counters) > 0, "rank %d: counter values arrive: %s" % (rank, counters))
        cpu = x["cpu_user_s"] + x["cpu_system_s"]
        # The busy rank only: the counters open after the sampler starts, so a rank with little
        # CPU time (rank 1 sleeps) has most of it, MPI_Init's, before they count.
        if rank == 0 and "counters.task_clock" in x.get("counters", {}):
            tc = x["counters"]["counters.task_clock"] * 1e-9
            check(abs(tc - cpu) <= 0.2 * cpu + 0.02,
                  "rank %d: task clock %.3f s grows with CPU time %.3f s" % (rank, tc, cpu))
    # c_sampler's rank 0 computes until it has had `busy` seconds of CPU time (whatever the load).
    check(res[0]["cpu_user_s"] > 0.8 * busy,
          "busy rank 0: CPU user %.3f s > 80%% of its %.1f s of computation" % (res[0]["cpu_user_s"], busy))
    check(res[1]["cpu_user_s"] < 0.5 * res[1]["wall_s"],
          "sleeping rank 1: CPU user %.3f s < 50%% of wall" % res[1]["cpu_user_s"])
    check(res[1]["io_write_bytes"] >= nbytes,
          "rank 1: wchar %d >= the %d bytes it wrote" % (res[1]["io_write_bytes"], nbytes))
    check(res[0]["node_leader"] != res[1]["node_leader"], "exactly one node leader on one host")
    if hw_missing:
        check("counters.task_clock" in res[0]["counters"], "fallback: software task clock sampled")
    text = open(os.path.join(out, "profile.txt")).read()
    check("Resources per rank" in text, "profile.txt has the resources section")

    # The same samples as asynchronous metrics in the trace, on one metric location per rank.
    archive = os.path.join(out, "traces.otf2")
    per_rank = {}
    with otf2.reader.open(archive) as trace:
        defs = trace.definitions
        members = list(defs.metric_members)
        check(any(m.name == "proc.cpu.user" for m in members), "metric members defined")
        for loc, ev in trace.events:
            if isinstance(ev, otf2.events.Metric):
                check_loc = loc.type == otf2.LocationType.METRIC
                if not check_loc:
                    check(False, "Metric event on a non-metric location %s" % loc.name)
                per_rank.setdefault(loc.group.name, []).append(ev)
    total = 0
    for rank in (0, 1):
        evs = per_rank.get("rank %d" % rank, [])
        total += len(evs)
        check(abs(len(evs) - res[rank]["samples"]) <= 1,
              "rank %d: %d Metric events for %d samples" % (rank, len(evs), res[rank]["samples"]))
        if not evs:
            continue
        times = [e.time for e in evs]
        check(times == sorted(times), "rank %d: metric timestamps monotone" % rank)
        names = [m.name for m in evs[0].metric.members]
        for k, m in enumerate(evs[0].metric.members):
            if m.metric_mode == otf2.MetricMode.ACCUMULATED_START:
                vs = [e.values[k] for e in evs]
                if not all(b >= a_ for a_, b in zip(vs, vs[1:])):
                    check(False, "rank %d: accumulated %s decreases" % (rank, m.name))
        k = names.index("proc.cpu.user")
        check(evs[-1].values[k] > 0.8 * busy if rank == 0 else True,
              "rank %d: last proc.cpu.user sample %.3f" % (rank, evs[-1].values[k]))
    printed = run([a.otf2_print, archive]).stdout
    n = sum(1 for line in printed.splitlines() if line.startswith("METRIC "))
    check(n == total, "otf2-print shows %d METRIC records, the reader %d" % (n, total))


def check_nonmpi(a):
    out = os.path.join(a.work, "nonmpi")
    shutil.rmtree(out, ignore_errors=True)
    # A sanitized library needs its sanitizer runtime as the process's first library.
    preload = ":".join([x for x in a.sanitizer_preload.split(":") if x] + [a.lib])
    env = dict(os.environ, LD_PRELOAD=preload, INVMW_RUNTIME_NONMPI="1", INVMW_OUTPUT_DIR=out,
               INVMW_SAMPLER_INTERVAL="5ms")
    r = run([a.nonmpi, "0.4", "5"], env=env)
    check(r.returncode == 5, "exit status kept: %d" % r.returncode)
    check(r.stdout == "c_nonmpi: done\n", "output kept: %r" % r.stdout)
    plain = run([a.nonmpi, "0.1", "5"])
    check(plain.returncode == 5 and plain.stdout == r.stdout, "same status/output without invmw")
    path = os.path.join(out, "profile.json")
    check(os.path.exists(path), "profile.json written for a non-MPI program")
    if not os.path.exists(path):
        return
    prof = json.load(open(path))
    check(prof.get("non_mpi") is True, "profile marked non_mpi")
    x = prof["resources"]["ranks"][0]
    check(x["samples"] >= 0.4 / 0.005 * 0.75, "%d samples over 0.4 s at 5 ms" % x["samples"])
    check(x["cpu_user_s"] > 0.3, "busy program: CPU user %.3f s" % x["cpu_user_s"])
    # A child of the observed program does not start its own sampler: the profile is the
    # parent's (its pid), not overwritten by the child's.
    out2 = os.path.join(a.work, "nonmpi-child")
    shutil.rmtree(out2, ignore_errors=True)
    env2 = dict(env, INVMW_OUTPUT_DIR=out2)
    parent = ("import os, subprocess, sys; print(os.getpid(), flush=True); "
              "sys.exit(subprocess.call([%r, '0.05', '0']) + 4)" % a.nonmpi)
    r = run(["/usr/bin/python3", "-c", parent], env=env2)
    check(r.returncode == 4, "parent exit status kept: %d" % r.returncode)
    ranks = json.load(open(os.path.join(out2, "profile.json")))["resources"]["ranks"]
    parent_pid = int(r.stdout.split()[0])
    check([x["pid"] for x in ranks] == [parent_pid],
          "the sampled process is the parent %d: %s" % (parent_pid, [x["pid"] for x in ranks]))


def check_counters(a):
    """INVMW_TRACE_COUNTERS=1: counter values at every traced MPI call's entry and exit, as
    synchronous metrics on the calling thread's location, read back with the OTF2 bindings."""
    out = os.path.join(a.work, "counters")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(a.work, exist_ok=True)
    busy = 0.3
    r = run([a.invmw, "run", "--out", out, "--trace", "--env", "INVMW_TRACE_COUNTERS=1", "--",
             a.launcher, "--oversubscribe", "-np", "2", a.app, str(busy),
             os.path.join(a.work, "c.dat"), "1000"])
    sys.stdout.write(r.stderr)
    check(r.returncode == 0, "run exit status %d" % r.returncode)
    prof = json.load(open(os.path.join(out, "profile.json")))
    # MPI_Init* and MPI_Finalize are regions too, but carry no counter values (they bracket
    # the recording).
    calls = {r["rank"]: sum(f["calls"] for n, f in r["functions"].items()
                            if not n.startswith("MPI_Init") and n != "MPI_Finalize")
             for r in prof["ranks"]}
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as trace:
        per_loc = {}
        for loc, ev in trace.events:
            if loc.type == otf2.LocationType.CPU_THREAD:
                per_loc.setdefault(loc.group.name, []).append(ev)
        sync_classes = [c for c in trace.definitions.metric_classes
                        if c.occurrence == otf2.MetricOccurrence.SYNCHRONOUS]
    check(len(sync_classes) >= 1, "a synchronous metric class is defined")
    for rank in (0, 1):
        evs = per_loc.get("rank %d" % rank, [])
        def counted(e):  # invmw:init (invmw's start-up) lies inside MPI_Init
            name = e.region.name
            return not name.startswith("MPI_Init") and name not in ("MPI_Finalize", "invmw:init")
        enters = [i for i, e in enumerate(evs) if isinstance(e, otf2.events.Enter) and counted(e)]
        leaves = [i for i, e in enumerate(evs) if isinstance(e, otf2.events.Leave) and counted(e)]
        metrics = [e for e in evs if isinstance(e, otf2.events.Metric)]
        after_enter = sum(1 for i in enters if i + 1 < len(evs) and isinstance(evs[i + 1], otf2.events.Metric)
                          and evs[i + 1].time == evs[i].time)
        before_leave = sum(1 for i in leaves if i > 0 and isinstance(evs[i - 1], otf2.events.Metric)
                           and evs[i - 1].time == evs[i].time)
        check(len(enters) > 0 and after_enter == len(enters),
              "rank %d: %d of %d Enters carry counter values" % (rank, after_enter, len(enters)))
        check(before_leave == len(leaves),
              "rank %d: %d of %d Leaves carry counter values" % (rank, before_leave, len(leaves)))
        check(len(enters) == calls.get(rank), "rank %d: %d Enters for the profile's %s calls"
              % (rank, len(enters), calls.get(rank)))
        check(len(metrics) == 2 * len(enters), "rank %d: %d synchronous metrics = 2 x %d calls"
              % (rank, len(metrics), len(enters)))
        if not metrics:
            continue
        names = [m.name for m in metrics[0].metric.members]
        for k, name in enumerate(names):
            vs = [m.values[k] for m in metrics]
            if not all(b >= a_ for a_, b in zip(vs, vs[1:])):
                check(False, "rank %d: %s decreases between calls" % (rank, name))
        if "counters.task_clock" in names:
            k = names.index("counters.task_clock")
            grown = (metrics[-1].values[k] - metrics[0].values[k]) * 1e-9
            if rank == 0:
                check(grown >= 0.8 * busy, "rank 0: task clock grew %.3f s over a %.1f s busy loop"
                      % (grown, busy))
        check(any(v > 0 for v in metrics[-1].values), "rank %d: counter values arrive: %s"
              % (rank, dict(zip(names, metrics[-1].values))))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--invmw", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--launcher", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--nonmpi", required=True)
    p.add_argument("--otf2-print", default="otf2-print")
    p.add_argument("--work", required=True)
    p.add_argument("--sanitizer-preload", default="",
                   help="sanitizer build: runtimes to put before --lib in LD_PRELOAD")
    p.add_argument("--mode", choices=["mpi", "nonmpi", "counters"], required=True)
    a = p.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    {"mpi": check_mpi, "nonmpi": check_nonmpi, "counters": check_counters}[a.mode](a)
    shutil.rmtree(a.work, ignore_errors=True) if not failures else None
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
