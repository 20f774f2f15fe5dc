#!/usr/bin/env python3
"""End-to-end checks of the PVM preload (pvm_wrap/CMakeLists.txt registers them).

  known  runs examples/pvm_known.c (4 tasks, traffic known exactly; see its header comment)
         under `invmw run --trace` and checks the profile's counts and bytes (in total and
         per rank), the tid -> rank table, that the group server's traffic is kept apart, the
         peers (as ranks) of pvm_trecv, pvm_nrecv and pvm_probe, hits and misses, in the raw
         trace records, and that in the OTF2 trace (read with otf2-print) every receive is
         matched by a send with the same sender, receiver, tag and size, inside the function
         that made it.
  nopvm  runs a program without PVM with the library preloaded: same output, no PVM symbol
         bound (LD_DEBUG=bindings), nothing written, nothing printed about PVM.
  static runs examples/pvm_static.c linked with libpvm3.a, whose PVM calls cannot be
         interposed: alone under `invmw run` (the run must pick the PVM preload although ldd
         shows no libpvm3), and as the worker of the same program linked with the shared
         libpvm3 (the preload reaches it through PVM_EXPORT). Checks that `invmw run` names
         the program as statically linked, that none of its calls is recorded, and that exit
         status and output equal a plain run's.

Needs a running daemon for `known` and `static` (the pvmd fixture). Exits 1 with a message naming the
first mismatch.
"""
import argparse
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys

NWORK = 3
WORKERS = range(1, NWORK + 1)  # worker w is rank w (spawn order)
XDR_INT, XDR_DOUBLE, XDR_FLOAT = 4, 8, 4
# Worker w -> master: tag 16, 16*w bytes (pvm_nrecv); tag 15, 5*w floats (pvm_trecv); each
# task's pvm_reduce contribution: 4 ints, tag 14, to the master (instance 0).
NRECV_BYTES = {w: 16 * w for w in WORKERS}
TRECV_BYTES = {w: 5 * w * XDR_FLOAT for w in WORKERS}
REDUCE_BYTES = 4 * XDR_INT

# common/event_format.h: EventFileHeader and the 64-byte EventRecord.
EVENT_RECORD = struct.Struct('<QQQQQiiIHBBii')
K_CALL, K_TEST_FAIL, K_SEND_PART, K_RECV_PART = 0, 2, 7, 8


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def expect(what, got, want):
    if got != want:
        fail('%s: got %r, expected %r' % (what, got, want))
    print('ok   %s = %r' % (what, got))


def check_known(a):
    shutil.rmtree(a.out, ignore_errors=True)
    r = subprocess.run([a.invmw, 'run', '--trace', '--out', a.out, '--', a.prog],
                       capture_output=True, text=True, timeout=60)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        fail('invmw run exited with %d' % r.returncode)
    prof = json.load(open(os.path.join(a.out, 'profile.json')))
    f = prof['functions']
    expect('ranks', prof['summary']['ranks'], NWORK + 1)
    expect('incomplete', prof['incomplete'], False)
    expect('metadata.mpi_flavor', prof['metadata']['mpi_flavor'], 'pvm')
    tasks = prof['pvm']['tasks']
    expect('rank 0 is the master (no parent)', tasks[0]['parent'], '')
    expect('ranks 1..3 are the master\'s children',
           [t['parent'] for t in tasks[1:]], [tasks[0]['tid']] * NWORK)

    def fn(name, key):
        return f.get(name, {}).get(key, 0)

    # Sends: 3 x 100 ints, and each worker's tags 16 and 15; mcast: 50 doubles to 3 workers;
    # psend: 3 x 25 doubles.
    expect('pvm_send calls', fn('pvm_send', 'calls'), 3 * NWORK)
    expect('pvm_send bytes', fn('pvm_send', 'bytes_sent'),
           NWORK * 100 * XDR_INT + sum(NRECV_BYTES.values()) + sum(TRECV_BYTES.values()))
    expect('pvm_mcast calls', fn('pvm_mcast', 'calls'), 1)
    expect('pvm_mcast bytes', fn('pvm_mcast', 'bytes_sent'), NWORK * 50 * XDR_DOUBLE)
    expect('pvm_bcast calls', fn('pvm_bcast', 'calls'), 1)
    expect('pvm_bcast bytes', fn('pvm_bcast', 'bytes_sent'), NWORK * 8 * XDR_INT)
    expect('pvm_psend calls', fn('pvm_psend', 'calls'), NWORK)
    expect('pvm_psend bytes', fn('pvm_psend', 'bytes_sent'), NWORK * 25 * 8)
    expect('pvm_precv calls', fn('pvm_precv', 'calls'), NWORK)
    expect('pvm_precv bytes', fn('pvm_precv', 'bytes_recv'), NWORK * 25 * 8)
    # Workers: recv of tag 10, 11 and 13; the group library's receives are not counted here.
    expect('pvm_recv calls', fn('pvm_recv', 'calls'), 3 * NWORK)
    expect('pvm_recv bytes', fn('pvm_recv', 'bytes_recv'),
           NWORK * (100 * XDR_INT + 50 * XDR_DOUBLE + 8 * XDR_INT))
    expect('pvm_barrier calls', fn('pvm_barrier', 'calls'), 2 * (NWORK + 1))
    expect('pvm_joingroup calls', fn('pvm_joingroup', 'calls'), NWORK + 1)
    expect('pvm_spawn calls', fn('pvm_spawn', 'calls'), 1)
    expect('pvm_pkint calls', fn('pvm_pkint', 'calls'), NWORK + 1)
    expect('pvm_pkint bytes', fn('pvm_pkint', 'bytes_sent'), (NWORK * 100 + 8) * 4)
    expect('pvm_upkdouble bytes', fn('pvm_upkdouble', 'bytes_recv'), NWORK * 50 * 8)
    expect('pvm_upkint calls', fn('pvm_upkint', 'calls'), 2 * NWORK)
    # The receives that may find nothing: one miss each, then one hit per worker.
    expect('pvm_trecv calls', fn('pvm_trecv', 'calls'), NWORK + 1)
    expect('pvm_trecv bytes', fn('pvm_trecv', 'bytes_recv'), sum(TRECV_BYTES.values()))
    expect('pvm_nrecv calls', fn('pvm_nrecv', 'calls'), NWORK + 1)
    expect('pvm_nrecv bytes', fn('pvm_nrecv', 'bytes_recv'), sum(NRECV_BYTES.values()))
    expect('pvm_probe calls', fn('pvm_probe', 'calls'), NWORK + 1)
    expect('pvm_probe bytes', (fn('pvm_probe', 'bytes_sent'), fn('pvm_probe', 'bytes_recv')),
           (0, 0))
    expect('pvm_pkbyte calls, bytes', (fn('pvm_pkbyte', 'calls'), fn('pvm_pkbyte', 'bytes_sent')),
           (NWORK, sum(NRECV_BYTES.values())))
    expect('pvm_upkbyte calls, bytes',
           (fn('pvm_upkbyte', 'calls'), fn('pvm_upkbyte', 'bytes_recv')),
           (NWORK, sum(NRECV_BYTES.values())))
    expect('pvm_pkfloat calls, bytes',
           (fn('pvm_pkfloat', 'calls'), fn('pvm_pkfloat', 'bytes_sent')),
           (NWORK, sum(TRECV_BYTES.values())))
    expect('pvm_upkfloat calls, bytes',
           (fn('pvm_upkfloat', 'calls'), fn('pvm_upkfloat', 'bytes_recv')),
           (NWORK, sum(TRECV_BYTES.values())))
    # pvm_reduce: the group library sends each worker's contribution to the root, which
    # receives them all (its pvmgs lookups are counted apart).
    expect('pvm_reduce calls', fn('pvm_reduce', 'calls'), NWORK + 1)
    expect('pvm_reduce bytes (sent, received)',
           (fn('pvm_reduce', 'bytes_sent'), fn('pvm_reduce', 'bytes_recv')),
           (NWORK * REDUCE_BYTES, NWORK * REDUCE_BYTES))
    check_known_per_rank(prof)
    if fn('pvmgs', 'calls') <= 0:
        fail('no traffic with the group server recorded under "pvmgs"')
    print('ok   pvmgs messages = %d (kept apart)' % fn('pvmgs', 'calls'))
    for rk in prof['ranks']:
        expect('rank %d end' % rk['rank'], rk['end'], 'finalize')
    # The sampler ran in every task; the merge gave each task's samples its rank.
    res = {r['rank']: r for r in prof.get('resources', {}).get('ranks', [])}
    expect('ranks with resource summaries', sorted(res), list(range(NWORK + 1)))
    for rank, r in sorted(res.items()):
        if r.get('samples', 0) < 1 or r.get('rss_peak_bytes', 0) <= 0:
            fail('rank %d: resource summary without samples: %s' % (rank, r))
    expect('node leaders (one host)', sum(1 for r in res.values() if r.get('node_leader')), 1)

    check_known_peers(a.out)

    # The trace, read back independently.
    archive = os.path.join(a.out, 'traces.otf2')
    if not os.path.exists(archive):
        fail('no traces.otf2')
    out = subprocess.run([a.otf2_print, archive], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        fail('otf2-print failed: ' + out.stderr)
    metric_records = sum(1 for line in out.stdout.splitlines() if line.startswith('METRIC '))
    if metric_records < NWORK + 1:
        fail('%d METRIC records in the trace; expected samples of every task' % metric_records)
    print('ok   %d sampler METRIC records in the trace' % metric_records)
    # otf2-print: "MPI_SEND  <loc>  <time>  Receiver: R ... Tag: T, Length: L", between the
    # ENTER and LEAVE of the function that sent or received.
    sends, recvs = collections.Counter(), collections.Counter()
    by_func = collections.defaultdict(collections.Counter)  # (kind, function) -> messages
    regions = collections.defaultdict(list)  # location -> open regions
    for line in out.stdout.splitlines():
        m = re.match(r'(ENTER|LEAVE)\s+(\d+)\s+\d+\s+Region: "([^"]+)"', line)
        if m:
            kind, loc, region = m.groups()
            if kind == 'ENTER':
                regions[loc].append(region)
            elif regions[loc]:
                regions[loc].pop()
            continue
        m = re.match(r'(MPI_SEND|MPI_RECV)\s+(\d+)\s+\d+\s+(Receiver|Sender): (\d+).*'
                     r'Tag: (\d+), Length: (\d+)', line)
        if not m:
            continue
        kind, loc, _, peer, tag, length = m.groups()
        me = int(loc) & 0xffffffff
        func = regions[loc][-1] if regions[loc] else None
        if kind == 'MPI_SEND':
            msg = (me, int(peer), int(tag), int(length))
            sends[msg] += 1
        else:
            msg = (int(peer), me, int(tag), int(length))
            recvs[msg] += 1
        by_func[(kind, func)][msg] += 1
    # send x 3 + 6, mcast x 3, bcast x 3, psend x 3, reduce x 3; the same number of receives.
    expect('trace sends', sum(sends.values()), 7 * NWORK)
    expect('trace receives', sum(recvs.values()), 7 * NWORK)
    unmatched = recvs - sends
    if unmatched:
        fail('receives without a matching send (sender, receiver, tag, bytes): %s' %
             dict(unmatched))
    print('ok   every receive matched by its send')
    # Messages as (sender rank, receiver rank, tag, bytes), by the function that made them.
    expect('trace: pvm_trecv receives', dict(by_func[('MPI_RECV', 'pvm_trecv')]),
           {(w, 0, 15, TRECV_BYTES[w]): 1 for w in WORKERS})
    expect('trace: pvm_nrecv receives', dict(by_func[('MPI_RECV', 'pvm_nrecv')]),
           {(w, 0, 16, NRECV_BYTES[w]): 1 for w in WORKERS})
    expect('trace: pvm_reduce receives', dict(by_func[('MPI_RECV', 'pvm_reduce')]),
           {(w, 0, 14, REDUCE_BYTES): 1 for w in WORKERS})
    expect('trace: pvm_reduce sends', dict(by_func[('MPI_SEND', 'pvm_reduce')]),
           {(w, 0, 14, REDUCE_BYTES): 1 for w in WORKERS})
    expect('trace: workers\' pvm_send (tags 15, 16)',
           {k: v for k, v in by_func[('MPI_SEND', 'pvm_send')].items() if k[2] in (15, 16)},
           {**{(w, 0, 15, TRECV_BYTES[w]): 1 for w in WORKERS},
            **{(w, 0, 16, NRECV_BYTES[w]): 1 for w in WORKERS}})
    chk = subprocess.run([a.invmw, 'trace', 'check', a.out], capture_output=True, text=True)
    print(chk.stdout[-2000:] + chk.stderr[-2000:])
    if chk.returncode != 0:
        fail('invmw trace check failed')


def check_known_per_rank(prof):
    """Per-rank counts: each worker's messages differ in size, so a wrong tid -> rank mapping
    shows."""
    ranks = {r['rank']: r['functions'] for r in prof['ranks']}

    def cbb(rank, name):
        f = ranks[rank].get(name, {})
        return (f.get('calls', 0), f.get('bytes_sent', 0), f.get('bytes_recv', 0))

    expect('rank 0 pvm_trecv (calls, sent, received)', cbb(0, 'pvm_trecv'),
           (NWORK + 1, 0, sum(TRECV_BYTES.values())))
    expect('rank 0 pvm_nrecv (calls, sent, received)', cbb(0, 'pvm_nrecv'),
           (NWORK + 1, 0, sum(NRECV_BYTES.values())))
    expect('rank 0 pvm_probe (calls, sent, received)', cbb(0, 'pvm_probe'), (NWORK + 1, 0, 0))
    expect('rank 0 pvm_reduce (calls, sent, received)', cbb(0, 'pvm_reduce'),
           (1, 0, NWORK * REDUCE_BYTES))
    for w in WORKERS:
        expect('rank %d pvm_send (calls, sent, received)' % w, cbb(w, 'pvm_send'),
               (2, NRECV_BYTES[w] + TRECV_BYTES[w], 0))
        expect('rank %d pvm_reduce (calls, sent, received)' % w, cbb(w, 'pvm_reduce'),
               (1, REDUCE_BYTES, 0))
        for name in ('pvm_trecv', 'pvm_nrecv', 'pvm_probe'):
            expect('rank %d %s calls' % (w, name), cbb(w, name)[0], 0)


def raw_events(out, rank):
    """Rank's merged raw trace records as (function, type, peer, tag, sent, received)."""
    names = []
    with open(os.path.join(out, 'raw', 'defs-%06d.jsonl' % rank)) as f:
        for line in f:
            d = json.loads(line)
            if d.get('type') == 'functions':
                names = d['names']
    with open(os.path.join(out, 'raw', 'events-%06d-000.bin' % rank), 'rb') as f:
        data = f.read()
    header_size, record_size = struct.unpack_from('<II', data, 8)
    if record_size != EVENT_RECORD.size:
        fail('events-%06d-000.bin: records of %d bytes' % (rank, record_size))
    events = []
    for off in range(header_size, len(data) - record_size + 1, record_size):
        (_, _, sent, recv, _, peer, tag, _, func, typ, _, _, _) = EVENT_RECORD.unpack_from(data, off)
        events.append((names[func], typ, peer, tag, sent, recv))
    return events


def check_known_peers(out):
    """Peers of the receives that may find nothing, as the merge wrote them (tids -> ranks).
    pvm_probe's peer is recorded only here: the OTF2 trace has no message for it."""
    events = {rank: raw_events(out, rank) for rank in range(NWORK + 1)}

    def of(name, typ, rank=0):
        return [e[2:] for e in events[rank] if e[0] == name and e[1] == typ]

    for name in ('pvm_trecv', 'pvm_nrecv', 'pvm_probe'):
        # An unsuccessful test has no peer; bytes_sent counts the calls it stands for.
        expect('rank 0 %s misses (peer, tag, calls)' % name,
               [(p, t, s) for p, t, s, _ in of(name, K_TEST_FAIL)], [(-1, -1, 1)])
    expect('rank 0 pvm_trecv hits (peer, tag, bytes)',
           [(p, t, r) for p, t, _, r in of('pvm_trecv', K_CALL)],
           [(w, 15, TRECV_BYTES[w]) for w in WORKERS])
    expect('rank 0 pvm_nrecv hits (peer, tag, bytes)',
           [(p, t, r) for p, t, _, r in of('pvm_nrecv', K_CALL)],
           [(w, 16, NRECV_BYTES[w]) for w in WORKERS])
    expect('rank 0 pvm_probe hits (peer, tag, bytes)',
           [(p, t, s + r) for p, t, s, r in of('pvm_probe', K_CALL)],
           [(w, 16, 0) for w in WORKERS])
    expect('rank 0 pvm_reduce parts received (peer, tag, bytes)',
           sorted((p, t, r) for p, t, _, r in of('pvm_reduce', K_RECV_PART)),
           [(w, 14, REDUCE_BYTES) for w in WORKERS])
    for w in WORKERS:
        expect('rank %d pvm_reduce parts sent (peer, tag, bytes)' % w,
               [(p, t, s) for p, t, s, _ in of('pvm_reduce', K_SEND_PART, w)],
               [(0, 14, REDUCE_BYTES)])


def check_nopvm(a):
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    plain = subprocess.run([a.prog], capture_output=True, text=True)
    env = dict(os.environ, LD_PRELOAD=a.lib, LD_DEBUG='bindings',
               LD_DEBUG_OUTPUT=os.path.join(a.out, 'ld'), INVMW_OUTPUT_DIR=a.out)
    pre = subprocess.run([a.prog], capture_output=True, text=True, env=env)
    expect('exit status', pre.returncode, plain.returncode)
    expect('stdout', pre.stdout, plain.stdout)
    expect('stderr', pre.stderr, plain.stderr)
    bound = []
    for name in os.listdir(a.out):
        if name.startswith('ld'):
            for line in open(os.path.join(a.out, name)):
                if re.search(r"symbol `pvm_", line):
                    bound.append(line.strip())
    expect('PVM symbols bound', bound, [])
    expect('files written besides the loader log',
           sorted(n for n in os.listdir(a.out) if not n.startswith('ld')), [])
    shutil.rmtree(a.out, ignore_errors=True)


def run_plain_and_invmw(a, out, argv):
    """The program alone, then under `invmw run`; returns both results."""
    shutil.rmtree(out, ignore_errors=True)
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if plain.returncode != 0 or 'worker summed 55' not in plain.stdout:
        fail('%s on its own: status %d, output %r %r (is pvmd running?)' %
             (argv, plain.returncode, plain.stdout, plain.stderr))
    run = subprocess.run([a.invmw, 'run', '--out', out, '--'] + argv, capture_output=True,
                         text=True, timeout=60)
    print(run.stdout + run.stderr)
    expect('exit status under invmw run', run.returncode, plain.returncode)
    expect('stdout under invmw run', run.stdout, plain.stdout)
    # invmw's own lines (and the preload's warning) are the only additions to stderr.
    expect('stderr besides invmw\'s lines',
           [l for l in run.stderr.splitlines() if not l.startswith('invmw:')],
           plain.stderr.splitlines())
    return run


def check_static(a):
    static = os.path.realpath(a.prog)
    report = 'invmw: pvm: %s has PVM linked in statically: not recorded' % static

    # 1. The statically linked program started directly: nothing of it can be recorded.
    out = a.out + '/alone'
    run = run_plain_and_invmw(a, out, [a.prog])
    if 'with libinvmw-pvm.so' not in run.stderr:
        fail('invmw run did not pick libinvmw-pvm.so for a program with libpvm3.a in it')
    if report not in run.stderr.splitlines():
        fail('no line %r' % report)
    print('ok   reported: ' + report)
    pvm_dir = os.path.join(out, 'raw', 'pvm')
    expect('task data recorded', sorted(n for n in os.listdir(pvm_dir) if n.startswith('task-')),
           [])
    expect('profile.json written', os.path.exists(os.path.join(out, 'profile.json')), False)

    # 2. A shared-libpvm3 master spawning the static program: the master alone is recorded.
    out = a.out + '/spawned'
    run = run_plain_and_invmw(a, out, [a.shared_prog, static])
    if report not in run.stderr.splitlines():
        fail('no line %r' % report)
    print('ok   reported: ' + report)
    prof = json.load(open(os.path.join(out, 'profile.json')))
    expect('pvm.statically_linked_programs', prof['pvm']['statically_linked_programs'], [static])
    expect('recorded tasks (programs)', [t['program'] for t in prof['pvm']['tasks']],
           [os.path.realpath(a.shared_prog)])
    f = prof['functions']
    # One send of 10 ints and one receive of 1 int each way: the worker's receive and send
    # would double these counts if any of its calls had been recorded.
    expect('pvm_send calls, bytes', (f['pvm_send']['calls'], f['pvm_send']['bytes_sent']),
           (1, 10 * XDR_INT))
    expect('pvm_recv calls, bytes', (f['pvm_recv']['calls'], f['pvm_recv']['bytes_recv']),
           (1, XDR_INT))
    expect('pvm_upkint calls', f['pvm_upkint']['calls'], 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=['known', 'nopvm', 'static'])
    ap.add_argument('--invmw')
    ap.add_argument('--lib')
    ap.add_argument('--prog', required=True)
    ap.add_argument('--shared-prog')
    ap.add_argument('--out', required=True)
    ap.add_argument('--otf2-print', default='otf2-print')
    a = ap.parse_args()
    {'known': check_known, 'nopvm': check_nopvm, 'static': check_static}[a.mode](a)
    print('PASS')


if __name__ == '__main__':
    main()
