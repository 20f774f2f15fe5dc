#!/usr/bin/env python3
"""End-to-end checks of the PVM preload (pvm_wrap/CMakeLists.txt registers them).

  known  runs examples/pvm_known.c (4 tasks, traffic known exactly; see its header comment)
         under `invmw run --trace` and checks the profile's counts and bytes, the tid -> rank
         table, that the group server's traffic is kept apart, and that in the OTF2 trace
         (read with otf2-print) every receive is matched by a send with the same sender,
         receiver, tag and size.
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
import subprocess
import sys

NWORK = 3
XDR_INT, XDR_DOUBLE = 4, 8


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

    # Sends: 3 x 100 ints; mcast: 50 doubles to 3 workers; psend: 3 x 25 doubles.
    expect('pvm_send calls', fn('pvm_send', 'calls'), NWORK)
    expect('pvm_send bytes', fn('pvm_send', 'bytes_sent'), NWORK * 100 * XDR_INT)
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
    # otf2-print: "MPI_SEND  <loc>  <time>  Receiver: R ... Tag: T, Length: L"
    sends, recvs = collections.Counter(), collections.Counter()
    loc_rank = {}
    for line in out.stdout.splitlines():
        m = re.match(r'(MPI_SEND|MPI_RECV)\s+(\d+)\s+\d+\s+(Receiver|Sender): (\d+).*'
                     r'Tag: (\d+), Length: (\d+)', line)
        if not m:
            continue
        kind, loc, _, peer, tag, length = m.groups()
        me = int(loc) & 0xffffffff
        if kind == 'MPI_SEND':
            sends[(me, int(peer), int(tag), int(length))] += 1
        else:
            recvs[(int(peer), me, int(tag), int(length))] += 1
    expect('trace sends (send + mcast + bcast + psend)', sum(sends.values()), 4 * NWORK)
    expect('trace receives', sum(recvs.values()), 4 * NWORK)
    unmatched = recvs - sends
    if unmatched:
        fail('receives without a matching send (sender, receiver, tag, bytes): %s' %
             dict(unmatched))
    print('ok   every receive matched by its send')
    chk = subprocess.run([a.invmw, 'trace', 'check', a.out], capture_output=True, text=True)
    print(chk.stdout[-2000:] + chk.stderr[-2000:])
    if chk.returncode != 0:
        fail('invmw trace check failed')


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
