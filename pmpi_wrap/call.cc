#include "pmpi_wrap/call.h"

namespace invmw::wrap {

namespace {
// Matched-probe messages: the communicator is only known at MPI_Mprobe; keep the last few per
// thread so MPI_Mrecv/MPI_Imrecv can translate the source.
struct MessageMemo {
  MPI_Message msg[4];
  MPI_Comm comm[4];
  unsigned next;
};
INVMW_TLS MessageMemo tls_messages;
}  // namespace

void Call::RememberMessage(MPI_Message msg, MPI_Comm comm) {
  unsigned i = tls_messages.next++ % 4;
  tls_messages.msg[i] = msg;
  tls_messages.comm[i] = comm;
}

MPI_Comm Call::MessageComm(MPI_Message msg) {
  for (int i = 0; i < 4; ++i)
    if (tls_messages.msg[i] == msg) return tls_messages.comm[i];
  return MPI_COMM_NULL;
}

void Call::Start(int n, const MPI_Request* reqs) {
  uint64_t sent = 0;
  for (int i = 0; i < n; ++i) {
    ReqInfo* r = FindRequest(reqs[i]);
    if (!r) continue;
    r->active = true;
    r->post_ticks = t0_;
    // Persistent transfers are charged to MPI_Start/MPI_Startall: sends when started,
    // receives when completed.
    r->func = uint16_t(f_);
    if (r->kind == ReqKind::kSend) sent += r->bytes;
  }
  Finish(sent, 0);
}

void Call::Completed(MPI_Request handle, const MPI_Status* st) {
  ReqInfo* r = FindRequest(handle);
  if (!r) return;
  if (r->kind == ReqKind::kRecv && st) {
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    if (!cancelled) ts_->stats[r->func].bytes_recv += StatusBytes(st);
  }
  if (r->persistent) r->active = false;
  else ForgetRequest(handle);
}

void Call::CompleteOne(MPI_Request before, int done, const MPI_Status* st) {
  if (done) Completed(before, st);
  Finish(0, 0);
}

void Call::CompleteAll(const RequestSnapshot& before, int done, const MPI_Status* sts) {
  if (done)
    for (int i = 0; i < before.size(); ++i)
      if (before[i] != MPI_REQUEST_NULL) Completed(before[i], sts ? &sts[i] : nullptr);
  Finish(0, 0);
}

void Call::CompleteIndex(const RequestSnapshot& before, int done, int index,
                         const MPI_Status* st) {
  if (done && index != MPI_UNDEFINED && index >= 0 && index < before.size())
    Completed(before[index], st);
  Finish(0, 0);
}

void Call::CompleteSome(const RequestSnapshot& before, int outcount, const int* indices,
                        const MPI_Status* sts) {
  if (outcount != MPI_UNDEFINED && indices)
    for (int k = 0; k < outcount; ++k) {
      int i = indices[k];
      if (i >= 0 && i < before.size()) Completed(before[i], sts ? &sts[k] : nullptr);
    }
  Finish(0, 0);
}

void Call::RequestFree(MPI_Request before) {
  ForgetRequest(before);
  Finish(0, 0);
}

int64_t TypeSizeSlow(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return 0;
  MPI_Count size = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS || size < 0) size = 0;
  ThreadState::TypeEntry& e = tls_state->type_cache[TypeCacheSlot(type)];
  e.type = type;
  e.size = size;
  e.epoch = g.type_epoch.load(std::memory_order_relaxed);
  return size;
}

ScratchBuffers& Scratch() {
  static INVMW_TLS ScratchBuffers* s = nullptr;
  if (!s) s = new ScratchBuffers();
  return *s;
}

void NeighborDegrees(MPI_Comm comm, int* indegree, int* outdegree) {
  *indegree = *outdegree = 0;
  int topo = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &topo);
  if (topo == MPI_CART) {
    int ndims = 0;
    PMPI_Cartdim_get(comm, &ndims);
    *indegree = *outdegree = 2 * ndims;
  } else if (topo == MPI_GRAPH) {
    int rank = 0, n = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Graph_neighbors_count(comm, rank, &n);
    *indegree = *outdegree = n;
  } else if (topo == MPI_DIST_GRAPH) {
    int weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, indegree, outdegree, &weighted);
  }
}

}  // namespace invmw::wrap
