#!/usr/bin/env python3
"""The README's main job as a test: profile heat1d under `invmw run` and check the profile
against what the program must have done (its own parameters fix every call count and byte)."""
import json
import os
import shutil
import subprocess
import sys

invmw, launcher, prog, out = sys.argv[1:5]
cells, steps, check, ranks = 10000, 200, 50, 2
shutil.rmtree(out, ignore_errors=True)
cmd = [invmw, 'run', '--out', out, '--', launcher, '-np', str(ranks), prog, str(cells),
       str(steps), str(check)]
plain = subprocess.run([launcher, '-np', str(ranks), prog, str(cells), str(steps), str(check)],
                       capture_output=True, text=True, timeout=60)
run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
if run.returncode != 0 or plain.returncode != 0:
    sys.exit(f'exit status {run.returncode} (plain {plain.returncode}):\n{run.stderr}')
if run.stdout != plain.stdout:
    sys.exit(f'output differs under invmw:\n{plain.stdout!r}\n{run.stdout!r}')
p = json.load(open(os.path.join(out, 'profile.json')))
errors = []


def expect(rank, fn, field, value):
    got = p['ranks'][rank]['functions'].get(fn, {}).get(field)
    if got != value:
        errors.append(f'rank {rank} {fn}.{field}: expected {value}, got {got}')


assert not p['incomplete'], 'profile marked incomplete'
assert len(p['ranks']) == ranks
n = [cells // ranks + (1 if r < cells % ranks else 0) for r in range(ranks)]
for r in range(ranks):
    # Two Sendrecv per step; a neighbour is MPI_PROC_NULL at each end (0 bytes).
    neighbours = (r > 0) + (r < ranks - 1)
    expect(r, 'MPI_Sendrecv', 'calls', 2 * steps)
    expect(r, 'MPI_Sendrecv', 'bytes_sent', steps * neighbours * 8)
    expect(r, 'MPI_Sendrecv', 'bytes_recv', steps * neighbours * 8)
    expect(r, 'MPI_Allreduce', 'calls', steps // check)
    expect(r, 'MPI_Allreduce', 'bytes_sent', 8 * (steps // check))
    expect(r, 'MPI_Bcast', 'calls', 1)
    expect(r, 'MPI_Bcast', 'bytes_sent' if r == 0 else 'bytes_recv', 24)
    expect(r, 'MPI_Gather', 'bytes_sent', 4)
    expect(r, 'MPI_Gatherv', 'bytes_sent', 8 * n[r])
    expect(r, 'MPI_Init', 'calls', 1)
    expect(r, 'MPI_Finalize', 'calls', 1)
expect(0, 'MPI_Gatherv', 'bytes_recv', 8 * cells)
expect(0, 'MPI_Gather', 'bytes_recv', 4 * ranks)
if not os.path.exists(os.path.join(out, 'profile.txt')):
    errors.append('profile.txt missing')
if errors:
    sys.exit('\n'.join(errors))
print(f'heat1d profile OK: {sum(f["calls"] for f in p["functions"].values())} calls recorded')
