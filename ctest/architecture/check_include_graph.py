#!/usr/bin/env python3
"""Checks the source tree's include graph against the dependency rules of docs/architecture.md.

The rules are the fenced block labelled `dependencies` in that page: one line per part,
`part: dep dep ...` (a part is a top-level folder, or a folder below one for a narrower rule,
e.g. `otf2_writer/tests: otf2_reader`; a narrower rule adds to its part's list). Test files
beside the sources (`*_test.cc`, `bench_*`) follow the rule of their folder's `tests`. An include
`#include "X/..."` in a file of part P is allowed when X is P itself or listed for P. The check
fails when a folder holding C/C++ sources has no rule, a rule names a folder that does not exist,
an include crosses to a part not listed, or the top-level rules form a cycle (so "downward" is
well defined). `--self-test` runs the checker on generated trees that break each rule.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

SOURCE_EXT = ('.c', '.cc', '.cpp', '.h', '.hpp', '.def', '.inc')
SKIP_DIRS = {'.git', 'docs', 'scripts', 'cmake', 'node_modules'}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def parse_rules(doc_path):
    """Returns {key: [deps]} from the `dependencies` block; errors name the doc's line."""
    rules, errors = {}, []
    inside, found = False, False
    with open(doc_path, encoding='utf-8') as f:
        for no, line in enumerate(f, 1):
            s = line.strip()
            if not inside:
                if s == '```dependencies':
                    inside, found = True, True
                continue
            if s == '```':
                inside = False
                continue
            if not s or s.startswith('#'):
                continue
            key, sep, rest = s.partition(':')
            key = key.strip().rstrip('/')
            if not sep or not re.fullmatch(r'[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*', key):
                errors.append(f'{doc_path}:{no}: expected "part: dep ...", got {s!r}')
                continue
            if key in rules:
                errors.append(f'{doc_path}:{no}: rule for {key} given twice')
            rules[key] = rest.split()
    if not found:
        errors.append(f'{doc_path}: no ```dependencies block')
    elif inside:
        errors.append(f'{doc_path}: the ```dependencies block is not closed')
    return rules, errors


def top_parts(root, build_prefixes):
    parts = []
    for d in sorted(os.listdir(root)):
        full = os.path.join(root, d)
        if (not os.path.isdir(full) or d.startswith('.') or d in SKIP_DIRS or
                any(d.startswith(p) for p in build_prefixes)):
            continue
        if any(f.endswith(SOURCE_EXT) for _, _, fs in os.walk(full) for f in fs):
            parts.append(d)
    return parts


def allowed_for(rel_dir, rules):
    """The union of the deps of every rule whose key is a prefix (by folder) of rel_dir."""
    allowed = set()
    segs = rel_dir.split('/')
    for i in range(1, len(segs) + 1):
        allowed.update(rules.get('/'.join(segs[:i]), []))
    return allowed


def find_cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check(root, doc, build_prefixes=('build',)):
    rules, errors = parse_rules(doc)
    parts = top_parts(root, build_prefixes)
    for key in sorted(rules):
        folder = key[:-len('/tests')] if key.endswith('/tests') else key
        if not os.path.isdir(os.path.join(root, folder)):
            errors.append(f'{doc}: rule for {key}, which is not a folder of the tree')
        for dep in rules[key]:
            if dep not in parts:
                errors.append(f'{doc}: rule for {key} names {dep}, which is not a part')
    for p in parts:
        if p not in rules:
            errors.append(f'{doc}: no rule for part {p} (add "{p}: ..." to the block)')
    top = {k: [d for d in v if d != k] for k, v in rules.items() if '/' not in k}
    cycle = find_cycle(top)
    if cycle:
        errors.append(f'{doc}: the rules form a cycle: {" -> ".join(cycle)}')
    edges = 0
    for p in parts:
        for dirpath, dirnames, files in os.walk(os.path.join(root, p)):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith('.')]
            folder = os.path.relpath(dirpath, root).replace(os.sep, '/')
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                beside_test = name.startswith('bench_') or re.search(r'_test\.[a-z]+$', name)
                rel_dir = folder + '/tests' if beside_test else folder
                allowed = allowed_for(rel_dir, rules) | {p}
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or '/' not in m.group(1):
                            continue
                        target = m.group(1).split('/')[0]
                        if target not in parts:
                            continue
                        edges += 1
                        if target not in allowed:
                            errors.append(
                                f'{os.path.relpath(path, root)}:{no}: includes "{m.group(1)}", '
                                f'but {rel_dir} may depend only on: '
                                f'{" ".join(sorted(allowed - {p})) or "(nothing)"}')
    return errors, parts, edges


def self_test():
    failures = []

    def tree(files, doc_block):
        d = tempfile.mkdtemp(prefix='incgraph-')
        for rel, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), 'w') as f:
                f.write(text)
        os.makedirs(os.path.join(d, 'docs'))
        with open(os.path.join(d, 'docs', 'architecture.md'), 'w') as f:
            f.write('# x\n\n```dependencies\n' + doc_block + '```\n')
        return d

    def expect(name, files, block, needle):
        d = tree(files, block)
        try:
            errs, _, _ = check(d, os.path.join(d, 'docs', 'architecture.md'))
        finally:
            shutil.rmtree(d)
        ok = any(needle in e for e in errs) if needle else not errs
        print(('ok   ' if ok else 'FAIL ') + f'{name}: {errs}')
        if not ok:
            failures.append(name)

    base = {'low/a.h': '#pragma once\n', 'high/b.cc': '#include "low/a.h"\n'}
    expect('clean tree passes', base, 'low:\nhigh: low\n', None)
    expect('upward include caught', {**base, 'low/c.cc': '#include "high/b.h"\n'},
           'low:\nhigh: low\n', 'low/c.cc:1: includes "high/b.h"')
    expect('unlisted part caught', {**base, 'new/x.c': '\n'}, 'low:\nhigh: low\n',
           'no rule for part new')
    expect('stale rule caught', base, 'low:\nhigh: low\ngone: low\n', 'rule for gone')
    expect('cycle caught', base, 'low: high\nhigh: low\n', 'cycle')
    expect('narrower rule allows tests', {**base, 'low/tests/t.cc': '#include "high/b.h"\n'},
           'low:\nhigh: low\nlow/tests: high\n', None)
    expect('unit tests beside the source use the tests rule',
           {**base, 'low/x_test.cc': '#include "high/b.h"\n'},
           'low:\nhigh: low\nlow/tests: high\n', None)
    expect('unit tests beside the source are checked',
           {**base, 'low/x_test.cc': '#include "high/b.h"\n'}, 'low:\nhigh: low\n',
           'low/x_test.cc:1')
    expect('tests need the narrower rule', {**base, 'low/tests/t.cc': '#include "high/b.h"\n'},
           'low:\nhigh: low\n', 'low/tests/t.cc:1')
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', help='source tree (default: two levels above this script)')
    ap.add_argument('--doc', help='the architecture page (default: ROOT/docs/architecture.md)')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args()
    if a.self_test:
        failures = self_test()
        sys.exit(f'{len(failures)} self-test(s) failed' if failures else 0)
    root = a.root or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    doc = a.doc or os.path.join(root, 'docs', 'architecture.md')
    errors, parts, edges = check(root, doc)
    for e in errors:
        print(e)
    if errors:
        sys.exit(f'{len(errors)} violation(s) of {doc}')
    print(f'{len(parts)} parts, {edges} cross-folder includes, all as {doc} allows')


if __name__ == '__main__':
    main()
