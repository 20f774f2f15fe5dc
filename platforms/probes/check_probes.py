#!/usr/bin/env python3
"""Test of the probes: each prints well-formed JSON lines (contract F) with plausible values,
one per measurement, and rejects bad options with a message naming the option."""
import argparse
import concurrent.futures
import json
import os
import signal
import subprocess
import sys

failures = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, timeout=30):
    env = {k: v for k, v in os.environ.items() if k != 'LD_PRELOAD' and not k.startswith('INVMW_')}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        sys.exit(f'timeout after {timeout} s: {" ".join(cmd)}')
    return p.returncode, out, err


def lines(out, what):
    """Every stdout line must be a JSON object."""
    recs = []
    for l in out.splitlines():
        try:
            recs.append(json.loads(l))
        except json.JSONDecodeError:
            check(False, f'{what}: not a JSON line: {l!r}')
    return recs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--pingpong', required=True)
    ap.add_argument('--barrier', required=True)
    ap.add_argument('--kernels', required=True)
    a = ap.parse_args()

    sizes = [0, 8, 1024, 262144]
    rc, out, err = run([a.launcher, '-np', '2', a.pingpong, '--sizes', ','.join(map(str, sizes)),
                        '--reps', '50', '--replications', '2'])
    check(rc == 0, f'probe-pingpong exit {rc}: {err.strip()}')
    recs = lines(out, 'probe-pingpong')
    check([(r.get('replication'), r.get('bytes')) for r in recs] ==
          [(k, b) for k in range(2) for b in sizes],
          f'probe-pingpong: one line per size and replication: {recs}')
    check(all(set(r) == {'probe', 'bytes', 'reps', 'replication', 'mean_s'} and
              r['probe'] == 'pingpong' and r['reps'] == 50 for r in recs),
          'probe-pingpong: the contract keys')
    check(all(0 < r['mean_s'] < 0.05 for r in recs), 'probe-pingpong: 0 < mean_s < 50 ms')
    for k in range(2):
        by = {r['bytes']: r['mean_s'] for r in recs if r['replication'] == k}
        check(by.get(262144, 0) > by.get(0, 1), f'probe-pingpong: 256 KiB takes longer than 0 B '
                                                f'({by})')

    rc, out, err = run([a.launcher, '-np', '3', a.barrier, '--reps', '200',
                        '--replications', '3'])
    check(rc == 0, f'probe-barrier exit {rc}: {err.strip()}')
    recs = lines(out, 'probe-barrier')
    check([r.get('replication') for r in recs] == [0, 1, 2] and
          all(r.get('probe') == 'barrier' and r.get('ranks') == 3 and r.get('reps') == 200 and
              0 < r.get('mean_s', 0) < 0.05 for r in recs),
          f'probe-barrier: three lines, 3 ranks, 0 < mean_s < 50 ms: {recs}')

    # The stall-aware mode (issue 20): a plain record plus the synchronizations after random
    # compute phases, measured from the last rank's entry, so never negative on one host.
    rc, out, err = run([a.launcher, '-np', '3', a.barrier, '--reps', '50', '--replications', '2',
                        '--compute-us', '300', '--rounds', '20', '--seed', '7'])
    check(rc == 0, f'probe-barrier --compute-us exit {rc}: {err.strip()}')
    recs = lines(out, 'probe-barrier --compute-us')
    check([r.get('replication') for r in recs] == [0, 1] and
          all(set(r) == {'probe', 'ranks', 'reps', 'replication', 'mean_s', 'compute_us', 'rounds',
                         'stall_mean_s', 'stall_max_s'} and r['compute_us'] == 300 and
              r['rounds'] == 20 and r['mean_s'] > 0 and
              0 <= r['stall_mean_s'] <= r['stall_max_s'] for r in recs),
          f'probe-barrier --compute-us: the keys, 0 <= stall_mean_s <= stall_max_s: {recs}')

    n = 600
    rc, out, err = run([a.kernels, '--n', str(n), '--rc', '8', '--reps', '3',
                        '--replications', '2'])
    check(rc == 0, f'probe-kernels exit {rc}: {err.strip()}')
    recs = lines(out, 'probe-kernels')
    check([(r.get('replication'), r.get('kernel')) for r in recs] ==
          [(k, x) for k in range(2) for x in ('pair_check', 'pair_energy', 'bonded')],
          f'probe-kernels: three kernels per replication: {recs}')
    for r in recs:
        check(r.get('probe') == 'kernel' and 1e-11 < r.get('per_unit_s', 0) < 1e-4,
              f'probe-kernels: {r.get("kernel")} per_unit_s {r.get("per_unit_s")} plausible')
    units = {r['kernel']: r['units'] for r in recs}
    n_tilde = 4 / 3 * 3.141592653589793 * 8 ** 3 * 0.0334
    check(units.get('pair_check') == n * (n - 1) // 2 and units.get('bonded') == n and
          0 < units.get('pair_energy', 0) < n * n_tilde / 2 * 1.1,
          f'probe-kernels: units = n(n-1)/2 pairs checked, n centers, about n n~/2 pairs: '
          f'{units}')

    bad = [([a.launcher, '-np', '1', a.pingpong, '--sizes', '1,x'], '--sizes'),
           ([a.launcher, '-np', '1', a.barrier, '--reps', '0'], '--reps'),
           ([a.launcher, '-np', '1', a.barrier, '--compute-us', '-5'], '--compute-us'),
           ([a.launcher, '-np', '1', a.barrier, '--compute-us', '2ms'], '--compute-us'),
           ([a.launcher, '-np', '1', a.barrier, '--compute-us', '10', '--rounds', '0'],
            '--rounds'),
           ([a.launcher, '-np', '1', a.barrier, '--seed'], '--seed'),
           ([a.kernels, '--rc', 'far'], '--rc'),
           ([a.launcher, '-np', '1', a.pingpong], '2 ranks')]
    # Independent short jobs: side by side.
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(run, [cmd for cmd, _ in bad] + [[a.kernels, '--help']]))
    for (cmd, name), (rc, out, err) in zip(bad, results):
        first = (err.strip().splitlines() or [''])[0]
        check(rc != 0 and name in err, f'{" ".join(cmd[-2:])} rejected naming {name}: {first}')
    rc, out, err = results[-1]
    check(rc == 0 and 'per_unit_s' in out, 'probe-kernels --help')
    if failures:
        sys.exit(f'{len(failures)} check(s) failed')
    print('all checks passed')


if __name__ == '__main__':
    main()
