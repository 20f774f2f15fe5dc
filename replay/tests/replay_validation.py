#!/usr/bin/env python3
"""Trace replay against measurements on the emulated platforms (issue 19 item 3).

Self-consistency (--mode self): the validation design points of opal-mini
(experiments/designs/validation-quick.toml) and of master-worker (a design this script writes
into --work) run on the reference platform under the experiment runner (every run is traced);
the reference is probed (`invmw platform probe`); each run's trace replayed on that probed
table must predict the run's own wall time (MPI_Init .. MPI_Finalize, as the replay measures
it): median |error| over the runs < 10%.

Across platforms (--mode cross): the same points also run on the target platforms (emulated
TCP, 1 Gbit/s, 100 Mbit/s, 10 Mbit/s), each probed; the reference's traces replayed on each
target's table (bursts scaled with the reference's table) predict the median wall time of the
target's runs of the same point: median |error| over points and targets < 30%.

Every error goes to --out (JSON) and is printed as a table. Needs root (the emulated
platforms use cgroups and network namespaces).

Usage: replay_validation.py --invmw INVMW --designs DIR --work DIR [--mode self|cross|all]
         [--targets emu-4x50-tcp,...] [--validation DESIGN] [--grain G] [--out FILE]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys

PROBE = ['--sizes', '0,1024,65536,262144,1048576', '--pingpong-reps', '20',
         '--pingpong-max-time', '0.3', '--barrier-reps', '100', '--n', '3000',
         '--kernel-reps', '2', '--replications', '2']

# Master-worker on the emulated platforms: tasks large enough that communication shows on the
# slow networks, a time grain so that computation dominates on the fast ones.
MASTER_WORKER = '''name = "replay-master-worker"
description = "master-worker points for the replay tests (replay/tests/replay_validation.py)"
type = "full"
replications = 2
seed = 2031
platform = "emu-4x50-shm"
timeout = "120s"
responses = ["wall_s"]  # the analysis's wall (master-worker has no Opal breakdown)

[[factor]]
name = "w"
description = "workers (ranks = w + 1)"
levels = [1, 3]

[command]
ranks = "w + 1"
launcher = ["mpirun", "--oversubscribe", "-np", "{ranks}"]
program = "master-worker"
args = ["--tasks", "60", "--grain", "2000", "--bytes-in", "65536", "--bytes-out", "16384"]
'''


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def run(cmd, timeout=900, ok=(0,)):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode not in ok:
        fail(f'{" ".join(cmd)}: exit {p.returncode}\nstdout: {p.stdout[-3000:]}\n'
             f'stderr: {p.stderr[-3000:]}')
    return p


def probe(a, platform):
    table = os.path.join(a.work, 'tables', platform + '.toml')
    if not os.path.exists(table):
        run([a.invmw, 'platform', 'probe', '--quiet', '--force', '--name', 'probed-' + platform,
             '--platform', platform] + PROBE + ['--out', table])
    return table


def runs_of(db, design, platform):
    """{point: [trace_dir, ...]} of the ok runs."""
    con = sqlite3.connect(db)
    out = {}
    for point, trace_dir in con.execute(
            "SELECT point, trace_dir FROM runs WHERE design = ? AND platform = ? AND "
            "status = 'ok' ORDER BY point, replication", (design, platform)):
        out.setdefault(point, []).append(trace_dir)
    con.close()
    return out


def replay(a, run_dir, reference, tables):
    cmd = [a.invmw, 'predict', '--replay', run_dir, '--reference', reference, '--json']
    for t in tables:
        cmd += ['--platform', t]
    return json.loads(run(cmd).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--designs', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--mode', choices=('self', 'cross', 'all'), default='self')
    ap.add_argument('--reference', default='emu-4x50-shm')
    ap.add_argument('--targets',
                    default='emu-4x50-tcp,emu-4x50-1gbit,emu-4x50-100mbit,emu-4x50-10mbit')
    ap.add_argument('--validation', default='validation-quick',
                    help='validation design of experiments/designs (opal-mini)')
    ap.add_argument('--grain', default='2000', help="master-worker's --grain")
    ap.add_argument('--out')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('SKIP: the emulated platforms need root')
        sys.exit(77)
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    if os.path.exists(a.work):
        shutil.rmtree(a.work)
    os.makedirs(os.path.join(a.work, 'tables'))
    db = os.path.join(a.work, 'results.db')
    mw = os.path.join(a.work, 'replay-master-worker.toml')
    with open(mw, 'w') as f:
        f.write(MASTER_WORKER.replace('"--grain", "2000"', f'"--grain", "{a.grain}"'))
    designs = [(os.path.join(a.designs, a.validation + '.toml'), a.validation),
               (mw, 'replay-master-worker')]
    platforms = [a.reference]
    targets = [t for t in a.targets.split(',') if t] if a.mode in ('cross', 'all') else []
    platforms += targets
    for p in platforms:
        for path, _ in designs:
            run([a.invmw, 'experiment', 'run', path, '--platform', p, '--db', db, '--runs-dir',
                 os.path.join(a.work, 'runs'), '--no-progress'], ok=(0, 1))
            # 1: a run failed (recorded as failed); the comparisons use the ok runs, and a
            # point without any is an error below.
    tables = {p: probe(a, p) for p in platforms}

    report = {'reference': a.reference, 'self': [], 'cross': []}
    errors_self, errors_cross = [], []
    for _, design in designs:
        ref_runs = runs_of(db, design, a.reference)
        if not ref_runs:
            fail(f'{design}: no ok runs on {a.reference}')
        target_runs = {t: runs_of(db, design, t) for t in targets}
        for t, by_point in target_runs.items():
            if set(by_point) != set(ref_runs):
                fail(f'{design}: points with ok runs differ on {t}: {sorted(by_point)} vs '
                     f'{sorted(ref_runs)} on {a.reference}')
        for point, dirs in sorted(ref_runs.items()):
            for d in dirs:
                out = replay(a, d, tables[a.reference],
                             [tables[a.reference]] + [tables[t] for t in targets])
                own = out['platforms'][0]
                err = own['predicted_wall_s'] / own['measured_wall_s'] - 1
                errors_self.append(abs(err))
                report['self'].append({'design': design, 'point': point, 'run': d,
                                       'measured_wall_s': own['measured_wall_s'],
                                       'predicted_wall_s': own['predicted_wall_s'],
                                       'error': err, 'unexpressed': own['unexpressed']})
                for t, pl in zip(targets, out['platforms'][1:]):
                    measured = []
                    for td in target_runs[t].get(point, []):
                        m = replay(a, td, tables[t], [tables[t]])['platforms'][0]
                        measured.append(m['measured_wall_s'])
                    if not measured:
                        continue
                    meas = statistics.median(measured)
                    err = pl['predicted_wall_s'] / meas - 1
                    errors_cross.append(abs(err))
                    report['cross'].append({'design': design, 'point': point, 'run': d,
                                            'target': t, 'measured_wall_s': meas,
                                            'predicted_wall_s': pl['predicted_wall_s'],
                                            'error': err})
    print(f'{"design":22} {"pt":>3} {"platform":18} {"measured_s":>11} {"replay_s":>11} '
          f'{"error":>8}')
    for r in report['self']:
        print(f'{r["design"]:22} {r["point"]:3d} {a.reference + " (self)":18} '
              f'{r["measured_wall_s"]:11.4f} {r["predicted_wall_s"]:11.4f} '
              f'{100 * r["error"]:7.1f}%')
    for r in report['cross']:
        print(f'{r["design"]:22} {r["point"]:3d} {r["target"]:18} {r["measured_wall_s"]:11.4f} '
              f'{r["predicted_wall_s"]:11.4f} {100 * r["error"]:7.1f}%')
    med_self = statistics.median(errors_self)
    report['median_abs_error_self'] = med_self
    print(f'self-consistency: median |error| {100 * med_self:.1f}% over {len(errors_self)} runs')
    if errors_cross:
        med_cross = statistics.median(errors_cross)
        report['median_abs_error_cross'] = med_cross
        print(f'across platforms: median |error| {100 * med_cross:.1f}% over '
              f'{len(errors_cross)} predictions')
    if a.out:
        with open(a.out + '.tmp', 'w') as f:
            json.dump(report, f, indent=1)
        os.replace(a.out + '.tmp', a.out)
    if not med_self < 0.10:
        fail(f'self-consistency: median |error| {100 * med_self:.1f}% (bound 10%)')
    if targets and not (errors_cross and report['median_abs_error_cross'] < 0.30):
        fail(f'across platforms: median |error| '
             f'{100 * report.get("median_abs_error_cross", float("nan")):.1f}% (bound 30%)')
    print('ok')


if __name__ == '__main__':
    main()
