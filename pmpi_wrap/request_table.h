// Nonblocking operations followed from their start to their completion.
//
// A request handle is the only thing MPI gives back, so the table maps handle -> what the
// operation was (function, peer, tag, communicator, bytes). It is one global open-addressing
// table with atomic slot claims: a request may be completed by another thread than the one that
// started it, and neither side takes a lock. Its size is INVMW_WRAP_MAX_REQUESTS, allocated once
// at MPI_Init; probing is bounded; a request that finds no slot is counted as dropped and its
// completion goes unrecorded (the trace is then marked partial).
//
// Entries of a shared handle (below) are not in that table, where they would all share one probe
// chain and be capped at its length: each thread keeps them in a ring of its own (a 16th of
// INVMW_WRAP_MAX_REQUESTS, at least 256), numbered in start order, with the window [oldest live,
// next) of those numbers, so the k-th live entry is found by walking that window. An entry still
// live when the ring comes round to it again (leaked, or more live than the ring holds) is given
// up and counted as a dropped request.
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
  bool active;   // persistent requests: started and not yet completed
  uint64_t id;   // invmw's id of the request (trace records refer to it)
  uint64_t key;  // set by TrackRequest: where the entry lives (see ForgetTracked)
};

// True for a handle the MPI library hands out for many operations at once: an operation that
// completed inside its start call (Open MPI's &ompi_request_empty for every eager Isend that
// ob1 sent at once, for MPI_PROC_NULL and trivial collectives; MPICH's builtin completed
// requests). Such a handle can stand for several live requests; their entries are kept side
// by side and completed in the order they were started.
bool IsSharedRequest(MPI_Request req);
// Looks up the shared handles; called once in MPI_Init.
void InitSharedRequests();
// Allocates the table (INVMW_WRAP_MAX_REQUESTS entries, rounded up to a power of two); called
// once in MPI_Init before recording starts. Returns the size used.
int64_t InitRequestTable(int64_t entries);

// Stores info for a new request handle (overwriting a stale entry for a reused handle, unless
// the handle is a shared one).
void TrackRequest(MPI_Request req, const ReqInfo& info);
// Finds the entry; nullptr when the request was never tracked.
ReqInfo* FindRequest(MPI_Request req);
// Copies the entry; false when the request was never tracked.
bool CopyRequest(MPI_Request req, ReqInfo* out);
// The same for a shared handle. A cursor walks its live entries in start order, those the
// calling thread started first, then other threads' (a request completed by another thread than
// its starter): the k-th occurrence of the handle in one array of requests gets the k-th entry.
struct SharedCursor {
  int pass = 0;        // 0: the calling thread's entries, 1: other threads'
  int thread = 0;      // pass 1: thread slot being walked
  uint64_t seq = 0;    // next sequence number to look at
  bool begun = false;  // seq is valid for (pass, thread)
};
bool NextSharedRequest(MPI_Request req, ReqInfo* out, SharedCursor* cursor);
// Removes the entry (non-persistent completion, MPI_Request_free).
void ForgetRequest(MPI_Request req);
// Removes or deactivates the entry only while it still describes request `id`: once a
// completion call has returned, MPI may give the same handle to another thread's new request,
// whose entry must survive.
void ForgetRequestIf(MPI_Request req, uint64_t id);
void DeactivateRequestIf(MPI_Request req, uint64_t id);
// ForgetRequestIf for an entry copied from the table (shared handles included).
void ForgetTracked(const ReqInfo& info);

}  // namespace invmw::wrap
