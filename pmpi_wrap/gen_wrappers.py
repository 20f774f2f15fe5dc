#!/usr/bin/env python3
"""Generates invmw's MPI wrappers from functions.list and the installed mpi.h.

Why generated: about two hundred MPI functions (four hundred with MPI-4 large-count variants),
each in C and in four Fortran manglings plus mpi_f08, share a handful of recording rules. The
rules live once, here, as *kinds*; each kind names the argument layout (roles by position in
the MPI standard's argument order) and the C++ code that records the call. Prototypes are
taken from the preprocessed mpi.h, so the wrappers are const-correct for whatever MPI the
library is built against and no signature is written by hand.

Outputs (in the build tree):
  function_table.h / .cc   enum of function ids, names, classes
  wrappers_c.cc            C entry points MPI_X -> PMPI_X
  wrappers_fortran.cc      Fortran entry points mpi_x_ (and manglings, and _f08) -> pmpi_x_

Usage: gen_wrappers.py --list functions.list --header preprocessed-mpi.h --out DIR --flavor F
"""

import argparse
import os
import re
import sys

# ---------------------------------------------------------------------------------------------
# Kinds. roles: name -> (argument index, direction) where direction is 'in' (converted before
# the call in Fortran wrappers), 'out' (converted after), or 'inout' (before, kept as snapshot).
# A negative index counts from the end (the request of a nonblocking variant is always last).
# pre/post: C++ statements; {role} expands to the C-typed variable holding that argument.
# status/statuses: roles whose MPI_STATUS(ES)_IGNORE is replaced by scratch storage so that
# sources and byte counts can be read after the call.
# ---------------------------------------------------------------------------------------------

P2P = {'count': (1, 'in'), 'type': (2, 'in'), 'peer': (3, 'in'), 'tag': (4, 'in'),
       'comm': (5, 'in')}

KINDS = {
    'plain': dict(roles={}, post='c.Leave();'),
    'send': dict(roles=P2P, post='c.Send({count}, {type}, {peer}, {tag}, {comm});'),
    'recv': dict(roles={**P2P, 'status': (6, 'out')}, status='status',
                 post='c.Recv({status}, {comm});'),
    'sendrecv': dict(
        roles={'scount': (1, 'in'), 'stype': (2, 'in'), 'dest': (3, 'in'), 'stag': (4, 'in'),
               'comm': (10, 'in'), 'status': (11, 'out')},
        status='status',
        post='c.Sendrecv({scount}, {stype}, {dest}, {stag}, {status}, {comm});'),
    'sendrecv_replace': dict(
        roles={'count': (1, 'in'), 'type': (2, 'in'), 'dest': (3, 'in'), 'stag': (4, 'in'),
               'comm': (7, 'in'), 'status': (8, 'out')},
        status='status',
        post='c.Sendrecv({count}, {type}, {dest}, {stag}, {status}, {comm});'),
    'probe': dict(roles={'comm': (2, 'in'), 'status': (3, 'out')}, status='status',
                  post='c.Probe(1, {status}, {comm});'),
    'iprobe': dict(roles={'comm': (2, 'in'), 'flag': (3, 'out'), 'status': (4, 'out')},
                   status='status', post='c.Probe(*{flag}, {status}, {comm});'),
    'mprobe': dict(roles={'comm': (2, 'in'), 'msg': (3, 'out'), 'status': (4, 'out')},
                   status='status', post='c.Mprobe(1, *{msg}, {status}, {comm});'),
    'improbe': dict(roles={'comm': (2, 'in'), 'flag': (3, 'out'), 'msg': (4, 'out'),
                           'status': (5, 'out')},
                    status='status', post='c.Mprobe(*{flag}, *{msg}, {status}, {comm});'),
    'mrecv': dict(roles={'msg': (3, 'inout'), 'status': (4, 'out')}, status='status',
                  pre='MPI_Message msg_before = *{msg};',
                  post='c.Mrecv(msg_before, {status});'),
    'isend': dict(roles={**P2P, 'req': (6, 'out')},
                  post='c.Isend({count}, {type}, {peer}, {tag}, {comm}, *{req}, false);'),
    'irecv': dict(roles={**P2P, 'req': (6, 'out')},
                  post='c.Irecv({count}, {type}, {peer}, {tag}, {comm}, *{req}, false);'),
    'imrecv': dict(roles={'count': (1, 'in'), 'type': (2, 'in'), 'msg': (3, 'inout'),
                          'req': (4, 'out')},
                   pre='MPI_Message msg_before = *{msg};',
                   post='c.Imrecv({count}, {type}, msg_before, *{req});'),
    'send_init': dict(roles={**P2P, 'req': (6, 'out')},
                      post='c.Isend({count}, {type}, {peer}, {tag}, {comm}, *{req}, true);'),
    'recv_init': dict(roles={**P2P, 'req': (6, 'out')},
                      post='c.Irecv({count}, {type}, {peer}, {tag}, {comm}, *{req}, true);'),
    'start': dict(roles={'req': (0, 'inout')}, post='c.Start(1, {req});'),
    'startall': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout')},
                     post='c.Start({count}, {reqs});'),
    'wait': dict(roles={'req': (0, 'inout'), 'status': (1, 'out')}, status='status',
                 pre='invmw::wrap::RequestSnapshot before(1, {req});',
                 post='c.CompleteOne(before, 1, {status});'),
    'test': dict(roles={'req': (0, 'inout'), 'flag': (1, 'out'), 'status': (2, 'out')},
                 status='status', pre='invmw::wrap::RequestSnapshot before(1, {req});',
                 post='c.CompleteOne(before, *{flag}, {status});'),
    'waitall': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout'), 'statuses': (2, 'out')},
                    statuses=('statuses', 'count'),
                    pre='invmw::wrap::RequestSnapshot before({count}, {reqs});',
                    post='c.CompleteAll(before, 1, {statuses});'),
    'testall': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout'), 'flag': (2, 'out'),
                           'statuses': (3, 'out')},
                    statuses=('statuses', 'count'),
                    pre='invmw::wrap::RequestSnapshot before({count}, {reqs});',
                    post='c.CompleteAll(before, *{flag}, {statuses});'),
    'waitany': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout'), 'index': (2, 'out'),
                           'status': (3, 'out')},
                    status='status',
                    pre='invmw::wrap::RequestSnapshot before({count}, {reqs});',
                    post='c.CompleteIndex(before, 1, *{index}, {status});'),
    'testany': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout'), 'index': (2, 'out'),
                           'flag': (3, 'out'), 'status': (4, 'out')},
                    status='status',
                    pre='invmw::wrap::RequestSnapshot before({count}, {reqs});',
                    post='c.CompleteIndex(before, *{flag}, *{index}, {status});'),
    'waitsome': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout'), 'outcount': (2, 'out'),
                            'indices': (3, 'out'), 'statuses': (4, 'out')},
                     statuses=('statuses', 'count'),
                     pre='invmw::wrap::RequestSnapshot before({count}, {reqs});',
                     post='c.CompleteSome(before, *{outcount}, {indices}, {statuses});'),
    'testsome': dict(roles={'count': (0, 'in'), 'reqs': (1, 'inout'), 'outcount': (2, 'out'),
                            'indices': (3, 'out'), 'statuses': (4, 'out')},
                     statuses=('statuses', 'count'),
                     pre='invmw::wrap::RequestSnapshot before({count}, {reqs});',
                     post='c.CompleteSome(before, *{outcount}, {indices}, {statuses});'),
    'request_free': dict(roles={'req': (0, 'inout')},
                         pre='invmw::wrap::RequestSnapshot before(1, {req});',
                         post='c.RequestFree(before);'),
    'cancel': dict(roles={'req': (0, 'inout')}, post='c.Leave();'),
    # Collectives: bytes follow the rules documented in README.md ("Bytes of collectives").
    'barrier': dict(roles={'comm': (0, 'in')}, post='c.Coll(invmw::wrap::Barrier({comm}));'),
    'bcast': dict(roles={'count': (1, 'in'), 'type': (2, 'in'), 'root': (3, 'in'),
                         'comm': (4, 'in')},
                  post='c.Coll(invmw::wrap::Bcast({count}, {type}, {root}, {comm}));'),
    'reduce': dict(roles={'sbuf': (0, 'in'), 'count': (2, 'in'), 'type': (3, 'in'),
                          'root': (5, 'in'), 'comm': (6, 'in')},
                   post='c.Coll(invmw::wrap::Reduce({sbuf}, {count}, {type}, {root}, {comm}));'),
    'allreduce': dict(roles={'sbuf': (0, 'in'), 'count': (2, 'in'), 'type': (3, 'in'),
                             'comm': (5, 'in')},
                      post='c.Coll(invmw::wrap::Allreduce({sbuf}, {count}, {type}, {comm}));'),
    'reduce_scatter': dict(
        roles={'sbuf': (0, 'in'), 'rcounts': (2, 'in'), 'type': (3, 'in'), 'comm': (5, 'in')},
        post='c.Coll(invmw::wrap::ReduceScatter({sbuf}, {rcounts}, {type}, {comm}));'),
    'reduce_scatter_block': dict(
        roles={'sbuf': (0, 'in'), 'rcount': (2, 'in'), 'type': (3, 'in'), 'comm': (5, 'in')},
        post='c.Coll(invmw::wrap::ReduceScatterBlock({sbuf}, {rcount}, {type}, {comm}));'),
    'gather': dict(roles={'sbuf': (0, 'in'), 'scount': (1, 'in'), 'stype': (2, 'in'),
                          'rcount': (4, 'in'), 'rtype': (5, 'in'), 'root': (6, 'in'),
                          'comm': (7, 'in')},
                   post='c.Coll(invmw::wrap::Gather({sbuf}, {scount}, {stype}, {rcount}, '
                        '{rtype}, {root}, {comm}));'),
    'gatherv': dict(roles={'sbuf': (0, 'in'), 'scount': (1, 'in'), 'stype': (2, 'in'),
                           'rcounts': (4, 'in'), 'rtype': (6, 'in'), 'root': (7, 'in'),
                           'comm': (8, 'in')},
                    post='c.Coll(invmw::wrap::Gatherv({sbuf}, {scount}, {stype}, {rcounts}, '
                         '{rtype}, {root}, {comm}));'),
    'scatter': dict(roles={'scount': (1, 'in'), 'stype': (2, 'in'), 'rbuf': (3, 'in'),
                           'rcount': (4, 'in'), 'rtype': (5, 'in'), 'root': (6, 'in'),
                           'comm': (7, 'in')},
                    post='c.Coll(invmw::wrap::Scatter({scount}, {stype}, {rbuf}, {rcount}, '
                         '{rtype}, {root}, {comm}));'),
    'scatterv': dict(roles={'scounts': (1, 'in'), 'stype': (3, 'in'), 'rbuf': (4, 'in'),
                            'rcount': (5, 'in'), 'rtype': (6, 'in'), 'root': (7, 'in'),
                            'comm': (8, 'in')},
                     post='c.Coll(invmw::wrap::Scatterv({scounts}, {stype}, {rbuf}, {rcount}, '
                          '{rtype}, {root}, {comm}));'),
    'allgather': dict(roles={'sbuf': (0, 'in'), 'scount': (1, 'in'), 'stype': (2, 'in'),
                             'rcount': (4, 'in'), 'rtype': (5, 'in'), 'comm': (6, 'in')},
                      post='c.Coll(invmw::wrap::Allgather({sbuf}, {scount}, {stype}, {rcount}, '
                           '{rtype}, {comm}));'),
    'allgatherv': dict(roles={'sbuf': (0, 'in'), 'scount': (1, 'in'), 'stype': (2, 'in'),
                              'rcounts': (4, 'in'), 'rtype': (6, 'in'), 'comm': (7, 'in')},
                       post='c.Coll(invmw::wrap::Allgatherv({sbuf}, {scount}, {stype}, '
                            '{rcounts}, {rtype}, {comm}));'),
    'alltoall': dict(roles={'sbuf': (0, 'in'), 'scount': (1, 'in'), 'stype': (2, 'in'),
                            'rcount': (4, 'in'), 'rtype': (5, 'in'), 'comm': (6, 'in')},
                     post='c.Coll(invmw::wrap::Alltoall({sbuf}, {scount}, {stype}, {rcount}, '
                          '{rtype}, {comm}));'),
    'alltoallv': dict(roles={'sbuf': (0, 'in'), 'scounts': (1, 'in'), 'stype': (3, 'in'),
                             'rcounts': (5, 'in'), 'rtype': (7, 'in'), 'comm': (8, 'in')},
                      post='c.Coll(invmw::wrap::Alltoallv({sbuf}, {scounts}, {stype}, '
                           '{rcounts}, {rtype}, {comm}));'),
    'alltoallw': dict(roles={'sbuf': (0, 'in'), 'scounts': (1, 'in'), 'stypes': (3, 'in'),
                             'rcounts': (5, 'in'), 'rtypes': (7, 'in'), 'comm': (8, 'in')},
                      post='c.Coll(invmw::wrap::Alltoallw({sbuf}, {scounts}, {stypes}, '
                           '{rcounts}, {rtypes}, {comm}));'),
    'neighbor_allgather': dict(
        roles={'scount': (1, 'in'), 'stype': (2, 'in'), 'rcount': (4, 'in'), 'rtype': (5, 'in'),
               'comm': (6, 'in')},
        post='c.Coll(invmw::wrap::NeighborAllgather({scount}, {stype}, {rcount}, {rtype}, '
             '{comm}));'),
    'neighbor_allgatherv': dict(
        roles={'scount': (1, 'in'), 'stype': (2, 'in'), 'rcounts': (4, 'in'),
               'rtype': (6, 'in'), 'comm': (7, 'in')},
        post='c.Coll(invmw::wrap::NeighborAllgatherv({scount}, {stype}, {rcounts}, {rtype}, '
             '{comm}));'),
    'neighbor_alltoall': dict(
        roles={'scount': (1, 'in'), 'stype': (2, 'in'), 'rcount': (4, 'in'), 'rtype': (5, 'in'),
               'comm': (6, 'in')},
        post='c.Coll(invmw::wrap::NeighborAlltoall({scount}, {stype}, {rcount}, {rtype}, '
             '{comm}));'),
    'neighbor_alltoallv': dict(
        roles={'scounts': (1, 'in'), 'stype': (3, 'in'), 'rcounts': (5, 'in'),
               'rtype': (7, 'in'), 'comm': (8, 'in')},
        post='c.Coll(invmw::wrap::NeighborAlltoallv({scounts}, {stype}, {rcounts}, {rtype}, '
             '{comm}));'),
    'neighbor_alltoallw': dict(
        roles={'scounts': (1, 'in'), 'stypes': (3, 'in'), 'rcounts': (5, 'in'),
               'rtypes': (7, 'in'), 'comm': (8, 'in')},
        post='c.Coll(invmw::wrap::NeighborAlltoallw({scounts}, {stypes}, {rcounts}, {rtypes}, '
             '{comm}));'),
    'comm_new': dict(roles={'newcomm': (-1, 'out')}, post='c.CommNew(*{newcomm});'),
    'comm_new_req': dict(roles={'newcomm': (-2, 'out'), 'req': (-1, 'out')},
                         post='c.CommNewPending({newcomm}, *{req});'),
    # The intercommunicator to the spawned world; its remote members are in no world rank of
    # ours (comm_table.cc). Their data: README.md, "spawned worlds".
    'comm_spawn': dict(roles={'newcomm': (-2, 'out')}, post='c.CommNew(*{newcomm});'),
    'comm_free': dict(roles={'comm': (0, 'inout')},
                      pre='MPI_Comm before = *{comm}; c.CommFreeBegin(before);',
                      post='c.CommFree(before);'),
    'type_free': dict(roles={}, post='c.TypeFreed();'),
    'win_new': dict(roles={'win': (-1, 'out')}, post='c.WinNew(*{win});'),
    'win_free': dict(roles={'win': (0, 'inout')}, pre='MPI_Win before = *{win};',
                     post='c.WinFree(before);'),
    'rma_put': dict(roles={'count': (1, 'in'), 'type': (2, 'in'), 'target': (3, 'in'),
                           'win': (-1, 'in')},
                    post='c.Rma(invmw::wrap::TypeBytes({count}, {type}), 0, {target}, {win});'),
    'rma_get': dict(roles={'count': (1, 'in'), 'type': (2, 'in'), 'target': (3, 'in'),
                           'win': (-1, 'in')},
                    post='c.Rma(0, invmw::wrap::TypeBytes({count}, {type}), {target}, {win});'),
    'rma_get_accumulate': dict(
        roles={'count': (1, 'in'), 'type': (2, 'in'), 'rcount': (4, 'in'), 'rtype': (5, 'in'),
               'target': (6, 'in'), 'win': (-1, 'in')},
        post='c.Rma(invmw::wrap::TypeBytes({count}, {type}), invmw::wrap::TypeBytes({rcount}, '
             '{rtype}), {target}, {win});'),
    'rma_fetch_and_op': dict(
        roles={'type': (2, 'in'), 'target': (3, 'in'), 'win': (-1, 'in')},
        post='c.Rma(invmw::wrap::TypeBytes(1, {type}), invmw::wrap::TypeBytes(1, {type}), '
             '{target}, {win});'),
    'rma_compare_and_swap': dict(
        roles={'type': (3, 'in'), 'target': (4, 'in'), 'win': (-1, 'in')},
        post='c.Rma(invmw::wrap::TypeBytes(2, {type}), invmw::wrap::TypeBytes(1, {type}), '
             '{target}, {win});'),
    'io_read': dict(roles={'count': (2, 'in'), 'type': (3, 'in')},
                    post='c.Io(invmw::wrap::TypeBytes({count}, {type}), 0);'),
    'io_write': dict(roles={'count': (2, 'in'), 'type': (3, 'in')},
                     post='c.Io(0, invmw::wrap::TypeBytes({count}, {type}));'),
    'io_read_at': dict(roles={'count': (3, 'in'), 'type': (4, 'in')},
                       post='c.Io(invmw::wrap::TypeBytes({count}, {type}), 0);'),
    'io_write_at': dict(roles={'count': (3, 'in'), 'type': (4, 'in')},
                        post='c.Io(0, invmw::wrap::TypeBytes({count}, {type}));'),
    'io_read_begin': dict(roles={'count': (2, 'in'), 'type': (3, 'in')},
                          post='c.Io(invmw::wrap::TypeBytes({count}, {type}), 0);'),
    'io_write_begin': dict(roles={'count': (2, 'in'), 'type': (3, 'in')},
                           post='c.Io(0, invmw::wrap::TypeBytes({count}, {type}));'),
    'io_end': dict(roles={}, post='c.Leave();'),
}

# Function classes for the offline tools (OTF2 region roles, analysis).
CLASS_BY_KIND = {
    'p2p': ('send', 'recv', 'sendrecv', 'sendrecv_replace', 'isend', 'irecv', 'imrecv', 'mrecv',
            'send_init', 'recv_init', 'start', 'startall'),
    'probe': ('probe', 'iprobe', 'mprobe', 'improbe'),
    'completion': ('wait', 'waitall', 'waitany', 'waitsome', 'test', 'testall', 'testany',
                   'testsome', 'request_free', 'cancel'),
    'barrier': ('barrier',),
    'comm': ('comm_new', 'comm_new_req', 'comm_spawn', 'comm_free', 'type_free'),
    'rma': ('win_new', 'win_free', 'rma_put', 'rma_get', 'rma_get_accumulate',
            'rma_fetch_and_op', 'rma_compare_and_swap'),
    'io': ('io_read', 'io_write', 'io_read_at', 'io_write_at', 'io_read_begin',
           'io_write_begin', 'io_end'),
    'env': ('special',),
}
CLASS_BY_PREFIX = (('MPI_Comm_', 'comm'), ('MPI_Group_', 'comm'), ('MPI_Win_', 'rma'),
                   ('MPI_File_', 'io'))


def open_call(base, info):
    """What a blocking call tells its thread's open-call slot before the PMPI call (what it
    waits for, named if the run ends inside it: pmpi_wrap/thread_state.h, OpenCall)."""
    if base in ('send', 'recv'):
        return 'c.OpenP2p({peer}, {tag}, {comm}, %s);' % ('true' if base == 'send' else 'false')
    if base in ('sendrecv', 'sendrecv_replace'):
        return 'c.OpenP2p({dest}, {stag}, {comm}, true);'
    if base in ('wait', 'waitall', 'waitany', 'waitsome'):
        return 'c.OpenRequests(before);'
    if info['post'].startswith('c.Coll(') and 'comm' in info['roles']:
        return 'c.OpenComm({comm});'
    return ''


def func_class(name, kind):
    base = kind.split('+')[0]
    for cls, kinds in CLASS_BY_KIND.items():
        if base in kinds:
            return cls
    if base == 'plain':
        for prefix, cls in CLASS_BY_PREFIX:
            if name.startswith(prefix):
                return cls
        return 'other'
    return 'collective'


def load_list(path):
    funcs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f'{path}:{lineno}: expected "NAME KIND", got "{line}"')
            name, kind = parts
            base = kind.split('+')[0]
            if base != 'special' and base not in KINDS:
                sys.exit(f'{path}:{lineno}: unknown kind "{kind}" for {name}')
            if '+' in kind and kind.split('+')[1] != 'req':
                sys.exit(f'{path}:{lineno}: only "+req" may follow a kind')
            funcs.append((name, kind, lineno))
    return funcs


def strip_attributes(text):
    """Removes __attribute__((...)) with balanced parentheses."""
    out = []
    i = 0
    while True:
        j = text.find('__attribute__', i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        k = text.find('(', j)
        depth = 0
        while k < len(text):
            if text[k] == '(':
                depth += 1
            elif text[k] == ')':
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    return ''.join(out)


def load_prototypes(path):
    text = open(path).read()
    text = strip_attributes(text)
    text = re.sub(r'\s+', ' ', text)
    protos = {}
    for m in re.finditer(r'\bint\s+(MPI_[A-Za-z0-9_]+)\s*\(([^()]*)\)\s*;', text):
        name, params = m.group(1), m.group(2).strip()
        if params in ('', 'void'):
            protos[name] = []
        else:
            protos[name] = [p.strip() for p in params.split(',')]
    return protos


TYPE_WORDS = {'int', 'void', 'char', 'const', 'double', 'unsigned', 'long'}


def split_param(decl):
    """'const int sendcounts[]' -> ('const int', '[]'); 'int ranges[][3]' -> ('int', '[][3]')."""
    dims = ''
    m = re.search(r'(\s*\[[^\]]*\])+$', decl)
    if m:
        dims = m.group(0).replace(' ', '')
        decl = decl[:m.start()].strip()
    m = re.match(r'^(.*?)([A-Za-z_][A-Za-z0-9_]*)$', decl)
    if m and m.group(1).strip() and m.group(2) not in TYPE_WORDS and \
            not (m.group(2).startswith('MPI_') and m.group(1).strip() in ('', 'const')):
        return m.group(1).strip(), dims
    return decl, dims


ARRAY_ROLES = ('reqs', 'statuses', 'indices', 'rcounts', 'scounts', 'stypes', 'rtypes')


def norm_type(ctype, dims, role=None):
    t = ctype.replace('const', '').replace(' ', '')
    array = bool(dims)
    if role in ARRAY_ROLES and t.endswith('*') and not array:
        t, array = t[:-1], True
    if array:
        t += '[]'
    return t


def c_decl(ctype, dims, name):
    return f'{ctype}{"" if ctype.endswith("*") else " "}{name}{dims}'


# Fortran handle conversion functions by C handle type.
F2C = {'MPI_Comm': 'PMPI_Comm_f2c', 'MPI_Datatype': 'PMPI_Type_f2c', 'MPI_Op': 'PMPI_Op_f2c',
       'MPI_Win': 'PMPI_Win_f2c', 'MPI_File': 'PMPI_File_f2c', 'MPI_Group': 'PMPI_Group_f2c',
       'MPI_Info': 'PMPI_Info_f2c', 'MPI_Request': 'PMPI_Request_f2c',
       'MPI_Message': 'PMPI_Message_f2c'}
SCALARS = ('int', 'MPI_Aint', 'MPI_Offset', 'MPI_Count')


class Unsupported(Exception):
    pass


def fortran_conversion(t, var, fvar, direction, kind_info, role, roles_vars):
    """Returns (before, after) C++ statements defining `var` (C-typed) from Fortran arg fvar."""
    if t in SCALARS:
        return f'{t} {var} = *static_cast<{t}*>({fvar});', ''
    if t in ('void*', 'void[]'):
        return f'const void* {var} = invmw::wrap::FortranBuffer({fvar});', ''
    if t in F2C:
        return f'{t} {var} = {F2C[t]}(*static_cast<MPI_Fint*>({fvar}));', ''
    if t == 'int*' and role == 'index':
        return '', (f'int {var}_v = *static_cast<MPI_Fint*>({fvar}); '
                    f'if ({var}_v != MPI_UNDEFINED) {var}_v -= 1; int* {var} = &{var}_v;')
    if t == 'int*':
        return '', f'int {var}_v = *static_cast<MPI_Fint*>({fvar}); int* {var} = &{var}_v;'
    if t == 'int[]' and role == 'indices':
        count_var = roles_vars['outcount']
        return '', (f'int* {var} = invmw::wrap::Scratch().FortranIndices(*{count_var}, '
                    f'static_cast<MPI_Fint*>({fvar}));')
    if t == 'int[]':
        return f'const int* {var} = static_cast<const int*>({fvar});', ''
    if t == 'MPI_Datatype[]':
        raise Unsupported('array of datatypes')
    if t.endswith('*') and t[:-1] in F2C:
        h = t[:-1]
        stmt = f'{h} {var}_v = {F2C[h]}(*static_cast<MPI_Fint*>({fvar})); {h}* {var} = &{var}_v;'
        return (stmt, '') if direction in ('in', 'inout') else ('', stmt)
    if t == 'MPI_Request[]':
        count_var = roles_vars['count']
        return (f'MPI_Request* {var} = invmw::wrap::Scratch().FortranRequests({count_var}, '
                f'static_cast<MPI_Fint*>({fvar}));'), ''
    if t == 'MPI_Status*':
        # The Fortran status was substituted before the call when it was the ignore sentinel.
        return '', f'MPI_Status {var}_v; PMPI_Status_f2c(static_cast<MPI_Fint*>({fvar}_st), &{var}_v); MPI_Status* {var} = &{var}_v;'
    if t == 'MPI_Status[]':
        count_var = roles_vars['count']
        return '', (f'MPI_Status* {var} = invmw::wrap::Scratch().FortranStatuses({count_var}, '
                    f'{fvar}_st);')
    raise Unsupported(f'argument type {t}')


def entry_stubs(entries, protos):
    """The exported MPI_X symbols. On x86-64 each is a two-way jump: to invmw_c_MPI_X, or, when
    the library was preloaded into a program of another MPI, straight to that MPI's PMPI_X with
    registers and stack untouched (handle types differ in width between MPIs, so a C-level
    pass-through would truncate them). Elsewhere a plain C forwarder. Being a jump, the stub
    leaves the application's return address for invmw_c_MPI_X's __builtin_return_address(0),
    its call site (INVMW_WRAP_CALLSITE_DEPTH)."""
    out = ['', '#if defined(__x86_64__)', 'asm(".text\\n"']
    for name, kind, _, _ in entries:
        out.append(f'    ".globl {name}\\n.type {name},@function\\n.p2align 4\\n{name}:\\n"')
        # rbp is still the application's here: kept for the frame-pointer walk (r11 is
        # scratch at a call, and not an argument register even of variadic functions).
        out.append('    "  movq invmw_app_fp@gottpoff(%rip), %r11\\n  movq %rbp, %fs:(%r11)\\n"')
        out.append(f'    "  cmpb $0, invmw_mpi_mismatch(%rip)\\n  jne 1f\\n  jmp invmw_c_{name}\\n"')
        out.append(f'    "1: jmp *P{name}@GOTPCREL(%rip)\\n.size {name}, .-{name}\\n"')
    out.append(');')
    out.append('#else')
    out.append('extern "C" {')
    for name, kind, _, _ in entries:
        params = protos.get(name)
        if params is None or name == 'MPI_Pcontrol':
            continue
        ptypes = [split_param(p) for p in params]
        decls = [c_decl(t, d, f'a{i}') for i, (t, d) in enumerate(ptypes)]
        args = ', '.join(f'a{i}' for i in range(len(params)))
        out.append(f'int invmw_c_{name}({", ".join(decls) or "void"});')
        out.append(f'int {name}({", ".join(decls) or "void"}) {{ return invmw_c_{name}({args}); }}')
    out.append('}')
    out.append('#endif')
    return out


def gen(args):
    funcs = load_list(args.list)
    protos = load_prototypes(args.header)

    entries = []  # (name, kind, base_name, is_large_count)
    missing = []
    for name, kind, lineno in funcs:
        if kind == 'special':
            entries.append((name, kind, name, False))
            continue
        if name not in protos:
            missing.append(name)
            continue
        entries.append((name, kind, name, False))
        if name + '_c' in protos:
            entries.append((name + '_c', kind, name, True))

    out = args.out
    os.makedirs(out, exist_ok=True)

    # ---- function table ----
    with open(os.path.join(out, 'function_table.h'), 'w') as h:
        h.write('// Generated by gen_wrappers.py from functions.list; do not edit.\n#pragma once\n'
                '#include <cstdint>\nnamespace invmw::wrap {\nenum FuncId : uint16_t {\n')
        for name, kind, _, _ in entries:
            h.write(f'  F_{name},\n')
        h.write('  kNumFuncs\n};\n'
                'extern const char* const kFuncNames[kNumFuncs];\n'
                'extern const char* const kFuncClasses[kNumFuncs];\n'
                'extern const char* const kFuncKinds[kNumFuncs];\n'
                f'constexpr const char* kMpiFlavor = "{args.flavor}";\n'
                '}  // namespace invmw::wrap\n')
    with open(os.path.join(out, 'function_table.cc'), 'w') as c:
        c.write('// Generated by gen_wrappers.py from functions.list; do not edit.\n'
                '#include "function_table.h"\nnamespace invmw::wrap {\n'
                'const char* const kFuncNames[kNumFuncs] = {\n')
        for name, kind, _, _ in entries:
            c.write(f'  "{name}",\n')
        c.write('};\nconst char* const kFuncClasses[kNumFuncs] = {\n')
        for name, kind, _, _ in entries:
            c.write(f'  "{func_class(name, kind)}",\n')
        c.write('};\nconst char* const kFuncKinds[kNumFuncs] = {\n')
        for name, kind, _, _ in entries:
            c.write(f'  "{kind}",\n')
        c.write('};\n}  // namespace invmw::wrap\n')

    # ---- C wrappers ----
    cw = ['// Generated by gen_wrappers.py from functions.list and mpi.h; do not edit.',
          '#include "pmpi_wrap/call.h"', '',
          '#define INVMW_IMPL __attribute__((visibility("hidden")))', '', 'extern "C" {', '']
    fw = ['// Generated by gen_wrappers.py from functions.list and mpi.h; do not edit.',
          '#include "pmpi_wrap/call.h"', '#include "pmpi_wrap/fortran.h"', '',
          '#define INVMW_EXPORT __attribute__((visibility("default")))', '',
          'extern "C" {', '']
    fortran_skipped = []
    nf = 0
    for name, kind, base_name, large in entries:
        if kind == 'special':
            continue
        base = kind.split('+')[0]
        info = KINDS[base]
        params = protos[name]
        roles = dict(info['roles'])
        if kind.endswith('+req'):
            # Nonblocking variants: the blocking layout plus a request, always last.
            roles = {r: ((i - 1 if i < 0 else i), d) for r, (i, d) in roles.items()}
            roles['req'] = (-1, 'out')
        ptypes = [split_param(p) for p in params]
        nparams = len(params)

        def idx(i):
            return i if i >= 0 else nparams + i

        for r, (i, _) in roles.items():
            if idx(i) >= nparams:
                sys.exit(f'{name}: role {r} at {i} but mpi.h has {nparams} arguments')
        argnames = [f'a{i}' for i in range(nparams)]
        decls = [c_decl(t, arr, argnames[i]) for i, (t, arr) in enumerate(ptypes)]
        call_args = ', '.join(argnames)
        fid = f'invmw::wrap::F_{name}'

        def expand(snippet, varmap):
            return snippet.format(**varmap) if snippet else ''

        post = info['post']
        pre = info.get('pre') or ''
        if not kind.endswith('+req'):
            opening = open_call(base, info)
            if opening:
                pre = (pre + ' ' + opening).strip()
        if kind.endswith('+req'):
            post = post.replace('c.Coll(', 'c.CollReq(*{req}, ').replace(
                'c.Rma(', 'c.RmaReq(*{req}, ').replace('c.Io(', 'c.IoReq(*{req}, ')
            if 'Req(' not in post:
                sys.exit(f'{name}: kind {kind} has no request form')

        # C wrapper
        cvars = {r: argnames[idx(i)] for r, (i, _) in roles.items()}
        lines = [f'INVMW_IMPL int invmw_c_{name}({", ".join(decls)}) {{',
                 f'  invmw::wrap::Call c({fid}, false, __builtin_return_address(0));',
                 f'  if (!c.on()) return P{name}({call_args});']
        if 'status' in info:
            v = cvars[info['status']]
            lines.append(f'  MPI_Status {v}_scratch;')
            lines.append(f'  if ({v} == MPI_STATUS_IGNORE) {v} = &{v}_scratch;')
        if 'statuses' in info:
            v, cnt = info['statuses']
            lines.append(f'  if ({cvars[v]} == MPI_STATUSES_IGNORE) '
                         f'{cvars[v]} = invmw::wrap::Scratch().Statuses({cvars[cnt]});')
        if pre:
            lines.append('  ' + expand(pre, cvars))
        lines.append(f'  int rc = P{name}({call_args});')
        lines.append('  if (rc == MPI_SUCCESS) {')
        lines.append('    ' + expand(post, cvars))
        lines.append('  } else {')
        lines.append('    c.Failed(rc);')
        lines.append('  }')
        lines.append('  return rc;')
        lines.append('}')
        cw.extend(lines)
        cw.append('')

        # Fortran wrappers (not for large-count variants: their Fortran names differ)
        if large:
            continue
        try:
            fvars = {r: f'v_{r}' for r in roles}
            before, after = [], []
            # CHARACTER arguments (file names, spawn commands and argv) come with a hidden
            # length each after the last argument; the real function must get them too.
            nhidden = sum(1 for t, _ in ptypes if re.search(r'\bchar\b', t))
            hidden = [f'h{k}' for k in range(nhidden)]
            fparams = ([f'void* f{i}' for i in range(nparams)] + ['MPI_Fint* ierr'] +
                       [f'size_t {h}' for h in hidden])
            subst = []
            for r, (i, direction) in sorted(roles.items(), key=lambda kv: idx(kv[1][0])):
                t = norm_type(*ptypes[idx(i)], r)
                fv = f'f{idx(i)}'
                if t == 'MPI_Status*':
                    subst.append(f'  MPI_Fint {fv}_buf[invmw::wrap::kFortranStatusInts]; '
                                 f'void* {fv}_st = invmw::wrap::IsFortranStatusIgnore({fv}) ? '
                                 f'static_cast<void*>({fv}_buf) : {fv};')
                elif t == 'MPI_Status[]':
                    cnt = fvars[info['statuses'][1]]
                    subst.append(f'  void* {fv}_st = invmw::wrap::IsFortranStatusesIgnore({fv}) ? '
                                 f'invmw::wrap::Scratch().FortranStatusBuffer({cnt}) : {fv};')
                b, a = fortran_conversion(t, fvars[r], fv, direction, info, r, fvars)
                if b:
                    before.append((fvars[r], '  ' + b))
                if a:
                    after.append('    ' + a)
            # Convert only the arguments the event uses: a handle conversion is a call into the
            # MPI library, and unused variables are compiler warnings.
            used_text = '\n'.join(subst + after + [expand(post, fvars),
                                                    expand(pre, fvars)])
            while True:
                kept = [(v, b) for v, b in before
                        if re.search(r'\b%s\b' % v, used_text + '\n'.join(
                            x for w, x in before if w != v))]
                if len(kept) == len(before):
                    break
                before = kept
            before = [b for _, b in before]
            # Status arguments are passed substituted; all others unchanged.
            fcall = []
            role_at = {idx(j): r for r, (j, _) in roles.items()}
            for i in range(nparams):
                t = norm_type(*ptypes[i], role_at.get(i))
                if t in ('MPI_Status*', 'MPI_Status[]') and i in role_at:
                    fcall.append(f'f{i}_st')
                else:
                    fcall.append(f'f{i}')
            fcall.append('ierr')
            fcall.extend(hidden)
            lname = name.lower()
            body = [f'  invmw::wrap::Call c({fid}, true, ra);',
                    f'  static invmw::wrap::FortranSymbol real_fn("p{lname}");',
                    f'  using Fn = void (*)({", ".join(["void*"] * nparams + ["MPI_Fint*"] + ["size_t"] * nhidden)});',
                    '  if (!c.on()) {',
                    f'    reinterpret_cast<Fn>(real_fn.get())({", ".join([f"f{i}" for i in range(nparams)] + ["ierr"] + hidden)});',
                    '    return;', '  }']
            # The ignore-sentinel substitutions need the count before the call.
            body.extend(before)
            body.extend(subst)
            if pre:
                body.append('  ' + expand(pre, fvars))
            body.append(f'  reinterpret_cast<Fn>(real_fn.get())({", ".join(fcall)});')
            body.append('  if (ierr == nullptr || *ierr == MPI_SUCCESS) {')
            body.extend(after)
            body.append('    ' + expand(post, fvars))
            body.append('  } else {')
            body.append('    c.Failed(*ierr);')
            body.append('  }')
            impl = f'invmw_f_{lname}'
            fw.append(f'static void {impl}({", ".join(fparams + ["const void* ra"])}) {{')
            fw.extend(body)
            fw.append('}')
            plist = ', '.join(fparams)
            # The exported symbol's own return address is the application's call site.
            arglist = ', '.join([f'f{i}' for i in range(nparams)] + ['ierr'] + hidden +
                                ['__builtin_return_address(0)'])
            for sym in (lname + '_', lname + '__', lname, name.upper()):
                fw.append(f'INVMW_EXPORT void {sym}({plist}) {{ {impl}({arglist}); }}')
            # mpi_f08: same argument layout (handles are one-integer derived types passed by
            # reference), different symbol pair.
            fw.append(f'static void {impl}_f08({plist}, const void* ra) {{')
            fw.extend(b.replace(f'("p{lname}")', f'("p{lname}_f08_")') for b in body)
            fw.append('}')
            fw.append(f'INVMW_EXPORT void {lname}_f08_({plist}) {{ {impl}_f08({arglist}); }}')
            fw.append('')
            nf += 1
        except Unsupported as e:
            fortran_skipped.append(f'{name} ({e})')

    cw.append('}  // extern "C"')
    cw.extend(entry_stubs(entries, protos))
    fw.append('}  // extern "C"')
    with open(os.path.join(out, 'wrappers_c.cc'), 'w') as f:
        f.write('\n'.join(cw) + '\n')
    with open(os.path.join(out, 'wrappers_fortran.cc'), 'w') as f:
        f.write('\n'.join(fw) + '\n')
    with open(os.path.join(out, 'generation_report.txt'), 'w') as f:
        f.write(f'flavor {args.flavor}: {len(entries)} functions, {nf} with Fortran bindings\n')
        for m in missing:
            f.write(f'not in mpi.h (skipped): {m}\n')
        for s in fortran_skipped:
            f.write(f'no Fortran wrapper: {s}\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--list', required=True)
    ap.add_argument('--header', required=True, help='preprocessed mpi.h')
    ap.add_argument('--out', required=True)
    ap.add_argument('--flavor', required=True)
    gen(ap.parse_args())


if __name__ == '__main__':
    main()
