#!/usr/bin/python3
"""A call cut off by a crash (c_cut_off.c, issue 17). Runs the program with 3 ranks under
`invmw run --trace` (rank 2 kills itself after WAIT_S seconds while rank 0 waits for it in
MPI_Recv, tag 7, and rank 1 in MPI_Wait on an MPI_Irecv, tag 9; the launcher then ends the
survivors), then checks:
  - profile.json: ranks 0 and 1 have in_call with the function, peer 2, the tag, communicator
    0 and at least the time rank 2 slept before dying; profile.txt says it in words;
  - `invmw trace check` passes; with the OTF2 Python reader, each survivor's last region visit
    is that call: an Enter carrying invmw:posted_source/posted_tag and a Leave carrying
    invmw:cut_off;
  - `invmw analyze` counts the call as idle (not computation): idle >= WAIT_S - 0.1 s and
    computation < 0.5 s on both survivors.

usage: check_cut_off.py --invmw INVMW --launcher MPIRUN --workdir DIR -- PROGRAM
"""
import json
import os
import re
import subprocess
import sys

import invmw_job

import otf2

WAIT_S = 1.0
EXPECT = {0: ('MPI_Recv', 7), 1: ('MPI_Wait', 9)}


def fail(msg):
    print(f'FAIL: {msg}')
    sys.exit(1)


def main():
    a, prog = invmw_job.parse()
    out, res = invmw_job.run(a, prog, np=3, trace=True, timeout=100)
    if res.returncode == 0:
        fail('the job ended normally: rank 2 was to die')
    if 'rank 2 dies' not in res.stdout:
        fail('the program did not reach the point where rank 2 dies')

    with open(os.path.join(out, 'profile.json')) as f:
        prof = json.load(f)
    with open(os.path.join(out, 'profile.txt')) as f:
        text = f.read()
    ranks = {r['rank']: r for r in prof['ranks']}
    for rank, (fn, tag) in EXPECT.items():
        if rank not in ranks:
            fail(f'profile.json has no rank {rank}')
        c = ranks[rank].get('in_call')
        if not isinstance(c, dict):
            fail(f'rank {rank}: profile.json in_call is {c!r}, expected the cut-off {fn}')
        got = (c.get('function'), c.get('peer'), c.get('tag'), c.get('communicator'))
        if got != (fn, 2, tag, 0):
            fail(f'rank {rank}: in_call (function, peer, tag, communicator) = {got}, '
                 f'expected {(fn, 2, tag, 0)}')
        if c.get('peer_is') != 'source':
            fail(f'rank {rank}: in_call peer_is {c.get("peer_is")!r}, expected "source"')
        secs = c.get('seconds')
        if not isinstance(secs, (int, float)) or secs < WAIT_S - 0.1:
            fail(f'rank {rank}: in_call seconds {secs}, expected >= {WAIT_S - 0.1}')
        pat = (rf'rank {rank} was in {fn} from rank 2, tag {tag}, for \d+\.\d\d s when the run '
               r'ended')
        if not re.search(pat, text):
            fail(f'profile.txt lacks "{pat}"')

    chk = subprocess.run([a.invmw, 'trace', 'check', out], capture_output=True, text=True,
                         timeout=100)
    print(chk.stdout, chk.stderr)
    if chk.returncode != 0 or 'check passed' not in chk.stdout:
        fail(f'invmw trace check failed (exit {chk.returncode})')
    visits = {}
    with otf2.reader.open(os.path.join(out, 'traces.otf2')) as trace:
        for loc, ev in trace.events:
            if type(ev).__name__ not in ('Enter', 'Leave'):
                continue
            rank = int(re.search(r'(\d+)', loc.group.name).group(1))
            attrs = {k.name: v for k, v in (ev.attributes or {}).items()}
            visits.setdefault(rank, []).append((type(ev).__name__, ev.region.name, attrs))
    for rank, (fn, tag) in EXPECT.items():
        ev = visits.get(rank, [])
        if len(ev) < 2:
            fail(f'rank {rank}: {len(ev)} Enter/Leave events in the trace')
        (k1, r1, a1), (k2, r2, a2) = ev[-2], ev[-1]
        if (k1, r1, k2, r2) != ('Enter', fn, 'Leave', fn):
            fail(f'rank {rank}: the trace ends with {k1} {r1}, {k2} {r2}; expected the cut-off '
                 f'{fn}')
        if a2.get('invmw:cut_off') != 1:
            fail(f'rank {rank}: the Leave of {fn} lacks invmw:cut_off=1 ({a2})')
        if a1.get('invmw:posted_source') != 2 or a1.get('invmw:posted_tag') != tag:
            fail(f'rank {rank}: the Enter of the cut-off {fn} carries {a1}, expected source 2, '
                 f'tag {tag}')
        for k, r, at in ev[:-1]:
            if 'invmw:cut_off' in at:
                fail(f'rank {rank}: an earlier {k} of {r} is marked cut off')

    aj = os.path.join(a.workdir, 'analysis.json')
    an = subprocess.run([a.invmw, 'analyze', '--quiet', '--json', aj, out], capture_output=True,
                        text=True, timeout=100)
    print(an.stdout, an.stderr)
    if an.returncode != 0:
        fail(f'invmw analyze exited {an.returncode}')
    with open(aj) as f:
        ana = json.load(f)
    arank = {r['rank']: r for r in ana['ranks']}
    for rank in EXPECT:
        tot = arank[rank]['total']
        if tot['idle'] < WAIT_S - 0.1 or tot['computation'] >= 0.5:
            fail(f'rank {rank}: analyze gives idle {tot["idle"]:.3f} s, computation '
                 f'{tot["computation"]:.3f} s; expected the cut-off wait (>= {WAIT_S} s) as idle')
    print('OK: both survivors name their cut-off call in profile.json, profile.txt and the '
          'trace, and analyze counts it as idle')


if __name__ == '__main__':
    main()
