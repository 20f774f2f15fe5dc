#!/usr/bin/env python3
"""Trace replay of an application no one here wrote: Debian's LAMMPS (`lmp`) on 2 ranks with
experiments/workloads/lammps/in.melt (4 n^3 atoms, n = 8, 100 steps), traced under `invmw run
--trace`, replayed with `invmw predict --replay` on a table and on the same table with a 10x
slower network. Checks: the trace converts (every point-to-point and collective call of LAMMPS
expressed; what is listed, e.g. MPI_Cart_create, takes under 5% of the run), the per-rank
components sum to the predicted time, and the slower network predicts more communication.

Usage: replay_lammps.py --invmw INVMW --preload LIBINVMW --lmp LMP --input in.melt
         --tables DIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(cmd, env):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        fail(f'{cmd}: exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}')
    return p


def main():
    ap = argparse.ArgumentParser()
    for o in ('--invmw', '--preload', '--lmp', '--input', '--tables', '--work'):
        ap.add_argument(o, required=True)
    a = ap.parse_args()
    if os.path.exists(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    rundir = os.path.join(a.work, 'run')
    # LAMMPS writes log.lammps into its working directory unless -log none.
    run([a.invmw, 'run', '--trace', '--lib', a.preload, '--out', rundir, '--', 'mpirun', '-np',
         '2', a.lmp, '-var', 'n', '8', '-var', 'steps', '100', '-log', 'none', '-screen',
         'none', '-in', a.input], env)
    with open(os.path.join(a.tables, 'fast-cops.toml')) as f:
        text = f.read()
    if 'a1 = { value = 30,' not in text:
        fail('fast-cops.toml: a1 is no longer 30 MB/s; update this test')
    slow = os.path.join(a.work, 'fast-cops-slownet.toml')
    with open(slow, 'w') as f:
        f.write(text.replace('a1 = { value = 30,', 'a1 = { value = 3,', 1)
                .replace('name = "fast-cops"', 'name = "fast-cops-slownet"', 1))
    p = run([a.invmw, 'predict', '--replay', rundir, '--reference', 'fast-cops', '--platform',
             'fast-cops', '--platform', slow, '--tables', a.tables, '--json'], env)
    out = json.loads(p.stdout)
    if out['ranks'] != 2:
        fail(f'ranks: {out["ranks"]}')
    comm = []
    for pl in out['platforms']:
        wall = pl['predicted_wall_s']
        if not wall > 0:
            fail(f'{pl["table"]}: predicted {wall}')
        for r in pl['ranks']:
            total = r['computation_s'] + r['communication_s'] + r['wait_s']
            if abs(total - wall) > 1e-8 + 1e-6 * wall:
                fail(f'{pl["table"]} rank {r["rank"]}: components {total}, wall {wall}')
        share = sum(u['share'] for u in pl['unexpressed'])
        if share > 0.05:
            fail(f'{pl["table"]}: unexpressed calls take {100 * share:.1f}%: {pl["unexpressed"]}')
        for u in pl['unexpressed']:
            f = u['function'].split(' ')[0]
            if f in ('MPI_Send', 'MPI_Recv', 'MPI_Irecv', 'MPI_Isend', 'MPI_Wait', 'MPI_Sendrecv',
                     'MPI_Allreduce', 'MPI_Bcast', 'MPI_Waitall', 'MPI_Barrier'):
                fail(f'{pl["table"]}: {u["function"]} not expressed')
        comm.append(sum(r['communication_s'] for r in pl['ranks']))
    if not comm[1] > 1.5 * comm[0]:
        fail(f'communication: 30 MB/s {comm[0]} s, 3 MB/s {comm[1]} s (expected > 1.5x)')
    pl = out['platforms'][0]
    print(f'ok: lammps melt n=8 steps=100 on 2 ranks: measured {pl["measured_wall_s"]:.4f} s, '
          f'replayed on fast-cops {pl["predicted_wall_s"]:.4f} s, on a1/10 '
          f'{out["platforms"][1]["predicted_wall_s"]:.4f} s; listed: '
          f'{[u["function"] for u in pl["unexpressed"]]}')


if __name__ == '__main__':
    main()
