// The tracing side of the runtime: per-rank definitions (defs-R.jsonl), per-thread event files,
// clock offsets to rank 0, and the test-only clock skew. See common/event_format.h for the
// files and otf2_writer/ for their conversion into an OTF2 archive.
#pragma once

#include <mpi.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/event_format.h"
#include "pmpi_wrap/comm_table.h"
#include "pmpi_wrap/thread_state.h"
#include "recording/trace_buffer.h"

namespace invmw::wrap {

// After MPI_Init (all ranks): opens defs, writes the rank and function lines, measures the
// init clock offsets, starts the writer thread.
void TraceInit();
// Before the profile is gathered at MPI_Finalize: finalize clock offsets, last drain, end line.
void TraceFinalize();
// Rank 0, after TraceInit (and again after TraceFinalize): the clock offsets measured so far,
// as the run metadata's "clock_sync" object (README.md, "profile.json keys"); null elsewhere.
nlohmann::json TraceClockSync();
// Abnormal end: drain what the rings hold (async-signal-safe).
void TraceSaveFromSignal();
// A thread's first recorded call: its event file and ring.
void TraceAttachThread(ThreadState* ts);
// The slot's thread ended (called in that thread) / a new thread took the slot over: the ring
// and event file stay (the location goes on), the per-thread counters follow the thread.
void TraceThreadEnded(ThreadState* ts);
void TraceThreadReused(ThreadState* ts);
// A communicator became known.
void TraceCommDefined(const CommInfo* ci);

// Pushes a coalesced run of unsuccessful tests, if one is pending on this thread.
inline void FlushPendingFail(ThreadState* ts) {
  if (ts->has_pending_fail) {
    ts->has_pending_fail = false;
    ts->trace->Push(ts->pending_fail);
  }
}

// Trace clock of this rank (ticks, with the test-only skew applied when set).
uint64_t TraceTicks(uint64_t ticks);
extern bool g_trace_skewed;
inline uint64_t TraceTime(uint64_t ticks) {
  return g_trace_skewed ? TraceTicks(ticks) : ticks;
}

}  // namespace invmw::wrap
