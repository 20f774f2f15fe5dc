#include "otf2_writer/comm_map.h"

#include <algorithm>
#include <tuple>

namespace invmw::otf2 {

void CommMap::Build(const RawRun& run, std::vector<std::string>* problems) {
  comms_.clear();
  local_to_global_.clear();
  GlobalComm world;
  world.id = 0;
  world.name = "MPI_COMM_WORLD";
  for (int32_t r = 0; r < run.world_size; ++r) world.members.push_back(r);
  comms_.push_back(world);

  // (inter, groups, k-th occurrence) -> global id
  using Key = std::tuple<bool, std::vector<int32_t>, std::vector<int32_t>, int>;
  std::map<Key, uint32_t> by_key;
  for (const auto& rank : run.ranks) {
    local_to_global_[{rank.rank, 0}] = 0;
    std::vector<const RawComm*> local;
    for (const auto& [id, c] : rank.comms)
      if (id != 0) local.push_back(&c);
    std::sort(local.begin(), local.end(),
              [](const RawComm* a, const RawComm* b) { return a->seq < b->seq; });
    std::map<std::tuple<bool, std::vector<int32_t>, std::vector<int32_t>>, int> seen;
    for (const RawComm* c : local) {
      std::vector<int32_t> a = c->members,
                           b = c->inter ? c->remote_members : std::vector<int32_t>{};
      if (c->inter && b < a) std::swap(a, b);
      const int k = seen[{c->inter, a, b}]++;
      const Key key{c->inter, a, b, k};
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        GlobalComm g;
        g.id = uint32_t(comms_.size());
        g.inter = c->inter;
        g.members = a;
        g.members.insert(g.members.end(), b.begin(), b.end());
        g.name = std::string(c->inter ? "intercomm " : "comm ") + std::to_string(g.id) + " (" +
                 std::to_string(g.members.size()) + " ranks)";
        if (std::find(a.begin(), a.end(), rank.rank) == a.end() &&
            std::find(b.begin(), b.end(), rank.rank) == b.end())
          problems->push_back("raw/" + DefsFileName(rank.rank) + ": communicator " +
                              std::to_string(c->id) + " does not list rank " +
                              std::to_string(rank.rank) + " among its members");
        it = by_key.emplace(key, g.id).first;
        comms_.push_back(std::move(g));
      }
      local_to_global_[{rank.rank, c->id}] = it->second;
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
