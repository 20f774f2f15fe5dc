#!/usr/bin/env python3
"""Runs an MPI test program under invmw's preload library and checks the profile it leaves.

The test program states what it did: every rank writes expected-rank<N>.json (function ->
calls, bytes_sent, bytes_recv; see expect.h / expect_mod.f90) into $INVMW_TEST_EXPECT_DIR.
This script launches the program with the preload, reads profile.json back (for abnormal
ends, builds it with `invmw profile --json DIR` from the per-rank raw dumps) and compares
exactly: every function the program reports must match in calls and bytes, per rank and in
the totals over ranks, and invmw must report no function the program did not call.

Modes (--end):
  finalize  normal run: exit status 0, profile.json written at MPI_Finalize, complete.
  abort     a rank calls MPI_Abort; exit, exit_without_finalize: exit(3) without Finalize;
  segv      one rank crashes; sigterm: the checker sends SIGTERM to the launcher once every
            rank has written its expected file. All abnormal modes require a non-zero
            launcher exit status, no profile.json before merging, and a merged profile marked
            incomplete whose counts are exact.
Other checks: --compare-plain runs the program a second time without the preload and compares
stdout and exit status (for sigterm and sigkill the plain run is ended the same way);
a normal end must report nothing dropped (dropped_thread_calls, dropped_requests), unless
--expect-dropped calls|requests: then the loss must be counted exactly (recorded + dropped calls
= the program's), named with its real INVMW_* variable in the end-of-run warning, and, traced,
shown by the archive's partial flag and dropped counts and by `invmw trace check`;
--via-run starts the job under `invmw run` rather than with a plain preload, so after an abnormal
end invmw run itself must have merged the profile and, traced, rebuilt traces.otf2; --mismatch expects the program to run normally with an
"invmw: warning:" and no profile (library built for the other MPI); --helgrind runs the ranks
under valgrind's helgrind and fails on any report in invmw's own code (for a data race: both
accesses in invmw).

Every run is started in its own session and the whole process group is killed on timeout; a
run that leaves processes behind fails.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

FIELDS = ('calls', 'bytes_sent', 'bytes_recv')


class CheckFailed(Exception):
    pass


def log(msg):
    print(f'[run_and_check] {msg}', flush=True)


# ---- launching ------------------------------------------------------------------------------

def launcher_cmd(a, env_for_ranks, prog):
    """The launcher command line passing env_for_ranks (dict) to every rank."""
    if os.path.basename(a.launcher) == 'srun':
        # Under a Slurm allocation (ctest/slurm/slurm_cluster.py); the pairs are joined by
        # commas, so no value may contain one.
        cmd = [a.launcher, '-n', str(a.np)]
        if env_for_ranks:
            cmd.append('--export=ALL,' + ','.join(f'{k}={v}' for k, v in env_for_ranks.items()))
    elif a.flavor == 'openmpi':
        cmd = [a.launcher, '--oversubscribe', '-np', str(a.np)]
        for k, v in env_for_ranks.items():
            cmd += ['-x', f'{k}={v}']
    else:
        cmd = [a.launcher, '-n', str(a.np)]
        for k, v in env_for_ranks.items():
            cmd += ['-genv', k, v]
    return cmd + prog


def invmw_run_cmd(a, env_for_ranks, prog):
    """`invmw run [--trace] --lib PRELOAD --out DIR --env ... -- LAUNCHER ... PROG`: invmw run
    passes the preload and its own variables to the ranks; the test's bookkeeping variable, which
    invmw run does not know, goes through the launcher."""
    cmd = [a.invmw, 'run', '--lib', a.preload, '--out', env_for_ranks['INVMW_OUTPUT_DIR']]
    rest = {}
    for k, v in env_for_ranks.items():
        if k in ('LD_PRELOAD', 'INVMW_OUTPUT_DIR'):
            continue
        if k == 'INVMW_TRACE_ENABLE':
            cmd.append('--trace')
        elif k.startswith('INVMW_TEST_'):
            rest[k] = v
        else:
            cmd += ['--env', f'{k}={v}']
    return cmd + ['--'] + launcher_cmd(a, rest, prog)


LAUNCHER = ''  # set from --launcher in main()


def proc_members(field, value, live_only=False):
    """pids whose /proc/PID/stat field (after the command: 0 state, 2 pgrp, 3 session) equals
    value; live_only leaves zombies out."""
    pids = []
    for d in glob.glob('/proc/[0-9]*/stat'):
        try:
            with open(d) as f:
                s = f.read()
            fields = s[s.rindex(')') + 2:].split()
            if int(fields[field]) == value and not (live_only and fields[0] == 'Z'):
                pids.append(int(d.split('/')[2]))
        except (OSError, ValueError):
            pass
    return pids


def session_members(sid):
    return proc_members(3, sid)


def rank_pid(sid, rank, exe):
    """pid of the process of the job (session sid) running exe as MPI rank `rank`, from the rank
    variable its launcher put into its environment (for runs without the preload, whose defs
    files would say it). Open MPI gives each rank a process group of its own, hence the session.
    Under srun the ranks are slurmstepd's children, outside the launcher's session: any process
    of exe with that SLURM_PROCID (the test's Slurm runs only this job)."""
    srun = os.path.basename(LAUNCHER) == 'srun'
    pids = [int(p) for p in os.listdir('/proc') if p.isdigit()] if srun else session_members(sid)
    for pid in pids:
        try:
            if os.path.realpath(f'/proc/{pid}/exe') != os.path.realpath(exe):
                continue
            env = open(f'/proc/{pid}/environ', 'rb').read().split(b'\0')
        except OSError:
            continue
        for var in (b'OMPI_COMM_WORLD_RANK=', b'PMI_RANK=', b'SLURM_PROCID='):
            if var + str(rank).encode() in env:
                return pid
    return None


def group_members(pgid):
    return proc_members(2, pgid, live_only=True)


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(a, env_for_ranks, prog, label, sigterm_when=None, on_ready=None, via_run=False):
    """Runs the launcher (via_run: under `invmw run`); returns (rc, stdout, stderr).
    sigterm_when: callable polled while the job runs; when it returns True the launcher gets
    SIGTERM, or, when on_ready is given, on_ready(pgid) is called instead (e.g. to SIGKILL one
    rank)."""
    cmd = (invmw_run_cmd if via_run else launcher_cmd)(a, env_for_ranks, prog)
    env = dict(os.environ)
    env.update({'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
                'OMPI_MCA_rmaps_base_oversubscribe': '1'})
    # The launcher itself must not be preloaded, and ranks get only what we pass.
    for k in list(env):
        if k == 'LD_PRELOAD' or k.startswith('INVMW_'):
            del env[k]
    log(f'{label}: {" ".join(cmd)}')
    out_path = os.path.join(a.workdir, f'{label}.stdout')
    err_path = os.path.join(a.workdir, f'{label}.stderr')
    t0 = time.time()
    with open(out_path, 'wb') as out, open(err_path, 'wb') as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True,
                             cwd=a.workdir)
        pgid = p.pid
        sent_term = False
        try:
            while p.poll() is None:
                if time.time() - t0 > a.timeout:
                    raise CheckFailed(f'{label}: no end within {a.timeout} s; killed the job')
                if sigterm_when and not sent_term and sigterm_when():
                    if on_ready:
                        on_ready(pgid)
                    elif a.signal_group:
                        # What `timeout` and a terminal's Ctrl-C do: the whole process group.
                        sig = getattr(signal, 'SIG' + a.signal)
                        log(f'{label}: all ranks reached the known state; SIG{a.signal} to the '
                            f'process group {pgid}')
                        os.killpg(pgid, sig)
                    else:
                        log(f'{label}: all ranks reached the known state; SIGTERM to the '
                            f'launcher (pid {p.pid})')
                        os.kill(p.pid, signal.SIGTERM)
                    sent_term = True
                time.sleep(0.05)
        finally:
            if p.poll() is None:
                kill_group(pgid)
                p.wait()
    rc = p.returncode
    # Nothing of the job may survive the launcher.
    deadline = time.time() + 5
    left = group_members(pgid)
    while left and time.time() < deadline:
        time.sleep(0.1)
        left = group_members(pgid)
    if left:
        kill_group(pgid)
        raise CheckFailed(f'{label}: processes left behind after the launcher ended: {left}')
    with open(out_path, 'rb') as f:
        stdout = f.read().decode(errors='replace')
    with open(err_path, 'rb') as f:
        stderr = f.read().decode(errors='replace')
    log(f'{label}: launcher exit status {rc} after {time.time() - t0:.1f} s')
    if sigterm_when and not sent_term:
        raise CheckFailed(f'{label}: the job ended (status {rc}) before the checker could send '
                          f'SIGTERM\n--- stderr ---\n{stderr[-3000:]}')
    return rc, stdout, stderr


# ---- profile comparison ---------------------------------------------------------------------

def load_expected(expect_dir, np_):
    exp = {}
    for r in range(np_):
        path = os.path.join(expect_dir, f'expected-rank{r}.json')
        if not os.path.exists(path):
            raise CheckFailed(f'rank {r}: the program wrote no {path}')
        with open(path) as f:
            exp[r] = json.load(f)['functions']
    return exp


def compare(profile, expected, a):
    errors = []
    excluded = set(a.excluded)
    allowed = set(a.allow)
    meta = profile.get('metadata', {})
    if meta.get('ranks') != a.np:
        errors.append(f'metadata.ranks: expected {a.np}, got {meta.get("ranks")}')
    if meta.get('mpi_flavor') != a.flavor:
        errors.append(f'metadata.mpi_flavor: expected {a.flavor}, got {meta.get("mpi_flavor")}')
    # A rank killed by SIGKILL runs no handler, but its live counter file (a MAP_SHARED mapping
    # of raw/live-NNNNNN.bin) still holds every call it completed: no rank may be missing,
    # unless that file is switched off (INVMW_PROFILE_LIVE_COUNTERS=0).
    killed = [a.kill_rank] if a.end == 'sigkill' and not live_counters(a) else []
    if profile.get('missing_ranks', []) != killed:
        errors.append(f'missing_ranks: expected {killed}, got {profile.get("missing_ranks")}')
    ranks = profile.get('ranks', [])
    want = [r for r in range(a.np) if r not in killed]
    if [r.get('rank') for r in ranks] != want:
        errors.append(f'ranks: expected ranks {want} in order, got '
                      f'{[r.get("rank") for r in ranks]}')
    by_rank = {r.get('rank'): r for r in ranks}
    totals = {}
    for rank in want:
        exp = expected[rank]
        got = by_rank.get(rank, {}).get('functions', {})
        for name, e in sorted(exp.items()):
            if name in excluded:
                if e.get('calls', 0) == 0:
                    errors.append(f'rank {rank}: {name} is excluded, but the program did not '
                                  f'call it, so the exclusion is untested')
                if name in got:
                    errors.append(f'rank {rank}: {name} is excluded by INVMW_WRAP_EXCLUDE but '
                                  f'appears in the profile: {got[name]}')
                continue
            t = totals.setdefault(name, dict.fromkeys(FIELDS, 0))
            for k in FIELDS:
                t[k] += e[k]
            if name not in got:
                if e['calls'] != 0 and a.expect_dropped != 'calls':
                    errors.append(f'rank {rank}: {name} missing from the profile (expected '
                                  f'{e})')
                continue
            for k in FIELDS:
                # Dropped calls are missing from the counts; a request whose completion went
                # unrecorded is missing its received bytes.
                short_ok = (a.expect_dropped == 'calls' or
                            (a.expect_dropped == 'requests' and k != 'calls'))
                if got[name].get(k) != e[k] and not (short_ok and got[name].get(k, 0) < e[k]):
                    errors.append(f'rank {rank}: {name}.{k}: expected {e[k]}, got '
                                  f'{got[name].get(k)}')
        for name in sorted(got):
            if name not in exp and name not in allowed:
                errors.append(f'rank {rank}: {name} reported but the program did not call it: '
                              f'{ {k: got[name].get(k) for k in FIELDS} }')
    fns = profile.get('functions', {})
    for name, t in sorted(totals.items()):
        if t['calls'] == 0 or a.expect_dropped:  # per rank above
            continue
        g = fns.get(name)
        if g is None:
            errors.append(f'totals: {name} missing from functions')
            continue
        for k in FIELDS:
            if g.get(k) != t[k]:
                errors.append(f'totals: functions.{name}.{k}: expected {t[k]}, got {g.get(k)}')
    return errors


DROP_VARS = {'calls': ('dropped_thread_calls', 'INVMW_WRAP_MAX_THREADS'),
             'requests': ('dropped_requests', 'INVMW_WRAP_MAX_REQUESTS')}


def check_dropped(profile, expected, a, stderr):
    """Nothing dropped, or (--expect-dropped) the loss counted, warned about and accounted for."""
    errors = []
    for r in profile.get('ranks', []):
        for kind, (key, _) in DROP_VARS.items():
            if kind != a.expect_dropped and r.get(key, 0) != 0:
                errors.append(f'rank {r["rank"]}: {key} = {r[key]}, expected 0')
    if not a.expect_dropped:
        return errors
    key, var = DROP_VARS[a.expect_dropped]
    total = sum(r.get(key, 0) for r in profile.get('ranks', []))
    log(f'{key}: {total} over all ranks')
    if total == 0:
        errors.append(f'{key} is 0 on every rank: the limit was not exceeded')
    warning = [l for l in stderr.splitlines() if 'invmw: warning: not recorded' in l]
    if not warning or var not in warning[0]:
        errors.append(f'no end-of-run warning naming {var}: {warning}')
    else:
        log('warning seen: ' + warning[0])
    listed = subprocess.run([a.invmw, 'config', 'list'], capture_output=True, text=True,
                            timeout=60).stdout
    if var not in listed:
        errors.append(f'the warning names {var}, which `invmw config list` does not know')
    if a.expect_dropped == 'calls':
        # Which calls a thread without a slot made is up to the scheduler; their number is not.
        for r in profile.get('ranks', []):
            exp = expected[r['rank']]
            want = sum(e['calls'] for e in exp.values())
            got = sum(f['calls'] for f in r.get('functions', {}).values())
            log(f'rank {r["rank"]}: {got} recorded + {r.get(key, 0)} dropped calls, the program '
                f'made {want}')
            if got + r.get(key, 0) != want:
                errors.append(f'rank {r["rank"]}: {got} recorded + {r.get(key, 0)} dropped != '
                              f'{want} calls')
    return errors


def check_spawned(profile, a, out_dir, expect_dir):
    """Worlds started by MPI_Comm_spawn: each has its own complete profile (and trace) in
    OUT/spawned-*/, matching what its ranks wrote under EXPECT/spawned-NAME/, and the parent's
    profile.json (and trace) lists each of those directories."""
    errors = []
    listed = {s.get('dir'): s for s in profile.get('spawned', [])}
    log(f'spawned worlds listed in profile.json: {sorted(listed)}')
    on_disk = sorted(os.path.basename(d) for d in glob.glob(os.path.join(out_dir, 'spawned-*')))
    if sorted(listed) != on_disk:
        errors.append(f'profile.json lists spawned worlds {sorted(listed)}, the directory holds '
                      f'{on_disk}')
    for spec in a.expect_spawned:
        name, _, np_ = spec.partition('=')
        world = None
        for d in on_disk:
            try:
                with open(os.path.join(out_dir, d, 'meta.json')) as f:
                    if json.load(f).get('command', '').split()[-1:] == [name]:
                        world = d
            except (OSError, ValueError):
                pass
        if world is None:
            errors.append(f'spawned world "{name}": no spawned-*/meta.json with that command')
            continue
        if listed.get(world, {}).get('ranks') != int(np_):
            errors.append(f'profile.json spawned entry {listed.get(world)}: expected {np_} ranks')
        sub = argparse.Namespace(**vars(a))
        sub.np = int(np_)
        try:
            with open(os.path.join(out_dir, world, 'profile.json')) as f:
                child = json.load(f)
            expected = load_expected(os.path.join(expect_dir, f'spawned-{name}'), sub.np)
        except (OSError, ValueError, CheckFailed) as e:
            errors.append(f'spawned world "{name}" ({world}): {e}')
            continue
        errors += [f'spawned world "{name}" ({world}): {e}' for e in compare(child, expected, sub)]
        log(f'spawned world "{name}": {world}, its profile matches its ranks\' own counts')
        if a.trace:
            res = subprocess.run([TRACE_PYTHON, os.path.join(os.path.dirname(
                os.path.abspath(__file__)), 'check_trace.py'), os.path.join(out_dir, world),
                '--profile', os.path.join(out_dir, world, 'profile.json'), '--other-world'],
                capture_output=True, text=True, timeout=300)
            log(f'check_trace {world}: ' + (res.stdout.strip().splitlines() or [''])[-1])
            if res.returncode != 0:
                errors.append(f'trace check of {world} failed:\n{res.stdout}{res.stderr}')
    if a.trace:
        r = subprocess.run(['otf2-print', '-I', os.path.join(out_dir, 'traces.otf2')],
                           capture_output=True, text=True, timeout=120)
        m = re.search(r'Property name\s+INVMW::SPAWNED\s*\nProperty value\s+(\S*)', r.stdout)
        got = m.group(1).split(',') if m else []
        log(f'INVMW::SPAWNED = {got}')
        if sorted(got) != on_disk:
            errors.append(f'the trace\'s INVMW::SPAWNED is {got}, expected {on_disk}')
    return errors


def live_counters(a):
    return 'INVMW_PROFILE_LIVE_COUNTERS=0' not in a.env


def check_ends(profile, a, incomplete):
    errors = []
    if profile.get('incomplete') is not incomplete:
        errors.append(f'incomplete: expected {incomplete}, got {profile.get("incomplete")}')
    by_rank = {r.get('rank'): r for r in profile.get('ranks', [])}
    want = {}
    if a.end == 'sigkill' and live_counters(a):
        # Ranks that saved no dump come from their live counter files.
        for r in range(a.np) if a.step_killed else [a.kill_rank]:
            want[r] = ('killed', None)
    for spec in a.expect_end:
        parts = spec.split(':')
        ranks = range(a.np) if parts[0] == '*' else [int(parts[0])]
        for r in ranks:
            want[r] = (parts[1], int(parts[2]) if len(parts) > 2 else None)
    for r in range(a.np):
        if r not in by_rank:
            continue
        got = by_rank[r]
        log(f'rank {r}: end={got.get("end")} end_signal={got.get("end_signal")} '
            f'incomplete={got.get("incomplete")}')
        if r in want:
            end, sig = want[r]
            if got.get('end') != end:
                errors.append(f'rank {r}: end: expected {end}, got {got.get("end")}')
            if sig is not None and got.get('end_signal') != sig:
                errors.append(f'rank {r}: end_signal: expected {sig}, got '
                              f'{got.get("end_signal")}')
        if got.get('incomplete') is not (got.get('end') != 'finalize'):
            errors.append(f'rank {r}: incomplete={got.get("incomplete")} with end '
                          f'{got.get("end")}')
    return errors


# ---- helgrind -------------------------------------------------------------------------------

# A frame in invmw's own code: its library, its namespaces and C entry helpers, or a source
# file of pmpi_wrap/ (generated wrappers included).
INVMW_FRAME = re.compile(
    r'libinvmw|invmw::|invmw_[cf]_|\((call|runtime|special|fortran|comm_table|request_table|'
    r'profile_report|wrappers_c|wrappers_fortran|function_table)\.cc:|'
    r'\((call|collective_bytes|scratch|thread_state|fortran|runtime|comm_table|'
    r'request_table)\.h:')


def helgrind_reports(workdir):
    """Returns (total error blocks, blocks with a frame in invmw's own code)."""
    total, ours = 0, []
    for path in sorted(glob.glob(os.path.join(workdir, 'helgrind.*.log'))):
        with open(path, errors='replace') as f:
            text = f.read()
        blocks, cur = [], []
        for line in text.splitlines():
            body = re.sub(r'^==\d+==\s?', '', line)
            if not body.strip():
                if cur:
                    blocks.append(cur)
                cur = []
            else:
                cur.append(body)
        if cur:
            blocks.append(cur)
        # helgrind prints the second access of a race ("This conflicts with ...") as a block of
        # its own: join it to its race.
        joined = []
        for b in blocks:
            if joined and b[0].startswith('This conflicts with'):
                joined[-1] = joined[-1] + b
            else:
                joined.append(b)
        for b in joined:
            head = b[0]
            if not re.match(r'(Possible data race|Thread #\d+: |Lock at|Thread #\d+ unlocked|'
                            r'Thread #\d+\'s call to|Thread #\d+ was created)', head):
                continue
            if head.startswith('Thread #') and 'was created' in head:
                continue
            total += 1
            # The accessing frame of each side of the report is the "at 0x...:" line.
            tops = [l for l in b if re.match(r'\s*at 0x[0-9A-Fa-f]+: ', l)]
            if head.startswith('Possible data race') and len(tops) >= 2:
                # A race is invmw's own when both accesses are in invmw's code. One side inside
                # the MPI library is MPI handing over a status or request it synchronises with
                # atomics that helgrind cannot see.
                mine = all(INVMW_FRAME.search(t) for t in tops[:2])
            else:
                mine = any(INVMW_FRAME.search(t) for t in tops)
            if mine:
                ours.append(f'{path}:\n  ' + '\n  '.join(b))
    return total, ours


# ---- traces -------------------------------------------------------------------------------

def check_trace_messages(out_dir, run_stderr):
    """After a run that ended normally: the archive's path is said once (by rank 0; `invmw run`
    printed it again before), and a note gives the size of the raw event files left in raw/
    and the command that removes them."""
    errors = []
    archive = os.path.join(out_dir, 'traces.otf2')
    said = [l for l in run_stderr.splitlines() if archive in l]
    if len(said) != 1:
        errors.append(f'the trace path {archive} is said {len(said)} times, expected once: '
                      f'{said}')
    raw = sum(os.path.getsize(p) for p in glob.glob(os.path.join(out_dir, 'raw', 'events-*.bin')))
    note = [l for l in run_stderr.splitlines()
            if f'rm {out_dir}/raw/events-*.bin' in l and 'raw trace' in l]
    if raw and len(note) != 1:
        errors.append(f'no note on the {raw} bytes of raw event files left in {out_dir}/raw')
    elif note:
        m = re.search(r'\(([0-9.]+) (kB|MB) of events', note[0])
        said_bytes = float(m.group(1)) * (1e3 if m.group(2) == 'kB' else 1e6) if m else -1
        if abs(said_bytes - raw) > 0.06 * (1e3 if m and m.group(2) == 'kB' else 1e6):
            errors.append(f'the note says {m.group(0) if m else "no size"}, raw/events-*.bin '
                          f'hold {raw} bytes')
        log('raw trace note: ' + note[0])
    return errors


def check_trace(a, out_dir, expect_dir, run_stderr):
    """Checks traces.otf2 with check_trace.py (Debian's python3, which has the otf2 module).
    After an abnormal end the trace is first rebuilt from raw/ with `invmw trace recover`, except
    under `invmw run` (--via-run), which must have rebuilt it by itself."""
    errors = []
    checker = [TRACE_PYTHON, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          'check_trace.py'), out_dir]
    skew = next((kv.partition('=')[2] for kv in a.env
                 if kv.startswith('INVMW_TRACE_TEST_SKEW=')), None)
    if skew:
        checker += ['--skew', skew]
    if a.trace_full:
        checker += ['--expect-flushes' if a.trace_full == 'flush' else '--expect-dropped']
    if a.expect_dropped:
        checker += ['--expect-not-recorded', a.expect_dropped]
    if a.expect_spawned:
        checker += ['--other-world']
    if a.end == 'finalize':
        checker += ['--profile', os.path.join(out_dir, 'profile.json')]
        errors += check_trace_messages(out_dir, run_stderr)
    else:
        if a.via_run:
            if not os.path.exists(os.path.join(out_dir, 'traces.otf2')):
                return [f'invmw run left no {out_dir}/traces.otf2 after the failed job\n'
                        f'--- its stderr ---\n{run_stderr[-3000:]}']
            said = [l for l in run_stderr.splitlines() if 'recovered the trace' in l]
            if not said:
                errors.append('invmw run did not say that it recovered the trace')
            log('invmw run rebuilt the trace by itself: ' + (said[0] if said else ''))
        else:
            r = subprocess.run([a.invmw, 'trace', 'recover', out_dir], capture_output=True,
                               text=True, timeout=120)
            log(f'trace recover: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}'[:400])
            if not os.path.exists(os.path.join(out_dir, 'traces.otf2')):
                return [f'invmw trace recover {out_dir} built no archive: {r.stderr}']
        checker += ['--raw-at-least']
        # Every call a surviving rank made before the end is in its (complete) profile; the
        # killed rank's calls were flushed before the kill: at least the program's own count.
        expected = load_expected(expect_dir, a.np)
        for rank, e in expected.items():
            n = sum(f['calls'] for name, f in e.items()
                    if name not in ('MPI_Init', 'MPI_Init_thread', 'MPI_Finalize'))
            checker += ['--min-enters', f'{rank}={n}']
    res = subprocess.run(checker, capture_output=True, text=True, timeout=300)
    log('check_trace: ' + (res.stdout.strip().splitlines() or [''])[-1])
    if res.returncode != 0:
        errors.append('trace check failed:\n' + res.stdout + res.stderr)
    if a.trace_check:
        res = subprocess.run([a.invmw, 'trace', 'check', out_dir], capture_output=True,
                             text=True, timeout=300)
        log(f'invmw trace check: exit {res.returncode}: '
            + (res.stdout.strip().splitlines() or [''])[-1])
        if res.returncode != 0:
            errors.append(f'invmw trace check {out_dir} failed ({res.returncode}):\n'
                          + res.stdout + res.stderr)
    if a.expect_dropped:
        # `invmw trace check` warns about a partial archive and must say what is missing; a
        # message whose partner was not recorded is a failure there (docs/otf2.md), the only
        # one allowed here.
        r = subprocess.run([a.invmw, 'trace', 'check', out_dir], capture_output=True, text=True,
                           timeout=300)
        var = DROP_VARS[a.expect_dropped][1]
        said = [l for l in r.stdout.splitlines() if 'marked partial' in l]
        log(f'invmw trace check: exit {r.returncode}: {said}')
        failed = [l for l in r.stdout.splitlines() if l.startswith('FAILED: ')]
        other = [l for l in failed if not re.search(
            r'(send without a matching receive|receive without a matching send|more: unmatched '
            r'(sends|receives))$', l)]
        if r.returncode not in (0, 1) or (r.returncode == 1 and (other or not failed)):
            errors.append(f'invmw trace check exit {r.returncode}:\n{r.stdout}{r.stderr}')
        if not said or var not in said[0]:
            errors.append(f'invmw trace check does not report the partial archive with {var}:\n'
                          f'{r.stdout}')
    return errors


TRACE_PYTHON = '/usr/bin/python3'


# ---- main -----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--flavor', required=True, choices=('openmpi', 'mpich'))
    ap.add_argument('--np', type=int, default=2)
    ap.add_argument('--preload', required=True)
    ap.add_argument('--invmw', required=True, help='the invmw command (for merging raw dumps)')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--end', default='finalize',
                    choices=('finalize', 'abort', 'exit', 'segv', 'sigterm', 'sigkill'))
    ap.add_argument('--signal-group', action='store_true',
                    help='with --end sigterm: signal the launcher\'s whole process group, as '
                         'timeout(1) and Ctrl-C do, instead of the launcher alone')
    ap.add_argument('--signal', default='TERM', choices=('TERM', 'INT'),
                    help='the signal of --signal-group (default TERM)')
    ap.add_argument('--kill-rank', type=int, default=1,
                    help='with --end sigkill: the rank that gets SIGKILL once all ranks reached '
                         'the known state and the trace writer had time to drain')
    ap.add_argument('--step-killed', action='store_true',
                    help='with --end sigkill --via-run: the launcher SIGKILLs every other rank '
                         'once one dies (srun: Slurm\'s PMIx plugin kills the step on a lost '
                         'client), so no rank saves a dump: the profile comes from every rank\'s '
                         'live counter file (end "killed", exact counts), or, with '
                         'INVMW_PROFILE_LIVE_COUNTERS=0, there is none; the recovered trace must '
                         'still hold every call each rank made before the kill')
    ap.add_argument('--trace', action='store_true',
                    help='trace the run and check traces.otf2 (ctest/e2e/check_trace.py)')
    ap.add_argument('--via-run', action='store_true',
                    help='start the job under `invmw run` instead of preloading directly; after '
                         'an abnormal end invmw run must have merged the profile and (with '
                         '--trace) rebuilt traces.otf2 by itself')
    ap.add_argument('--trace-check', action='store_true',
                    help='with --trace: `invmw trace check DIR` must also pass')
    ap.add_argument('--trace-full', choices=('flush', 'stop'),
                    help='with --trace: the rings fill (tiny INVMW_TRACE_BUFFER); the trace must '
                         'show the flushes (every call still recorded) or the dropped events')
    ap.add_argument('--expect-end', action='append', default=[],
                    help='RANK:END[:SIGNAL] (RANK may be *): required end of a rank')
    ap.add_argument('--env', action='append', default=[], help='K=V passed to the ranks')
    ap.add_argument('--excluded', action='append', default=[],
                    help='function the program calls that must be absent from the profile')
    ap.add_argument('--allow', action='append', default=[],
                    help='function invmw may report although the program does not list it')
    ap.add_argument('--compare-plain', action='store_true',
                    help='also run without the preload; stdout and exit status must match')
    ap.add_argument('--mismatch', action='store_true',
                    help='the preload is built for the other MPI: warning, no profile')
    ap.add_argument('--helgrind', metavar='SUPP', help='run ranks under helgrind')
    ap.add_argument('--expect-dropped', choices=('calls', 'requests'),
                    help='the run exceeds INVMW_WRAP_MAX_THREADS (calls) or '
                         'INVMW_WRAP_MAX_REQUESTS (requests) on purpose: the loss must be '
                         'counted, warned about and (traced) mark the trace partial')
    ap.add_argument('--expect-spawned', action='append', default=[], metavar='NAME=NP',
                    help='the program spawns a world of NP ranks whose last argument is NAME; '
                         'its ranks write their expectations to EXPECT/spawned-NAME/')
    ap.add_argument('--sanitizer-preload', default='', metavar='PATHS',
                    help='sanitizer build: runtimes (colon-separated) that must come before the '
                         'preload library in LD_PRELOAD (invmw run adds them by itself)')
    ap.add_argument('--timeout', type=float, default=60)
    ap.add_argument('prog', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    global LAUNCHER
    LAUNCHER = a.launcher
    prog = a.prog[1:] if a.prog and a.prog[0] == '--' else a.prog
    if not prog:
        ap.error('no program given')
    if os.path.exists(prog[0]):  # the job runs in the work directory
        prog[0] = os.path.abspath(prog[0])
    a.preload = os.path.abspath(a.preload)
    a.invmw = os.path.abspath(a.invmw)

    shutil.rmtree(a.workdir, ignore_errors=True)
    out_dir = os.path.join(a.workdir, 'profile')
    expect_dir = os.path.join(a.workdir, 'expect')
    plain_expect = os.path.join(a.workdir, 'expect-plain')
    for d in (a.workdir, expect_dir, plain_expect):
        os.makedirs(d)

    # A sanitized libinvmw.so needs its sanitizer runtime as the process's first library.
    preload = ':'.join([p for p in a.sanitizer_preload.split(':') if p] + [a.preload])
    rank_env = {'LD_PRELOAD': preload, 'INVMW_OUTPUT_DIR': out_dir,
                'INVMW_TEST_EXPECT_DIR': expect_dir}
    for kv in a.env:
        k, _, v = kv.partition('=')
        rank_env[k] = v
    if a.trace:
        rank_env['INVMW_TRACE_ENABLE'] = '1'
    if a.helgrind:
        prog = ['valgrind', '--tool=helgrind', f'--suppressions={a.helgrind}',
                '--num-callers=30', f'--log-file={a.workdir}/helgrind.%p.log'] + prog

    def all_written():
        return all(os.path.exists(os.path.join(expect_dir, f'expected-rank{r}.json'))
                   for r in range(a.np))

    def kill_rank(pgid):
        # Two drain intervals of the trace writer, so the calls made so far are on disk.
        time.sleep(0.3)
        defs = os.path.join(out_dir, 'raw', f'defs-{a.kill_rank:06d}.jsonl')
        with open(defs) as f:
            pid = next(json.loads(l)['pid'] for l in f if '"type":"rank"' in l)
        log(f'preload: all ranks reached the known state; SIGKILL to rank {a.kill_rank} '
            f'(pid {pid})')
        os.kill(pid, signal.SIGKILL)

    def plain_all_written():
        return all(os.path.exists(os.path.join(plain_expect, f'expected-rank{r}.json'))
                   for r in range(a.np))

    def kill_plain_rank(pgid):
        pid = rank_pid(pgid, a.kill_rank, prog[0])
        if pid is None:
            raise CheckFailed(f'plain: no process of rank {a.kill_rank} found to kill')
        log(f'plain: all ranks reached the known state; SIGKILL to rank {a.kill_rank} '
            f'(pid {pid})')
        os.kill(pid, signal.SIGKILL)

    errors = []
    rc, stdout, stderr = run(a, rank_env, prog, 'preload',
                             sigterm_when=all_written if a.end in ('sigterm', 'sigkill') else None,
                             on_ready=kill_rank if a.end == 'sigkill' else None,
                             via_run=a.via_run)
    profile_json = os.path.join(out_dir, 'profile.json')

    if a.mismatch:
        if rc != 0:
            errors.append(f'launcher exit status {rc}, expected 0 (the program must still run)')
        if 'invmw: warning:' not in stderr:
            errors.append('no "invmw: warning:" on stderr')
        else:
            log('warning seen: ' + next(l for l in stderr.splitlines() if 'invmw: warning:' in l))
        if os.path.exists(profile_json) or glob.glob(os.path.join(out_dir, 'raw', '*.bin')):
            errors.append(f'a profile or raw dump was written in {out_dir}')
    elif a.end == 'finalize':
        if rc != 0:
            errors.append(f'launcher exit status {rc}, expected 0')
        if not os.path.exists(profile_json):
            errors.append(f'no {profile_json}')
        else:
            with open(profile_json) as f:
                profile = json.load(f)
            expected = load_expected(expect_dir, a.np)
            errors += check_ends(profile, a, incomplete=False)
            errors += compare(profile, expected, a)
            errors += check_dropped(profile, expected, a, stderr)
            if a.expect_spawned:
                errors += check_spawned(profile, a, out_dir, expect_dir)
            if not a.expect_end and any(r.get('end') != 'finalize'
                                        for r in profile.get('ranks', [])):
                errors.append('a rank did not end with finalize')
    else:
        log(f'{a.end}: launcher exit status {rc}')
        if rc == 0:
            errors.append(f'{a.end}: launcher exit status 0, expected non-zero')
        dumps = sorted(glob.glob(os.path.join(out_dir, 'raw', 'rank-*.bin')))
        log(f'{a.end}: raw dumps: {[os.path.basename(d) for d in dumps]}')
        if a.step_killed and not live_counters(a):
            # No rank could save its counters; the trace flushed before the kill is all.
            if os.path.exists(profile_json):
                errors.append(f'{a.end}: {profile_json} exists, but every rank was SIGKILLed')
            if 'invmw: no profile' not in stderr:
                errors.append(f'{a.end}: invmw run did not say that there is no profile')
            profile = None
        elif a.via_run:
            # invmw run merges the saved ranks itself once the job has ended.
            if not os.path.exists(profile_json):
                raise CheckFailed(f'{a.end}: invmw run left no merged {profile_json}\n'
                                  f'--- stderr ---\n{stderr[-3000:]}')
            with open(profile_json) as f:
                profile = json.load(f)
        else:
            if os.path.exists(profile_json):
                errors.append(f'{a.end}: profile.json exists before merging (was MPI_Finalize '
                              f'reached?)')
            m = subprocess.run([a.invmw, 'profile', '--json', out_dir], capture_output=True,
                               text=True, timeout=60)
            if m.returncode != 0:
                raise CheckFailed(f'invmw profile --json {out_dir} failed ({m.returncode}): '
                                  f'{m.stderr}')
            profile = json.loads(m.stdout)
        if profile is not None:
            expected = load_expected(expect_dir, a.np)
            errors += check_ends(profile, a, incomplete=True)
            errors += compare(profile, expected, a)

    if a.trace and not a.mismatch:
        errors += check_trace(a, out_dir, expect_dir, stderr)

    if a.helgrind:
        total, ours = helgrind_reports(a.workdir)
        log(f'helgrind: {total} report(s) in all, {len(ours)} with a frame in invmw')
        for o in ours:
            errors.append('helgrind report in invmw code:\n' + o)

    if a.compare_plain or a.mismatch:
        plain_env = {'INVMW_TEST_EXPECT_DIR': plain_expect}
        # An abnormal end is reproduced without invmw: same signal, same rank, same moment.
        prc, pout, perr = run(
            a, plain_env, prog, 'plain',
            sigterm_when=plain_all_written if a.end in ('sigterm', 'sigkill') else None,
            on_ready=kill_plain_rank if a.end == 'sigkill' else None)
        if prc != rc:
            errors.append(f'exit status with preload {rc}, without {prc}')
        if pout != stdout:
            errors.append(f'stdout differs with and without the preload:\n--- with ---\n'
                          f'{stdout}\n--- without ---\n{pout}')

    if errors:
        print(f'--- launcher stderr (preload run) ---\n{stderr[-4000:]}')
        for e in errors:
            print(f'FAIL: {e}')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except CheckFailed as e:
        print(f'FAIL: {e}')
        sys.exit(1)
