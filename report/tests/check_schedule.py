#!/usr/bin/env python3
"""The full and quick pipelines' measurement schedules, built without measuring anything
(scripts/pipeline.sh --schedule-only): every design the schedule names parses and belongs to
its run (the copies of the validation design renamed, their factors not), every target's
validation run has the reference's run of the same point and replication right before it,
and every platform gets its probe rounds and its kernels-only rounds, spread over both halves of
the schedule (the transfer rule's kernel time is their fastest). The full pipeline (README command 1) once stopped at
its first step because the copies' factors were renamed too; only a run of it showed that.

usage: check_schedule.py PIPELINE_SH BUILD_DIR"""
import os
import re
import subprocess
import sys
import tempfile
import tomllib

pipeline, build = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(mode_args, out):
    env = dict(os.environ, BUILD_DIR=build)
    r = subprocess.run(["bash", pipeline, "--schedule-only", "--out", out, *mode_args],
                       env=env, capture_output=True, text=True)
    check(r.returncode == 0, f"pipeline {mode_args} --schedule-only: exit {r.returncode}\n"
          f"{r.stdout}\n{r.stderr}")
    return r.returncode == 0


def schedule_of(out):
    lines = [l.split() for l in open(os.path.join(out, "schedule.txt"))]
    for l in lines:
        check(l[0] in ("probe", "kernels", "run") and len(l) == (5 if l[0] == "run" else 3),
              f"malformed schedule line {l}")
    return lines


with tempfile.TemporaryDirectory() as tmp:
    for mode, args, ref, targets, n_cal in [
            ("full", [], "emu-4x50-shm",
             ["emu-4x50-tcp", "emu-4x50-1gbit", "emu-4x50-100mbit", "emu-4x50-10mbit",
              "emu-8x25-shm"], 2),
            ("quick", ["--quick"], "emu-4x50-shm", ["emu-4x50-100mbit"], 1)]:
        out = os.path.join(tmp, mode)
        if not run(args, out):
            continue
        lines = schedule_of(out)
        designs = {}
        for f in os.listdir(os.path.join(out, "designs")):
            with open(os.path.join(out, "designs", f), "rb") as fh:
                d = tomllib.load(fh)
            designs[f[:-5]] = d
            check(d["name"] == f[:-5], f"{mode}: design file {f} is named {d['name']!r}")
            for fac in d.get("factor", []):
                check(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", fac["name"]) is not None,
                      f"{mode}: {f}: factor name {fac['name']!r}")
        runs = [l for l in lines if l[0] == "run"]
        for l in runs:
            check(l[1] in designs, f"{mode}: schedule names design {l[1]} not in designs/")
        validation = "validation-" + mode
        # Each target's run of (point, rep) comes right after the reference's partner run.
        for t in targets:
            mine = [i for i, l in enumerate(lines)
                    if l[0] == "run" and l[1] == validation and l[2] == t]
            d = designs[validation]
            levels = 1
            for fac in d["factor"]:
                levels *= len(fac["levels"])
            check(len(mine) == levels * d["replications"],
                  f"{mode}: {t}: {len(mine)} validation runs, expected "
                  f"{levels * d['replications']}")
            for i in mine:
                prev = lines[i - 1]
                check(i > 0 and prev[0] == "run" and prev[2] == ref and
                      prev[3:] == lines[i][3:] and prev[1].startswith(validation),
                      f"{mode}: {t}'s run {lines[i]} not preceded by the reference's partner "
                      f"(got {prev})")
            partners = {lines[i - 1][1] for i in mine}
            check(len(partners) == 1, f"{mode}: {t} has partner designs {partners}")
        partner_designs = [{lines[i - 1][1] for i, l in enumerate(lines)
                            if l[0] == "run" and l[1] == validation and l[2] == t}
                           for t in targets]
        flat = [next(iter(p)) for p in partner_designs if p]
        check(len(flat) == len(set(flat)),
              f"{mode}: targets share a partner design: {flat}")
        for p in [ref] + targets:
            check(sum(1 for l in lines if l[0] == "probe" and l[1] == p) >= 2,
                  f"{mode}: platform {p} has fewer than 2 probe rounds")
            kern = [i for i, l in enumerate(lines) if l[0] == "kernels" and l[1] == p]
            check(len(kern) >= 2 and min(kern) < len(lines) // 2 <= max(kern),
                  f"{mode}: platform {p}'s kernels rounds not in both halves: {kern}")
        cal = {l[2] for l in runs if l[1] == "pipeline-" + mode}
        check(len(cal) == n_cal, f"{mode}: calibration runs on {sorted(cal)}")
        print(f"{mode}: {len(lines)} measurements, {len(designs)} designs, "
              f"{len(targets)} paired targets")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("ok")
