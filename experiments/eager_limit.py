#!/usr/bin/env python3
"""Where does a transfer land in the inverse mapping, eager or rendezvous? (issue 20, item 4)

Runs opal-mini (p servers) traced on an emulated platform with its coordinate messages (24 n
bytes) below and above Open MPI's TCP eager limit, and with the limit moved
(`OMPI_MCA_btl_tcp_eager_limit`), analyses each trace with `invmw analyze --opal` and prints per
configuration the medians over replications of the mapping's t_comm, t_sync, t_idle and
t_comm_after_return (the requests' wire time after the client's send returned, which the mapping
counts in t_comm), and the model's t_comm from a platform table (a1, b1).

    python3 experiments/eager_limit.py --invmw build/bin/invmw --opal-mini build/bin/opal-mini \
        --platform emu-4x50-100mbit --table TABLE.toml --work DIR [--invmw-old OLD_INVMW]

--invmw-old also analyses every trace with another invmw (e.g. one built before the mapping
counted eager transfers as t_comm) for a before/after table. Needs root (emulated platform).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tomllib


def table_params(path):
    with open(path, "rb") as f:
        t = tomllib.load(f)
    return {k: v["value"] for k, v in t["parameters"].items()}


def model_t_comm(par, s, p, u, n, alpha=24):
    return s * (p * (alpha / (par["a1"] * 1e6)) * (u + 2) * n + 2 * p * par["b1"] * (u + 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--invmw-old")
    ap.add_argument("--opal-mini", required=True)
    ap.add_argument("--platform", default="emu-4x50-100mbit")
    ap.add_argument("--table", required=True, help="the platform's probed table (a1, b1)")
    ap.add_argument("--work", required=True, help="a new directory for the runs")
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--replications", type=int, default=3)
    ap.add_argument("--config", action="append",
                    help="N:EAGER_LIMIT (bytes, 0 = Open MPI's default); repeatable")
    a = ap.parse_args()
    configs = a.config or ["1500:0", "1500:16384", "4000:0", "4000:131072"]
    os.makedirs(a.work)  # must not exist: never mixes with or overwrites other runs
    par = table_params(a.table)
    launcher = subprocess.run([a.invmw, "platform", "exec", "--print-launcher", a.platform],
                              capture_output=True, text=True, check=True).stdout.split()
    ranks = a.servers + 1
    results = {}
    for rep in range(a.replications):
        for c in configs:  # interleaved: the machine's drift hits every configuration alike
            n, limit = (int(x) for x in c.split(":"))
            out = os.path.join(a.work, "n%d-l%d-r%d" % (n, limit, rep))
            env = dict(os.environ)
            if limit:
                env["OMPI_MCA_btl_tcp_eager_limit"] = str(limit)
            argv = ([a.invmw, "platform", "exec", a.platform, "--ranks", str(ranks), "--",
                     a.invmw, "run", "--trace", "--quiet", "--out", out, "--", "mpirun"] +
                    launcher + ["-np", str(ranks), a.invmw, "platform", "slot", "--",
                                a.opal_mini, "--n", str(n), "--u", "1", "--rc", "0", "--s",
                                str(a.steps), "--seed", "1"])
            r = subprocess.run(argv, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("run failed (%d): %s\n%s" % (r.returncode, " ".join(argv),
                                                       r.stderr[-2000:]))
            for tag, inv in (("new", a.invmw), ("old", a.invmw_old)):
                if not inv:
                    continue
                j = os.path.join(out, "opal-%s.json" % tag)
                subprocess.run([inv, "analyze", "--opal", "--quiet", "--threads", "1", "--json",
                                j, out], check=True, capture_output=True)
                with open(j) as f:
                    o = json.load(f)["opal"]
                results.setdefault((c, tag), []).append(o)
    keys = ["t_wall", "t_par_comp", "t_comm", "t_sync", "t_idle", "t_comm_after_return"]
    print("platform %s, p = %d, s = %d, u = 1; a1 = %.3f MB/s, b1 = %.1f us (%s)"
          % (a.platform, a.servers, a.steps, par["a1"], par["b1"] * 1e6, a.table))
    print("medians over %d replications, ms" % a.replications)
    print("%-8s %-7s %-6s %-5s " % ("n", "bytes", "limit", "map") +
          " ".join("%10s" % k.replace("t_comm_after_return", "after_ret") for k in keys) +
          " %10s" % "model_comm")
    for c in configs:
        n, limit = (int(x) for x in c.split(":"))
        for tag in ("old", "new"):
            rows = results.get((c, tag))
            if not rows:
                continue
            med = [statistics.median(r.get(k, 0.0) for r in rows) * 1e3 for k in keys]
            print("%-8d %-7d %-6s %-5s " % (n, 24 * n, limit or "64Ki", tag) +
                  " ".join("%10.2f" % v for v in med) +
                  " %10.2f" % (model_t_comm(par, a.steps, a.servers, 1, n) * 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
