#!/usr/bin/env python3
"""Busy-poll artefact of quota-limited ranks: 8-byte ping-pong mean half round trip.

Ranks that poll for messages burn their CPU quota and are then throttled until the next
period, which stretches communication. This runs the ping-pong (emu_pingpong) on 2 ranks at a
given quotas for several CFS periods, with and without Open MPI's mpi_yield_when_idle, and on a
whole core per rank as the reference, and prints one line per variant (root needed).

  busy_poll.py --invmw build/bin/invmw --bin build/platforms/emulate/bin [--quotas 0.25,0.5]
               [--periods 4000,8000,20000,100000] [--seconds 3] [--replications 3]
               [--network shm|tcp]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(args, platform_file, yield_):
    opts = subprocess.run([args.invmw, "platform", "exec", "--print-launcher", platform_file],
                          capture_output=True, text=True, check=True).stdout.split()
    if "mpi_yield_when_idle" in opts:  # the variant sets it itself
        i = opts.index("mpi_yield_when_idle")
        del opts[i - 1:i + 2]
    prog = [os.path.join(args.bin, "emu_pingpong"), "--reps", "1000", "--seconds",
            str(args.seconds), "--bytes", str(args.bytes)]
    # An explicit --mca on the command line wins over the platform's environment.
    cmd = ["mpirun", "-np", "2"] + opts + ["--mca", "mpi_yield_when_idle", str(yield_)]
    cmd += [args.invmw, "platform", "slot", "--"] + prog
    out = subprocess.run([args.invmw, "platform", "exec", platform_file, "--ranks", "2", "--"] +
                         cmd, env=ENV, capture_output=True, text=True)
    m = re.search(r"mean_s ([0-9.e+-]+) max_s ([0-9.e+-]+)", out.stdout)
    if not m:
        sys.exit(f"ping-pong failed: {out.stderr}")
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--quotas", default="0.25")
    ap.add_argument("--periods", default="4000,8000,20000,100000")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--replications", type=int, default=3)
    ap.add_argument("--bytes", type=int, default=8)
    ap.add_argument("--network", default="shm", choices=["shm", "tcp"])
    args = ap.parse_args()
    print(f"{args.bytes}-byte ping-pong, 2 ranks, {args.network}, {args.seconds:g} s x "
          f"{args.replications} per variant: mean half round trip (mean of the replications, "
          "their range), slowest single half round trip")
    # The reference: a whole core per rank with the same scheduling priority as the emulated
    # ranks (a 100% quota with a long period never throttles a single-threaded rank).
    variants = [(1.0, 100000, 0)]
    for q in (float(x) for x in args.quotas.split(",")):
        for p in (int(x) for x in args.periods.split(",")):
            if q * p >= 1000:
                variants += [(q, p, 0), (q, p, 1)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.toml")
        for q, period, y in variants:
            with open(path, "w") as f:
                f.write('name = "bench"\ndescription = "busy-poll benchmark"\nnodes = 2\n'
                        f'network = "{args.network}"\ncaveat = "bench"\n'
                        f"cpu_quota = {q}\nperiod_us = {period}\n")
            means, worst = [], 0.0
            for _ in range(args.replications):
                m, w = run(args, path, y)
                means.append(m)
                worst = max(worst, w)
            label = f"quota {q:.0%} period {period / 1000:g} ms"
            print(f"  {label:26s} yield={y}: mean {sum(means) / len(means) * 1e6:9.2f} us "
                  f"({min(means) * 1e6:.2f}..{max(means) * 1e6:.2f})  max {worst * 1e3:6.2f} ms",
                  flush=True)


if __name__ == "__main__":
    main()
