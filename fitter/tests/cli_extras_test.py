#!/usr/bin/env python3
"""Command-line tests of `invmw fit --design` (results database), `invmw plot ...` and
`invmw platform probe`. The database is synthetic Opal data with known truth (fit_make_results_db):
fitted values must match the truth, plot data files must hold the right numbers, images must be
valid SVG/PNG, and a probe of this machine must write a table `invmw platform show` reads."""
import argparse
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

failures = []
TRUTH = {'a1': 1000, 'b1': 20e-6, 'a2': 5e-9, 'a3': 5e-8, 'a4': 1e-6, 'b5': 2e-5}  # "local"


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, expect=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != expect:
        sys.exit(f'{" ".join(cmd)}: exit {p.returncode}, expected {expect}\n{p.stderr}')
    return p


def images_ok(base):
    for ext in ('dat', 'gp', 'svg', 'png'):
        check(os.path.getsize(f'{base}.{ext}') > 0, f'{base}.{ext} written and not empty')
    root = ET.parse(f'{base}.svg').getroot()
    check(root.tag.endswith('svg'), f'{base}.svg is SVG XML')
    with open(f'{base}.png', 'rb') as f:
        check(f.read(8) == b'\x89PNG\r\n\x1a\n', f'{base}.png has the PNG signature')
    gp = open(f'{base}.gp').read()
    check(f"'{os.path.basename(base)}.dat'" in gp, f'{base}.gp reads its data file by name')


def rows(path):
    out = []
    for line in open(path):
        if not line.startswith('#') and line.strip():
            out.append(shlex.split(line))
    return out


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def test_fit_and_plots(a, tmp):
    db = os.path.join(tmp, 'results.db')
    run([a.make_db, db])
    table = os.path.join(tmp, 'local-fit.toml')
    fit = run([a.invmw, 'fit', '--model', 'opal', '--design', 'opal-84', '--db', db,
               '--platform', 'local', '--json', '--out', table]).stdout
    j = json.loads(fit)
    check(j['converged'], 'fit from the database converged')
    check(j['observations'] == 84 * 2 * 5, f'168 ok runs x 5 responses fitted ({j["observations"]})')
    for p in j['parameters']:
        err = abs(p['value'] - TRUTH[p['name']]) / TRUTH[p['name']]
        check(err < 0.05, f'{p["name"]} = {p["value"]:.4g} within 5% of the truth {TRUTH[p["name"]]:g}')
    # The synthetic rows carry t_idle = 1% of t_wall: measured, not modelled, and reported.
    um = {u['column']: u for u in j['unmodelled']}
    check('t_idle' in um and um['t_idle']['rows'] == 168 and
          close(um['t_idle']['share_of_total'], 0.01),
          f'idle time reported as 1% of t_wall, not fitted: {j["unmodelled"]}')
    show = run([a.invmw, 'platform', 'show', table]).stdout
    check('fit of opal to' in show and 'design opal-84 platform local' in show,
          'written table names the design and platform it came from')
    e = run([a.invmw, 'fit', '--model', 'opal', '--design', 'opal-84', '--db', db], expect=2).stderr
    check('several platforms (emu-a, local)' in e, 'mixed platforms refused: ' + e.strip()[:80])
    e = run([a.invmw, 'fit', '--model', 'opal', '--design', 'nope', '--db', db], expect=2).stderr
    check("no successful run of design 'nope'" in e, 'unknown design named')
    fit_json = os.path.join(tmp, 'fit.json')
    open(fit_json, 'w').write(fit)

    # Breakdown: bar means equal the database's means over the replications.
    base = os.path.join(tmp, 'plots', 'breakdown')
    run([a.invmw, 'plot', 'breakdown', '--design', 'opal-84', '--db', db, '--platform', 'local',
         '--where', 'n=2000', '--where', 'u=1', '--where', 'nt=100', '--out', base])
    images_ok(base)
    con = sqlite3.connect(db)
    want = {}
    for f, r in con.execute("SELECT factors, responses FROM runs WHERE design='opal-84' AND "
                            "platform='local' AND status='ok'"):
        f, r = json.loads(f), json.loads(r)
        if f['n'] == 2000 and f['u'] == 1 and f['nt'] == 100:
            want.setdefault(f['p'], []).append(r)
    con.close()
    header = open(base + '.dat').readline().split()[1:]
    got = rows(base + '.dat')
    check(len(got) == 7 and [float(r[0]) for r in got] == list(range(1, 8)), 'one bar per p = 1..7')
    ok = True
    for r in got:
        runs = want[float(r[0])]
        for k, name in enumerate(header[1:-1], start=1):
            mean = sum(x[name] for x in runs) / len(runs)
            ok = ok and close(float(r[k]), mean)
    check(ok, 'breakdown.dat holds the mean of every component and t_wall per p')

    # Measured vs predicted: one row per design point, numbers from the fit.
    base = os.path.join(tmp, 'plots', 'mvp')
    run([a.invmw, 'plot', 'measured-vs-predicted', '--fit', fit_json, '--out', base])
    images_ok(base)
    got = rows(base + '.dat')
    check(len(got) == 84, f'84 design points in mvp.dat ({len(got)})')
    by_point = {}
    for res in j['residuals']:
        if res['response'] == 't_opal':
            by_point.setdefault(res['point'], []).append(res)
    ok = True
    for i, r in enumerate(got):
        rs = by_point[i]
        ok = ok and close(float(r[2]), sum(x['measured'] for x in rs) / len(rs))
        ok = ok and close(float(r[3]), min(x['measured'] for x in rs))
        ok = ok and close(float(r[5]), rs[0]['predicted'])
    check(ok, 'mvp.dat: measured mean/min and predicted per point match the fit JSON')
    check(got[0][1] == 'n=500 nt=100 u=1 p=1', f'points labelled by varying factors ({got[0][1]})')

    # Prediction: time and speedup per platform, as predict --json says.
    pred = run([a.invmw, 'predict', '--model', 'opal', '--platform', 'cray-j90', '--platform',
                'fast-cops', '--set', 'n=4289', '--set', 'nt=140', '--set', 's=10', '--set', 'u=1',
                '--sweep', 'p=1..7', '--json']).stdout
    pred_json = os.path.join(tmp, 'pred.json')
    open(pred_json, 'w').write(pred)
    pj = json.loads(pred)
    base = os.path.join(tmp, 'plots', 'predict')
    run([a.invmw, 'plot', 'predict', '--prediction', pred_json, '--out', base])
    images_ok(base)
    got = rows(base + '.dat')
    ok = len(got) == 7
    for i, r in enumerate(got):
        for k, plat in enumerate(pj['platforms']):
            ok = ok and close(float(r[1 + 2 * k]), plat['points'][i]['time'], 1e-8)
            ok = ok and close(float(r[2 + 2 * k]), plat['points'][i]['speedup'], 1e-8)
    check(ok, 'predict.dat: time and speedup of both platforms per p')
    e = run([a.invmw, 'plot', 'breakdown', '--design', 'opal-84', '--db', db, '--platform',
             'local', '--out', base], expect=2).stderr
    check("differ in factor 'n'" in e, 'breakdown refuses to mix design points')


def test_probe(a, tmp):
    out = os.path.join(tmp, 'node.toml')
    run([a.invmw, 'platform', 'probe', '--name', 'ctest-node', '--out', out, '--replications', '2',
         '--n', '600', '--pingpong-reps', '20', '--barrier-reps', '100', '--sizes',
         '0,8,4096,65536,1048576', '--quiet'])
    show = run([a.invmw, 'platform', 'show', out]).stdout
    print(show)
    vals = {}
    for line in show.splitlines():
        w = line.split()
        if len(w) > 2 and w[0] in ('a1', 'b1', 'a2', 'a3', 'a4', 'b5') and w[0] not in vals:
            vals[w[0]] = float(w[1])
    check(sorted(vals) == ['a1', 'a2', 'a3', 'a4', 'b1', 'b5'], 'all six parameters in the table')
    check(all(v > 0 for v in vals.values()), 'all positive')
    check(1 < vals.get('a1', 0) < 1e6, 'a1 plausible (1 MB/s .. 1 TB/s)')
    check(vals.get('b1', 1) < 1e-2 and vals.get('b5', 1) < 1e-2, 'b1, b5 below 10 ms')
    check(all(vals.get(k, 1) < 1e-3 for k in ('a2', 'a3', 'a4')), 'a2..a4 below 1 ms per unit')
    if a.launcher:
        # Without --launcher the probes ran with the build's launcher, which the sources name.
        check(f'{a.launcher} -np 2' in show, f'the ping-pong ran with the build\'s {a.launcher}')
    e = run([a.invmw, 'platform', 'probe', '--name', 'ctest-node', '--out', out], expect=2).stderr
    check('exists (use --force' in e, 'an existing table is not overwritten')

    # Rounds probed separately pool into one table (--from-raw), and the pooled --raw pools again
    # to the same table; files of other settings or without records are refused.
    quick = ['--replications', '1', '--pingpong-reps', '10', '--barrier-reps', '50', '--sizes',
             '0,4096,65536', '--quiet', '--force']
    raws = []
    for r, n in (('r1', '600'), ('r2', '600'), ('other', '500')):
        raws.append(os.path.join(tmp, r + '.jsonl'))
        run([a.invmw, 'platform', 'probe', '--name', r, '--out', os.path.join(tmp, r + '.toml'),
             '--raw', raws[-1], '--n', n] + quick)
    # The kernels alone can take more replications (the transfer rule's kernel time is the
    # fastest of them, issue 20): r1 ran one of everything, this one 3 kernel replications.
    more = os.path.join(tmp, 'more.jsonl')
    run([a.invmw, 'platform', 'probe', '--name', 'more', '--out', os.path.join(tmp, 'more.toml'),
         '--raw', more, '--n', '600', '--kernel-replications', '3'] + quick)
    recs = [json.loads(l) for l in open(more) if l.startswith('{')]
    count = lambda probe: len([r for r in recs if r.get('probe') == probe])
    check(count('kernel') == 9 and count('barrier') == 1,
          '--kernel-replications 3: 3 records of each kernel, one barrier: %d, %d' %
          (count('kernel'), count('barrier')))
    fastest = min(r['per_unit_s'] for r in recs if r.get('kernel') == 'pair_energy')
    table = open(os.path.join(tmp, 'more.toml')).read()
    kern = re.search(r'\[kernels\].*?^a3 = \{ value = ([0-9.e+-]+)', table, re.S | re.M)
    check(kern and abs(float(kern.group(1)) / fastest - 1) < 1e-6,
          '[kernels] a3 is the fastest of the replications (%s, fastest %g)' %
          (kern and kern.group(1), fastest))
    # --only kernels: extra kernel rounds between full ones (the pipeline spreads them over its
    # schedule); no table, only --raw, which pools with a full round: the parameters are the
    # mean over all kernel records, [kernels] the fastest of them.
    konly = os.path.join(tmp, 'konly.jsonl')
    o = run([a.invmw, 'platform', 'probe', '--only', 'kernels', '--raw', konly, '--n', '600',
             '--kernel-replications', '2', '--quiet'])
    krecs = [json.loads(l) for l in open(konly) if l.startswith('{')]
    check(len(krecs) == 6 and all(r.get('probe') == 'kernel' for r in krecs) and
          'konly.jsonl' in o.stdout,
          '--only kernels --kernel-replications 2: 6 kernel records and nothing else: %d' %
          len(krecs))
    mixed = os.path.join(tmp, 'mixed.toml')
    run([a.invmw, 'platform', 'probe', '--name', 'mixed', '--out', mixed, '--from-raw', raws[0],
         '--from-raw', konly])
    energies = [r['per_unit_s'] for r in krecs + [json.loads(l) for l in open(raws[0])
                                                   if l.startswith('{')]
                if r.get('kernel') == 'pair_energy']
    text = open(mixed).read()
    kern = re.search(r'\[kernels\].*?^a3 = \{ value = ([0-9.e+-]+)', text, re.S | re.M)
    param = re.search(r'^a3 = \{ value = ([0-9.e+-]+)', text, re.M)
    check(len(energies) == 3 and kern and param and
          abs(float(kern.group(1)) / min(energies) - 1) < 1e-6 and
          abs(float(param.group(1)) / (sum(energies) / 3) - 1) < 1e-6,
          'a full round and a kernels-only file pool: a3 the mean of 3, [kernels] a3 the '
          'fastest (%s, %s; records %s)' % (param and param.group(1), kern and kern.group(1),
                                            energies))
    for args, want in ((['--only', 'kernels'], '--raw FILE'),
                       (['--only', 'kernels,disk', '--raw', konly + '2'], "unknown probe 'disk'"),
                       (['--only', 'kernels', '--raw', konly], 'exists (use --force'),
                       (['--only', 'kernels', '--raw', konly + '2', '--out', mixed], 'drop --out'),
                       (['--only', 'kernels', '--raw', konly + '2', '--from-raw', konly],
                        'measurement option')):
        e = run([a.invmw, 'platform', 'probe'] + args, expect=2).stderr
        check(want in e, '%s is refused: %s' % (' '.join(args), e))
    check(not os.path.exists(konly + '2'), 'a refused --only run writes nothing')
    e = run([a.invmw, 'platform', 'probe', '--name', 'x', '--out', os.path.join(tmp, 'x.toml'),
             '--kernel-replications', '0'], expect=2).stderr
    check('--kernel-replications' in e and 'positive integer' in e,
          '--kernel-replications 0 is refused: ' + e)
    pooled, again = os.path.join(tmp, 'pooled.toml'), os.path.join(tmp, 'again.toml')
    run([a.invmw, 'platform', 'probe', '--name', 'pooled', '--out', pooled, '--from-raw', raws[0],
         '--from-raw', raws[1], '--raw', os.path.join(tmp, 'pooled.jsonl')])
    text = open(pooled).read()
    check('x 2 replications' in text and 'pooled from r1.jsonl, r2.jsonl' in text,
          'the pooled table has both rounds as replications')
    run([a.invmw, 'platform', 'probe', '--name', 'pooled', '--out', again, '--from-raw',
         os.path.join(tmp, 'pooled.jsonl')])
    values = lambda f: re.findall(r'value = ([0-9.e+-]+)', open(f).read())
    # qc20: an emulated platform's table carries its quota, the quota's period (its definition)
    # and the CPUs its ranks are placed on, for opal_quota's stall law.
    quarter = os.path.join(tmp, 'quarter.toml')
    run([a.invmw, 'platform', 'probe', '--name', 'quarter', '--out', quarter, '--platform',
         'emu-8x25-shm', '--from-raw', raws[0]])
    got = dict(re.findall(r'^(cpu_quota|quota_period|cores) = \{ value = ([0-9.e+-]+)',
                          open(quarter).read(), re.M))
    check(got.get('cpu_quota') == '0.25' and got.get('quota_period') == '0.01' and
          float(got.get('cores', 0)) >= 1,
          'the quarter core\'s table has cpu_quota 0.25, quota_period 0.01 s and cores: %s' % got)
    check(values(pooled) == values(again) and 'x 2 replications' in open(again).read(),
          'the pooled --raw file pools again to the same values and replications')
    e = run([a.invmw, 'platform', 'probe', '--name', 'x', '--out', os.path.join(tmp, 'x.toml'),
             '--from-raw', raws[0], '--from-raw', raws[2]], expect=2).stderr
    check('other.jsonl' in e and 'another --n or --rc' in e, 'files of another --n are refused: ' + e)
    # Issue 20: a stall-aware barrier pools only with the same --barrier-compute-us.
    for name, change in (('loop', lambda r: {k: v for k, v in r.items()
                                             if k not in ('compute_us', 'rounds', 'stall_mean_s',
                                                          'stall_max_s')}),
                         ('us', lambda r: dict(r, compute_us=r['compute_us'] + 1))):
        f = os.path.join(tmp, name + '.jsonl')
        with open(f, 'w') as out:
            for l in open(raws[1]):
                r = json.loads(l) if l.startswith('{') else None
                if r and r.get('probe') == 'barrier':
                    r = change(r)
                out.write(json.dumps(r) + '\n' if r else l)
        e = run([a.invmw, 'platform', 'probe', '--name', 'x', '--out', os.path.join(tmp, 'x.toml'),
                 '--from-raw', raws[0], '--from-raw', f], expect=2).stderr
        check(f'{name}.jsonl' in e and 'another --barrier-compute-us' in e,
              f'a barrier of another --barrier-compute-us ({name}) is refused: ' + e)
    empty = os.path.join(tmp, 'empty.jsonl')
    open(empty, 'w').write('launcher chatter only\n')
    e = run([a.invmw, 'platform', 'probe', '--name', 'x', '--out', os.path.join(tmp, 'x.toml'),
             '--from-raw', empty], expect=2).stderr
    check('empty.jsonl: no probe records' in e, 'a file without records is named: ' + e)


def test_derive(a, tmp):
    """A design that records the cut-off rc instead of the model's nt is fitted with --derive and
    gives exactly the fit of the same data with nt recorded."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                       'opal_small.csv')
    lines = [l for l in open(src) if not l.startswith('#')]
    header = lines[0].strip().split(',')
    k = header.index('nt')
    out = [','.join('rc' if c == 'nt' else c for c in header)]
    for l in lines[1:]:
        cells = l.strip().split(',')
        cells[k] = {'100': '10', '1000000': '0'}[cells[k]]
        out.append(','.join(cells))
    with_rc = os.path.join(tmp, 'opal_rc.csv')
    open(with_rc, 'w').write('\n'.join(out) + '\n')
    ref = json.loads(run([a.invmw, 'fit', '--model', 'opal', '--data', src, '--no-cv',
                          '--json']).stdout)
    got = json.loads(run([a.invmw, 'fit', '--model', 'opal', '--data', with_rc, '--no-cv',
                          '--json', '--derive', 'nt=if(rc > 0, 10*rc, 1000000)']).stdout)
    check([p['value'] for p in got['parameters']] == [p['value'] for p in ref['parameters']],
          'fit with nt derived from rc equals the fit with nt recorded')
    e = run([a.invmw, 'fit', '--model', 'opal', '--data', with_rc], expect=2).stderr
    check("'nt'" in e, 'without --derive the missing factor nt is named: ' + e.strip()[:100])
    e = run([a.invmw, 'fit', '--model', 'opal', '--data', with_rc, '--derive', 'nt=rcc'],
            expect=2).stderr
    check("--derive nt" in e and "rcc" in e, 'a bad --derive names the item and the token: ' +
          e.strip()[:120])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--make-db')
    ap.add_argument('--probe', action='store_true', help='run the probe test instead')
    ap.add_argument('--launcher', help='the build\'s MPI launcher, the default of the probe')
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix='invmw-fitx-') as tmp:
        if a.probe:
            test_probe(a, tmp)
        else:
            test_fit_and_plots(a, tmp)
            test_derive(a, tmp)
    if failures:
        sys.exit(f'{len(failures)} check(s) failed')


if __name__ == '__main__':
    main()
