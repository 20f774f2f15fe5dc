#include "pmpi_wrap/call.h"

#include <pthread.h>

#include <cstring>

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
    if (r->kind == ReqKind::kSend) {
      sent += r->bytes;
      // Each message by its own size (one to MPI_PROC_NULL sends nothing).
      Bin(ts_->stats[f_], r->bytes, 0, r->peer == kPeerProcNull ? 0 : kSends);
    }
  }
  Finish(sent, 0, kNoBin);
  if (ts_->trace) EmitRecord(sent, 0, kPeerNone, -1, 0, 0, kPeerNone, -1, trace::kCall);
}

void Call::EmitRecord(uint64_t sent, uint64_t recv, int peer, int tag, uint32_t comm_id,
                      uint64_t req, int peer2, int tag2, uint8_t type) {
  trace::EventRecord e;
  e.t_enter = TraceTime(t0_);
  e.t_leave = TraceTime(t1_);
  e.bytes_sent = sent;
  e.bytes_recv = recv;
  e.request = req;
  e.peer = peer;
  e.tag = tag;
  e.comm = comm_id;
  e.func = uint16_t(f_);
  e.type = type;
  e.flags = 0;
  e.peer2 = peer2;
  e.tag2 = tag2;
  if (type == trace::kCall) {
    // Finish() ran just before and left the call's slot; taken once, so a record of a path
    // that does not count the call never inherits another call's site.
    trace::PackCallSite(&e, ts_->site_slot1);
    ts_->site_slot1 = 0;
  }
  if (type == trace::kTestFail) {
    e.bytes_sent = 1;  // the number of calls the record stands for
    // Ticks spent inside the calls: the application's work between coalesced polls is not
    // time in MPI, so the converter needs the sum, not only the first entry and last exit.
    e.bytes_recv = e.t_leave - e.t_enter;
    if (g.trace_coalesce) {
      trace::EventRecord& pf = ts_->pending_fail;
      if (ts_->has_pending_fail && pf.func == e.func && pf.request == e.request &&
          pf.comm == e.comm) {
        pf.t_leave = e.t_leave;
        pf.bytes_sent++;
        pf.bytes_recv += e.bytes_recv;
        return;
      }
      FlushPendingFail(ts_);
      pf = e;
      ts_->has_pending_fail = true;
      return;
    }
  }
  FlushPendingFail(ts_);
  if (ts_->counter_fd >= 0 && type == trace::kCall) {
    // Placed before the call's record, like completions: the converter attaches it to it.
    trace::CounterRecord c{};
    ReadCallCounters(ts_->counter_fd, ts_->counter_n, c.leave);
    std::memcpy(c.enter, ts_->counters_enter, sizeof c.enter);
    c.func = e.func;
    c.type = trace::kCounters;
    c.count = uint8_t(ts_->counter_n);
    trace::EventRecord as_event;
    std::memcpy(&as_event, &c, sizeof as_event);
    ts_->trace->Push(as_event);
  }
  ts_->trace->Push(e);
}

void Call::Completed(const RequestSnapshot& before, int i, const MPI_Status* st) {
  const ReqInfo* r = before.info(i);
  if (!r) return;
  int cancelled = 0;
  uint64_t got = 0;
  if (r->kind == ReqKind::kRecv && st) {
    PMPI_Test_cancelled(st, &cancelled);
    if (!cancelled) {
      FuncStats& s = ts_->stats[r->func];
      s.bytes_recv += got = StatusBytes(st);
      // Binned here, under the function that posted (or started) it: its size is known now.
      Bin(s, 0, got, Received(st));
    }
  }
  if (ts_->trace) {
    FlushPendingFail(ts_);
    // Placed before this Wait/Test's own record: the converter puts it inside that call.
    trace::EventRecord e{};
    e.t_enter = e.t_leave = TraceTime(clock::Ticks());
    e.request = r->id;
    e.func = r->func;
    e.type = cancelled ? trace::kCancelled : trace::kCompletion;
    e.flags =
        uint8_t((r->persistent ? trace::kFlagPersistent : 0) |
                (r->peer == kPeerNone && r->kind == ReqKind::kRecv ? trace::kFlagAnySource : 0));
    e.comm = r->comm == MPI_COMM_NULL ? 0xffffffffu : LookupComm(r->comm)->id;
    if (r->kind == ReqKind::kRecv && st) {
      e.bytes_sent = got;
      e.peer = PeerOf(r->comm, st->MPI_SOURCE);
      e.tag = st->MPI_TAG;
    } else {
      e.bytes_sent = r->kind == ReqKind::kSend ? r->bytes : 0;
      e.peer = r->peer;
      e.tag = r->tag;
    }
    e.peer2 = kPeerNone;
    e.tag2 = -1;
    ts_->trace->Push(e);
  }
  if (r->persistent)
    DeactivateRequestIf(before[i], r->id);
  else
    ForgetTracked(*r);
}

void Call::CompleteOne(const RequestSnapshot& before, int done, const MPI_Status* st) {
  if (done && before.size() == 1) Completed(before, 0, st);
  Finish(0, 0);
  // An unsuccessful MPI_Test names its request, so the trace can say which one was polled.
  CompletionRecord(done != 0,
                   !done && before.size() == 1 && before.info(0) ? before.info(0)->id : 0);
}

void Call::CompleteAll(const RequestSnapshot& before, int done, const MPI_Status* sts) {
  if (done)
    for (int i = 0; i < before.size(); ++i)
      if (before[i] != MPI_REQUEST_NULL) Completed(before, i, sts ? &sts[i] : nullptr);
  Finish(0, 0);
  CompletionRecord(done != 0);
}

void Call::CompleteIndex(const RequestSnapshot& before, int done, int index, const MPI_Status* st) {
  if (done && index != MPI_UNDEFINED && index >= 0 && index < before.size())
    Completed(before, index, st);
  Finish(0, 0);
  CompletionRecord(done != 0);
}

void Call::CompleteSome(const RequestSnapshot& before, int outcount, const int* indices,
                        const MPI_Status* sts) {
  if (outcount != MPI_UNDEFINED && indices)
    for (int k = 0; k < outcount; ++k) {
      int i = indices[k];
      if (i >= 0 && i < before.size()) Completed(before, i, sts ? &sts[k] : nullptr);
    }
  Finish(0, 0);
  CompletionRecord(outcount != MPI_UNDEFINED && outcount > 0);
}

void Call::RequestFree(const RequestSnapshot& before) {
  if (before.size() == 1 && before.info(0)) ForgetTracked(*before.info(0));
  Leave();
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

namespace {
INVMW_TLS ScratchBuffers* tls_scratch = nullptr;
pthread_key_t g_scratch_key;
pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;

// Runs in the exiting thread: a program that starts and ends threads would otherwise lose one
// set of buffers per thread (LeakSanitizer, e2e.c.threads in the sanitizer build).
void FreeScratch(void* p) {
  tls_scratch = nullptr;  // a later call in this thread's teardown allocates afresh
  delete static_cast<ScratchBuffers*>(p);
}
}  // namespace

ScratchBuffers& Scratch() {
  if (!tls_scratch) {
    tls_scratch = new ScratchBuffers();
    pthread_once(&g_scratch_once, [] { pthread_key_create(&g_scratch_key, FreeScratch); });
    pthread_setspecific(g_scratch_key, tls_scratch);
  }
  return *tls_scratch;
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
