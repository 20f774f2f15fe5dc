#!/usr/bin/python3
"""Reads an OTF2 archive with python3-otf2 and prints, as JSON, how many Enter events of each
region carry the attribute "invmw:callsite" per calling context: a list of
{"function", "file", "line", "region", "calls"} (file and line from the context's
SourceCodeLocation; "" and 0 without one), plus "enters" (all Enter events per region) and
"contexts" (the number of CallingContext definitions). check_callsites.py --trace compares them
with the SITE markers of the sources."""

import collections
import json
import os
import sys

import otf2


def main():
    counts = collections.Counter()
    enters = collections.Counter()
    with otf2.reader.open(sys.argv[1]) as trace:
        attr = [a for a in trace.definitions.attributes if a.name == 'invmw:callsite']
        attr = attr[0] if attr else None
        for _, ev in trace.events:
            if not isinstance(ev, otf2.events.Enter):
                continue
            enters[ev.region.name] += 1
            if attr is None or not ev.attributes or attr not in ev.attributes:
                continue
            ctx = ev.attributes[attr]
            scl = ctx.source_code_location
            line = scl.line_number if scl else 0
            counts[(ev.region.name, os.path.basename(scl.file) if scl and line else '', line,
                    ctx.region.name, ctx.region.canonical_name)] += 1
        ncontexts = len(list(trace.definitions.calling_contexts))
    # key: the context's region's canonical name, the object+offset label the converters give
    # it (the same before and after the finish step names it).
    print(json.dumps({'sites': [dict(function=f, file=fl, line=ln, region=rg, key=k, calls=n)
                                for (f, fl, ln, rg, k), n in sorted(counts.items())],
                      'enters': dict(enters), 'contexts': ncontexts}))


if __name__ == '__main__':
    main()
