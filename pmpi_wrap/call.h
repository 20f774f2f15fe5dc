// One recorded MPI call: the object every generated wrapper creates.
//
// Shape of every wrapper (Darshan's and mpiP's, kept strictly): construct a Call (checks that
// recording is on, takes the reentrancy guard and the enter timestamp), call the PMPI function,
// then one recording method that computes bytes and peers and updates this thread's counters.
// No allocation, lock, I/O or printing happens here; a failed MPI call is counted with its time
// but moves no bytes; the MPI return code is returned untouched by the wrapper.
#pragma once

#include <mpi.h>

#include "common/clock.h"
#include "common/raw_format.h"
#include "function_table.h"
#include "pmpi_wrap/collective_bytes.h"
#include "pmpi_wrap/comm_table.h"
#include "pmpi_wrap/request_table.h"
#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/scratch.h"
#include "pmpi_wrap/call_counters.h"
#include "pmpi_wrap/callsite_runtime.h"
#include "recording/callsite_table.h"
#include "pmpi_wrap/thread_state.h"
#include "recording/trace_buffer.h"
#include "pmpi_wrap/trace_runtime.h"

namespace invmw::wrap {

class Call {
 public:
  // ra: the return address in the application, taken by the exported C or Fortran entry
  // (__builtin_return_address there), so a call MPICH's Fortran layer makes to the C API is
  // attributed through the Fortran entry, which holds tls_in_call.
  explicit Call(FuncId f, bool fortran = false, const void* ra = nullptr) : f_(f) {
    (void)fortran;
    if (tls_in_call || !g.record[f].load(std::memory_order_relaxed)) return;
    ts_ = CurrentThread();
    if (!ts_) return;
    tls_in_call = true;
    on_ = true;
    if (ts_->sites) {
      ts_->site_pcs[0] = reinterpret_cast<uint64_t>(ra);
      ts_->site_n = 1;
      ts_->site_slot1 = 0;  // set by Finish: a record of this call never names another's site
      if (__builtin_expect(g_callsite_depth > 1, 0) && ra)
        CallSitesCaptureDeep(ts_, reinterpret_cast<uint64_t>(ra), fortran);
    }
    if (__builtin_expect(ts_->counter_fd >= 0, 0))
      ReadCallCounters(ts_->counter_fd, ts_->counter_n, ts_->counters_enter);
    t0_ = clock::Ticks();
    ThreadState::OpenCall& o = ts_->open;
    o.t_enter = t0_;
    o.comm = MPI_COMM_NULL;
    o.known = false;
    std::atomic_signal_fence(std::memory_order_release);
    o.func1.store(uint32_t(f) + 1, std::memory_order_relaxed);
  }
  ~Call() {
    if (on_) {
      ts_->open.func1.store(0, std::memory_order_relaxed);
      tls_in_call = false;
    }
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool on() const { return on_; }

  // What the open call waits for (ThreadState::open), given before the PMPI call by the
  // wrappers of blocking point-to-point calls, collectives and waits.
  void OpenP2p(int peer, int tag, MPI_Comm comm, bool to_peer) {
    ThreadState::OpenCall& o = ts_->open;
    o.peer = peer;
    o.tag = tag;
    o.peer_world = false;
    o.to_peer = to_peer;
    std::atomic_signal_fence(std::memory_order_release);
    o.known = true;
    o.comm = comm;
  }
  void OpenComm(MPI_Comm comm) { ts_->open.comm = comm; }
  // A wait on exactly one tracked request: its peer (a world rank), tag and communicator.
  void OpenRequests(const RequestSnapshot& before) {
    const ReqInfo* one = nullptr;
    for (int i = 0; i < before.size(); ++i) {
      const ReqInfo* r = before.info(i);
      if (!r) continue;
      if (one) return;
      one = r;
    }
    if (!one || one->kind == ReqKind::kOther) return;
    ThreadState::OpenCall& o = ts_->open;
    o.peer = one->peer;
    o.tag = one->tag;
    o.peer_world = true;
    o.to_peer = one->kind == ReqKind::kSend;
    std::atomic_signal_fence(std::memory_order_release);
    o.known = one->kind == ReqKind::kSend || one->kind == ReqKind::kRecv;
    o.comm = one->comm;
  }

  // --- recording methods, one per kind of call (see gen_wrappers.py) ---
  void Leave() {
    Finish(0, 0);
    if (ts_->trace) EmitRecord(0, 0, kPeerNone, -1, 0, 0, kPeerNone, -1, trace::kCall);
  }
  void Failed(int /*rc*/) { Leave(); }

  template <typename N>
  void Send(N count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    uint64_t b = dest == MPI_PROC_NULL ? 0 : TypeBytes(count, type);
    Finish(b, 0, dest == MPI_PROC_NULL ? 0 : kSends);
    if (ts_->trace) Emit(b, 0, PeerOf(comm, dest), tag, comm);
  }
  void Recv(const MPI_Status* st, MPI_Comm comm) {
    uint64_t b = StatusBytes(st);
    Finish(0, b, Received(st));
    if (ts_->trace) Emit(0, b, SourceOf(comm, st), st->MPI_TAG, comm);
  }
  template <typename N>
  void Sendrecv(N scount, MPI_Datatype stype, int dest, int stag, const MPI_Status* st,
                MPI_Comm comm) {
    uint64_t b = dest == MPI_PROC_NULL ? 0 : TypeBytes(scount, stype), r = StatusBytes(st);
    Finish(b, r, (dest == MPI_PROC_NULL ? 0 : kSends) | Received(st));
    if (ts_->trace) Emit(b, r, PeerOf(comm, dest), stag, comm, 0, SourceOf(comm, st), st->MPI_TAG);
  }
  void Probe(int flag, const MPI_Status* st, MPI_Comm comm) {
    Finish(0, 0);
    if (ts_->trace) {
      if (flag)
        Emit(0, 0, SourceOf(comm, st), st->MPI_TAG, comm);
      else
        Emit(0, 0, kPeerNone, -1, comm, 0, kPeerNone, -1, trace::kTestFail);
    }
  }
  void Mprobe(int flag, MPI_Message msg, const MPI_Status* st, MPI_Comm comm) {
    if (flag) RememberMessage(msg, comm);
    Probe(flag, st, comm);
  }
  void Mrecv(MPI_Message msg, const MPI_Status* st) {
    uint64_t b = StatusBytes(st);
    Finish(0, b, Received(st));
    if (ts_->trace) {
      MPI_Comm comm = MessageComm(msg);
      Emit(0, b, comm == MPI_COMM_NULL ? kPeerNone : SourceOf(comm, st), st->MPI_TAG, comm);
    }
  }

  template <typename N>
  void Isend(N count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request req,
             bool persistent) {
    uint64_t bytes = dest == MPI_PROC_NULL ? 0 : TypeBytes(count, type);
    uint64_t id = Track(req, ReqKind::kSend, bytes, comm, PeerOf(comm, dest), tag, persistent);
    // A persistent send moves its message when started (MPI_Start binds it).
    Finish(persistent ? 0 : bytes, 0, persistent || dest == MPI_PROC_NULL ? 0 : kSends);
    if (ts_->trace) Emit(persistent ? 0 : bytes, 0, PeerOf(comm, dest), tag, comm, id);
  }
  template <typename N>
  void Irecv(N count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request req,
             bool persistent) {
    int peer = source == MPI_ANY_SOURCE ? kPeerNone : PeerOf(comm, source);
    uint64_t id = Track(req, ReqKind::kRecv, TypeBytes(count, type), comm, peer, tag, persistent);
    // The size of a receive is known at its completion, where it is binned (Completed).
    Finish(0, 0, persistent ? 0 : kNoBin);
    if (ts_->trace) Emit(0, 0, peer, tag, comm, id);
  }
  template <typename N>
  void Imrecv(N count, MPI_Datatype type, MPI_Message msg, MPI_Request req) {
    MPI_Comm comm = MessageComm(msg);
    uint64_t id = Track(req, ReqKind::kRecv, TypeBytes(count, type), comm, kPeerNone, -1, false);
    Finish(0, 0, kNoBin);
    if (ts_->trace) Emit(0, 0, kPeerNone, -1, comm, id);
  }
  void Start(int n, const MPI_Request* reqs);

  void CompleteOne(const RequestSnapshot& before, int done, const MPI_Status* st);
  // Record of a Wait/Test call itself: a failed test is marked so it can be coalesced.
  void CompletionRecord(bool success, uint64_t request = 0) {
    if (ts_->trace)
      EmitRecord(0, 0, kPeerNone, -1, 0, request, kPeerNone, -1,
                 success ? trace::kCall : trace::kTestFail);
  }
  void CompleteAll(const RequestSnapshot& before, int done, const MPI_Status* sts);
  void CompleteIndex(const RequestSnapshot& before, int done, int index, const MPI_Status* st);
  void CompleteSome(const RequestSnapshot& before, int outcount, const int* indices,
                    const MPI_Status* sts);
  void RequestFree(const RequestSnapshot& before);

  void Coll(const CollBytes& b) {
    Finish(b.sent, b.recv);
    if (ts_->trace) Emit(b.sent, b.recv, b.root, -1, b.comm);
  }
  void CollReq(MPI_Request req, const CollBytes& b) {
    uint64_t id = Track(req, ReqKind::kCollective, b.sent + b.recv, b.comm, b.root, -1, false);
    Finish(b.sent, b.recv);
    if (ts_->trace) Emit(b.sent, b.recv, b.root, -1, b.comm, id);
  }

  void CommNew(MPI_Comm newcomm) {
    if (newcomm != MPI_COMM_NULL) RegisterComm(newcomm);
    Finish(0, 0);
    if (ts_->trace) Emit(0, 0, kPeerNone, -1, newcomm);
  }
  void CommNewPending(MPI_Comm* newcomm, MPI_Request req) {
    Track(req, ReqKind::kOther, 0, MPI_COMM_NULL, kPeerNone, -1, false);
    Leave();
  }
  // The trace names the communicator by its id, found while the handle is still valid: one
  // invmw has not seen yet (the parent intercommunicator of a spawned world) is registered here,
  // not after MPI freed it.
  void CommFreeBegin(MPI_Comm comm) {
    if (ts_->trace) free_id_ = LookupComm(comm)->id;
  }
  void CommFree(MPI_Comm before) {
    ForgetComm(before);
    Finish(0, 0);
    if (ts_->trace) EmitRecord(0, 0, kPeerNone, -1, free_id_, 0, kPeerNone, -1, trace::kCall);
  }
  void TypeFreed() {
    g.type_epoch.fetch_add(1, std::memory_order_relaxed);
    Leave();
  }
  void WinNew(MPI_Win win) {
    RegisterWin(win);
    Leave();
  }
  void WinFree(MPI_Win before) {
    ForgetWin(before);
    Leave();
  }
  void Rma(uint64_t sent, uint64_t recv, int target, MPI_Win win) {
    Finish(sent, recv);
    if (ts_->trace) Emit(sent, recv, WinTargetWorldRank(win, target), -1, MPI_COMM_NULL);
  }
  void RmaReq(MPI_Request req, uint64_t sent, uint64_t recv, int target, MPI_Win win) {
    uint64_t id = Track(req, ReqKind::kRma, sent + recv, MPI_COMM_NULL,
                        WinTargetWorldRank(win, target), -1, false);
    Finish(sent, recv);
    if (ts_->trace) Emit(sent, recv, WinTargetWorldRank(win, target), -1, MPI_COMM_NULL, id);
  }
  // MPI-IO: bytes read count as received, bytes written as sent.
  void Io(uint64_t read, uint64_t written) {
    Finish(written, read);
    if (ts_->trace) Emit(written, read, kPeerNone, -1, MPI_COMM_NULL);
  }
  void IoReq(MPI_Request req, uint64_t read, uint64_t written) {
    uint64_t id = Track(req, ReqKind::kIo, read + written, MPI_COMM_NULL, kPeerNone, -1, false);
    Finish(written, read);
    if (ts_->trace) Emit(written, read, kPeerNone, -1, MPI_COMM_NULL, id);
  }

 private:
  static int PeerOf(MPI_Comm comm, int peer) {
    if (peer == MPI_PROC_NULL) return kPeerProcNull;
    return PeerWorldRank(LookupComm(comm), peer);
  }
  static uint64_t StatusBytes(const MPI_Status* st) {
    if (!st || st->MPI_SOURCE == MPI_PROC_NULL) return 0;
      // The byte count lives in the status; reading it directly saves a library call per receive
      // where the layout is known (both MPIs keep bytes there, whatever the datatype).
#if defined(OPEN_MPI)
    return uint64_t(st->_ucount);
#elif defined(MPICH)
    return (uint64_t(uint32_t(st->count_hi_and_cancelled)) >> 1 << 32) | uint32_t(st->count_lo);
#endif
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0) return 0;
    return uint64_t(n);
  }
  uint64_t Track(MPI_Request req, ReqKind kind, uint64_t bytes, MPI_Comm comm, int peer, int tag,
                 bool persistent) {
    uint64_t id = g.next_request_id.fetch_add(1, std::memory_order_relaxed);
    ReqInfo info{bytes, t0_, comm, peer, tag, uint16_t(f_), kind, persistent, !persistent, id, 0};
    TrackRequest(req, info);
    return id;
  }
  static int SourceOf(MPI_Comm comm, const MPI_Status* st) {
    return st ? PeerOf(comm, st->MPI_SOURCE) : kPeerNone;
  }
  static uint32_t CommId(MPI_Comm comm) {
    return comm == MPI_COMM_NULL ? 0xffffffffu : LookupComm(comm)->id;
  }
  // The trace record of this call (only when tracing; after Finish, which took the leave time).
  void Emit(uint64_t sent, uint64_t recv, int peer, int tag, MPI_Comm comm, uint64_t req = 0,
            int peer2 = kPeerNone, int tag2 = -1, uint8_t type = trace::kCall) {
    EmitRecord(sent, recv, peer, tag, CommId(comm), req, peer2, tag2, type);
  }
  void EmitRecord(uint64_t sent, uint64_t recv, int peer, int tag, uint32_t comm_id, uint64_t req,
                  int peer2, int tag2, uint8_t type);
  // Processes completed request i of a snapshot (status may be null for sends).
  void Completed(const RequestSnapshot& before, int i, const MPI_Status* st);
  void RememberMessage(MPI_Message msg, MPI_Comm comm);
  MPI_Comm MessageComm(MPI_Message msg);

  // How Finish bins a call: kAuto (collectives, RMA, I/O) counts a direction when it moved
  // bytes; point-to-point calls say which sides they have, so a zero-byte message is binned
  // too; kNoBin for calls whose messages are binned elsewhere (receives at their completion,
  // persistent starts per request).
  static constexpr unsigned kSends = 1, kRecvs = 2, kAuto = 4, kNoBin = 8;
  static unsigned Received(const MPI_Status* st) {
    return st && st->MPI_SOURCE != MPI_PROC_NULL ? kRecvs : 0;
  }
  static void Bin(FuncStats& s, uint64_t sent, uint64_t recv, unsigned dirs) {
    s.hist[raw::HistBin(sent > recv ? sent : recv)]++;
    if (dirs & kSends) s.hist_sent[raw::HistBin(sent)]++;
    if (dirs & kRecvs) s.hist_recv[raw::HistBin(recv)]++;
  }

  void Finish(uint64_t sent, uint64_t recv, unsigned dirs = kAuto) {
    ts_->open.func1.store(0, std::memory_order_relaxed);
    uint64_t dt = clock::Ticks() - t0_;
    FuncStats& s = ts_->stats[f_];
    s.calls++;
    s.ticks += dt;
    if (dt > s.max_ticks) s.max_ticks = dt;
    s.bytes_sent += sent;
    s.bytes_recv += recv;
    if (dirs & kAuto) dirs |= (sent ? kSends : 0) | (recv ? kRecvs : 0);
    if (!(dirs & kNoBin)) Bin(s, sent, recv, dirs);
    t1_ = t0_ + dt;
    if (ts_->sites) {
      const uint32_t s = ts_->sites->Add(f_, ts_->site_pcs, ts_->site_n, dt, sent, recv);
      // The call's record (EmitRecord, right after) carries the slot: no record of its own.
      ts_->site_slot1 = s & recording::CallSiteTable::kSlot1Mask;
      if (__builtin_expect(s & recording::CallSiteTable::kAdded, 0))
        CallSitesNewSite(ts_->site_pcs[0]);
    }
  }

  FuncId f_;
  bool on_ = false;
  ThreadState* ts_ = nullptr;
  uint64_t t0_ = 0;
  uint64_t t1_ = 0;
  uint32_t free_id_ = 0xffffffffu;  // CommFreeBegin
};

}  // namespace invmw::wrap
