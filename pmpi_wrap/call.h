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
#include "pmpi_wrap/thread_state.h"

namespace invmw::wrap {

class Call {
 public:
  explicit Call(FuncId f, bool fortran = false) : f_(f) {
    (void)fortran;
    if (tls_in_call || !g.record[f].load(std::memory_order_relaxed)) return;
    ts_ = CurrentThread();
    if (!ts_) return;
    tls_in_call = true;
    on_ = true;
    t0_ = clock::Ticks();
  }
  ~Call() {
    if (on_) tls_in_call = false;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  bool on() const { return on_; }

  // --- recording methods, one per kind of call (see gen_wrappers.py) ---
  void Leave() { Finish(0, 0); }
  void Failed(int /*rc*/) { Finish(0, 0); }

  template <typename N>
  void Send(N count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    Finish(dest == MPI_PROC_NULL ? 0 : TypeBytes(count, type), 0);
  }
  void Recv(const MPI_Status* st, MPI_Comm comm) { Finish(0, StatusBytes(st)); }
  template <typename N>
  void Sendrecv(N scount, MPI_Datatype stype, int dest, int stag, const MPI_Status* st,
                MPI_Comm comm) {
    Finish(dest == MPI_PROC_NULL ? 0 : TypeBytes(scount, stype), StatusBytes(st));
  }
  void Probe(int flag, const MPI_Status* st, MPI_Comm comm) { Finish(0, 0); }
  void Mprobe(int flag, MPI_Message msg, const MPI_Status* st, MPI_Comm comm) {
    if (flag) RememberMessage(msg, comm);
    Finish(0, 0);
  }
  void Mrecv(MPI_Message msg, const MPI_Status* st) { Finish(0, StatusBytes(st)); }

  template <typename N>
  void Isend(N count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request req,
             bool persistent) {
    uint64_t bytes = dest == MPI_PROC_NULL ? 0 : TypeBytes(count, type);
    Track(req, ReqKind::kSend, bytes, comm, PeerOf(comm, dest), tag, persistent);
    Finish(persistent ? 0 : bytes, 0);
  }
  template <typename N>
  void Irecv(N count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request req,
             bool persistent) {
    Track(req, ReqKind::kRecv, TypeBytes(count, type), comm,
          source == MPI_ANY_SOURCE ? kPeerNone : PeerOf(comm, source), tag, persistent);
    Finish(0, 0);
  }
  template <typename N>
  void Imrecv(N count, MPI_Datatype type, MPI_Message msg, MPI_Request req) {
    Track(req, ReqKind::kRecv, TypeBytes(count, type), MessageComm(msg), kPeerNone, -1, false);
    Finish(0, 0);
  }
  void Start(int n, const MPI_Request* reqs);

  void CompleteOne(MPI_Request before, int done, const MPI_Status* st);
  void CompleteAll(const RequestSnapshot& before, int done, const MPI_Status* sts);
  void CompleteIndex(const RequestSnapshot& before, int done, int index, const MPI_Status* st);
  void CompleteSome(const RequestSnapshot& before, int outcount, const int* indices,
                    const MPI_Status* sts);
  void RequestFree(MPI_Request before);

  void Coll(const CollBytes& b) { Finish(b.sent, b.recv); }
  void CollReq(MPI_Request req, const CollBytes& b) {
    Track(req, ReqKind::kCollective, b.sent + b.recv, b.comm, b.root, -1, false);
    Finish(b.sent, b.recv);
  }

  void CommNew(MPI_Comm newcomm) {
    if (newcomm != MPI_COMM_NULL) RegisterComm(newcomm);
    Finish(0, 0);
  }
  void CommNewPending(MPI_Comm* newcomm, MPI_Request req) {
    Track(req, ReqKind::kOther, 0, MPI_COMM_NULL, kPeerNone, -1, false);
    Finish(0, 0);
  }
  void CommFree(MPI_Comm before) {
    ForgetComm(before);
    Finish(0, 0);
  }
  void TypeFreed() {
    g.type_epoch.fetch_add(1, std::memory_order_relaxed);
    Finish(0, 0);
  }
  void WinNew(MPI_Win win) {
    RegisterWin(win);
    Finish(0, 0);
  }
  void WinFree(MPI_Win before) {
    ForgetWin(before);
    Finish(0, 0);
  }
  void Rma(uint64_t sent, uint64_t recv, int target, MPI_Win win) { Finish(sent, recv); }
  void RmaReq(MPI_Request req, uint64_t sent, uint64_t recv, int target, MPI_Win win) {
    Track(req, ReqKind::kRma, sent + recv, MPI_COMM_NULL, WinTargetWorldRank(win, target), -1,
          false);
    Finish(sent, recv);
  }
  // MPI-IO: bytes read count as received, bytes written as sent.
  void Io(uint64_t read, uint64_t written) { Finish(written, read); }
  void IoReq(MPI_Request req, uint64_t read, uint64_t written) {
    Track(req, ReqKind::kIo, read + written, MPI_COMM_NULL, kPeerNone, -1, false);
    Finish(written, read);
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
  void Track(MPI_Request req, ReqKind kind, uint64_t bytes, MPI_Comm comm, int peer, int tag,
             bool persistent) {
    ReqInfo info{bytes, t0_, comm, peer, tag, uint16_t(f_), kind, persistent, !persistent};
    TrackRequest(req, info);
  }
  // Processes one completed request (status may be null for sends).
  void Completed(MPI_Request handle, const MPI_Status* st);
  void RememberMessage(MPI_Message msg, MPI_Comm comm);
  MPI_Comm MessageComm(MPI_Message msg);

  void Finish(uint64_t sent, uint64_t recv) {
    uint64_t dt = clock::Ticks() - t0_;
    FuncStats& s = ts_->stats[f_];
    s.calls++;
    s.ticks += dt;
    if (dt > s.max_ticks) s.max_ticks = dt;
    s.bytes_sent += sent;
    s.bytes_recv += recv;
    s.hist[raw::HistBin(sent + recv)]++;
  }

  FuncId f_;
  bool on_ = false;
  ThreadState* ts_ = nullptr;
  uint64_t t0_ = 0;
};

}  // namespace invmw::wrap
