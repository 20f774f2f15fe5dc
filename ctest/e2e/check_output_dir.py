#!/usr/bin/env python3
"""Checks how invmw treats its output directory (issue 16, items 3 and 4).

Modes (--mode):
  symlink          a traced run whose program plants a symbolic link to a sentinel file where
                   invmw is about to create an event file (ctest/e2e/c_plant.c): the sentinel
                   stays unchanged, the link stays a link, invmw warns at the end, and the
                   program's exit status, output and profile are those of a clean run.
  symlink_stale    a directory whose raw/ holds links named like invmw's rank files, pointing
                   to a sentinel: a plain preload run must not write through them (the
                   directory holds an earlier run's raw/, so the run goes to a fresh directory).
  stale_preload    a plain LD_PRELOAD run with INVMW_OUTPUT_DIR of an earlier (4-rank, traced)
                   run: the earlier profile.json and trace stay as they were, the run's profile
                   goes to a fresh directory named in a warning at the end, and the program runs
                   unchanged.
  stale_run        `invmw run` into the directory of an earlier traced run that wrote no
                   profile (INVMW_PROFILE_ENABLE=0): refused before the job starts, nothing
                   changed; with --force the earlier run is replaced (only invmw's files: a
                   user's file stays) and the new trace and profile are consistent.
  replace_preload  a plain preload run with INVMW_OUTPUT_REPLACE=1 replaces an earlier run.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_and_check as rac  # noqa: E402


class Failed(Exception):
    pass


def log(msg):
    print(f'[check_output_dir] {msg}', flush=True)


def check(cond, msg):
    if not cond:
        raise Failed(msg)


def base_env():
    env = dict(os.environ)
    env.update({'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
                'OMPI_MCA_rmaps_base_oversubscribe': '1'})
    for k in list(env):
        if k == 'LD_PRELOAD' or k.startswith('INVMW_'):
            del env[k]
    return env


def launch(a, np_, prog, rank_env):
    cmd = [a.launcher, '--oversubscribe', '-np', str(np_)]
    for k, v in rank_env.items():
        cmd += ['-x', f'{k}={v}']
    return cmd + prog


def run(a, cmd, label):
    log(f'{label}: {" ".join(cmd)}')
    p = subprocess.Popen(cmd, env=base_env(), cwd=a.workdir, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=a.timeout)
    finally:
        if p.poll() is None:  # nothing of the job may outlive the check
            rac.kill_group(p.pid)
            p.communicate()
    r = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    log(f'{label}: exit {r.returncode}')
    with open(os.path.join(a.workdir, f'{label}.stderr'), 'w') as f:
        f.write(r.stderr)
    return r


def preload_run(a, np_, prog, out, expect, label, extra=None):
    os.makedirs(expect, exist_ok=True)
    env = {'LD_PRELOAD': a.preload, 'INVMW_OUTPUT_DIR': out, 'INVMW_TEST_EXPECT_DIR': expect}
    env.update(extra or {})
    return run(a, launch(a, np_, prog, env), label)


def invmw_run(a, np_, prog, out, expect, label, opts=()):
    os.makedirs(expect, exist_ok=True)
    cmd = [a.invmw, 'run', '--lib', a.preload, '--out', out] + list(opts) + ['--']
    return run(a, cmd + launch(a, np_, prog, {'INVMW_TEST_EXPECT_DIR': expect}), label)


def profile_ok(a, out, np_, expect, allow=()):
    """profile.json of out is complete and matches the program's own bookkeeping."""
    path = os.path.join(out, 'profile.json')
    check(os.path.exists(path), f'no {path}')
    with open(path) as f:
        p = json.load(f)
    ns = argparse.Namespace(np=np_, flavor='openmpi', excluded=[], allow=list(allow),
                            end='finalize', kill_rank=1, expect_end=[],
                            expect_dropped=None)
    errors = rac.check_ends(p, ns, incomplete=False)
    errors += rac.compare(p, rac.load_expected(expect, np_), ns)
    check(not errors, f'{path}:\n  ' + '\n  '.join(errors))
    log(f'{path}: complete, {np_} ranks, counts exact')


def trace_ok(a, out):
    r = subprocess.run([a.invmw, 'trace', 'check', out], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f'invmw trace check {out} failed ({r.returncode}):\n'
                             f'{r.stdout}{r.stderr}')
    log(f'invmw trace check {out}: passes')


def snapshot(d):
    """Every entry under d (links not followed) with its size and, for files, its bytes."""
    snap = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, d)
            if os.path.islink(p):
                snap[rel] = ('link', os.readlink(p))
            elif os.path.isfile(p):
                with open(p, 'rb') as f:
                    snap[rel] = ('file', f.read())
            else:
                snap[rel] = ('dir', None)
    return snap


def warnings(stderr):
    return [l for l in stderr.splitlines() if l.startswith('invmw: warning:')]


def redirected_dir(stderr, out):
    """The fresh directory a warning at the end names instead of out."""
    for l in warnings(stderr):
        if out in l and 'earlier run' in l:
            words = [w.strip('.,;:()') for w in l.split()]
            for w in words:
                if w.startswith('/') and w != out and os.path.isdir(w):
                    return w
    raise Failed(f'no warning naming the directory used instead of {out}:\n{stderr[-2000:]}')


SENTINEL = b'sentinel: invmw must never write here\n'


def make_sentinel(a):
    s = os.path.join(a.workdir, 'sentinel.txt')
    with open(s, 'wb') as f:
        f.write(SENTINEL)
    return s


def sentinel_unchanged(s):
    with open(s, 'rb') as f:
        data = f.read()
    check(data == SENTINEL, f'{s} was changed through the planted link: now {len(data)} bytes '
                            f'{data[:60]!r}')
    log(f'{s}: unchanged')


def mode_symlink(a):
    s = make_sentinel(a)
    out = os.path.join(a.workdir, 'run')
    expect = os.path.join(a.workdir, 'expect')
    r = preload_run(a, 2, [a.plant, s], out, expect, 'preload', {'INVMW_TRACE_ENABLE': '1'})
    check(r.returncode == 0, f'exit status {r.returncode}\n{r.stderr[-3000:]}')
    sentinel_unchanged(s)
    link = os.path.join(out, 'raw', 'events-000001-001.bin')
    check(os.path.islink(link) and os.readlink(link) == s,
          f'{link} is no longer the planted link')
    w = [l for l in warnings(r.stderr) if 'not written' in l]
    check(len(w) == 1, f'expected one warning about files not written, got {w}:\n'
                       f'{r.stderr[-3000:]}')
    log('warned: ' + w[0])
    profile_ok(a, out, 2, expect)
    plain = run(a, launch(a, 2, [a.plant, s], {}), 'plain')
    check(plain.returncode == r.returncode and plain.stdout == r.stdout,
          f'with invmw: {r.returncode} {r.stdout!r}; without: {plain.returncode} '
          f'{plain.stdout!r}')


def mode_symlink_stale(a):
    s = make_sentinel(a)
    out = os.path.join(a.workdir, 'run')
    os.makedirs(os.path.join(out, 'raw'))
    for rank in range(2):
        os.symlink(s, os.path.join(out, 'raw', f'rank-{rank:06d}.bin'))
    expect = os.path.join(a.workdir, 'expect')
    r = preload_run(a, 2, [a.app], out, expect, 'preload')
    check(r.returncode == 0, f'exit status {r.returncode}\n{r.stderr[-3000:]}')
    sentinel_unchanged(s)
    check(not os.path.exists(os.path.join(out, 'profile.json')), f'a profile was written in {out}')
    fresh = redirected_dir(r.stderr, out)
    log(f'results went to {fresh}')
    profile_ok(a, fresh, 2, expect)


def mode_stale_preload(a):
    out = os.path.join(a.workdir, 'run')
    e1 = os.path.join(a.workdir, 'expect1')
    r = preload_run(a, 4, [a.app], out, e1, 'first', {'INVMW_TRACE_ENABLE': '1'})
    check(r.returncode == 0, f'first run: exit status {r.returncode}\n{r.stderr[-3000:]}')
    profile_ok(a, out, 4, e1)
    before = snapshot(out)
    e2 = os.path.join(a.workdir, 'expect2')
    r = preload_run(a, 2, [a.app], out, e2, 'second')
    check(r.returncode == 0, f'second run: exit status {r.returncode}\n{r.stderr[-3000:]}')
    after = snapshot(out)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    check(not changed, f'the second run changed the earlier run in {out}: {changed}')
    log(f'{out}: unchanged ({len(before)} entries)')
    profile_ok(a, out, 4, e1)
    trace_ok(a, out)
    fresh = redirected_dir(r.stderr, out)
    log(f'second run went to {fresh}')
    profile_ok(a, fresh, 2, e2)
    plain = run(a, launch(a, 2, [a.app], {}), 'plain')
    check(plain.returncode == 0 and plain.stdout == r.stdout,
          f'stdout differs with and without invmw: {r.stdout!r} / {plain.stdout!r}')


def mode_stale_run(a):
    out = os.path.join(a.workdir, 'run')
    e1 = os.path.join(a.workdir, 'expect1')
    r = invmw_run(a, 4, [a.app], out, e1, 'first',
                  ['--trace', '--env', 'INVMW_PROFILE_ENABLE=0'])
    check(r.returncode == 0, f'first run: exit status {r.returncode}\n{r.stderr[-3000:]}')
    check(not os.path.exists(os.path.join(out, 'profile.json')), 'first run wrote a profile')
    trace_ok(a, out)
    with open(os.path.join(out, 'notes.txt'), 'w') as f:
        f.write('a file of the user\n')
    before = snapshot(out)

    e2 = os.path.join(a.workdir, 'expect2')
    r = invmw_run(a, 2, [a.app], out, e2, 'refused', ['--trace'])
    check(r.returncode != 0, 'invmw run accepted the directory of an earlier run')
    check('earlier run' in r.stderr and '--force' in r.stderr,
          f'unclear refusal: {r.stderr[-2000:]}')
    log('refused: ' + r.stderr.strip().splitlines()[-1])
    check(not glob.glob(os.path.join(e2, '*')), 'the job ran although the directory was refused')
    check(snapshot(out) == before, f'the refused run changed {out}')
    trace_ok(a, out)

    r = invmw_run(a, 2, [a.app], out, e2, 'force', ['--trace', '--force'])
    check(r.returncode == 0, f'--force: exit status {r.returncode}\n{r.stderr[-3000:]}')
    profile_ok(a, out, 2, e2)
    trace_ok(a, out)
    ranks = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, 'raw', 'rank-*')))
    check(ranks == ['rank-000000.bin', 'rank-000001.bin'], f'raw/ after --force: {ranks}')
    with open(os.path.join(out, 'notes.txt')) as f:
        check(f.read() == 'a file of the user\n', 'notes.txt changed')
    log('--force replaced the earlier run and kept notes.txt')


def mode_replace_preload(a):
    out = os.path.join(a.workdir, 'run')
    e1 = os.path.join(a.workdir, 'expect1')
    r = preload_run(a, 4, [a.app], out, e1, 'first', {'INVMW_TRACE_ENABLE': '1'})
    check(r.returncode == 0, f'first run: exit status {r.returncode}\n{r.stderr[-3000:]}')
    with open(os.path.join(out, 'notes.txt'), 'w') as f:
        f.write('a file of the user\n')
    e2 = os.path.join(a.workdir, 'expect2')
    r = preload_run(a, 2, [a.app], out, e2, 'replace', {'INVMW_OUTPUT_REPLACE': '1'})
    check(r.returncode == 0, f'second run: exit status {r.returncode}\n{r.stderr[-3000:]}')
    profile_ok(a, out, 2, e2)
    left = sorted(os.listdir(out))
    check(left == ['callsites', 'meta.json', 'notes.txt', 'profile.json', 'profile.txt', 'raw'],
          f'{out} after the replacement: {left}')
    raw = sorted(os.listdir(os.path.join(out, 'raw')))
    check(not [n for n in raw if n.startswith(('events-', 'defs-', 'rank-000002', 'rank-000003'))],
          f'raw/ keeps files of the earlier run: {raw}')
    log(f'replaced: {left}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mode', required=True,
                    choices=('symlink', 'symlink_stale', 'stale_preload', 'stale_run',
                             'replace_preload'))
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--preload', required=True)
    ap.add_argument('--app', required=True, help='e2e program run with 2 and 4 ranks')
    ap.add_argument('--plant', required=True, help='ctest/e2e/c_plant.c')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--timeout', type=float, default=120)
    a = ap.parse_args()
    for k in ('invmw', 'preload', 'app', 'plant', 'workdir'):
        setattr(a, k, os.path.abspath(getattr(a, k)))
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    try:
        globals()['mode_' + a.mode](a)
    except (Failed, rac.CheckFailed, subprocess.TimeoutExpired) as e:
        print(f'FAIL: {e}')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
