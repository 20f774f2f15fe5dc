#!/usr/bin/python3
"""The profile merged over a tree at MPI_Finalize (INVMW_PROFILE_MERGE=tree, issue 23) against the
gather to rank 0 (INVMW_PROFILE_MERGE=gather), on bench/mpi_many_functions (60 MPI functions on
every rank).

The reference for a run is `invmw profile --merge` on a copy of its directory: it builds the
profile with BuildProfile from the very dumps the ranks gathered (raw/rank-*.bin), which is what
the gather path does at MPI_Finalize. So, per run:
- profile.json equals the reference, call sites and min/max-rank attribution included, except
  "merge" (how it was made) and sums of seconds within a relative 1e-12 (added in tree order,
  docs/profile.md); profile.txt equals it up to the last printed digit;
- tree: every rank wrote raw/profile-NNNNNN.json, a complete copy of its ranks[] entry; rank 0
  received one aggregate per tree level (merge.rank0_bytes_received = log2(ranks) x the same
  size at 2, 4 and 8 ranks), never a rank's table; gather: rank 0 received every dump.
Modes:
  tree      tree at 2, 4 and 8 ranks, gather at 8 ranks
  fallback  rank 1 fails its part (INVMW_PROFILE_TEST_TREE_FAIL=1): one warning, every rank
            gathers instead, the same profile, exit status 0, no per-rank file left
  inline    INVMW_PROFILE_INLINE_RANKS=2 at 4 ranks: a plain LD_PRELOAD run leaves the ranks in
            files (profile.json "rank_files"), `invmw profile DIR` adds them; `invmw run` adds
            them itself

usage: check_profile_tree.py --mode MODE --invmw INVMW --launcher MPIRUN --preload LIB
                             --workdir DIR -- PROGRAM
"""
import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys

failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print('FAIL:', msg, flush=True)


def env():
    e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
             OMPI_MCA_rmaps_base_oversubscribe='1')
    for k in list(e):
        if k == 'LD_PRELOAD' or k.startswith('INVMW_'):
            del e[k]
    return e


def sh(cmd, timeout=240):
    r = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=timeout)
    print('$', ' '.join(cmd), '->', r.returncode, flush=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
    return r


def invmw_run(a, np_, out, extra_env=()):
    opts = []
    for kv in extra_env:
        opts += ['--env', kv]
    return sh([a.invmw, 'run', '--lib', a.preload, '--out', out] + opts +
              ['--', a.launcher, '--oversubscribe', '-np', str(np_)] + a.prog)


def preload_run(a, np_, out, extra_env=()):
    cmd = [a.launcher, '--oversubscribe', '-np', str(np_), '-x', f'LD_PRELOAD={a.preload}',
           '-x', f'INVMW_OUTPUT_DIR={out}']
    for kv in extra_env:
        cmd += ['-x', kv]
    return sh(cmd + a.prog)


def load(path):
    with open(path) as f:
        return json.load(f)


def same(x, y, where):
    """x == y; numbers that are not integers within a relative 1e-12."""
    if isinstance(x, float) or isinstance(y, float):
        ok = (isinstance(x, (int, float)) and isinstance(y, (int, float)) and
              abs(x - y) <= 1e-12 * max(abs(x), abs(y)))
        check(ok, f'{where}: {x!r} != {y!r}')
    elif isinstance(x, dict) and isinstance(y, dict):
        check(x.keys() == y.keys(), f'{where}: keys {sorted(x)} != {sorted(y)}')
        for k in x.keys() & y.keys():
            same(x[k], y[k], f'{where}.{k}')
    elif isinstance(x, list) and isinstance(y, list):
        check(len(x) == len(y), f'{where}: {len(x)} entries != {len(y)}')
        for i, (u, v) in enumerate(zip(x, y)):
            same(u, v, f'{where}[{i}]')
    else:
        check(x == y and type(x) == type(y), f'{where}: {x!r} != {y!r}')


NUM = re.compile(r'^-?\d+\.\d+$')


def same_text(t1, t2, where):
    l1, l2 = t1.splitlines(), t2.splitlines()
    check(len(l1) == len(l2), f'{where}: {len(l1)} lines != {len(l2)}')
    for i, (x, y) in enumerate(zip(l1, l2)):
        if x == y:
            continue
        w1, w2 = x.split(), y.split()
        ok = len(w1) == len(w2) and all(
            u == v or (NUM.match(u) and NUM.match(v) and
                       abs(float(u) - float(v)) <= 1.5 * 10 ** -len(u.split('.')[1]))
            for u, v in zip(w1, w2))
        check(ok, f'{where} line {i + 1}:\n  {x}\n  {y}')


def reference(a, out):
    """The profile BuildProfile makes from the run's own dumps (= the gather path's)."""
    ref = out + '-reference'
    shutil.rmtree(ref, ignore_errors=True)
    shutil.copytree(out, ref, symlinks=True)
    r = sh([a.invmw, 'profile', '--merge', ref])
    check(r.returncode == 0, f'invmw profile --merge {ref}: exit {r.returncode}')
    with open(os.path.join(ref, 'profile.txt')) as f:
        return load(os.path.join(ref, 'profile.json')), f.read()


def compare_with_reference(a, out, label):
    p = load(os.path.join(out, 'profile.json'))
    with open(os.path.join(out, 'profile.txt')) as f:
        text = f.read()
    ref, ref_text = reference(a, out)
    check('callsites' in p and p['callsites'].get('sites'), f'{label}: no call sites')
    merge = p.pop('merge', None)
    same(p, ref, label)
    same_text(text, ref_text, label + ' profile.txt')
    return p, merge


def rank_files(out):
    return sorted(glob.glob(os.path.join(out, 'raw', 'profile-*.json')))


def check_rank_files(out, p, np_, label):
    files = rank_files(out)
    check(len(files) == np_, f'{label}: {len(files)} per-rank files, expected {np_}')
    for i in range(np_):
        path = os.path.join(out, 'raw', f'profile-{i:06d}.json')
        check(os.path.exists(path), f'{label}: no {path}')
        if not os.path.exists(path):
            continue
        entry = load(path)
        check(entry.get('rank') == i, f'{path}: rank {entry.get("rank")}')
        check(len(entry.get('functions', {})) >= 50,
              f'{path}: {len(entry.get("functions", {}))} functions, expected >= 50')
        if len(p.get('ranks', [])) > i:
            same(entry, p['ranks'][i], f'{path} vs profile.json ranks[{i}]')


def dump_bytes(out):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(out, 'raw', 'rank-*.bin')))


def mode_tree(a):
    per_level = {}
    for np_ in (2, 4, 8):
        out = os.path.join(a.workdir, f'tree-{np_}')
        r = invmw_run(a, np_, out)
        check(r.returncode == 0, f'tree at {np_} ranks: exit {r.returncode}')
        if r.returncode:
            continue
        check('merging over a tree failed' not in r.stderr, f'tree at {np_}: fell back')
        p, merge = compare_with_reference(a, out, f'tree at {np_} ranks')
        check(merge and merge.get('method') == 'tree', f'tree at {np_}: merge {merge}')
        check(merge and merge.get('ranks_inline') is True, f'tree at {np_}: merge {merge}')
        check(len(p['ranks']) == np_ and 'rank_files' not in p, f'tree at {np_}: ranks not inline')
        check(len(p['functions']) >= 50, f'tree at {np_}: {len(p["functions"])} functions')
        check_rank_files(out, p, np_, f'tree at {np_} ranks')
        if merge:
            levels = int(math.log2(np_))
            per_level[np_] = merge['rank0_bytes_received'] / levels
            # Per level less than a single rank's table: aggregates, not tables.
            check(merge['rank0_bytes_received'] / levels < dump_bytes(out) / np_,
                  f'tree at {np_}: rank 0 received {merge["rank0_bytes_received"]} bytes, '
                  f'a dump is {dump_bytes(out) / np_:.0f}')
    print('rank 0 bytes per tree level:', per_level)
    check(len(set(per_level.values())) == 1,
          f'rank 0 should receive one aggregate of the same size per tree level: {per_level}')
    out = os.path.join(a.workdir, 'gather-8')
    r = invmw_run(a, 8, out, ['INVMW_PROFILE_MERGE=gather'])
    check(r.returncode == 0, f'gather: exit {r.returncode}')
    if r.returncode == 0:
        p, merge = compare_with_reference(a, out, 'gather at 8 ranks')
        check(merge == {'method': 'gather', 'rank0_bytes_received': dump_bytes(out)},
              f'gather: merge {merge}, dumps {dump_bytes(out)} bytes')
        check(rank_files(out) == [], 'gather: per-rank files written')


def mode_fallback(a):
    out = os.path.join(a.workdir, 'fallback-4')
    r = invmw_run(a, 4, out, ['INVMW_PROFILE_TEST_TREE_FAIL=1'])
    check(r.returncode == 0, f'fallback: exit {r.returncode}')
    warnings = re.findall(r'merging over a tree failed on rank (\d+)', r.stderr)
    check(warnings == ['1'], f'fallback: warnings {warnings}, expected one naming rank 1')
    if r.returncode == 0:
        p, merge = compare_with_reference(a, out, 'fallback at 4 ranks')
        check(merge and merge.get('method') == 'gather', f'fallback: merge {merge}')
        check(rank_files(out) == [], f'fallback: per-rank files left: {rank_files(out)}')


def mode_inline(a):
    out = os.path.join(a.workdir, 'preload-4')
    r = preload_run(a, 4, out, ['INVMW_PROFILE_INLINE_RANKS=2'])
    check(r.returncode == 0, f'preload run: exit {r.returncode}')
    if r.returncode:
        return
    p = load(os.path.join(out, 'profile.json'))
    check(p.get('ranks') == [], 'above INVMW_PROFILE_INLINE_RANKS, ranks[] should stay empty')
    check(p.get('rank_files') == {'files': 'raw/profile-NNNNNN.json', 'ranks': 4},
          f'rank_files: {p.get("rank_files")}')
    check(p.get('merge', {}).get('ranks_inline') is False, f'merge: {p.get("merge")}')
    with open(os.path.join(out, 'profile.txt')) as f:
        check('more than INVMW_PROFILE_INLINE_RANKS' in f.read(), 'profile.txt: no note')
    check_rank_files(out, p, 4, 'preload at 4 ranks')
    r = sh([a.invmw, 'profile', out])
    check(r.returncode == 0 and 'added the per-rank tables' in r.stderr,
          f'invmw profile {out}: exit {r.returncode}')
    p, _ = compare_with_reference(a, out, 'preload at 4 ranks, assembled')
    check('rank_files' not in p and len(p['ranks']) == 4, 'invmw profile did not add the ranks')
    check_rank_files(out, p, 4, 'preload at 4 ranks, assembled')
    out = os.path.join(a.workdir, 'run-4')
    r = invmw_run(a, 4, out, ['INVMW_PROFILE_INLINE_RANKS=2'])
    check(r.returncode == 0, f'invmw run: exit {r.returncode}')
    if r.returncode == 0:
        p, _ = compare_with_reference(a, out, 'invmw run at 4 ranks, assembled')
        check('rank_files' not in p and len(p['ranks']) == 4, 'invmw run did not add the ranks')


def main():
    ap = argparse.ArgumentParser()
    for o in ('--mode', '--invmw', '--launcher', '--preload', '--workdir'):
        ap.add_argument(o, required=True)
    ap.add_argument('prog', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    a.prog = a.prog[1:] if a.prog and a.prog[0] == '--' else a.prog
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    {'tree': mode_tree, 'fallback': mode_fallback, 'inline': mode_inline}[a.mode](a)
    if failures:
        print(f'{len(failures)} failure(s)')
        sys.exit(1)
    print('OK')


if __name__ == '__main__':
    main()
