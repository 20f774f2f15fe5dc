// Nonblocking operations followed from their start to their completion.
//
// A request handle is the only thing MPI gives back, so the table maps handle -> what the
// operation was (function, peer, tag, communicator, bytes). It is one global open-addressing
// table with atomic slot claims: a request may be completed by another thread than the one that
// started it, and neither side takes a lock. Probing is bounded; a request that finds no slot is
// counted as dropped and its completion goes unrecorded.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "function_table.h"

namespace invmw::wrap {

enum class ReqKind : uint8_t { kSend, kRecv, kCollective, kRma, kIo, kOther };

struct ReqInfo {
  uint64_t bytes;  // sends: bytes sent per start; receives: posted size (actual from status)
  uint64_t post_ticks;
  MPI_Comm comm;  // to translate the source of receives at completion
  int32_t peer;   // world rank, or kPeerNone for ANY_SOURCE (resolved at completion)
  int32_t tag;
  uint16_t func;
  ReqKind kind;
  bool persistent;
  bool active;  // persistent requests: started and not yet completed
  uint64_t id;  // invmw's id of the request (trace records refer to it)
};

// True for a handle the MPI library hands out for many operations at once: an operation that
// completed inside its start call (Open MPI's &ompi_request_empty for every eager Isend that
// ob1 sent at once, for MPI_PROC_NULL and trivial collectives; MPICH's builtin completed
// requests). Such a handle can stand for several live requests; their entries are kept side
// by side and completed in the order they were started.
bool IsSharedRequest(MPI_Request req);
// Looks up the shared handles; called once in MPI_Init.
void InitSharedRequests();

// Stores info for a new request handle (overwriting a stale entry for a reused handle, unless
// the handle is a shared one).
void TrackRequest(MPI_Request req, const ReqInfo& info);
// Finds the entry; nullptr when the request was never tracked.
ReqInfo* FindRequest(MPI_Request req);
// Copies the entry; false when the request was never tracked.
bool CopyRequest(MPI_Request req, ReqInfo* out);
// The same for a shared handle: its (nth+1)-th live entry, those the calling thread started
// first (the nth occurrence of the handle in one array of requests).
bool CopySharedRequest(MPI_Request req, ReqInfo* out, int nth);
// Removes the entry (non-persistent completion, MPI_Request_free).
void ForgetRequest(MPI_Request req);
// Removes or deactivates the entry only while it still describes request `id`: once a
// completion call has returned, MPI may give the same handle to another thread's new request,
// whose entry must survive.
void ForgetRequestIf(MPI_Request req, uint64_t id);
void DeactivateRequestIf(MPI_Request req, uint64_t id);

}  // namespace invmw::wrap
