#!/usr/bin/env python3
"""Reads an OTF2 archive with the independent Python bindings (`import otf2`) and compares it
with what the synthetic run generator says a correct conversion contains.

Why a second reader: our own C++ reader could share a misunderstanding with our writer; the
Python bindings come from the OTF2 project itself, resolve communicator members to locations on
their own, and apply the archive's clock offsets on their own.

usage: check_with_python.py ARCHIVE.otf2 EXPECTED.json
EXPECTED.json: {"by_type": {type: n}, "by_rank": {rank: {type: n}},
                "messages": [[src, dst, tag, bytes, send_true, recv_true], ...], "base_ticks": B}
Exit status 0 when everything agrees; otherwise the differences are printed and it is 1.
"""
import collections
import json
import sys

import otf2


def main(archive, expected_path):
    with open(expected_path) as f:
        exp = json.load(f)
    problems = []
    by_type = collections.Counter()
    by_rank = collections.defaultdict(collections.Counter)
    last_time = {}
    sends = collections.defaultdict(list)
    recvs = collections.defaultdict(list)
    with otf2.reader.open(archive) as trace:
        comm_locations = [g for g in trace.definitions.groups
                          if g.group_type == otf2.GroupType.COMM_LOCATIONS][0]
        rank_of_group = {loc.group: rank for rank, loc in enumerate(comm_locations.members)}

        def rank_of(location):
            return rank_of_group[location.group]

        for location, event in trace.events:
            name = type(event).__name__
            rank = rank_of(location)
            by_type[name] += 1
            by_rank[rank][name] += 1
            if event.time < last_time.get(location, 0):
                problems.append(f"{location.name}: timestamp {event.time} decreases")
            last_time[location] = event.time
            if name in ("MpiSend", "MpiIsend"):
                dst = rank_of(event.communicator.group.members[event.receiver])
                sends[(event.communicator.name, rank, dst, event.msg_tag)].append(
                    (event.time, event.msg_length))
            elif name in ("MpiRecv", "MpiIrecv"):
                src = rank_of(event.communicator.group.members[event.sender])
                recvs[(event.communicator.name, src, rank, event.msg_tag)].append(
                    (event.time, event.msg_length))

    if dict(by_type) != exp["by_type"]:
        problems.append(f"event counts by type differ:\n  got      {dict(sorted(by_type.items()))}\n"
                        f"  expected {dict(sorted(exp['by_type'].items()))}")
    for rank, counts in exp["by_rank"].items():
        if dict(by_rank[int(rank)]) != counts:
            problems.append(f"rank {rank}: got {dict(sorted(by_rank[int(rank)].items()))}, "
                            f"expected {dict(sorted(counts.items()))}")

    got = []
    for key in set(sends) | set(recvs):
        s, r = sends.get(key, []), recvs.get(key, [])
        if len(s) != len(r):
            problems.append(f"{key}: {len(s)} sends but {len(r)} receives")
        for (st, sb), (rt, rb) in zip(s, r):
            if rt < st:
                problems.append(f"{key}: receive ends at {rt}, before its send began at {st}")
            if sb != rb:
                problems.append(f"{key}: {sb} bytes sent, {rb} received")
            got.append([key[1], key[2], key[3], sb, st, rt])
    base = exp["base_ticks"]
    want = sorted([m[0], m[1], m[2], m[3], base + m[4], base + m[5]] for m in exp["messages"])
    got.sort()
    if len(got) != len(want):
        problems.append(f"{len(got)} messages, expected {len(want)}")
    for g, w in zip(got, want):
        if g[:4] != w[:4] or abs(g[4] - w[4]) > 2 or abs(g[5] - w[5]) > 2:
            problems.append(f"message {g} differs from expected {w} (times within 2 ticks)")
    for p in problems:
        print("python otf2 check:", p)
    print(f"python otf2 check: {sum(by_type.values())} events, {len(got)} messages, "
          f"{'OK' if not problems else 'FAILED'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
