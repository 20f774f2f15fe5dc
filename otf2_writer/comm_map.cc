#include "otf2_writer/comm_map.h"

#include <algorithm>
#include <tuple>

namespace invmw::otf2 {

namespace {

GlobalComm MakeGlobal(uint32_t id, const CommIdentity& c) {
  GlobalComm g;
  g.id = id;
  g.inter = c.inter;
  g.members = c.a;
  g.members.insert(g.members.end(), c.b.begin(), c.b.end());
  g.name = std::string(c.inter ? "intercomm " : "comm ") + std::to_string(g.id) + " (" +
           std::to_string(g.members.size()) + " ranks)";
  return g;
}

GlobalComm World(int32_t world_size) {
  GlobalComm world;
  world.id = 0;
  world.name = "MPI_COMM_WORLD";
  for (int32_t r = 0; r < world_size; ++r) world.members.push_back(r);
  return world;
}

}  // namespace

std::vector<CommIdentity> RankCommIdentities(const RawRank& rank) {
  std::vector<const RawComm*> local;
  for (const auto& [id, c] : rank.comms)
    if (id != 0) local.push_back(&c);
  std::sort(local.begin(), local.end(),
            [](const RawComm* a, const RawComm* b) { return a->seq < b->seq; });
  std::map<std::tuple<bool, std::vector<int32_t>, std::vector<int32_t>>, int> seen;
  std::vector<CommIdentity> out;
  for (const RawComm* c : local) {
    CommIdentity id;
    id.inter = c->inter;
    id.a = c->members;
    if (c->inter) id.b = c->remote_members;
    if (c->inter && id.b < id.a) std::swap(id.a, id.b);
    id.k = seen[{id.inter, id.a, id.b}]++;
    id.local = c->id;
    out.push_back(std::move(id));
  }
  return out;
}

bool CommMap::Assign(int32_t world_size, const std::vector<CommIdentity>& unified,
                     const RawRank& rank, std::string* problem) {
  comms_.clear();
  local_to_global_.clear();
  comms_.push_back(World(world_size));
  std::map<std::tuple<bool, std::vector<int32_t>, std::vector<int32_t>, int>, uint32_t> by_key;
  for (const CommIdentity& c : unified) {
    comms_.push_back(MakeGlobal(uint32_t(comms_.size()), c));
    by_key.emplace(c.Key(), comms_.back().id);
  }
  for (auto& g : comms_)
    for (uint32_t i = 0; i < g.members.size(); ++i) g.rank_of.emplace(g.members[i], i);
  local_to_global_[{rank.rank, 0}] = 0;
  for (const CommIdentity& c : RankCommIdentities(rank)) {
    auto it = by_key.find(c.Key());
    if (it == by_key.end()) {
      *problem = "rank " + std::to_string(rank.rank) + ": communicator " + std::to_string(c.local) +
                 " missing from the unified definitions";
      return false;
    }
    local_to_global_[{rank.rank, c.local}] = it->second;
  }
  return true;
}

void CommMap::Build(const RawRun& run, std::vector<std::string>* problems) {
  comms_.clear();
  local_to_global_.clear();
  comms_.push_back(World(run.world_size));

  std::map<std::tuple<bool, std::vector<int32_t>, std::vector<int32_t>, int>, uint32_t> by_key;
  for (const auto& rank : run.ranks) {
    local_to_global_[{rank.rank, 0}] = 0;
    for (const CommIdentity& c : RankCommIdentities(rank)) {
      auto it = by_key.find(c.Key());
      if (it == by_key.end()) {
        comms_.push_back(MakeGlobal(uint32_t(comms_.size()), c));
        if (std::find(c.a.begin(), c.a.end(), rank.rank) == c.a.end() &&
            std::find(c.b.begin(), c.b.end(), rank.rank) == c.b.end())
          problems->push_back("raw/" + DefsFileName(rank.rank) + ": communicator " +
                              std::to_string(c.local) + " does not list rank " +
                              std::to_string(rank.rank) + " among its members");
        it = by_key.emplace(c.Key(), comms_.back().id).first;
      }
      local_to_global_[{rank.rank, c.local}] = it->second;
    }
  }
  for (auto& g : comms_)
    for (uint32_t i = 0; i < g.members.size(); ++i) g.rank_of.emplace(g.members[i], i);
}

uint32_t CommMap::Global(int32_t rank, uint32_t local) const {
  auto it = local_to_global_.find({rank, local});
  return it == local_to_global_.end() ? kNoComm : it->second;
}

uint32_t CommMap::CommRank(uint32_t id, int32_t world) const {
  if (id >= comms_.size()) return UINT32_MAX;
  auto it = comms_[id].rank_of.find(world);
  return it == comms_[id].rank_of.end() ? UINT32_MAX : it->second;
}

}  // namespace invmw::otf2
