"""What the single-purpose checkers of ctest/e2e share: their command line and one run of the
test program under `invmw run` into a fresh work directory.

Command line: --invmw INVMW --launcher MPIRUN --workdir DIR [checker's own options] -- PROGRAM...
"""
import argparse
import os
import shutil
import subprocess


def parse(add_options=None):
    """Returns (args, program argv). add_options(parser) adds a checker's own options."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--workdir', required=True)
    if add_options:
        add_options(ap)
    ap.add_argument('prog', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.prog[1:] if a.prog and a.prog[0] == '--' else a.prog
    return a, prog


def run(a, prog, np=2, trace=False, timeout=120):
    """Runs prog on np ranks (Open MPI's launcher) under `invmw run` into WORKDIR/run, emptied
    first; prints the job's output and returns (run directory, CompletedProcess)."""
    if os.path.isdir(a.workdir):
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir)
    out = os.path.join(a.workdir, 'run')
    cmd = [a.invmw, 'run', '--quiet'] + (['--trace'] if trace else []) + ['--out', out, '--',
                                                                          a.launcher,
                                                                          '--oversubscribe',
                                                                          '-np', str(np)]
    res = subprocess.run(cmd + prog, capture_output=True, text=True, timeout=timeout)
    print(res.stdout, res.stderr)
    return out, res
