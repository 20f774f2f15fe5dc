#!/usr/bin/python3
"""Message-size histograms of the profile (c_msg_sizes.c, issue 17). Runs the program under
`invmw run` and checks, rank by rank, every bin of `histogram`, `histogram_sent` and
`histogram_recv` against the sizes the program moves: a call is binned by the size of its
message in each direction (an 8 B MPI_Sendrecv in 8-15 B, not 16-31 B), and an MPI_Irecv at its
completion by the bytes it received (not "0 B" at its post). Also: profile.txt shows the received
sizes; the headline gives the MPI share without and with MPI_Init, and summary /
ranks[i].mpi_share_without_init agree with the profile's own times; MPI_Finalize, whose shut-down
the profile cannot time, is left out of the per-function table with a footnote.

usage: check_msg_sizes.py --invmw INVMW --launcher MPIRUN --workdir DIR -- PROGRAM
"""
import json
import math
import os
import re
import sys

import invmw_job

SMALL, LARGE = '512-1023', '262144-524287'
# rank -> function -> key -> {bin: count}
WANT = {
    0: {
        'MPI_Sendrecv': {'histogram': {'8-15': 5}, 'histogram_sent': {'8-15': 5},
                         'histogram_recv': {'8-15': 5}},
        'MPI_Allreduce': {'histogram': {'8-15': 3, '4-7': 1},
                          'histogram_sent': {'8-15': 3, '4-7': 1},
                          'histogram_recv': {'8-15': 3, '4-7': 1}},
        'MPI_Send': {'histogram': {'0': 1, SMALL: 3, LARGE: 2},
                     'histogram_sent': {'0': 1, SMALL: 3, LARGE: 2}, 'histogram_recv': {}},
        'MPI_Barrier': {'histogram': {'0': 1}, 'histogram_sent': {}, 'histogram_recv': {}},
        'MPI_Send_init': {'histogram': {'0': 1}, 'histogram_sent': {}, 'histogram_recv': {}},
        'MPI_Start': {'histogram': {'1024-2047': 2}, 'histogram_sent': {'1024-2047': 2},
                      'histogram_recv': {}},
    },
    1: {
        'MPI_Sendrecv': {'histogram': {'8-15': 5}, 'histogram_sent': {'8-15': 5},
                         'histogram_recv': {'8-15': 5}},
        'MPI_Allreduce': {'histogram': {'8-15': 3, '4-7': 1},
                          'histogram_sent': {'8-15': 3, '4-7': 1},
                          'histogram_recv': {'8-15': 3, '4-7': 1}},
        'MPI_Irecv': {'histogram': {LARGE: 2}, 'histogram_sent': {},
                      'histogram_recv': {LARGE: 2}},
        'MPI_Recv': {'histogram': {'0': 1, SMALL: 3}, 'histogram_sent': {},
                     'histogram_recv': {'0': 1, SMALL: 3}},
        'MPI_Waitall': {'histogram': {'0': 1}, 'histogram_sent': {}, 'histogram_recv': {}},
        'MPI_Recv_init': {'histogram': {'0': 1}, 'histogram_sent': {}, 'histogram_recv': {}},
        # A persistent receive is binned at its completion under the call that started it.
        'MPI_Start': {'histogram': {'1024-2047': 2}, 'histogram_sent': {},
                      'histogram_recv': {'1024-2047': 2}},
    },
}

failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print(f'FAIL: {msg}')


def bins(h):
    return {b['bin']: b['count'] for b in h}


def main():
    a, prog = invmw_job.parse()
    out, res = invmw_job.run(a, prog)
    if res.returncode != 0 or 'msg sizes ok' not in res.stdout:
        print(f'FAIL: the program did not run as it should (exit {res.returncode})')
        sys.exit(1)
    profile = json.load(open(os.path.join(out, 'profile.json')))
    text = open(os.path.join(out, 'profile.txt')).read()
    print(text)

    ranks = {r['rank']: r for r in profile['ranks']}
    for rank, fns in WANT.items():
        for fn, keys in fns.items():
            got = ranks[rank]['functions'].get(fn)
            if got is None:
                check(False, f'rank {rank}: {fn} missing from the profile')
                continue
            for key, want in keys.items():
                check(bins(got.get(key, [])) == want,
                      f'rank {rank} {fn}.{key}: {bins(got.get(key, []))}, expected {want}')
    # Totals over ranks are the sums of the ranks' bins.
    for fn in ('MPI_Sendrecv', 'MPI_Allreduce', 'MPI_Irecv', 'MPI_Send', 'MPI_Recv', 'MPI_Start'):
        for key in ('histogram', 'histogram_sent', 'histogram_recv'):
            want = {}
            for rank in WANT:
                for b, c in WANT[rank].get(fn, {}).get(key, {}).items():
                    want[b] = want.get(b, 0) + c
            got = bins(profile['functions'][fn].get(key, []))
            check(got == want, f'functions.{fn}.{key}: {got}, expected {want}')

    # profile.txt shows received sizes, per direction.
    check(re.search(rf'MPI_Irecv\s+recv\s*:\s+\[{LARGE} B\] 2\b', text) is not None,
          'profile.txt has no "MPI_Irecv recv: [262144-524287 B] 2" line')
    check(re.search(rf'MPI_Recv\s+recv\s*:\s+\[0 B\] 1\s+\[{SMALL} B\] 3\b', text) is not None,
          'profile.txt has no "MPI_Recv recv: [0 B] 1 [512-1023 B] 3" line')
    check(re.search(r'MPI_Sendrecv\s+sent\s*:\s+\[8-15 B\] 10\b', text) is not None,
          'profile.txt has no "MPI_Sendrecv sent: [8-15 B] 10" line')
    check(re.search(r'MPI_Sendrecv\s+recv\s*:\s+\[8-15 B\] 10\b', text) is not None,
          'profile.txt has no "MPI_Sendrecv recv: [8-15 B] 10" line')

    # MPI share without start-up, recomputed from the profile's own times.
    s = profile['summary']
    num = den = 0.0
    for r in profile['ranks']:
        init = sum(r['functions'].get(f, {}).get('time_s', 0.0)
                   for f in ('MPI_Init', 'MPI_Init_thread'))
        # The MPI_Init call as the application saw it (the library's and invmw's start-up).
        mpi = max(0.0, r['mpi_s'] - init)
        wall = max(0.0, r['wall_s'] - max(r['mpi_init_s'], init))
        num += mpi
        den += wall
        check('mpi_share_without_init' in r and math.isclose(
            r['mpi_share_without_init'], mpi / wall if wall > 0 else 0.0, rel_tol=1e-9,
            abs_tol=1e-12), f'rank {r["rank"]}: mpi_share_without_init wrong or missing')
    check('mpi_share_without_init' in s and math.isclose(
        s['mpi_share_without_init'], num / den, rel_tol=1e-9),
        f'summary.mpi_share_without_init {s.get("mpi_share_without_init")}, expected {num / den}')
    m = re.search(r'MPI share:\s+([\d.]+) % of wall time after MPI_Init \(([\d.]+) % with MPI_Init\)',
                  text)
    check(m is not None, 'profile.txt headline does not give the MPI share without and with MPI_Init')
    if m:
        check(abs(float(m.group(1)) - 100 * s.get('mpi_share_without_init', -1)) < 0.051,
              'headline share without MPI_Init differs from summary.mpi_share_without_init')
        check(abs(float(m.group(2)) - 100 * s['mpi_share']) < 0.051,
              'headline share with MPI_Init differs from summary.mpi_share')

    # MPI_Finalize: not in the per-function (imbalance) table, with a footnote saying why.
    table = text.split('Per function, all ranks')[1].split('\nPer rank\n')[0]
    check(not re.search(r'^MPI_Finalize\s', table, re.M),
          'MPI_Finalize is still a row of the per-function imbalance table')
    check(re.search(r'MPI_Finalize, 2 calls, is not in this table', table) is not None,
          'no footnote on MPI_Finalize under the per-function table')
    check(profile['functions']['MPI_Finalize']['calls'] == 2, 'MPI_Finalize calls not 2')

    if failures:
        sys.exit(1)
    print('check passed')


if __name__ == '__main__':
    main()
