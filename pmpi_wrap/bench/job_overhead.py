#!/usr/bin/env python3
"""Benchmark: the wall time of any MPI job without invmw, under `invmw run` (profile) and under
`invmw run --trace` (profile and OTF2 trace), interleaved over --reps rounds so that drift of the
machine hits every mode alike. Prints per mode the median, min and max job time (launcher start
to end: start-up, the run, writing the profile and trace) and the medians' ratio to plain.

usage: job_overhead.py --invmw BUILD/bin/invmw [--reps 5] [--cwd DIR] -- LAUNCHER ARGS... PROGRAM ...
e.g.   job_overhead.py --invmw build/bin/invmw --cwd /usr/share/lammps/examples/melt \\
           -- mpirun --oversubscribe -np 2 lmp -in in.melt
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--cwd', default=None, help='working directory of the job')
    ap.add_argument('job', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    job = a.job[1:] if a.job and a.job[0] == '--' else a.job
    if not job:
        ap.error('no job given after --')
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    work = tempfile.mkdtemp(prefix='invmw-job-overhead-')
    modes = {'plain': [], 'profile': [], 'trace': []}
    try:
        for rep in range(a.reps):
            for mode in modes:
                out = os.path.join(work, f'{mode}-{rep}')
                cmd = job if mode == 'plain' else (
                    [a.invmw, 'run', '--quiet'] + (['--trace'] if mode == 'trace' else []) +
                    ['--out', out, '--'] + job)
                t0 = time.monotonic()
                r = subprocess.run(cmd, cwd=a.cwd, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                dt = time.monotonic() - t0
                if r.returncode != 0:
                    sys.exit(f'{mode} run {rep} failed ({r.returncode}): {r.stderr[-500:]}')
                modes[mode].append(dt)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(modes['plain'])
    print(f'job: {" ".join(job)}  ({a.reps} rounds, interleaved)')
    print(f'{"mode":8} {"median s":>10} {"min s":>9} {"max s":>9} {"ratio":>7}')
    for mode, ts in modes.items():
        m = statistics.median(ts)
        print(f'{mode:8} {m:10.3f} {min(ts):9.3f} {max(ts):9.3f} {m / base:7.3f}')


if __name__ == '__main__':
    main()
