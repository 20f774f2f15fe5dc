#!/usr/bin/env python3
"""Time MPI_Init with and without the invmw preload (tracing's fixed cost, issue 17).

Runs bench/mpi_init_time (clock_gettime around MPI_Init; the max over ranks) in interleaved
rounds: without the preload, with it (profile), and with it and INVMW_TRACE_ENABLE=1, so that
machine noise hits every configuration alike. Prints, per configuration, the median over the
rounds of MPI_Init as the application sees it, its difference to no preload, and the medians
of profile.json's per-rank `mpi_init_s` (the MPI library's own PMPI_Init) and `invmw_init_s`
(invmw's start-up inside MPI_Init), max over ranks.

usage: init_time.py --lib LIB/libinvmw.so --bench BIN/mpi_init_time
                    [--rounds 5] [--np 2] [--launcher mpirun.openmpi]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def run(args, env_extra, preload):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    env.update(env_extra)
    cmd = [args.launcher, '-np', str(args.np)]
    if args.np > 2:
        cmd.append('--oversubscribe')
    out = None
    if preload:
        out = tempfile.mkdtemp(prefix='invmw-initbench-')
        cmd += ['-x', f'LD_PRELOAD={args.lib}', '-x', f'INVMW_OUTPUT_DIR={out}',
                '-x', 'INVMW_RUNTIME_QUIET=1']
        for k in env_extra:
            cmd += ['-x', k]
    cmd += [args.bench]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        sys.exit(f'benchmark failed: {" ".join(cmd)}\n{res.stderr}')
    values = {}
    for line in res.stdout.splitlines():
        f = line.split()
        if f and f[0] == 'mpi_init_s':
            values['app'] = float(f[1])
    if 'app' not in values:
        sys.exit(f'no mpi_init_s line from {" ".join(cmd)}:\n{res.stdout}')
    if out:
        try:
            with open(os.path.join(out, 'profile.json')) as fh:
                ranks = json.load(fh)['ranks']
            values['mpi_init_s'] = max(r['mpi_init_s'] for r in ranks)
            if all('invmw_init_s' in r for r in ranks):
                values['invmw_init_s'] = max(r['invmw_init_s'] for r in ranks)
        except (OSError, ValueError, KeyError) as e:
            print(f'note: no profile read from {out}: {e}', file=sys.stderr)
        shutil.rmtree(out, ignore_errors=True)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lib', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--launcher', default='mpirun.openmpi')
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--np', type=int, default=2)
    args = ap.parse_args()
    configs = [('none', {}, False), ('profile', {}, True),
               ('trace', {'INVMW_TRACE_ENABLE': '1'}, True)]
    results = {name: [] for name, _, _ in configs}
    for r in range(args.rounds):
        for name, extra, preload in configs:
            results[name].append(run(args, extra, preload))
        print(f'round {r + 1}/{args.rounds} done', file=sys.stderr)

    def med(c, k):
        xs = [x[k] for x in results[c] if k in x]
        return statistics.median(xs) * 1e3 if xs else float('nan')

    print(f'MPI_Init time: {args.rounds} interleaved rounds, {args.np} ranks; medians in ms '
          f'(max over ranks)')
    print(f'{"config":8} {"app MPI_Init":>12} {"+ms vs none":>11} {"mpi_init_s":>10} '
          f'{"invmw_init_s":>12}')
    base = med('none', 'app')
    for c in results:
        print(f'{c:8} {med(c, "app"):12.2f} {med(c, "app") - base:11.2f} '
              f'{med(c, "mpi_init_s"):10.2f} {med(c, "invmw_init_s"):12.2f}')
    print('app MPI_Init: clock_gettime around MPI_Init in the program; mpi_init_s and '
          'invmw_init_s: profile.json ranks[i] (the MPI library\'s PMPI_Init, invmw\'s start-up)')


if __name__ == '__main__':
    main()
