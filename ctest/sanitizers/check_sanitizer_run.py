#!/usr/bin/env python3
"""Checks of a sanitizer build (-DINVMW_SANITIZE=...) with a real MPI job under `invmw run`.

--mode clean: leak_check runs under `invmw run` (which must put the sanitizer runtimes ahead of
  libinvmw.so in the ranks' LD_PRELOAD, or the runtime refuses to start, and must point
  LeakSanitizer at ctest/sanitizers/lsan.supp, since LSAN_OPTIONS is unset here): exit status 0,
  no sanitizer report, and a profile with the job's calls.
--mode leak: leak_check leaks LEAK_BYTES from its own code in every rank: each rank must report
  exactly that leak (the MPI library's leaks stay suppressed, ours do not) and the job fails.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys

LEAK_BYTES = 4242  # leak_check.c
REPORTS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:',
           'WARNING: ThreadSanitizer', 'ThreadSanitizer: reported', 'does not come first')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--prog', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--np', type=int, default=2)
    ap.add_argument('--mode', choices=('clean', 'leak'), required=True)
    a = ap.parse_args()

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    out = os.path.join(a.work, 'out')
    env = {k: v for k, v in os.environ.items()
           if k not in ('LD_PRELOAD', 'LSAN_OPTIONS', 'TSAN_OPTIONS') and not k.startswith('INVMW_')}
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    cmd = [a.invmw, 'run', '--lib', a.lib, '--out', out, '--', a.launcher, '--oversubscribe',
           '-np', str(a.np), a.prog] + (['leak'] if a.mode == 'leak' else [])
    print('[check_sanitizer_run] ' + ' '.join(cmd), flush=True)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         cwd=a.work, start_new_session=True, text=True, errors='replace')
    try:
        text, _ = p.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        print('FAIL: no end within 150 s; killed the job')
        return 1
    print(text)
    errors = []
    prof = os.path.join(out, 'profile.json')
    if a.mode == 'clean':
        if p.returncode != 0:
            errors.append(f'exit status {p.returncode}, expected 0')
        for r in REPORTS:
            if r in text:
                errors.append(f'sanitizer output "{r}" in a clean run')
        if not os.path.exists(prof):
            errors.append(f'no {prof}')
        else:
            with open(prof) as f:
                calls = json.load(f).get('functions', {}).get('MPI_Allreduce', {}).get('calls')
            if calls != a.np:
                errors.append(f'profile: MPI_Allreduce calls {calls}, expected {a.np}')
    else:
        if p.returncode == 0:
            errors.append('exit status 0, expected the leak to fail the job')
        n = text.count('ERROR: LeakSanitizer: detected memory leaks')
        if n != a.np:
            errors.append(f'{n} LeakSanitizer report(s), expected one per rank ({a.np})')
        want = (f'SUMMARY: AddressSanitizer: {LEAK_BYTES} byte(s) leaked in 1 allocation(s).')
        got = [l.strip() for l in text.splitlines() if l.startswith('SUMMARY: AddressSanitizer')]
        if got != [want] * a.np:
            errors.append(f'leak summaries {got}, expected only ours in every rank: {want}')
        if 'invmw_sanitize_test_leak' not in text:
            errors.append('the reports do not name the leaking function')
    for e in errors:
        print(f'FAIL: {e}')
    if not errors:
        print('[check_sanitizer_run] PASS')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
