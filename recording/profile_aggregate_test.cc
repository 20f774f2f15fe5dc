// The tree merge's aggregate (profile_aggregate.h) against BuildProfile: ranks combined over a
// binomial tree, each subtree's aggregate sent through Encode/Decode as the runtime does, give
// the profile BuildProfile gives from all dumps at once, min/max-rank attribution and
// saturation included; seconds summed in another order may differ only in the last bits.
#include "recording/profile_aggregate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "recording/profile_report.h"

namespace invmw::profile {
namespace {

using nlohmann::json;

RankData Rank(int rank, int world, std::mt19937_64& rng, int funcs) {
  RankData r;
  raw::RankHeader& h = r.header;
  h.magic = raw::kMagic;
  h.version = raw::kVersion;
  h.header_size = sizeof h;
  h.record_size = sizeof(raw::FuncRecord);
  h.rank = rank;
  h.world_size = world;
  h.pid = 1000 + rank;
  h.ticks_per_second = 2.1e9 + double(rank);  // every rank calibrates its own clock
  h.wall_s = 1.0 + double(rng() % 1000) / 997.0;
  h.mpi_init_s = 0.01 * double(rng() % 10);
  h.num_threads = 1;
  h.dropped_threads = rng() % 3;
  std::snprintf(h.host, sizeof h.host, "node%d", rank / 4);
  std::snprintf(h.mpi_library, sizeof h.mpi_library, "lib of rank %d", rank);
  for (int i = 0; i < funcs; ++i) {
    if (rng() % 4 == 0) continue;  // not every rank calls every function
    raw::FuncRecord f{};
    std::snprintf(f.name, sizeof f.name, i == 0 ? "MPI_Init" : "MPI_F%02d", i);
    f.calls = 1 + rng() % 100;
    // Ties on purpose: the same time on several ranks must name the lowest of them.
    f.ticks = (rng() % 3 == 0) ? uint64_t(h.ticks_per_second) : rng() % 5000000000ull;
    f.max_ticks = f.ticks / f.calls;
    f.bytes_sent = rng() % 100000;
    f.bytes_recv = rng() % 100000;
    f.hist[raw::HistBin(f.bytes_sent)] = f.calls;
    f.hist_sent[raw::HistBin(f.bytes_sent)] = f.calls;
    f.hist_recv[raw::HistBin(f.bytes_recv)] = f.calls;
    r.funcs.push_back(f);
  }
  h.num_funcs = uint32_t(r.funcs.size());
  return r;
}

// The runtime's reduction (pmpi_wrap/runtime.cc MergeProfileInTree), message passing replaced
// by Encode/Decode.
RunAggregate TreeMerge(const std::vector<RankData>& ranks) {
  const int n = int(ranks.size());
  std::vector<std::string> sent(n);
  std::vector<RunAggregate> agg(n);
  for (int i = 0; i < n; ++i) agg[i].AddRank(ranks[i]);
  // Senders at a level depend only on lower levels, so processing masks in order is the tree.
  for (int mask = 1; mask < n; mask <<= 1)
    for (int me = 0; me < n; ++me) {
      if ((me & (mask - 1)) != 0 || (me & mask) || me + mask >= n) continue;
      const std::string bytes = agg[me + mask].Encode();
      RunAggregate theirs;
      std::string err;
      EXPECT_TRUE(RunAggregate::Decode(bytes.data(), bytes.size(), &theirs, &err)) << err;
      agg[me].Merge(theirs);
    }
  return agg[0];
}

// a == b, numbers within a relative 1e-12 (sums of doubles in another order).
void ExpectSame(const json& a, const json& b, const std::string& where) {
  if (a.is_number_float() || b.is_number_float()) {
    ASSERT_TRUE(a.is_number() && b.is_number()) << where;
    const double x = a.get<double>(), y = b.get<double>();
    EXPECT_LE(std::fabs(x - y), 1e-12 * std::max(std::fabs(x), std::fabs(y))) << where;
    return;
  }
  ASSERT_EQ(a.type(), b.type()) << where << ": " << a.dump() << " vs " << b.dump();
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << where << ": " << a.dump() << " vs " << b.dump();
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << where << "." << it.key();
      ExpectSame(it.value(), b[it.key()], where + "." + it.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << where;
    for (size_t i = 0; i < a.size(); ++i)
      ExpectSame(a[i], b[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

TEST(ProfileAggregate, TreeEqualsBuildProfile) {
  for (int world : {1, 2, 3, 4, 7, 8, 13, 16, 64}) {
    std::mt19937_64 rng(world);
    std::vector<RankData> ranks;
    for (int r = 0; r < world; ++r) ranks.push_back(Rank(r, world, rng, 60));
    RunMeta meta;
    meta.world_size = world;
    const json want = BuildProfile(ranks, meta, false);
    json jranks = json::array();
    for (const auto& r : ranks) jranks.push_back(RankJson(r));
    const json got = ProfileFromAggregate(TreeMerge(ranks), meta, false, world, jranks,
                                          json::array(), json::array());
    ExpectSame(want, got, "world " + std::to_string(world));
    // Attribution is exact, not within a tolerance.
    for (auto it = want["functions"].begin(); it != want["functions"].end(); ++it)
      EXPECT_EQ(it.value()["time_across_ranks_s"]["max_rank"],
                got["functions"][it.key()]["time_across_ranks_s"]["max_rank"]);
    EXPECT_EQ(want["summary"]["wall_s"]["max_rank"], got["summary"]["wall_s"]["max_rank"]);
    EXPECT_EQ(got["metadata"]["mpi_library"], "lib of rank 0");
  }
}

TEST(ProfileAggregate, TiesNameTheLowestRank) {
  std::mt19937_64 rng(1);
  std::vector<RankData> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.push_back(Rank(r, 8, rng, 0));
    raw::FuncRecord f{};
    std::snprintf(f.name, sizeof f.name, "MPI_Barrier");
    f.calls = 1;
    // Ranks 3 and 6 share the largest time, 5 and 7 the smallest.
    f.ticks = uint64_t((r == 3 || r == 6   ? 5.0
                        : r == 5 || r == 7 ? 1.0
                                           : 2.0) *
                       ranks.back().header.ticks_per_second);
    ranks.back().funcs.push_back(f);
    ranks.back().header.num_funcs = 1;
  }
  const RunAggregate a = TreeMerge(ranks);
  EXPECT_EQ(a.functions.at("MPI_Barrier").time.argmax, 3);
  EXPECT_EQ(a.functions.at("MPI_Barrier").time.argmin, 5);
  EXPECT_EQ(a.ranks, 8);
}

TEST(ProfileAggregate, SaturationAsInBuildProfile) {
  std::mt19937_64 rng(2);
  std::vector<RankData> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(Rank(r, 4, rng, 0));
    raw::FuncRecord f{};
    std::snprintf(f.name, sizeof f.name, "MPI_Send");
    f.calls = UINT64_MAX / 3;
    f.bytes_sent = 1;
    ranks.back().funcs.push_back(f);
    ranks.back().header.num_funcs = 1;
  }
  RunMeta meta;
  meta.world_size = 4;
  const json want = BuildProfile(ranks, meta, false);
  const json got = ProfileFromAggregate(TreeMerge(ranks), meta, false, 4, json::array(),
                                        json::array(), json::array());
  EXPECT_EQ(got["functions"]["MPI_Send"]["calls"].get<uint64_t>(), UINT64_MAX);
  EXPECT_EQ(got["functions"]["MPI_Send"]["saturated"], true);
  EXPECT_EQ(got["raw_problems"], want["raw_problems"]);
  EXPECT_EQ(got["counters_saturated"], true);
}

TEST(ProfileAggregate, DecodeRejectsDamage) {
  std::mt19937_64 rng(3);
  RunAggregate a;
  a.AddRank(Rank(0, 1, rng, 10));
  const std::string bytes = a.Encode();
  RunAggregate b;
  std::string err;
  ASSERT_TRUE(RunAggregate::Decode(bytes.data(), bytes.size(), &b, &err)) << err;
  EXPECT_EQ(b.Encode(), bytes);
  // Every truncation is an error, none a read past the end (ASan builds check that).
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(RunAggregate::Decode(bytes.data(), n, &b, &err)) << n;
  std::string more = bytes + "x";
  EXPECT_FALSE(RunAggregate::Decode(more.data(), more.size(), &b, &err));
  EXPECT_NE(err.find("bytes after"), std::string::npos) << err;
  std::string huge = bytes;
  const uint32_t big = 0xffffffffu;  // the first string's length: far beyond the buffer
  std::memcpy(&huge[4 + 4 + 4 + 2 * (3 * 8 + 3 * 4) + 2 * 8 + 1 + 2 * 8], &big, 4);
  EXPECT_FALSE(RunAggregate::Decode(huge.data(), huge.size(), &b, &err));
}

}  // namespace
}  // namespace invmw::profile
