#!/usr/bin/env python3
"""Runs an MPI test program under invmw with call sites on and checks profile.json's "callsites".

The program's sources mark every MPI call line with a comment
    SITE <function> calls=N [sent=B] [recv=B]
giving the totals over ranks expected at exactly that file:line. Checked:
  * every marked line is a call site of that function in the profile, with those calls and bytes;
  * the function has no other call site in those sources (the counts are at exactly those lines);
  * per function, call sites plus its unattributed row add up to the profile's function totals.
--nodebug FILE: FILE was compiled without debug information; its marked calls must appear as
symbol+offset sites (resolved "symbol") of the program, as many as the markers, with the same
call and byte totals, and the profile must say that debug information is missing.
--overflow: the call-site table is too small (INVMW_WRAP_CALLSITE_SLOTS); unattributed calls
must be counted, reported in profile.txt, and the per-function totals must stay exact.
--depth N (N >= 2, INVMW_WRAP_CALLSITE_DEPTH): every marked site has N frames or fewer (the
stack may end sooner) and at least 2, and the site in c_callsites_lib.c has as second frame the
line marked "CALLER of lib_send".
--via run: started by `invmw run` (its finish step resolves); --via profile: plain launcher with
the preload, then `invmw profile --json DIR` resolves.
--kill-rank R (program argument "hang"): once every rank has made its calls (its ready-rankN
file), rank R gets SIGKILL; the launcher then ends the others. --finalize-kill R: rank R SIGKILLs
itself in MPI_Finalize after the final mappings of its call-site file, before the table
(INVMW_WRAP_TEST_CALLSITE_KILL). Either way the job fails, and the incomplete profile must still
have every marked site with exact counts: rank R's table comes from its live call-site file
(callsites/live-NNNNNN.bin, listed in "ranks_live"). A normal end must leave no live file.
--occupy-live: a directory stands where rank 0's live call-site file would go; the rank must say
so once, keep its table in private memory, and the profile must be as exact as ever.
--trace: traced too (INVMW_TRACE_ENABLE=1, --via run): the OTF2 archive is read back with
python3-otf2 (callsite_trace_counts.py) and the Enter events of each marked function whose
"invmw:callsite" calling context has the SourceCodeLocation file:line of a marker must number
exactly that marker's calls; no context of a marked function may point at an unmarked line.
--analyze (with --trace): `invmw analyze` of the run must list, in analysis.json's "callsites",
each marked line with its calls, and the line marked LATE (a receive from a late sender) must
spend at least half its time idle; the text report must name it.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SITE = re.compile(r'SITE (MPI_\w+) calls=(\d+)(?: sent=(\d+))?(?: recv=(\d+))?')
NOT_ATTRIBUTED = {'MPI_Init', 'MPI_Init_thread', 'MPI_Finalize'}


def fail(msg):
    print(f'[check_callsites] FAIL: {msg}', flush=True)
    sys.exit(1)


def markers(path):
    out = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = SITE.search(line)
            if m:
                out.append(dict(file=os.path.basename(path), line=i, function=m.group(1),
                                calls=int(m.group(2)), sent=int(m.group(3) or 0),
                                recv=int(m.group(4) or 0), late='LATE' in line[m.end():]))
    return out


def launcher_cmd(a, env):
    if a.flavor == 'openmpi':
        cmd = [a.launcher, '--oversubscribe', '-np', str(a.np)]
        for k, v in env.items():
            cmd += ['-x', f'{k}={v}']
    else:
        cmd = [a.launcher, '-n', str(a.np)]
        for k, v in env.items():
            cmd += ['-genv', k, v]
    return cmd + [a.program] + a.args


def run_job(a, cmd, env):
    """Runs the job in the work directory (where the program writes its ready files); with
    --kill-rank, SIGKILLs that rank once every rank is ready. Returns (rc, stdout, stderr)."""
    if a.kill_rank is None:
        r = subprocess.run(cmd, env=env, timeout=a.timeout, capture_output=True, text=True,
                           cwd=a.workdir)
        return r.returncode, r.stdout, r.stderr
    outp, errp = os.path.join(a.workdir, 'job.stdout'), os.path.join(a.workdir, 'job.stderr')
    with open(outp, 'wb') as o, open(errp, 'wb') as e:
        p = subprocess.Popen(cmd, env=env, stdout=o, stderr=e, cwd=a.workdir,
                             start_new_session=True)
        t0, sent = time.time(), False
        try:
            while p.poll() is None:
                if time.time() - t0 > a.timeout:
                    fail(f'no end within {a.timeout} s')
                ready = [os.path.join(a.workdir, f'ready-rank{r}') for r in range(a.np)]
                if not sent and all(os.path.exists(f) for f in ready):
                    with open(ready[a.kill_rank]) as f:
                        pid = int(f.read())
                    print(f'[check_callsites] every rank is ready; SIGKILL to rank {a.kill_rank} '
                          f'(pid {pid})', flush=True)
                    os.kill(pid, signal.SIGKILL)
                    sent = True
                time.sleep(0.05)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    if not sent:
        fail(f'the job ended (status {p.returncode}) before rank {a.kill_rank} could be killed')
    with open(outp) as o, open(errp) as e:
        return p.returncode, o.read(), e.read()


def read_contexts(anchor, env, timeout):
    # python3-otf2 is Debian's, for /usr/bin/python3 only.
    reader = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'callsite_trace_counts.py')
    r = subprocess.run(['/usr/bin/python3', reader, anchor], env=env,
                       timeout=timeout, capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        fail(f'reading {anchor} with python3-otf2 failed ({r.returncode})')
    return json.loads(r.stdout)


def file_digests(d):
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            with open(p, 'rb') as f:
                out[os.path.relpath(p, d)] = hashlib.sha256(f.read()).hexdigest()
    return out


def check_trace_writers(a, out, env):
    """The archive the ranks wrote in parallel at MPI_Finalize (named by the finish step) and
    the serial converter's (`invmw trace convert --name serial`, object+offset names) carry the
    same contexts on the same calls; `invmw profile DIR` names the contexts again without
    touching the anchor or an event file; otf2-print shows the file:line names; and the
    recovery of the run cut off (a rank's call-site file without its table, an event file cut
    mid-record) still gives a valid archive."""
    if 'ranks in parallel' not in a.run_stderr:
        fail('the ranks did not write the trace in parallel')
    par = read_contexts(os.path.join(out, 'traces.otf2'), env, a.timeout)
    p = subprocess.run([a.invmw, 'trace', 'convert', '--name', 'serial', out], env=env,
                       timeout=a.timeout, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        fail(f'invmw trace convert --name serial exited with {p.returncode}')
    ser = read_contexts(os.path.join(out, 'serial.otf2'), env, a.timeout)
    key = lambda t: sorted((s['function'], s['key'], s['calls']) for s in t['sites'])
    if key(par) != key(ser) or par['contexts'] != ser['contexts']:
        fail(f'parallel and serial writers differ: {key(par)} vs {key(ser)}')
    print(f'[check_callsites] ok: parallel and serial writers give the same '
          f'{par["contexts"]} contexts')
    before = file_digests(os.path.join(out, 'traces'))
    with open(os.path.join(out, 'traces.otf2'), 'rb') as f:
        anchor = f.read()
    p = subprocess.run([a.invmw, 'profile', out], env=env, timeout=a.timeout,
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail(f'invmw profile {out} exited with {p.returncode}: {p.stderr}')
    with open(os.path.join(out, 'traces.otf2'), 'rb') as f:
        if f.read() != anchor:
            fail('naming the contexts again changed the anchor file')
    if file_digests(os.path.join(out, 'traces')) != before:
        fail('naming the contexts again changed the event or local definition files')
    if key(read_contexts(os.path.join(out, 'traces.otf2'), env, a.timeout)) != key(par):
        fail('naming the contexts again changed them')
    print('[check_callsites] ok: `invmw profile DIR` renamed only the global definitions')

    # A run cut off: copy its raw files, drop the call-site tables (a killed rank writes none)
    # of rank 1 and cut one event file mid-record.
    cut = out + '.cut'
    shutil.rmtree(cut, ignore_errors=True)
    shutil.copytree(os.path.join(out, 'raw'), os.path.join(cut, 'raw'))
    shutil.copytree(os.path.join(out, 'callsites'), os.path.join(cut, 'callsites'))
    r1 = os.path.join(cut, 'callsites', 'rank-000001.txt')
    with open(r1) as f:
        lines = f.read().split('\n')
    with open(r1, 'w') as f:
        f.write('\n'.join(lines[:[i for i, l in enumerate(lines) if l == 'end-maps'][0] + 1]) +
                '\n')
    ev = os.path.join(cut, 'raw', 'events-000001-000.bin')
    os.truncate(ev, os.path.getsize(ev) - 20)
    for d in (os.path.join(cut, 'raw'),):
        for n in os.listdir(d):
            if n.startswith('defs-'):
                with open(os.path.join(d, n)) as f:
                    keep = [l for l in f if '"type":"end"' not in l]
                with open(os.path.join(d, n), 'w') as f:
                    f.writelines(keep)
    p = subprocess.run([a.invmw, 'trace', 'recover', cut], env=env, timeout=a.timeout,
                       capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    # 1: the archive was written and is partial (a rank did not end cleanly), as it should be.
    if p.returncode != 1 or '(partial trace)' not in p.stdout:
        fail(f'invmw trace recover of the cut-off copy exited with {p.returncode}, expected 1 '
             f'and a partial trace: {p.stdout}')
    rec = read_contexts(os.path.join(cut, 'traces.otf2'), env, a.timeout)
    if not rec['sites']:
        fail('the recovered archive has no calls with contexts (rank 0 kept its table)')
    pr = subprocess.run(['otf2-print', os.path.join(cut, 'traces.otf2')], capture_output=True,
                        text=True, timeout=a.timeout)
    if pr.returncode != 0:
        fail(f'otf2-print of the recovered archive failed: {pr.stderr[:500]}')
    print(f'[check_callsites] ok: recovered cut-off run: {len(rec["sites"])} sites')
    shutil.rmtree(cut, ignore_errors=True)


def check_otf2_print(out, with_lines, timeout):
    p = subprocess.run(['otf2-print', '-G', os.path.join(out, 'traces.otf2')],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        fail(f'otf2-print -G failed: {p.stderr[:500]}')
    scl = [l for l in p.stdout.splitlines() if l.startswith('SOURCE_CODE_LOCATION')]
    got = set()
    for l in scl:
        m = re.search(r'File: "([^"]*)".*Line Number: (\d+)', l)
        if m:
            got.add(f'{os.path.basename(m.group(1))}:{m.group(2)}')
    for m in with_lines:
        want = f'{m["file"]}:{m["line"]}'
        if want not in got:
            fail(f'otf2-print -G shows no SOURCE_CODE_LOCATION {want}: {scl}')
    print(f'[check_callsites] ok: otf2-print shows {len(scl)} source code locations')


def check_trace(out, with_lines, files, funcs, env, timeout):
    t = read_contexts(os.path.join(out, 'traces.otf2'), env, timeout)
    if t['contexts'] == 0:
        fail('the trace has no CallingContext definitions')
    for m in with_lines:
        where = f'{m["function"]} at {m["file"]}:{m["line"]}'
        n = sum(s['calls'] for s in t['sites'] if s['function'] == m['function'] and
                s['file'] == m['file'] and s['line'] == m['line'])
        if n != m['calls']:
            fail(f'trace: {n} Enter events of {where} carry its calling context, expected '
                 f'{m["calls"]}; contexts: {t["sites"]}')
        print(f'[check_callsites] ok: trace {where} calls={n}')
    for s in t['sites']:
        if s['function'] in funcs and s['file'] in files and not any(
                m['function'] == s['function'] and m['file'] == s['file'] and
                m['line'] == s['line'] for m in with_lines):
            fail(f'trace: {s["function"]} has a context at {s["file"]}:{s["line"]}, which has no '
                 'SITE marker')


def check_analyze(a, out, with_lines, env):
    p = subprocess.run([a.invmw, 'analyze', out], env=env, timeout=a.timeout,
                       capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        fail(f'invmw analyze exited with {p.returncode}')
    with open(os.path.join(out, 'analysis.json')) as f:
        sites = json.load(f).get('callsites')
    if not sites:
        fail('analysis.json has no "callsites"')
    for m in with_lines:
        where = f'{m["function"]} at {m["file"]}:{m["line"]}'
        found = [s for s in sites if s['function'] == m['function'] and s['line'] == m['line']
                 and os.path.basename(s['file']) == m['file']]
        if len(found) != 1 or found[0]['calls'] != m['calls']:
            fail(f'analyze: {where}: {found}, expected one site with {m["calls"]} calls')
        s = found[0]
        if m.get('late'):
            if s['idle_share'] < 0.5:
                fail(f'analyze: {where} idle share {s["idle_share"]:.3f}, expected >= 0.5 '
                     '(a late sender)')
            if f'{m["function"]:<14} at {s["location"]}' not in p.stdout:
                fail(f'analyze: the text report does not name {where}')
        print(f'[check_callsites] ok: analyze {where} calls={s["calls"]} '
              f'idle={100 * s["idle_share"]:.1f}%')
    if not any(m.get('late') for m in with_lines):
        fail('no SITE marker says LATE')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--launcher', required=True)
    ap.add_argument('--flavor', required=True)
    ap.add_argument('--np', type=int, default=2)
    ap.add_argument('--preload', required=True)
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--timeout', type=int, default=50)
    ap.add_argument('--via', choices=('run', 'profile'), default='run')
    ap.add_argument('--source', action='append', default=[])
    ap.add_argument('--nodebug')
    ap.add_argument('--overflow', action='store_true')
    ap.add_argument('--depth', type=int, default=1)
    ap.add_argument('--env', action='append', default=[])
    ap.add_argument('--kill-rank', type=int)
    ap.add_argument('--finalize-kill', type=int)
    ap.add_argument('--occupy-live', action='store_true')
    ap.add_argument('--trace', action='store_true')
    ap.add_argument('--analyze', action='store_true')
    ap.add_argument('program')
    ap.add_argument('args', nargs='*')
    a = ap.parse_args()

    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    out = os.path.join(a.workdir, 'run')
    occupied = os.path.join(out, 'callsites', 'live-000000.bin')
    if a.occupy_live:
        os.makedirs(occupied)
    env = os.environ.copy()
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    extra = dict(e.split('=', 1) for e in a.env)
    extra.setdefault('INVMW_SAMPLER_ENABLE', '0')
    killed = a.kill_rank if a.kill_rank is not None else a.finalize_kill
    if a.finalize_kill is not None:
        extra['INVMW_WRAP_TEST_CALLSITE_KILL'] = str(a.finalize_kill)
    if a.trace:
        extra['INVMW_TRACE_ENABLE'] = '1'
    if a.via == 'run':
        cmd = [a.invmw, 'run', '--lib', a.preload, '--out', out]
        for k, v in extra.items():
            cmd += ['--env', f'{k}={v}']
        cmd += ['--'] + launcher_cmd(a, {})
    else:
        ranks = dict(extra, LD_PRELOAD=a.preload, INVMW_OUTPUT_DIR=out)
        cmd = launcher_cmd(a, ranks)
    print('[check_callsites] ' + ' '.join(cmd), flush=True)
    rc, stdout, stderr = run_job(a, cmd, env)
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    if killed is None and rc != 0:
        fail(f'the job exited with {rc}')
    if killed is not None and rc == 0:
        fail(f'the job exited with 0 although rank {killed} was killed')
    a.run_stderr = stderr
    if a.via == 'profile':
        p = subprocess.run([a.invmw, 'profile', '--json', out], env=env, timeout=a.timeout,
                           capture_output=True, text=True)
        sys.stderr.write(p.stderr)
        if p.returncode != 0:
            fail(f'invmw profile exited with {p.returncode}')
        prof = json.loads(p.stdout)
    else:
        with open(os.path.join(out, 'profile.json')) as f:
            prof = json.load(f)
    with open(os.path.join(out, 'profile.txt')) as f:
        text = f.read()
    cs = prof.get('callsites')
    if not isinstance(cs, dict):
        fail('profile.json has no "callsites"')
    if cs['ranks'] != a.np:
        fail(f'callsites from {cs["ranks"]} ranks, expected {a.np}')
    if 'Top call sites by time' not in text or 'Call sites per function' not in text:
        fail('profile.txt has no call-site tables')
    sites = cs['sites']
    live_files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, 'callsites',
                                                                            'live-*.bin')))
    if a.occupy_live:
        if not os.path.isdir(occupied) or os.listdir(occupied):
            fail(f'{occupied}: the directory put there was changed')
        if stderr.count('live-000000.bin') != 1:
            fail(f'rank 0 did not say once that it could not create {occupied}')
        live_files.remove('live-000000.bin')
        if cs.get('problems'):
            fail(f'problems reading the call-site files: {cs["problems"]}')
    if killed is None:
        if live_files:
            fail(f'live call-site files left after a normal end: {live_files}')
    else:
        if killed not in cs.get('ranks_incomplete', []) or killed not in cs.get('ranks_live', []):
            fail(f'rank {killed} is not listed as incomplete with its table from the live file: '
                 f'ranks_incomplete {cs.get("ranks_incomplete")}, ranks_live '
                 f'{cs.get("ranks_live")}; problems: {cs.get("problems")}')
        if f'live-{killed:06d}.bin' not in live_files:
            fail(f'no live call-site file of rank {killed}: {live_files}')
        if 'their tables from the live call-site files' not in text:
            fail('profile.txt does not say which tables come from live call-site files')
        if cs.get('problems'):
            fail(f'problems reading the call-site files: {cs["problems"]}')
        print(f'[check_callsites] ok: rank {killed} killed; tables from live files of ranks '
              f'{cs["ranks_live"]}')

    # Per function: sites + unattributed == the profile's totals.
    for fn, f in prof['functions'].items():
        if fn in NOT_ATTRIBUTED:
            continue
        tot = {k: 0 for k in ('calls', 'bytes_sent', 'bytes_recv')}
        for s in sites:
            if s['function'] == fn:
                for k in tot:
                    tot[k] += s[k]
        for u in cs['unattributed']:
            if u['function'] == fn:
                for k in tot:
                    tot[k] += u[k]
        for k in tot:
            if tot[k] != f[k]:
                fail(f'{fn}: call sites add up to {k}={tot[k]}, the profile has {f[k]}')

    marks = []
    for s in a.source:
        marks += markers(s)
    if not marks:
        fail('no SITE markers in the sources')
    nodebug = os.path.basename(a.nodebug) if a.nodebug else None
    with_lines = [m for m in marks if m['file'] != nodebug]
    files = {m['file'] for m in marks}
    funcs = {m['function'] for m in marks}
    for m in with_lines:
        found = [s for s in sites if s['function'] == m['function'] and s.get('line') == m['line']
                 and os.path.basename(s.get('file', '')) == m['file']]
        where = f'{m["function"]} at {m["file"]}:{m["line"]}'
        if len(found) != 1:
            fail(f'{where}: {len(found)} call sites in the profile, expected 1; sites: '
                 + ', '.join(f'{s["function"]} {s["location"]}' for s in sites))
        s = found[0]
        got = (s['calls'], s['bytes_sent'], s['bytes_recv'])
        want = (m['calls'], m['sent'], m['recv'])
        if got != want:
            fail(f'{where}: calls/sent/recv {got}, expected {want}')
        if s['resolved'] != 'line':
            fail(f'{where}: resolved "{s["resolved"]}", expected "line"')
        print(f'[check_callsites] ok: {where} calls={got[0]} sent={got[1]} recv={got[2]}')
    for s in sites:
        if s['function'] in funcs and os.path.basename(s.get('file', '')) in files:
            if not any(m['line'] == s['line'] and m['function'] == s['function'] and
                       m['file'] == os.path.basename(s['file']) for m in with_lines):
                fail(f'{s["function"]} attributed to {s["location"]}, which has no SITE marker')

    if a.depth > 1:
        for m in with_lines:
            s = [s for s in sites if s['function'] == m['function'] and s.get('line') == m['line']
                 and os.path.basename(s.get('file', '')) == m['file']][0]
            fr = s.get('frames', [])
            if not 2 <= len(fr) <= a.depth:
                fail(f'{s["location"]}: {len(fr)} frames at depth {a.depth}')
            if m['file'] == 'c_callsites_lib.c':
                caller = [i for i, l in enumerate(open(next(x for x in a.source if
                          x.endswith('c_callsites.c'))), 1) if 'CALLER of lib_send' in l][0]
                if os.path.basename(fr[1].get('file', '')) != 'c_callsites.c' or \
                        fr[1].get('line') != caller:
                    fail(f'{s["location"]}: second frame {fr[1]["location"]}, expected '
                         f'c_callsites.c:{caller}')
                print(f'[check_callsites] ok: path ' + ' <- '.join(f['location'] for f in fr))

    if nodebug:
        prog = os.path.realpath(a.program)
        for fn in {m['function'] for m in marks if m['file'] == nodebug}:
            want = [m for m in marks if m['file'] == nodebug and m['function'] == fn]
            got = [s for s in sites if s['function'] == fn and
                   os.path.realpath(s.get('object', '')) == prog]
            if len(got) != len(want):
                fail(f'{fn}: {len(got)} sites in {prog}, expected {len(want)}: ' +
                     ', '.join(s['location'] for s in got))
            for s in got:
                if s['resolved'] != 'symbol' or not re.fullmatch(r'.+\+0x[0-9a-f]+',
                                                                  s['location']):
                    fail(f'{fn}: site {s["location"]} resolved "{s["resolved"]}", expected '
                         'symbol+offset')
            for k, mk in (('calls', 'calls'), ('bytes_sent', 'sent'), ('bytes_recv', 'recv')):
                if sum(s[k] for s in got) != sum(m[mk] for m in want):
                    fail(f'{fn}: {k} at the symbol+offset sites differ from the markers')
            print(f'[check_callsites] ok: {fn} in {nodebug} as ' +
                  ', '.join(s['location'] for s in got))
        if not any('no debug information' in n and prog in n for n in cs['notes']):
            fail(f'no note that {prog} has no debug information: {cs["notes"]}')
        if 'no debug information' not in text:
            fail('profile.txt does not say that debug information is missing')

    if a.overflow:
        if cs['unattributed_calls'] <= 0 or not cs['unattributed']:
            fail('no unattributed calls counted although the table overflowed')
        if 'not attributed to a call site' not in text:
            fail('profile.txt does not report the unattributed calls')
        print(f'[check_callsites] ok: {cs["unattributed_calls"]} unattributed calls reported')
    elif cs['unattributed_calls']:
        fail(f'{cs["unattributed_calls"]} unattributed calls without an overflow')

    if a.trace:
        check_trace(out, with_lines, files, funcs, env, a.timeout)
        check_otf2_print(out, with_lines, a.timeout)
        if not a.analyze:
            check_trace_writers(a, out, env)
    if a.analyze:
        check_analyze(a, out, with_lines, env)
    print('[check_callsites] PASS')


if __name__ == '__main__':
    main()
