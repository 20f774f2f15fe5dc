#!/usr/bin/python3
"""Coalesced polls keep the application's computation (c_poll.c). Runs the program under
`invmw run --trace`, analyses the trace, and checks per rank that:
  - the trace coalesced rank 0's unsuccessful MPI_Test calls (a visit with
    invmw:coalesced_calls > 1 exists), so the check below is about coalescing;
  - `invmw analyze`'s computation equals the rank's analysis window minus the profile's time
    in MPI inside it (all MPI time but MPI_Init's and MPI_Finalize's), within 1 %;
  - analysis.json's call count equals the profile's calls (without MPI_Init/MPI_Finalize),
    coalesced calls included.

usage: check_poll.py --invmw INVMW --launcher MPIRUN --workdir DIR -- PROGRAM
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import otf2


def fail(msg):
    print(f'FAIL: {msg}')
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('prog', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.prog[1:] if a.prog and a.prog[0] == '--' else a.prog
    if os.path.isdir(a.workdir):
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir)
    out = os.path.join(a.workdir, 'run')
    res = subprocess.run([a.invmw, 'run', '--quiet', '--trace', '--out', out, '--',
                          a.launcher, '--oversubscribe', '-np', '2'] + prog,
                         capture_output=True, text=True, timeout=120)
    print(res.stdout, res.stderr)
    if res.returncode != 0 or 'value 42' not in res.stdout:
        fail(f'the program did not run as it should (exit {res.returncode})')
    an = subprocess.run([a.invmw, 'analyze', '--quiet', out], capture_output=True, text=True,
                        timeout=120)
    if an.returncode != 0:
        fail(f'invmw analyze failed: {an.stderr}')
    analysis = json.load(open(os.path.join(out, 'analysis.json')))
    profile = json.load(open(os.path.join(out, 'profile.json')))

    largest = 0
    with otf2.reader.open(os.path.join(out, 'traces.otf2')) as trace:
        for loc, ev in trace.events:
            if type(ev).__name__ == 'Enter':
                for attr, value in (ev.attributes or {}).items():
                    if attr.name == 'invmw:coalesced_calls':
                        largest = max(largest, int(value))
    if largest < 2:
        fail('no coalesced visit of unsuccessful tests in the trace: nothing was tested')
    print(f'largest coalesced visit: {largest} calls')

    for ra in analysis['ranks']:
        rank = ra['rank']
        rp = next(r for r in profile['ranks'] if r['rank'] == rank)
        fin = rp['functions'].get('MPI_Finalize', {}).get('time_s', 0.0)
        window = ra['end_s'] - ra['start_s']
        # MPI_Init's time in the profile includes invmw's start-up (invmw_init_s) since issue 17.
        init = sum(rp['functions'].get(n, {}).get('time_s', 0.0)
                   for n in ('MPI_Init', 'MPI_Init_thread'))
        in_mpi = rp['mpi_s'] - init - fin
        expected = window - in_mpi
        comp = ra['total']['computation']
        print(f'rank {rank}: window {window:.6f} s, profile MPI in it {in_mpi:.6f} s, '
              f'computation {comp:.6f} s (expected {expected:.6f} s)')
        if abs(comp - expected) > 0.01 * window:
            fail(f'rank {rank}: computation {comp:.6f} s is not the window minus the profile\'s '
                 f'MPI time ({expected:.6f} s) within 1 %')
        calls = sum(f['calls'] for name, f in rp['functions'].items()
                    if name not in ('MPI_Init', 'MPI_Init_thread', 'MPI_Finalize'))
        if ra['calls'] != calls:
            fail(f'rank {rank}: analysis.json counts {ra["calls"]} calls, the profile {calls}')
    print('OK: computation and call counts agree with the profile')


if __name__ == '__main__':
    main()
