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
import re
import sys

import finalize_bench as fb

WRITERS = ['parallel', 'serial', 'none']


def run(a, np, writer):
    trace = [] if writer == 'none' else ['--trace', '--env', f'INVMW_TRACE_WRITER={writer}']

    def inspect(res, run_dir, summary, cmd):
        if writer == 'none':
            return dict(summary, events=0, throughput=0)
        m = re.search(r'trace written to .* \((\d+) events(, written by (\d+) ranks in parallel)?',
                      res.stderr)
        if not m:
            fb.unexpected(cmd, res)
        if (m.group(2) is not None) != (writer == 'parallel'):
            sys.exit(f'the {writer} writer was not the one used:\n{res.stderr}')
        events = int(m.group(1))
        per_rank_events = events / np if writer == 'parallel' else events
        writer_cpu = summary['max_cpu'] if writer == 'parallel' else summary['rank0_cpu']
        return dict(summary, events=events,
                    throughput=per_rank_events / writer_cpu if writer_cpu else 0)
    return fb.run(a, np, trace, a.events_rounds, 'invmw-finbench-', inspect)


def main():
    a = fb.arguments(__doc__.split('\n')[0], '--events-rounds', 20000)
    print(f'{"ranks":>5} {"writer":>8} {"max CPU s":>10} {"rank0 CPU s":>11} {"wall s":>8} '
          f'{"events":>9} {"Mev/s/rank":>10}')
    for np, med in fb.rounds(a, WRITERS, lambda np, w: run(a, np, w)):
        for writer in WRITERS:
            print(f'{np:>5} {writer:>8} {med(writer, "max_cpu"):>10.3f} '
                  f'{med(writer, "rank0_cpu"):>11.3f} {med(writer, "wall"):>8.3f} '
                  f'{int(med(writer, "events")):>9} {med(writer, "throughput") / 1e6:>10.2f}',
                  flush=True)


if __name__ == '__main__':
    main()
