#!/usr/bin/env python3
"""Benchmark: how much slower opal-mini runs under invmw's preload, with and without tracing.

Runs opal-mini on 2 ranks (one client, one server) in three modes, interleaved so that drift of
the machine (other load, frequency) hits every mode alike:
  plain    mpirun opal-mini                      (no preload)
  profile  invmw run -- mpirun opal-mini         (preload, profile only)
  trace    invmw run --trace -- mpirun opal-mini (preload, profile and OTF2 trace)
Two times per run: the application's own t_wall (its step loop, from --timers) and the wall time
of the whole job (launcher start to end, which includes start-up and writing the profile and
trace). Prints the median per mode and the ratios to plain; the figure the spec asks for is the
t_wall ratio trace / plain (target: under 1.02 on communication-heavy workloads).

usage: tracing_overhead.py --invmw BUILD/bin/invmw --opal BUILD/bin/opal-mini [--reps 5]
                           [--launcher mpirun] [-- opal-mini options]
The default workload is the paper's medium molecule with a 10 A cut-off and an update every
10th step (--n 4289 --rc 10 --u 0.1 --s 40), where communication is a visible share.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--opal', required=True)
    ap.add_argument('--launcher', default='mpirun')
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('opal_args', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    opal_args = [x for x in a.opal_args if x != '--'] or ['--n', '4289', '--rc', '10', '--u',
                                                         '0.1', '--s', '40']
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    for k in [k for k in env if k == 'LD_PRELOAD' or k.startswith('INVMW_')]:
        del env[k]
    work = tempfile.mkdtemp(prefix='opal-overhead-')
    results = {'plain': [], 'profile': [], 'trace': []}
    try:
        for rep in range(a.reps):
            for mode in results:
                timers = os.path.join(work, f'{mode}-{rep}.json')
                job = [a.launcher, '-np', '2', a.opal] + opal_args + ['--timers', timers]
                if mode != 'plain':
                    out = os.path.join(work, f'{mode}-{rep}')
                    job = [a.invmw, 'run', '--quiet', '--out', out] + (
                        ['--trace'] if mode == 'trace' else []) + ['--'] + job
                t0 = time.perf_counter()
                r = subprocess.run(job, env=env, capture_output=True, text=True, timeout=600)
                elapsed = time.perf_counter() - t0
                if r.returncode != 0:
                    sys.exit(f'{mode} run failed ({r.returncode}): {" ".join(job)}\n{r.stderr}')
                if mode == 'trace' and not os.path.exists(os.path.join(out, 'traces.otf2')):
                    sys.exit(f'trace run wrote no traces.otf2 in {out}')
                results[mode].append((json.load(open(timers))['t_wall'], elapsed))
                if mode != 'plain':
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f'opal-mini {" ".join(opal_args)}, 2 ranks, {a.reps} interleaved runs per mode')
    print(f'{"mode":8} {"t_wall median s":>16} {"ratio":>7} {"job median s":>13} {"ratio":>7}')
    base_app = statistics.median(t for t, _ in results['plain'])
    base_job = statistics.median(e for _, e in results['plain'])
    for mode, runs in results.items():
        app = statistics.median(t for t, _ in runs)
        job = statistics.median(e for _, e in runs)
        print(f'{mode:8} {app:16.4f} {app / base_app:7.3f} {job:13.3f} {job / base_job:7.3f}')
    app_trace = statistics.median(t for t, _ in results['trace'])
    # Runs of one round are neighbours in time: their ratio cancels slow drift of the machine.
    paired = statistics.median(tr[0] / pl[0] for tr, pl in zip(results['trace'],
                                                                 results['plain']))
    print(f'tracing overhead (t_wall, trace / plain): {app_trace / base_app:.3f} of medians, '
          f'{paired:.3f} median of paired runs')


if __name__ == '__main__':
    main()
