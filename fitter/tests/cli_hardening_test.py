#!/usr/bin/env python3
"""Command-line regression tests of issue 16 ("Hardening") for the fitter's verbs: non-finite
residuals, initial values and bounds are refused with the data row or model field named and
without Ceres' log on the terminal (item 6); deeply nested expressions are refused, not a stack
overflow (item 7); --fix respects bounds, `fit --out` does not overwrite without --force and
writes through a temporary file (item 13)."""
import argparse
import os
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
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    return p


def died(p):
    return p.returncode < 0 and -p.returncode in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)


def refused(p, what, *needles):
    """Exit 2 (the CLI's error code), no crash, a short message containing every needle and
    nothing from Ceres' or glog's logging."""
    check(not died(p), f'{what}: no crash (exit {p.returncode})')
    check(p.returncode == 2, f'{what}: exit 2, got {p.returncode}')
    for n in needles:
        check(n in p.stderr, f'{what}: message names {n!r}: {p.stderr.strip()[:300]}')
    check(len(p.stderr.splitlines()) <= 3, f'{what}: at most 3 lines on stderr, got '
          f'{len(p.stderr.splitlines())}')
    for noise in ('residual_block', 'WARNING: Logging before', 'Error in evaluating'):
        check(noise not in p.stderr, f'{what}: no Ceres log ({noise!r}) on stderr')


def opal_csv(src, tmp, line_to_zero):
    """opal_small.csv with p = 0 on the given (1-based) file line."""
    lines = open(src).read().splitlines(keepends=True)
    header = [l for l in lines if not l.startswith('#')][0].strip().split(',')
    cells = lines[line_to_zero - 1].strip().split(',')
    cells[header.index('p')] = '0'
    lines[line_to_zero - 1] = ','.join(cells) + '\n'
    path = os.path.join(tmp, 'opal_p0.csv')
    open(path, 'w').write(''.join(lines))
    return path


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--testdata', required=True)
    a = ap.parse_args()
    inv = a.invmw
    small = os.path.join(a.testdata, 'opal_small.csv')
    with tempfile.TemporaryDirectory() as tmp:
        # Item 6: a row with p = 0 divides by zero in Opal's t_update.
        data = opal_csv(small, tmp, 9)
        p = run([inv, 'fit', '--model', 'opal', '--data', data])
        refused(p, 'p = 0 row', 'opal_p0.csv:9', "'t_par_comp' is inf", 'p=0',
                'initial parameter values')

        # Item 6: `initial = nan` in a model file; 1e308*1e308 and bytes/0 in an expression.
        model = open(os.path.join(os.path.dirname(__file__), '..', 'models',
                                  'pingpong.toml')).read()
        pp_data = write(os.path.join(tmp, 'pp.csv'),
                        'bytes,t\n0,2.1e-5\n1000,3e-5\n100000,1.1e-3\n1000000,1.02e-2\n')
        nan_model = write(os.path.join(tmp, 'nan.toml'),
                          model.replace('initial = 1e-5', 'initial = nan'))
        p = run([inv, 'fit', '--model', nan_model, '--data', pp_data])
        refused(p, 'initial = nan', 'nan.toml:11:', "parameter 'b1' initial must be a finite "
                'number, not nan')
        inf_bound = write(os.path.join(tmp, 'inf.toml'), model.replace('upper = 10', 'upper = inf'))
        p = run([inv, 'fit', '--model', inf_bound, '--data', pp_data])
        refused(p, 'upper = inf', 'inf.toml:11:', "parameter 'b1' upper must be a finite")
        for expr in ('b1 + bytes/0 + 1/a1', 'b1 + 1e308*1e308*bytes/a1'):
            m = write(os.path.join(tmp, 'div.toml'),
                      model.replace('expr = "b1 + bytes/(a1*1e6)"', f'expr = "{expr}"'))
            p = run([inv, 'fit', '--model', m, '--data', pp_data])
            refused(p, expr,
                    "pp.csv:2: response 't_msg' (column t) of model pingpong is nan at the initial")

        # Item 7: nesting in a model expression and in --derive.
        deep = '(' * 30000 + 'bytes' + ')' * 30000
        m = write(os.path.join(tmp, 'deep.toml'),
                  model.replace('expr = "b1 + bytes/(a1*1e6)"', f'expr = "b1 + {deep}/a1"'))
        p = run([inv, 'fit', '--model', m, '--data', pp_data])
        refused(p, 'deep model expression', 'deep.toml:16:', 'nesting deeper than 200 at column')
        p = run([inv, 'fit', '--model', 'pingpong', '--data', pp_data, '--derive',
                 'k=' + '-' * 30000 + 'bytes'])
        refused(p, 'deep --derive', '--derive k', 'nesting deeper than 200')

        # Item 13: a fixed value outside the bounds.
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--fix', 'a1=-5', '--no-cv'])
        refused(p, '--fix a1=-5', "cannot fix 'a1' at -5: outside its bounds [0.001, 1e+06]")

        # Item 13: --out refuses an existing file without --force, like platform probe.
        out = os.path.join(tmp, 'out', 'cal.toml')
        os.mkdir(os.path.dirname(out))
        write(out, 'precious\n')
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--out', out])
        refused(p, '--out existing', out + ' exists (use --force to overwrite it)')
        check(open(out).read() == 'precious\n', 'existing --out table left as it was')
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--out', out,
                 '--force'])
        check(p.returncode == 0, f'--force overwrites (exit {p.returncode}: {p.stderr[-200:]})')
        text = open(out).read()
        check(text.startswith('schema = 1') and 'a3 = { value = ' in text,
              'overwritten with the fitted table')
        check(os.listdir(os.path.dirname(out)) == ['cal.toml'],
              f'no temporary file left: {os.listdir(os.path.dirname(out))}')
        p = run([inv, 'platform', 'show', out])
        check(p.returncode == 0, 'the written table loads')
        # A table that cannot be written is an error (a directory in the way of the rename).
        blocked = os.path.join(tmp, 'blocked')
        os.mkdir(blocked)
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--out', blocked,
                 '--force'])
        check(p.returncode == 2 and 'cannot write' in p.stderr,
              f'unwritable --out reported: exit {p.returncode} {p.stderr.strip()[-200:]}')
        check(os.listdir(tmp).count('blocked') == 1 and
              not any(n.startswith('.blocked') for n in os.listdir(tmp)),
              'no temporary file left after a failed write')

        # Issue 20: --fix-from takes a table's value and names the table in the written one;
        # bad values of the new options are refused with the option named.
        probed = os.path.join(tmp, 'probed.toml')
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--out', probed,
                 '--platform-name', 'probed'])
        check(p.returncode == 0, f'a table to fix from (exit {p.returncode})')
        fixed = os.path.join(tmp, 'fixed.toml')
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--loss', 'huber',
                 '--fix-from', 'a4=' + probed, '--out', fixed])
        check(p.returncode == 0 and 'fixed from table probed' in open(fixed).read(),
              f'--fix-from: the written table names its source (exit {p.returncode})')
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv',
                 '--fix-from', 'zz=' + probed])
        refused(p, '--fix-from zz', "has no parameter 'zz'")
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--fix-from', 'a4'])
        refused(p, '--fix-from a4', 'expected NAME=TABLE')
        fit_json = os.path.join(tmp, 'fit.json')
        p = run([inv, 'fit', '--model', 'opal', '--data', small, '--no-cv', '--json'])
        write(fit_json, p.stdout)
        pred = [inv, 'predict', '--model', 'opal', '--platform', probed, '--set', 'n=2000',
                '--set', 'nt=1e6', '--set', 's=10', '--set', 'u=1', '--sweep', 'p=1..2']
        p = run(pred + ['--fit', os.path.join(tmp, 'none.json')])
        refused(p, 'predict --fit missing', 'none.json', 'cannot read the fit')
        p = run(pred + ['--fit', small])
        refused(p, 'predict --fit not JSON', 'opal_small.csv', 'not JSON')
        p = run(pred + ['--fit', fit_json, '--replications', '0'])
        refused(p, 'predict --replications 0', '--replications must be a whole number')
        p = run(pred + ['--fit', fit_json, '--statistic', 'mode'])
        refused(p, 'predict --statistic mode', "--statistic must be median or mean")
        p = run([inv, 'validate', '--model', 'opal', '--design', 'd', '--table', probed,
                 '--statistic', 'mode'])
        refused(p, 'validate --statistic mode', "--statistic must be median or mean")
        p = run([inv, 'validate', '--model', 'opal', '--design', 'd', '--table', probed,
                 '--pair-design', 'x'])
        refused(p, 'validate --pair-design alone', '--pair-design needs --pair-platform')

        # `validate summary` reads only `invmw validate --json` files (issue 20's pooled figures).
        vs = [inv, 'validate', 'summary']
        refused(run(vs), 'validate summary without files', 'missing VALIDATION.json')
        refused(run(vs + [small]), 'validate summary of a CSV', 'opal_small.csv', 'not JSON')
        refused(run(vs + [fit_json]), 'validate summary of a fit', 'fit.json', "no 'total'")
        refused(run(vs + ['--significant-share', '1', fit_json]),
                'validate summary --significant-share 1', '--significant-share 1')
        refused(run(vs + [os.path.join(tmp, 'none.json')]), 'validate summary of no file',
                'none.json', 'cannot read')

    if failures:
        print(f'{len(failures)} failure(s)')
        sys.exit(1)
    print('all passed')


if __name__ == '__main__':
    main()
