#!/usr/bin/env python3
"""Generates invmw's PVM 3 wrappers from functions.list and the installed pvm3.h.

Why generated: the same shape repeats for some forty functions (resolve the real function
through the dynamic linker, open a Call, forward, record), and only the recording rule
differs. The rules live once, here, as *kinds*; prototypes come from the preprocessed pvm3.h,
so no signature is ever written by hand.

Outputs (in the build tree):
  function_table.h / .cc   enum of function ids, names, trace kinds and classes
  wrappers.cc              the exported pvm_* entry points

Usage: gen_wrappers.py --list functions.list --header preprocessed-pvm3.h --out DIR
"""

import argparse
import os
import re
import sys

# Kind -> (argument roles by position, C++ recording statement, trace kind, class).
# {name} in post expands to the argument with that role; {items} to the list's items=K.
# The trace kind is the vocabulary otf2_writer understands (function_info.cc): 'send' and
# 'recv' produce message records, 'plain' only a region (multicasts and group calls carry
# their messages as nested part records).
KINDS = {
    'enroll': dict(roles={}, post='c.Plain(rc);', trace='plain', cls='env'),
    'exit': dict(roles={}, post='c.Exit(rc);', trace='plain', cls='env'),
    'spawn': dict(roles={'task': 0, 'ntask': 4, 'tids': 5},
                  pre='invmw::pvm::SpawnExport export_env(c);',
                  post='c.Spawn(rc, {task}, {ntask}, {tids});', trace='plain', cls='env'),
    'plain': dict(roles={}, post='c.Plain(rc);', trace='plain', cls='pack'),
    # Daemon requests: recorded as calls, mainly so that the packing libpvm3 does inside
    # them (through its own pvm_pkint/pvm_upkint) is not taken for the application's.
    'task': dict(roles={}, post='c.Plain(rc);', trace='plain', cls='env'),
    'pack': dict(roles={'buf': 0, 'n': 1},
                 post='c.Pack(rc, uint64_t({n}) * {items} * sizeof(*{buf}), true);',
                 trace='plain', cls='pack'),
    'unpack': dict(roles={'buf': 0, 'n': 1},
                   post='c.Pack(rc, uint64_t({n}) * {items} * sizeof(*{buf}), false);',
                   trace='plain', cls='pack'),
    'packstr': dict(roles={'s': 0}, post='c.Pack(rc, invmw::pvm::StrBytes({s}), true);',
                    trace='plain', cls='pack'),
    'unpackstr': dict(roles={'s': 0}, post='c.Pack(rc, invmw::pvm::StrBytes({s}), false);',
                      trace='plain', cls='pack'),
    'send': dict(roles={'tid': 0, 'tag': 1}, post='c.Send(rc, {tid}, {tag});', trace='send',
                 cls='p2p'),
    'psend': dict(roles={'tid': 0, 'tag': 1, 'len': 3, 'type': 4},
                  post='c.Psend(rc, {tid}, {tag}, {len}, {type});', trace='send', cls='p2p'),
    'mcast': dict(roles={'tids': 0, 'n': 1, 'tag': 2}, post='c.Mcast(rc, {tids}, {n}, {tag});',
                  trace='plain', cls='p2p'),
    'recv': dict(roles={}, post='c.Recv(rc);', trace='recv', cls='p2p'),
    'precv': dict(roles={'type': 4, 'rtid': 5, 'rtag': 6, 'rlen': 7},
                  pre='int rtid_s = 0, rtag_s = 0, rlen_s = 0;\n'
                      '  if (!{rtid}) {rtid} = &rtid_s;\n'
                      '  if (!{rtag}) {rtag} = &rtag_s;\n'
                      '  if (!{rlen}) {rlen} = &rlen_s;',
                  post='c.Precv(rc, *{rtid}, *{rtag}, *{rlen}, {type});', trace='recv',
                  cls='p2p'),
    'probe': dict(roles={}, post='c.Probe(rc);', trace='plain', cls='probe'),
    'group': dict(roles={}, post='c.Group(rc);', trace='plain', cls='group'),
    'barrier': dict(roles={}, post='c.Group(rc);', trace='plain', cls='barrier'),
}

PROTO_RE = re.compile(r'^\s*(int|void)\s+(pvm_\w+)\s*\((.*)\)\s*;\s*$')


def parse_list(path):
    funcs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) < 2 or parts[1] not in KINDS:
                sys.exit('%s:%d: expected `NAME KIND [items=K]` with KIND one of %s, got %r'
                         % (path, lineno, ', '.join(sorted(KINDS)), line))
            items = 1
            for opt in parts[2:]:
                m = re.fullmatch(r'items=(\d+)', opt)
                if not m:
                    sys.exit('%s:%d: unknown option %r (expected items=K)' % (path, lineno, opt))
                items = int(m.group(1))
            funcs.append((parts[0], parts[1], items))
    return funcs


def parse_header(path):
    protos = {}
    with open(path) as f:
        text = f.read()
    # Prototypes may span lines after preprocessing; join on semicolons.
    for stmt in text.replace('\n', ' ').split(';'):
        m = PROTO_RE.match(stmt + ';')
        if m:
            ret, name, args = m.groups()
            args = args.strip()
            protos[name] = (ret, [] if args in ('', 'void') else split_args(args))
    return protos


def split_args(args):
    out, depth, cur = [], 0, ''
    for ch in args:
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
            continue
        depth += ch == '('
        depth -= ch == ')'
        cur += ch
    out.append(cur.strip())
    return out


def declare(ctype, name):
    """Puts a parameter name into a type from the header (function pointers included)."""
    if '(*)' in ctype:
        return ctype.replace('(*)', '(*%s)' % name, 1)
    return '%s %s' % (ctype, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--list', required=True)
    ap.add_argument('--header', required=True)
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    funcs = parse_list(a.list)
    protos = parse_header(a.header)
    missing = [n for n, _, _ in funcs if n not in protos]
    if missing:
        sys.exit('%s: pvm3.h declares no %s' % (a.list, ', '.join(missing)))
    os.makedirs(a.out, exist_ok=True)

    hdr = ['// Generated by pvm_wrap/gen_wrappers.py from functions.list. Do not edit.',
           '#pragma once', '#include <cstdint>', '', 'namespace invmw::pvm {', '',
           'enum FuncId : uint16_t {']
    hdr += ['  k_%s,' % n for n, _, _ in funcs]
    hdr += ['};', 'constexpr int kNumFuncs = %d;' % len(funcs), '',
            '// Name, trace kind (otf2_writer vocabulary) and class of each function.',
            'extern const char* const kFuncNames[kNumFuncs];',
            'extern const char* const kFuncKinds[kNumFuncs];',
            'extern const char* const kFuncClasses[kNumFuncs];', '',
            '}  // namespace invmw::pvm', '']
    write(os.path.join(a.out, 'function_table.h'), hdr)

    tab = ['// Generated by pvm_wrap/gen_wrappers.py from functions.list. Do not edit.',
           '#include "function_table.h"', '', 'namespace invmw::pvm {', '']
    for arr, fn in (('kFuncNames', lambda n, k: n), ('kFuncKinds', lambda n, k: KINDS[k]['trace']),
                    ('kFuncClasses', lambda n, k: KINDS[k]['cls'])):
        tab.append('const char* const %s[kNumFuncs] = {' % arr)
        tab += ['    "%s",' % fn(n, k) for n, k, _ in funcs]
        tab.append('};')
    tab += ['', '}  // namespace invmw::pvm', '']
    write(os.path.join(a.out, 'function_table.cc'), tab)

    w = ['// Generated by pvm_wrap/gen_wrappers.py from functions.list. Do not edit.',
         '#include <pvm3.h>', '', '#include "function_table.h"', '#include "pvm_wrap/call.h"',
         '#include "pvm_wrap/spawn_export.h"', '', 'extern "C" {', '']
    for name, kind, items in funcs:
        ret, args = protos[name]
        k = KINDS[kind]
        names = ['a%d' % i for i in range(len(args))]
        params = ', '.join(declare(t, n) for t, n in zip(args, names)) or 'void'
        subst = {role: names[idx] for role, idx in k['roles'].items()}
        subst['items'] = str(items)
        call_args = ', '.join(names)
        fid = 'invmw::pvm::k_%s' % name
        w.append('__attribute__((visibility("default"))) %s %s(%s) {' % (ret, name, params))
        w.append('  using Fn = %s (*)(%s);' % (ret, ', '.join(args) or 'void'))
        w.append('  Fn real = reinterpret_cast<Fn>(invmw::pvm::Real(%s));' % fid)
        w.append('  if (!real) return PvmSysErr;')
        w.append('  invmw::pvm::Call c(%s);' % fid)
        w.append('  if (!c.on()) return real(%s);' % call_args)
        if 'pre' in k:
            w.append('  ' + k['pre'].format(**subst))
        w.append('  int rc = real(%s);' % call_args)
        w.append('  ' + k['post'].format(**subst))
        w.append('  return rc;')
        w.append('}')
        w.append('')
    w += ['}  // extern "C"', '']
    write(os.path.join(a.out, 'wrappers.cc'), w)


def write(path, lines):
    text = '\n'.join(lines)
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
