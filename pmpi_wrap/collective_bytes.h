// Bytes a rank sends and receives in a collective, read from the call's arguments.
//
// The rule (documented in README.md, "Bytes of collectives"): bytes sent are the data the
// send-side arguments describe at this rank, bytes received the data the receive-side
// arguments describe; arguments significant only at the root count only there; with
// MPI_IN_PLACE the send side is the rank's own data already in place and counts zero. Counts
// arrays are summed over the group they describe (the remote group of an intercommunicator).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "pmpi_wrap/comm_table.h"
#include "pmpi_wrap/thread_state.h"
#include "pmpi_wrap/runtime.h"

namespace invmw::wrap {

int64_t TypeSizeSlow(MPI_Datatype type);

// Size of a datatype in bytes; the common case (a type seen before on this thread) is a hash,
// two compares and a load.
__attribute__((always_inline)) inline int64_t TypeSize(MPI_Datatype type) {
  const ThreadState::TypeEntry& e = tls_state->type_cache[TypeCacheSlot(type)];
  if (e.type == type && e.epoch == g.type_epoch.load(std::memory_order_relaxed)) return e.size;
  return TypeSizeSlow(type);
}

template <typename N>
inline uint64_t TypeBytes(N count, MPI_Datatype type) {
  if (count <= 0) return 0;
  return uint64_t(count) * uint64_t(TypeSize(type));
}

template <typename N>
inline uint64_t SumBytes(const N* counts, int n, MPI_Datatype type) {
  if (!counts) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i)
    if (counts[i] > 0) total += uint64_t(counts[i]);
  return total * uint64_t(TypeSize(type));
}

struct CollBytes {
  uint64_t sent = 0;
  uint64_t recv = 0;
  int root = kPeerNone;  // world rank of the root for rooted operations
  MPI_Comm comm = MPI_COMM_NULL;
};

inline bool InPlace(const void* buf) {
  return buf == MPI_IN_PLACE;
}

// Root handling for intra- and intercommunicators: returns whether this rank acts as the root
// (sends in bcast/scatter, receives in reduce/gather), and whether it takes part at all.
inline bool IsRoot(const CommInfo* ci, int root, bool* participates) {
  *participates = true;
  if (ci->inter) {
    if (root == MPI_ROOT) return true;
    if (root == MPI_PROC_NULL) *participates = false;
    return false;
  }
  return root == ci->rank;
}

inline int RootWorld(const CommInfo* ci, int root) {
  if (ci->inter) return root >= 0 ? PeerWorldRank(ci, root) : kPeerNone;
  return (root >= 0 && root < ci->size) ? ci->world[root] : kPeerNone;
}

// Start of every rooted collective: the byte record with its root, and whether this rank is the
// root (false with *participates = false when it takes no part: MPI_PROC_NULL on an
// intercommunicator).
inline const CommInfo* Rooted(MPI_Comm comm, int root, CollBytes* b, bool* is_root,
                              bool* participates) {
  const CommInfo* ci = LookupComm(comm);
  b->comm = comm;
  b->root = RootWorld(ci, root);
  *is_root = IsRoot(ci, root, participates);
  return ci;
}

inline CollBytes Barrier(MPI_Comm comm) {
  CollBytes b;
  b.comm = comm;
  return b;
}

template <typename N>
CollBytes Bcast(N count, MPI_Datatype type, int root, MPI_Comm comm) {
  CollBytes b;
  bool is_root, part;
  Rooted(comm, root, &b, &is_root, &part);
  if (!part) return b;
  (is_root ? b.sent : b.recv) = TypeBytes(count, type);
  return b;
}

template <typename N>
CollBytes Reduce(const void* sbuf, N count, MPI_Datatype type, int root, MPI_Comm comm) {
  CollBytes b;
  bool is_root, part;
  const CommInfo* ci = Rooted(comm, root, &b, &is_root, &part);
  if (!part) return b;
  uint64_t n = TypeBytes(count, type);
  if (is_root) b.recv = n;
  if (!(ci->inter && is_root) && !InPlace(sbuf)) b.sent = n;
  return b;
}

template <typename N>
CollBytes Allreduce(const void* sbuf, N count, MPI_Datatype type, MPI_Comm comm) {
  CollBytes b;
  b.comm = comm;
  uint64_t n = TypeBytes(count, type);
  b.recv = n;
  if (!InPlace(sbuf)) b.sent = n;
  return b;
}

template <typename N>
CollBytes ReduceScatterBlock(const void* sbuf, N rcount, MPI_Datatype type, MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  b.recv = TypeBytes(rcount, type);
  if (!InPlace(sbuf)) b.sent = b.recv * uint64_t(ci->size);
  return b;
}

template <typename N>
CollBytes ReduceScatter(const void* sbuf, const N* rcounts, MPI_Datatype type, MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  if (ci->rank >= 0 && rcounts) b.recv = TypeBytes(rcounts[ci->rank], type);
  if (!InPlace(sbuf)) b.sent = SumBytes(rcounts, ci->size, type);
  return b;
}

template <typename N>
CollBytes Gather(const void* sbuf, N scount, MPI_Datatype stype, N rcount, MPI_Datatype rtype,
                 int root, MPI_Comm comm) {
  CollBytes b;
  bool is_root, part;
  const CommInfo* ci = Rooted(comm, root, &b, &is_root, &part);
  if (!part) return b;
  if (is_root) b.recv = TypeBytes(rcount, rtype) * uint64_t(ci->remote_size);
  if (!(ci->inter && is_root) && !InPlace(sbuf)) b.sent = TypeBytes(scount, stype);
  return b;
}

template <typename N, typename C>
CollBytes Gatherv(const void* sbuf, N scount, MPI_Datatype stype, const C* rcounts,
                  MPI_Datatype rtype, int root, MPI_Comm comm) {
  CollBytes b;
  bool is_root, part;
  const CommInfo* ci = Rooted(comm, root, &b, &is_root, &part);
  if (!part) return b;
  if (is_root) b.recv = SumBytes(rcounts, ci->remote_size, rtype);
  if (!(ci->inter && is_root) && !InPlace(sbuf)) b.sent = TypeBytes(scount, stype);
  return b;
}

template <typename N>
CollBytes Scatter(N scount, MPI_Datatype stype, const void* rbuf, N rcount, MPI_Datatype rtype,
                  int root, MPI_Comm comm) {
  CollBytes b;
  bool is_root, part;
  const CommInfo* ci = Rooted(comm, root, &b, &is_root, &part);
  if (!part) return b;
  if (is_root) b.sent = TypeBytes(scount, stype) * uint64_t(ci->remote_size);
  if (!(ci->inter && is_root) && !InPlace(rbuf)) b.recv = TypeBytes(rcount, rtype);
  return b;
}

template <typename N, typename C>
CollBytes Scatterv(const C* scounts, MPI_Datatype stype, const void* rbuf, N rcount,
                   MPI_Datatype rtype, int root, MPI_Comm comm) {
  CollBytes b;
  bool is_root, part;
  const CommInfo* ci = Rooted(comm, root, &b, &is_root, &part);
  if (!part) return b;
  if (is_root) b.sent = SumBytes(scounts, ci->remote_size, stype);
  if (!(ci->inter && is_root) && !InPlace(rbuf)) b.recv = TypeBytes(rcount, rtype);
  return b;
}

template <typename N>
CollBytes Allgather(const void* sbuf, N scount, MPI_Datatype stype, N rcount, MPI_Datatype rtype,
                    MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  b.recv = TypeBytes(rcount, rtype) * uint64_t(ci->remote_size);
  if (!InPlace(sbuf)) b.sent = TypeBytes(scount, stype);
  return b;
}

template <typename N, typename C>
CollBytes Allgatherv(const void* sbuf, N scount, MPI_Datatype stype, const C* rcounts,
                     MPI_Datatype rtype, MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  b.recv = SumBytes(rcounts, ci->remote_size, rtype);
  if (!InPlace(sbuf)) b.sent = TypeBytes(scount, stype);
  return b;
}

template <typename N>
CollBytes Alltoall(const void* sbuf, N scount, MPI_Datatype stype, N rcount, MPI_Datatype rtype,
                   MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  b.recv = TypeBytes(rcount, rtype) * uint64_t(ci->remote_size);
  if (!InPlace(sbuf)) b.sent = TypeBytes(scount, stype) * uint64_t(ci->remote_size);
  return b;
}

template <typename C>
CollBytes Alltoallv(const void* sbuf, const C* scounts, MPI_Datatype stype, const C* rcounts,
                    MPI_Datatype rtype, MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  b.recv = SumBytes(rcounts, ci->remote_size, rtype);
  if (!InPlace(sbuf)) b.sent = SumBytes(scounts, ci->remote_size, stype);
  return b;
}

template <typename C>
CollBytes Alltoallw(const void* sbuf, const C* scounts, const MPI_Datatype* stypes,
                    const C* rcounts, const MPI_Datatype* rtypes, MPI_Comm comm) {
  const CommInfo* ci = LookupComm(comm);
  CollBytes b;
  b.comm = comm;
  for (int i = 0; i < ci->remote_size; ++i) {
    if (rcounts && rtypes) b.recv += TypeBytes(rcounts[i], rtypes[i]);
    if (!InPlace(sbuf) && scounts && stypes) b.sent += TypeBytes(scounts[i], stypes[i]);
  }
  return b;
}

// In- and out-degree of a process topology (neighborhood collectives).
void NeighborDegrees(MPI_Comm comm, int* indegree, int* outdegree);

template <typename N>
CollBytes NeighborAllgather(N scount, MPI_Datatype stype, N rcount, MPI_Datatype rtype,
                            MPI_Comm comm) {
  int in = 0, out = 0;
  NeighborDegrees(comm, &in, &out);
  CollBytes b;
  b.comm = comm;
  b.sent = TypeBytes(scount, stype);
  b.recv = TypeBytes(rcount, rtype) * uint64_t(in);
  return b;
}

template <typename N, typename C>
CollBytes NeighborAllgatherv(N scount, MPI_Datatype stype, const C* rcounts, MPI_Datatype rtype,
                             MPI_Comm comm) {
  int in = 0, out = 0;
  NeighborDegrees(comm, &in, &out);
  CollBytes b;
  b.comm = comm;
  b.sent = TypeBytes(scount, stype);
  b.recv = SumBytes(rcounts, in, rtype);
  return b;
}

template <typename N>
CollBytes NeighborAlltoall(N scount, MPI_Datatype stype, N rcount, MPI_Datatype rtype,
                           MPI_Comm comm) {
  int in = 0, out = 0;
  NeighborDegrees(comm, &in, &out);
  CollBytes b;
  b.comm = comm;
  b.sent = TypeBytes(scount, stype) * uint64_t(out);
  b.recv = TypeBytes(rcount, rtype) * uint64_t(in);
  return b;
}

template <typename C>
CollBytes NeighborAlltoallv(const C* scounts, MPI_Datatype stype, const C* rcounts,
                            MPI_Datatype rtype, MPI_Comm comm) {
  int in = 0, out = 0;
  NeighborDegrees(comm, &in, &out);
  CollBytes b;
  b.comm = comm;
  b.sent = SumBytes(scounts, out, stype);
  b.recv = SumBytes(rcounts, in, rtype);
  return b;
}

template <typename C>
CollBytes NeighborAlltoallw(const C* scounts, const MPI_Datatype* stypes, const C* rcounts,
                            const MPI_Datatype* rtypes, MPI_Comm comm) {
  int in = 0, out = 0;
  NeighborDegrees(comm, &in, &out);
  CollBytes b;
  b.comm = comm;
  for (int i = 0; i < out && scounts && stypes; ++i) b.sent += TypeBytes(scounts[i], stypes[i]);
  for (int i = 0; i < in && rcounts && rtypes; ++i) b.recv += TypeBytes(rcounts[i], rtypes[i]);
  return b;
}

}  // namespace invmw::wrap
