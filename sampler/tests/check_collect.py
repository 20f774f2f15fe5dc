#!/usr/bin/env python3
"""End-to-end check of the live stream and `invmw collect`.

Four sampler processes (sampler_testapp) stream to one collector with every 7th datagram
dropped at the sender (INVMW_SAMPLER_TEST_DROP_EVERY=7); garbage, truncated and foreign
datagrams are sent to the collector too. Checks: the collector's loss rate per stream and node
matches what the senders dropped; values it received equal the complete series each process
wrote to raw/samples-R.bin; the complete series' mean rate lies inside the collector's 95%
confidence interval; interpolated series stay monotone; bad datagrams are counted exactly.
"""
import argparse
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import time

HEADER = struct.Struct("<IBBHIiIIQQQHHHH")  # sampler/stream_format.h DatagramHeader (56 bytes)
MAGIC = 0x44534D49
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def fnv1a(data, h=2166136261):
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def datagram(seq, values):
    payload = struct.pack("<%dd" % len(values), *values)
    head = HEADER.pack(MAGIC, 1, 1, HEADER.size, 99, 0, 12345, 0, seq, seq, 1000 + seq, 0, 1, 0,
                       len(values))
    c = fnv1a(payload, fnv1a(head))
    return HEADER.pack(MAGIC, 1, 1, HEADER.size, 99, 0, 12345, c, seq, seq, 1000 + seq, 0, 1, 0,
                       len(values)) + payload


def load_raw(run, rank):
    names, acc, tps = [], [], None
    with open(os.path.join(run, "raw", "metrics-%06d.jsonl" % rank)) as f:
        for line in f:
            j = json.loads(line)
            if j["type"] == "metric":
                names.append(j["name"])
                acc.append(j["mode"] == "accumulated")
            elif j["type"] == "sampler":
                tps = j["ticks_per_second"]
    data = open(os.path.join(run, "raw", "samples-%06d.bin" % rank), "rb").read()
    magic, version, hsize, rsize, r, nmet = struct.unpack_from("<IIIIiI", data, 0)
    assert nmet == len(names) and rsize == 16 + 8 * nmet
    rows = {}
    for off in range(hsize, len(data) - rsize + 1, rsize):
        ticks, sample = struct.unpack_from("<QQ", data, off)
        rows[sample] = (ticks, struct.unpack_from("<%dd" % nmet, data, off + 16))
    return names, acc, tps, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    run, out = os.path.join(a.work, "run"), os.path.join(a.work, "collect")

    col = subprocess.Popen([a.invmw, "collect", "--listen", "127.0.0.1:0", "--out", out,
                            "--duration", "6", "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = col.stderr.readline()
    check("listening on 127.0.0.1:" in line, "collector did not report its address: " + line)
    port = int(line.strip().rsplit(":", 1)[1])

    env = dict(os.environ, INVMW_SAMPLER_STREAM="127.0.0.1:%d" % port,
               INVMW_SAMPLER_TEST_DROP_EVERY="7", INVMW_SAMPLER_INTERVAL="10ms")
    works = ["busy", "sleep", "busy", "sleep"]
    procs = [subprocess.Popen([a.app, run, str(r), "4", "1" if r == 0 else "0", "1.5", works[r]],
                              env=env, stdout=subprocess.PIPE, text=True) for r in range(4)]

    # Bad input while the streams run: garbage, truncated datagrams, foreign ones.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rng = random.Random(7)
    foreign = malformed = 0
    good = datagram(0, [1.0, 2.0, 3.0])
    for i in range(40):  # foreign: other protocols, wrong version
        s.sendto(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))), ("127.0.0.1", port))
        foreign += 1
    s.sendto(b"GET / HTTP/1.0\r\n\r\n", ("127.0.0.1", port))
    foreign += 1
    s.sendto(good[:4] + b"\x02" + good[5:], ("127.0.0.1", port))  # version 2
    foreign += 1
    for cut in range(5, len(good)):  # every truncation that keeps magic and version
        s.sendto(good[:cut], ("127.0.0.1", port))
        malformed += 1
    bad = bytearray(good)
    bad[-1] ^= 0x55  # checksum mismatch
    s.sendto(bytes(bad), ("127.0.0.1", port))
    malformed += 1
    s.sendto(good + b"\0" * 600, ("127.0.0.1", port))  # oversized
    malformed += 1

    senders = {}
    for r, p in enumerate(procs):
        o, _ = p.communicate(timeout=60)
        check(p.returncode == 0, "sender %d failed" % r)
        senders[r] = json.loads(o.strip().splitlines()[-1])
    stdout, stderr = col.communicate(timeout=60)
    check(col.returncode == 0, "collector failed: " + stderr)
    print(stdout)
    summary = json.load(open(os.path.join(out, "summary.json")))

    d = summary["datagrams"]
    check(d["foreign"] == foreign, "foreign %d, sent %d" % (d["foreign"], foreign))
    check(d["malformed"] == malformed, "malformed %d, sent %d" % (d["malformed"], malformed))
    check(len(summary["streams"]) == 4, "expected 4 streams, got %d" % len(summary["streams"]))
    check(len(summary["nodes"]) == 1, "expected one node")

    for st in summary["streams"]:
        r = st["rank"]
        snd = senders[r]
        total = snd["sent"] + snd["dropped"]
        print("rank %d: sender dropped %d of %d (%.4f); collector lost %d of %d (%.4f)" % (
            r, snd["dropped"], total, snd["dropped"] / total, st["lost_datagrams"],
            st["expected_datagrams"], st["loss_rate"]))
        # The sender's last datagrams, if dropped, are invisible to the collector (at most one).
        check(0 <= snd["dropped"] - st["lost_datagrams"] <= 1,
              "rank %d: lost %d, dropped %d" % (r, st["lost_datagrams"], snd["dropped"]))
        check(abs(st["loss_rate"] - 1 / 7) < 0.01, "rank %d: loss rate %.4f" % (r, st["loss_rate"]))

        names, acc, tps, rows = load_raw(run, r)
        check(st["metrics"] == names, "rank %d: metric names differ from the raw file" % r)
        series = [json.loads(l) for l in open(os.path.join(out, "merged.log"))
                  if '"rank":%d,' % r in l]
        series = [p for p in series if p["rank"] == r]
        check(len(series) == st["last_sample"] - st["first_sample"] + 1, "rank %d: gaps" % r)
        interp = sum(1 for p in series if p["interpolated"])
        check(interp > 0.08 * len(series), "rank %d: only %d interpolated" % (r, interp))
        for p in series:
            ticks, vals = rows[p["sample"]]
            if not p["interpolated"]:
                check(p["ticks"] == ticks and p["values"] == list(vals),
                      "rank %d sample %d differs from the raw file" % (r, p["sample"]))
                if failures:
                    break
        for k, name in enumerate(names):
            if not acc[k]:
                continue
            vs = [p["values"][k] for p in series]
            check(all(b >= a for a, b in zip(vs, vs[1:])), "rank %d: %s not monotone" % (r, name))
            # An interpolated value and the true one both lie between the received neighbours,
            # so the interpolation error is at most the increment across the gap.
            worst = 0.0
            for i, p in enumerate(series):
                if not p["interpolated"]:
                    continue
                lo = next(q for q in reversed(series[:i]) if not q["interpolated"])
                hi = next(q for q in series[i + 1:] if not q["interpolated"])
                truth = rows[p["sample"]][1][k]
                span = hi["values"][k] - lo["values"][k]
                check(lo["values"][k] <= truth <= hi["values"][k],
                      "rank %d sample %d: %s true value outside its neighbours" % (r, p["sample"], name))
                if span > 0:
                    worst = max(worst, abs(p["values"][k] - truth) / span)
            check(worst <= 1.0, "rank %d %s: interpolation error %.2f of the gap" % (r, name, worst))
        # The complete series' rate over the same samples lies in the collector's CI.
        f, l = rows[series[0]["sample"]], rows[series[-1]["sample"]]
        dt = (l[0] - f[0]) / tps
        for stat in st["stats"]:
            name = stat["name"]
            if name not in ("proc.cpu.user", "counters.task_clock", "proc.io.rchar"):
                continue
            k = names.index(name)
            true_rate = (l[1][k] - f[1][k]) / dt
            print("rank %d %-22s complete %.6g/s, collector %.6g [%.6g, %.6g]" % (
                r, name, true_rate, stat["mean"], stat["ci_low"], stat["ci_high"]))
            check(stat["ci_low"] <= true_rate <= stat["ci_high"],
                  "rank %d %s: %.6g outside [%.6g, %.6g]" % (r, name, true_rate, stat["ci_low"],
                                                             stat["ci_high"]))
    merged = [json.loads(l)["t"] for l in open(os.path.join(out, "merged.log"))]
    check(merged == sorted(merged), "merged.log is not in time order")
    check(any(f.startswith("node-") for f in os.listdir(out)), "no per-node log")
    node = summary["nodes"][0]
    check(abs(node["loss_rate"] - 1 / 7) < 0.01, "node loss rate %.4f" % node["loss_rate"])
    print("node loss rate %.4f (1/7 = %.4f)" % (node["loss_rate"], 1 / 7))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
