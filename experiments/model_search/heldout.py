#!/usr/bin/env python3
"""Held-out errors of searched models (issue 21 item 4) for designs run by `invmw experiment run`.

For each design: its ok runs are exported from the results database, the held-out design points
(the levels named in HELDOUT, e.g. the largest rank count) are set aside, `invmw model search`
searches each response on the other points and writes a model file and the measured machine's
table (--out-table; computation responses with --compute), and `invmw predict` with that table
predicts every held-out point. The relative error is |predicted - measured mean| / measured mean.
Writes one JSON document (the report's "Model search" section reads it):
  {"designs": [{"design", "platform", "factors", "train_points", "heldout_points",
    "responses": [{"response", "formula", "terms", "cv_error", "error",
                   "heldout": [{"point": {f: v}, "measured", "predicted", "rel_error"}],
                   "mean_rel_error", "max_rel_error"}], "checks": [...] }]}
Nothing here is timing-dependent pass/fail: `--expect-terms` only records whether the search
found a term (the tests assert on structure, the figures go to the report)."""
import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile

# Per design: factors searched, responses (computation ones transfer with a3), held-out levels,
# and terms the search is expected to find (a check recorded in the output, not an assertion).
SPECS = {
    'search-opal': {
        'factors': ['n', 'p'], 'responses': ['t_wall', 't_par_comp', 't_comm'],
        'compute': ['t_par_comp'], 'heldout': {'p': [7], 'n': [2800]},
        'expect': {'t_par_comp': ['p^(-1) * n^2']}},
    'search-opal-quick': {
        'factors': ['n', 'p'], 'responses': ['t_wall', 't_par_comp'],
        'compute': ['t_par_comp'], 'heldout': {'p': [5]},
        'expect': {'t_par_comp': ['p^(-1) * n^2']}},
    'search-master-worker': {
        'factors': ['tasks', 'p'], 'responses': ['wall_s'], 'compute': [],
        'heldout': {'p': [7], 'tasks': [300]}, 'expect': {}},
    'search-master-worker-quick': {
        'factors': ['tasks', 'p'], 'responses': ['wall_s'], 'compute': [],
        'heldout': {'p': [5]}, 'expect': {}},
    # Simulated clusters (deterministic): calibrated at p <= 8, predicting p = 16, 32, 63.
    'search-opal-sim': {
        'factors': ['n', 'p'], 'responses': ['t_wall', 't_par_comp', 't_comm'],
        'compute': ['t_par_comp'], 'heldout': {'p': [16, 32, 63]},
        'expect': {'t_par_comp': ['p^(-1) * n^2'], 't_wall': ['p^(-1) * n^2', 'n * p']}},
    'search-master-worker-sim': {
        'factors': ['tasks', 'p'], 'responses': ['wall_s'], 'compute': [],
        'heldout': {'p': [16, 32, 63]}, 'expect': {'wall_s': ['p^(-1) * tasks']}},
    'lammps': {
        'factors': ['n', 'p'], 'responses': ['wall_s'], 'compute': [],
        'heldout': {'p': [7], 'n': [12]}, 'expect': {}},
    'lammps-quick': {
        'factors': ['n', 'p'], 'responses': ['wall_s'], 'compute': [],
        'heldout': {'p': [5]}, 'expect': {}},
}


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=600)


def num(s):
    try:
        return float(s)
    except ValueError:
        return math.nan


def factors(term):
    """A term's factors, in any order: 'p^(-1) * n^2' and 'n^2 * p^(-1)' are the same term."""
    return {x.strip() for x in term.split('*') if x.strip()}


def powers(term):
    """The factor powers of a term without its log factors: 'n^2 * log2(n) * p^(-1)' ->
    {'n^2', 'p^(-1)'} (Extra-P's lead order up to logarithms)."""
    return {x.strip() for x in term.split('*') if x.strip() and not x.strip().startswith('log2(')}


def is_heldout(row, heldout):
    return any(num(row[f]) in levels for f, levels in heldout.items())


def analyse(inv, db, design, spec, work, data=None, max_terms=None):
    if data:
        # The runs exported before (`results export --format csv`), e.g. a deterministic
        # simulated design's, instead of the database.
        with open(data, newline='') as f:
            rows = list(csv.DictReader(f))
    else:
        r = run([inv, 'results', 'export', '--db', db, '--design', design, '--format', 'csv'])
        if r.returncode != 0:
            return {'design': design, 'error': r.stderr.strip()}
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
    out = {'design': design, 'factors': spec['factors'], 'runs': len(rows),
           'heldout_levels': spec['heldout'], 'responses': [], 'checks': []}
    if not rows:
        out['error'] = 'no ok runs of ' + design + ' in ' + db
        return out
    out['platform'] = rows[0].get('platform', '')
    train = [x for x in rows if not is_heldout(x, spec['heldout'])]
    test = [x for x in rows if is_heldout(x, spec['heldout'])]
    key = lambda x: tuple(num(x[f]) for f in spec['factors'])
    out['train_points'] = len({key(x) for x in train})
    out['heldout_points'] = len({key(x) for x in test})
    train_csv = os.path.join(work, design + '-train.csv')
    with open(train_csv, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(train)
    for resp in spec['responses']:
        res = {'response': resp, 'heldout': []}
        out['responses'].append(res)
        model = os.path.join(work, f'{design}-{resp}.toml')
        table = os.path.join(work, f'{design}-{resp}-measured.toml')
        cmd = [inv, 'model', 'search', '--data', train_csv, '--response', resp, '--factors',
               ','.join(spec['factors']), '--out', model, '--out-table', table, '--force',
               '--json']
        if resp in spec['compute']:
            cmd += ['--compute', resp]
        if max_terms:
            cmd += ['--max-terms', str(max_terms)]
        r = run(cmd)
        if r.returncode != 0:
            res['error'] = r.stderr.strip()
            continue
        sel = json.loads(r.stdout)['responses'][0]['selected']
        res.update({'formula': sel['formula'], 'terms': sel['terms'],
                    'cv_error': sel['cv_error'], 'train_error': sel['train_error'],
                    'coefficients': {c['term']: c['value'] for c in sel['coefficients']}})
        for want in spec['expect'].get(resp, []):
            out['checks'].append({'response': resp, 'term': want,
                                  'found': any(factors(t) == factors(want)
                                               for t in sel['terms']),
                                  'powers_found': any(powers(t) == powers(want)
                                                      for t in sel['terms'])})
        points = {}
        for x in test:
            if x.get(resp, '') == '':
                continue
            points.setdefault(key(x), []).append(num(x[resp]))
        for pt, ys in sorted(points.items()):
            settings = dict(zip(spec['factors'], pt))
            sweep_f = spec['factors'][-1]
            cmd = [inv, 'predict', '--model', model, '--platform', table, '--json',
                   '--sweep', f'{sweep_f}={settings[sweep_f]:g}']
            for f, v in settings.items():
                if f != sweep_f:
                    cmd += ['--set', f'{f}={v:g}']
            r = run(cmd)
            if r.returncode != 0:
                res.setdefault('predict_errors', []).append(r.stderr.strip())
                continue
            pred = json.loads(r.stdout)['platforms'][0]['points'][0]['time']
            meas = sum(ys) / len(ys)
            res['heldout'].append({'point': settings, 'measured': meas, 'predicted': pred,
                                   'replications': len(ys),
                                   'rel_error': abs(pred - meas) / meas})
        errs = [h['rel_error'] for h in res['heldout']]
        if errs:
            res['mean_rel_error'] = sum(errs) / len(errs)
            res['max_rel_error'] = max(errs)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--db', help='results database (or --data)')
    ap.add_argument('--max-terms', type=int, help='passed to model search')
    ap.add_argument('--data', help='CSV of one design\'s runs instead of --db')
    ap.add_argument('--design', action='append', required=True, choices=sorted(SPECS))
    ap.add_argument('--out', required=True, help='JSON file to write (temporary name + rename)')
    a = ap.parse_args()
    if bool(a.db) == bool(a.data) or (a.data and len(a.design) != 1):
        ap.error('give --db, or --data with one --design')
    doc = {'designs': []}
    with tempfile.TemporaryDirectory() as work:
        for d in a.design:
            doc['designs'].append(analyse(a.invmw, a.db, d, SPECS[d], work, a.data, a.max_terms))
    tmp = a.out + '.tmp%d' % os.getpid()
    with open(tmp, 'w') as f:
        json.dump(doc, f, indent=2)
        f.write('\n')
    os.replace(tmp, a.out)
    for d in doc['designs']:
        print(d['design'], d.get('error', ''))
        for r in d.get('responses', []):
            print('  %-12s %-50s held-out mean %s max %s %s' % (
                r['response'], r.get('formula', ''),
                '%.1f%%' % (100 * r['mean_rel_error']) if 'mean_rel_error' in r else '-',
                '%.1f%%' % (100 * r['max_rel_error']) if 'max_rel_error' in r else '-',
                r.get('error', '')[:200]))
        for c in d.get('checks', []):
            print('  check %s has %s: %s (up to logarithms: %s)' % (
                c['response'], c['term'], c['found'], c['powers_found']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
