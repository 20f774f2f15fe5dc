#!/usr/bin/env python3
"""The cost of submitting a design's runs to Slurm: N jobs with one `sbatch` each (what
`invmw experiment run` does on a Slurm platform) against one job array of N tasks, and one
`squeue` poll of N jobs. Prints wall time and the CPU time of the client processes (getrusage
of the children; wall time on a loaded machine says little). The jobs only run `true`; they
are cancelled at the end. Not a test: docs/slurm.md quotes its figures.

usage: slurm_cluster.py -- measure_submission.py [N]
"""
import os
import resource
import subprocess
import sys
import tempfile
import time


def ctld_cpu():
    """slurmctld's CPU seconds (slurm_cluster.py writes its pid file next to SLURM_CONF)."""
    pid_file = os.path.join(os.path.dirname(os.environ.get("SLURM_CONF", "")), "run",
                            "slurmctld.pid")
    try:
        with open(pid_file) as f:
            pid = f.read().strip()
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def timed(argv_list):
    c0 = ctld_cpu()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    outs = []
    for argv in argv_list:
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{argv[0]} failed: {r.stderr}")
        outs.append(r.stdout)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    timed.ctld = ctld_cpu() - c0
    return wall, cpu, outs


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\ntrue\n")
        os.chmod(script, 0o700)
        # Held, so that the measurement is of submission alone, not of jobs starting.
        common = ["sbatch", "--parsable", "--hold", f"--chdir={d}", f"--output={d}/%j.log",
                  "--ntasks=2", "--time=1"]
        wall, cpu, outs = timed([common + [f"--job-name=m{i}", script] for i in range(n)])
        ids = [o.strip().split(";")[0] for o in outs]
        print(f"{n} x sbatch (one job each): {wall / n * 1000:.1f} ms wall, "
              f"{cpu / n * 1000:.1f} ms CPU per job; slurmctld {timed.ctld / n * 1000:.1f} ms "
              "CPU per job")
        wall_a, cpu_a, outs_a = timed([common + [f"--array=0-{n - 1}", "--job-name=arr", script]])
        print(f"1 x sbatch --array=0-{n - 1}: {wall_a * 1000:.1f} ms wall, "
              f"{cpu_a * 1000:.1f} ms CPU in all; slurmctld {timed.ctld * 1000:.1f} ms CPU")
        wall_q, cpu_q, _ = timed([["squeue", "-h", "-t", "all", "-j", ",".join(ids),
                                   "-o", "%i %T %M"]])
        print(f"1 x squeue of {n} jobs: {wall_q * 1000:.1f} ms wall, {cpu_q * 1000:.1f} ms CPU")
        subprocess.run(["scancel"] + ids + [outs_a[0].strip().split(";")[0]],
                       capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
