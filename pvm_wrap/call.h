// One recorded PVM call: the object every generated wrapper creates.
//
// Shape (the same as pmpi_wrap's): the constructor checks that the task records, takes the
// reentrancy guard and the enter timestamp; the wrapper calls the real function; one recording
// method computes bytes and peers and updates the counters. Return codes are never changed.
//
// The PVM libraries call their own entry points through the PLT. The group library (libgpvm3)
// implements pvm_bcast, pvm_barrier, pvm_reduce and pvm_joingroup with pvm_send/pvm_mcast/pvm_recv.
// Those inner calls reach our wrappers with the guard held: they are not counted as calls of their
// own. Their messages with other tasks become parts of the outer call (bytes, and nested
// send/receive records in the trace, so receivers still find their sends); their messages with the
// group server (pvmgs) are counted apart under "pvmgs" and left out of the trace, where pvmgs has
// no location.
#pragma once

#include <pvm3.h>

#include <cstring>

#include "common/clock.h"
#include "pvm_wrap/task_state.h"

namespace invmw::pvm {

// Bytes of one element of a PVM data type (pvm_psend/pvm_precv), 0 for unknown types.
uint64_t TypeSize(int type);
inline uint64_t StrBytes(const char* s) {
  return s ? std::strlen(s) + 1 : 0;
}
// Length, tag and source of a message buffer (pvm_bufinfo); false for an invalid buffer.
bool BufInfo(int bufid, int* bytes, int* tag, int* src);
int ActiveSendBytes();

class Call {
 public:
  explicit Call(FuncId f) : f_(f) {
    if (tls_depth) {
      if (tls_depth == 1 && g.collecting) {
        inner_ = true;
        ++tls_depth;
        t0_ = clock::Ticks();  // an inner send's part is stamped here (Call::Inner)
      }
      return;
    }
    if (g.state != State::kActive && !(g.state == State::kUnset && Activate())) return;
    if (!tls_owner) {
      ++g.dropped_threads;
      return;
    }
    on_ = true;
    tls_depth = 1;
    g.collecting = g.collects[f];
    g.nparts = 0;
    g.part_bytes_sent = g.part_bytes_recv = 0;
    t0_ = clock::Ticks();
  }
  ~Call() {
    if (on_ || inner_) --tls_depth;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // True when the wrapper must record (an outer call, or an inner one whose messages count).
  bool on() const { return on_ || inner_; }
  bool outer() const { return on_; }

  void Plain(int /*rc*/) {
    if (on_) Finish(0, 0, -1, -1);
  }
  void Exit(int rc);
  void Spawn(int rc, const char* task, int ntask, const int* tids);
  void Pack(int rc, uint64_t bytes, bool pack) {
    if (!on_) return;
    if (rc < 0) bytes = 0;
    Finish(pack ? bytes : 0, pack ? 0 : bytes, -1, -1);
  }
  void Send(int rc, int tid, int tag) {
    uint64_t b = rc < 0 ? 0 : uint64_t(ActiveSendBytes());
    if (inner_) return Inner(true, tid, tag, b);
    if (on_) Finish(b, 0, rc < 0 ? -1 : tid, tag);
  }
  void Psend(int rc, int tid, int tag, int len, int type) {
    uint64_t b = rc < 0 ? 0 : uint64_t(len) * TypeSize(type);
    if (inner_) return Inner(true, tid, tag, b);
    if (on_) Finish(b, 0, rc < 0 ? -1 : tid, tag);
  }
  void Mcast(int rc, const int* tids, int n, int tag);
  // pvm_recv, pvm_nrecv, pvm_trecv: rc is the new buffer (0: nothing arrived).
  void Recv(int rc) {
    int bytes = 0, tag = -1, src = -1;
    const bool got = rc > 0 && BufInfo(rc, &bytes, &tag, &src);
    if (inner_) {
      if (got) Inner(false, src, tag, uint64_t(bytes));
      return;
    }
    if (!on_) return;
    if (got)
      Finish(0, uint64_t(bytes), src, tag);
    else
      Finish(0, 0, -1, -1, rc == 0 ? trace::kTestFail : trace::kCall);
  }
  // libpvm3 3.4 reports the received length in bytes (its manual says items; the code and
  // this test suite say bytes), so rlen is the byte count whatever the type.
  void Precv(int rc, int rtid, int rtag, int rlen, int /*type*/) {
    uint64_t b = rc < 0 || rlen < 0 ? 0 : uint64_t(rlen);
    if (inner_) {
      if (rc >= 0) Inner(false, rtid, rtag, b);
      return;
    }
    if (on_) Finish(0, b, rc < 0 ? -1 : rtid, rtag);
  }
  // pvm_probe: rc > 0 when a matching message has arrived.
  void Probe(int rc) {
    if (!on_) return;
    int bytes = 0, tag = -1, src = -1;
    if (rc > 0 && BufInfo(rc, &bytes, &tag, &src))
      Finish(0, 0, src, tag);
    else
      Finish(0, 0, -1, -1, trace::kTestFail);
  }
  // Group calls: bytes are those of the parts collected from the group library's own calls.
  void Group(int /*rc*/) {
    if (on_) Finish(g.part_bytes_sent, g.part_bytes_recv, -1, -1);
  }

 private:
  void Inner(bool send, int peer, int tag, uint64_t bytes);
  void Finish(uint64_t sent, uint64_t recv, int peer, int tag, uint8_t type = trace::kCall) {
    const uint64_t t1 = clock::Ticks();
    const uint64_t dt = t1 - t0_;
    FuncStats& s = g.stats[f_];
    s.calls++;
    s.ticks += dt;
    if (dt > s.max_ticks) s.max_ticks = dt;
    s.bytes_sent += sent;
    s.bytes_recv += recv;
    s.hist[raw::HistBin(sent + recv)]++;
    if (g.trace_on) Emit(t1, sent, recv, peer, tag, type);
  }
  void Emit(uint64_t t1, uint64_t sent, uint64_t recv, int peer, int tag, uint8_t type);

  FuncId f_;
  bool on_ = false;
  bool inner_ = false;
  uint64_t t0_ = 0;
};

}  // namespace invmw::pvm
