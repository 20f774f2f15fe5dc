// Communicator and window registry: maps a handle to its size, this rank's position and the
// world rank of every member, so peers are always reported as world ranks.
//
// Lookups are lock-free (open addressing over atomically published entries); registration,
// which allocates, happens when a communicator is created or first seen, never per message.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

namespace invmw::wrap {

constexpr int kPeerNone = -1;      // no peer (collective, ANY_SOURCE not yet resolved)
constexpr int kPeerProcNull = -2;  // MPI_PROC_NULL

struct CommInfo {
  uint32_t id;      // this rank's sequence number of the communicator (0 = MPI_COMM_WORLD)
  int size;         // local group size
  int rank;         // this rank in the local group
  int remote_size;  // remote group size for intercommunicators, else size
  bool inter;
  const int* world;         // world rank of each local group member
  const int* remote_world;  // world rank of each remote group member (intercomms), else world
};

// Returns the registry entry, registering the communicator if needed. Never null for a valid
// communicator; for MPI_COMM_NULL or a registry failure returns a static "unknown" entry.
const CommInfo* LookupComm(MPI_Comm comm);
void RegisterComm(MPI_Comm comm);
// The entry of a communicator already registered, else nullptr: never registers, so it is
// async-signal-safe (the abnormal-end paths).
const CommInfo* FindKnownComm(MPI_Comm comm);
void ForgetComm(MPI_Comm comm);

// Window registry with the same purpose: target ranks of RMA calls as world ranks.
void RegisterWin(MPI_Win win);
void ForgetWin(MPI_Win win);
int WinTargetWorldRank(MPI_Win win, int target);

// Peer rank in comm (point-to-point, remote group for intercommunicators) to world rank.
inline int PeerWorldRank(const CommInfo* ci, int peer) {
  if (peer == MPI_PROC_NULL) return kPeerProcNull;
  if (peer < 0 || peer >= ci->remote_size || !ci->remote_world) return kPeerNone;
  return ci->remote_world[peer];
}

void InitCommTable();

}  // namespace invmw::wrap
