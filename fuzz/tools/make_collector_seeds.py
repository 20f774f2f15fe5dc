#!/usr/bin/env python3
"""Writes the collector target's seed corpus: datagram streams built the way sampler/sampler.cc
sends them (sampler/stream_format.h), in the target's container format
([flags: 1 byte][length: 2 bytes LE][datagram]; see collector_fuzz.cc).

usage: make_collector_seeds.py OUT_DIR
"""
import os
import struct
import sys

MAGIC, VERSION = 0x44534D49, 1
K_SAMPLE, K_INFO, K_NAMES = 1, 2, 3
HEADER = struct.Struct("<IBBHIiIIQQQHHHH")  # DatagramHeader, 56 bytes
INFO = struct.Struct("<dQqdIi64s")  # InfoPayload


def fnv1a(data, h=2166136261):
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


class Sender:
    def __init__(self, node, rank, stream):
        self.node, self.rank, self.stream, self.seq = node, rank, stream, 0

    def make(self, kind, payload, sample=0, ticks=0, part=0, nparts=1, first=0, count=0):
        def head(checksum):
            return HEADER.pack(MAGIC, VERSION, kind, HEADER.size, self.node, self.rank, self.stream,
                               checksum, self.seq, sample, ticks, part, nparts, first, count)
        d = head(0) + payload
        d = head(fnv1a(d)) + payload
        self.seq += 1
        return d

    def info(self, metrics, host):
        return self.make(K_INFO, INFO.pack(1e9, 0, 1_000_000_000_000, 0.01, metrics, 2,
                                           host.encode()))

    def names(self, names):
        p = b"".join(bytes([acc, len(n)]) + n.encode() for n, acc in names)
        return self.make(K_NAMES, p, count=len(names))

    def sample(self, i, values, first=0, part=0, nparts=1):
        return self.make(K_SAMPLE, struct.pack(f"<{len(values)}d", *values), sample=i,
                         ticks=i * 10_000_000, part=part, nparts=nparts, first=first,
                         count=len(values))


def container(datagrams, flags=0):
    # Bit 1 of the first flags byte: the target also writes the logs.
    return b"".join(bytes([flags | (2 if i == 0 else 0)]) + struct.pack("<H", len(d)) + d
                    for i, d in enumerate(datagrams))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {}
    s = Sender(7, 0, 1000)
    names = [("cpu.user", 1), ("mem.rss", 0), ("net.rx_bytes", 1)]
    seeds["one-stream"] = container([s.info(3, "nodeA"), s.names(names)] +
                                    [s.sample(i, [i * 0.03, 1e6 + i, i * 100.0]) for i in range(6)])
    a, b = Sender(7, 0, 2000), Sender(9, 1, 2001)
    ds = [a.info(2, "nodeA"), b.info(2, "nodeB"), a.names(names[:2]), b.names(names[:2])]
    for i in range(5):
        ds += [a.sample(i, [i * 1.0, 5.0]), b.sample(i, [i * 2.0, 6.0])]
    del ds[6]  # a lost datagram
    ds.append(ds[4])  # a duplicate
    seeds["two-nodes-loss-dup"] = container(ds)
    c = Sender(3, 2, 3000)
    seeds["split-sample"] = container([c.info(4, "nodeC"), c.names(names + [("x", 0)])] + [
        c.sample(i, v, first=f, part=p, nparts=2) for i in range(3)
        for p, (f, v) in enumerate([(0, [1.0, 2.0]), (2, [3.0, 4.0])])])
    d = Sender(5, 0, 4000)
    seeds["raw-checksums"] = container([d.info(1, "nodeD"), d.names(names[:1]), d.sample(0, [1.0])],
                                       flags=1)
    for name, data in seeds.items():
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
