#!/usr/bin/env python3
"""MPI_Finalize of a traced run: the parallel OTF2 writer against the serial one (issue 23).

Per rank count, runs bench/mpi_finalize_time (a fixed number of trace events per rank) under
`invmw run --trace`, once with INVMW_TRACE_WRITER=parallel and once with =serial, in
interleaved rounds so that machine noise hits both alike. Prints, per rank count and writer,
the medians over the rounds of: the largest process CPU time any rank spent inside
MPI_Finalize, rank 0's, the largest wall time, the events of the archive, and the write
throughput per rank (events a rank wrote / its CPU time in MPI_Finalize: every rank its own
events in parallel, rank 0 all of them serially). CPU time in MPI_Finalize includes the
profile merge, invmw's clock synchronisation and the MPI library's own finalize, the same for
both writers; the row "none" (no trace) shows that part alone.

usage: finalize_time.py --invmw BIN/invmw --lib LIB/libinvmw.so --bench BIN/mpi_finalize_time
                        [--np 2,4,8,16] [--rounds 3] [--events-rounds 20000]
                        [--launcher mpirun.openmpi]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def run(a, np, writer):
    out = tempfile.mkdtemp(prefix='invmw-finbench-')
    run_dir = os.path.join(out, 'run')
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    trace = [] if writer == 'none' else ['--trace', '--env', f'INVMW_TRACE_WRITER={writer}']
    cmd = ([a.invmw, 'run', '--out', run_dir, '--lib', a.lib] + trace +
           ['--env', 'INVMW_SAMPLER_ENABLE=0', '--', a.launcher, '--oversubscribe', '-np', str(np),
            a.bench, str(a.events_rounds)])
    try:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if res.returncode != 0:
            sys.exit(f'benchmark failed: {" ".join(cmd)}\n{res.stdout}\n{res.stderr}')
        ranks = {}
        for line in res.stdout.splitlines():
            f = line.split()
            if len(f) == 5 and f[0] == 'finalize':
                ranks[int(f[1])] = (float(f[3]), float(f[4]))
        m = re.search(r'trace written to .* \((\d+) events(, written by (\d+) ranks in parallel)?',
                      res.stderr)
        if len(ranks) == np and writer == 'none':
            cpu = [ranks[r][0] for r in range(np)]
            return dict(max_cpu=max(cpu), rank0_cpu=cpu[0],
                        wall=max(w for _, w in ranks.values()), events=0, throughput=0)
        if len(ranks) != np or not m:
            sys.exit(f'unexpected output of {" ".join(cmd)}:\n{res.stdout}\n{res.stderr}')
        if (m.group(2) is not None) != (writer == 'parallel'):
            sys.exit(f'the {writer} writer was not the one used:\n{res.stderr}')
        events = int(m.group(1))
        cpu = [ranks[r][0] for r in range(np)]
        per_rank_events = events / np if writer == 'parallel' else events
        writer_cpu = max(cpu) if writer == 'parallel' else cpu[0]
        return dict(max_cpu=max(cpu), rank0_cpu=cpu[0], wall=max(w for _, w in ranks.values()),
                    events=events, throughput=per_rank_events / writer_cpu if writer_cpu else 0)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--launcher', default='mpirun.openmpi')
    ap.add_argument('--np', default='2,4,8,16')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--events-rounds', type=int, default=20000)
    a = ap.parse_args()
    print(f'{"ranks":>5} {"writer":>8} {"max CPU s":>10} {"rank0 CPU s":>11} {"wall s":>8} '
          f'{"events":>9} {"Mev/s/rank":>10}')
    for np in [int(x) for x in a.np.split(',')]:
        results = {'parallel': [], 'serial': [], 'none': []}
        for _ in range(a.rounds):
            for writer in results:
                results[writer].append(run(a, np, writer))
        for writer, rs in results.items():
            def med(k):
                return statistics.median(r[k] for r in rs)
            print(f'{np:>5} {writer:>8} {med("max_cpu"):>10.3f} {med("rank0_cpu"):>11.3f} '
                  f'{med("wall"):>8.3f} {int(med("events")):>9} {med("throughput") / 1e6:>10.2f}',
                  flush=True)


if __name__ == '__main__':
    main()
