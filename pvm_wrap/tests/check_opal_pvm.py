#!/usr/bin/env python3
"""The PVM opal-mini prints the same energies as the MPI opal-mini for the same input.

Runs both for a few inputs (the PVM one under `invmw run`, so the preload is in the loop too)
and compares the `energy` lines digit for digit; also checks that the PVM run's profile holds
p + 1 ranks with the expected number of coordinate messages. Needs the pvmd fixture.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

CASES = [
    ['--n', '300', '--s', '4', '--rc', '8', '--u', '0.5'],
    ['--n', '200', '--g', '0.5', '--s', '3', '--no-barriers', '--seed', '7'],
]
P = 2


def energy(out, what):
    lines = [l for l in out.splitlines() if l.startswith('energy ')]
    if len(lines) != 1:
        sys.exit('FAIL: %s printed no single energy line:\n%s' % (what, out))
    return lines[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--pvm', required=True)
    ap.add_argument('--mpi', required=True)
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    for k, case in enumerate(CASES):
        mpi = subprocess.run(['mpirun', '--oversubscribe', '-np', str(P + 1), a.mpi] + case,
                             capture_output=True, text=True, timeout=120)
        out = os.path.join(a.out, 'case%d' % k)
        shutil.rmtree(out, ignore_errors=True)
        pvm = subprocess.run([a.invmw, 'run', '--quiet', '--out', out, '--', a.pvm, '--p',
                              str(P)] + case, capture_output=True, text=True, timeout=120)
        if mpi.returncode or pvm.returncode:
            sys.exit('FAIL: exit status mpi %d pvm %d\n%s\n%s' %
                     (mpi.returncode, pvm.returncode, mpi.stderr, pvm.stderr))
        e_mpi, e_pvm = energy(mpi.stdout, 'opal-mini'), energy(pvm.stdout, 'opal-mini-pvm')
        if e_mpi != e_pvm:
            sys.exit('FAIL: %s\n  MPI: %s\n  PVM: %s' % (' '.join(case), e_mpi, e_pvm))
        print('ok   %s: %s' % (' '.join(case), e_pvm))
        prof = json.load(open(os.path.join(out, 'profile.json')))
        steps = int(case[case.index('--s') + 1])
        u = float(case[case.index('--u') + 1]) if '--u' in case else 1.0
        updates = len(range(0, steps, round(1 / u)))
        if prof['summary']['ranks'] != P + 1:
            sys.exit('FAIL: %d ranks in the profile, expected %d' % (prof['summary']['ranks'], P + 1))
        sends = prof['functions']['pvm_send']['calls']
        # client: coordinates per call to each server; servers: a reply per call.
        want = P * (steps + updates) * 2
        if sends != want:
            sys.exit('FAIL: pvm_send calls %d, expected %d' % (sends, want))
        print('ok   %d ranks, %d pvm_send calls' % (P + 1, sends))
    print('PASS')


if __name__ == '__main__':
    main()
