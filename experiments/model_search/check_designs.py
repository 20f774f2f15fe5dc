#!/usr/bin/env python3
"""Test experiments.model_search_designs (issue 21 item 4, label slow): runs the quick variants of
the model-search designs (opal-mini, master-worker, LAMMPS) on emu-8x25-shm with
`invmw experiment run` into a scratch database, then experiments/model_search/heldout.py.
Asserts structure only, never timings (the machine may be shared): every design ran, every
response got a searched model and finite held-out errors, the model-search.json document is
what the report reads; whether the opal-mini servers' computation has the Opal model's leading
term n^2 / p is printed, not asserted. Exit 77 (skipped) when not root or without lmp."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

DESIGNS = ['search-opal-quick', 'search-master-worker-quick', 'lammps-quick']
failures = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--designs', required=True, help='experiments/designs')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('skipped: emu-8x25-shm needs root')
        return 77
    if not shutil.which('lmp'):
        print('skipped: no lmp (Debian package lammps)')
        return 77
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, 'search.db')
        failed = set()
        for d in DESIGNS:
            r = subprocess.run([a.invmw, 'experiment', 'run', os.path.join(a.designs, d + '.toml'),
                                '--db', db, '--no-progress'], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=900)
            if d.startswith('lammps') and r.returncode == 1:
                # A traced LAMMPS rank occasionally aborts (malloc(): corrupted top size, a few
                # runs in a hundred; docs/fitter.md): reported, the search uses the other runs.
                print(f'note {d}: failed runs: {r.stdout[-400:]}')
                failed.add(d)
            else:
                check(r.returncode == 0, f'{d}: every run ok: {r.stdout[-400:]}')
        out = os.path.join(tmp, 'model-search.json')
        cmd = [sys.executable, os.path.join(here, 'heldout.py'), '--invmw', a.invmw, '--db', db,
               '--out', out]
        for d in DESIGNS:
            cmd += ['--design', d]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=600)
        print(r.stdout)
        check(r.returncode == 0, 'heldout.py exits 0')
        doc = json.load(open(out)) if os.path.exists(out) else {'designs': []}
        check([x['design'] for x in doc['designs']] == DESIGNS, 'one entry per design')
        for d in doc['designs']:
            check('error' not in d, f'{d["design"]}: exported and split: {d.get("error")}')
            lost = d['design'] in failed
            check((d.get('train_points', 0) == 16 and d.get('heldout_points', 0) == 4) or
                  (lost and d.get('train_points', 0) >= 12 and d.get('heldout_points', 0) >= 2),
                  f'{d["design"]}: 16 training points, 4 held out')
            for res in d.get('responses', []):
                what = f'{d["design"]} {res["response"]}'
                check('formula' in res, f'{what}: a model was found: {res.get("error")}')
                errs = [h['rel_error'] for h in res.get('heldout', [])]
                check(len(errs) == d.get('heldout_points') and errs and
                      all(math.isfinite(e) for e in errs),
                      f'{what}: finite errors at the held-out points: {errs}')
            # Reported, not asserted: on a shared machine the quick design's computation
            # can drown in the emulation's noise (the full design's result is in the report).
            for c in d.get('checks', []):
                print(f'note {d["design"]}: {c["response"]} has {c["term"]} (up to '
                      f'logarithms): {c["powers_found"]}')
    if failures:
        print(f'{len(failures)} check(s) failed', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
