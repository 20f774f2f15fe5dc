#!/usr/bin/python3
"""Runs a traced MPI job with the parallel OTF2 writer and compares its archive with the serial
converter's archive of the same raw files.

Run with Debian's /usr/bin/python3 (the `otf2` module of python3-otf2). Steps:
  1. `invmw run --trace -- LAUNCHER -np N PROGRAM`: must exit 0 and say that the trace was
     written by N ranks in parallel (with --fail-rank R, INVMW_TRACE_TEST_PARALLEL_FAIL=R makes
     rank R fail its part: the run must warn exactly once that the parallel writing failed,
     naming rank R, and rank 0's serial conversion must write the archive instead);
  2. no temporary archive is left in the run directory;
  3. `invmw trace convert --name serial` builds the serial archive from the same raw files;
  4. both archives, read with the OTF2 Python reader, have the same definitions (regions,
     locations with their event counts, location groups, system tree, groups, communicators,
     metric members and classes, attributes, clock properties, properties) and the same events
     per location, every reference replaced by the name of what it refers to (so a renumbering
     of references does not count as a difference), and `otf2-print` counts the same events;
  5. `invmw trace check` accepts the parallel archive.

usage: check_parallel_trace.py --invmw BIN --launcher MPIRUN --preload LIB --flavor F --np N
                               --workdir DIR
                               [--fail-rank R] [--timeout S] -- PROGRAM [ARGS...]
"""
import argparse
import collections
import enum
import os
import re
import subprocess
import sys

import otf2

DEFINITION_LISTS = ('regions', 'locations', 'location_groups', 'system_tree_nodes', 'groups',
                    'comms', 'metric_members', 'metric_classes', 'metric_class_recorders',
                    'attributes', 'strings')


def norm(v, depth=0):
    """A value with every definition replaced by its kind and name (or its content)."""
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    if isinstance(v, enum.Enum):
        return str(v)
    if isinstance(v, dict):
        return tuple(sorted((norm(k, depth + 1), norm(w, depth + 1)) for k, w in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(norm(x, depth + 1) for x in v)
    mod = type(v).__module__ or ''
    if mod.startswith('otf2.definitions'):
        if depth > 0 and hasattr(v, 'name'):
            return (type(v).__name__, norm(v.name, depth + 1))
        return (type(v).__name__,) + fields(v, depth)
    if hasattr(v, 'value') and not hasattr(v, '_fields'):
        return norm(v.value, depth + 1)
    return str(v)


def fields(obj, depth):
    names = [f[0] for f in getattr(type(obj), '_fields', ())]
    out = []
    for n in names:
        attr = re.sub(r'(?<!^)(?=[A-Z])', '_', n).lower()
        if hasattr(obj, attr):
            out.append((attr, norm(getattr(obj, attr), depth + 1)))
        elif hasattr(obj, n):
            out.append((n, norm(getattr(obj, n), depth + 1)))
    return tuple(out)


def describe(path):
    """Definitions and per-location events of an archive, references replaced by names."""
    with otf2.reader.open(path) as t:
        d = t.definitions
        defs = {}
        for kind in DEFINITION_LISTS:
            defs[kind] = sorted((repr(norm(x)) for x in getattr(d, kind)))
        cp = d.clock_properties
        defs['clock'] = (cp.timer_resolution, cp.global_offset, cp.trace_length)
        events = collections.defaultdict(list)
        for loc, ev in t.events:
            events[loc.name].append((type(ev).__name__,) + fields(ev, 1))
    return defs, events


def otf2_print_counts(path):
    out = subprocess.run(['otf2-print', path], capture_output=True, text=True, check=True).stdout
    c = collections.Counter()
    for line in out.splitlines():
        m = re.match(r'^([A-Z_]+)\s+\d+\s+\d+', line)
        if m:
            c[m.group(1)] += 1
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--preload', required=True)
    ap.add_argument('--flavor', required=True)
    ap.add_argument('--np', type=int, required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--fail-rank', type=int)
    ap.add_argument('--timeout', type=int, default=110)
    ap.add_argument('program', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = [p for p in a.program if p != '--']
    os.makedirs(a.workdir, exist_ok=True)
    run = os.path.join(a.workdir, 'run')
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    env.pop('INVMW_TRACE_WRITER', None)
    if a.fail_rank is not None:
        env['INVMW_TRACE_TEST_PARALLEL_FAIL'] = str(a.fail_rank)
    launcher = [a.launcher]
    if a.flavor == 'openmpi':
        launcher.append('--oversubscribe')
    cmd = ([a.invmw, 'run', '--out', run, '--trace', '--force', '--lib', a.preload, '--mpi',
            a.flavor, '--'] + launcher +
           ['-np', str(a.np)] + prog)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.timeout,
                       start_new_session=True)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    errors = []
    if p.returncode != 0:
        errors.append(f'the run exited with {p.returncode}')
    failed_lines = [l for l in p.stderr.splitlines() if 'writing in parallel failed' in l]
    if a.fail_rank is None:
        if f'written by {a.np} ranks in parallel' not in p.stderr:
            errors.append(f'no "written by {a.np} ranks in parallel" in the run\'s output')
        if failed_lines:
            errors.append('the parallel writing failed: ' + failed_lines[0])
    else:
        if len(failed_lines) != 1:
            errors.append(f'{len(failed_lines)} warnings that the parallel writing failed, '
                          'expected exactly one')
        elif f'rank {a.fail_rank}' not in failed_lines[0]:
            errors.append(f'the warning does not name rank {a.fail_rank}: {failed_lines[0]}')
        if 'ranks in parallel' in p.stderr:
            errors.append('a parallel archive was reported although a rank failed')
    if 'trace written to' not in p.stderr:
        errors.append('no "trace written to" in the run\'s output')
    if errors:
        fail(errors)
    leftovers = [e for e in os.listdir(run) if '.writing-' in e]
    if leftovers:
        errors.append(f'temporary archive entries left: {leftovers}')

    c = subprocess.run([a.invmw, 'trace', 'convert', '--quiet', '--name', 'serial', run],
                       capture_output=True, text=True)
    if c.returncode != 0:
        fail(errors + [f'serial conversion failed: {c.stdout}{c.stderr}'])
    par_defs, par_events = describe(os.path.join(run, 'traces.otf2'))
    ser_defs, ser_events = describe(os.path.join(run, 'serial.otf2'))
    for kind in ser_defs:
        if par_defs[kind] != ser_defs[kind]:
            only_p = [x for x in par_defs[kind] if x not in ser_defs[kind]][:3] \
                if isinstance(par_defs[kind], list) else par_defs[kind]
            only_s = [x for x in ser_defs[kind] if x not in par_defs[kind]][:3] \
                if isinstance(ser_defs[kind], list) else ser_defs[kind]
            errors.append(f'definitions "{kind}" differ: parallel {only_p} serial {only_s}')
    if set(par_events) != set(ser_events):
        errors.append(f'locations differ: {sorted(par_events)} vs {sorted(ser_events)}')
    total = 0
    for loc in sorted(ser_events):
        pe, se = par_events.get(loc, []), ser_events[loc]
        total += len(se)
        if len(pe) != len(se):
            errors.append(f'{loc}: {len(pe)} events in parallel, {len(se)} serially')
        elif pe != se:
            i = next(k for k in range(len(se)) if pe[k] != se[k])
            errors.append(f'{loc}: event {i} differs: {pe[i]} vs {se[i]}')
    if len(ser_events) < a.np:
        errors.append(f'{len(ser_events)} locations for {a.np} ranks')
    pc = otf2_print_counts(os.path.join(run, 'traces.otf2'))
    sc = otf2_print_counts(os.path.join(run, 'serial.otf2'))
    if pc != sc or not pc:
        errors.append(f'otf2-print counts differ: {dict(pc)} vs {dict(sc)}')
    chk = subprocess.run([a.invmw, 'trace', 'check', run], capture_output=True, text=True)
    if chk.returncode != 0:
        errors.append(f'invmw trace check failed: {chk.stdout}{chk.stderr}')
    if errors:
        fail(errors)
    print(f'ok: {a.np} ranks, {len(ser_events)} locations, {total} events, same definitions '
          'and events as the serial conversion')


def fail(errors):
    for e in errors[:40]:
        print('FAIL: ' + e)
    sys.exit(1)


if __name__ == '__main__':
    main()
