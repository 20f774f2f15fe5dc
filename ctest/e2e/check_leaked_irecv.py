#!/usr/bin/python3
"""Receives posted and never completed (c_leaked_irecv.c) keep their place in MPI's matching
order. Runs the program under `invmw run --trace`, then checks:
  - the program's own output (every waited receive got the long message) is unchanged;
  - `invmw trace check` passes and warns about each receive that a message matched but that
    never completed (the short messages), naming rank, peer, tag and byte count;
  - independently, with the OTF2 Python reader: every MpiIrecvRequest carries invmw's
    posted_source/posted_tag/posted_comm attributes, and matching sends to receives in post
    order, completed or not (cancelled receives left out), pairs equal lengths everywhere and
    leaves exactly the short messages on the never-completed receives.

usage: check_leaked_irecv.py --invmw INVMW --launcher MPIRUN --workdir DIR -- PROGRAM
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

import otf2

STEPS, SHORT, LONG = 40, 84, 504


def fail(msg):
    print(f'FAIL: {msg}')
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('prog', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.prog[1:] if a.prog and a.prog[0] == '--' else a.prog
    if os.path.isdir(a.workdir):
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir)
    out = os.path.join(a.workdir, 'run')
    res = subprocess.run([a.invmw, 'run', '--quiet', '--trace', '--out', out, '--',
                          a.launcher, '--oversubscribe', '-np', '2'] + prog,
                         capture_output=True, text=True, timeout=120)
    print(res.stdout, res.stderr)
    if res.returncode != 0:
        fail(f'invmw run exited {res.returncode}')
    if f'rank 1: {STEPS} long receives' not in res.stdout:
        fail('the program did not report every waited receive getting the long message')

    chk = subprocess.run([a.invmw, 'trace', 'check', out], capture_output=True, text=True,
                         timeout=120)
    print(chk.stdout, chk.stderr)
    if chk.returncode != 0 or 'check passed' not in chk.stdout:
        fail(f'invmw trace check failed (exit {chk.returncode})')
    listed = re.findall(r'rank 1: a receive posted at \S+ s from rank 0, tag 7 on MPI_COMM_WORLD '
                        rf'was matched by a message of {SHORT} bytes but never completed',
                        chk.stdout)
    more = re.search(r'\.\.\. and (\d+) more receives matched by a message but never completed',
                     chk.stdout)
    named = len(listed) + (int(more.group(1)) if more else 0)
    if named != STEPS:
        fail(f'trace check named {named} never-completed matched receives, expected {STEPS}')

    # Independent reader: match in post order ourselves.
    sends = collections.defaultdict(list)  # (comm, src, dst, tag) -> [length]
    recvs = collections.defaultdict(list)  # key -> [(request, rank)] in post order
    posted = {}  # (rank, request) -> key
    done = {}    # (rank, request) -> received length
    cancelled = set()
    with otf2.reader.open(os.path.join(out, 'traces.otf2')) as trace:
        for loc, ev in trace.events:
            rank = int(re.search(r'(\d+)', loc.group.name).group(1))
            name = type(ev).__name__
            if name in ('MpiSend', 'MpiIsend'):
                members = list(ev.communicator.group.members)
                sends[(ev.communicator.name, rank, members[ev.receiver] if isinstance(
                    members[ev.receiver], int) else ev.receiver, ev.msg_tag)].append(ev.msg_length)
            elif name == 'MpiIrecvRequest':
                attrs = {k.name: v for k, v in (ev.attributes or {}).items()}
                for k in ('invmw:posted_source', 'invmw:posted_tag', 'invmw:posted_comm'):
                    if k not in attrs:
                        fail(f'rank {rank}: MpiIrecvRequest {ev.request_id} lacks {k}')
                comm = attrs['invmw:posted_comm']
                key = (comm.name, attrs['invmw:posted_source'], rank, attrs['invmw:posted_tag'])
                posted[(rank, ev.request_id)] = key
                recvs[key].append((ev.request_id, rank))
            elif name == 'MpiIrecv':
                done[(rank, ev.request_id)] = ev.msg_length
            elif name == 'MpiRequestCancelled':
                cancelled.add((rank, ev.request_id))
    if not cancelled:
        fail('the cancelled receive has no MpiRequestCancelled record')
    never = 0
    for key, rl in recvs.items():
        rl = [r for r in rl if (r[1], r[0]) not in cancelled]
        sl = sends.get(key, [])
        if len(sl) != len(rl):
            fail(f'{key}: {len(sl)} sends, {len(rl)} receives posted (not cancelled)')
        for length, (req, rank) in zip(sl, rl):
            if (rank, req) in done:
                if done[(rank, req)] != length:
                    fail(f'{key}: request {req} received {done[(rank, req)]}, its send {length}')
                if length != LONG:
                    fail(f'{key}: completed request {req} got a {length}-byte message')
            else:
                never += 1
                if length != SHORT:
                    fail(f'{key}: never-completed request {req} matched {length} bytes')
    if never != STEPS:
        fail(f'{never} never-completed receives matched a message, expected {STEPS}')
    print(f'OK: {STEPS} leaked receives took the short messages; every completed receive the '
          f'long one; trace check named all {named}')


if __name__ == '__main__':
    main()
