#!/usr/bin/env python3
"""Sampler benchmark (not a test): slowdown of a compute-bound and a communication-bound program
on 2 ranks with tracing plus 10 ms sampling, against the same program without the preload.
Rounds interleave the two configurations so machine noise hits both; medians and the ratio are
printed. Also: profile only, and sampling only, to attribute the cost.

  python3 sampler/bench/slowdown.py --lib build/lib/libinvmw.so --app build/bin/slowdown_app
  (--rounds N, default 9; --scale F multiplies the programs' iteration counts, default 1)
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile

CONFIGS = {
    "none": None,
    "profile": {"INVMW_SAMPLER_ENABLE": "0"},
    "sampling 10ms": {"INVMW_SAMPLER_INTERVAL": "10ms"},
    "trace+sampling 10ms": {"INVMW_TRACE_ENABLE": "1", "INVMW_SAMPLER_INTERVAL": "10ms"},
}


def run_once(a, args, env_vars, out):
    cmd = ["mpirun", "--oversubscribe", "-np", "2"]
    if env_vars is not None:
        shutil.rmtree(out, ignore_errors=True)
        for k, v in dict(env_vars, LD_PRELOAD=a.lib, INVMW_OUTPUT_DIR=out,
                         INVMW_RUNTIME_QUIET="1").items():
            cmd += ["-x", "%s=%s" % (k, v)]
    r = subprocess.run(cmd + [a.app] + args, capture_output=True, text=True, check=True)
    return float(re.search(r"elapsed ([0-9.]+)", r.stdout).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", required=True)
    p.add_argument("--app", required=True)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every program's iteration count (longer runs, less noise)")
    a = p.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    work = tempfile.mkdtemp(prefix="invmw-slowdown-")
    def n(iters):
        return str(max(1, int(iters * a.scale)))
    programs = {
        "compute-bound (allreduce per 2e6 flops-loop)": ["compute", n(150)],
        "communication-bound (64 KiB ping-pong)": ["comm", n(20000), "65536"],
        "communication-bound (8 B ping-pong)": ["comm", n(200000), "8"],
    }
    for name, args in programs.items():
        times = {c: [] for c in CONFIGS}
        for _ in range(a.rounds):
            for c, env in CONFIGS.items():
                times[c].append(run_once(a, args, env, os.path.join(work, "run")))
        base = statistics.median(times["none"])
        print("%s: %d rounds, median elapsed without invmw %.4f s" % (name, a.rounds, base))
        print("  %-22s %9s %9s %9s  %s" % ("configuration", "median s", "ratio", "paired",
                                           "(paired: median over rounds of t / t_none)"))
        for c in CONFIGS:
            m = statistics.median(times[c])
            paired = statistics.median(t / n for t, n in zip(times[c], times["none"]))
            print("  %-22s %9.4f %+8.2f%% %+8.2f%%" % (c, m, 100 * (m / base - 1),
                                                       100 * (paired - 1)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
