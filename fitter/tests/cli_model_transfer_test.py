#!/usr/bin/env python3
"""`invmw model search --out-table` and transfer (issue 21 items 1 and 2): runs generated from
fast-cops' a1, b1, a3 (computation a3 * 2e3 * n^2 / p + 0.05 s, 4 p messages of 24 n bytes
each per process), searched with the profile columns; the written model predicts with the
existing `invmw predict` on the measured table and, with it as reference, on slow-cops; both are
compared with the generating formula. Bad option combinations are refused."""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile

failures = []

FAST = {'a1': 30.0, 'b1': 1.5e-05, 'a3': 9.80392e-07}  # platforms/tables/fast-cops.toml
SLOW = {'a1': 3.0, 'b1': 0.01, 'a3': 2e-06}  # platforms/tables/slow-cops.toml


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120)


def refused(p, what, needle):
    check(not (p.returncode < 0 and -p.returncode in (signal.SIGSEGV, signal.SIGABRT)),
          f'{what}: no crash')
    check(p.returncode == 2, f'{what}: exit 2, got {p.returncode}')
    check(needle in p.stderr, f'{what}: message names {needle!r}: {p.stderr.strip()[:300]}')


def messages(p, n):
    return 4.0 * p


def nbytes(p, n):
    return 24.0 * n * p


def comp(m, p, n):
    return 0.05 + m['a3'] * 2e3 * n * n / p


def comm(m, p, n):
    return m['b1'] * messages(p, n) + nbytes(p, n) / (m['a1'] * 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--tables', required=True)
    a = ap.parse_args()
    inv = a.invmw
    rnd = random.Random(2021)
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, 'runs.csv')
        with open(csv, 'w') as f:
            f.write('p,n,t_wall,t_comp,t_comm,bytes,messages\n')
            for p in [2, 4, 8, 16, 32]:
                for n in [1000, 2000, 4000, 8000, 16000]:
                    for _ in range(3):
                        tc = comp(FAST, p, n) * (1 + rnd.uniform(-.01, .01))
                        tm = comm(FAST, p, n) * (1 + rnd.uniform(-.01, .01))
                        f.write(f'{p},{n},{tc + tm!r},{tc!r},{tm!r},{nbytes(p, n)!r},'
                                f'{messages(p, n)!r}\n')
        model = os.path.join(tmp, 'm.toml')
        table = os.path.join(tmp, 'measured.toml')
        base = [inv, 'model', 'search', '--data', csv, '--response', 't_wall,t_comp,t_comm',
                '--factors', 'p,n']
        r = run(base + ['--comm', 't_comm', '--bytes', 'bytes', '--messages', 'messages',
                        '--out', model, '--out-table', table, '--machine-table', 'fast-cops',
                        '--tables', a.tables, '--json'])
        check(r.returncode == 0, f'search with --out-table exits 0: {r.stderr.strip()[:400]}')
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        tr = j.get('transfer', {})
        check(tr.get('compute') == ['t_comp'], f't_comp is computation by default: {tr}')
        c = tr.get('comm', {})
        check(abs(c.get('a1', 0) - 30) < 1.5 and abs(c.get('b1', 0) - 1.5e-5) < 1.5e-6,
              f'fitted a1 and b1 near fast-cops 30 MB/s, 15 us: {c}')
        check(j.get('table_file') == table and os.path.exists(table), 'table written')
        with open(table) if os.path.exists(table) else open(os.devnull) as f:
            text = f.read()
        check('t_comp_c1' in text and 'a3' in text and 'kernel_time' in text,
              'table holds the compute coefficient, a3 and fast-cops measures')
        # The measured machine, with the existing command of the brief.
        n, p = 32000, 64
        r = run([inv, 'predict', '--model', model, '--platform', table, '--set', f'n={n}',
                 '--sweep', f'p={p}', '--json'])
        check(r.returncode == 0, f'predict on the measured table exits 0: {r.stderr[:300]}')
        if r.returncode == 0:
            got = json.loads(r.stdout)['platforms'][0]['points'][0]['time']
            want = comp(FAST, p, n) + comm(FAST, p, n)
            check(abs(got - want) < 0.03 * want, f'measured machine n={n} p={p}: {got} vs {want}')
        # Another machine: slow-cops, transferred from the measured table.
        r = run([inv, 'predict', '--model', model, '--platform', 'slow-cops', '--reference',
                 table, '--tables', a.tables, '--set', f'n={n}', '--sweep', 'p=8,64', '--json'])
        check(r.returncode == 0, f'predict on slow-cops exits 0: {r.stderr[:300]}')
        if r.returncode == 0:
            pl = json.loads(r.stdout)['platforms'][0]
            for pt in pl['points']:
                q = pt['p']
                want = comp(SLOW, q, n) + comm(SLOW, q, n)
                check(abs(pt['time'] - want) < 0.03 * want,
                      f'slow-cops n={n} p={q}: {pt["time"]} vs {want}')
                check(abs(pt['t_comm'] - comm(SLOW, q, n)) < 0.03 * comm(SLOW, q, n),
                      f'slow-cops communication at p={q}')
            origins = {x['name']: x['origin'] for x in pl['parameters']}
            check('a3 ratio' in origins.get('t_comp_c1', ''),
                  f'compute coefficient scaled by the a3 ratio: {origins.get("t_comp_c1")}')
        # Bad combinations: a clear message, nothing written.
        other = os.path.join(tmp, 'other.toml')
        refused(run(base + ['--out-table', other]), '--out-table without --out', 'needs --out')
        refused(run(base + ['--comm', 't_comm', '--out', os.path.join(tmp, 'x.toml')]),
                '--comm without --bytes', 'go together')
        refused(run(base + ['--compute', 't_cpu', '--out', os.path.join(tmp, 'y.toml')]),
                '--compute of no response', "'t_cpu' is not one of the --response names")
        refused(run(base + ['--out', os.path.join(tmp, 'z.toml'), '--out-table', table]),
                'existing --out-table', 'exists (use --force')
        check(not os.path.exists(other) and not os.path.exists(os.path.join(tmp, 'y.toml')),
              'refused runs write nothing')
    if failures:
        print(f'{len(failures)} check(s) failed', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
