#!/usr/bin/env python3
"""CTest sampler.run_collect: `invmw run --collect` receives the ranks' live sample stream.

- Locally: 2 ranks streaming every 5 ms; DIR/collect/summary.json has one stream per rank
  (ranks 0 and 1), each with datagrams received and none lost, no foreign or malformed ones, and
  the collector is gone after the run; the program's output and exit status are unchanged.
- Inside an emulated platform's network namespace (root only; else that part is skipped), where
  the ranks see only the namespace's loopback: the same holds.
- --collect together with INVMW_SAMPLER_STREAM is refused with a message naming both."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
for k in [k for k in ENV if k.startswith("INVMW_") or k == "LD_PRELOAD"]:
    del ENV[k]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=120)


def check_summary(out, label):
    path = os.path.join(out, "collect", "summary.json")
    check(os.path.isfile(path), f"{label}: {path} written")
    if not os.path.isfile(path):
        return
    s = json.load(open(path))
    streams = s["streams"]
    check(sorted(x["rank"] for x in streams) == [0, 1], f"{label}: one stream per rank 0, 1")
    check(all(x["received_datagrams"] >= 5 for x in streams),
          f"{label}: datagrams received from every rank: "
          f"{[x['received_datagrams'] for x in streams]}")
    check(all(x["lost_datagrams"] == 0 for x in streams), f"{label}: none lost on loopback")
    check(s["datagrams"]["foreign"] == 0 and s["datagrams"]["malformed"] == 0,
          f"{label}: nothing foreign or malformed: {s['datagrams']}")
    left = subprocess.run(["pgrep", "-f", "collect --listen 127.0.0.1:0 --out " + out],
                          capture_output=True, text=True).stdout.split()
    check(not left, f"{label}: no collector left running: {left}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--prog", required=True, help="an MPI program that runs ~0.5 s on 2 ranks")
    ap.add_argument("prog_args", nargs="*")
    a = ap.parse_args()
    app = [a.launcher, "--oversubscribe", "-np", "2"]
    with tempfile.TemporaryDirectory(prefix="invmw-run-collect-") as tmp:
        plain = run(app + [a.prog] + a.prog_args)
        out = os.path.join(tmp, "local")
        r = run([a.invmw, "run", "--collect", "--out", out, "--env",
                 "INVMW_SAMPLER_INTERVAL=5ms", "--"] + app + [a.prog] + a.prog_args)
        check(r.returncode == plain.returncode == 0 and r.stdout == plain.stdout,
              f"local: output and exit status unchanged (exit {r.returncode})")
        check_summary(out, "local")

        if os.geteuid() == 0 and os.path.exists("/proc/self/ns/net"):
            out = os.path.join(tmp, "netns")
            launcher = run([a.invmw, "platform", "exec", "--print-launcher",
                            "emu-4x50-tcp"]).stdout.split()
            r = run([a.invmw, "platform", "exec", "emu-4x50-tcp", "--ranks", "2", "--", a.invmw,
                     "run", "--collect", "--out", out, "--env", "INVMW_SAMPLER_INTERVAL=5ms",
                     "--", a.launcher, "-np", "2"] + launcher +
                    [a.invmw, "platform", "slot", "--", a.prog] + a.prog_args)
            if r.returncode == 125:
                print("skip namespace part: the platform cannot be set up here: " + r.stderr)
            else:
                check(r.returncode == 0, f"netns: exit 0 ({r.stderr[-300:]})")
                check_summary(out, "netns (emu-4x50-tcp)")
        else:
            print("skip namespace part: needs root and network namespaces")

        r = run([a.invmw, "run", "--collect", "--out", os.path.join(tmp, "bad"), "--env",
                 "INVMW_SAMPLER_STREAM=127.0.0.1:9", "--"] + app + [a.prog] + a.prog_args)
        check(r.returncode == 2 and "--collect" in r.stderr and "INVMW_SAMPLER_STREAM" in r.stderr,
              f"--collect with INVMW_SAMPLER_STREAM refused: {r.stderr.strip()}")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("all checks passed")


if __name__ == "__main__":
    main()
