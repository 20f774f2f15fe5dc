// Per-thread recording state of the preload runtime.
//
// Why per thread: the hot path must take no lock and allocate nothing, yet MPI_THREAD_MULTIPLE
// programs call MPI from many threads at once. Each thread that calls MPI gets one slot, claimed
// once with an atomic counter; afterwards it only touches its own counters. Readers (the final
// report, a signal handler) sum the slots; a torn read can be off by the call in flight, which
// is the precision an abnormal end allows anyway.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "common/event_format.h"
#include "common/raw_format.h"
#include "function_table.h"

namespace invmw::recording {
class TraceBuffer;
class CallSiteTable;
}  // namespace invmw::recording

namespace invmw::wrap {

using recording::TraceBuffer;

using FuncStats = raw::FuncCounters;

struct ThreadState {
  // kNumFuncs entries: this slot's part of the live counter file (MAP_SHARED, so a SIGKILLed
  // rank's counts survive it, raw_format.h LiveHeader), or private memory when there is none.
  FuncStats* stats;
  // Direct-mapped datatype size cache: codes alternate a few types. Invalidated through a
  // global epoch bumped by MPI_Type_free, since a freed handle can be reused for a new type.
  static constexpr int kTypeCache = 16;
  struct TypeEntry {
    MPI_Datatype type;
    int64_t size;
    uint64_t epoch;
  } type_cache[kTypeCache];
  int index;
  TraceBuffer* trace;  // this thread's event ring; null when not tracing
  // A run of unsuccessful tests being coalesced into one record (INVMW_TRACE_COALESCE_TESTS).
  trace::EventRecord pending_fail;
  bool has_pending_fail;
  // Per-call counters (INVMW_TRACE_COUNTERS): this thread's perf group, -1 when off.
  int counter_fd;
  int counter_n;
  uint64_t counters_enter[3];
  // Call sites (INVMW_WRAP_CALLSITE_DEPTH >= 1): this thread's table, null when off; the
  // frames of the open call at depth >= 2; this thread's stack for the frame-pointer walk.
  recording::CallSiteTable* sites;
  uint32_t site_n;
  uint64_t site_pcs[8];
  uint32_t site_slot1;  // the last finished call's slot + 1 in sites (0: none), for its record
  uintptr_t stack_lo, stack_hi;
  // Entries of shared request handles started on this slot (request_table.cc): a ring of them,
  // allocated at the first; sequence numbers [shared_tail, shared_head) may be live.
  std::atomic<void*> shared_ring;
  std::atomic<uint64_t> shared_head;
  std::atomic<uint64_t> shared_tail;
  // The call this thread is inside, for an abnormal end (a rank killed while it waits): written
  // at entry with plain stores, cleared when the call records its exit, read by the signal and
  // exit paths (FillRawDump, TraceSaveFromSignal) to say which call the run cut off.
  struct OpenCall {
    std::atomic<uint32_t> func1;  // function + 1; 0: in no recorded call
    uint64_t t_enter;             // ticks
    MPI_Comm comm;                // MPI_COMM_NULL: not known
    int32_t peer;                 // rank in comm, or a world rank when peer_world
    int32_t tag;
    bool peer_world;
    bool to_peer;  // peer is the destination (a send), not the source
    bool known;    // peer and tag were given (p2p calls, a wait on one request)
  } open;
};

// The calling thread's state, attaching the thread on its first call; nullptr when the
// process already has INVMW_WRAP_MAX_THREADS recording threads (the call then runs unrecorded
// and is counted as dropped).
//
// Slots are reused: when a thread ends (a pthread key destructor), its slot is marked free and
// the next new thread takes it over, counters, trace ring and event file included, so its calls
// add to the slot's counters and continue the slot's trace location after the ended thread's.
// What ended threads recorded therefore stays in the profile and the trace.
ThreadState* AttachThread();

// Slots used so far and their states (for summing).
int ThreadCount();
ThreadState* ThreadAt(int i);

#define INVMW_TLS __attribute__((tls_model("initial-exec"))) thread_local
extern INVMW_TLS ThreadState* tls_state;
// Set while a recorded call runs on this thread: calls the MPI library makes to MPI_* from
// inside (MPICH's Fortran layer, ROMIO) then pass through uncounted.
extern INVMW_TLS bool tls_in_call;

inline int TypeCacheSlot(MPI_Datatype t) {
  uint64_t k = 0;
  __builtin_memcpy(&k, &t, sizeof t < sizeof k ? sizeof t : sizeof k);
  return int((k * 0x9E3779B97F4A7C15ull) >> 60);
}

inline ThreadState* CurrentThread() {
  return tls_state ? tls_state : AttachThread();
}

}  // namespace invmw::wrap
