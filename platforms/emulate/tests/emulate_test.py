#!/usr/bin/env python3
"""Tests of the emulated run platforms on the real kernel (root, cgroups, network namespaces).

Each test runs `invmw platform exec` on shipped platforms, asserts on measured times, and checks
that nothing named after its own exec processes (invmw-<pid>-*) is left behind. Exits 77 (CTest
SKIP_RETURN_CODE) with the reason when the machine cannot run emulated platforms.

  emulate_test.py --invmw PATH --bin DIR TEST
TEST: quota | scaling | tcp_rate | cleanup | mpi_rate | pingpong
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
CPU_ROOTS = []  # mount points of the hierarchy with the cpu controller
failures = []


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def need(netns=False):
    """Skips unless root, a cgroup cpu controller with CFS bandwidth, and (netns) ip netns."""
    if os.geteuid() != 0:
        skip("emulated platforms need root (cgroups, network namespaces)")
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype, opts = line.split()[:4]
            if fstype == "cgroup" and "cpu" in opts.split(","):
                if os.path.exists(mnt + "/cpu.cfs_quota_us"):
                    CPU_ROOTS.append(mnt)
            elif fstype == "cgroup2":
                try:
                    with open(mnt + "/cgroup.controllers") as c:
                        if "cpu" in c.read().split():
                            CPU_ROOTS.append(mnt)
                except OSError:
                    pass
    if not CPU_ROOTS:
        skip("no cgroup hierarchy with the cpu controller (CFS bandwidth) is mounted")
    if netns:
        if not os.path.exists("/proc/self/ns/net"):
            skip("the kernel has no network namespaces")
        if subprocess.run(["ip", "-V"], capture_output=True).returncode != 0:
            skip("no `ip` tool (iproute2)")


def resources(pid=None):
    """invmw-* cgroups and namespaces (of exec process `pid` only, when given)."""
    prefix = "invmw-" if pid is None else f"invmw-{pid}-"
    found = []
    for root in CPU_ROOTS:
        found += [f"cgroup {n}" for n in os.listdir(root) if n.startswith(prefix)]
    if os.path.isdir("/run/netns"):
        found += [f"netns {n}" for n in os.listdir("/run/netns") if n.startswith(prefix)]
    return found


def exec_cmd(args, platform, cmd, ranks=None):
    c = [args.invmw, "platform", "exec", platform]
    if ranks:
        c += ["--ranks", str(ranks)]
    return c + ["--"] + cmd


def mpirun(args, platform, np, prog):
    opts = subprocess.run([args.invmw, "platform", "exec", "--print-launcher", platform],
                          capture_output=True, text=True, check=True).stdout.split()
    return ["mpirun", "-np", str(np)] + opts + [args.invmw, "platform", "slot", "--"] + prog


def run_exec(args, platform, cmd, ranks=None, timeout=120):
    p = subprocess.Popen(exec_cmd(args, platform, cmd, ranks), env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.terminate()  # exec tears the platform down on SIGTERM
        out, err = p.communicate(timeout=30)
        check(False, f"exec {p.pid} finished within {timeout} s")
    if err.strip():
        print(err.strip())
    check(resources(p.pid) == [], f"nothing of exec {p.pid} left: {resources(p.pid)}")
    return p.returncode, out


def burn_seconds(args, platform, np, units):
    if platform == "local":
        cmd = ["mpirun", "-np", str(np), os.path.join(args.bin, "emu_burn"), "--units", str(units)]
        out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True).stdout
    else:
        rc, out = run_exec(args, platform,
                           mpirun(args, platform, np,
                                  [os.path.join(args.bin, "emu_burn"), "--units", str(units)]),
                           ranks=np)
        if rc != 0:
            check(False, f"emu_burn on {platform} exited {rc}")
            return float("nan")
    m = re.search(r"seconds ([0-9.]+) ranks (\d+)", out)
    check(m is not None and int(m.group(2)) == np, f"emu_burn printed its time ({out.strip()})")
    return float(m.group(1)) if m else float("nan")


def units_for(args, seconds):
    """Work units that take about `seconds` on a full core of this machine."""
    t = burn_seconds(args, "emu-2x100-shm", 1, 50)
    return max(20, int(50 * seconds / t))


def test_quota(args):
    need()
    units = units_for(args, 0.4)
    # The unlimited reference runs on a whole core with the same scheduling priority as the
    # emulated ranks (emu-2x100-shm), so that other work on a shared machine does not inflate it.
    free = burn_seconds(args, "emu-2x100-shm", 1, units)
    limited = burn_seconds(args, "emu-8x25-shm", 1, units)
    ratio = limited / free
    print(f"1 rank: a full core {free:.3f} s, at 25% (period 10 ms) {limited:.3f} s, "
          f"ratio {ratio:.2f} ({units} units)")
    check(free > 20 * 0.010, f"the load ({free:.2f} s) is much longer than the 10 ms period")
    check(3.2 <= ratio <= 4.8, f"25% quota slows one rank by 3.2-4.8x (got {ratio:.2f})")


def test_scaling(args):
    need()
    units = units_for(args, 0.4)
    one = burn_seconds(args, "emu-8x25-shm", 1, units)
    four = burn_seconds(args, "emu-8x25-shm", 4, units)
    speedup = one / four
    print(f"fixed load at 25% per rank: 1 rank {one:.3f} s, 4 ranks {four:.3f} s, "
          f"speedup {speedup:.2f}")
    check(speedup >= 3.0, f"4 ranks at 25% run >= 3x faster than 1 (got {speedup:.2f})")


# Run by each rank: its CPU and its own slot's CFS limit, read while the slot exists.
SHOW_SLOT = r"""
import os, sys
outdir, roots = sys.argv[1], sys.argv[2:]
limit = None
for line in open("/proc/self/cgroup"):
    ids, controllers, path = line.rstrip("\n").split(":", 2)
    for root in roots:
        d = root + path
        if "cpu" in controllers.split(",") and os.path.exists(d + "/cpu.cfs_period_us"):
            limit = (open(d + "/cpu.cfs_quota_us").read().strip(),
                     open(d + "/cpu.cfs_period_us").read().strip())
        elif controllers == "" and os.path.exists(d + "/cpu.max"):
            limit = tuple(open(d + "/cpu.max").read().split())
cpus = sorted(os.sched_getaffinity(0))
rank = os.environ.get("OMPI_COMM_WORLD_RANK")
# A file per rank, not stdout: mpirun's output forwarding can lose what a process prints just
# before it exits (a CI run lost two of the four lines even with a second's sleep after them).
tmp = os.path.join(outdir, f".rank{rank}.tmp")
with open(tmp, "w") as f:
    f.write(" ".join(["rank", str(rank), ",".join(map(str, cpus)),
                      " ".join(limit) if limit else "none none"]) + "\n")
os.rename(tmp, os.path.join(outdir, f"rank{rank}"))
"""


def test_pinning(args):
    """Each CPU slot runs on one core: slot r on the r-th usable CPU (modulo their number), for
    any launcher (here mpirun, whose own binding the slot overrides); and each slot has its own
    CFS period (the platform's period_spread, default 0.05): slot 0 the platform's 10 ms, the
    others distinct and at most 5% longer, every one with a quota of 50% of its period."""
    need()
    usable = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="invmw-pinning-") as outdir:
        rc, _ = run_exec(args, "emu-4x50-shm",
                         mpirun(args, "emu-4x50-shm", 4,
                                [sys.executable, "-c", SHOW_SLOT, outdir] + CPU_ROOTS), ranks=4)
        check(rc == 0, f"4 ranks on emu-4x50-shm exited {rc}")
        lines = [open(os.path.join(outdir, n)).read() for n in sorted(os.listdir(outdir))
                 if n.startswith("rank")]
    got, limits = {}, {}
    for line in lines:
        f = line.split()
        if len(f) == 5 and f[0] == "rank":
            got[f[1]] = f[2]
            limits[int(f[1])] = (int(f[3]), int(f[4])) if f[3].isdigit() and f[4].isdigit() else None
    want = {str(r): str(usable[r % len(usable)]) for r in range(4)}
    print(f"usable CPUs {usable}; CPU of each slot: {got}; (quota, period) us: {limits}")
    check(got == want, f"slot r runs on CPU usable[r % {len(usable)}]: want {want}, got {got}")
    periods = [(limits.get(r) or (0, 0))[1] for r in range(4)]
    check(None not in limits.values() and len(limits) == 4, "every rank's slot limit was read")
    check(periods[0] == 10000, f"slot 0 has the platform's period (got {periods[0]} us)")
    check(len(set(periods)) == 4 and all(10000 <= t <= 10500 for t in periods),
          f"the four periods are distinct, within 10000-10500 us: {periods}")
    check(all(v and abs(v[0] - v[1] / 2) <= 1 for v in limits.values()),
          f"every slot's quota is 50% of its own period: {limits}")


# The transfer: a receiver and a sender, two processes in two CPU slots of the namespace.
TRANSFER = r"""
import socket, sys, time
role, port, nbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if role == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(1)
    open(sys.argv[4], "w").close()  # listening
    c, _ = s.accept(); got = 0; t0 = None
    while got < nbytes:
        b = c.recv(1 << 20)
        if not b: break
        if t0 is None: t0 = time.monotonic()
        got += len(b)
    c.sendall(b"k"); t = time.monotonic() - t0
    print(f"received {got} seconds {t:.4f}")
else:
    c = socket.create_connection(("127.0.0.1", port)); chunk = b"x" * (1 << 20); left = nbytes
    while left > 0:
        n = min(left, len(chunk)); c.sendall(chunk[:n]); left -= n
    c.recv(1)
"""


def transfer(args, platform, nbytes):
    flag = f"/tmp/invmw-emutest-{os.getpid()}.listening"
    script = (
        f"INVMW_EMULATE_RANK=0 {args.invmw} platform slot -- {sys.executable} -c '{TRANSFER}' "
        f"recv 5555 {nbytes} {flag} & "
        f"while [ ! -e {flag} ]; do sleep 0.02; done; rm -f {flag}; "
        f"INVMW_EMULATE_RANK=1 {args.invmw} platform slot -- {sys.executable} -c '{TRANSFER}' "
        f"send 5555 {nbytes}; wait")
    rc, out = run_exec(args, platform, ["sh", "-c", script], ranks=2)
    m = re.search(r"received (\d+) seconds ([0-9.]+)", out)
    check(rc == 0 and m is not None and int(m.group(1)) == nbytes,
          f"{nbytes} bytes arrived on {platform} (rc {rc}, {out.strip()})")
    return float(m.group(2)) if m else float("nan")


def test_tcp_rate(args):
    need(netns=True)
    nbytes = 50 * 1000 * 1000
    t = transfer(args, "emu-4x50-100mbit", nbytes)
    ideal = nbytes * 8 / 100e6
    print(f"50 MB over TCP on 100 Mbit/s: {t:.3f} s, the rate implies {ideal:.3f} s "
          f"({nbytes * 8 / t / 1e6:.1f} Mbit/s)")
    check(t >= 0.9 * ideal, f"the transfer takes >= 90% of the rate's time ({t / ideal:.1%})")
    check(t <= 1.5 * ideal, f"and not much more ({t / ideal:.1%})")


# Receiver of N concurrent connections, or one sender of N bytes (no single quotes: it goes
# inside sh -c '...').
CONCURRENT = r"""
import socket, sys, threading
mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "recv":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(8); open(sys.argv[4], "w").close()
    def drain(c):
        while c.recv(1 << 16):
            pass
    ts = [threading.Thread(target=drain, args=(s.accept()[0],)) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("drained", n)
else:
    c = socket.create_connection(("127.0.0.1", port)); c.sendall(b"x" * n); c.close()
"""


def test_no_loss(args):
    """Three senders at once on 10 Mbit/s: the bucket's queue holds what TCP puts in flight, so
    nothing is dropped and no segment waits for a retransmission timeout."""
    need(netns=True)
    platform = args.loss_platform
    flag = f"/tmp/invmw-emutest-{os.getpid()}.listening"
    slot = f"{args.invmw} platform slot --"
    py = f"{sys.executable} -c '{CONCURRENT}'"
    script = (
        f"INVMW_EMULATE_RANK=0 {slot} {py} recv 5556 3 {flag} & "
        f"i=0; while [ ! -e {flag} ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i+1)); done; "
        f"rm -f {flag}; "
        + "".join(f"INVMW_EMULATE_RANK={r} {slot} {py} send 5556 300000 & " for r in (1, 2, 3))
        + "wait; tc -s qdisc show dev lo; cat /proc/net/snmp")
    rc, out = run_exec(args, platform, ["sh", "-c", script], ranks=4)
    check(rc == 0 and "drained 3" in out, f"three transfers arrived on {platform} (rc {rc})")
    dropped = re.search(r"dropped (\d+)", out)
    tcp = [line.split()[1:] for line in out.splitlines() if line.startswith("Tcp:")]
    retrans = int(tcp[1][tcp[0].index("RetransSegs")]) if len(tcp) == 2 else -1
    out_segs = int(tcp[1][tcp[0].index("OutSegs")]) if len(tcp) == 2 else -1
    print(f"3 x 300 kB at once on {platform}: dropped {dropped.group(1) if dropped else '?'}, "
          f"retransmitted {retrans} of {out_segs} segments")
    check(dropped is not None and int(dropped.group(1)) == 0, "the token bucket dropped nothing")
    check(0 <= retrans <= max(3, out_segs // 100), "at most 1% of the segments retransmitted")


def test_mpi_rate(args):
    need(netns=True)
    for platform, rate in [("emu-4x50-100mbit", 100e6), ("emu-4x50-10mbit", 10e6)]:
        nbytes = 50 * 1000 * 1000 if rate >= 100e6 else 5 * 1000 * 1000
        rc, out = run_exec(args, platform, mpirun(args, platform, 2, [
            os.path.join(args.bin, "emu_pingpong"), "--bytes", str(nbytes), "--reps", "2",
            "--warmup", "0"]), ranks=2)
        m = re.search(r"mean_s ([0-9.e+-]+)", out)
        check(rc == 0 and m is not None, f"MPI ping-pong of {nbytes} B on {platform} ran")
        if m:
            t = float(m.group(1))
            ideal = nbytes * 8 / rate
            print(f"MPI {nbytes} B one way on {platform}: {t:.3f} s, rate implies {ideal:.3f} s")
            check(t >= 0.9 * ideal, f"MPI transfer on {platform} >= 90% of the rate's time "
                  f"({t / ideal:.1%})")


def test_pingpong(args):
    """The busy-poll artefact: 8-byte half round trip at 25% per rank (figures, loose bound)."""
    need()
    rc, out = run_exec(args, "emu-8x25-shm", mpirun(args, "emu-8x25-shm", 2, [
        os.path.join(args.bin, "emu_pingpong"), "--reps", "1000", "--seconds", "5"]), ranks=2)
    m = re.search(r"mean_s ([0-9.e+-]+) max_s ([0-9.e+-]+)", out)
    check(rc == 0 and m is not None, "ping-pong ran on emu-8x25-shm")
    if m:
        print(f"8 B half round trip at 25%: mean {float(m.group(1)) * 1e6:.1f} us, "
              f"max {float(m.group(2)) * 1e6:.0f} us")
        check(float(m.group(1)) < 1e-3, "mean half round trip stays under 1 ms")


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    check(False, f"timed out waiting for {what}")
    return False


def start_sleeper(args, platform, seconds=60):
    """An exec of `platform` whose command (rank 0's slot) sleeps; returns once it is set up."""
    env = dict(ENV, INVMW_EMULATE_RANK="0")
    p = subprocess.Popen(exec_cmd(args, platform,
                                  [args.invmw, "platform", "slot", "--", "sleep", str(seconds)]),
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kinds = 2 if "mbit" in platform or "tcp" in platform else 1  # cgroup (+ netns)
    wait_for(lambda: len(resources(p.pid)) == kinds, 10, f"exec {p.pid} to set up")
    return p


def slot_member_count(pid):
    n = 0
    for root in CPU_ROOTS:
        for g in os.listdir(root):
            if g.startswith(f"invmw-{pid}-"):
                for s in os.listdir(os.path.join(root, g)):
                    if s.startswith("slot-"):
                        with open(os.path.join(root, g, s, "cgroup.procs")) as f:
                            n += len(f.read().split())
    return n


def test_cleanup(args):
    need(netns=True)
    plat = "emu-4x50-100mbit"
    # A failing command: its status comes back, nothing stays.
    rc, _ = run_exec(args, plat, ["sh", "-c", "exit 3"])
    check(rc == 3, f"the command's exit status is returned (got {rc})")
    # A command that cannot be started.
    rc, _ = run_exec(args, plat, ["/nonexistent/program"])
    check(rc == 127, f"a command that cannot start gives 127 (got {rc})")

    # SIGTERM and SIGINT sent to exec: passed on, everything removed, exec dies of the signal.
    for sig in (signal.SIGTERM, signal.SIGINT):
        p = start_sleeper(args, plat)
        wait_for(lambda: slot_member_count(p.pid) == 1, 10, "the sleeper to join its slot")
        p.send_signal(sig)
        p.communicate(timeout=15)
        check(p.returncode == -sig, f"exec ends by {sig.name} (returncode {p.returncode})")
        check(resources(p.pid) == [], f"nothing left after {sig.name}: {resources(p.pid)}")

    # SIGKILL: the resources stay (nobody could remove them), the command is stopped by its
    # parent-death signal, and the next start removes them while a live run keeps its own.
    killed = start_sleeper(args, plat)
    wait_for(lambda: slot_member_count(killed.pid) == 1, 10, "the sleeper to join its slot")
    killed.kill()
    killed.communicate(timeout=10)
    check(len(resources(killed.pid)) == 2,
          f"a SIGKILLed exec leaves its cgroup and namespace: {resources(killed.pid)}")
    wait_for(lambda: slot_member_count(killed.pid) == 0, 5,
             "the killed run's command to stop (parent-death signal)")
    live = start_sleeper(args, plat)  # the next start
    check(resources(killed.pid) == [],
          f"the next start removed the killed run's leftovers: {resources(killed.pid)}")
    other = start_sleeper(args, "emu-8x25-shm")
    c = subprocess.run([args.invmw, "platform", "cleanup"], capture_output=True, text=True)
    check(c.returncode == 0 and len(resources(live.pid)) == 2 and len(resources(other.pid)) == 1,
          "`platform cleanup` and other starts leave live runs alone")
    for p in (live, other):
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=15)
        check(resources(p.pid) == [], f"nothing of exec {p.pid} left after SIGINT")

    # Not root-only errors: an unknown platform, too many ranks.
    r = subprocess.run(exec_cmd(args, "emu-8x25-shm", ["true"], ranks=9), capture_output=True,
                       text=True)
    check(r.returncode == 125 and "8 virtual nodes" in r.stderr,
          f"too many ranks is refused clearly ({r.returncode}: {r.stderr.strip()})")
    # Without root: a clear refusal (125), while `local` still runs. The checkout may lie under a
    # directory other users cannot enter (a private mktemp -d, /root): the user then runs a copy
    # of invmw and of the platform files in a directory everybody can read.
    if shutil.which("setpriv"):
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        stage = stage_for_other_users(args)
    else:
        stage = None
        print("SKIP (part): no setpriv, the non-root checks did not run")
    if stage:
        try:
            invmw = os.path.join(stage, "bin", "invmw")
            as_nobody = dict(os.environ)
            as_nobody.pop("INVMW_EMULATE_DIR", None)
            r = subprocess.run(nobody + [invmw, "platform", "exec", plat, "--", "true"],
                               capture_output=True, text=True, cwd=stage, env=as_nobody)
            check(r.returncode == 125 and "needs root" in r.stderr,
                  f"not root: refused clearly ({r.returncode}: {r.stderr.strip()})")
            r = subprocess.run(nobody + [invmw, "platform", "exec", "local", "--", "sh", "-c",
                                         "exit 4"],
                               capture_output=True, text=True, cwd=stage, env=as_nobody)
            check(r.returncode == 4,
                  f"not root: `local` runs (rc {r.returncode}: {r.stderr.strip()})")
            # Platform files the user may not read: that error, naming the path, not "no run
            # platform".
            private = os.path.join(stage, "private")
            shutil.copytree(platforms_dir(args), private)
            os.chmod(private, 0o700)
            r = subprocess.run(nobody + [invmw, "platform", "exec", plat, "--", "true"],
                               capture_output=True, text=True, cwd=stage,
                               env=dict(as_nobody, INVMW_EMULATE_DIR=private))
            check(r.returncode != 0 and "Permission denied" in r.stderr and private in r.stderr
                  and "no run platform" not in r.stderr,
                  f"unreadable platform files: the permission error with the path "
                  f"({r.returncode}: {r.stderr.strip()})")
        finally:
            shutil.rmtree(stage)


def platforms_dir(args):
    """The platform files the tested invmw reads (platform.cc PlatformsDir)."""
    if os.environ.get("INVMW_EMULATE_DIR"):
        return os.environ["INVMW_EMULATE_DIR"]
    installed = os.path.join(os.path.dirname(os.path.realpath(args.invmw)), "..", "share", "invmw",
                             "emulated")
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "emulated")


def traversable_by_others(path):
    path = os.path.realpath(path)
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        if path == "/":
            return True
        path = os.path.dirname(path)


def stage_for_other_users(args):
    """A directory every user can read with bin/invmw and share/invmw/emulated (the installed
    layout, found next to the binary)."""
    bases = [tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"]
    base = next((b for b in bases if os.path.isdir(b) and traversable_by_others(b)), None)
    if base is None:
        print("SKIP (part): no directory other users can enter, the non-root checks did not run")
        return None
    stage = tempfile.mkdtemp(prefix="invmw-emutest-", dir=base)
    os.chmod(stage, 0o755)
    os.makedirs(os.path.join(stage, "bin"))
    shutil.copy2(args.invmw, os.path.join(stage, "bin", "invmw"))
    shutil.copytree(platforms_dir(args), os.path.join(stage, "share", "invmw", "emulated"))
    for root, dirs, files in os.walk(stage):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o755 if f == "invmw" else 0o644)
    return stage


def test_no_leftovers(args):
    """After the suite's platform tests: no invmw-* cgroup or namespace of any run remains."""
    need()
    left = resources()
    check(not left, f"no invmw cgroup or network namespace left after the tests: {left}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("test", choices=["quota", "scaling", "tcp_rate", "cleanup", "pinning",
                                     "mpi_rate", "pingpong", "no_leftovers", "no_loss"])
    ap.add_argument("--loss-platform", default="emu-4x50-10mbit",
                    help="platform (name or file) of no_loss, e.g. one with queue = \"50ms\"")
    args = ap.parse_args()
    t0 = time.monotonic()
    globals()["test_" + args.test](args)
    print(f"{args.test}: {time.monotonic() - t0:.1f} s, {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
