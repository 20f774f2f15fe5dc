#!/usr/bin/python3
"""Checks of what a trace means, on runs of small programs under `invmw run --trace`.

--case leaked_irecv (c_leaked_irecv.c): receives posted and never completed keep their place
  in MPI's matching order:
  - the program's own output (every waited receive got the long message) is unchanged;
  - `invmw trace check` passes and warns about each receive that a message matched but that
    never completed (the short messages), naming rank, peer, tag and byte count;
  - independently, with the OTF2 Python reader: every MpiIrecvRequest carries invmw's
    posted_source/posted_tag/posted_comm attributes, and matching sends to receives in post
    order, completed or not (cancelled receives left out), pairs equal lengths everywhere and
    leaves exactly the short messages on the never-completed receives.
--case poll (c_poll.c): coalesced polls keep the application's computation:
  - the trace coalesced rank 0's unsuccessful MPI_Test calls (a visit with
    invmw:coalesced_calls > 1 exists), so the check below is about coalescing;
  - `invmw analyze`'s computation equals the rank's analysis window minus the profile's time
    in MPI inside it (all MPI time but MPI_Init's and MPI_Finalize's), within 1 %;
  - analysis.json's call count equals the profile's calls (without MPI_Init/MPI_Finalize),
    coalesced calls included.

usage: check_trace_semantics.py --case CASE --invmw INVMW --launcher MPIRUN --workdir DIR -- PROGRAM
"""
import collections
import json
import os
import re
import subprocess
import sys

import invmw_job

import otf2

STEPS, SHORT, LONG = 40, 84, 504


def fail(msg):
    print(f'FAIL: {msg}')
    sys.exit(1)


def run_traced(a, prog, expect_stdout):
    """Runs the program on 2 ranks under `invmw run --trace`; returns the run directory."""
    out, res = invmw_job.run(a, prog, trace=True)
    if res.returncode != 0 or expect_stdout not in res.stdout:
        fail(f'the program did not run as it should (exit {res.returncode}, expected '
             f'"{expect_stdout}" in its output)')
    return out


def case_leaked_irecv(a, prog):
    out = run_traced(a, prog, f'rank 1: {STEPS} long receives')
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


def case_poll(a, prog):
    out = run_traced(a, prog, 'value 42')
    an = subprocess.run([a.invmw, 'analyze', '--quiet', out], capture_output=True, text=True,
                        timeout=120)
    if an.returncode != 0:
        fail(f'invmw analyze failed: {an.stderr}')
    analysis = json.load(open(os.path.join(out, 'analysis.json')))
    profile = json.load(open(os.path.join(out, 'profile.json')))

    largest = 0
    with otf2.reader.open(os.path.join(out, 'traces.otf2')) as trace:
        for loc, ev in trace.events:
            if type(ev).__name__ == 'Enter':
                for attr, value in (ev.attributes or {}).items():
                    if attr.name == 'invmw:coalesced_calls':
                        largest = max(largest, int(value))
    if largest < 2:
        fail('no coalesced visit of unsuccessful tests in the trace: nothing was tested')
    print(f'largest coalesced visit: {largest} calls')

    for ra in analysis['ranks']:
        rank = ra['rank']
        rp = next(r for r in profile['ranks'] if r['rank'] == rank)
        fin = rp['functions'].get('MPI_Finalize', {}).get('time_s', 0.0)
        window = ra['end_s'] - ra['start_s']
        # MPI_Init's time in the profile includes invmw's start-up (invmw_init_s).
        init = sum(rp['functions'].get(n, {}).get('time_s', 0.0)
                   for n in ('MPI_Init', 'MPI_Init_thread'))
        in_mpi = rp['mpi_s'] - init - fin
        expected = window - in_mpi
        comp = ra['total']['computation']
        print(f'rank {rank}: window {window:.6f} s, profile MPI in it {in_mpi:.6f} s, '
              f'computation {comp:.6f} s (expected {expected:.6f} s)')
        if abs(comp - expected) > 0.01 * window:
            fail(f'rank {rank}: computation {comp:.6f} s is not the window minus the profile\'s '
                 f'MPI time ({expected:.6f} s) within 1 %')
        calls = sum(f['calls'] for name, f in rp['functions'].items()
                    if name not in ('MPI_Init', 'MPI_Init_thread', 'MPI_Finalize'))
        if ra['calls'] != calls:
            fail(f'rank {rank}: analysis.json counts {ra["calls"]} calls, the profile {calls}')
    print('OK: computation and call counts agree with the profile')


def main():
    a, prog = invmw_job.parse(
        lambda ap: ap.add_argument('--case', required=True, choices=('leaked_irecv', 'poll')))
    globals()['case_' + a.case](a, prog)


if __name__ == '__main__':
    main()
