#!/usr/bin/env python3
"""Added cost of the invmw preload per MPI call (the issue's benchmark).

Runs bench/mpi_overhead on 2 ranks over shared memory in interleaved rounds: without the
preload, with it (profile), and with it and tracing when tracing is available, so that machine
noise hits every configuration alike. Prints, per microbenchmark, the median over the rounds of
each configuration, and the difference (ns) and ratio against no preload.

usage: overhead.py --lib LIB/libinvmw.so --bench BIN/mpi_overhead
                   [--rounds 7] [--iters 200000] [--launcher mpirun.openmpi] [--callsites]
                   [--live]
--live compares the per-call counters in private memory with the file-backed live mapping.
--callsites compares the profile without call sites, at depth 1 and at depth 8 (see the +ns
column of depth1 minus that of depth0 for the cost of call sites).
--callsites --live: depth 0 and 1, each with the counters and call-site tables in private memory
(INVMW_PROFILE_LIVE_COUNTERS=0) and in the live file mappings; depth1 minus depth0 within each
is the cost of call sites there. The *_cpu rows are the calling thread's CPU time per call.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


last_trace_dir = [None]


def run(args, env_extra, preload):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    env.update(env_extra)
    cmd = [args.launcher, '-np', '2', '--bind-to', 'core']
    out = None
    if preload:
        out = tempfile.mkdtemp(prefix='invmw-bench-')
        cmd += ['-x', f'LD_PRELOAD={args.lib}', '-x', f'INVMW_OUTPUT_DIR={out}',
                '-x', 'INVMW_RUNTIME_QUIET=1']
        for k in env_extra:
            cmd += ['-x', k]
    cmd += [args.bench, str(args.iters)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        sys.exit(f'benchmark failed: {" ".join(cmd)}\n{res.stderr}')
    # Output directories are removed as soon as they are done with (the last trace is kept for
    # its sizes): a few GB of traces left in the page cache slow every later round through
    # writeback, which would bias the configurations measured last.
    if out and env_extra.get('INVMW_TRACE_ENABLE') == '1':
        if last_trace_dir[0]:
            shutil.rmtree(last_trace_dir[0], ignore_errors=True)
        last_trace_dir[0] = out
    elif out:
        shutil.rmtree(out, ignore_errors=True)
    values = {}
    for line in res.stdout.splitlines():
        name, ns = line.split()
        values[name] = float(ns)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lib', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--launcher', default='mpirun.openmpi')
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--iters', type=int, default=200000)
    ap.add_argument('--trace', action='store_true', help='also measure with INVMW_TRACE_ENABLE=1')
    ap.add_argument('--callsites', action='store_true',
                    help='profile without call sites (INVMW_WRAP_CALLSITE_DEPTH=0), at depth 1 '
                         '(the default) and at depth 8')
    ap.add_argument('--live', action='store_true',
                    help='profile with the counters in private memory '
                         '(INVMW_PROFILE_LIVE_COUNTERS=0) and in the file-backed live mapping '
                         '(the default, which survives SIGKILL)')
    args = ap.parse_args()
    configs = [('none', {}, False), ('profile', {}, True)]
    if args.live:
        configs = [('none', {}, False), ('private', {'INVMW_PROFILE_LIVE_COUNTERS': '0'}, True),
                   ('live', {'INVMW_PROFILE_LIVE_COUNTERS': '1'}, True)]
    if args.callsites:
        configs = [('none', {}, False), ('depth0', {'INVMW_WRAP_CALLSITE_DEPTH': '0'}, True),
                   ('depth1', {'INVMW_WRAP_CALLSITE_DEPTH': '1'}, True),
                   ('depth8', {'INVMW_WRAP_CALLSITE_DEPTH': '8'}, True)]
    if args.callsites and args.live:
        configs = [('none', {}, False)]
        for live in ('0', '1'):
            for depth in ('0', '1'):
                configs.append((f'd{depth}-{"live" if live == "1" else "priv"}',
                                {'INVMW_WRAP_CALLSITE_DEPTH': depth,
                                 'INVMW_PROFILE_LIVE_COUNTERS': live}, True))
    if args.trace:
        configs.append(('trace', {'INVMW_TRACE_ENABLE': '1'}, True))
    results = {name: [] for name, _, _ in configs}
    for r in range(args.rounds):
        for name, extra, preload in configs:
            results[name].append(run(args, extra, preload))
        print(f'round {r + 1}/{args.rounds} done', file=sys.stderr)
    benches = list(results['none'][0].keys())
    med = {c: {b: statistics.median(x[b] for x in results[c]) for b in benches} for c in results}
    print(f'invmw preload overhead: {args.rounds} interleaved rounds x {args.iters} iterations, '
          f'2 ranks, shared memory; medians in ns per unit')
    header = f'{"benchmark":22} {"none":>9}'
    for c in results:
        if c != 'none':
            header += f' {c:>9} {"+ns":>8} {"ratio":>6}'
    print(header)
    for b in benches:
        line = f'{b:22} {med["none"][b]:9.1f}'
        for c in results:
            if c == 'none':
                continue
            d = med[c][b] - med['none'][b]
            line += f' {med[c][b]:9.1f} {d:8.1f} {med[c][b] / med["none"][b]:6.3f}'
        print(line)
    print('units: ping-pong = one half round trip (one wrapped call per rank on the critical '
          'path); others = one call')
    if 'trace' in med and 'test_null' in benches:
        ns = med['trace']['test_null']
        print(f'trace recording rate (MPI_Test on MPI_REQUEST_NULL, one event per call, MPI '
              f'included): {1e3 / ns:.1f} million events per second per rank')
    if args.trace and last_trace_dir[0]:
        raw = sum(os.path.getsize(p) for p in glob.glob(os.path.join(last_trace_dir[0], 'raw',
                                                                      'events-*')))
        otf = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in
                  os.walk(os.path.join(last_trace_dir[0], 'traces')) for f in fs)
        events = raw // 64
        if events:
            print(f'bytes per event: {raw / events:.1f} in the raw buffer files, '
                  f'{otf / events:.1f} in the OTF2 archive ({events} calls recorded)')
    if last_trace_dir[0]:
        shutil.rmtree(last_trace_dir[0], ignore_errors=True)


if __name__ == '__main__':
    main()
