// Communicators of the whole run, unified from each rank's local view.
//
// Why: every rank numbers its communicators itself (the `comm` field of records is that local
// id), but OTF2 wants one global communicator definition with one group of world ranks. Two
// local communicators are the same global one when they have the same member list (and, for
// inter-communicators, the same pair of groups) and the same position in the creation order
// among that rank's communicators with that member list: ranks create communicators in the
// same collective order, so the k-th communicator over {0,2,4} on rank 0 is the k-th on rank 2.
//
// Contract: global id 0 is MPI_COMM_WORLD (members 0..N-1; local id 0 on every rank). An
// inter-communicator is one global communicator whose group is the lower-ranked group followed
// by the other; peers are mapped to positions in that combined group (OTF2 InterComm
// definitions are not used).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "otf2_writer/raw_run.h"

namespace invmw::otf2 {

constexpr uint32_t kNoComm = UINT32_MAX;

struct GlobalComm {
  uint32_t id = 0;
  std::string name;              // "MPI_COMM_WORLD", "comm 1 (3 ranks)", ...
  std::vector<int32_t> members;  // world ranks in communicator-rank order
  bool inter = false;
  std::unordered_map<int32_t, uint32_t> rank_of;  // world rank -> communicator rank
};

// One communicator of a rank other than MPI_COMM_WORLD, with the identity that makes it one
// global communicator across ranks: its groups (for an inter-communicator the lower-ranked one
// first) and its occurrence among the rank's communicators with those groups.
struct CommIdentity {
  bool inter = false;
  std::vector<int32_t> a, b;
  int k = 0;
  uint32_t local = 0;  // the rank's local id
  auto Key() const { return std::make_tuple(inter, a, b, k); }
};

// A rank's communicators (MPI_COMM_WORLD excluded) in creation order.
std::vector<CommIdentity> RankCommIdentities(const RawRank& rank);

class CommMap {
 public:
  // Unifies the communicators of all loaded ranks; findings go to *problems.
  void Build(const RawRun& run, std::vector<std::string>* problems);

  // The map of one rank from communicators already unified across ranks, in global id order
  // (global id i + 1; 0 is MPI_COMM_WORLD), as Build would number them. Only `rank`'s local
  // ids are mapped; false (and *problem set) when one of its communicators is not in `unified`.
  bool Assign(int32_t world_size, const std::vector<CommIdentity>& unified, const RawRank& rank,
              std::string* problem);

  // Global id of rank `rank`'s local communicator `local`, or kNoComm when unknown.
  uint32_t Global(int32_t rank, uint32_t local) const;
  // The rank of world rank `world` within global communicator `id`, or UINT32_MAX.
  uint32_t CommRank(uint32_t id, int32_t world) const;
  const std::vector<GlobalComm>& comms() const { return comms_; }

 private:
  std::vector<GlobalComm> comms_;
  std::map<std::pair<int32_t, uint32_t>, uint32_t> local_to_global_;
};

}  // namespace invmw::otf2
