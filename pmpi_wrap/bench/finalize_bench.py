"""What the MPI_Finalize benchmarks share (finalize_time.py, profile_merge_time.py): one run of a
benchmark program under `invmw run` with the per-rank `finalize RANK ... CPU WALL` lines it
prints, and interleaved rounds of variants summarised by medians.

Why one module: both harnesses ran, parsed and summarised the same way; a change to the
program's output line or to `invmw run`'s options now has one place to go.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def arguments(description, bench_rounds_option, bench_rounds_default):
    """The common command line (--invmw --lib --bench --launcher --np --rounds) and the option
    giving the benchmark program its argument."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument('--invmw', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--bench', required=True)
    ap.add_argument('--launcher', default='mpirun.openmpi')
    ap.add_argument('--np', default='2,4,8,16')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument(bench_rounds_option, type=int, default=bench_rounds_default)
    return ap.parse_args()


def run(a, np, invmw_options, bench_arg, prefix, inspect):
    """Runs `invmw run --out DIR --lib LIB INVMW_OPTIONS -- LAUNCHER --oversubscribe -np NP BENCH
    BENCH_ARG` (the sampler off) in a temporary directory, removed afterwards. Exits on a failed
    run or when not every rank printed its finalize line. Returns inspect(res, run_dir, summary,
    cmd), res the subprocess.run result, summary the largest CPU time in MPI_Finalize over the
    ranks (max_cpu), rank 0's (rank0_cpu) and the largest wall time (wall)."""
    out = tempfile.mkdtemp(prefix=prefix)
    run_dir = os.path.join(out, 'run')
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    cmd = ([a.invmw, 'run', '--out', run_dir, '--lib', a.lib] + invmw_options +
           ['--env', 'INVMW_SAMPLER_ENABLE=0', '--', a.launcher, '--oversubscribe', '-np',
            str(np), a.bench, str(bench_arg)])
    try:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if res.returncode != 0:
            sys.exit(f'benchmark failed: {" ".join(cmd)}\n{res.stdout}\n{res.stderr}')
        ranks = {}
        for line in res.stdout.splitlines():
            f = line.split()
            if len(f) == 5 and f[0] == 'finalize':
                ranks[int(f[1])] = (float(f[3]), float(f[4]))
        if len(ranks) != np:
            unexpected(cmd, res)
        cpu = [ranks[r][0] for r in range(np)]
        summary = dict(max_cpu=max(cpu), rank0_cpu=cpu[0], wall=max(w for _, w in ranks.values()))
        return inspect(res, run_dir, summary, cmd)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def unexpected(cmd, res):
    sys.exit(f'unexpected output of {" ".join(cmd)}:\n{res.stdout}\n{res.stderr}')


def rounds(a, variants, run_one):
    """Per rank count of --np: --rounds rounds, each running every variant once (so that machine
    noise hits them alike); yields (np, med) with med(variant, key) the median of run_one(np,
    variant)[key] over the rounds."""
    for np in [int(x) for x in a.np.split(',')]:
        results = {v: [] for v in variants}
        for _ in range(a.rounds):
            for v in results:
                results[v].append(run_one(np, v))

        def med(v, k, results=results):
            return statistics.median(r[k] for r in results[v])
        yield np, med
