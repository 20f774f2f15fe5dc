#include "pvm_wrap/call.h"

#include <cstdio>
#include <string>

#include "pvm_wrap/clock_sync.h"

namespace invmw::pvm {

uint64_t TypeSize(int type) {
  switch (type) {
    case PVM_STR:
    case PVM_BYTE:
      return 1;
    case PVM_SHORT:
    case PVM_USHORT:
      return sizeof(short);
    case PVM_INT:
    case PVM_UINT:
      return sizeof(int);
    case PVM_FLOAT:
      return sizeof(float);
    case PVM_CPLX:
      return 2 * sizeof(float);
    case PVM_DOUBLE:
      return sizeof(double);
    case PVM_DCPLX:
      return 2 * sizeof(double);
    case PVM_LONG:
    case PVM_ULONG:
      return sizeof(long);
    default:
      return 0;
  }
}

namespace {
using BufInfoFn = int (*)(int, int*, int*, int*);
using GetSbufFn = int (*)();
BufInfoFn g_bufinfo;
GetSbufFn g_getsbuf;
}  // namespace

bool BufInfo(int bufid, int* bytes, int* tag, int* src) {
  if (!g_bufinfo) g_bufinfo = reinterpret_cast<BufInfoFn>(RealByName("pvm_bufinfo"));
  return g_bufinfo && g_bufinfo(bufid, bytes, tag, src) >= 0;
}

int ActiveSendBytes() {
  if (!g_getsbuf) g_getsbuf = reinterpret_cast<GetSbufFn>(RealByName("pvm_getsbuf"));
  int buf = g_getsbuf ? g_getsbuf() : 0, bytes = 0, tag = 0, src = 0;
  if (buf <= 0 || !BufInfo(buf, &bytes, &tag, &src)) return 0;
  return bytes;
}

void Call::Inner(bool send, int peer, int tag, uint64_t bytes) {
  if (peer > 0 && peer == PvmgsTid()) {
    FuncStats& s = g.pvmgs;
    s.calls++;
    (send ? s.bytes_sent : s.bytes_recv) += bytes;
    s.hist[raw::HistBin(bytes)]++;
    return;
  }
  (send ? g.part_bytes_sent : g.part_bytes_recv) += bytes;
  if (g.nparts == TaskState::kMaxParts) {
    ++g.dropped_parts;
    return;
  }
  // A message leaves inside the inner send and arrives by the end of the inner receive: a send
  // part stamped when the inner call returned could follow its receive on the other task
  // whenever this task was descheduled after the message left (pvm.known_late_send).
  g.parts[g.nparts++] = Part{send ? t0_ : clock::Ticks(), bytes, peer, tag, send};
}

void Call::Mcast(int rc, const int* tids, int n, int tag) {
  if (!on_ && !inner_) return;
  const uint64_t b = rc < 0 ? 0 : uint64_t(ActiveSendBytes());
  // pvm_mcast never sends to the caller itself, even when it is listed.
  int dests = 0;
  for (int i = 0; rc >= 0 && i < n; ++i) {
    if (tids[i] == g.tid) continue;
    ++dests;
    if (inner_) {
      Inner(true, tids[i], tag, b);
    } else if (g.nparts < TaskState::kMaxParts) {
      g.parts[g.nparts++] = Part{t0_, b, tids[i], tag, true};
    } else {
      ++g.dropped_parts;
    }
  }
  if (on_) Finish(b * uint64_t(dests), 0, -1, tag);
}

void Call::Spawn(int rc, const char* task, int ntask, const int* tids) {
  if (inner_) {
    // The group library starting the group server.
    if (rc > 0 && task && std::string(task).find("pvmgs") != std::string::npos)
      g.pvmgs_tid = tids[0];
    return;
  }
  if (!on_) return;
  if (rc > 0 && g.sync_context > 0) {
    const int saved = tls_depth;
    tls_depth = 1000;
    ServeChildren(g.sync_context, tids, ntask, g.cfg.PVM_SYNC_TIMEOUT);
    tls_depth = saved;
  }
  Finish(0, 0, -1, -1);
  // The children in spawn order: the merge numbers tasks in this order.
  std::string line = "{\"type\":\"spawn\",\"task\":\"";
  for (const char* p = task; p && *p; ++p)
    if (*p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) line += *p;
  line += "\",\"tids\":[";
  for (int i = 0; i < rc && i < ntask; ++i) {
    if (i) line += ",";
    line += std::to_string(tids[i]);
  }
  line += "]}";
  AppendDefs(line);
}

void Call::Exit(int rc) {
  Plain(rc);
  if (on_) {
    tls_depth = 0;
    on_ = false;
    FinishTask(raw::kEndFinalize, 0);
  }
}

void Call::Emit(uint64_t t1, uint64_t sent, uint64_t recv, int peer, int tag, uint8_t type) {
  for (int i = 0; i < g.nparts; ++i) {
    const Part& p = g.parts[i];
    trace::EventRecord r{};
    r.type = p.send ? trace::kSendPart : trace::kRecvPart;
    r.t_enter = r.t_leave = p.t < t0_ ? t0_ : (p.t > t1 ? t1 : p.t);
    (p.send ? r.bytes_sent : r.bytes_recv) = p.bytes;
    r.peer = p.peer;
    r.tag = p.tag;
    r.peer2 = -1;
    r.tag2 = -1;
    r.func = uint16_t(f_);
    PushEvent(r);
  }
  trace::EventRecord r{};
  r.type = type;
  r.t_enter = t0_;
  r.t_leave = t1;
  r.bytes_sent = sent;
  r.bytes_recv = recv;
  r.peer = peer;
  r.tag = tag;
  r.peer2 = -1;
  r.tag2 = -1;
  r.func = uint16_t(f_);
  if (type == trace::kTestFail) r.bytes_sent = 1;  // one unsuccessful call (coalescing count)
  PushEvent(r);
}

}  // namespace invmw::pvm
