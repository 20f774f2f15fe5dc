#!/usr/bin/env python3
"""`invmw model search` (issue 21 item 1) on generated CSV files with known generating functions:
the selected terms in the text and --json output, the written model file read back by `fit` and
`predict`, --out without --force, and bad inputs refused with a clear message and no crash."""
import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120)


def died(p):
    return p.returncode < 0 and -p.returncode in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)


def refused(p, what, *needles):
    check(not died(p), f'{what}: no crash (exit {p.returncode})')
    check(p.returncode == 2, f'{what}: exit 2, got {p.returncode}')
    for n in needles:
        check(n in p.stderr, f'{what}: message names {n!r}: {p.stderr.strip()[:300]}')


def write_csv(path, header, rows):
    with open(path, 'w') as f:
        f.write(','.join(header) + '\n')
        for r in rows:
            f.write(','.join('' if v is None else repr(v) for v in r) + '\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--make-db', required=True)
    a = ap.parse_args()
    inv = a.invmw
    rnd = random.Random(21)
    levels = [2, 4, 8, 16, 32]
    with tempfile.TemporaryDirectory() as tmp:
        # Two factors, 3 replications, +-1% noise: t = 2 + 0.05 p log2(p) + 3 sqrt(n),
        # u = 1 + 0.01 p^2 n.
        rows = []
        for p in levels:
            for n in levels:
                for _ in range(3):
                    t = (2 + 0.05 * p * math.log2(p) + 3 * math.sqrt(n)) * (1 + rnd.uniform(-.01, .01))
                    u = (1 + 0.01 * p * p * n) * (1 + rnd.uniform(-.01, .01))
                    rows.append([p, n, t, u])
        csv = os.path.join(tmp, 'runs.csv')
        write_csv(csv, ['p', 'n', 't', 'u'], rows)
        model = os.path.join(tmp, 'found.toml')
        r = run([inv, 'model', 'search', '--data', csv, '--response', 't', '--response', 'u',
                 '--factors', 'p,n', '--out', model])
        check(r.returncode == 0, f'search exits 0 ({r.returncode}): {r.stderr.strip()[:300]}')
        check('selected: ' in r.stdout and '* p * log2(p) + ' in r.stdout and
              '* n^(1/2)' in r.stdout, 'text names the terms of t')
        check('* p^2 * n\n' in r.stdout, 'text names the product term of u')
        check('runners-up' in r.stdout and 'CI.LOW' in r.stdout, 'text has intervals, runners-up')
        check(os.path.exists(model), 'model file written')
        r = run([inv, 'model', 'search', '--data', csv, '--response', 't', '--factors', 'p,n',
                 '--json'])
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        sel = j.get('responses', [{}])[0].get('selected', {})
        check(sel.get('terms') == ['1', 'p * log2(p)', 'n^(1/2)'],
              f'--json selected terms: {sel.get("terms")}')
        c = sel.get('coefficients', [{}, {}, {}])
        check(c[1].get('ci_low', 1) < 0.05 < c[1].get('ci_high', 0),
              f'--json interval of p*log2(p) holds 0.05: {c[1]}')
        check(len(j.get('responses', [{}])[0].get('runners_up', [])) == 5, 'five runners-up')
        check(0 < sel.get('cv_error', 1) < 0.02, f'cv error below 2%: {sel.get("cv_error")}')
        # The written model is a model file: `fit` refits it, `predict` predicts with it.
        table = os.path.join(tmp, 'table.toml')
        r = run([inv, 'fit', '--model', model, '--data', csv, '--out', table,
                 '--platform-name', 'here'])
        check(r.returncode == 0, f'fit --model found.toml exits 0: {r.stderr.strip()[:300]}')
        check('t_c1' in r.stdout and 'u_c1' in r.stdout, 'fit reports the searched coefficients')
        r = run([inv, 'predict', '--model', model, '--platform', table, '--set', 'n=16',
                 '--sweep', 'p=2,64', '--json'])
        check(r.returncode == 0, f'predict with found.toml exits 0: {r.stderr.strip()[:300]}')
        want = 2 + 0.05 * 64 * 6 + 3 * 4  # the truth at p=64 (extrapolated), n=16
        pts = json.loads(r.stdout)['platforms'][0]['points'] if r.returncode == 0 else []
        got = [q['time'] for q in pts if q.get('p') == 64]
        check(len(got) == 1 and abs(got[0] - want) < 0.02 * want,
              f'predict at p=64: {got} within 2% of the truth {want}')
        # --out does not overwrite without --force.
        r = run([inv, 'model', 'search', '--data', csv, '--response', 't', '--out', model])
        refused(r, 'existing --out', 'exists (use --force')
        r = run([inv, 'model', 'search', '--data', csv, '--response', 't', '--out', model,
                 '--force'])
        check(r.returncode == 0, '--force overwrites')
        # Default factors: the other columns with two or more values (u is a response here).
        one = os.path.join(tmp, 'one.csv')
        write_csv(one, ['p', 's', 't'],
                  [[p, 10, (5 + 20.0 / p) * (1 + rnd.uniform(-.01, .01))]
                   for p in levels for _ in range(5)])
        r = run([inv, 'model', 'search', '--data', one, '--response', 't', '--json'])
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        check(j.get('factors') == ['p'], f'default factors skip a one-level column: {j.get("factors")}')
        terms = j.get('responses', [{}])[0].get('selected', {}).get('terms')
        check(terms == ['1', 'p^(-1)'], f'one factor: p^(-1) found: {terms}')

        # Bad inputs: each a clear message, exit 2, no crash.
        few = os.path.join(tmp, 'few.csv')
        write_csv(few, ['p', 't'], [[p, 1.0 + p] for p in [2, 4, 8]])
        refused(run([inv, 'model', 'search', '--data', few, '--response', 't']), 'three points',
                '3 design point(s)')
        write_csv(one, ['p', 'n', 't'], [[p, 4, 1.0 + p * (1 + rnd.uniform(-.01, .01))]
                                         for p in levels for _ in range(2)])
        refused(run([inv, 'model', 'search', '--data', one, '--response', 't', '--factors',
                     'p,n']), 'one level', "factor 'n' has one level (4)")
        flat = os.path.join(tmp, 'flat.csv')
        write_csv(flat, ['p', 't'], [[p, 2.5] for p in levels for _ in range(2)])
        refused(run([inv, 'model', 'search', '--data', flat, '--response', 't']), 'constant',
                "response 't' is constant")
        zero = os.path.join(tmp, 'zero.csv')
        write_csv(zero, ['p', 't'], [[p, 0.0 if p == 8 else 1.0 + p] for p in levels])
        refused(run([inv, 'model', 'search', '--data', zero, '--response', 't']), 'zero row',
                "zero.csv:4: response 't' is 0")
        nan = os.path.join(tmp, 'nan.csv')
        with open(nan, 'w') as f:
            f.write('p,t\n' + ''.join(f'{p},{1 + p}\n' for p in levels) + '0,nan\n')
        r = run([inv, 'model', 'search', '--data', nan, '--response', 't'])
        check(r.returncode == 0 and "1 row(s) without a value of 't' left out" in r.stderr,
              f'NaN row left out with a warning: {r.returncode} {r.stderr.strip()[:200]}')
        refused(run([inv, 'model', 'search', '--data', csv, '--response', 'x']), 'no column',
                "no column 'x'")
        refused(run([inv, 'model', 'search', '--data', csv, '--response', 't', '--max-terms',
                     '9']), 'max-terms', '--max-terms')
        refused(run([inv, 'model', 'search', '--data', csv]), 'no response', '--response')

        # --design: the runs of a results database (synthetic Opal, 84 points, 2 replications).
        db = os.path.join(tmp, 'results.db')
        subprocess.run([a.make_db, db], check=True)
        r = run([inv, 'model', 'search', '--design', 'opal-84', '--db', db, '--platform', 'local',
                 '--response', 't_comm', '--json'])
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        jr = j.get('responses', [{}])[0]
        check(r.returncode == 0 and jr.get('rows') == 168 and jr.get('points') == 84,
              f'--design: 168 runs at 84 points: {r.returncode} {r.stderr.strip()[:200]}')
        check(any('p' in t for t in jr.get('selected', {}).get('terms', [])),
              f'--design: t_comm grows with p: {jr.get("selected", {}).get("formula")}')
        check(any("factor 'u': no line of the design has 4 or more" in w
                  for w in jr.get('warnings', [])),
              'a two-level factor is reported as not searched')
        refused(run([inv, 'model', 'search', '--design', 'opal-84', '--db', db,
                     '--response', 't_comm']), 'design on two platforms', 'platform')
    if failures:
        print(f'{len(failures)} check(s) failed')
        return 1
    print('all checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
