"""What the large-trace tests and benchmarks share (otf2_reader/tests/check_stream_memory.py,
analysis/tests/check_large_trace.py, analysis/bench/bench_large_trace.py): a synthetic trace made
by make_synthetic_otf2, and a child run whose peak memory and CPU time are measured.

Why one module: each script had its own copy of the fork/exec/wait4 measurement and of the
maker's call and its event count, and a fix to one (e.g. the exit status of a killed child)
would have missed the others.
"""
import collections
import os
import shutil
import subprocess
import sys
import time

Usage = collections.namedtuple("Usage", "status out peak_kib cpu_s wall_s")


def run_measured(argv, capture=False):
    """Runs argv (exec'd directly, no shell) and waits for it. Returns Usage: its exit status
    (negative: the signal that ended it), its stdout as text when capture (else it goes to
    /dev/null and out is None), its peak resident memory (ru_maxrss of the child, KiB), its CPU
    time (user + system, s) and the wall time (s)."""
    t0 = time.monotonic()
    r = w = None
    if capture:
        r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        if capture:
            os.close(r)
            os.dup2(w, 1)
        else:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out = None
    if capture:
        os.close(w)
        with os.fdopen(r, "rb") as f:
            out = f.read().decode()
    _, status, ru = os.wait4(pid, 0)
    return Usage(os.waitstatus_to_exitcode(status), out, ru.ru_maxrss,
                 ru.ru_utime + ru.ru_stime, time.monotonic() - t0)


def make_synthetic(maker, out_dir, events, ranks=8):
    """make_synthetic_otf2 OUT_DIR EVENTS RANKS; returns (events written, the maker's output
    line). Exits with the maker's error when it fails."""
    r = subprocess.run([maker, out_dir, "%g" % float(events), str(ranks)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit("make_synthetic_otf2 failed: " + r.stderr)
    return int(r.stdout.split()[0]), r.stdout.strip()


def synthetic_iterations(events, ranks=8):
    """Iterations of make_synthetic_otf2's trace of `events` events (4 events per rank around
    them, 10 per rank and iteration: a matched send and receive, an Allreduce): one message per
    rank and iteration, one Allreduce per iteration."""
    return (events - 4 * ranks) // (10 * ranks)


def fresh_dir(path):
    """An empty directory at path (a previous run's left-overs removed)."""
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)


def report(failures, work, passed):
    """Prints each failure; when there are none, removes the work directory and prints `passed`.
    Returns the exit status (1 on failures)."""
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        shutil.rmtree(work)
        print(passed)
    return 1 if failures else 0
