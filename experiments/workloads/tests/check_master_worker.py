#!/usr/bin/env python3
"""Test of master-worker: the per-task records (001, Table 1) are complete and consistent with
the options, in JSON and CSV, and (under `invmw run`) with the messages the profile saw."""
import argparse
import concurrent.futures
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
           OMPI_MCA_rmaps_base_oversubscribe='1')
for key in [k for k in ENV if k == 'LD_PRELOAD' or k.startswith('INVMW_')]:
    del ENV[key]
FIELDS = ['task', 'worker', 'units', 'bytes_in', 'bytes_out', 'tms1', 'tms', 'tmr_wait', 'tmr',
          'twr_wait', 'twr', 'tc', 'tws1', 'tws']
failures = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, timeout=30):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        sys.exit(f'timeout after {timeout} s: {" ".join(cmd)}')
    return p.returncode, out, err


def check_records(recs, tasks, workers, bytes_in, bytes_out, label, min_tc=0.0, units=None):
    check(len(recs) == tasks, f'{label}: {len(recs)} records for {tasks} tasks')
    check(sorted(int(r['task']) for r in recs) == list(range(tasks)), f'{label}: task ids 0..T-1')
    check(all(list(r.keys()) == FIELDS for r in recs), f'{label}: fields {FIELDS}')
    check(all(int(r['bytes_in']) == bytes_in and int(r['bytes_out']) == bytes_out for r in recs),
          f'{label}: bytes_in {bytes_in}, bytes_out {bytes_out} on every record')
    check(all(1 <= int(r['worker']) <= workers for r in recs), f'{label}: workers 1..{workers}')
    check(len({int(r['worker']) for r in recs}) == min(workers, tasks),
          f'{label}: every worker got a task')
    times = [float(r[k]) for r in recs for k in FIELDS[5:]]
    check(all(t >= 0 for t in times), f'{label}: times >= 0')
    check(all(float(r['tc']) >= min_tc for r in recs), f'{label}: tc >= {min_tc} s')
    if units is not None:
        check(all(float(r['units']) == units for r in recs), f'{label}: {units} units per task')
    # The master sends tasks in id order; a worker's result follows the task it got.
    starts = [float(r['tms1']) for r in sorted(recs, key=lambda r: int(r['task']))]
    check(starts == sorted(starts), f'{label}: tms1 increases with the task id')
    # A worker's tasks follow one another on its own clock (clocks of different processes
    # start at the same barrier, but its exit can be skewed under load: not compared).
    for w in {int(r['worker']) for r in recs}:
        mine = sorted((r for r in recs if int(r['worker']) == w), key=lambda r: int(r['task']))
        ends = [float(r['tws1']) for r in mine]
        check(ends == sorted(ends) and all(
            float(b['tws1']) - float(a['tws1']) >= float(b['tc']) for a, b in zip(mine, mine[1:])),
              f'{label}: worker {w} sends its results in task order, tc apart at least')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--mw', required=True)
    ap.add_argument('--invmw', required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix='mw-test-')
    try:
        out = os.path.join(work, 'tasks.json')
        rc, so, se = run([a.launcher, '-np', '3', a.mw, '--tasks', '40', '--grain', '200',
                          '--bytes-in', '3000', '--bytes-out', '500', '--tasks-out', out])
        check(rc == 0, f'units run exit {rc}: {se.strip()[-300:]}')
        doc = json.load(open(out))
        check((doc['workers'], doc['tasks'], doc['bytes_in'], doc['bytes_out']) ==
              (2, 40, 3000, 500) and doc['t_wall'] > 0, f'JSON header: {doc}')
        check_records(doc['records'], 40, 2, 3000, 500, 'JSON, 200 units', units=200)
        check('N_opt' in so and 'tasks 40 workers 2' in so, f'summary line: {so.strip()}')

        out = os.path.join(work, 'tasks.csv')
        rc, so, se = run([a.launcher, '-np', '4', a.mw, '--tasks', '12', '--grain', '3ms',
                          '--bytes-in', '0', '--bytes-out', '70000', '--tasks-out', out])
        check(rc == 0, f'time-grain run exit {rc}: {se.strip()[-300:]}')
        recs = list(csv.DictReader(open(out)))
        check_records(recs, 12, 3, 0, 70000, 'CSV, 3 ms grain', min_tc=0.003)

        # The profile sees exactly the task traffic the records describe.
        prof_dir = os.path.join(work, 'profile')
        rc, so, se = run([a.invmw, 'run', '--quiet', '--out', prof_dir, '--', a.launcher, '-np',
                          '3', a.mw, '--tasks', '25', '--grain', '50', '--bytes-in', '1000',
                          '--bytes-out', '200', '--tasks-out', os.path.join(work, 'p.json')])
        check(rc == 0, f'profiled run exit {rc}: {se.strip()[-300:]}')
        if rc == 0:
            prof = json.load(open(os.path.join(prof_dir, 'profile.json')))
            master = prof['ranks'][0]['functions']
            check((master['MPI_Send']['calls'], master['MPI_Send']['bytes_sent']) ==
                  (25 + 2, 25 * 1000),
                  f'master sent 25 tasks of 1000 B and 2 empty stops: {master["MPI_Send"]}')
            recs = json.load(open(os.path.join(work, 'p.json')))['records']
            for w in (1, 2):
                fns = prof['ranks'][w]['functions']
                mine = [r for r in recs if r['worker'] == w]
                check(fns['MPI_Send']['calls'] == len(mine) + 1 and
                      fns['MPI_Send']['bytes_sent'] == 200 * len(mine) + 48 * len(mine),
                      f'worker {w}: {len(mine)} results of 200 B and its records '
                      f'(6 doubles per task): {fns["MPI_Send"]}')

        cases = [(['--grain', '5xs'], '--grain'), (['--tasks', '0'], '--tasks'),
                 (['--bytes-in', '-1'], '--bytes-in')]
        jobs = [[a.launcher, '-np', '1', a.mw] + bad for bad, _ in cases]
        jobs.append([a.launcher, '-np', '1', a.mw, '--help'])
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            results = list(pool.map(run, jobs))
        for (bad, name), (rc, so, se) in zip(cases, results):
            check(rc != 0 and name in se, f'{" ".join(bad)} rejected naming {name}')
        rc, so, se = results[-1]
        check(rc == 0 and '--tasks-out' in so and 'tc' in so,
              f'--help explains (exit {rc}, {len(so)} bytes of stdout, stderr: {se.strip()[:300]!r})')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit(f'{len(failures)} check(s) failed')
    print('all checks passed')


if __name__ == '__main__':
    main()
