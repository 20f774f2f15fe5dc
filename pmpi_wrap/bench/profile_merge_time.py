#!/usr/bin/env python3
"""MPI_Finalize's profile merge: the tree (INVMW_PROFILE_MERGE=tree) against the gather to rank 0
(=gather), issue 23.

Per rank count, runs bench/mpi_many_functions (60 distinct MPI functions on every rank) under
`invmw run`, untraced, in interleaved rounds so that machine noise hits every variant alike:
  gather       rank 0 receives every rank's table and builds the whole profile
  tree         aggregates reduced over a binomial tree, per-rank files, rank 0 copies them into
               profile.json (the default up to INVMW_PROFILE_INLINE_RANKS=64 ranks)
  tree-files   the same, the per-rank tables left in their files (INVMW_PROFILE_INLINE_RANKS=0,
               the default above 64 ranks; `invmw run` adds them after the job)
  none         no profile (INVMW_PROFILE_ENABLE=0): MPI_Finalize without any merge
Prints, per rank count and variant, the medians over the rounds of the process CPU time spent
inside MPI_Finalize: the largest over the ranks, rank 0's, and both minus the "none" row (the
merge alone), the largest wall time for information, and the bytes rank 0 received in the merge
(profile.json "merge"). CPU time, not wall time: the machine is shared and oversubscribed.

usage: profile_merge_time.py --invmw BIN/invmw --lib LIB/libinvmw.so --bench BIN/mpi_many_functions
                             [--np 2,4,8,16] [--rounds 3] [--bench-rounds 3]
                             [--launcher mpirun.openmpi]
"""
import json
import os
import sys

import finalize_bench as fb

VARIANTS = {
    'gather': ['INVMW_PROFILE_MERGE=gather'],
    'tree': ['INVMW_PROFILE_MERGE=tree'],
    'tree-files': ['INVMW_PROFILE_MERGE=tree', 'INVMW_PROFILE_INLINE_RANKS=0'],
    'none': ['INVMW_PROFILE_ENABLE=0'],
}


def run(a, np, variant):
    opts = ['--quiet']
    for kv in VARIANTS[variant]:
        opts += ['--env', kv]

    def inspect(res, run_dir, summary, cmd):
        received = 0
        if variant != 'none':
            with open(os.path.join(run_dir, 'profile.json')) as f:
                merge = json.load(f).get('merge', {})
            want = 'gather' if variant == 'gather' else 'tree'
            if merge.get('method') != want:
                sys.exit(f'{variant}: the profile was merged by {merge}:\n{res.stderr}')
            received = merge.get('rank0_bytes_received', 0)
        return dict(summary, received=received)
    return fb.run(a, np, opts, a.bench_rounds, 'invmw-mergebench-', inspect)


def main():
    a = fb.arguments(__doc__.split('\n')[0], '--bench-rounds', 3)
    print(f'{"ranks":>5} {"variant":>10} {"max CPU s":>10} {"rank0 CPU s":>11} '
          f'{"max-none s":>10} {"rank0-none s":>12} {"wall s":>8} {"rank0 recv B":>12}')
    for np, med in fb.rounds(a, VARIANTS, lambda np, v: run(a, np, v)):
        for v in VARIANTS:
            print(f'{np:>5} {v:>10} {med(v, "max_cpu"):>10.4f} {med(v, "rank0_cpu"):>11.4f} '
                  f'{med(v, "max_cpu") - med("none", "max_cpu"):>10.4f} '
                  f'{med(v, "rank0_cpu") - med("none", "rank0_cpu"):>12.4f} '
                  f'{med(v, "wall"):>8.3f} {int(med(v, "received")):>12}', flush=True)


if __name__ == '__main__':
    main()
