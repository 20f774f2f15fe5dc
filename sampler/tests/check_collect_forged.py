#!/usr/bin/env python3
"""`invmw collect` under forged datagrams (issue 16, item 12), over loopback UDP.

A valid stream sends half of its samples, then forged datagrams arrive: a metric name and a host
name that are not UTF-8, sample numbers 0 and 10^8, a sequence number of 2^63, 3000 stream
announcements (more than the stream limit), announcements of too many metrics, garbage; then
the valid stream sends the rest. Each of these once aborted the collector or made it allocate
gigabytes. Checks: the collector exits 0 after SIGINT, its peak RSS (ru_maxrss from wait4)
stays under --max-rss-mb, every rejected datagram is counted in summary.json, and the valid
stream's samples from before and after the forged ones are all in the logs.

The sender waits for the collector's socket queue to drain (/proc/net/udp) before each batch,
so nothing is lost to a full buffer however slow the machine is; should the kernel still drop
datagrams (its drop counter), only the counts become inequalities.

  check_collect_forged.py --invmw PATH --work DIR [--max-rss-mb 64]
"""
import argparse
import json
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

HEADER = struct.Struct("<IBBHIiIIQQQHHHH")  # sampler/stream_format.h DatagramHeader (56 bytes)
INFO = struct.Struct("<dQqdIi64s")          # InfoPayload
MAGIC = 0x44534D49
SAMPLE, INFO_KIND, NAMES = 1, 2, 3
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def fnv1a(data, h=2166136261):
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


class Stream:
    def __init__(self, node, rank, sid):
        self.node, self.rank, self.sid, self.seq = node, rank, sid, 0

    def make(self, kind, payload, sample=0, ticks=0, part=0, nparts=1, first=0, count=0,
             seq=None):
        if seq is None:
            seq, self.seq = self.seq, self.seq + 1
        fields = [MAGIC, 1, kind, HEADER.size, self.node, self.rank, self.sid, 0, seq, sample,
                  ticks, part, nparts, first, count]
        c = fnv1a(payload, fnv1a(HEADER.pack(*fields)))
        fields[7] = c
        return HEADER.pack(*fields) + payload

    def info(self, metrics, host):
        return self.make(INFO_KIND, INFO.pack(1e9, 0, 1_000_000_000_000, 0.01, metrics, 1,
                                              host))

    def names(self, names):
        p = b"".join(bytes([1, len(n)]) + n for n in names)
        return self.make(NAMES, p, count=len(names))

    def sample(self, num, values, first=0, seq=None):
        return self.make(SAMPLE, struct.pack("<%dd" % len(values), *values), sample=num,
                         ticks=num * 10_000_000, first=first, count=len(values), seq=seq)


def udp_queue(port):
    """(rx_queue bytes, drops) of the socket bound to 127.0.0.1:port, or None."""
    with open("/proc/net/udp") as f:
        next(f)
        for line in f:
            fld = line.split()
            if fld[1] == "0100007F:%04X" % port:
                return int(fld[4].split(":")[1], 16), int(fld[-1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--max-rss-mb", type=int, default=64)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    out = os.path.join(a.work, "collect")

    # An AddressSanitizer build (README "Sanitizer builds"; its tests run with ASAN_OPTIONS
    # set) reserves terabytes of address space for its shadow and keeps freed memory in
    # quarantine: no address-space limit there, and its RSS says nothing about the collector's.
    asan = "ASAN_OPTIONS" in os.environ

    def limit():  # the old collector tried to allocate 5-6 GB: fail fast, spare the machine
        if not asan:
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    # Its summary goes to a file: a pipe nobody reads before wait4 could fill and block it.
    summary_text = open(os.path.join(a.work, "collect.out"), "w+")
    col = subprocess.Popen([a.invmw, "collect", "--listen", "127.0.0.1:0", "--out", out,
                            "--quiet"], stdout=summary_text, stderr=subprocess.PIPE,
                           preexec_fn=limit)
    line = col.stderr.readline().decode()
    if "listening on " not in line:
        col.kill()
        col.wait()
        print("FAIL the collector did not start: " + line)
        sys.exit(1)
    port = int(line.rsplit(":", 1)[1])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0

    def send(datagrams):
        nonlocal sent
        for i in range(0, len(datagrams), 200):
            end = time.monotonic() + 60
            while time.monotonic() < end:  # wait until the collector has drained its queue
                q = udp_queue(port)
                if q is None or q[0] < 64 * 1024:
                    break
                time.sleep(0.01)
            for d in datagrams[i:i + 200]:
                sock.sendto(d, ("127.0.0.1", port))
                sent += 1

    good = Stream(11, 0, 777)
    send([good.info(2, b"good-host"), good.names([b"a", b"b"])])
    send([good.sample(n, [3.0 * n, 0.5]) for n in range(50)])

    malformed = refused = 0
    forged = []
    s = Stream(12, 1, 1)  # not UTF-8: a metric name, the host name
    forged += [s.names([b"ok", b"x\xff\xfe"]), s.info(2, b"host\xff")]
    malformed += 2
    s = Stream(13, 2, 2)  # sample numbers 0 and 10^8
    forged += [s.sample(0, [1.0]), s.sample(100_000_000, [2.0])]
    s = Stream(14, 3, 3)  # a sequence number of 2^63
    forged += [s.sample(n, [1.0]) for n in range(5)] + [s.sample(5, [1.0], seq=1 << 63)]
    streams_used = 3  # good, 13 and 14 (12 had nothing accepted)
    for i in range(3000):  # announcements of new streams, one each
        forged.append(Stream(100000 + i, i, 50000 + i).info(1000, b"forged"))
    refused = 3000 - (1024 - streams_used)
    for i in range(200):  # more metrics than allowed
        forged.append(Stream(200000 + i, i, 9).info(65535, b"forged"))
        malformed += 1
    forged.append(b"\x00" * 600)
    foreign = 1
    send(forged)

    send([good.sample(n, [3.0 * n, 0.5]) for n in range(50, 100)])
    end = time.monotonic() + 60
    while time.monotonic() < end and (udp_queue(port) or (0, 0))[0] > 0:
        time.sleep(0.01)
    drops = (udp_queue(port) or (0, 0))[1]
    col.send_signal(signal.SIGINT)
    _, status, usage = os.wait4(col.pid, 0)
    col.returncode = os.waitstatus_to_exitcode(status)
    summary_text.seek(0)
    stdout, stderr = summary_text.read(), col.stderr.read().decode()
    print("\n".join(stdout.splitlines()[:5]))
    rss_mb = usage.ru_maxrss / 1024
    print("collector: exit %d, peak RSS %.1f MB, %d datagrams sent, %d dropped by the kernel"
          % (col.returncode, rss_mb, sent, drops))
    check(col.returncode == 0, "the collector survived and exited 0 (%s)" % stderr.strip())
    if asan:
        print("note: AddressSanitizer build: peak RSS not checked (shadow memory, quarantine)")
    else:
        check(rss_mb < a.max_rss_mb, "peak RSS %.1f MB < %d MB" % (rss_mb, a.max_rss_mb))
    try:
        summary = json.load(open(os.path.join(out, "summary.json")))
    except (OSError, ValueError) as e:
        check(False, "summary.json readable: %s" % e)
        sys.exit(1)
    d = summary["datagrams"]
    print("summary datagrams:", d)
    exact = drops == 0
    for key, want in (("malformed", malformed), ("refused", refused), ("foreign", foreign)):
        got = d.get(key, -1)
        check(got == want if exact else 0 < got <= want, "%s: %d (sent %d)" % (key, got, want))
    check(d.get("seq_jumps", 0) >= 1, "the sequence jump is counted (%s)" % d.get("seq_jumps"))
    check("refused" in stdout, "the printed summary reports refused datagrams")
    st = [x for x in summary["streams"] if x["node_id"] == 11 and x["stream"] == 777]
    check(len(st) == 1, "the valid stream is in the summary")
    if st:
        st = st[0]
        check(st["host"] == "good-host" and st["metrics"] == ["a", "b"],
              "its host and names: %s %s" % (st["host"], st["metrics"]))
        if exact:
            check(st["received_datagrams"] == 102 and st["lost_datagrams"] == 0,
                  "all its 102 datagrams received, none lost (%d, %d)"
                  % (st["received_datagrams"], st["lost_datagrams"]))
    j = [x for x in summary["streams"] if x["node_id"] == 14]
    check(len(j) == 1 and j[0]["lost_datagrams"] == 0 and j[0]["seq_epochs"] == 2,
          "seq 2^63 starts a new epoch, no absurd loss: %s"
          % ({k: j[0][k] for k in ("lost_datagrams", "seq_epochs")} if j else None))
    points = {}
    with open(os.path.join(out, "merged.log")) as f:
        for ln in f:
            p = json.loads(ln)
            if p["node"] == "good-host":
                points[p["sample"]] = p["values"]
    if exact:
        check(sorted(points) == list(range(100)),
              "samples 0..99 of the valid stream (before and after) are in merged.log: %d"
              % len(points))
    else:
        check(0 in points and 99 in points, "first and last valid sample in merged.log")
    check(all(abs(v[0] - 3.0 * n) < 1e-9 for n, v in points.items()), "with their values")
    check(os.path.exists(os.path.join(out, "node-good-host.log")), "node-good-host.log written")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
