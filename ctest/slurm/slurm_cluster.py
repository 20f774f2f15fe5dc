#!/usr/bin/env python3
"""A real single-host Slurm (Debian slurm-wlm 22.05, munge) for the tests labelled `slurm`.

Everything lives in one temporary directory: a private munge key and socket, a generated
slurm.conf with non-default ports, and the state, spool, log and pid files. The daemons run in
the foreground as children of this process, which also makes itself the child subreaper, so the
slurmstepd processes that slurmd detaches are re-parented here rather than to init. Teardown
cancels the jobs, then ends every descendant of this process by its pid (never by name),
waits for them, and removes the directory; it checks that nothing of it is left.

With nodes > 1 (`--nodes N`), N slurmd daemons run on this host as nodes node1..nodeN (Debian's
slurmd needs no multiple-slurmd build for this: each node has its own port, spool, pid and log
file). Each runs in its own UTS namespace (`unshare --uts`, gone with the process) whose host
name is the node's name, so the ranks of each node see that name (gethostname) as on a real
cluster, and each has its own copy of slurm.conf that differs only in TmpFS: Slurm's PMIx plugin
makes its per-step directory `TmpFS/spmix_appdir_<uid>_<job>.<step>` there, which two slurmd
daemons sharing one TmpFS both try to create (the second step fails with EEXIST).
DebugFlags=NO_CONF_HASH tells slurmctld that the copies differ on purpose.

Use as a context manager (`with SlurmCluster() as c: ... c.env ...`), or run a command under
it: `slurm_cluster.py [--cpus N] [--nodes N] -- CMD ARGS...` exits with the command's status, or with 77
(CTest's SKIP_RETURN_CODE of the slurm tests) and the reason on stderr when the daemons cannot
start here (not root, slurm-wlm or munge missing, daemons failing).
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
PR_SET_CHILD_SUBREAPER = 36


class CannotStart(Exception):
    """The daemons cannot run here; the message says why (the test is skipped with it)."""


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children_of(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: the fields after the last
        # ')' are state, ppid, ...
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for k in _children_of(todo.pop()):
            out.append(k)
            todo.append(k)
    return out


class SlurmCluster:
    def __init__(self, cpus=8, kill_wait=2, extra_conf=(), nodes=1):
        self.cpus = cpus
        self.nodes = nodes
        self.kill_wait = kill_wait
        self.extra_conf = list(extra_conf)
        self.dir = None
        self.procs = {}
        self.env = None
        self.node = None
        self.start_seconds = None

    # --- start ---------------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _check_can_start(self):
        if os.geteuid() != 0:
            raise CannotStart("the single-host Slurm needs root (slurmd runs jobs as their user)")
        tools = ["munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scontrol"]
        if self.nodes > 1:
            tools.append("unshare")
        for tool in tools:
            if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
                raise CannotStart(f"{tool} not found (Debian packages slurm-wlm and munge, "
                                  "scripts/setup.sh)")

    def start(self):
        self._check_can_start()
        t0 = time.monotonic()
        # Descendants that lose their parent (slurmd forks slurmstepd and lets it go) come to
        # this process, so teardown finds every one of them by pid.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self.dir = tempfile.mkdtemp(prefix="invmw-slurm-")
        d = self.dir
        for sub in ("munge", "state", "spool", "log", "run", "tmp"):
            os.mkdir(os.path.join(d, sub), 0o700)
        key = os.path.join(d, "munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        os.write(fd, os.urandom(1024))
        os.close(fd)
        self.munge_socket = os.path.join(d, "munge", "munge.socket")
        sbin = "/usr/sbin"
        self._spawn("munged", [shutil.which("munged") or sbin + "/munged", "-F", "--force",
                               "--key-file", key, "--socket", self.munge_socket,
                               "--pid-file", os.path.join(d, "run", "munged.pid"),
                               "--log-file", os.path.join(d, "log", "munged.log"),
                               "--seed-file", os.path.join(d, "munge", "munged.seed")])
        self._wait_for(lambda: os.path.exists(self.munge_socket), "munged", 10)

        # slurmctld runs on this host under its own name; the nodes take that name too when
        # there is one, else node1..nodeN.
        self.ctld_host = socket.gethostname().split(".")[0]
        if self.nodes > 1:
            self.node_names = [f"node{i}" for i in range(1, self.nodes + 1)]
        else:
            self.node_names = [self.ctld_host]
        self.node = self.node_names[0]
        self.ctld_port = _free_port()
        self.slurmd_ports = [_free_port() for _ in self.node_names]
        self.slurmd_port = self.slurmd_ports[0]
        conf = os.path.join(d, "slurm.conf")
        with open(conf, "w") as f:
            f.write(self._conf())
        self.conf = conf
        env = dict(os.environ)
        env["SLURM_CONF"] = conf
        # Clients of an outer allocation would otherwise talk to that job.
        for k in list(env):
            if k.startswith(("SLURM_JOB", "SLURM_STEP", "SLURM_NODELIST", "SLURM_NTASKS")):
                del env[k]
        self.env = env
        self._spawn("slurmctld", [shutil.which("slurmctld") or sbin + "/slurmctld", "-D", "-i",
                                  "-f", conf])
        slurmd = shutil.which("slurmd") or sbin + "/slurmd"
        if self.nodes == 1:
            self._spawn("slurmd", [slurmd, "-D", "-f", conf, "-N", self.node])
        for name in (self.node_names if self.nodes > 1 else []):
            node_conf = os.path.join(d, "conf-" + name, "slurm.conf")
            os.makedirs(os.path.dirname(node_conf), 0o700)
            os.makedirs(os.path.join(d, "tmp", name), 0o700)
            os.makedirs(os.path.join(d, "spool", name), 0o700)
            with open(node_conf, "w") as f:
                f.write(self._conf(tmpfs=os.path.join(d, "tmp", name)))
            # unshare execs sh, which sets the namespace's host name and execs slurmd: the
            # recorded pid is slurmd's.
            self._spawn("slurmd-" + name,
                        [shutil.which("unshare") or "unshare", "--uts", "--", "sh", "-c",
                         'hostname "$0" && exec "$@"', name, slurmd, "-D", "-f", node_conf,
                         "-N", name])
        self._wait_for(self._node_idle, "slurmd (node idle in sinfo)", 30)
        self.start_seconds = time.monotonic() - t0
        return self

    def _conf(self, tmpfs=None):
        d = self.dir
        multi = self.nodes > 1
        spool = f"{d}/spool/%n" if multi else f"{d}/spool"
        slurmd_files = "slurmd-%n" if multi else "slurmd"
        lines = [
            "ClusterName=invmwtest",
            f"SlurmctldHost={self.ctld_host}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={spool}",
            f"SlurmctldPidFile={d}/run/slurmctld.pid",
            f"SlurmdPidFile={d}/run/{slurmd_files}.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/{slurmd_files}.log",
            f"TmpFS={tmpfs or d + '/tmp'}",
            # What runs in an unprivileged container without cgroup or affinity control.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            # Debian's Open MPI aborts in MPI_Init under --mpi=pmi2 or none.
            "MpiDefault=pmix",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            f"KillWait={self.kill_wait}",
            "InactiveLimit=0",
            "MinJobAge=300",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "MessageTimeout=30",
            # More CPUs than the machine's cores: ranks oversubscribe like mpirun --oversubscribe.
            "SlurmdParameters=config_overrides",
        ]
        if not multi:
            lines.append(f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN")
        else:
            # The slurm.conf copies of the nodes differ in TmpFS (see the module's comment).
            lines.append("DebugFlags=NO_CONF_HASH")
            for name, port in zip(self.node_names, self.slurmd_ports):
                lines.append(f"NodeName={name} NodeHostname={name} NodeAddr=127.0.0.1 "
                             f"Port={port} CPUs={self.cpus} State=UNKNOWN")
        nodes = f"node[1-{self.nodes}]" if multi else self.node
        lines.append(f"PartitionName=debug Nodes={nodes} Default=YES MaxTime=INFINITE State=UP")
        lines += self.extra_conf
        return "\n".join(lines) + "\n"

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, "log", name + ".out"), "wb")
        self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=self.dir)
        log.close()

    def _wait_for(self, ready, what, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise CannotStart(f"{name} exited with {p.returncode} while starting:\n" +
                                      self.logs())
            if ready():
                return
            time.sleep(0.1)
        raise CannotStart(f"{what} not ready after {seconds} s:\n" + self.logs())

    def _node_idle(self):
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env,
                           capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.split() == ["idle"] * self.nodes

    def logs(self):
        out = []
        logdir = os.path.join(self.dir, "log") if self.dir else None
        if logdir and os.path.isdir(logdir):
            for name in sorted(os.listdir(logdir)):
                with open(os.path.join(logdir, name), errors="replace") as f:
                    text = f.read()
                out.append(f"--- {name} (last lines)\n" + "\n".join(text.splitlines()[-15:]))
        return "\n".join(out)

    # --- helpers for tests -----------------------------------------------------------------
    def run(self, argv, **kw):
        kw.setdefault("env", self.env)
        return subprocess.run(argv, **kw)

    def wait_no_jobs(self, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            r = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True,
                               text=True)
            if r.returncode == 0 and not r.stdout.strip():
                return True
            time.sleep(0.2)
        return False

    def job_state(self, jobid):
        """State of a finished or running job from slurmctld (MinJobAge keeps it listed)."""
        r = subprocess.run(["scontrol", "-o", "show", "job", str(jobid)], env=self.env,
                           capture_output=True, text=True)
        for tok in r.stdout.split():
            if tok.startswith("JobState="):
                return tok.split("=", 1)[1]
        return None

    # --- teardown --------------------------------------------------------------------------
    def stop(self):
        if self.env and self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            subprocess.run(["scancel", "--full", "-u", "root"], env=self.env,
                           capture_output=True, timeout=30)
            self.wait_no_jobs(15)
        # Daemons first in the reverse order of their start, each by its recorded pid.
        slurmds = ["slurmd"] + ["slurmd-" + n for n in getattr(self, "node_names", [])]
        for name in slurmds + ["slurmctld", "munged"]:
            p = self.procs.get(name)
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        # Whatever they left (slurmstepd, job processes) was re-parented to this process.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = descendants(os.getpid())
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            while left and time.monotonic() < deadline:
                self._reap()
                left = descendants(os.getpid())
                time.sleep(0.05)
        self._reap()
        if self.dir and os.path.isdir(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.leftover = descendants(os.getpid())

    @staticmethod
    def _reap():
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return


def main(argv):
    cpus, nodes = 8, 1
    while argv[:1] in (["--cpus"], ["--nodes"]):
        if argv[0] == "--cpus":
            cpus = int(argv[1])
        else:
            nodes = int(argv[1])
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: slurm_cluster.py [--cpus N] [--nodes N] -- CMD ARGS...", file=sys.stderr)
        return 2
    try:
        cluster = SlurmCluster(cpus=cpus, nodes=nodes).__enter__()
    except CannotStart as e:
        print(f"SKIP: single-host Slurm cannot start here: {e}", file=sys.stderr)
        return SKIP
    try:
        print(f"slurm: daemons up in {cluster.start_seconds:.2f} s ({cluster.dir})",
              file=sys.stderr)
        rc = subprocess.run(argv, env=cluster.env).returncode
    finally:
        cluster.__exit__(None, None, None)
    if cluster.leftover:
        print(f"slurm: processes left after teardown: {cluster.leftover}", file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
