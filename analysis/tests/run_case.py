#!/usr/bin/env python3
"""Runs one synthetic MPI program of known structure under `invmw run --trace`, analyses the
trace with `invmw analyze`, and checks analysis.json against what the program is known to do.

Cases (the programs are in analysis/tests/mpi/, each with its known values in its header):
  late_sender      2 ranks: rank 0 idle 0.4 s, computation 0.1 / 0.5 s, late rank 1
  barrier_unequal  2 ranks: rank 0 sync_wait 0.4 s, computation 0.2 / 0.6 s, late rank 1
  chain3           3 ranks: critical path 0.45 s (= sum of the parts, 5%), 0.1/0.15/0.2 per rank
  compute_only     2 ranks: computation-bound, 0.3 s computation per rank
  pingpong         2 ranks: communication-bound
  barrier_heavy    4 ranks: synchronization-bound, the others wait for rank 0
  opal             opal-mini on 2 ranks: each response of `invmw analyze --opal` within 10% of
                   opal-mini's own --timers (components below 2% of t_wall: within 0.02 t_wall)

Timing tolerance (as the issue states it): within 20% or 5 ms of the known value.
The run directory is removed when the check passes and kept (its path printed) when it fails.
Every run is started in its own session and its process group is killed on timeout.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys


class CheckFailed(Exception):
    pass


def near(what, got, want, rel=0.20, abs_s=0.005):
    if abs(got - want) > max(rel * abs(want), abs_s):
        raise CheckFailed(f'{what}: {got:.6f} s, expected {want:.6f} s '
                          f'(tolerance {rel:.0%} or {abs_s * 1e3:.0f} ms)')
    print(f'[run_case] ok {what}: {got:.6f} s (expected {want:.6f} s)')


def equal(what, got, want):
    if got != want:
        raise CheckFailed(f'{what}: {got!r}, expected {want!r}')
    print(f'[run_case] ok {what}: {got!r}')


def rank(j, r):
    for x in j['ranks']:
        if x['rank'] == r:
            return x
    raise CheckFailed(f'rank {r} missing from analysis.json')


def check_late_sender(j, _):
    near('rank 0 idle', rank(j, 0)['total']['idle'], 0.4)
    near('rank 0 computation', rank(j, 0)['total']['computation'], 0.1)
    near('rank 1 computation', rank(j, 1)['total']['computation'], 0.5)
    near('rank 1 idle', rank(j, 1)['total']['idle'], 0.0)
    equal('rank others waited for', j['waited_for'][:1], [1])
    equal('rank with the most computation', j['load_imbalance']['max_rank'], 1)


def check_barrier_unequal(j, _):
    near('rank 0 sync_wait', rank(j, 0)['total']['sync_wait'], 0.4)
    near('rank 1 sync_wait', rank(j, 1)['total']['sync_wait'], 0.0)
    near('rank 0 computation', rank(j, 0)['total']['computation'], 0.2)
    near('rank 1 computation', rank(j, 1)['total']['computation'], 0.6)
    equal('rank others waited for', j['waited_for'][:1], [1])
    equal('rank with the most computation', j['load_imbalance']['max_rank'], 1)
    equal('heavy ranks', j['load_imbalance']['heavy_ranks'], [1])


def check_chain3(j, _):
    cp = j['critical_path']
    parts = 0.1 + 0.15 + 0.2
    near('critical path length', cp['length_s'], parts, rel=0.05, abs_s=0)
    near('computation on the critical path', cp['composition']['computation'], parts, rel=0.05,
         abs_s=0)
    for r, w in ((0, 0.1), (1, 0.15), (2, 0.2)):
        near(f'rank {r} computation on the path', cp['by_rank'][str(r)]['computation'], w)
    equal('path ends on', cp['end_rank'], 2)
    equal('path starts on', cp['start_rank'], 0)


def check_compute_only(j, _):
    equal('classification', j['classification']['class'], 'computation-bound')
    for r in (0, 1):
        near(f'rank {r} computation', rank(j, r)['total']['computation'], 0.3)
        near(f'rank {r} idle + sync', rank(j, r)['total']['idle'] +
             rank(j, r)['total']['sync_wait'], 0.0)


def check_pingpong(j, _):
    equal('classification', j['classification']['class'], 'communication-bound')


def check_barrier_heavy(j, _):
    equal('classification', j['classification']['class'], 'synchronization-bound')
    equal('rank others waited for', j['waited_for'][:1], [0])


def check_opal(j, timers_path):
    with open(timers_path) as f:
        own = json.load(f)
    got = j['opal']
    wall = own['t_wall']
    print(f'[run_case] opal-mini timers: {json.dumps(own)}')
    print(f'[run_case] from the trace:   {json.dumps(got)}')
    for key in ('t_wall', 't_par_comp', 't_seq_comp', 't_comm', 't_sync', 't_idle'):
        if key not in own:
            raise CheckFailed(f'{timers_path}: no "{key}"')
        # Components that are a sliver of the run are compared against the run's scale.
        near(key, got[key], own[key], rel=0.10, abs_s=0.02 * wall)


CHECKS = {
    'late_sender': check_late_sender,
    'barrier_unequal': check_barrier_unequal,
    'chain3': check_chain3,
    'compute_only': check_compute_only,
    'pingpong': check_pingpong,
    'barrier_heavy': check_barrier_heavy,
    'opal': check_opal,
}


def run(cmd, env, timeout):
    print('[run_case] $ ' + ' '.join(cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise CheckFailed(f'timed out after {timeout} s: {" ".join(cmd)}')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--case', required=True, choices=sorted(CHECKS))
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--launcher', default='mpirun')
    ap.add_argument('--np', type=int, default=2)
    ap.add_argument('--workdir', required=True, help='run directory (replaced)')
    ap.add_argument('--timeout', type=int, default=50)
    ap.add_argument('prog', nargs=argparse.REMAINDER, help='-- program and arguments')
    a = ap.parse_args()
    prog = a.prog[1:] if a.prog[:1] == ['--'] else a.prog
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    shutil.rmtree(a.workdir, ignore_errors=True)
    timers = os.path.join(a.workdir, 'opal-timers.json')
    if a.case == 'opal':
        prog = prog + ['--timers', timers]
    # Waiting ranks yield the CPU, so a rank that computes is not slowed by busy-polling ones.
    launcher = [a.launcher, '--oversubscribe', '-np', str(a.np), '--mca', 'mpi_yield_when_idle',
                '1']
    try:
        rc = run([a.invmw, 'run', '--quiet', '--trace', '--out', a.workdir, '--'] + launcher + prog,
                 env, a.timeout)
        if rc != 0:
            raise CheckFailed(f'invmw run exited with {rc}')
        args = [a.invmw, 'analyze', a.workdir] + (['--opal'] if a.case == 'opal' else [])
        rc = run(args, env, a.timeout)
        if rc != 0:
            raise CheckFailed(f'invmw analyze exited with {rc}')
        with open(os.path.join(a.workdir, 'analysis.json')) as f:
            j = json.load(f)
        CHECKS[a.case](j, timers)
    except CheckFailed as e:
        print(f'[run_case] FAILED: {e}\n[run_case] run directory kept: {a.workdir}', flush=True)
        return 1
    shutil.rmtree(a.workdir, ignore_errors=True)
    print('[run_case] passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
